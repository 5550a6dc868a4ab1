//! Running one kernel with text-given arguments on a device: allocate and
//! upload the buffers, launch, read every buffer back, free. Shared by
//! `relok run`, `relok demo` and the file tests.

use crate::args::{from_bytes, to_bytes, ArgValue};
use relok_ir::Module;
use relok_runtime::cpu::{CpuDevice, DeviceError, DevicePtr, KernelArg, LaunchConfig, LaunchError, LaunchStats};

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Allocating, uploading or reading back a buffer failed.
    #[error("device memory: {0}")]
    Memory(#[from] DeviceError),
    /// The launch failed (bad arguments, or a fault in the kernel).
    #[error("{0}")]
    Launch(#[from] LaunchError),
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// Every argument after the run: scalars as given, buffers read back.
    pub args: Vec<ArgValue>,
    /// The interpreter's counters.
    pub stats: LaunchStats,
}

/// Runs `kernel` of a verified `module` on `device`.
pub fn run_kernel(
    device: &CpuDevice,
    module: &Module,
    kernel: &str,
    config: &LaunchConfig,
    args: &[ArgValue],
) -> Result<RunOutput, RunError> {
    let mut buffers: Vec<DevicePtr> = Vec::new();
    let result = upload_and_launch(device, module, kernel, config, args, &mut buffers);
    for &b in &buffers {
        // Freeing cannot fail for a pointer we allocated; a failure would
        // only leak simulated memory, never corrupt a result.
        let _ = device.free(b);
    }
    result
}

fn upload_and_launch(
    device: &CpuDevice,
    module: &Module,
    kernel: &str,
    config: &LaunchConfig,
    args: &[ArgValue],
    buffers: &mut Vec<DevicePtr>,
) -> Result<RunOutput, RunError> {
    let mut kernel_args = Vec::with_capacity(args.len());
    for a in args {
        kernel_args.push(match a {
            ArgValue::Scalar(ty, bits) => KernelArg::Scalar { ty: *ty, bits: *bits },
            ArgValue::Buffer(elem, bits) => {
                let bytes = to_bytes(*elem, bits);
                let ptr = device.alloc(bytes.len() as u64)?;
                buffers.push(ptr);
                device.write(ptr, &bytes)?;
                KernelArg::Ptr(ptr)
            }
        });
    }
    let stats = device.launch(module, kernel, config, &kernel_args)?;
    let mut out = Vec::with_capacity(args.len());
    let mut next_buffer = buffers.iter();
    for a in args {
        out.push(match a {
            ArgValue::Scalar(..) => a.clone(),
            ArgValue::Buffer(elem, bits) => {
                let ptr = *next_buffer.next().expect("one buffer per buffer argument");
                let bytes = device.read(ptr, (bits.len() * elem.size() as usize) as u64)?;
                ArgValue::Buffer(*elem, from_bytes(*elem, &bytes))
            }
        });
    }
    Ok(RunOutput { args: out, stats })
}
