//! relok runtime: devices that load and launch compiled kernels.
//!
//! - [`cpu`]: the reference device, an interpreter of the kernel IR with GPU
//!   semantics over simulated, randomised device memory;
//! - [`session`]: host objects (symbols, values, runtime globals) and their
//!   words per device;
//! - [`launch`], [`error`] and [`memory`]: what every device shares — a
//!   launch's arguments, geometry and their checks; the errors; device
//!   identity and memory;
//! - [`backend`]: the [`Backend`] trait every device implements (loading
//!   with words delivered, streams) and what backends share;
//! - [`device`]: [`Device`], any device by name (`cpu`, `cuda`, `wgpu`,
//!   `best`): the one dispatch place;
//! - [`load`]: the one load path — a kernel by module, by source key or
//!   as an artifact, through the tiers, to one [`Backend::load`] of a
//!   [`LoadRequest`];
//! - [`cache`]: the kernel cache of a process — memory, bundles and the
//!   artifact store on disk in front of compiling;
//! - [`stores`]: where the artifact store, the devices' binary archives
//!   and the remote tier are opened and configured;
//! - [`startup`]: a process's one-time costs, taken while a GPU driver
//!   starts.

pub mod backend;
pub mod cache;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
pub mod error;
pub mod id;
pub mod launch;
pub mod load;
pub mod memory;
pub mod session;
pub mod startup;
pub mod stores;
#[cfg(feature = "wgpu")]
pub mod wgpu;

/// Locks `m`, also after a thread panicked holding it (every value behind
/// these locks stays consistent between statements).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub use backend::{Backend, Thrown};
/// The bytes of a loaded bundle's entries ([`BundleContents`]): slices
/// sharing the bundle's one copy, or the program's static bytes.
pub use bytes::Bytes;
pub use cache::{BundleContents, CacheStats, KernelCache};
pub use cpu::{CpuDevice, CpuKernel, LaunchState, LoadedKernel, PatchCells};
pub use device::{CodeStats, Device, Kernel, OpenError, Stream};
pub use error::{Access, DeviceError, FaultKind, LaunchError};
pub use error::{ProgramError, SessionError};
pub use launch::{DevicePtr, KernelArg, LaunchConfig, LaunchStats};
pub use load::LoadRequest;
pub use memory::{DeviceId, DeviceKind, DeviceMemory};
pub use session::Session;
