//! The wgpu device (DESIGN §6, docs/wgpu.md): WGSL artifacts run through
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
//!   another), bound whole to the kernel parameter it is passed as
//!   (binding 4 + i).
//!
//! # Loading and launching
//!
//! [`WgpuDevice::load`] registers the artifact's values, resolves its words
//! with the session on this device, creates the shader module (validated by
//! wgpu; errors are caught, never panics) and, for `table`, the table
//! buffer (binding 2). A pipeline is made per block shape (the WGSL's
//! `override relok_block_x/y/z`) on first launch, through the device's
//! pipeline cache. A launch writes the arguments buffer (binding 1: the
//! seed, then two 32-bit slots per scalar parameter, then a zero word),
//! binds the kernel's
//! exception record (binding 0), dispatches the grid, copies the record
//! back and waits; a set flag is an exception, and the record is cleared.
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

use crate::error::{DeviceError, LaunchError};
use crate::launch::{check_args, check_config, DevicePtr, KernelArg, LaunchConfig};
use crate::device::{load_once, DeviceMemory, Loaded, Thrown};
use crate::session::{DeviceId, DeviceKind, Session};
use relok_cache::{Key, Lookup, Store, StoreConfig};
use relok_compiler::artifact::{Artifact, CodeTarget};
use relok_compiler::state::ExceptionLayout;
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
/// Bytes of an exception record.
const RECORD_BYTES: u64 = ExceptionLayout::WORDS as u64 * 8;
/// wgpu's major version, part of the pipeline-cache header.
const WGPU_MAJOR: u32 = 30;

use crate::lock;

fn driver(call: &'static str, message: impl ToString) -> DeviceError {
    DeviceError::Driver { call, message: message.to_string() }
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

fn instance() -> ::wgpu::Instance {
    let mut desc = ::wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = ::wgpu::Backends::PRIMARY;
    desc.flags = ::wgpu::InstanceFlags::empty();
    ::wgpu::Instance::new(desc)
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
                hardware: matches!(info.device_type, ::wgpu::DeviceType::DiscreteGpu | ::wgpu::DeviceType::IntegratedGpu),
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
    /// Kernels loaded with their words, by (artifact key, session).
    loaded: Loaded<WgpuKernel>,
    /// The pipeline cache, where the adapter has one.
    pipeline_cache: Option<::wgpu::PipelineCache>,
    /// Tier 2: where the pipeline cache's blob is kept.
    archive: Option<Store>,
    stats: Counters,
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

    /// [`WgpuDevice::open`] with the pipeline-cache archive the environment
    /// names (see the module docs); an archive that cannot be opened leaves
    /// the device without one, with a warning.
    pub fn open_with_archive(ordinal: usize) -> Result<WgpuDevice, WgpuError> {
        let off = relok_cache::switched_off("RELOK_BINARY_CACHE");
        WgpuDevice::open_in(ordinal, relok_cache::default_root().filter(|_| !off))
    }

    /// Opens adapter `ordinal` with the archive under cache root `root`
    /// (`None`: no archive).
    pub fn open_in(ordinal: usize, root: Option<std::path::PathBuf>) -> Result<WgpuDevice, WgpuError> {
        let instance = instance();
        let mut all = adapters(&instance);
        let count = all.len();
        if ordinal >= count {
            let filter = std::env::var(ADAPTER_VAR).map(|f| format!(" matching {ADAPTER_VAR}={f:?}")).unwrap_or_default();
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
        let heap = device.create_buffer(&::wgpu::BufferDescriptor { label: Some("relok heap"), size: HEAP_INITIAL, usage: storage, mapped_at_creation: false });
        let empty_table = device.create_buffer(&::wgpu::BufferDescriptor { label: Some("relok no table"), size: 8, usage: ::wgpu::BufferUsages::STORAGE, mapped_at_creation: false });
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
            loaded: Mutex::default(),
            pipeline_cache: None,
            archive: None,
            stats: Counters::default(),
        };
        if let Some(root) = root.filter(|_| !features.is_empty()) {
            match Store::open(d.archive_config(&root)) {
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

    /// The archive configuration of this adapter and driver under `root`.
    pub fn archive_config(&self, root: &std::path::Path) -> StoreConfig {
        let i = &self.info;
        let adapter = format!("wgpu-{}-{}-{:04x}-{:04x}", i.backend.to_str(), i.name, i.vendor, i.device);
        crate::cache::binary_store_config(root, &adapter, &format!("{}-{}-wgpu{WGPU_MAJOR}", i.driver, i.driver_info))
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
        let uuid: String = self.cache_uuid.map_or_else(|| "none".into(), |u| u.iter().map(|b| format!("{b:02x}")).collect());
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
        let validation = self.device.push_error_scope(::wgpu::ErrorFilter::Validation);
        let memory = self.device.push_error_scope(::wgpu::ErrorFilter::OutOfMemory);
        let internal = self.device.push_error_scope(::wgpu::ErrorFilter::Internal);
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

    /// Waits until the queue is idle.
    fn wait(&self) -> Result<(), DeviceError> {
        self.device.poll(::wgpu::PollType::wait_indefinitely()).map(|_| ()).map_err(|e| driver("poll", e))
    }

    /// [`WgpuDevice::load`] once per artifact key and session on this
    /// device: later calls return the loaded kernel.
    pub fn load_cached(&self, session: &Session, artifact: &Artifact) -> Result<Arc<WgpuKernel>, crate::ProgramError> {
        load_once(&self.loaded, session, artifact, || self.load(session, artifact))
    }

    /// Loads a WGSL artifact on this device with its words delivered (see
    /// the module docs).
    pub fn load(&self, session: &Session, artifact: &Artifact) -> Result<WgpuKernel, crate::ProgramError> {
        if artifact.target != CodeTarget::Wgsl {
            return Err(driver("load", format!("artifact for {}, not WGSL", artifact.target.name())).into());
        }
        if artifact.strategy == Strategy::Patch {
            return Err(driver("load", "patching is impossible on wgpu; use table or bake").into());
        }
        let started = std::time::Instant::now();
        artifact.validate()?;
        crate::program::register_values(session, &artifact.values, &artifact.manifest)?;
        let words = session.resolve_manifest(self, &artifact.manifest)?;
        let resolved = started.elapsed();
        let code = std::str::from_utf8(&artifact.code).map_err(|e| driver("load", format!("WGSL is not UTF-8: {e}")))?;
        let module = self.scoped("createShaderModule", || {
            self.device.create_shader_module(::wgpu::ShaderModuleDescriptor {
                label: Some(&artifact.entry),
                source: ::wgpu::ShaderSource::Wgsl(code.into()),
            })
        })?;
        self.stats.modules.fetch_add(1, Ordering::Relaxed);
        let moduled = started.elapsed();
        let params = artifact.param_types()?;
        let buffers = params.iter().filter(|t| matches!(t, Type::Ptr(..))).count();
        let scalars = params.len() - buffers;
        let layouts = self.layouts(buffers)?;
        let table = match artifact.strategy {
            Strategy::Table if !words.is_empty() => {
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                let t = self.buffer("relok table", bytes.len() as u64, ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST)?;
                self.queue.write_buffer(&t, 0, &bytes);
                Some(t)
            }
            _ => None,
        };
        let usage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST | ::wgpu::BufferUsages::COPY_SRC;
        let record = self.buffer("relok exception", RECORD_BYTES, usage)?;
        let readback = self.buffer("relok exception readback", RECORD_BYTES, ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST)?;
        // The seed, two words per scalar, and a zero (see `run`).
        let args = self.buffer("relok args", 8 * (1 + scalars as u64) + 4, ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST)?;
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
            launch: Mutex::new(LaunchBuffers { record, readback, args }),
            words,
        })
    }

    fn buffer(&self, label: &str, size: u64, usage: ::wgpu::BufferUsages) -> Result<::wgpu::Buffer, DeviceError> {
        let size = size.max(4).next_multiple_of(4);
        if size > self.limits.max_buffer_size {
            return Err(DeviceError::OutOfMemory { requested: size, in_use: 0, limit: self.limits.max_buffer_size });
        }
        self.scoped("createBuffer", || {
            self.device.create_buffer(&::wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: false })
        })
    }

    /// The layouts of kernels with `buffers` buffer parameters.
    fn layouts(&self, buffers: usize) -> Result<Arc<Layouts>, DeviceError> {
        if let Some(l) = lock(&self.layouts).get(&buffers) {
            return Ok(Arc::clone(l));
        }
        let entry = |binding: u32, read_only: bool| ::wgpu::BindGroupLayoutEntry {
            binding,
            visibility: ::wgpu::ShaderStages::COMPUTE,
            ty: ::wgpu::BindingType::Buffer {
                ty: ::wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let mut entries = vec![entry(0, false), entry(1, true), entry(2, true), entry(3, false)];
        entries.extend((0..buffers as u32).map(|i| entry(4 + i, false)));
        let l = self.scoped("createPipelineLayout", || {
            let group = self.device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor { label: Some("relok"), entries: &entries });
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
        let constants = [("relok_block_x", f64::from(block[0])), ("relok_block_y", f64::from(block[1])), ("relok_block_z", f64::from(block[2]))];
        let p = self.scoped("createComputePipeline", || {
            self.device.create_compute_pipeline(&::wgpu::ComputePipelineDescriptor {
                label: Some(&kernel.entry),
                layout: Some(&kernel.layouts.pipeline),
                module: &kernel.module,
                entry_point: Some(&kernel.entry),
                compilation_options: ::wgpu::PipelineCompilationOptions { constants: &constants, zero_initialize_workgroup_memory: true },
                cache: self.pipeline_cache.as_ref(),
            })
        })?;
        self.stats.pipelines.fetch_add(1, Ordering::Relaxed);
        self.stats.cache_dirty.store(true, Ordering::Relaxed);
        lock(&kernel.pipelines).insert(block, p.clone());
        Ok(p)
    }

    /// Checks the launch shape against this adapter's limits.
    fn check_limits(&self, kernel: &str, config: &LaunchConfig) -> Result<(), LaunchError> {
        let l = &self.limits;
        let bad = |reason: String| Err(LaunchError::BadLaunchConfig { kernel: kernel.to_owned(), reason });
        let max_block = [l.max_compute_workgroup_size_x, l.max_compute_workgroup_size_y, l.max_compute_workgroup_size_z];
        if config.block.iter().zip(max_block).any(|(&b, m)| b > m) {
            return bad(format!("block {:?} exceeds this adapter's workgroup size {max_block:?}", config.block));
        }
        let per_block: u64 = config.block.iter().map(|&b| u64::from(b)).product();
        if per_block > u64::from(l.max_compute_invocations_per_workgroup) {
            return bad(format!("block {:?} has {per_block} threads, this adapter allows {}", config.block, l.max_compute_invocations_per_workgroup));
        }
        if config.grid.iter().any(|&g| g > l.max_compute_workgroups_per_dimension) {
            return bad(format!("grid {:?} exceeds this adapter's {} workgroups per dimension", config.grid, l.max_compute_workgroups_per_dimension));
        }
        Ok(())
    }

    /// Launches a loaded kernel and waits for it. The geometry and the
    /// arguments are checked as on the cpu device and against the adapter's
    /// limits; buffer arguments must be whole allocations of this device.
    /// An exception comes back as its message word, block and thread.
    pub fn launch(&self, kernel: &WgpuKernel, config: &LaunchConfig, args: &[KernelArg], rng_seed: u64) -> Result<Option<Thrown>, LaunchError> {
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        if kernel.device != self.id {
            let message = format!("@{} was loaded on {}, not on this {}", kernel.entry, kernel.device, self.id);
            return Err(err(driver("launch", message)));
        }
        check_config(&kernel.entry, config)?;
        self.check_limits(&kernel.entry, config)?;
        let values = check_args(&kernel.entry, &kernel.params, args)?;
        self.run(kernel, config, &values, rng_seed).map_err(err)
    }

    fn run(&self, kernel: &WgpuKernel, config: &LaunchConfig, values: &[u64], rng_seed: u64) -> Result<Option<Thrown>, DeviceError> {
        let pipeline = self.pipeline(kernel, config.block)?;
        // One launch at a time per loaded kernel: they share its record.
        let io = lock(&kernel.launch);
        let mut slots: Vec<u32> = vec![rng_seed as u32, (rng_seed >> 32) as u32];
        let mut bound = Vec::new();
        {
            let buffers = lock(&self.buffers);
            for (ty, &v) in kernel.params.iter().zip(values) {
                if matches!(ty, Type::Ptr(..)) {
                    let (id, offset) = split(DevicePtr(v));
                    match buffers.get(&id) {
                        Some((b, _)) if offset == 0 => bound.push(b.clone()),
                        _ => return Err(driver("launch", format!("{v:#x} is not the start of a buffer of this device (wgpu binds buffers whole)"))),
                    }
                } else {
                    slots.extend([v as u32, (v >> 32) as u32]);
                }
            }
        }
        // Last, a zero the WGSL reads as `relok_zero` to keep float
        // products from being fused into adds (docs/wgpu.md).
        slots.push(0);
        let bytes: Vec<u8> = slots.iter().flat_map(|s| s.to_le_bytes()).collect();
        self.queue.write_buffer(&io.args, 0, &bytes);
        // Held until the launch is submitted: the heap cannot grow (and leave
        // this kernel writing to the old buffer) in between.
        let heap = lock(&self.heap);
        self.scoped("launch", || {
            let mut entries = vec![
                ::wgpu::BindGroupEntry { binding: 0, resource: io.record.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 1, resource: io.args.as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 2, resource: kernel.table.as_ref().unwrap_or(&self.empty_table).as_entire_binding() },
                ::wgpu::BindGroupEntry { binding: 3, resource: heap.buffer.as_entire_binding() },
            ];
            for (i, b) in bound.iter().enumerate() {
                entries.push(::wgpu::BindGroupEntry { binding: 4 + i as u32, resource: b.as_entire_binding() });
            }
            let group = self.device.create_bind_group(&::wgpu::BindGroupDescriptor { label: Some(&kernel.entry), layout: &kernel.layouts.group, entries: &entries });
            let mut encoder = self.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some(&kernel.entry) });
            {
                let mut pass = encoder.begin_compute_pass(&::wgpu::ComputePassDescriptor { label: Some(&kernel.entry), timestamp_writes: None });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &group, &[]);
                pass.dispatch_workgroups(config.grid[0], config.grid[1], config.grid[2]);
            }
            encoder.copy_buffer_to_buffer(&io.record, 0, &io.readback, 0, RECORD_BYTES);
            self.queue.submit([encoder.finish()]);
        })?;
        drop(heap);
        self.stats.launches.fetch_add(1, Ordering::Relaxed);
        let record = self.map_read(&io.readback)?;
        let words: Vec<u64> = record.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default())).collect();
        let thrown = Thrown::from_record(&words);
        if thrown.is_some() {
            self.queue.write_buffer(&io.record, 0, &[0; RECORD_BYTES as usize]);
        }
        Ok(thrown)
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
    fn with_memory<T>(&self, ptr: DevicePtr, len: u64, f: impl FnOnce(&::wgpu::Buffer, u64) -> Result<T, DeviceError>) -> Result<T, DeviceError> {
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
        let staging = self.buffer("relok readback", end - start, ::wgpu::BufferUsages::MAP_READ | ::wgpu::BufferUsages::COPY_DST)?;
        self.scoped("copyBufferToBuffer", || {
            let mut encoder = self.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok read") });
            encoder.copy_buffer_to_buffer(buffer, start, &staging, 0, end - start);
            self.queue.submit([encoder.finish()]);
        })?;
        let bytes = self.map_read(&staging)?;
        let from = (offset - start) as usize;
        Ok(bytes[from..from + len as usize].to_vec())
    }

    /// Grows the heap to hold `needed` bytes (copying its contents; no word
    /// changes).
    fn grow_heap(&self, heap: &mut Heap, needed: u64) -> Result<(), DeviceError> {
        let max = self.max_binding();
        if needed > max {
            return Err(DeviceError::OutOfMemory { requested: needed - heap.top, in_use: heap.top, limit: max });
        }
        let size = needed.next_power_of_two().max(HEAP_INITIAL).min(max);
        let usage = ::wgpu::BufferUsages::STORAGE | ::wgpu::BufferUsages::COPY_DST | ::wgpu::BufferUsages::COPY_SRC;
        let bigger = self.buffer("relok heap", size, usage)?;
        self.scoped("copyBufferToBuffer", || {
            let mut encoder = self.device.create_command_encoder(&::wgpu::CommandEncoderDescriptor { label: Some("relok heap growth") });
            encoder.copy_buffer_to_buffer(&heap.buffer, 0, &bigger, 0, heap.buffer.size());
            self.queue.submit([encoder.finish()]);
        })?;
        heap.buffer = bigger;
        Ok(())
    }
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
        self.with_memory(ptr, len, |buffer, offset| self.read_span(buffer, offset, len))
    }

    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        let (id, offset) = split(ptr);
        let freed = if id == 0 {
            // Heap space is not reused (sessions free nothing: their
            // objects live as long as the device).
            lock(&self.heap).live.remove(&offset).is_some()
        } else {
            offset == 0 && lock(&self.buffers).remove(&id).is_some_and(|(b, _)| {
                b.destroy();
                true
            })
        };
        if freed { Ok(()) } else { Err(DeviceError::InvalidFree { addr: ptr.0 }) }
    }
}

impl Drop for WgpuDevice {
    fn drop(&mut self) {
        self.save_pipeline_cache();
    }
}

/// A kernel's per-launch buffers.
#[derive(Debug)]
struct LaunchBuffers {
    /// The exception record (binding 0).
    record: ::wgpu::Buffer,
    /// Where the record is copied to be read.
    readback: ::wgpu::Buffer,
    /// The seed and scalar arguments (binding 1).
    args: ::wgpu::Buffer,
}

/// A kernel loaded on one wgpu device with its words delivered.
#[derive(Debug)]
pub struct WgpuKernel {
    entry: String,
    device: DeviceId,
    params: Vec<Type>,
    module: ::wgpu::ShaderModule,
    layouts: Arc<Layouts>,
    table: Option<::wgpu::Buffer>,
    /// By block shape (the WGSL's override constants).
    pipelines: Mutex<HashMap<[u32; 3], ::wgpu::ComputePipeline>>,
    launch: Mutex<LaunchBuffers>,
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

/// A stream of this device (launches run when enqueued, for now).
pub type WgpuStream = crate::device::EagerStream;

impl crate::device::Backend for WgpuDevice {
    type Kernel = WgpuKernel;
    type Stream = WgpuStream;

    fn target(&self) -> CodeTarget {
        WgpuDevice::target(self)
    }

    fn load_artifact(&self, session: &Session, artifact: &Artifact) -> Result<Arc<WgpuKernel>, crate::ProgramError> {
        self.load_cached(session, artifact)
    }

    fn entry(kernel: &WgpuKernel) -> &str {
        &kernel.entry
    }

    fn params(kernel: &WgpuKernel) -> &[Type] {
        &kernel.params
    }

    fn new_stream(&self) -> Result<WgpuStream, DeviceError> {
        Ok(crate::device::EagerStream::new(self.id))
    }

    fn enqueue(&self, stream: &WgpuStream, kernel: &Arc<WgpuKernel>, config: &LaunchConfig, args: &[KernelArg], rng_seed: u64) -> Result<(), LaunchError> {
        stream.check(&kernel.entry, self.id)?;
        let outcome = self.launch(kernel, config, args, rng_seed).and_then(|thrown| match thrown {
            None => Ok(crate::LaunchStats { steps: 0, threads: config.threads() }),
            Some(t) => Err(LaunchError::Exception { kernel: kernel.entry.clone(), message_word: t.message_word, block: t.block, thread: t.thread }),
        });
        stream.record(outcome)
    }

    fn synchronize(&self, stream: &WgpuStream) -> Result<crate::LaunchStats, LaunchError> {
        stream.take()
    }

    fn live_allocations(&self) -> u64 {
        (lock(&self.buffers).len() + lock(&self.heap).live.len()) as u64
    }
}
