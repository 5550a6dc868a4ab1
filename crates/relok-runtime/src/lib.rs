//! relok runtime: devices that load and launch compiled kernels.
//!
//! For now: the cpu reference device ([`cpu`]), an interpreter of the kernel
//! IR with GPU semantics over simulated, randomised device memory.

pub mod cpu;
pub mod session;

pub use cpu::{Access, CpuDevice, DevicePtr, DeviceError, FaultKind, KernelArg, LaunchConfig, LaunchError, LaunchStats};
pub use session::{DeviceId, Session, SessionError};
