//! The cpu device as a [`Backend`]: artifacts for [`CodeTarget::Cpu`]
//! (the lowered IR in the text format) parsed, verified and compiled for
//! the interpreter, their words delivered like every device's; streams that
//! run each launch when it is enqueued and keep the first failure for the
//! next synchronisation ([`CpuStream`]).

use super::{CpuDevice, DeviceMem, LaunchState, LoadedKernel};
use crate::backend::{Backend, deliver_words, load_once, table_bytes, wrong_device};
use crate::error::{DeviceError, LaunchError, ProgramError};
use crate::launch::{KernelArg, LaunchConfig, LaunchStats};
use crate::load::LoadRequest;
use crate::memory::DeviceId;
use crate::session::Session;
use relok_compiler::artifact::CodeTarget;
use relok_compiler::lower::{Lowered, site_table};
use relok_compiler::reloc::Site;
use relok_ir::Stage;
use relok_ir::{Strategy, Type};
use std::sync::{Arc, Mutex, Weak};

/// An allocation of a cpu device owned by what it was made for (a table
/// buffer by its kernel): freed on drop, if the device is still there.
#[derive(Debug)]
pub(crate) struct CpuAlloc {
    pub(super) mem: Weak<Mutex<DeviceMem>>,
    pub(super) addr: u64,
}

impl Drop for CpuAlloc {
    fn drop(&mut self) {
        if let Some(mem) = self.mem.upgrade() {
            // The address was allocated for this owner alone: freeing it
            // cannot fail but for a device in an impossible state.
            let _ = crate::lock(&mem).global.free(self.addr);
        }
    }
}

/// A kernel loaded on one cpu device with its words delivered: the
/// compiled program, its launch state (table buffer, patch cells), and
/// the table buffer itself, freed when the kernel drops.
#[derive(Debug)]
pub struct CpuKernel {
    device: DeviceId,
    kernel: LoadedKernel,
    state: LaunchState,
    _table: Option<CpuAlloc>,
    /// The words, in manifest (rank) order (none when baked).
    pub words: Vec<u64>,
}

impl CpuKernel {
    /// The launch state every launch of this kernel delivers.
    pub fn state(&self) -> &LaunchState {
        &self.state
    }
}

/// A stream of a cpu device: launches run when enqueued; the first
/// failure and what the launches did wait for [`Backend::synchronize`].
#[derive(Debug)]
pub struct CpuStream {
    device: DeviceId,
    pending: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    failure: Option<LaunchError>,
    stats: LaunchStats,
}

impl CpuStream {
    /// A stream of `device`.
    fn new(device: DeviceId) -> CpuStream {
        CpuStream { device, pending: Mutex::default() }
    }

    /// Refuses a launch of `kernel` on this stream from another device.
    fn check(&self, kernel: &str, device: DeviceId) -> Result<(), LaunchError> {
        if self.device == device { Ok(()) } else { Err(wrong_device(kernel, "the stream", self.device, device)) }
    }

    /// Keeps a launch's outcome: what it did, or its failure when it is
    /// the device's to report at synchronisation (an exception, a fault:
    /// what a GPU finds out only after the launch); any other error is the
    /// caller's now.
    fn record(&self, outcome: Result<LaunchStats, LaunchError>) -> Result<(), LaunchError> {
        let mut pending = crate::lock(&self.pending);
        match outcome {
            Ok(stats) => {
                pending.stats.steps = pending.stats.steps.saturating_add(stats.steps);
                pending.stats.threads = pending.stats.threads.saturating_add(stats.threads);
                Ok(())
            }
            Err(e @ (LaunchError::Exception { .. } | LaunchError::Fault { .. } | LaunchError::Device { .. })) => {
                pending.failure.get_or_insert(e);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The first failure since the last call, or what the launches did.
    fn take(&self) -> Result<LaunchStats, LaunchError> {
        let Pending { failure, stats } = std::mem::take(&mut *crate::lock(&self.pending));
        failure.map_or(Ok(stats), Err)
    }
}

impl Backend for CpuDevice {
    type Kernel = CpuKernel;
    type Stream = CpuStream;

    fn target(&self) -> CodeTarget {
        CodeTarget::Cpu
    }

    /// Parses, verifies and compiles the artifact's code whether the
    /// kernel cache validated it or not (the cpu device checks its code as
    /// it loads it); keeps it under no source key.
    fn load(&self, session: &Session, request: &LoadRequest<'_>) -> Result<Arc<CpuKernel>, ProgramError> {
        let artifact = request.artifact;
        load_once(&self.loaded, self.id(), session, artifact, || {
            if artifact.target != CodeTarget::Cpu {
                let message = format!("artifact for {}, not for the cpu device", artifact.target.name());
                return Err(DeviceError::Driver { call: "load", message }.into());
            }
            let lowered = artifact.lowered()?;
            let (words, state) = if artifact.strategy == Strategy::Bake {
                (Vec::new(), LaunchState::default())
            } else {
                deliver(session, self, &lowered)?
            };
            let table = state.reloc_table.map(|p| self.owned(p));
            let kernel = self.compile(&lowered.module, &lowered.kernel)?;
            Ok(CpuKernel { device: self.id(), kernel, state, _table: table, words })
        })
    }

    fn entry(kernel: &CpuKernel) -> &str {
        kernel.kernel.name()
    }

    fn params(kernel: &CpuKernel) -> &[Type] {
        kernel.kernel.params()
    }

    fn new_stream(&self) -> Result<CpuStream, DeviceError> {
        Ok(CpuStream::new(self.id()))
    }

    fn enqueue(
        &self,
        stream: &CpuStream,
        kernel: &Arc<CpuKernel>,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<(), LaunchError> {
        let name = kernel.kernel.name();
        if kernel.device != self.id() {
            return Err(wrong_device(name, "the kernel", kernel.device, self.id()));
        }
        // The geometry and the arguments are checked by `launch_loaded`;
        // their errors are the caller's now (see `CpuStream::record`).
        stream.check(name, self.id())?;
        let seeded;
        let state = if rng_seed == kernel.state.rng_seed {
            &kernel.state
        } else {
            seeded = LaunchState { rng_seed, ..kernel.state.clone() };
            &seeded
        };
        stream.record(self.launch_loaded(&kernel.kernel, config, args, state))
    }

    fn synchronize(&self, stream: &CpuStream) -> Result<LaunchStats, LaunchError> {
        stream.take()
    }

    fn live_allocations(&self) -> u64 {
        CpuDevice::live_allocations(self)
    }
}

/// The delivery step of loading, for a kernel lowered with `patch` or
/// `table`: validates the manifest against the code, registers the values,
/// resolves every record on `device` (words in rank order) and builds the
/// launch state: the table buffer (`table`) or the patch cells and constant
/// patches (`patch`).
pub fn deliver(
    session: &Session,
    device: &CpuDevice,
    lowered: &Lowered,
) -> Result<(Vec<u64>, LaunchState), ProgramError> {
    lowered.manifest.validate(&site_table(lowered))?;
    let words = deliver_words(session, device, &lowered.values, &lowered.manifest)?;
    let mut state = LaunchState::default();
    match lowered.module.stage {
        Stage::Lowered(Strategy::Table) if !words.is_empty() => {
            let bytes = table_bytes(&words);
            let table = device.alloc(bytes.len() as u64)?;
            device.write(table, &bytes)?;
            state.reloc_table = Some(table);
        }
        Stage::Lowered(Strategy::Patch) => {
            for (r, &w) in lowered.manifest.records().iter().zip(&words) {
                match r.site() {
                    Site::Slot => {
                        state.patch_cells.set(r.name(), w);
                    }
                    Site::Interior { offset } => state.const_patches.push((r.name().to_owned(), offset, w)),
                }
            }
        }
        _ => {}
    }
    Ok((words, state))
}
