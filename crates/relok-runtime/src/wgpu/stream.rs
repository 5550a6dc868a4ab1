//! Streams (the `wgpu` module docs, "Streams"): [`WgpuStream`], the batch
//! of launches it records and its submission, the pool of buffers between
//! uses, and a synchronisation: the exception records copied out, read
//! back and reported.

use super::{LAUNCHES_PER_SUBMIT, WgpuDevice, scoped};
use crate::backend::{Thrown, wrong_device};
use crate::error::{DeviceError, LaunchError};
use crate::launch::LaunchStats;
use crate::lock;
use crate::memory::DeviceId;
use relok_compiler::state::ExceptionLayout;
use relok_compiler::wgsl::bindings;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Bytes of an exception record.
pub(super) const RECORD_BYTES: u64 = ExceptionLayout::WORDS as u64 * 8;
const _: () = assert!(RECORD_BYTES == bindings::EXCEPTION_WORDS as u64 * 4, "the record binding holds the record");

/// Bytes of a batch's arguments buffer: [`LAUNCHES_PER_SUBMIT`] launches
/// at the largest offset alignment wgpu allows (256 bytes). A batch whose
/// arguments fill it sooner is submitted sooner; a launch whose arguments
/// alone exceed it gets a buffer of its size.
pub(super) const BATCH_ARGS_BYTES: u64 = LAUNCHES_PER_SUBMIT as u64 * 256;

/// The most buffers of each kind the device's pool keeps.
const POOL_RECORDS: usize = 256;
const POOL_ARGS: usize = 16;
const POOL_READBACKS: usize = 8;

/// Zeroes an exception record.
const ZERO_RECORD: [u8; RECORD_BYTES as usize] = [0; RECORD_BYTES as usize];

/// A stream of a wgpu device: launches recorded into a command encoder
/// and submitted in batches (see the module docs).
#[derive(Debug)]
pub struct WgpuStream {
    pub(super) device: DeviceId,
    pub(super) shared: Arc<StreamShared>,
}

/// What a stream shares with its device's list of streams.
#[derive(Debug)]
pub(super) struct StreamShared {
    device: ::wgpu::Device,
    queue: ::wgpu::Queue,
    pool: Arc<Pool>,
    pub(super) batch: Mutex<Batch>,
}

/// What a stream recorded and has not yet reported.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// The launches recorded since the last submission, a compute pass
    /// each; `None` when there are none.
    pub(super) encoder: Option<::wgpu::CommandEncoder>,
    /// Launches in `encoder`.
    pub(super) recorded: usize,
    /// The first kernel in `encoder` (names a refused submission).
    pub(super) first: String,
    /// The arguments buffer the launches in `encoder` bind, and its bytes
    /// (each launch's at a multiple of the offset alignment), written just
    /// before the submission.
    pub(super) args: Option<(::wgpu::Buffer, Vec<u8>)>,
    /// This stream's exception records, by kernel serial.
    pub(super) records: HashMap<u64, Record>,
    /// Serials of the kernels launched since the last synchronisation, in
    /// order of first launch (each with `used` set in `records`).
    pub(super) used: Vec<u64>,
    /// Threads launched since the last synchronisation.
    pub(super) threads: u64,
    /// The first refused submission since the last synchronisation.
    pub(super) failure: Option<LaunchError>,
    /// Bind groups of launches bound to the current arguments buffer.
    pub(super) groups: HashMap<GroupKey, ::wgpu::BindGroup>,
}

/// What a launch's bind group binds, but the record (one per kernel and
/// stream) and the table (one per kernel): a bind group serves every
/// launch with the same key, each at its own arguments offset.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct GroupKey {
    pub(super) kernel: u64,
    pub(super) heap: ::wgpu::Buffer,
    pub(super) args: ::wgpu::Buffer,
    pub(super) bound: Vec<(::wgpu::Buffer, u64)>,
}

/// A kernel's exception record on one stream.
#[derive(Debug)]
pub(super) struct Record {
    pub(super) entry: String,
    /// The kernel's `alive`.
    pub(super) kernel: std::sync::Weak<()>,
    pub(super) buffer: ::wgpu::Buffer,
    /// Launched since the last synchronisation (in the batch's `used`).
    pub(super) used: bool,
}

impl StreamShared {
    /// Writes the batch's arguments and submits its launches, without
    /// waiting; a refusal is kept for the next synchronisation. Whether the
    /// submission (if any) was accepted.
    pub(super) fn submit(&self, batch: &mut Batch) -> bool {
        let Some(encoder) = batch.encoder.take() else { return true };
        let args = batch.args.take();
        let launches = std::mem::take(&mut batch.recorded);
        let result = scoped(&self.device, "submit", || {
            if let Some((buffer, bytes)) = &args {
                self.queue.write_buffer(buffer, 0, bytes);
            }
            self.queue.submit([encoder.finish()]);
        });
        if let Some((buffer, _)) = args.filter(|(b, _)| b.size() == BATCH_ARGS_BYTES) {
            // Its next write is ordered after this batch's reads.
            Pool::put(&self.pool.args, buffer, POOL_ARGS);
        }
        match result {
            Ok(()) => true,
            Err(DeviceError::Driver { call, message }) => {
                let message = format!("a batch of {launches} launches was refused: {message}");
                batch.failure.get_or_insert(LaunchError::Device {
                    kernel: batch.first.clone(),
                    error: DeviceError::Driver { call, message },
                });
                false
            }
            Err(error) => {
                batch.failure.get_or_insert(LaunchError::Device { kernel: batch.first.clone(), error });
                false
            }
        }
    }
}

impl Drop for StreamShared {
    /// Launches still recorded run; the stream's records go back to the
    /// pool, cleared (after those launches, in queue order).
    fn drop(&mut self) {
        let batch = self.batch.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut batch = std::mem::take(batch);
        self.submit(&mut batch);
        if let Some(e) = batch.failure {
            tracing::warn!("wgpu: a dropped stream's launches failed: {e}");
        }
        for r in batch.records.into_values() {
            if r.used {
                self.queue.write_buffer(&r.buffer, 0, &ZERO_RECORD);
            }
            Pool::put(&self.pool.records, r.buffer, POOL_RECORDS);
        }
    }
}

/// Buffers between uses, shared by a device and its streams: exception
/// records (zeroed, in queue order), batch arguments buffers of
/// [`BATCH_ARGS_BYTES`], readback buffers (unmapped).
#[derive(Debug, Default)]
pub(super) struct Pool {
    pub(super) records: Mutex<Vec<::wgpu::Buffer>>,
    pub(super) args: Mutex<Vec<::wgpu::Buffer>>,
    pub(super) readbacks: Mutex<Vec<::wgpu::Buffer>>,
}

impl Pool {
    /// A buffer of `list` that `fits`.
    pub(super) fn take(
        list: &Mutex<Vec<::wgpu::Buffer>>,
        fits: impl Fn(&::wgpu::Buffer) -> bool,
    ) -> Option<::wgpu::Buffer> {
        let mut list = lock(list);
        let i = list.iter().rposition(fits)?;
        Some(list.swap_remove(i))
    }

    /// Keeps `buffer` in `list` if it holds fewer than `cap`.
    pub(super) fn put(list: &Mutex<Vec<::wgpu::Buffer>>, buffer: ::wgpu::Buffer, cap: usize) {
        let mut list = lock(list);
        if list.len() < cap {
            list.push(buffer);
        }
    }
}

impl WgpuDevice {
    /// A new stream of this device, in its list of streams
    /// ([`Backend::new_stream`](crate::Backend::new_stream)).
    pub(super) fn open_stream(&self) -> Result<WgpuStream, DeviceError> {
        let shared = Arc::new(StreamShared {
            device: self.device.clone(),
            queue: self.queue.clone(),
            pool: Arc::clone(&self.pool),
            batch: Mutex::default(),
        });
        let mut streams = lock(&self.streams);
        // Forget dropped streams as the list grows.
        if streams.len() >= 16 && streams.len().is_power_of_two() {
            streams.retain(|s| s.strong_count() > 0);
        }
        streams.push(Arc::downgrade(&shared));
        Ok(WgpuStream { device: self.id, shared })
    }

    /// What a set exception record means: a fault the WGSL recorded (a
    /// loop at the adapter's limit among them), else the kernel's throw
    /// ([`crate::backend::thrown_error`]).
    fn thrown_error(&self, kernel: &str, t: Thrown) -> LaunchError {
        crate::backend::thrown_error(kernel, t, self.loop_limit())
    }

    /// Submits `stream`'s open batch with copies of the exception records
    /// it used since the last synchronisation, waits once, and reports the
    /// first failure (see the module docs).
    pub(super) fn synchronize_stream(&self, stream: &WgpuStream) -> Result<LaunchStats, LaunchError> {
        if stream.device != self.id {
            return Err(wrong_device("", "the stream", stream.device, self.id));
        }
        let shared = &stream.shared;
        let mut guard = lock(&shared.batch);
        let batch = &mut *guard;
        if batch.used.is_empty() {
            // Nothing launched since the last synchronisation.
            shared.submit(batch);
            let threads = std::mem::take(&mut batch.threads);
            return batch.failure.take().map_or(Ok(LaunchStats { steps: 0, threads }), Err);
        }
        let bytes = batch.used.len() as u64 * RECORD_BYTES;
        let readback = match Pool::take(&self.pool.readbacks, |b| b.size() >= bytes) {
            Some(b) => b,
            None => {
                let size = bytes.next_power_of_two().max(8 * RECORD_BYTES);
                let usage = ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST;
                self.buffer("relok exception readback", size, usage)
                    .map_err(|error| LaunchError::Device { kernel: batch.first.clone(), error })?
            }
        };
        let used = std::mem::take(&mut batch.used);
        let threads = std::mem::take(&mut batch.threads);
        let copies = |encoder: &mut ::wgpu::CommandEncoder, records: &HashMap<u64, Record>| {
            for (i, serial) in used.iter().enumerate() {
                if let Some(r) = records.get(serial) {
                    encoder.copy_buffer_to_buffer(&r.buffer, 0, &readback, i as u64 * RECORD_BYTES, RECORD_BYTES);
                }
            }
        };
        let encoder = batch.encoder.get_or_insert_with(|| {
            self.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok synchronize") })
        });
        copies(encoder, &batch.records);
        if !shared.submit(batch) {
            // The batch was refused with the copies in it: copy alone.
            let mut encoder = self
                .device
                .create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok synchronize") });
            copies(&mut encoder, &batch.records);
            if let Err(e) = self.scoped("submit", || self.queue.submit([encoder.finish()])) {
                tracing::warn!("wgpu: copying the exception records failed: {e}");
            }
        }
        let mapped = self.map_read(&readback);
        let words: Vec<u64> = match &mapped {
            Ok(bytes) => bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default())).collect(),
            Err(_) => Vec::new(),
        };
        let mut thrown = None;
        for (i, serial) in used.iter().enumerate() {
            let Some(r) = batch.records.get_mut(serial) else { continue };
            r.used = false;
            let at = i * ExceptionLayout::WORDS as usize;
            let t = words.get(at..at + ExceptionLayout::WORDS as usize).and_then(Thrown::from_record);
            // Unread records (a failed wait) are cleared too: the next
            // synchronisation must not report what this one lost.
            if t.is_some() || mapped.is_err() {
                self.queue.write_buffer(&r.buffer, 0, &ZERO_RECORD);
            }
            if let (None, Some(t)) = (&thrown, t) {
                thrown = Some(self.thrown_error(&r.entry, t));
            }
        }
        // Records of kernels dropped since go back to the pool (zeroed:
        // those that threw were cleared above).
        let dead: Vec<u64> =
            batch.records.iter().filter(|(_, r)| r.kernel.strong_count() == 0).map(|(&k, _)| k).collect();
        for k in dead {
            if let Some(r) = batch.records.remove(&k) {
                Pool::put(&self.pool.records, r.buffer, POOL_RECORDS);
            }
        }
        let failure = batch.failure.take();
        drop(guard);
        match mapped {
            Ok(_) => Pool::put(&self.pool.readbacks, readback, POOL_READBACKS),
            Err(error) => return Err(failure.unwrap_or(LaunchError::Device { kernel: String::new(), error })),
        }
        match failure.or(thrown) {
            Some(e) => Err(e),
            None => Ok(LaunchStats { steps: 0, threads }),
        }
    }

    /// Submits the open batch of every stream of this device (without
    /// waiting).
    pub(super) fn submit_all(&self) {
        let streams: Vec<Arc<StreamShared>> = lock(&self.streams).iter().filter_map(std::sync::Weak::upgrade).collect();
        for s in &streams {
            s.submit(&mut lock(&s.batch));
        }
    }
}
