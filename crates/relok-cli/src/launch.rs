//! Running one kernel with text-given arguments on a device: compile it with
//! a strategy through the kernel cache (link, optimise, lower — or a cached
//! artifact), deliver its host objects (load),
//! allocate and upload the buffers, resolve symbol arguments to words,
//! launch, read every buffer back, free, at the runtime's level. Shared by
//! `relok demo`, the file tests, `relok fuzz` and the benches (`relok run`
//! goes through the facade instead: [`crate::run`]). Every device takes the
//! same path (`relok_runtime::Device::load`, `stream`, `launch`).

use crate::args::{ArgValue, from_bytes, to_bytes};
use relok_ir::{Scalar, Strategy, VerifiedModule};
use relok_runtime::ProgramError;
use relok_runtime::{Device, DeviceMemory, KernelCache, Session, SessionError};
use relok_runtime::{DeviceError, DevicePtr, KernelArg, LaunchConfig, LaunchStats};
use std::time::Instant;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Allocating, uploading or reading back a buffer failed.
    #[error("device memory: {0}")]
    Memory(#[from] DeviceError),
    /// A symbol argument could not be resolved.
    #[error("{0}")]
    Session(#[from] SessionError),
    /// Compiling, loading or launching failed (bad arguments, a fault, an
    /// exception).
    #[error("{0}")]
    Program(#[from] ProgramError),
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// Every argument after the run: scalars as given, buffers read back.
    pub args: Vec<ArgValue>,
    /// The interpreter's counters.
    pub stats: LaunchStats,
    /// Microseconds to get the compiled kernel (compile or cache) and load
    /// it (deliver its words).
    pub compile_us: f64,
}

/// How to run: the device, the session holding host objects, the kernel
/// cache, the strategy.
#[derive(Debug)]
pub struct Target<'a> {
    /// The device.
    pub device: &'a Device,
    /// Host objects of this process.
    pub session: &'a Session,
    /// Where compiled kernels come from.
    pub cache: &'a KernelCache,
    /// How words reach the code.
    pub strategy: Strategy,
}

/// Runs `kernel` of a verified `module`.
pub fn run_kernel(
    target: &Target<'_>,
    module: &VerifiedModule,
    kernel: &str,
    config: &LaunchConfig,
    args: &[ArgValue],
) -> Result<RunOutput, RunError> {
    let device = target.device;
    let mut buffers: Vec<DevicePtr> = Vec::new();
    let result = upload_and_launch(target, module, kernel, config, args, &mut buffers);
    for &b in &buffers {
        // Freeing cannot fail for a pointer we allocated; a failure would
        // only leak device memory, never corrupt a result.
        let _ = device.free_bytes(b);
    }
    result
}

fn upload_and_launch(
    target: &Target<'_>,
    module: &VerifiedModule,
    kernel: &str,
    config: &LaunchConfig,
    args: &[ArgValue],
    buffers: &mut Vec<DevicePtr>,
) -> Result<RunOutput, RunError> {
    let start = Instant::now();
    let run = prepare(target, module, kernel)?;
    let compile_us = start.elapsed().as_secs_f64() * 1e6;
    let mut out = run_prepared(target, &run, config, args, buffers)?;
    out.compile_us = compile_us;
    Ok(out)
}

/// Uploads the arguments, launches a prepared kernel and reads every buffer
/// back (`compile_us` is left 0). Buffers allocated go to `buffers`, for
/// the caller to free.
pub fn run_prepared(
    target: &Target<'_>,
    run: &Prepared,
    config: &LaunchConfig,
    args: &[ArgValue],
    buffers: &mut Vec<DevicePtr>,
) -> Result<RunOutput, RunError> {
    let (device, session) = (target.device, target.session);
    let mut kernel_args = Vec::with_capacity(args.len());
    for a in args {
        kernel_args.push(match a {
            ArgValue::Scalar(ty, bits) => KernelArg::Scalar { ty: *ty, bits: *bits },
            ArgValue::Symbol(name) => {
                KernelArg::Scalar { ty: Scalar::Word, bits: session.resolve(device, &session.symbol(name))? }
            }
            ArgValue::Buffer(elem, bits) => {
                let bytes = to_bytes(*elem, bits);
                let ptr = device.alloc_zeroed(bytes.len() as u64)?;
                buffers.push(ptr);
                device.write_bytes(ptr, &bytes)?;
                KernelArg::Ptr(ptr)
            }
        });
    }
    let stats = launch(target, run, config, &kernel_args)?;
    let mut out = Vec::with_capacity(args.len());
    let mut next_buffer = buffers.iter();
    for a in args {
        out.push(match a {
            ArgValue::Scalar(..) | ArgValue::Symbol(_) => a.clone(),
            ArgValue::Buffer(elem, bits) => {
                let ptr = *next_buffer.next().expect("one buffer per buffer argument");
                let bytes = device.read_bytes(ptr, (bits.len() * elem.size() as usize) as u64)?;
                ArgValue::Buffer(*elem, from_bytes(*elem, &bytes))
            }
        });
    }
    Ok(RunOutput { args: out, stats, compile_us: 0.0 })
}

/// A kernel ready to launch on the target's device: loaded with its
/// words delivered (see `relok_runtime::device`).
pub type Prepared = relok_runtime::Kernel;

/// Compiles (or takes from the cache) and loads `kernel` on the target's
/// device.
pub fn prepare(target: &Target<'_>, module: &VerifiedModule, kernel: &str) -> Result<Prepared, RunError> {
    Ok(target.device.load(target.session, target.cache, module, kernel, target.strategy, None)?)
}

/// Launches a prepared kernel on a new stream and waits for it; an
/// exception comes back with its text.
pub fn launch(
    target: &Target<'_>,
    run: &Prepared,
    config: &LaunchConfig,
    args: &[KernelArg],
) -> Result<LaunchStats, RunError> {
    let stream = target.device.stream()?;
    Ok(target.device.launch(target.session, &stream, run, config, args)?)
}
