//! Device memory: buffers of their own ([`DeviceMemory::alloc_zeroed`]),
//! the host-object heap (buffer 0) and its growth, the seal bitmap of host
//! values' copies, and host reads and writes through staging buffers (the
//! `wgpu` module docs, "Memory", say how pointers name them).

use super::{WgpuDevice, driver};
use crate::error::DeviceError;
use crate::launch::DevicePtr;
use crate::lock;
use crate::memory::{DeviceId, DeviceMemory};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

/// Byte offset of the first heap object (no object has word 0).
pub(super) const HEAP_START: u64 = 16;
/// Alignment of heap objects.
const HEAP_ALIGN: u64 = 16;
/// The heap's first size.
pub(super) const HEAP_INITIAL: u64 = 64 << 10;
/// The next buffer id: unique in the process, so a pointer of one wgpu
/// device names nothing on another.
static NEXT_BUFFER: AtomicU32 = AtomicU32::new(1);

/// Which 16-byte granules of the heap hold host values' copies, as the
/// WGSL's `relok_heap_guard` reads them (`relok_compiler::wgsl::sealed`):
/// this host copy of the bitmap, and where the device's copy lives.
#[derive(Debug, Default)]
pub(super) struct Seals {
    /// Bit `g` of word `g / 32`: granule `g` is sealed.
    bits: Vec<u32>,
    /// The bitmap object's heap offset (0: none yet).
    at: u64,
    /// Granules the device's bitmap covers.
    covered: u64,
}

/// The device's object heap (buffer 0).
#[derive(Debug)]
pub(super) struct Heap {
    pub(super) buffer: ::wgpu::Buffer,
    /// Bytes allocated (the next object's offset, before alignment).
    pub(super) top: u64,
    /// Live objects: offset → bytes.
    pub(super) live: BTreeMap<u64, u64>,
}

/// (buffer id, byte offset) of a pointer of this device.
pub(super) fn split(ptr: DevicePtr) -> (u32, u64) {
    ((ptr.0 >> 32) as u32, ptr.0 & 0xffff_ffff)
}

impl WgpuDevice {
    pub(super) fn buffer(
        &self,
        label: &str,
        size: u64,
        usage: ::wgpu::BufferUsages,
    ) -> Result<::wgpu::Buffer, DeviceError> {
        let size = size.max(4).next_multiple_of(4);
        if size > self.limits.max_buffer_size {
            return Err(DeviceError::OutOfMemory { requested: size, in_use: 0, limit: self.limits.max_buffer_size });
        }
        self.scoped("createBuffer", || {
            self.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        })
    }

    /// Waits for the queue, maps `buffer` (MAP_READ) and copies it out.
    pub(super) fn map_read(&self, buffer: &::wgpu::Buffer) -> Result<Vec<u8>, DeviceError> {
        let (tx, rx) = std::sync::mpsc::channel();
        buffer.map_async(::wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        if let Err(e) = self.wait() {
            // Cancels the pending mapping: the buffer stays usable.
            buffer.unmap();
            return Err(e);
        }
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(driver("mapAsync", e)),
            Err(_) => return Err(driver("mapAsync", "the mapping was dropped")),
        }
        let out = buffer.get_mapped_range(..).map_err(|e| driver("getMappedRange", e))?.to_vec();
        buffer.unmap();
        Ok(out)
    }

    /// Runs `f` on the buffer `ptr` points into and the offset there, once
    /// `len` bytes from `ptr` are known to lie inside one allocation. The
    /// heap stays locked meanwhile: it cannot grow under `f`.
    fn with_memory<T>(
        &self,
        ptr: DevicePtr,
        len: u64,
        f: impl FnOnce(&::wgpu::Buffer, u64) -> Result<T, DeviceError>,
    ) -> Result<T, DeviceError> {
        let (id, offset) = split(ptr);
        let oob = DeviceError::OutOfBounds { addr: ptr.0, len };
        let end = offset.checked_add(len).ok_or(oob.clone())?;
        if id == 0 {
            let heap = lock(&self.heap);
            match heap.live.range(..=offset).next_back() {
                Some((&base, &size)) if end <= base + size => f(&heap.buffer, offset),
                _ => Err(oob),
            }
        } else {
            let buffer = lock(&self.buffers).get(&id).filter(|(_, size)| end <= *size).map(|(b, _)| b.clone());
            f(&buffer.ok_or(oob)?, offset)
        }
    }

    /// The largest storage buffer this device binds (a multiple of 4, below
    /// 4 GiB: offsets are 32-bit).
    fn max_binding(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size).min(u64::from(u32::MAX)) & !3
    }

    /// Copies `len` bytes at `offset` of `buffer` out (through a staging
    /// buffer, in 4-byte-aligned spans as copies require).
    fn read_span(&self, buffer: &::wgpu::Buffer, offset: u64, len: u64) -> Result<Vec<u8>, DeviceError> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let (start, end) = (offset & !3, (offset + len).next_multiple_of(4));
        let staging = self.buffer(
            "relok readback",
            end - start,
            ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST,
        )?;
        self.scoped("copyBufferToBuffer", || {
            let mut encoder =
                self.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok read") });
            encoder.copy_buffer_to_buffer(buffer, start, &staging, 0, end - start);
            self.queue.submit([encoder.finish()]);
        })?;
        let bytes = self.map_read(&staging)?;
        let from = (offset - start) as usize;
        Ok(bytes[from..from + len as usize].to_vec())
    }

    /// Seals heap object `offset` of `bytes` (a host value's copy): sets its
    /// granules in the seal bitmap, moving the bitmap to a larger heap
    /// object first when it does not cover them, and writes what changed
    /// (docs/wgpu.md, "Host values are read-only").
    fn seal_heap_object(&self, offset: u64, bytes: u64) -> Result<(), DeviceError> {
        use relok_compiler::wgsl::sealed::{BITMAP_WORD, GRANULE, GRANULES_WORD};
        let mut seals = lock(&self.seals);
        let set = |bits: &mut Vec<u32>, from: u64, to: u64| {
            for g in from..to {
                let w = (g / 32) as usize;
                if bits.len() <= w {
                    bits.resize(w + 1, 0);
                }
                bits[w] |= 1 << (g % 32);
            }
        };
        let (first, end) = (offset / GRANULE, (offset + bytes.max(1)).div_ceil(GRANULE));
        set(&mut seals.bits, first, end);
        if end <= seals.covered {
            let (w0, w1) = ((first / 32) as usize, (end - 1) as usize / 32 + 1);
            let words: Vec<u8> = seals.bits[w0..w1].iter().flat_map(|w| w.to_le_bytes()).collect();
            let at = seals.at + 4 * w0 as u64;
            return self.write_heap_raw(at, &words);
        }
        // A new bitmap object covering twice the heap allocated so far
        // (and itself).
        let (at, covered) = {
            let mut heap = lock(&self.heap);
            let mut covered = end.max(heap.top.div_ceil(GRANULE)).next_multiple_of(32) * 2;
            let at = heap.top.next_multiple_of(HEAP_ALIGN);
            while (at + covered / 8).div_ceil(GRANULE) > covered {
                covered *= 2;
            }
            let size = covered / 8;
            if at + size > heap.buffer.size() {
                self.grow_heap(&mut heap, at + size)?;
            }
            // relok's own, like the header: not a live object (the host
            // neither reads nor frees it; live_allocations leaves it out).
            heap.top = at + size;
            (at, covered)
        };
        set(&mut seals.bits, at / GRANULE, (at + covered / 8).div_ceil(GRANULE));
        seals.bits.resize((covered / 32) as usize, 0);
        let words: Vec<u8> = seals.bits.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.write_heap_raw(at, &words)?;
        let mut header = Vec::new();
        header.extend_from_slice(&(at as u32).to_le_bytes());
        header.extend_from_slice(&(covered as u32).to_le_bytes());
        self.write_heap_raw(4 * u64::from(BITMAP_WORD), &header)?;
        debug_assert_eq!(GRANULES_WORD, BITMAP_WORD + 1);
        seals.at = at;
        seals.covered = covered;
        Ok(())
    }

    /// Writes 4-byte-aligned `bytes` at heap `offset`, also into relok's
    /// own words below the first object (after the launches enqueued
    /// before).
    fn write_heap_raw(&self, offset: u64, bytes: &[u8]) -> Result<(), DeviceError> {
        self.submit_all();
        let heap = lock(&self.heap);
        self.scoped("writeBuffer", || self.queue.write_buffer(&heap.buffer, offset, bytes))
    }

    /// Grows the heap to hold `needed` bytes (copying its contents; no word
    /// changes).
    fn grow_heap(&self, heap: &mut Heap, needed: u64) -> Result<(), DeviceError> {
        let max = self.max_binding();
        if needed > max {
            return Err(DeviceError::OutOfMemory { requested: needed - heap.top, in_use: heap.top, limit: max });
        }
        // Launches recorded against the old buffer run before the copy
        // (the heap lock, held, keeps new ones from being recorded).
        self.submit_all();
        let size = needed.next_power_of_two().max(HEAP_INITIAL).min(max);
        let usage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST | ::wgpu::BufferUsages::COPY_SRC;
        let bigger = self.buffer("relok heap", size, usage)?;
        self.scoped("copyBufferToBuffer", || {
            let mut encoder = self
                .device
                .create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok heap growth") });
            encoder.copy_buffer_to_buffer(&heap.buffer, 0, &bigger, 0, heap.buffer.size());
            self.queue.submit([encoder.finish()]);
        })?;
        heap.buffer = bigger;
        Ok(())
    }
}

impl DeviceMemory for WgpuDevice {
    fn device_id(&self) -> DeviceId {
        self.id
    }

    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        let max = self.max_binding();
        if bytes > max {
            return Err(DeviceError::OutOfMemory { requested: bytes, in_use: 0, limit: max });
        }
        let id = NEXT_BUFFER
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1))
            .map_err(|_| DeviceError::AddressSpaceExhausted)?;
        let usage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST | ::wgpu::BufferUsages::COPY_SRC;
        // wgpu zero-initialises every buffer.
        let b = self.buffer("relok buffer", bytes, usage)?;
        lock(&self.buffers).insert(id, (b, bytes));
        Ok(DevicePtr(u64::from(id) << 32))
    }

    fn alloc_object(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        let mut heap = lock(&self.heap);
        let offset = heap.top.next_multiple_of(HEAP_ALIGN);
        let end = offset.checked_add(bytes.max(1)).ok_or(DeviceError::AddressSpaceExhausted)?;
        if end > heap.buffer.size() {
            self.grow_heap(&mut heap, end)?;
        }
        heap.top = end;
        heap.live.insert(offset, bytes.max(1));
        Ok(DevicePtr(offset))
    }

    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        // Launches enqueued before this write must not see it.
        self.submit_all();
        self.with_memory(ptr, bytes.len() as u64, |buffer, offset| {
            if bytes.is_empty() {
                return Ok(());
            }
            let (start, end) = (offset & !3, (offset + bytes.len() as u64).next_multiple_of(4));
            let span = if start == offset && end == offset + bytes.len() as u64 {
                bytes.to_vec()
            } else {
                // Writes are whole 32-bit words: keep the neighbouring bytes.
                let mut span = self.read_span(buffer, start, end - start)?;
                let from = (offset - start) as usize;
                span[from..from + bytes.len()].copy_from_slice(bytes);
                span
            };
            self.scoped("writeBuffer", || self.queue.write_buffer(buffer, start, &span))
        })
    }

    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        // Launches enqueued before this read must have written.
        self.submit_all();
        self.with_memory(ptr, len, |buffer, offset| self.read_span(buffer, offset, len))
    }

    fn seal_value(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        let (id, offset) = split(ptr);
        let size = lock(&self.heap).live.get(&offset).copied().filter(|_| id == 0);
        match size {
            Some(bytes) => self.seal_heap_object(offset, bytes),
            None => Err(DeviceError::OutOfBounds { addr: ptr.0, len: 0 }),
        }
    }

    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        let (id, offset) = split(ptr);
        let freed = if id == 0 {
            // Heap space is not reused (sessions free nothing: their
            // objects live as long as the device).
            lock(&self.heap).live.remove(&offset).is_some()
        } else {
            // Dropped, not destroyed: a launch recorded or running that
            // bound it holds it until the launch is done.
            offset == 0 && lock(&self.buffers).remove(&id).is_some()
        };
        if freed { Ok(()) } else { Err(DeviceError::InvalidFree { addr: ptr.0 }) }
    }
}
