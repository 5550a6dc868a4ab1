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

use crate::backend::{Backend, LoadedKernels, Thrown, deliver_words, load_once, wrong_device};
use crate::error::{DeviceError, LaunchError, ProgramError};
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, LaunchStats, check_args, check_config};
use crate::load::{LoadRequest, Validated};
use crate::memory::{DeviceId, DeviceKind, DeviceMemory};
use crate::session::Session;
use relok_cache::{Key, Lookup, Store, StoreConfig};
use relok_compiler::artifact::{Artifact, CodeTarget};
use relok_compiler::state::ExceptionLayout;
use relok_compiler::wgsl::bindings;
use relok_ir::{Strategy, Type};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

/// The environment variable that narrows the adapters `wgpu[:N]` counts.
pub const ADAPTER_VAR: &str = "RELOK_WGPU_ADAPTER";

/// Byte offset of the first heap object (no object has word 0).
const HEAP_START: u64 = 16;
/// Alignment of heap objects.
const HEAP_ALIGN: u64 = 16;
/// The heap's first size.
const HEAP_INITIAL: u64 = 64 << 10;
/// The next buffer id: unique in the process, so a pointer of one wgpu
/// device names nothing on another.
static NEXT_BUFFER: AtomicU32 = AtomicU32::new(1);
/// Mesa's llvmpipe ends every loop of a shader invocation once this many
/// iterations of its loops have run (`LP_MAX_TGSI_LOOP_ITERATIONS`).
const LLVMPIPE_LOOP_LIMIT: u32 = 65_535;

/// Bytes of an exception record.
const RECORD_BYTES: u64 = ExceptionLayout::WORDS as u64 * 8;
const _: () = assert!(RECORD_BYTES == bindings::EXCEPTION_WORDS as u64 * 4, "the record binding holds the record");
/// wgpu's major version, part of the pipeline-cache header.
const WGPU_MAJOR: u32 = 30;
/// Launches a stream records before it submits them (without waiting).
pub const LAUNCHES_PER_SUBMIT: usize = 256;
/// Bytes of a batch's arguments buffer: [`LAUNCHES_PER_SUBMIT`] launches
/// at the largest offset alignment wgpu allows (256 bytes). A batch whose
/// arguments fill it sooner is submitted sooner; a launch whose arguments
/// alone exceed it gets a buffer of its size.
const BATCH_ARGS_BYTES: u64 = LAUNCHES_PER_SUBMIT as u64 * 256;
/// The most buffers of each kind the device's pool keeps.
const POOL_RECORDS: usize = 256;
const POOL_ARGS: usize = 16;
const POOL_READBACKS: usize = 8;
/// The next kernel serial (names a kernel's exception record on a stream).
static NEXT_KERNEL: AtomicU64 = AtomicU64::new(1);
/// Zeroes an exception record.
const ZERO_RECORD: [u8; RECORD_BYTES as usize] = [0; RECORD_BYTES as usize];

use crate::lock;

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

/// One adapter as `wgpu[:N]` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Its ordinal among the adapters listed.
    pub ordinal: usize,
    /// The adapter's name.
    pub name: String,
    /// `vulkan`, `metal`, `dx12`.
    pub backend: String,
    /// Whether it is a GPU (not a software rasteriser such as lavapipe).
    pub hardware: bool,
}

/// The Vulkan driver's pipeline-cache UUID of `adapter`; `None` on other
/// backends.
#[cfg(not(target_vendor = "apple"))]
fn cache_uuid(adapter: &::wgpu::Adapter) -> Option<[u8; 16]> {
    // SAFETY: the hal adapter is only read (its properties from
    // vkGetPhysicalDeviceProperties) while `adapter` is alive.
    let hal = unsafe { adapter.as_hal::<::wgpu::hal::api::Vulkan>() }?;
    Some(hal.physical_device_capabilities().properties().pipeline_cache_uuid)
}

/// Metal has no Vulkan driver (nor a wgpu pipeline cache).
#[cfg(target_vendor = "apple")]
fn cache_uuid(_: &::wgpu::Adapter) -> Option<[u8; 16]> {
    None
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

/// The process's one wgpu instance (a Vulkan instance on Linux), made at
/// the first use and shared by every listing and every device: making and
/// destroying an instance per call, while another thread drove a device,
/// crashed NVIDIA's Vulkan driver (a segmentation fault in the runtime's
/// `wgpu_streams` tests, 580.159.04, 2026-12-01; docs/wgpu.md, "Known
/// problems").
fn instance() -> ::wgpu::Instance {
    static INSTANCE: std::sync::OnceLock<::wgpu::Instance> = std::sync::OnceLock::new();
    INSTANCE
        .get_or_init(|| {
            let mut desc = ::wgpu::InstanceDescriptor::new_without_display_handle();
            desc.backends = ::wgpu::Backends::PRIMARY;
            desc.flags = ::wgpu::InstanceFlags::empty();
            ::wgpu::Instance::new(desc)
        })
        .clone()
}

/// The adapters `wgpu[:N]` counts, in order: those of the primary backends
/// whose name or backend contains `RELOK_WGPU_ADAPTER` (case-insensitive)
/// when it is set.
fn adapters(instance: &::wgpu::Instance) -> Vec<::wgpu::Adapter> {
    let filter = std::env::var(ADAPTER_VAR).ok().filter(|f| !f.is_empty()).map(|f| f.to_lowercase());
    pollster::block_on(instance.enumerate_adapters(::wgpu::Backends::PRIMARY))
        .into_iter()
        .filter(|a| {
            let info = a.get_info();
            filter.as_ref().is_none_or(|f| info.name.to_lowercase().contains(f) || info.backend.to_str() == f)
        })
        .collect()
}

/// Every adapter `wgpu[:N]` can open.
pub fn list_adapters() -> Vec<AdapterSummary> {
    adapters(&instance())
        .iter()
        .enumerate()
        .map(|(ordinal, a)| {
            let info = a.get_info();
            AdapterSummary {
                ordinal,
                name: info.name.clone(),
                backend: info.backend.to_str().to_owned(),
                hardware: matches!(
                    info.device_type,
                    ::wgpu::DeviceType::DiscreteGpu | ::wgpu::DeviceType::IntegratedGpu
                ),
            }
        })
        .collect()
}

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

/// Which 16-byte granules of the heap hold host values' copies, as the
/// WGSL's `relok_heap_guard` reads them (`relok_compiler::wgsl::sealed`):
/// this host copy of the bitmap, and where the device's copy lives.
#[derive(Debug, Default)]
struct Seals {
    /// Bit `g` of word `g / 32`: granule `g` is sealed.
    bits: Vec<u32>,
    /// The bitmap object's heap offset (0: none yet).
    at: u64,
    /// Granules the device's bitmap covers.
    covered: u64,
}

/// The device's object heap (buffer 0).
#[derive(Debug)]
struct Heap {
    buffer: ::wgpu::Buffer,
    /// Bytes allocated (the next object's offset, before alignment).
    top: u64,
    /// Live objects: offset → bytes.
    live: BTreeMap<u64, u64>,
}

#[derive(Debug)]
struct Layouts {
    group: ::wgpu::BindGroupLayout,
    pipeline: ::wgpu::PipelineLayout,
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

/// What became of the pipeline-cache archive when the device opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineCacheState {
    /// No archive (switched off, no cache root) or no pipeline cache on this
    /// adapter.
    #[default]
    Off,
    /// The archive held no blob for this adapter and driver.
    Miss,
    /// A blob was found but refused (framing, checksum, header, size): a
    /// miss; it is replaced on the next save.
    Rejected,
    /// A blob of this adapter and driver was handed to wgpu (which may
    /// still start empty if its own header does not match).
    Hit,
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
        let instance = instance();
        let mut all = adapters(&instance);
        let count = all.len();
        if ordinal >= count {
            let filter =
                std::env::var(ADAPTER_VAR).map(|f| format!(" matching {ADAPTER_VAR}={f:?}")).unwrap_or_default();
            return Err(WgpuError::NotAvailable(format!("no adapter {ordinal}{filter} (wgpu lists {count})")));
        }
        let adapter = all.swap_remove(ordinal);
        let info = adapter.get_info();
        let cache_uuid = cache_uuid(&adapter);
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

    /// The alignment of a buffer argument's offset in its buffer (the
    /// adapter's `min_storage_buffer_offset_alignment`, at most 256).
    pub fn buffer_offset_alignment(&self) -> u64 {
        u64::from(self.limits.min_storage_buffer_offset_alignment).max(4)
    }

    /// The archive configuration of this adapter and driver under `root`.
    pub fn archive_config(&self, root: &std::path::Path) -> StoreConfig {
        let i = &self.info;
        let adapter = format!("wgpu-{}-{}-{:04x}-{:04x}", i.backend.to_str(), i.name, i.vendor, i.device);
        crate::stores::binary_config(root, &adapter, &format!("{}-{}-wgpu{WGPU_MAJOR}", i.driver, i.driver_info))
    }

    /// Whether the device has a pipeline cache (`PIPELINE_CACHE`: Vulkan).
    pub fn has_pipeline_cache(&self) -> bool {
        self.pipeline_cache.is_some()
    }

    /// The pipeline-cache archive, if any.
    pub fn archive(&self) -> Option<&Store> {
        self.archive.as_ref()
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

    /// The header our archive entries start with: what the blob was made
    /// on.
    fn cache_header(&self) -> Vec<u8> {
        let i = &self.info;
        let uuid: String =
            self.cache_uuid.map_or_else(|| "none".into(), |u| u.iter().map(|b| format!("{b:02x}")).collect());
        format!(
            "relok-wgpu-pipeline-cache v1\nbackend {}\nvendor {:#x}\ndevice {:#x}\nadapter {}\ndriver {}\ndriver-info {}\ncache-uuid {uuid}\nwgpu {WGPU_MAJOR}\n\n",
            i.backend.to_str(),
            i.vendor,
            i.device,
            i.name.escape_debug(),
            i.driver.escape_debug(),
            i.driver_info.escape_debug()
        )
        .into_bytes()
    }

    /// The one archive key of this device's blob (the folder names the
    /// adapter and driver; the header repeats them).
    fn cache_key() -> Key {
        Key(Sha256::digest(b"relok-wgpu-pipeline-cache-v1").into())
    }

    /// The pipeline cache, seeded from the archive when it holds a blob of
    /// this adapter and driver.
    fn open_pipeline_cache(&self, supported: bool) -> Option<::wgpu::PipelineCache> {
        if !supported {
            return None;
        }
        let mut blob = None;
        let mut state = PipelineCacheState::Off;
        if let Some(archive) = &self.archive {
            state = PipelineCacheState::Miss;
            match archive.get(WgpuDevice::cache_key()) {
                Lookup::Hit(payload) => {
                    let header = self.cache_header();
                    match payload.strip_prefix(header.as_slice()) {
                        Some(data) if !data.is_empty() => {
                            blob = Some(data.to_vec());
                            state = PipelineCacheState::Hit;
                        }
                        _ => {
                            archive.reject(WgpuDevice::cache_key(), "made on another adapter or driver");
                            state = PipelineCacheState::Rejected;
                        }
                    }
                }
                Lookup::Rejected(_) => state = PipelineCacheState::Rejected,
                Lookup::Miss => {}
            }
        }
        let create = |data: Option<&[u8]>| {
            self.scoped("createPipelineCache", || {
                // SAFETY: `data` is what `PipelineCache::get_data` returned
                // on an adapter of this backend, vendor, device, name,
                // driver and Vulkan pipeline-cache UUID (our header,
                // compared above) under this major version of wgpu, and it
                // arrived intact (the store's SHA-256). wgpu checks its own
                // header too; with `fallback` a blob it cannot use gives an
                // empty cache.
                unsafe {
                    self.device.create_pipeline_cache(&::wgpu::PipelineCacheDescriptor {
                        label: Some("relok pipelines"),
                        data,
                        fallback: true,
                    })
                }
            })
        };
        let cache = match create(blob.as_deref()) {
            Err(e) if blob.is_some() => {
                // wgpu refuses some blobs even with `fallback` (another
                // device by its own header): drop it and start empty.
                if let Some(archive) = &self.archive {
                    archive.reject(WgpuDevice::cache_key(), &format!("wgpu refused it: {e}"));
                }
                state = PipelineCacheState::Rejected;
                blob = None;
                create(None)
            }
            other => other,
        };
        match cache {
            Ok(c) => {
                if state == PipelineCacheState::Hit {
                    self.stats.cache_loaded_bytes.store(blob.map_or(0, |b| b.len()) as u64, Ordering::Relaxed);
                }
                *lock(&self.stats.cache_state) = state;
                Some(c)
            }
            Err(e) => {
                tracing::warn!("no pipeline cache on this adapter: {e}");
                None
            }
        }
    }

    /// Writes the pipeline cache's blob to the archive if pipelines were
    /// made since it was loaded or last saved; returns the bytes written.
    pub fn save_pipeline_cache(&self) -> Option<usize> {
        let (archive, cache) = (self.archive.as_ref()?, self.pipeline_cache.as_ref()?);
        if !self.stats.cache_dirty.swap(false, Ordering::Relaxed) {
            return None;
        }
        let data = cache.get_data()?;
        let mut payload = self.cache_header();
        payload.extend_from_slice(&data);
        archive.count_compile();
        match archive.put(WgpuDevice::cache_key(), &payload) {
            Ok(()) => {
                self.stats.cache_saved_bytes.store(data.len() as u64, Ordering::Relaxed);
                Some(data.len())
            }
            Err(e) => {
                tracing::warn!("could not save the pipeline cache: {e}");
                None
            }
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

    /// Loads a WGSL artifact on this device with its words delivered (see
    /// the module docs), validating it first unless `validated` says the
    /// kernel cache did: a new kernel, not kept in the map of loaded ones
    /// ([`Backend::load`] is the way in).
    fn load_new(
        &self,
        session: &Session,
        artifact: &Artifact,
        validated: Validated,
    ) -> Result<WgpuKernel, ProgramError> {
        if artifact.target != CodeTarget::Wgsl {
            return Err(driver("load", format!("artifact for {}, not WGSL", artifact.target.name())).into());
        }
        if artifact.strategy == Strategy::Patch {
            return Err(driver("load", "patching is impossible on wgpu; use table or bake").into());
        }
        let started = std::time::Instant::now();
        if validated == Validated::No {
            artifact.validate()?;
        }
        // The kernel's storage buffers against this adapter's limit (the
        // device asked for the adapter's own), before anything reaches the
        // device: an error naming the kernel and the count, not wgpu's
        // bind group layout error.
        let params = artifact.param_types()?;
        let buffers = params.iter().filter(|t| matches!(t, Type::Ptr(..))).count();
        let limit_of = format!("this adapter ({}, {})", self.info.name, self.info.backend.to_str());
        let limit = self.limits.max_storage_buffers_per_shader_stage;
        relok_compiler::wgsl::limits::check_storage_buffers(&artifact.entry, buffers, limit, &limit_of)
            .map_err(|e| ProgramError::Compile(e.into()))?;
        const {
            assert!(
                ::wgpu::Limits::defaults().max_storage_buffers_per_shader_stage
                    == relok_compiler::wgsl::limits::WEBGPU_DEFAULT
            )
        };
        let words = deliver_words(session, self, &artifact.values, &artifact.manifest)?;
        let resolved = started.elapsed();
        let code =
            std::str::from_utf8(&artifact.code).map_err(|e| driver("load", format!("WGSL is not UTF-8: {e}")))?;
        let module = self.scoped("createShaderModule", || {
            self.device.create_shader_module(::wgpu::ShaderModuleDescriptor {
                label: Some(&artifact.entry),
                source: ::wgpu::ShaderSource::Wgsl(code.into()),
            })
        })?;
        self.stats.modules.fetch_add(1, Ordering::Relaxed);
        let moduled = started.elapsed();
        let layouts = self.layouts(buffers)?;
        let table = match artifact.strategy {
            Strategy::Table if !words.is_empty() => {
                let bytes = crate::backend::table_bytes(&words);
                let t = self.buffer(
                    "relok table",
                    bytes.len() as u64,
                    ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST,
                )?;
                self.queue.write_buffer(&t, 0, &bytes);
                Some(TableBuffer::new(t, &self.tables))
            }
            _ => None,
        };
        tracing::debug!(
            "wgpu load of @{}: words {:?}, shader module {:?}, layouts and buffers {:?}",
            artifact.entry,
            resolved,
            moduled - resolved,
            started.elapsed() - moduled
        );
        Ok(WgpuKernel {
            entry: artifact.entry.clone(),
            device: self.id,
            params,
            module,
            layouts,
            table,
            pipelines: Mutex::default(),
            serial: NEXT_KERNEL.fetch_add(1, Ordering::Relaxed),
            alive: Arc::new(()),
            words,
        })
    }

    fn buffer(&self, label: &str, size: u64, usage: ::wgpu::BufferUsages) -> Result<::wgpu::Buffer, DeviceError> {
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

    /// The layouts of kernels with `buffers` buffer parameters.
    fn layouts(&self, buffers: usize) -> Result<Arc<Layouts>, DeviceError> {
        if let Some(l) = lock(&self.layouts).get(&buffers) {
            return Ok(Arc::clone(l));
        }
        // Exactly the bindings the WGSL declares.
        let entries: Vec<::wgpu::BindGroupLayoutEntry> = bindings::bindings(buffers)
            .iter()
            .map(|b| ::wgpu::BindGroupLayoutEntry {
                binding: b.binding,
                visibility: ::wgpu::ShaderStages::COMPUTE,
                ty: ::wgpu::BindingType::Buffer {
                    ty: ::wgpu::BufferBindingType::Storage { read_only: b.read_only },
                    // Each launch's arguments are at their own offset of the
                    // batch's buffer: one bind group serves a whole batch.
                    has_dynamic_offset: b.binding == bindings::ARGS,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let l = self.scoped("createPipelineLayout", || {
            let group = self.device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
                label: Some("relok"),
                entries: &entries,
            });
            let pipeline = self.device.create_pipeline_layout(&::wgpu::PipelineLayoutDescriptor {
                label: Some("relok"),
                bind_group_layouts: &[Some(&group)],
                immediate_size: 0,
            });
            Layouts { group, pipeline }
        })?;
        let l = Arc::new(l);
        Ok(Arc::clone(lock(&self.layouts).entry(buffers).or_insert(l)))
    }

    /// The kernel's pipeline for `block`, made (through the pipeline cache)
    /// on first use.
    fn pipeline(&self, kernel: &WgpuKernel, block: [u32; 3]) -> Result<::wgpu::ComputePipeline, DeviceError> {
        if let Some(p) = lock(&kernel.pipelines).get(&block) {
            return Ok(p.clone());
        }
        let constants = [
            ("relok_block_x", f64::from(block[0])),
            ("relok_block_y", f64::from(block[1])),
            ("relok_block_z", f64::from(block[2])),
            (relok_compiler::wgsl::LOOP_BUDGET_OVERRIDE, f64::from(self.loop_limit().unwrap_or(u32::MAX))),
        ];
        let p = self.scoped("createComputePipeline", || {
            self.device.create_compute_pipeline(&::wgpu::ComputePipelineDescriptor {
                label: Some(&kernel.entry),
                layout: Some(&kernel.layouts.pipeline),
                module: &kernel.module,
                entry_point: Some(&kernel.entry),
                compilation_options: ::wgpu::PipelineCompilationOptions {
                    constants: &constants,
                    zero_initialize_workgroup_memory: true,
                },
                cache: self.pipeline_cache.as_ref(),
            })
        })?;
        self.stats.pipelines.fetch_add(1, Ordering::Relaxed);
        self.stats.cache_dirty.store(true, Ordering::Relaxed);
        lock(&kernel.pipelines).insert(block, p.clone());
        Ok(p)
    }

    /// The adapter's limit on loop iterations per invocation, all loops
    /// together, where it has one: llvmpipe's 65 535 (docs/wgpu.md, "Long
    /// loops"). The WGSL counts against it and reports a loop it would end.
    pub fn loop_limit(&self) -> Option<u32> {
        let llvmpipe = self.info.driver == "llvmpipe" || self.info.name.starts_with("llvmpipe");
        llvmpipe.then_some(LLVMPIPE_LOOP_LIMIT)
    }

    /// What a set exception record means: a fault the WGSL recorded (a
    /// loop at the adapter's limit among them), else the kernel's throw
    /// ([`crate::backend::thrown_error`]).
    fn thrown_error(&self, kernel: &str, t: Thrown) -> LaunchError {
        crate::backend::thrown_error(kernel, t, self.loop_limit())
    }

    /// Checks the launch shape against this adapter's limits.
    fn check_limits(&self, kernel: &str, config: &LaunchConfig) -> Result<(), LaunchError> {
        let l = &self.limits;
        let bad = |reason: String| Err(LaunchError::BadLaunchConfig { kernel: kernel.to_owned(), reason });
        let max_block =
            [l.max_compute_workgroup_size_x, l.max_compute_workgroup_size_y, l.max_compute_workgroup_size_z];
        if config.block.iter().zip(max_block).any(|(&b, m)| b > m) {
            return bad(format!("block {:?} exceeds this adapter's workgroup size {max_block:?}", config.block));
        }
        let per_block: u64 = config.block.iter().map(|&b| u64::from(b)).product();
        if per_block > u64::from(l.max_compute_invocations_per_workgroup) {
            return bad(format!(
                "block {:?} has {per_block} threads, this adapter allows {}",
                config.block, l.max_compute_invocations_per_workgroup
            ));
        }
        if config.grid.iter().any(|&g| g > l.max_compute_workgroups_per_dimension) {
            return bad(format!(
                "grid {:?} exceeds this adapter's {} workgroups per dimension",
                config.grid, l.max_compute_workgroups_per_dimension
            ));
        }
        Ok(())
    }

    /// Launches a loaded kernel and waits for it: an enqueue on a stream of
    /// its own, then a synchronisation (see the module docs). The geometry
    /// and the arguments are checked as on the cpu device and against the
    /// adapter's limits; a buffer argument points into a buffer of this
    /// device at a multiple of `min_storage_buffer_offset_alignment`. An
    /// exception comes back as its message word, block and thread.
    pub fn launch(
        &self,
        kernel: &WgpuKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<Option<Thrown>, LaunchError> {
        let stream = self.new_stream().map_err(|error| LaunchError::Device { kernel: kernel.entry.clone(), error })?;
        self.record_launch(&stream, kernel, config, args, rng_seed)?;
        match self.synchronize_stream(&stream) {
            Ok(_) => Ok(None),
            Err(LaunchError::Exception { message_word, block, thread, .. }) => {
                Ok(Some(Thrown { message_word, block, thread }))
            }
            Err(e) => Err(e),
        }
    }

    /// A launch's arguments as it binds them.
    fn arguments(&self, kernel: &WgpuKernel, values: &[u64], rng_seed: u64) -> Result<Arguments, DeviceError> {
        let align = self.buffer_offset_alignment();
        let mut scalars = Vec::new();
        let mut bound = Vec::new();
        let buffers = lock(&self.buffers);
        for (ty, &v) in kernel.params.iter().zip(values) {
            if matches!(ty, Type::Ptr(..)) {
                let (id, offset) = split(DevicePtr(v));
                let Some((b, bytes)) = buffers.get(&id) else {
                    return Err(driver("launch", format!("{v:#x} is not a pointer into a buffer of this device")));
                };
                if offset % align != 0 {
                    let message = format!(
                        "{v:#x} points {offset} bytes into its buffer: wgpu binds a buffer from an offset that is a multiple of this adapter's min_storage_buffer_offset_alignment ({align} bytes)"
                    );
                    return Err(driver("launch", message));
                }
                if offset > *bytes || offset >= b.size() {
                    return Err(driver("launch", format!("{v:#x} points past the end of its buffer of {bytes} bytes")));
                }
                bound.push((b.clone(), offset));
            } else {
                scalars.push(v);
            }
        }
        // The seed, the scalars, and last a zero the WGSL reads as
        // `relok_zero` (the binding's last slot: it is bound with its size)
        // to keep float products from being fused into adds (docs/wgpu.md).
        let slots = bindings::args_words(rng_seed, &scalars);
        Ok(Arguments { bytes: slots.iter().flat_map(|s| s.to_le_bytes()).collect(), bound })
    }

    /// Checks a launch and records it into `stream`'s open batch (see the
    /// module docs), submitting the batch when it is full.
    fn record_launch(
        &self,
        stream: &WgpuStream,
        kernel: &WgpuKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<(), LaunchError> {
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        if kernel.device != self.id {
            let message = format!("@{} was loaded on {}, not on this {}", kernel.entry, kernel.device, self.id);
            return Err(err(driver("launch", message)));
        }
        if stream.device != self.id {
            return Err(wrong_device(&kernel.entry, "the stream", stream.device, self.id));
        }
        check_config(&kernel.entry, config)?;
        self.check_limits(&kernel.entry, config)?;
        let values = check_args(&kernel.entry, &kernel.params, args)?;
        let pipeline = self.pipeline(kernel, config.block).map_err(err)?;
        let Arguments { bytes, bound } = self.arguments(kernel, &values, rng_seed).map_err(err)?;
        let len = bytes.len() as u64;
        let align = self.buffer_offset_alignment();
        // Held while the launch is recorded: the heap cannot grow (and its
        // growth submits this batch before it copies).
        let heap = lock(&self.heap);
        let shared = &stream.shared;
        let mut guard = lock(&shared.batch);
        let batch = &mut *guard;
        let record = match batch.records.get(&kernel.serial) {
            Some(r) => r.buffer.clone(),
            None => {
                let buffer = match Pool::take(&self.pool.records, |_| true) {
                    Some(b) => b,
                    None => {
                        let usage = ::wgpu::BufferUsages::STORAGE
                            | ::wgpu::BufferUsages::COPY_DST
                            | ::wgpu::BufferUsages::COPY_SRC;
                        self.buffer("relok exception", RECORD_BYTES, usage).map_err(err)?
                    }
                };
                let r = Record {
                    entry: kernel.entry.clone(),
                    kernel: Arc::downgrade(&kernel.alive),
                    buffer: buffer.clone(),
                    used: false,
                };
                batch.records.insert(kernel.serial, r);
                buffer
            }
        };
        let fits = batch
            .args
            .as_ref()
            .is_some_and(|(b, staged)| (staged.len() as u64).next_multiple_of(align) + len <= b.size());
        if !fits {
            shared.submit(batch);
            // Bind groups of the previous arguments buffer are not used again.
            batch.groups.clear();
            let args = match Pool::take(&self.pool.args, |_| len <= BATCH_ARGS_BYTES) {
                Some(b) => b,
                None => {
                    let usage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST;
                    self.buffer("relok args", len.max(BATCH_ARGS_BYTES), usage).map_err(err)?
                }
            };
            batch.args = Some((args, Vec::new()));
        }
        let Some((args_buffer, staged)) = batch.args.as_mut() else {
            return Err(err(driver("launch", "the batch has no arguments buffer")));
        };
        let offset = (staged.len() as u64).next_multiple_of(align);
        let Ok(dynamic_offset) = u32::try_from(offset) else {
            return Err(err(driver("launch", "the batch's arguments buffer outgrew 32-bit offsets")));
        };
        // One bind group per (kernel, heap, buffers) and arguments buffer:
        // launches of a batch share it, each at its own dynamic offset.
        let key = GroupKey { kernel: kernel.serial, heap: heap.buffer.clone(), args: args_buffer.clone(), bound };
        let group = match batch.groups.get(&key) {
            Some(g) => g.clone(),
            None => {
                let group = self.scoped("createBindGroup", || {
                    let buffer = |buffer, offset, size| {
                        ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding { buffer, offset, size })
                    };
                    let mut entries = vec![
                        ::wgpu::BindGroupEntry { binding: bindings::EXCEPTION, resource: record.as_entire_binding() },
                        ::wgpu::BindGroupEntry {
                            binding: bindings::ARGS,
                            resource: buffer(args_buffer, 0, std::num::NonZeroU64::new(len)),
                        },
                        ::wgpu::BindGroupEntry {
                            binding: bindings::TABLE,
                            resource: kernel
                                .table
                                .as_ref()
                                .map_or(&self.empty_table, |t| &t.buffer)
                                .as_entire_binding(),
                        },
                        ::wgpu::BindGroupEntry { binding: bindings::HEAP, resource: heap.buffer.as_entire_binding() },
                    ];
                    for (i, (b, offset)) in key.bound.iter().enumerate() {
                        entries.push(::wgpu::BindGroupEntry {
                            binding: bindings::buffer_binding(i),
                            resource: buffer(b, *offset, None),
                        });
                    }
                    self.device.create_bind_group(&::wgpu::BindGroupDescriptor {
                        label: Some(&kernel.entry),
                        layout: &kernel.layouts.group,
                        entries: &entries,
                    })
                });
                let group = group.map_err(err)?;
                batch.groups.insert(key, group.clone());
                group
            }
        };
        staged.resize(offset as usize, 0);
        staged.extend_from_slice(&bytes);
        // Errors in the pass surface when the encoder is finished (at the
        // batch's submission).
        let encoder = batch.encoder.get_or_insert_with(|| {
            self.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok launches") })
        });
        {
            let mut pass = encoder.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some(&kernel.entry),
                timestamp_writes: None,
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[dynamic_offset]);
            pass.dispatch_workgroups(config.grid[0], config.grid[1], config.grid[2]);
        }
        if batch.recorded == 0 {
            batch.first.clone_from(&kernel.entry);
        }
        batch.recorded += 1;
        batch.threads = batch.threads.saturating_add(config.threads());
        if let Some(r) = batch.records.get_mut(&kernel.serial).filter(|r| !r.used) {
            r.used = true;
            batch.used.push(kernel.serial);
        }
        if batch.recorded >= LAUNCHES_PER_SUBMIT {
            shared.submit(batch);
        }
        drop(guard);
        drop(heap);
        self.stats.launches.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Host time in microseconds of `launches` dispatches of `kernel` by a
    /// hand-written loop with relok's batching — its pipeline and one bind
    /// group made once, a compute pass per dispatch, a submit every
    /// [`LAUNCHES_PER_SUBMIT`] — then of the wait for them: the floor
    /// `relok bench launch` measures relok's launches against. The kernel
    /// takes no arguments.
    pub fn time_bare_dispatches(
        &self,
        kernel: &WgpuKernel,
        config: &LaunchConfig,
        launches: usize,
    ) -> Result<(f64, f64), LaunchError> {
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        check_args(&kernel.entry, &kernel.params, &[])?;
        let pipeline = self.pipeline(kernel, config.block).map_err(err)?;
        let Arguments { bytes, .. } = self.arguments(kernel, &[], 0).map_err(err)?;
        let usage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST | ::wgpu::BufferUsages::COPY_SRC;
        let record = self.buffer("bench exception", RECORD_BYTES, usage).map_err(err)?;
        let args = self
            .buffer("bench args", bytes.len() as u64, ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST)
            .map_err(err)?;
        self.queue.write_buffer(&args, 0, &bytes);
        let heap = lock(&self.heap).buffer.clone();
        let group = self.device.create_bind_group(&::wgpu::BindGroupDescriptor {
            label: Some("bench"),
            layout: &kernel.layouts.group,
            entries: &[
                ::wgpu::BindGroupEntry { binding: bindings::EXCEPTION, resource: record.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: bindings::ARGS, resource: args.as_entire_binding() },
                ::wgpu::BindGroupEntry {
                    binding: bindings::TABLE,
                    resource: kernel.table.as_ref().map_or(&self.empty_table, |t| &t.buffer).as_entire_binding(),
                },
                ::wgpu::BindGroupEntry { binding: bindings::HEAP, resource: heap.as_entire_binding() },
            ],
        });
        let t = std::time::Instant::now();
        let mut encoder = None;
        for i in 0..launches {
            let e = encoder.get_or_insert_with(|| {
                self.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("bench") })
            });
            {
                let mut pass =
                    e.begin_compute_pass(&::wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &group, &[0]);
                pass.dispatch_workgroups(config.grid[0], config.grid[1], config.grid[2]);
            }
            if (i + 1) % LAUNCHES_PER_SUBMIT == 0
                && let Some(e) = encoder.take()
            {
                self.queue.submit([e.finish()]);
            }
        }
        if let Some(e) = encoder.take() {
            self.queue.submit([e.finish()]);
        }
        let launched = t.elapsed().as_secs_f64() * 1e6;
        self.wait().map_err(err)?;
        Ok((launched, t.elapsed().as_secs_f64() * 1e6 - launched))
    }

    /// Submits `stream`'s open batch with copies of the exception records
    /// it used since the last synchronisation, waits once, and reports the
    /// first failure (see the module docs).
    fn synchronize_stream(&self, stream: &WgpuStream) -> Result<LaunchStats, LaunchError> {
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
    fn submit_all(&self) {
        let streams: Vec<Arc<StreamShared>> = lock(&self.streams).iter().filter_map(std::sync::Weak::upgrade).collect();
        for s in &streams {
            s.submit(&mut lock(&s.batch));
        }
    }

    /// Waits for the queue, maps `buffer` (MAP_READ) and copies it out.
    fn map_read(&self, buffer: &::wgpu::Buffer) -> Result<Vec<u8>, DeviceError> {
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

/// A launch's arguments as it binds them.
struct Arguments {
    /// Its slots of the arguments buffer: the seed, two 32-bit slots per
    /// scalar, a zero.
    bytes: Vec<u8>,
    /// Its buffer arguments with the offsets they are bound from.
    bound: Vec<(::wgpu::Buffer, u64)>,
}

/// (buffer id, byte offset) of a pointer of this device.
fn split(ptr: DevicePtr) -> (u32, u64) {
    ((ptr.0 >> 32) as u32, ptr.0 & 0xffff_ffff)
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

impl Drop for WgpuDevice {
    fn drop(&mut self) {
        self.save_pipeline_cache();
    }
}

/// A kernel's table buffer, counted among the device's live allocations
/// while it lives.
#[derive(Debug)]
struct TableBuffer {
    buffer: ::wgpu::Buffer,
    /// The device's count of live table buffers.
    count: Arc<AtomicU64>,
}

impl TableBuffer {
    fn new(buffer: ::wgpu::Buffer, count: &Arc<AtomicU64>) -> TableBuffer {
        count.fetch_add(1, Ordering::Relaxed);
        TableBuffer { buffer, count: Arc::clone(count) }
    }
}

impl Drop for TableBuffer {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A kernel loaded on one wgpu device with its words delivered.
#[derive(Debug)]
pub struct WgpuKernel {
    entry: String,
    device: DeviceId,
    params: Vec<Type>,
    module: ::wgpu::ShaderModule,
    layouts: Arc<Layouts>,
    table: Option<TableBuffer>,
    /// By block shape (the WGSL's override constants).
    pipelines: Mutex<HashMap<[u32; 3], ::wgpu::ComputePipeline>>,
    /// Unique in the process: names the kernel's exception record on a
    /// stream.
    serial: u64,
    /// Held by the kernel only: a stream's record of a kernel whose
    /// `alive` is gone goes back to the pool.
    alive: Arc<()>,
    /// The words, in manifest (rank) order.
    pub words: Vec<u64>,
}

impl WgpuKernel {
    /// The entry's name.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// Whether the kernel has a table buffer (`table` with records).
    pub fn has_table(&self) -> bool {
        self.table.is_some()
    }
}

/// A stream of a wgpu device: launches recorded into a command encoder
/// and submitted in batches (see the module docs).
#[derive(Debug)]
pub struct WgpuStream {
    device: DeviceId,
    shared: Arc<StreamShared>,
}

/// What a stream shares with its device's list of streams.
#[derive(Debug)]
struct StreamShared {
    device: ::wgpu::Device,
    queue: ::wgpu::Queue,
    pool: Arc<Pool>,
    batch: Mutex<Batch>,
}

/// What a stream recorded and has not yet reported.
#[derive(Debug, Default)]
struct Batch {
    /// The launches recorded since the last submission, a compute pass
    /// each; `None` when there are none.
    encoder: Option<::wgpu::CommandEncoder>,
    /// Launches in `encoder`.
    recorded: usize,
    /// The first kernel in `encoder` (names a refused submission).
    first: String,
    /// The arguments buffer the launches in `encoder` bind, and its bytes
    /// (each launch's at a multiple of the offset alignment), written just
    /// before the submission.
    args: Option<(::wgpu::Buffer, Vec<u8>)>,
    /// This stream's exception records, by kernel serial.
    records: HashMap<u64, Record>,
    /// Serials of the kernels launched since the last synchronisation, in
    /// order of first launch (each with `used` set in `records`).
    used: Vec<u64>,
    /// Threads launched since the last synchronisation.
    threads: u64,
    /// The first refused submission since the last synchronisation.
    failure: Option<LaunchError>,
    /// Bind groups of launches bound to the current arguments buffer.
    groups: HashMap<GroupKey, ::wgpu::BindGroup>,
}

/// What a launch's bind group binds, but the record (one per kernel and
/// stream) and the table (one per kernel): a bind group serves every
/// launch with the same key, each at its own arguments offset.
#[derive(Debug, PartialEq, Eq, Hash)]
struct GroupKey {
    kernel: u64,
    heap: ::wgpu::Buffer,
    args: ::wgpu::Buffer,
    bound: Vec<(::wgpu::Buffer, u64)>,
}

/// A kernel's exception record on one stream.
#[derive(Debug)]
struct Record {
    entry: String,
    /// The kernel's `alive`.
    kernel: std::sync::Weak<()>,
    buffer: ::wgpu::Buffer,
    /// Launched since the last synchronisation (in the batch's `used`).
    used: bool,
}

impl StreamShared {
    /// Writes the batch's arguments and submits its launches, without
    /// waiting; a refusal is kept for the next synchronisation. Whether the
    /// submission (if any) was accepted.
    fn submit(&self, batch: &mut Batch) -> bool {
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
struct Pool {
    records: Mutex<Vec<::wgpu::Buffer>>,
    args: Mutex<Vec<::wgpu::Buffer>>,
    readbacks: Mutex<Vec<::wgpu::Buffer>>,
}

impl Pool {
    /// A buffer of `list` that `fits`.
    fn take(list: &Mutex<Vec<::wgpu::Buffer>>, fits: impl Fn(&::wgpu::Buffer) -> bool) -> Option<::wgpu::Buffer> {
        let mut list = lock(list);
        let i = list.iter().rposition(fits)?;
        Some(list.swap_remove(i))
    }

    /// Keeps `buffer` in `list` if it holds fewer than `cap`.
    fn put(list: &Mutex<Vec<::wgpu::Buffer>>, buffer: ::wgpu::Buffer, cap: usize) {
        let mut list = lock(list);
        if list.len() < cap {
            list.push(buffer);
        }
    }
}

impl Backend for WgpuDevice {
    type Kernel = WgpuKernel;
    type Stream = WgpuStream;

    fn target(&self) -> CodeTarget {
        WgpuDevice::target(self)
    }

    fn load(&self, session: &Session, request: &LoadRequest<'_>) -> Result<Arc<WgpuKernel>, ProgramError> {
        let LoadRequest { artifact, validated, .. } = *request;
        load_once(&self.loaded, self.device_id(), session, artifact, || self.load_new(session, artifact, validated))
    }

    fn entry(kernel: &WgpuKernel) -> &str {
        &kernel.entry
    }

    fn params(kernel: &WgpuKernel) -> &[Type] {
        &kernel.params
    }

    fn new_stream(&self) -> Result<WgpuStream, DeviceError> {
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
