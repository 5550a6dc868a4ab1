//! Streams and exception records on a cuda device: [`CudaStream`], the
//! pool of idle streams a device keeps (`StreamPool`), and the exception
//! records kernels write (`RecordPool`, `Record`) with their reading after
//! a stream's work (`read_records`).

use super::driver;
use super::launch::CudaKernel;
use super::memory::zero_on_stream;
use crate::backend::Thrown;
use crate::error::DeviceError;
use crate::lock;
use crate::memory::DeviceId;
use cudarc::driver::{CudaContext, result, sys};
use relok_compiler::state::ExceptionLayout;
use std::sync::{Arc, Mutex};

/// Exception records in device memory, 64 per chunk (one allocation of
/// 4 KiB): the kernel writes its record; the host reads the records a
/// stream used with one copy per chunk on that stream, then a wait for
/// the stream ([`read_records`]). A device makes its first chunk when it
/// opens and hands records out from there.
///
/// Not pinned host memory mapped into the device and read in place: the
/// first pinned allocation in a process costs about a millisecond (most of
/// relok's opening of a device), where the copy costs a synchronisation a
/// few µs (docs/cuda.md).
#[derive(Debug)]
pub(super) struct RecordPool {
    ctx: Arc<CudaContext>,
    chunks: Mutex<Vec<Chunk>>,
}

#[derive(Debug)]
struct Chunk {
    device: u64,
    used: [bool; RECORDS_PER_CHUNK],
}

const RECORDS_PER_CHUNK: usize = 64;
const WORDS_PER_RECORD: usize = ExceptionLayout::WORDS as usize;
const RECORD_BYTES: u64 = 8 * WORDS_PER_RECORD as u64;

impl RecordPool {
    pub(super) fn new(ctx: &Arc<CudaContext>) -> Result<Arc<RecordPool>, DeviceError> {
        let pool = Arc::new(RecordPool { ctx: Arc::clone(ctx), chunks: Mutex::default() });
        let chunk = pool.chunk()?;
        lock(&pool.chunks).push(chunk);
        Ok(pool)
    }

    /// A new chunk of zeroed records.
    fn chunk(&self) -> Result<Chunk, DeviceError> {
        let bytes = RECORDS_PER_CHUNK as u64 * RECORD_BYTES;
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: a plain allocation in the bound context.
        let device = unsafe { result::malloc_sync(bytes as usize) }.map_err(driver("cuMemAlloc"))?;
        // SAFETY: the chunk was just allocated, `bytes` long; nothing uses it
        // yet, and every launch that will is ordered after this copy.
        if let Err(e) = unsafe { zero_on_stream(std::ptr::null_mut(), device, bytes) } {
            // SAFETY: allocated above, freed once.
            let _ = unsafe { result::free_sync(device) };
            return Err(e);
        }
        Ok(Chunk { device, used: [false; RECORDS_PER_CHUNK] })
    }

    /// A free record (zeroed), making a chunk when every one is taken.
    pub(super) fn take(self: &Arc<Self>) -> Result<Record, DeviceError> {
        let mut chunks = lock(&self.chunks);
        let free = chunks.iter().enumerate().find_map(|(c, ch)| ch.used.iter().position(|u| !u).map(|s| (c, s)));
        let (chunk, slot) = match free {
            Some(found) => found,
            None => {
                chunks.push(self.chunk()?);
                (chunks.len() - 1, 0)
            }
        };
        chunks[chunk].used[slot] = true;
        let device = chunks[chunk].device + slot as u64 * RECORD_BYTES;
        Ok(Record { device, pool: Arc::clone(self), chunk, slot, unread: false })
    }
}

impl Drop for RecordPool {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        for ch in lock(&self.chunks).iter() {
            // SAFETY: allocated by `chunk`, freed once, after every record
            // (each holds the pool alive) is gone.
            let _ = unsafe { result::free_sync(ch.device) };
        }
    }
}

/// Reads `records` after the work enqueued on `stream` before this call
/// (null: the legacy stream): one copy per chunk among them, enqueued on
/// `stream`, then a wait for the stream (`cuStreamSynchronize`; only the
/// wait when there are no records), so that the copies and the launches
/// before them are done whatever the driver makes of a copy to pageable
/// memory (the wait is made after a failed copy too). Each record's throw
/// comes back in order; the records holding one are then cleared on
/// `stream` ([`Record::clear`]; one that cannot be stays `unread` and is
/// logged: its throw is still reported).
///
/// # Safety
///
/// `stream` is a live stream of the records' context, which is bound to the
/// thread; no launch using the records is enqueued during the call.
pub(super) unsafe fn read_records(
    stream: sys::CUstream,
    records: &mut [&mut Record],
) -> Result<Vec<Option<Thrown>>, DeviceError> {
    let mut chunks: Vec<(*const RecordPool, usize)> = records.iter().map(|r| (Arc::as_ptr(&r.pool), r.chunk)).collect();
    chunks.sort_unstable();
    chunks.dedup();
    let mut copies = Vec::with_capacity(chunks.len());
    let mut copied = Ok(());
    for chunk in chunks {
        let span = records.iter().filter(|r| (Arc::as_ptr(&r.pool), r.chunk) == chunk).map(|r| r.device);
        let (first, last) = (span.clone().min().unwrap_or(0), span.max().unwrap_or(0));
        let mut words = vec![0u64; ((last - first + RECORD_BYTES) / 8) as usize];
        // SAFETY: `first ..= last` are records of one live chunk (each
        // record holds its pool, hence the chunk, alive); `words` lives
        // in `copies` until after the wait below; the stream by the
        // caller's contract.
        copied = unsafe { result::memcpy_dtoh_async(&mut words, first, stream) }
            .map_err(driver("cuMemcpyDtoHAsync (exception records)"));
        copies.push((first, words));
        if copied.is_err() {
            break;
        }
    }
    // Waited for even after a failed copy: those enqueued before it write
    // into `copies`.
    // SAFETY: as above.
    let waited = unsafe { result::stream::synchronize(stream) }.map_err(driver("cuStreamSynchronize"));
    copied.and(waited)?;
    let thrown: Vec<Option<Thrown>> = records
        .iter()
        .map(|r| {
            let (first, words) =
                copies.iter().find(|(first, words)| (*first..*first + 8 * words.len() as u64).contains(&r.device))?;
            let at = ((r.device - first) / 8) as usize;
            Thrown::from_record(&words[at..at + WORDS_PER_RECORD])
        })
        .collect();
    for (r, t) in records.iter_mut().zip(&thrown) {
        r.unread = t.is_some();
        if t.is_some() {
            // SAFETY: by the caller's contract.
            if let Err(e) = unsafe { r.clear(stream) } {
                tracing::warn!(
                    "an exception record could not be cleared ({e}); it is cleared when it goes back to the pool"
                );
            }
        }
    }
    Ok(thrown)
}

/// One exception record, from a [`RecordPool`]: a kernel's own (for its
/// blocking launches) or a kernel's on one stream. Zeroed while free;
/// cleared when read holding a throw, and when it goes back to the pool
/// unread after a launch.
#[derive(Debug)]
pub(super) struct Record {
    pub(super) device: u64,
    pool: Arc<RecordPool>,
    chunk: usize,
    slot: usize,
    /// A launch used it since it was last read (or it was read holding a
    /// throw and its clearing failed).
    pub(super) unread: bool,
}

impl Record {
    /// Zeroes the record with a copy on `stream` (null: the legacy stream)
    /// and waits for it: after the launches before it there, done before
    /// any launch after it anywhere (the record may go back to the pool).
    ///
    /// # Safety
    ///
    /// `stream` is a live stream of the record's context, or null; every
    /// launch given this record was enqueued on it (or on a stream the
    /// caller waited for).
    unsafe fn clear(&mut self, stream: sys::CUstream) -> Result<(), DeviceError> {
        self.pool.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: the record's bytes lie in a live chunk of the bound
        // context; the launches that write them are ordered before the
        // copy (the caller's contract), later ones after the wait.
        unsafe { zero_on_stream(stream, self.device, RECORD_BYTES) }?;
        // SAFETY: as above.
        unsafe { result::stream::synchronize(stream) }.map_err(driver("cuStreamSynchronize"))?;
        self.unread = false;
        Ok(())
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        // Whatever a launch wrote since the last read must not reach the
        // record's next holder; a record that cannot be cleared stays taken.
        // SAFETY: the legacy stream waits for the launches of relok's
        // streams, all of which are blocking ones.
        if self.unread && unsafe { self.clear(std::ptr::null_mut()) }.is_err() {
            return;
        }
        if let Some(ch) = lock(&self.pool.chunks).get_mut(self.chunk) {
            ch.used[self.slot] = false;
        }
    }
}

/// CUDA streams no longer used by a [`CudaStream`], kept for the next
/// [`Backend::new_stream`](crate::backend::Backend::new_stream) of the
/// device (creating one costs ≈10 µs), up to [`StreamPool::KEEP`]; one is
/// made when the device opens. Destroyed with the pool.
#[derive(Debug)]
pub(super) struct StreamPool {
    ctx: Arc<CudaContext>,
    free: Mutex<Vec<RawStream>>,
}

/// A CUDA stream handle with no work pending.
#[derive(Debug)]
pub(super) struct RawStream(pub(super) sys::CUstream);

// SAFETY: a stream handle may be used from any thread with its context
// bound; the pool only holds idle ones.
unsafe impl Send for RawStream {}

impl StreamPool {
    /// Idle streams kept at most; more are destroyed.
    const KEEP: usize = 8;

    pub(super) fn new(ctx: &Arc<CudaContext>) -> Result<Arc<StreamPool>, DeviceError> {
        let pool = Arc::new(StreamPool { ctx: Arc::clone(ctx), free: Mutex::default() });
        let raw = pool.create()?;
        lock(&pool.free).push(raw);
        Ok(pool)
    }

    /// The stream made when the pool was (the next one taken).
    pub(super) fn first(&self) -> sys::CUstream {
        lock(&self.free).last().map_or(std::ptr::null_mut(), |raw| raw.0)
    }

    fn create(&self) -> Result<RawStream, DeviceError> {
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        result::stream::create(result::stream::StreamKind::Default).map(RawStream).map_err(driver("cuStreamCreate"))
    }

    /// An idle stream: a kept one, else a new one.
    pub(super) fn take(&self) -> Result<RawStream, DeviceError> {
        match lock(&self.free).pop() {
            Some(raw) => Ok(raw),
            None => self.create(),
        }
    }
}

impl Drop for StreamPool {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            for raw in lock(&self.free).drain(..) {
                // SAFETY: idle streams of this context, destroyed once.
                let _ = unsafe { result::stream::destroy(raw.0) };
            }
        }
    }
}

/// A CUDA stream of one device. Launches are enqueued with
/// `cuLaunchKernel` on it and return at once; each kernel launched on the
/// stream gets an exception record of its own there (from the device's
/// `RecordPool`), so the first failure names its kernel; `synchronize`
/// reads the records used since the last synchronisation, in order of
/// first use, with copies on the stream and a wait for it
/// (`cuStreamSynchronize`; only the wait when no kernel ran).
#[derive(Debug)]
pub struct CudaStream {
    pub(super) device: DeviceId,
    pub(super) ctx: Arc<CudaContext>,
    pub(super) raw: sys::CUstream,
    /// Where `raw` goes back when the stream drops.
    pub(super) pool: Arc<StreamPool>,
    pub(super) records: Arc<RecordPool>,
    pub(super) state: Mutex<StreamRecords>,
}

// SAFETY: the stream handle belongs to `ctx` (kept alive here) and is only
// used with it bound; the records are behind the mutex.
unsafe impl Send for CudaStream {}
// SAFETY: as for Send.
unsafe impl Sync for CudaStream {}

#[derive(Debug, Default)]
pub(super) struct StreamRecords {
    /// (kernel, its entry, its record on this stream).
    pub(super) records: Vec<(std::sync::Weak<CudaKernel>, String, Record)>,
    /// Indices into `records` used since the last synchronisation, in
    /// order of first use.
    pub(super) used: Vec<usize>,
    /// The kernels of those launches, held until the stream passes them:
    /// their modules must not be unloaded under a running launch.
    pub(super) alive: Vec<Arc<CudaKernel>>,
    pub(super) threads: u64,
}

impl CudaStream {
    /// The record of `kernel` on this stream (made on its first launch
    /// here), marked used; its device address.
    pub(super) fn record_for(&self, state: &mut StreamRecords, kernel: &Arc<CudaKernel>) -> Result<u64, DeviceError> {
        let found = state
            .records
            .iter()
            .position(|(k, ..)| std::ptr::eq(k.as_ptr(), Arc::as_ptr(kernel)) && k.strong_count() > 0);
        let i = match found {
            Some(i) => i,
            None => {
                state.records.push((Arc::downgrade(kernel), kernel.entry.clone(), self.records.take()?));
                state.records.len() - 1
            }
        };
        if !state.used.contains(&i) {
            state.used.push(i);
            state.alive.push(Arc::clone(kernel));
        }
        let record = &mut state.records[i].2;
        record.unread = true;
        Ok(record.device)
    }

    /// Waits for the stream and reads the records used since the last
    /// synchronisation, in order of first use: the first throw, with its
    /// kernel's entry. If the reading fails, the stream is still waited
    /// for, and the records stay marked used, to be read next time.
    pub(super) fn wait_and_read(&self, state: &mut StreamRecords) -> Result<Option<(String, Thrown)>, DeviceError> {
        let used = std::mem::take(&mut state.used);
        let mut read: Vec<(usize, &str, &mut Record)> = state
            .records
            .iter_mut()
            .enumerate()
            .filter_map(|(i, (_, entry, record))| {
                used.iter().position(|&u| u == i).map(|order| (order, entry.as_str(), record))
            })
            .collect();
        read.sort_by_key(|r| r.0);
        let (entries, mut records): (Vec<&str>, Vec<&mut Record>) =
            read.into_iter().map(|(_, entry, record)| (entry, record)).unzip();
        // SAFETY: this context's stream (bound by the caller), alive while
        // `self` is; the caller holds the stream's lock, which keeps
        // launches out.
        match unsafe { read_records(self.raw, &mut records) } {
            Ok(thrown) => Ok(entries.iter().zip(thrown).find_map(|(entry, t)| t.map(|t| ((*entry).to_owned(), t)))),
            Err(e) => {
                // `read_records` waited for the stream all the same.
                state.used = used;
                Err(e)
            }
        }
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // Waited for: its work is done before it is kept for reuse or
            // destroyed; and its records read (a throw has nobody left to
            // hear of it), so they go back to the pool clean.
            let idle = self.wait_and_read(&mut lock(&self.state)).is_ok();
            let mut free = lock(&self.pool.free);
            if idle && free.len() < StreamPool::KEEP {
                free.push(RawStream(self.raw));
            } else {
                // SAFETY: created by the pool, destroyed once.
                let _ = unsafe { result::stream::destroy(self.raw) };
            }
        }
    }
}
