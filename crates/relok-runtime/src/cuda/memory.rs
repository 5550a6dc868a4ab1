//! Memory on a cuda device: the heap of live allocations (`Heap`), the
//! small-object block carved in slots (`SmallBlocks`), staged small
//! uploads (`Staging`), kernels' table buffers (`TableAlloc`), checked
//! mode's seal table (`Seals`), the [`DeviceMemory`] impl, and what the
//! device frees when it drops.

use super::{CudaDevice, driver};
use crate::error::DeviceError;
use crate::launch::DevicePtr;
use crate::lock;
use crate::memory::{DeviceId, DeviceMemory};
use cudarc::driver::{CudaContext, result, sys};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Checked mode's seal table on one device (`relok_compiler::ptx::checked`):
/// one block of device memory — two words (the address of the entries
/// that follow, their number), then one (first byte, end) pair per sealed
/// copy — whose address every checked launch passes. Made when first
/// needed (one allocation and one copy); written before a checked
/// kernel's launch when it changed; a larger one replaces it.
#[derive(Debug, Default)]
pub(super) struct Seals {
    /// The block's address (0 until made) and its capacity in entries.
    block: u64,
    capacity: usize,
    /// The sealed copies: first byte → end.
    ranges: BTreeMap<u64, u64>,
    /// Whether `ranges` changed since the table was written.
    dirty: bool,
    /// Blocks replaced by larger ones (a kernel in flight may still read
    /// one): freed when the device is dropped.
    retired: Vec<u64>,
}

impl DeviceMemory for CudaDevice {
    fn device_id(&self) -> DeviceId {
        self.id
    }

    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        let n = bytes.max(1);
        if n <= SmallBlocks::MAX
            && let Some(small) = self.alloc_in_slots(SlotFill::Zeros(n))
        {
            return small;
        }
        self.bind()?;
        let n = n as usize;
        // SAFETY: a plain allocation in the bound context.
        let ptr = unsafe { result::malloc_sync(n) }.map_err(driver("cuMemAlloc"))?;
        // SAFETY: `ptr .. ptr + n` was just allocated.
        if let Err(e) = unsafe { result::memset_d8_sync(ptr, 0, n) } {
            // SAFETY: `ptr` was allocated above and is freed once.
            let _ = unsafe { result::free_sync(ptr) };
            return Err(driver("cuMemsetD8")(e));
        }
        lock(&self.heap).live.insert(ptr, n as u64);
        Ok(DevicePtr(ptr))
    }

    fn alloc_filled(&self, bytes: &[u8]) -> Result<DevicePtr, DeviceError> {
        if bytes.is_empty() {
            return self.alloc_zeroed(1);
        }
        if let Some(small) = self.alloc_in_slots(SlotFill::Bytes(bytes)) {
            return small;
        }
        self.bind()?;
        let n = bytes.len();
        // SAFETY: a plain allocation in the bound context.
        let ptr = unsafe { result::malloc_sync(n) }.map_err(driver("cuMemAlloc"))?;
        // SAFETY: `ptr .. ptr + n` was just allocated and `bytes` fills it.
        if let Err(e) = unsafe { result::memcpy_htod_sync(ptr, bytes) } {
            // SAFETY: `ptr` was allocated above and is freed once.
            let _ = unsafe { result::free_sync(ptr) };
            return Err(driver("cuMemcpyHtoD")(e));
        }
        lock(&self.heap).live.insert(ptr, n as u64);
        Ok(DevicePtr(ptr))
    }

    fn alloc_object_filled(&self, bytes: &[u8]) -> Result<DevicePtr, DeviceError> {
        self.alloc_filled(bytes)
    }

    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        self.check(ptr, bytes.len() as u64)?;
        self.bind()?;
        // SAFETY: the range lies inside a live allocation (checked).
        unsafe { result::memcpy_htod_sync(ptr.0, bytes) }.map_err(driver("cuMemcpyHtoD"))
    }

    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        self.check(ptr, len)?;
        self.bind()?;
        let mut out = vec![0u8; len as usize];
        // SAFETY: the range lies inside a live allocation (checked).
        unsafe { result::memcpy_dtoh_sync(&mut out, ptr.0) }.map_err(driver("cuMemcpyDtoH"))?;
        Ok(out)
    }

    fn seal_value(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        let size =
            lock(&self.heap).live.get(&ptr.0).copied().ok_or(DeviceError::OutOfBounds { addr: ptr.0, len: 0 })?;
        let mut seals = lock(&self.seals);
        seals.ranges.insert(ptr.0, ptr.0 + size);
        seals.dirty = true;
        Ok(())
    }

    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        let freed = lock(&self.heap).release(ptr.0).ok_or(DeviceError::InvalidFree { addr: ptr.0 })?;
        {
            let mut seals = lock(&self.seals);
            if seals.ranges.remove(&ptr.0).is_some() {
                seals.dirty = true;
            }
        }
        if freed == Released::Slots {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: a live allocation of this device of its own, removed
        // from the map so it is freed once.
        unsafe { result::free_sync(ptr.0) }.map_err(driver("cuMemFree"))
    }
}

impl CudaDevice {
    /// An allocation holding `fill` in slots of the device's block (see
    /// [`SmallBlocks`]), written on the legacy stream; `None` when it is
    /// larger than [`SmallBlocks::MAX`] or no run of slots is free.
    fn alloc_in_slots(&self, fill: SlotFill<'_>) -> Option<Result<DevicePtr, DeviceError>> {
        let len = fill.len();
        let ptr = lock(&self.heap).small.take(len)?;
        // Both: `ptr .. ptr + len` are slots just taken for this
        // allocation, in this device's block; the context is bound.
        let written = self.bind().and_then(|()| match fill {
            // SAFETY: as above.
            SlotFill::Zeros(n) => unsafe { zero_on_stream(std::ptr::null_mut(), ptr, n) },
            // SAFETY: as above.
            SlotFill::Bytes(bytes) => unsafe { lock(&self.staging).write(ptr, bytes) },
        });
        let mut heap = lock(&self.heap);
        Some(match written {
            Ok(()) => {
                heap.live.insert(ptr, len);
                Ok(DevicePtr(ptr))
            }
            Err(e) => {
                heap.small.give_back(ptr, len);
                Err(e)
            }
        })
    }

    /// Whether `ptr .. ptr + len` lies inside one live allocation.
    fn check(&self, ptr: DevicePtr, len: u64) -> Result<(), DeviceError> {
        let heap = lock(&self.heap);
        match heap.live.range(..=ptr.0).next_back() {
            Some((&base, &size)) if ptr.0.checked_add(len).is_some_and(|end| end <= base + size) => Ok(()),
            _ => Err(DeviceError::OutOfBounds { addr: ptr.0, len }),
        }
    }

    /// Writes the seal table when the sealed copies changed since it was
    /// last written, and returns its address (0 while nothing was ever
    /// sealed). The copy is on the legacy stream, so after the launches
    /// before it on relok's streams (blocking ones), before the launch that
    /// follows.
    pub(super) fn publish_seals(&self) -> Result<u64, DeviceError> {
        let mut seals = lock(&self.seals);
        if !seals.dirty {
            return Ok(seals.block);
        }
        self.bind()?;
        let n = seals.ranges.len();
        if seals.block == 0 || n > seals.capacity {
            let capacity = n.next_power_of_two().max(16);
            let bytes = 16 + capacity as u64 * 16;
            let small = lock(&self.heap).small.take(bytes);
            let block = match small {
                Some(b) => b,
                // SAFETY: a plain allocation in the bound context.
                None => unsafe { result::malloc_sync(bytes as usize) }.map_err(driver("cuMemAlloc"))?,
            };
            let old = std::mem::replace(&mut seals.block, block);
            if old != 0 {
                seals.retired.push(old);
            }
            seals.capacity = capacity;
        }
        let header = [seals.block + 16, n as u64];
        let words = header.into_iter().chain(seals.ranges.iter().flat_map(|(&a, &b)| [a, b]));
        let bytes: Vec<u8> = words.flat_map(u64::to_le_bytes).collect();
        // SAFETY: the block holds the two header words and `capacity >= n`
        // entries of 16 bytes; the context is bound.
        unsafe { lock(&self.staging).write(seals.block, &bytes) }?;
        seals.dirty = false;
        Ok(seals.block)
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        lock(&self.loaded).clear();
        if self.bind().is_err() {
            return;
        }
        // Taken out of the map: a table buffer that outlives the device (its
        // kernel held by a stream) must not free its address again.
        let mut heap = lock(&self.heap);
        let live = std::mem::take(&mut heap.live);
        let seals = std::mem::take(&mut *lock(&self.seals));
        let seal_blocks = std::iter::once(seals.block).chain(seals.retired).filter(|&p| p != 0);
        for ptr in live.into_keys().chain(seal_blocks).filter(|&p| !heap.small.holds(p)) {
            // SAFETY: every allocation of its own, freed once, at drop.
            let _ = unsafe { result::free_sync(ptr) };
        }
        // SAFETY: made by `ready_copies`, freed once, at drop (with every
        // small object in it).
        let _ = unsafe { result::free_sync(heap.small.base) };
    }
}

/// The driver sets device allocation, host↔device copies and streams up
/// lazily, at their first use (≈0.1–0.2 ms together on an H200): do it
/// when the device opens, with the context, so that the first kernel load
/// and launch pay only for themselves. The copy back is made on `stream`,
/// as a synchronisation reads exception records. The allocation made here
/// is the device's [`SmallBlocks`], kept until the device closes.
pub(super) fn ready_copies(ctx: &Arc<CudaContext>, stream: sys::CUstream) -> Result<u64, DeviceError> {
    ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    // SAFETY: a plain allocation in the bound context.
    let ptr = unsafe { result::malloc_sync(SmallBlocks::BYTES as usize) }.map_err(driver("cuMemAlloc"))?;
    let mut back = [0u8; 8];
    // SAFETY: `ptr .. ptr + 8` was just allocated; both host buffers hold 8
    // bytes, and `back` lives until the wait for the stream (the bound
    // context's, idle) after the copy.
    let copied = unsafe {
        result::memcpy_htod_sync(ptr, &[1u8; 8])
            .and_then(|()| result::memcpy_dtoh_async(&mut back, ptr, stream))
            .and_then(|()| result::stream::synchronize(stream))
    };
    if let Err(e) = copied {
        // SAFETY: allocated above, freed once.
        let _ = unsafe { result::free_sync(ptr) };
        return Err(driver("cuMemcpy")(e));
    }
    Ok(ptr)
}

/// A device's live allocations and its small-object block.
#[derive(Debug)]
pub(super) struct Heap {
    /// Live allocations (of their own or in `small`): address → bytes.
    pub(super) live: BTreeMap<u64, u64>,
    pub(super) small: SmallBlocks,
}

/// What [`Heap::release`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Released {
    /// The allocation was in the small-object block: its slots are free.
    Slots,
    /// An allocation of its own: the caller frees it (`cuMemFree`).
    Own,
}

impl Heap {
    /// Forgets the live allocation at `ptr` (`None` when there is none).
    pub(super) fn release(&mut self, ptr: u64) -> Option<Released> {
        let bytes = self.live.remove(&ptr)?;
        Some(if self.small.give_back(ptr, bytes) { Released::Slots } else { Released::Own })
    }
}

/// A device's small allocations — buffers of up to [`SmallBlocks::MAX`]
/// bytes, and relok's own objects: host values' copies, runtime globals'
/// cells, relocation tables, the seal table — carved in 64-byte slots from
/// one block the device allocates when it opens: on the H200 a
/// `cuMemAlloc` and a synchronous copy take 5–10 µs, a slot and an
/// asynchronous copy 1.5–2.5 µs (2026-12-01), up to five times on a
/// first launch's path (its value, its table, the seal table, its input
/// and its output). An allocation over [`SmallBlocks::MAX`] bytes, or one
/// that no longer fits, gets one of its own. Slots are written (zeros
/// included) with copies on the legacy stream ([`Staging::write`],
/// [`zero_on_stream`]), which relok's streams (blocking ones) wait for, as
/// they do for synchronous copies; slots freed are taken again only by
/// later allocations, whose copies are ordered after every launch before
/// them. As past the driver's own pooled allocations, a kernel's write
/// past the end of a small buffer lands in a neighbour (another buffer, or
/// one of relok's objects) instead of faulting; checked kernels refuse
/// such writes where they check (docs/cuda.md, "Checked mode", says where
/// they do not).
#[derive(Debug)]
pub(super) struct SmallBlocks {
    base: u64,
    /// One bit per slot, set while taken.
    used: [u64; SmallBlocks::SLOTS / 64],
    /// Slots not taken: a request for more fails without a search.
    pub(super) free: usize,
}

impl SmallBlocks {
    const SLOT: u64 = 64;
    const SLOTS: usize = 1024;
    /// The block's size (64 KiB).
    pub(super) const BYTES: u64 = SmallBlocks::SLOT * SmallBlocks::SLOTS as u64;
    /// The largest object taken from the block.
    pub(super) const MAX: u64 = 4096;

    pub(super) fn new(base: u64) -> SmallBlocks {
        SmallBlocks { base, used: [0; SmallBlocks::SLOTS / 64], free: SmallBlocks::SLOTS }
    }

    pub(super) fn slots(bytes: u64) -> usize {
        bytes.max(1).div_ceil(SmallBlocks::SLOT) as usize
    }

    fn is_used(&self, i: usize) -> bool {
        self.used[i / 64] & (1 << (i % 64)) != 0
    }

    fn mark(&mut self, first: usize, n: usize, used: bool) {
        for i in first..first + n {
            if used == self.is_used(i) {
                continue;
            }
            self.used[i / 64] ^= 1 << (i % 64);
            if used {
                self.free -= 1;
            } else {
                self.free += 1;
            }
        }
    }

    /// The address of `bytes` in the first run of free slots that holds
    /// them, taken; `None` when the object is too large or none fits.
    pub(super) fn take(&mut self, bytes: u64) -> Option<u64> {
        if bytes > SmallBlocks::MAX {
            return None;
        }
        let n = SmallBlocks::slots(bytes);
        if n > self.free {
            return None;
        }
        let mut run = 0;
        for i in 0..SmallBlocks::SLOTS {
            run = if self.is_used(i) { 0 } else { run + 1 };
            if run == n {
                let first = i + 1 - n;
                self.mark(first, n, true);
                return Some(self.base + first as u64 * SmallBlocks::SLOT);
            }
        }
        None
    }

    /// Whether `ptr` lies in the block.
    pub(super) fn holds(&self, ptr: u64) -> bool {
        (self.base..self.base + SmallBlocks::BYTES).contains(&ptr)
    }

    /// Frees the slots of the object of `bytes` at `ptr`; false when it
    /// is not in the block.
    pub(super) fn give_back(&mut self, ptr: u64, bytes: u64) -> bool {
        if !self.holds(ptr) {
            return false;
        }
        let first = ((ptr - self.base) / SmallBlocks::SLOT) as usize;
        let n = SmallBlocks::slots(bytes).min(SmallBlocks::SLOTS - first);
        self.mark(first, n, false);
        true
    }
}

/// What a small allocation is written with.
#[derive(Clone, Copy)]
enum SlotFill<'a> {
    Bytes(&'a [u8]),
    Zeros(u64),
}

impl SlotFill<'_> {
    /// Its length in bytes.
    fn len(self) -> u64 {
        match self {
            SlotFill::Bytes(bytes) => bytes.len() as u64,
            SlotFill::Zeros(n) => n,
        }
    }
}

/// Zeros for [`zero_on_stream`]'s copies: never written and never freed,
/// so a copy may read them whenever the driver does.
static ZEROS: [u8; SmallBlocks::MAX as usize] = [0; SmallBlocks::MAX as usize];

/// Zeroes `len` bytes at `dst` with asynchronous copies on `stream` (null:
/// the legacy stream, ordered after the launches before it on relok's
/// streams, which are blocking ones, and before those after it), from
/// [`ZEROS`]. A copy rather than `cuMemsetD8Async`: a first memset in a
/// process cost the first launch ≈9 µs more on the H200 (2026-12-01), the
/// copy path being warm by then.
///
/// # Safety
///
/// `dst .. dst + len` lies in device memory of the context bound to the
/// thread, which nothing else writes until the copy is done; `stream` is
/// a live stream of that context, or null.
pub(super) unsafe fn zero_on_stream(stream: sys::CUstream, dst: u64, len: u64) -> Result<(), DeviceError> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(ZEROS.len() as u64);
        // SAFETY: by the caller's contract; `ZEROS` lives as long as the
        // process and is never written.
        unsafe { driver::memcpy_htod_async(dst + done, &ZEROS[..n as usize], stream) }?;
        done += n;
    }
    Ok(())
}

/// The host side of a device's small asynchronous uploads
/// ([`Staging::write`]). Each upload's bytes are first copied into a
/// buffer of relok's own, kept here until the copy has run: CUDA's
/// documentation says only that a copy from pageable memory "might be
/// synchronous", so the driver may still read the source after the call
/// returns — the caller's bytes (which it may reuse at once) or a stack
/// copy could then be read too late.
///
/// When the buffers not yet covered reach [`Staging::COVER_BYTES`] or
/// [`Staging::COVER_COUNT`], an event is recorded on the legacy stream
/// after their copies; once it has passed (`cuEventQuery`, at the next
/// upload) every buffer before it is freed. Uploads below that pay no
/// driver call beyond the copy (a process's first launch makes none).
/// Buffers are freed as the GPU catches up; without further uploads the
/// last ones (under 16 KiB or 64) stay held until the device drops, when
/// they are freed after a last event.
#[derive(Debug)]
pub(super) struct Staging {
    ctx: Arc<CudaContext>,
    /// Made at its first record.
    event: Option<sys::CUevent>,
    /// The bytes of copies that may not have run yet, in order of copy.
    held: Vec<Box<[u8]>>,
    /// How many of `held` were copied before the event's last record.
    covered: usize,
}

// SAFETY: the event belongs to `ctx` (kept alive here) and is only used
// with it bound, behind the device's mutex.
unsafe impl Send for Staging {}

impl Staging {
    /// Bytes of uploads past the event's last record before it is recorded
    /// again.
    const COVER_BYTES: usize = 16 << 10;
    /// Uploads past the event's last record before it is recorded again.
    const COVER_COUNT: usize = 64;

    pub(super) fn new(ctx: &Arc<CudaContext>) -> Staging {
        Staging { ctx: Arc::clone(ctx), event: None, held: Vec::new(), covered: 0 }
    }

    /// Copies `bytes` to `dst` asynchronously on the legacy stream (ordered
    /// after the launches before it on relok's streams, which are blocking
    /// ones, and before those after it), from a copy kept until the copy
    /// has run.
    ///
    /// # Safety
    ///
    /// `dst .. dst + bytes.len()` lies in device memory of the device's
    /// context, bound to the thread, which nothing else writes until the
    /// copy is done.
    pub(super) unsafe fn write(&mut self, dst: u64, bytes: &[u8]) -> Result<(), DeviceError> {
        if let Some(event) = self.event
            && self.covered > 0
            // SAFETY: an event of the bound context.
            && unsafe { result::event::query(event) }.is_ok()
        {
            // The legacy stream runs in order: the copies before the
            // event's last record have run.
            self.held.drain(..self.covered);
            self.covered = 0;
        }
        // Held before the call: even a failed call is not trusted to have
        // left the bytes alone.
        self.held.push(bytes.into());
        let staged = self.held.last().map_or(&[][..], |b| &b[..]);
        // SAFETY: by the caller's contract; `staged` stays in `held` (a
        // box: its bytes do not move) until an event after it has passed.
        let copied = unsafe { driver::memcpy_htod_async(dst, staged, std::ptr::null_mut()) };
        let uncovered = &self.held[self.covered..];
        if uncovered.len() >= Staging::COVER_COUNT
            || uncovered.iter().map(|b| b.len()).sum::<usize>() >= Staging::COVER_BYTES
        {
            self.cover();
        }
        copied
    }

    /// Records the event after every held copy (making it first if need
    /// be). Without an event, waits for the legacy stream and frees them
    /// all; failing that too, leaks them.
    fn cover(&mut self) {
        let recorded = self.ctx.bind_to_thread().is_ok()
            && match self.event {
                Some(event) => Ok(event),
                None => result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING),
            }
            .is_ok_and(|event| {
                self.event = Some(event);
                // SAFETY: an event of the bound context, on its legacy stream.
                unsafe { result::event::record(event, std::ptr::null_mut()) }.is_ok()
            });
        if recorded {
            self.covered = self.held.len();
        } else if self.ctx.bind_to_thread().is_ok()
            // SAFETY: the legacy stream of the bound context.
            && unsafe { result::stream::synchronize(std::ptr::null_mut()) }.is_ok()
        {
            self.held.clear();
            self.covered = 0;
        } else {
            self.leak();
        }
    }

    /// Gives up the held bytes without freeing them: nothing says when the
    /// driver is done with them.
    fn leak(&mut self) {
        for b in self.held.drain(..) {
            Box::leak(b);
        }
        self.covered = 0;
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.held.is_empty() {
            self.cover();
            if let Some(event) = self.event
                && self.covered > 0
                // SAFETY: an event of the bound context (`cover` bound it).
                && unsafe { result::event::synchronize(event) }.is_err()
            {
                self.leak();
            }
        }
        if let Some(event) = self.event
            && self.ctx.bind_to_thread().is_ok()
        {
            // SAFETY: an event of the bound context, destroyed once.
            let _ = unsafe { result::event::destroy(event) };
        }
    }
}

/// A kernel's table buffer, freed when the kernel drops.
#[derive(Debug)]
pub(super) struct TableAlloc {
    pub(super) ctx: Arc<CudaContext>,
    pub(super) heap: Arc<Mutex<Heap>>,
    pub(super) ptr: u64,
}

impl Drop for TableAlloc {
    fn drop(&mut self) {
        let freed = lock(&self.heap).release(self.ptr);
        if freed == Some(Released::Own) && self.ctx.bind_to_thread().is_ok() {
            // SAFETY: a live allocation of this context, removed from the
            // map above so it is freed once; no launch uses it (a pending
            // launch holds its kernel, hence this table, alive).
            let _ = unsafe { result::free_sync(self.ptr) };
        }
    }
}
