//! Simulated device memory: the global address space of one device, and the
//! fixed address ranges of the other spaces.
//!
//! Global allocations are placed at increasing, never reused addresses from
//! a per-device random base, with an unmapped guard gap after each, so a
//! stale, freed or foreign address misses every allocation. An address is
//! mapped to its allocation by a `BTreeMap` range query, with the last hit
//! cached for the common case of a kernel streaming through one buffer.

use crate::error::DeviceError;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Page size: allocations start on page boundaries.
pub(crate) const PAGE: u64 = 4096;
/// Unmapped bytes after every allocation (at least).
pub(crate) const GUARD: u64 = 64 * 1024;
/// Lowest possible global base.
pub(crate) const GLOBAL_MIN: u64 = 1 << 40;
/// Global addresses stay below this.
pub(crate) const GLOBAL_END: u64 = 1 << 46;
/// Address range one device may consume (bases are drawn below
/// `GLOBAL_END - GLOBAL_SPAN`).
pub(crate) const GLOBAL_SPAN: u64 = 1 << 40;
/// Total bytes one device may have allocated at once.
pub(crate) const MEMORY_LIMIT: u64 = 4 << 30;

/// Start of the const range: the module's constants, laid out in order.
pub(crate) const CONST_BASE: u64 = 0x1000_0000;
/// Start of a block's shared memory.
pub(crate) const SHARED_BASE: u64 = 0x2000_0000;
/// Start of a thread's local memory (its stack of call frames).
pub(crate) const LOCAL_BASE: u64 = 0x3000_0000;

/// Devices created in this process, mixed into the base so two devices
/// never draw the same one.
static DEVICES: AtomicU64 = AtomicU64::new(0);

/// A random, page-aligned global base in `[GLOBAL_MIN, GLOBAL_END - GLOBAL_SPAN)`,
/// different per device and per process.
pub(crate) fn random_base(ordinal: u32) -> u64 {
    let serial = DEVICES.fetch_add(1, Ordering::Relaxed);
    let mix = u64::from(std::process::id()).rotate_left(32)
        ^ (u64::from(ordinal) << 16)
        ^ serial.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let r = rand::random::<u64>() ^ mix;
    let pages = (GLOBAL_END - GLOBAL_SPAN - GLOBAL_MIN) / PAGE;
    GLOBAL_MIN + (r % pages) * PAGE
}

/// One live allocation.
#[derive(Debug)]
pub(crate) struct Alloc {
    pub(crate) base: u64,
    pub(crate) data: Vec<u8>,
    /// A host value's copy: kernels may not write it.
    pub(crate) sealed: bool,
}

/// The global memory of one device.
#[derive(Debug)]
pub(crate) struct GlobalMem {
    base: u64,
    /// The next allocation's address.
    next: u64,
    /// Live allocations by start address → slot.
    by_addr: BTreeMap<u64, usize>,
    /// Allocations; freed slots are `None` and reused.
    slots: Vec<Option<Alloc>>,
    free_slots: Vec<usize>,
    in_use: u64,
    /// The slot of the last hit of [`GlobalMem::find`] (may be stale).
    last: usize,
}

impl GlobalMem {
    pub(crate) fn new(base: u64) -> GlobalMem {
        GlobalMem {
            base,
            next: base,
            by_addr: BTreeMap::new(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            in_use: 0,
            last: usize::MAX,
        }
    }

    /// The lowest address this device hands out.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// How many allocations are live.
    pub(crate) fn live_allocations(&self) -> u64 {
        self.by_addr.len() as u64
    }

    pub(crate) fn alloc(&mut self, bytes: u64) -> Result<u64, DeviceError> {
        let over = || DeviceError::OutOfMemory { requested: bytes, in_use: self.in_use, limit: MEMORY_LIMIT };
        let total = self.in_use.checked_add(bytes).ok_or_else(over)?;
        if total > MEMORY_LIMIT {
            return Err(over());
        }
        let addr = self.next;
        let end = addr
            .checked_add(bytes)
            .and_then(|e| e.checked_add(GUARD))
            .and_then(|e| e.checked_next_multiple_of(PAGE))
            .filter(|&e| e <= self.base + GLOBAL_SPAN)
            .ok_or(DeviceError::AddressSpaceExhausted)?;
        let len = usize::try_from(bytes).map_err(|_| over())?;
        let mut data = Vec::new();
        data.try_reserve_exact(len).map_err(|_| over())?;
        data.resize(len, 0);
        let alloc = Alloc { base: addr, data, sealed: false };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slots[s] = Some(alloc);
                s
            }
            None => {
                self.slots.push(Some(alloc));
                self.slots.len() - 1
            }
        };
        self.by_addr.insert(addr, slot);
        self.next = end;
        self.in_use = total;
        Ok(addr)
    }

    pub(crate) fn free(&mut self, addr: u64) -> Result<(), DeviceError> {
        let slot = self.by_addr.remove(&addr).ok_or(DeviceError::InvalidFree { addr })?;
        if let Some(a) = self.slots.get_mut(slot).and_then(Option::take) {
            self.in_use -= a.data.len() as u64;
        }
        self.free_slots.push(slot);
        if self.last == slot {
            self.last = usize::MAX;
        }
        Ok(())
    }

    /// The slot and offset of `len` bytes at `addr`, if they lie inside one
    /// live allocation.
    #[inline]
    pub(crate) fn find(&mut self, addr: u64, len: u64) -> Option<(usize, usize)> {
        let hit = self.slots.get(self.last).and_then(Option::as_ref).and_then(|a| {
            let off = addr.checked_sub(a.base)?;
            (off.checked_add(len)? <= a.data.len() as u64).then_some(off)
        });
        if let Some(off) = hit {
            return Some((self.last, off as usize));
        }
        let (&base, &slot) = self.by_addr.range(..=addr).next_back()?;
        let a = self.slots.get(slot)?.as_ref()?;
        let off = addr - base;
        if off.checked_add(len)? > a.data.len() as u64 {
            return None;
        }
        self.last = slot;
        Some((slot, off as usize))
    }

    /// The bytes from `addr` to the end of the live allocation it points
    /// into, 0 when it points into none.
    pub(crate) fn bytes_from(&mut self, addr: u64) -> u64 {
        self.find(addr, 0)
            .and_then(|(slot, off)| self.slots.get(slot)?.as_ref().map(|a| (a.data.len() - off) as u64))
            .unwrap_or(0)
    }

    /// Makes the allocation starting at `addr` read-only to kernels.
    pub(crate) fn seal(&mut self, addr: u64) -> Result<(), DeviceError> {
        let slot = *self.by_addr.get(&addr).ok_or(DeviceError::OutOfBounds { addr, len: 0 })?;
        if let Some(a) = self.slots.get_mut(slot).and_then(Option::as_mut) {
            a.sealed = true;
        }
        Ok(())
    }

    /// Whether `addr` lies in a sealed allocation (a host value's copy).
    #[inline]
    pub(crate) fn sealed(&mut self, addr: u64) -> bool {
        self.find(addr, 1).and_then(|(slot, _)| self.slots.get(slot)?.as_ref()).is_some_and(|a| a.sealed)
    }

    /// `len` bytes at `addr`, if inside one live allocation.
    #[inline]
    pub(crate) fn bytes_mut(&mut self, addr: u64, len: u64) -> Option<&mut [u8]> {
        let (slot, off) = self.find(addr, len)?;
        let a = self.slots.get_mut(slot)?.as_mut()?;
        a.data.get_mut(off..off + len as usize)
    }

    pub(crate) fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), DeviceError> {
        let len = bytes.len() as u64;
        let dst = self.bytes_mut(addr, len).ok_or(DeviceError::OutOfBounds { addr, len })?;
        dst.copy_from_slice(bytes);
        Ok(())
    }

    pub(crate) fn read(&mut self, addr: u64, len: u64) -> Result<Vec<u8>, DeviceError> {
        let src = self.bytes_mut(addr, len).ok_or(DeviceError::OutOfBounds { addr, len })?;
        Ok(src.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_disjoint_guarded_and_never_reused() {
        let mut m = GlobalMem::new(GLOBAL_MIN);
        let a = m.alloc(100).unwrap();
        let b = m.alloc(0).unwrap();
        let c = m.alloc(8).unwrap();
        assert!(a < b && b < c);
        assert!(b >= a + 100 + GUARD && c >= b + GUARD);
        assert_eq!(a % PAGE, 0);
        assert!(m.find(a + 99, 1).is_some());
        assert!(m.find(a + 99, 2).is_none());
        assert!(m.find(b, 1).is_none());
        m.free(a).unwrap();
        assert!(m.find(a, 1).is_none());
        assert_eq!(m.free(a), Err(DeviceError::InvalidFree { addr: a }));
        let d = m.alloc(100).unwrap();
        assert!(d > c);
        assert!(matches!(m.alloc(MEMORY_LIMIT), Err(DeviceError::OutOfMemory { .. })));
    }

    #[test]
    fn random_bases_are_in_range_and_differ() {
        let a = random_base(0);
        let b = random_base(0);
        assert_ne!(a, b);
        for x in [a, b] {
            assert!((GLOBAL_MIN..GLOBAL_END - GLOBAL_SPAN).contains(&x));
            assert_eq!(x % PAGE, 0);
        }
    }
}
