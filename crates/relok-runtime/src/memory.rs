//! What the session and the loader need of every device: an identity
//! ([`DeviceId`], from one allocator: [`crate::id`]) and global memory
//! ([`DeviceMemory`]).
//! [`crate::Session`] resolves words through it, so a value's copy and a
//! global's cell live in the memory of the device whose word is asked for.

use crate::error::DeviceError;
pub use crate::id::{DeviceId, DeviceKind};
use crate::launch::DevicePtr;

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
    /// `bytes.len()` bytes (at least 1) of global memory holding `bytes`:
    /// [`DeviceMemory::alloc_zeroed`] and a write, unless the device can
    /// skip the zero fill (cuda does).
    fn alloc_filled(&self, bytes: &[u8]) -> Result<DevicePtr, DeviceError> {
        let ptr = self.alloc_zeroed(bytes.len() as u64)?;
        fill(self, ptr, bytes)
    }
    /// [`DeviceMemory::alloc_object`] holding `bytes` (a host value's
    /// copy).
    fn alloc_object_filled(&self, bytes: &[u8]) -> Result<DevicePtr, DeviceError> {
        let ptr = self.alloc_object(bytes.len() as u64)?;
        fill(self, ptr, bytes)
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

/// Writes `bytes` to the new allocation `ptr`, freeing it if that fails.
fn fill<D: DeviceMemory + ?Sized>(device: &D, ptr: DevicePtr, bytes: &[u8]) -> Result<DevicePtr, DeviceError> {
    if bytes.is_empty() {
        return Ok(ptr);
    }
    match device.write_bytes(ptr, bytes) {
        Ok(()) => Ok(ptr),
        Err(e) => {
            // Best effort: the allocation is unusable either way.
            let _ = device.free_bytes(ptr);
            Err(e)
        }
    }
}
