//! relok runtime: devices that load and launch compiled kernels.
//!
//! - [`cpu`]: the reference device, an interpreter of the kernel IR with GPU
//!   semantics over simulated, randomised device memory;
//! - [`session`]: host objects (symbols, values, runtime globals) and their
//!   words per device;
//! - [`program`]: compile → load → launch of a kernel with its host objects
//!   delivered by one strategy (bake, patch, table);
//! - [`device`]: what every device offers the session, and [`Device`], any
//!   of them by name (`cpu`, `cuda`, `wgpu`, `best`);
//! - [`cache`]: the kernel cache of a process — memory, bundles and the
//!   artifact store on disk in front of compiling.

pub mod cache;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
pub mod program;
pub mod session;
#[cfg(feature = "wgpu")]
pub mod wgpu;

/// Locks `m`, also after a thread panicked holding it (every value behind
/// these locks stays consistent between statements).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub use cpu::{
    Access, CpuDevice, DevicePtr, DeviceError, FaultKind, KernelArg, LaunchConfig, LaunchError, LaunchState, LaunchStats,
    LoadedKernel, PatchCells,
};
pub use cache::{CacheStats, KernelCache};
pub use program::{Compiled, Loaded, ProgramError};
pub use device::{Device, DeviceMemory, Thrown};
pub use session::{DeviceId, Session, SessionError};
