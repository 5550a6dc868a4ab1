//! relok runtime: devices that load and launch compiled kernels.
//!
//! - [`cpu`]: the reference device, an interpreter of the kernel IR with GPU
//!   semantics over simulated, randomised device memory;
//! - [`session`]: host objects (symbols, values, runtime globals) and their
//!   words per device;
//! - [`program`]: compile → load → launch of a kernel with its host objects
//!   delivered by one strategy (bake, patch, table);
//! - [`launch`] and [`error`]: what every device shares about a launch
//!   (arguments, geometry, their checks) and its errors;
//! - [`device`]: the [`Backend`] trait every device implements (memory,
//!   loading with words delivered, streams), and [`Device`], any of them by
//!   name (`cpu`, `cuda`, `wgpu`, `best`): the one dispatch place;
//! - [`cache`]: the kernel cache of a process — memory, bundles and the
//!   artifact store on disk in front of compiling.

pub mod cache;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
pub mod error;
pub mod launch;
pub mod program;
pub mod session;
#[cfg(feature = "wgpu")]
pub mod wgpu;

/// Locks `m`, also after a thread panicked holding it (every value behind
/// these locks stays consistent between statements).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub use cpu::{CpuDevice, CpuKernel, LaunchState, LoadedKernel, PatchCells};
pub use error::{Access, DeviceError, FaultKind, LaunchError};
pub use launch::{DevicePtr, KernelArg, LaunchConfig, LaunchStats};
pub use cache::{CacheStats, KernelCache};
pub use program::{Compiled, Loaded, ProgramError};
pub use device::{Backend, Device, DeviceMemory, Kernel, OpenError, Stream, Thrown};
pub use session::{DeviceId, DeviceKind, Session, SessionError};
