//! What the session and the loader need of every device: an identity
//! ([`DeviceId`], from one allocator) and global memory ([`DeviceMemory`]).
//! [`crate::Session`] resolves words through it, so a value's copy and a
//! global's cell live in the memory of the device whose word is asked for.

use crate::error::DeviceError;
use crate::launch::DevicePtr;
use std::fmt;

/// Which device a word is valid on, as far as a [`Session`] is concerned.
/// Every open device of the process has its own, from one allocator
/// ([`DeviceId::allocate`]): never reused, distinct across kinds.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct DeviceId(u64);

/// The kinds of device, as their ids tell them apart.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum DeviceKind {
    /// The cpu reference device.
    Cpu,
    /// A GPU through the CUDA driver.
    Cuda,
    /// An adapter through wgpu.
    Wgpu,
}

impl DeviceId {
    /// A new id for a device of `kind` with `ordinal`: kind in the top two
    /// bits, a process-wide counter, the ordinal's low 8 bits.
    pub fn allocate(kind: DeviceKind, ordinal: u64) -> DeviceId {
        static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & ((1 << 54) - 1);
        let k = match kind {
            DeviceKind::Cpu => 1,
            DeviceKind::Cuda => 2,
            DeviceKind::Wgpu => 3,
        };
        DeviceId((k << 62) | (n << 8) | (ordinal & 0xff))
    }

    /// The id of a device.
    pub fn of<D: DeviceMemory + ?Sized>(device: &D) -> DeviceId {
        device.device_id()
    }

    /// The kind of device this id was allocated for.
    pub fn kind(self) -> DeviceKind {
        match self.0 >> 62 {
            1 => DeviceKind::Cpu,
            2 => DeviceKind::Cuda,
            _ => DeviceKind::Wgpu,
        }
    }

    /// The id's bits (for messages and keys).
    pub fn bits(self) -> u64 {
        self.0
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device {:#x}", self.0)
    }
}

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
    /// Copies `bytes` to `ptr`.
    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError>;
    /// Copies `len` bytes from `ptr`.
    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError>;
    /// Frees an allocation.
    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError>;
}

