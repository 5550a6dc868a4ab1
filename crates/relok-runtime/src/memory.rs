//! What the session and the loader need of every device: an identity
//! ([`DeviceId`], from one allocator: [`crate::id`]) and global memory
//! ([`DeviceMemory`]).
//! [`crate::Session`] resolves words through it, so a value's copy and a
//! global's cell live in the memory of the device whose word is asked for.

use crate::error::DeviceError;
use crate::launch::DevicePtr;
pub use crate::id::{DeviceId, DeviceKind};

/// A device's identity and its global memory, as the host sees it.
pub trait DeviceMemory {
    /// The identity words are valid for (distinct for every open device).
    fn device_id(&self) -> DeviceId;
    /// `bytes` of global memory, zero-filled.
    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError>;
    /// `bytes` for a host object (a value's copy, a runtime global's cell),
    /// zero-filled: where the session puts what its words point to. A
    /// device whose kernels reach host objects through one heap (wgpu)
    /// allocates them there; others as any global memory.
    fn alloc_object(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        self.alloc_zeroed(bytes)
    }
    /// Makes the allocation at `ptr` (a host value's copy, written) read-only
    /// to kernels: a device that can refuses their writes to it (the cpu
    /// device faults with `FaultKind::ReadOnly`); by default nothing.
    fn seal_value(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        let _ = ptr;
        Ok(())
    }
    /// Copies `bytes` to `ptr`.
    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError>;
    /// Copies `len` bytes from `ptr`.
    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError>;
    /// Frees an allocation.
    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError>;
}

