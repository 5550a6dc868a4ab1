//! Device identity: [`DeviceId`], from one allocator for every kind of
//! device, which words, loaded kernels and streams are keyed by.

use std::fmt;

/// Which device a word is valid on, as far as a [`crate::Session`] is concerned.
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
    pub fn of<D: crate::DeviceMemory + ?Sized>(device: &D) -> DeviceId {
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

    /// The id whose [`DeviceId::bits`] are `bits`.
    pub(crate) fn from_bits(bits: u64) -> DeviceId {
        DeviceId(bits)
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device {:#x}", self.0)
    }
}
