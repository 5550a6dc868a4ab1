//! The wgpu device (docs/design.md §6, docs/wgpu.md): WGSL artifacts run through
//! wgpu on Vulkan, Metal or DX12.
//!
//! Drivers are found at run time: a build needs none, and on a machine
//! without an adapter [`WgpuDevice::open`] answers
//! [`WgpuError::NotAvailable`].
//!
//! # Memory
//!
//! WGSL has no flat address space, so a [`DevicePtr`] of this device names
//! a buffer and a byte offset in it: `(buffer id << 32) | offset`.
//!
//! - Buffer 0 is the device's **heap**: every host object of the device (a
//!   value's copy, a runtime global's cell — [`DeviceMemory::alloc_object`])
//!   lives there, so its word is its heap byte offset and a kernel reaches
//!   it as `relok_heap[word.x >> 2]` (binding 3). Objects are bump-allocated
//!   16-byte aligned from offset 16 (no object has word 0) and never reused;
//!   the heap grows by copying into a larger buffer, which changes no word.
//! - Every [`DeviceMemory::alloc_zeroed`] is a buffer of its own, its id
//!   unique in the process (a pointer of one device names nothing on
//!   another), bound to the kernel parameter it is passed as (binding
//!   4 + i) from the pointer's offset to the buffer's end. The offset must
//!   be a multiple of the adapter's `min_storage_buffer_offset_alignment`
//!   (a bound range starts there); the kernel sees the range as a buffer of
//!   its own, starting at the pointer.
//! - Freeing a buffer drops the device's handle to it: a launch recorded
//!   (or running) that bound it keeps it alive until the launch is done.
//!
//! # Loading
//!
//! Loading (`Backend::load`) registers the artifact's values, resolves its words
//! with the session on this device, creates the shader module (validated by
//! wgpu; errors are caught, never panics) and, for `table`, the table
//! buffer (binding 2). A pipeline is made per block shape (the WGSL's
//! `override relok_block_x/y/z`) on first launch, through the device's
//! pipeline cache.
//!
//! # Streams: launches recorded, submitted in batches
//!
//! A [`WgpuStream`] records each launch into one open command encoder (a
//! compute pass per launch; wgpu puts the barriers between them) and
//! submits the encoder — without waiting — when it holds
//! [`LAUNCHES_PER_SUBMIT`] launches, at [`Backend::synchronize`], before
//! any host read or write of device memory, before the heap grows, and
//! when the stream is dropped. Enqueueing checks everything the host can
//! check (geometry, arguments, bindings) and returns.
//!
//! Bindings and the arguments' slots are those
//! [`relok_compiler::wgsl::bindings`] describes (the WGSL declares exactly
//! these).
//!
//! - **Arguments** (binding 1: the seed, two 32-bit slots per scalar
//!   parameter, then a zero word the WGSL reads as `relok_zero`, the
//!   binding's last slot): each launch's slots go into the batch's
//!   arguments buffer at an offset that is a multiple of
//!   `min_storage_buffer_offset_alignment`, the binding's dynamic offset
//!   (the binding is their size): one bind group per (kernel, heap,
//!   buffers) serves every launch of the batch. The batch's bytes are
//!   written (`Queue::write_buffer`) just before its submission, whose
//!   command buffers see them. The buffer goes back to the device's pool
//!   at once: the next batch's write of it is ordered after this batch's
//!   reads on the queue.
//! - **Exception records** (binding 0): one per (stream, kernel), taken
//!   from the device's pool (zeroed) on the kernel's first launch on the
//!   stream, so a failure names its kernel. A record keeps the first
//!   exception of its kernel (the throwing thread claims the flag with a
//!   compare-exchange). [`Backend::synchronize`] submits the open batch
//!   with copies of every record used since the last synchronisation into
//!   one readback buffer, waits once, and reports the first record, in
//!   order of the kernels' first launch since the last synchronisation,
//!   whose flag is set: the first exception when one kernel throws (the
//!   usual case); with several kernels throwing, the one launched first,
//!   not necessarily the one that threw first. Records that threw are
//!   zeroed (ordered before the next submission). A failed submission
//!   (wgpu validation at `finish`/`submit`) is reported first, naming the
//!   batch's first kernel.
//! - **Ordering against the host**: `Queue::write_buffer` lands at the next
//!   submission, before its command buffers, so an upload would be seen by
//!   a launch enqueued before it. [`DeviceMemory::read_bytes`] and
//!   [`DeviceMemory::write_bytes`] therefore submit every open batch of the
//!   device first (the device holds its streams weakly): a read sees the
//!   writes of every launch enqueued before it, a launch enqueued before a
//!   write does not see it.
//! - **The heap**: a launch binds the heap buffer of its time; growing the
//!   heap copies it into a bigger buffer. An enqueue holds the heap lock
//!   while it records (lock order: heap, then a stream's batch, then the
//!   pools), and [`WgpuDevice`]'s growth, under the heap lock, submits
//!   every open batch before its copy: every launch bound to the old heap
//!   runs before the copy, none is recorded against it after.
//!
//! [`WgpuDevice::launch`] is an enqueue on a stream of its own and a
//! synchronisation: the one launch path.
//!
//! # The pipeline-cache archive (tier 2)
//!
//! Where the adapter has `PIPELINE_CACHE` (Vulkan), the device keeps one
//! wgpu `PipelineCache` whose blob is one entry of a
//! [`relok_cache::Store`] of kind `Binary` under `<cache>/binary/wgpu-
//! <backend>-<adapter>-<vendor>-<device>-<driver>/`. The entry's payload
//! is a header of ours — backend, vendor, device, adapter and driver names,
//! the Vulkan driver's pipeline-cache UUID, wgpu's major version — then
//! wgpu's blob; the store checks the framing and SHA-256, the header is
//! compared with this adapter, and only then does the blob reach wgpu
//! (which checks its own header; the Vulkan driver checks its own too).
//! Anything that does not match is a miss: the cache starts empty and the
//! blob is replaced when the device is dropped (or
//! [`WgpuDevice::save_pipeline_cache`]) after pipelines were made.
//! `RELOK_BINARY_CACHE=off` (or `RELOK_CACHE=off`) disables it; the cap is
//! `RELOK_BINARY_CACHE_MAX_BYTES`.
//!
//! # Files
//!
//! - `mod.rs`: these docs, [`WgpuError`], [`WgpuDevice`] and its opening
//!   (the first submission readies the queue), identity and counters,
//!   [`LAUNCHES_PER_SUBMIT`], the error scopes every wgpu call runs in,
//!   and the [`Backend`] impl (each call handed to the file below that
//!   holds it);
//! - `adapter.rs`: the process's one instance, listing the adapters
//!   `wgpu[:N]` counts ([`list_adapters`], [`ADAPTER_VAR`]) and choosing
//!   one, the adapter's limits (launch shapes, offset alignment) and
//!   llvmpipe's loop limit;
//! - `memory.rs`: buffers, the host-object heap and its seal bitmap, host
//!   reads and writes, the [`DeviceMemory`] impl;
//! - `pipeline_cache.rs`: the pipeline-cache archive (tier 2): its
//!   configuration, its header (with the Vulkan driver's pipeline-cache
//!   UUID) and the checks at open, [`PipelineCacheState`], saving;
//! - `module.rs`: loading (validation, limits, words, the shader module,
//!   the table buffer), bind-group and pipeline layouts, pipelines per
//!   block shape, [`WgpuKernel`];
//! - `launch.rs`: a launch's arguments and bindings, recorded into a
//!   stream's batch, and [`WgpuDevice::launch`];
//! - `stream.rs`: [`WgpuStream`], its batches and their submission, the
//!   buffer pool, synchronisation and the exception records read back;
//! - [`timing`]: the benchmarks' timing loop, the hand-written dispatch
//!   loop `relok bench launch` measures relok's launches against.
//!
//! [`DevicePtr`]: crate::DevicePtr
//! [`DeviceMemory`]: crate::DeviceMemory
//! [`DeviceMemory::alloc_object`]: crate::DeviceMemory::alloc_object
//! [`DeviceMemory::alloc_zeroed`]: crate::DeviceMemory::alloc_zeroed
//! [`DeviceMemory::read_bytes`]: crate::DeviceMemory::read_bytes
//! [`DeviceMemory::write_bytes`]: crate::DeviceMemory::write_bytes

mod adapter;
mod launch;
mod memory;
mod module;
mod pipeline_cache;
mod stream;
pub mod timing;

pub use adapter::{ADAPTER_VAR, AdapterSummary, list_adapters};
pub use module::WgpuKernel;
pub use pipeline_cache::PipelineCacheState;
pub use stream::WgpuStream;

use crate::backend::{Backend, LoadedKernels};
use crate::error::{DeviceError, LaunchError, ProgramError};
use crate::launch::{KernelArg, LaunchConfig, LaunchStats};
use crate::load::LoadRequest;
use crate::lock;
use crate::memory::{DeviceId, DeviceKind};
use crate::session::Session;
use memory::{HEAP_INITIAL, HEAP_START, Heap, Seals};
use module::Layouts;
use relok_cache::Store;
use relok_compiler::artifact::CodeTarget;
use relok_ir::Type;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use stream::{Pool, StreamShared};

/// Why the wgpu device cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WgpuError {
    /// No adapter of that ordinal (or none matching `RELOK_WGPU_ADAPTER`).
    #[error("wgpu device not available: {0}")]
    NotAvailable(String),
    /// Creating the device failed.
    #[error(transparent)]
    Driver(#[from] DeviceError),
}

/// Launches a stream records before it submits them (without waiting).
pub const LAUNCHES_PER_SUBMIT: usize = 256;

fn driver(call: &'static str, message: impl ToString) -> DeviceError {
    DeviceError::Driver { call, message: message.to_string() }
}

/// Runs `f` inside validation, out-of-memory and internal error scopes of
/// `device` (wgpu's scopes are per thread): an error wgpu reports there
/// comes back as a [`DeviceError`].
fn scoped<T>(device: &::wgpu::Device, call: &'static str, f: impl FnOnce() -> T) -> Result<T, DeviceError> {
    let validation = device.push_error_scope(::wgpu::ErrorFilter::Validation);
    let memory = device.push_error_scope(::wgpu::ErrorFilter::OutOfMemory);
    let internal = device.push_error_scope(::wgpu::ErrorFilter::Internal);
    let out = f();
    let errors = [internal, memory, validation].map(|s| pollster::block_on(s.pop()));
    match errors.into_iter().flatten().next() {
        Some(e) => {
            // wgpu's text stops at the first cause: add the rest.
            let mut message = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                let text = c.to_string();
                if !message.contains(&text) {
                    message.push_str(&format!("\n  {text}"));
                }
                cause = c.source();
            }
            Err(driver(call, message))
        }
        None => Ok(out),
    }
}

/// A queue's submission, copies and mapping are set up by the driver at
/// their first use, which would land in the first launch: do them once
/// when the device opens (a write, a copy into a mappable buffer, a
/// submission, a map), as the cuda device readies its copies. The wait is
/// bounded by [`READY_WAIT`] (see [`WgpuDevice::open_in`] for a timeout).
fn ready_queue(device: &::wgpu::Device, queue: &::wgpu::Queue, heap: &::wgpu::Buffer) -> Result<(), ::wgpu::PollError> {
    let usage = ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST;
    let read = device.create_buffer(&::wgpu::BufferDescriptor {
        label: Some("relok ready"),
        size: 8,
        usage,
        mapped_at_creation: false,
    });
    queue.write_buffer(heap, 0, &[0; 8]);
    let mut encoder = device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok ready") });
    encoder.copy_buffer_to_buffer(heap, 0, &read, 0, 8);
    queue.submit([encoder.finish()]);
    read.slice(..).map_async(::wgpu::MapMode::Read, |_| ());
    let wait = ::wgpu::PollType::Wait { submission_index: None, timeout: Some(READY_WAIT) };
    device.poll(wait).map(|_| ())
}

/// How long opening a wgpu device waits for its first submission (an
/// 8-byte copy: milliseconds, even on lavapipe under load).
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// One adapter with a wgpu device of its own.
#[derive(Debug)]
pub struct WgpuDevice {
    ordinal: usize,
    info: ::wgpu::AdapterInfo,
    /// The Vulkan driver's pipeline-cache UUID (part of our blob header).
    cache_uuid: Option<[u8; 16]>,
    device: ::wgpu::Device,
    queue: ::wgpu::Queue,
    limits: ::wgpu::Limits,
    id: DeviceId,
    heap: Mutex<Heap>,
    /// Buffers of `alloc_zeroed`, by id, with the bytes asked for.
    buffers: Mutex<BTreeMap<u32, (::wgpu::Buffer, u64)>>,
    /// Bind-group and pipeline layouts, by number of buffer parameters.
    layouts: Mutex<HashMap<usize, Arc<Layouts>>>,
    /// Bound to binding 2 when a kernel has no table.
    empty_table: ::wgpu::Buffer,
    /// Table buffers of loaded kernels alive (each kernel's drop counts
    /// its own down).
    tables: Arc<AtomicU64>,
    /// The streams of this device, held weakly: their open batches are
    /// submitted before the heap grows and before a host read or write.
    streams: Mutex<Vec<std::sync::Weak<StreamShared>>>,
    /// Exception records, arguments and readback buffers between uses.
    pool: Arc<Pool>,
    /// Kernels loaded with their words, by (artifact key, session).
    loaded: LoadedKernels<WgpuKernel>,
    /// The pipeline cache, where the adapter has one.
    pipeline_cache: Option<::wgpu::PipelineCache>,
    /// Tier 2: where the pipeline cache's blob is kept.
    archive: Option<Store>,
    stats: Counters,
    /// The seal bitmap of host values' copies in the heap (held while it
    /// is updated and written).
    seals: Mutex<Seals>,
}

#[derive(Debug, Default)]
struct Counters {
    pipelines: AtomicU64,
    modules: AtomicU64,
    launches: AtomicU64,
    cache_loaded_bytes: AtomicU64,
    cache_saved_bytes: AtomicU64,
    cache_dirty: AtomicBool,
    cache_state: Mutex<PipelineCacheState>,
}

/// Counters of a wgpu device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WgpuLoadStats {
    /// Shader modules created (one per artifact and session).
    pub modules: u64,
    /// Compute pipelines created (one per loaded kernel and block shape).
    pub pipelines: u64,
    /// Launches.
    pub launches: u64,
    /// The pipeline-cache archive at open.
    pub pipeline_cache: PipelineCacheState,
    /// Bytes of wgpu's blob loaded from the archive.
    pub pipeline_cache_loaded_bytes: u64,
    /// Bytes of wgpu's blob last saved to the archive.
    pub pipeline_cache_saved_bytes: u64,
    /// The archive's own counters in this process.
    pub archive: relok_cache::TierStats,
}

impl WgpuDevice {
    /// Opens adapter `ordinal` of [`list_adapters`] without a pipeline-cache
    /// archive.
    pub fn open(ordinal: usize) -> Result<WgpuDevice, WgpuError> {
        WgpuDevice::open_in(ordinal, None)
    }

    /// Opens adapter `ordinal` with the archive under cache root `root`
    /// (`None`: no archive).
    pub fn open_in(ordinal: usize, root: Option<std::path::PathBuf>) -> Result<WgpuDevice, WgpuError> {
        let adapter = adapter::choose(ordinal)?;
        let info = adapter.get_info();
        let cache_uuid = pipeline_cache::cache_uuid(&adapter);
        let features = adapter.features() & ::wgpu::Features::PIPELINE_CACHE;
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&::wgpu::DeviceDescriptor {
            label: Some("relok"),
            required_features: features,
            required_limits: limits.clone(),
            // Small first memory blocks: with wgpu's default (64 MiB of
            // pinned host memory for the first mappable buffer) a first
            // load on NVIDIA took 19 ms more; large buffers get blocks of
            // their own either way.
            memory_hints: ::wgpu::MemoryHints::MemoryUsage,
            ..Default::default()
        }))
        .map_err(|e| driver("requestDevice", e))?;
        // Errors outside an error scope are logged, never a panic.
        device.on_uncaptured_error(Arc::new(|e: ::wgpu::Error| tracing::error!("wgpu: {e}")));
        let storage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST | ::wgpu::BufferUsages::COPY_SRC;
        let heap = device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some("relok heap"),
            size: HEAP_INITIAL,
            usage: storage,
            mapped_at_creation: false,
        });
        let empty_table = device.create_buffer(&::wgpu::BufferDescriptor {
            label: Some("relok no table"),
            size: 8,
            usage: ::wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        if let Err(e) = ready_queue(&device, &queue, &heap) {
            if matches!(e, ::wgpu::PollError::Timeout) {
                // Dropping a queue waits for the GPU to go idle, without a
                // bound: the GPU that did not finish an 8-byte copy in
                // READY_WAIT keeps its handles (leaked, once per such
                // failure), so that opening fails instead of hanging.
                std::mem::forget((device, queue, heap, empty_table));
            }
            return Err(driver("poll", e).into());
        }
        let id = DeviceId::allocate(DeviceKind::Wgpu, ordinal as u64);
        let mut d = WgpuDevice {
            ordinal,
            info,
            cache_uuid,
            device,
            queue,
            limits,
            id,
            heap: Mutex::new(Heap { buffer: heap, top: HEAP_START, live: BTreeMap::new() }),
            buffers: Mutex::default(),
            layouts: Mutex::default(),
            empty_table,
            tables: Arc::default(),
            streams: Mutex::default(),
            pool: Arc::default(),
            loaded: Mutex::default(),
            pipeline_cache: None,
            archive: None,
            stats: Counters::default(),
            seals: Mutex::default(),
        };
        if let Some(root) = root.filter(|_| !features.is_empty()) {
            match crate::stores::open(d.archive_config(&root)) {
                Ok(store) => d.archive = Some(store),
                Err(e) => tracing::warn!("pipeline-cache archive disabled for this run: {e}"),
            }
        }
        d.pipeline_cache = d.open_pipeline_cache(!features.is_empty());
        Ok(d)
    }

    /// The adapter's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// What wgpu says of the adapter.
    pub fn info(&self) -> &::wgpu::AdapterInfo {
        &self.info
    }

    /// The code target of this device.
    pub fn target(&self) -> CodeTarget {
        CodeTarget::Wgsl
    }

    /// This device's counters.
    pub fn load_stats(&self) -> WgpuLoadStats {
        let s = &self.stats;
        WgpuLoadStats {
            modules: s.modules.load(Ordering::Relaxed),
            pipelines: s.pipelines.load(Ordering::Relaxed),
            launches: s.launches.load(Ordering::Relaxed),
            pipeline_cache: *lock(&s.cache_state),
            pipeline_cache_loaded_bytes: s.cache_loaded_bytes.load(Ordering::Relaxed),
            pipeline_cache_saved_bytes: s.cache_saved_bytes.load(Ordering::Relaxed),
            archive: self.archive.as_ref().map(Store::stats).unwrap_or_default(),
        }
    }

    /// Runs `f` inside validation, out-of-memory and internal error scopes:
    /// an error wgpu reports there comes back as a [`DeviceError`].
    fn scoped<T>(&self, call: &'static str, f: impl FnOnce() -> T) -> Result<T, DeviceError> {
        scoped(&self.device, call, f)
    }

    /// Waits until the queue is idle.
    fn wait(&self) -> Result<(), DeviceError> {
        self.device.poll(::wgpu::PollType::wait_indefinitely()).map(|_| ()).map_err(|e| driver("poll", e))
    }
}

impl Drop for WgpuDevice {
    fn drop(&mut self) {
        self.save_pipeline_cache();
    }
}

impl Backend for WgpuDevice {
    type Kernel = WgpuKernel;
    type Stream = WgpuStream;

    fn target(&self) -> CodeTarget {
        WgpuDevice::target(self)
    }

    fn load(&self, session: &Session, request: &LoadRequest<'_>) -> Result<Arc<WgpuKernel>, ProgramError> {
        self.load_kernel(session, request)
    }

    fn entry(kernel: &WgpuKernel) -> &str {
        &kernel.entry
    }

    fn params(kernel: &WgpuKernel) -> &[Type] {
        &kernel.params
    }

    fn new_stream(&self) -> Result<WgpuStream, DeviceError> {
        self.open_stream()
    }

    fn enqueue(
        &self,
        stream: &WgpuStream,
        kernel: &Arc<WgpuKernel>,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<(), LaunchError> {
        self.record_launch(stream, kernel, config, args, rng_seed)
    }

    fn synchronize(&self, stream: &WgpuStream) -> Result<LaunchStats, LaunchError> {
        self.synchronize_stream(stream)
    }

    fn live_allocations(&self) -> u64 {
        (lock(&self.buffers).len() + lock(&self.heap).live.len()) as u64 + self.tables.load(Ordering::Relaxed)
    }
}
