//! The cuda device (docs/design.md §6): PTX artifacts run through the CUDA driver.
//!
//! The driver is loaded at run time (cudarc with `dynamic-loading`): a build
//! needs no CUDA, and on a machine without a driver [`CudaDevice::open`]
//! answers [`CudaError::NotAvailable`] so callers fall back to the cpu
//! device.
//!
//! Layers, as cudarc's own: `cudarc::driver::result` holds one thin call
//! per driver function; this module owns what they return — a
//! [`CudaContext`] (the GPU's primary context) per device, a [`PtxModule`]
//! per loaded artifact (unloaded on drop), the device allocations — and
//! exposes them safely.
//!
//! Loading an artifact on a device (`Backend::load`) loads the code,
//! checks its function's parameters against the ABI as the driver reports
//! them (`cuFuncGetParamInfo`, CUDA 12.4; older drivers validate the PTX
//! text instead), registers the values, resolves its words with the
//! session on this device, and delivers the words. The code: a cubin from the device's binary
//! archive (tier 2, see below) when it holds one, else the PTX linked into
//! a cubin by the driver's linker (`cuLink*`), written to the archive and
//! loaded; if linking fails, the PTX itself (the driver JIT-compiles it).
//! The words:
//! `patch` writes each record's word into the module global of that name
//! (`cuModuleGetGlobal` + a copy; interior sites at their offset in the
//! constant), `table` uploads one table buffer per (kernel, device). Each
//! loaded kernel owns an exception record in device memory (from a pool
//! the device makes when it opens, `RecordPool`); a launch passes the
//! kernel state (table, exception record, seed) by value as the first
//! parameter, then copies the record back and waits for the copy.
//!
//! # Checked mode
//!
//! A kernel compiled checked (`relok_compiler::ptx::checked`) takes each
//! buffer argument's length after its arguments, which a launch computes
//! from the live allocations, and then the address of the device's seal
//! table (the host values' copies, sealed by
//! [`DeviceMemory::seal_value`]; 0 while nothing is sealed), written
//! before the launch when it changed. The faults it records are decoded as
//! the wgpu device's (`backend::thrown_error`).
//!
//! # The binary archive (tier 2)
//!
//! One [`relok_cache::Store`] of kind `Binary` per device and driver build:
//! `<cache>/binary/<device name>-sm<cc>-driver<CUDA version>-<driver
//! build>/`, one cubin per entry, key = SHA-256 of a version tag, the PTX
//! bytes, the entry name and every JIT option (none today; the folder
//! names the GPU and driver). The store's rules apply: atomic publish, a
//! hit refreshes the LRU time, a damaged or foreign file is a miss that is
//! replaced, other driver builds' folders unused for a week and stale
//! temporary files are collected, a size cap
//! (`RELOK_BINARY_CACHE_MAX_BYTES`, default 1 GiB).
//! A cubin the driver refuses is rejected and the PTX path taken. On by
//! default under the cache root (`Device::open`; `Device::open_in` names
//! another root); `RELOK_BINARY_CACHE=off` (or
//! `RELOK_CACHE=off`) disables it.
//!
//! # Load records
//!
//! A kernel loaded with its source key (a `LoadRequest` with `source`, as
//! `relok_runtime::load` makes them) from the archive or a link (not from a bundle,
//! which serves it from memory) leaves a load record in the archive: under
//! SHA-256 of a tag and the source key, one entry holding the source key,
//! the artifact without its PTX and source text, and the cubin. The next
//! process loads the kernel from that one read (`Backend::load_by_source`):
//! no artifact read, no PTX, no cubin key. The record is used only if its
//! framing, source key, entry name and artifact check out, the driver
//! loads the cubin with that entry, and the function's parameters are the
//! ABI's; otherwise it is removed and the kernel takes the long way, which
//! writes a good one. Drivers before CUDA 12.4 (no parameter report)
//! neither write nor read records.

use crate::backend::{Backend, LoadedKernels, Thrown, find_loaded, load_once};
use crate::error::{DeviceError, LaunchError};
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, check_args, check_config};
use crate::load::{LoadRequest, Validated};
use crate::memory::{DeviceId, DeviceKind, DeviceMemory};
use crate::session::Session;
use cudarc::driver::{CudaContext, result, sys};
use relok_cache::{Key, Lookup, Store, StoreConfig};
use relok_compiler::artifact::{Artifact, CodeTarget};
use relok_compiler::reloc::Site;
use relok_compiler::state::{ExceptionLayout, KernelState};
use relok_ir::Strategy;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Why the cuda device cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// No driver, no GPU of that ordinal.
    #[error("cuda device not available: {0}")]
    NotAvailable(String),
    /// A driver call failed.
    #[error(transparent)]
    Driver(#[from] DeviceError),
}

fn driver(call: &'static str) -> impl FnOnce(result::DriverError) -> DeviceError {
    move |e| DeviceError::Driver { call, message: format!("{e:?}") }
}

/// Whether a CUDA driver can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the driver library; no call is made.
    unsafe { sys::is_culib_present() }
}

/// The first driver version that reports a function's parameters
/// (`cuFuncGetParamInfo`, CUDA 12.4).
const PARAM_INFO_DRIVER: i32 = 12040;

/// Takes the driver's first error of the process on a thread of its own,
/// once, while the caller creates its context: the first call in a
/// process that fails costs the driver 30–80 µs of one-time set-up (the
/// H200, driver 580, 2026-12-01; later failures take 2–5 µs), and on
/// drivers that report parameters ([`PARAM_INFO_DRIVER`]) every kernel
/// load asks one on purpose — the function's parameter one past the last,
/// which must not exist ([`check_function_params`]). The call asks for
/// GPU `count`, which does not exist; it changes nothing, but tools that
/// report failed driver calls (a driver log, `CUDA_LOG_FILE`;
/// compute-sanitizer; cuda-gdb's `api_failures`) show it as an invalid
/// device ordinal, as they show each load's probe.
fn ready_error_path(count: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = std::thread::Builder::new().name("relok-cuda-ready".into()).spawn(move || {
            let mut device = 0;
            let past = i32::try_from(count).unwrap_or(i32::MAX);
            // SAFETY: a valid out-pointer; the ordinal is past the last GPU
            // the driver reports, so the call fails and writes nothing.
            let _ = unsafe { sys::cuDeviceGet(&mut device, past) };
        });
    });
}

/// How many GPUs the driver sees (0 without a driver).
pub fn device_count() -> usize {
    if !driver_present() || result::init().is_err() {
        return 0;
    }
    result::device::get_count().map_or(0, |n| n.max(0) as usize)
}

/// One GPU, through its primary context.
#[derive(Debug)]
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    name: String,
    sm: u32,
    driver_version: i32,
    id: DeviceId,
    /// Live allocations and the small-object block (shared with the
    /// table buffers kernels own).
    heap: Arc<Mutex<Heap>>,
    /// Kernels loaded on this device with their words, by (artifact key,
    /// session): words belong to one session.
    loaded: LoadedKernels<CudaKernel>,
    /// Tier 2: cubins of this GPU and driver.
    archive: Option<Store>,
    /// The artifacts (without code) of the load records read in this
    /// process, by source key: a kernel still loaded is found again
    /// without a read.
    /// (Boxed: the device stays the size it was.)
    recorded: Box<Mutex<HashMap<Key, Arc<Artifact>>>>,
    /// Cubins from bundles the application loaded, by
    /// [`relok_compiler::ptx::cubin_key`] (checked before the archive).
    bundled: Mutex<HashMap<Key, bytes::Bytes>>,
    /// Exception records for the kernels loaded here.
    records: Arc<RecordPool>,
    /// Idle streams (see [`StreamPool`]).
    streams: Arc<StreamPool>,
    /// How the code of each load was obtained (boxed, as `recorded`).
    code_stats: Box<CodeStats>,
    /// Checked mode's seal table: the host values' copies checked kernels
    /// may not write (boxed: the device stays the size it was).
    seals: Box<Mutex<Seals>>,
    /// The host side of small uploads (boxed, as `recorded`).
    staging: Box<Mutex<Staging>>,
}

/// Checked mode's seal table on one device (`relok_compiler::ptx::checked`):
/// one block of device memory — two words (the address of the entries
/// that follow, their number), then one (first byte, end) pair per sealed
/// copy — whose address every checked launch passes. Made when first
/// needed (one allocation and one copy); written before a checked
/// kernel's launch when it changed; a larger one replaces it.
#[derive(Debug, Default)]
struct Seals {
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

/// The cubin a module was loaded from, for a load record: none when the
/// driver JIT-compiled the PTX, or when a bundle supplied it (the bundle
/// serves it from memory in the next process too: writing a record would
/// only put a file write on a shipped program's first launch).
type Cubin = Option<Arc<[u8]>>;

/// How loads on a cuda device got their machine code.
#[derive(Debug, Default)]
struct CodeStats {
    archive_hits: AtomicU64,
    records: AtomicU64,
    bundled: AtomicU64,
    linked: AtomicU64,
    ptx_jit: AtomicU64,
}

/// Counters of a cuda device's loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CudaLoadStats {
    /// Cubins loaded from the binary archive (no compile at all).
    pub archive_hits: u64,
    /// Of those, kernels loaded from a load record (no artifact read).
    pub records: u64,
    /// Cubins loaded from a bundle the application shipped (no compile).
    pub bundled: u64,
    /// PTX linked into a cubin by the driver's linker (then archived).
    pub linked: u64,
    /// PTX handed to the driver's JIT (linking failed or no archive).
    pub ptx_jit: u64,
    /// The archive's own counters in this process.
    pub archive: relok_cache::TierStats,
}

use crate::lock;

impl CudaDevice {
    /// Opens GPU `ordinal` in its primary context (shared with other users
    /// of the primary context in this process).
    pub fn open(ordinal: usize) -> Result<CudaDevice, CudaError> {
        CudaDevice::open_context(ordinal, false)
    }

    /// Opens GPU `ordinal` in a context of its own: its modules and
    /// allocations are separate from every other context's.
    pub fn open_private(ordinal: usize) -> Result<CudaDevice, CudaError> {
        CudaDevice::open_context(ordinal, true)
    }

    fn open_context(ordinal: usize, private: bool) -> Result<CudaDevice, CudaError> {
        if !driver_present() {
            return Err(CudaError::NotAvailable("no CUDA driver (libcuda) on this machine".into()));
        }
        let count = device_count();
        if ordinal >= count {
            return Err(CudaError::NotAvailable(format!("no GPU {ordinal} (the driver sees {count})")));
        }
        let mut version = 0;
        // SAFETY: a valid out-pointer to an int.
        unsafe { sys::cuDriverGetVersion(&mut version) }.result().map_err(driver("cuDriverGetVersion"))?;
        if version >= PARAM_INFO_DRIVER {
            ready_error_path(count);
        }
        let ctx = if private { CudaContext::new_non_primary(ordinal, 0) } else { CudaContext::new(ordinal) }
            .map_err(driver("cuCtxCreate"))?;
        let name = ctx.name().map_err(driver("cuDeviceGetName"))?;
        let (major, minor) = ctx.compute_capability().map_err(driver("cuDeviceGetAttribute"))?;
        let records = RecordPool::new(&ctx)?;
        let streams = StreamPool::new(&ctx)?;
        let staging = Box::new(Mutex::new(Staging::new(&ctx)));
        // Last: nothing after it can fail and leak its allocation.
        let small = ready_copies(&ctx, streams.first())?;
        let id = DeviceId::allocate(DeviceKind::Cuda, ordinal as u64);
        Ok(CudaDevice {
            ctx,
            name,
            sm: (major * 10 + minor) as u32,
            driver_version: version,
            id,
            heap: Arc::new(Mutex::new(Heap { live: BTreeMap::new(), small: SmallBlocks::new(small) })),
            loaded: Mutex::default(),
            archive: None,
            recorded: Box::default(),
            bundled: Mutex::default(),
            records,
            streams,
            code_stats: Box::default(),
            seals: Box::default(),
            staging,
        })
    }

    /// Opens GPU `ordinal` with the binary archive under cache root `root`
    /// (`None`: no archive); an archive that cannot be opened leaves the
    /// device without one, with a warning.
    pub fn open_with_archive(ordinal: usize, root: Option<&std::path::Path>) -> Result<CudaDevice, CudaError> {
        let mut d = CudaDevice::open(ordinal)?;
        if let Some(root) = root {
            match crate::stores::open(d.archive_config(root)) {
                Ok(store) => d.archive = Some(store),
                Err(e) => tracing::warn!("binary archive disabled for this run: {e}"),
            }
        }
        Ok(d)
    }

    /// The archive configuration of this GPU and driver under `root`.
    pub fn archive_config(&self, root: &std::path::Path) -> StoreConfig {
        let build = std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .and_then(|t| t.split_whitespace().skip_while(|w| *w != "Module").nth(1).map(str::to_owned))
            .unwrap_or_else(|| "unknown".into());
        crate::stores::binary_config(
            root,
            &format!("{}-sm{}", self.name, self.sm),
            &format!("driver{}-{build}", self.driver_version),
        )
    }

    /// Uses `store` as this device's binary archive (or none).
    pub fn set_archive(&mut self, store: Option<Store>) {
        self.archive = store;
    }

    /// The binary archive, if any.
    pub fn archive(&self) -> Option<&Store> {
        self.archive.as_ref()
    }

    /// How this device's loads got their machine code.
    pub fn load_stats(&self) -> CudaLoadStats {
        let c = &self.code_stats;
        CudaLoadStats {
            archive_hits: c.archive_hits.load(Ordering::Relaxed),
            records: c.records.load(Ordering::Relaxed),
            bundled: c.bundled.load(Ordering::Relaxed),
            linked: c.linked.load(Ordering::Relaxed),
            ptx_jit: c.ptx_jit.load(Ordering::Relaxed),
            archive: self.archive.as_ref().map(Store::stats).unwrap_or_default(),
        }
    }

    /// Keeps the machine code of a bundle (see
    /// [`crate::KernelCache::load_bundle`]) for the loads that need it.
    /// Only cubins this GPU can run are ever looked up: its own compute
    /// capability's, else an earlier minor version's of the same major
    /// one; the rest are never used.
    pub fn add_machine_code(&self, code: &[(Key, bytes::Bytes)]) {
        lock(&self.bundled).extend(code.iter().cloned());
    }

    /// A bundled cubin of `ptx` this GPU runs: made for its compute
    /// capability or an earlier one of the same major version (cubins
    /// run on later minor versions), whose entry the driver finds. One
    /// the driver refuses is dropped (a miss, with a warning).
    fn bundled_module(&self, ptx: &[u8], fit: &Fit<'_>) -> Option<(PtxModule, sys::CUfunction)> {
        let entry = fit.entry;
        if lock(&self.bundled).is_empty() {
            return None;
        }
        let (major, minor) = (self.sm / 10, self.sm % 10);
        for sm in (0..=minor).rev().map(|m| major * 10 + m) {
            let key = Key(relok_compiler::ptx::cubin_key(ptx, entry, sm));
            let Some(cubin) = lock(&self.bundled).get(&key).cloned() else { continue };
            match fit.load(&self.ctx, &cubin) {
                Ok(m) => {
                    self.code_stats.bundled.fetch_add(1, Ordering::Relaxed);
                    return Some(m);
                }
                Err(e) => {
                    tracing::warn!("the bundled cubin of @{entry} for sm_{sm} was refused ({e}); compiling instead");
                    lock(&self.bundled).remove(&key);
                }
            }
        }
        None
    }

    /// The module of `ptx` and its entry, fit for the launch ([`Fit`]): a
    /// bundled cubin, else the archive's, else linked and archived, else
    /// JIT-compiled from the PTX; with the cubin for a load record
    /// ([`Cubin`]). A bundled or archived cubin that does not fit is a miss
    /// (the archive's is removed); linked or JIT-compiled code that does
    /// not is an error.
    fn module_for(&self, ptx: &[u8], fit: &Fit<'_>) -> Result<(PtxModule, sys::CUfunction, Cubin), DeviceError> {
        let entry = fit.entry;
        if let Some((m, f)) = self.bundled_module(ptx, fit) {
            return Ok((m, f, None));
        }
        let jit = || {
            self.code_stats.ptx_jit.fetch_add(1, Ordering::Relaxed);
            let m = PtxModule::load(&self.ctx, ptx)?;
            let f = fit.function(&m)?;
            Ok((m, f, None))
        };
        let Some(archive) = &self.archive else { return jit() };
        let key = Key(relok_compiler::ptx::cubin_key(ptx, entry, self.sm));
        if let Lookup::Hit(cubin) = archive.get(key) {
            match fit.load(&self.ctx, &cubin) {
                Ok((m, f)) => {
                    self.code_stats.archive_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok((m, f, Some(cubin.into())));
                }
                Err(e) => archive.reject(key, &format!("the cubin was refused: {e}")),
            }
        }
        match link_cubin(&self.ctx, ptx) {
            Ok(cubin) => {
                archive.count_compile();
                let _ = archive.put(key, &cubin);
                match PtxModule::load_image(&self.ctx, &cubin) {
                    Ok(m) => {
                        self.code_stats.linked.fetch_add(1, Ordering::Relaxed);
                        let f = fit.function(&m)?;
                        Ok((m, f, Some(cubin.into())))
                    }
                    Err(e) => {
                        tracing::warn!(
                            "the driver refused the linked cubin of @{entry} ({e}); loading the PTX instead"
                        );
                        archive.reject(key, "the driver refused it");
                        jit()
                    }
                }
            }
            Err(e) => {
                tracing::warn!("linking PTX for @{entry} failed ({e}); loading the PTX instead");
                jit()
            }
        }
    }

    /// The GPU's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The GPU's name (`NVIDIA H200`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Compute capability × 10 (90 for sm_90).
    pub fn sm(&self) -> u32 {
        self.sm
    }

    /// The driver's CUDA version (e.g. 13000).
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }

    /// The code target of this GPU.
    pub fn target(&self) -> CodeTarget {
        CodeTarget::Ptx { sm: self.sm.min(90) }
    }

    fn bind(&self) -> Result<(), DeviceError> {
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))
    }

    /// Loads a PTX artifact on this device with its words delivered (see
    /// the module docs), validating it first where the driver does not
    /// check the function unless `validated` says the kernel cache did: a
    /// new kernel, not kept in the map of loaded ones ([`Backend::load`] is
    /// the way in), and the cubin its module was loaded from.
    fn load_new(
        &self,
        session: &Session,
        artifact: &Artifact,
        validated: Validated,
    ) -> Result<(CudaKernel, Cubin), crate::ProgramError> {
        if !matches!(artifact.target, CodeTarget::Ptx { .. }) {
            return Err(DeviceError::Driver {
                call: "load",
                message: format!("artifact for {}, not PTX", artifact.target.name()),
            }
            .into());
        }
        // The launch's parameter buffer is built from the ABI: the loaded
        // function is checked against it below where the driver can say
        // what it takes (CUDA 12.4); before, the PTX must declare exactly
        // that entry (and the patch globals) before the driver sees it.
        if validated == Validated::No && !self.reports_params() {
            artifact.validate()?;
        }
        self.bind()?;
        let fit = self.fit(artifact)?;
        let (module, function, cubin) = self.module_for(&artifact.code, &fit)?;
        Ok((self.finish_load(session, artifact, fit, module, function)?, cubin))
    }

    /// Whether the driver reports a function's parameters
    /// (`cuFuncGetParamInfo`, CUDA 12.4).
    fn reports_params(&self) -> bool {
        self.driver_version >= PARAM_INFO_DRIVER
    }

    /// The archive that keeps load records of kernels of `strategy`: none
    /// without an archive, for drivers that do not report parameters, and
    /// for `bake` (one process's words).
    fn record_archive(&self, strategy: Strategy) -> Option<&Store> {
        self.archive.as_ref().filter(|_| self.reports_params() && strategy != Strategy::Bake)
    }

    /// What the code of `artifact` must take to be launched here.
    fn fit<'a>(&self, artifact: &'a Artifact) -> Result<Fit<'a>, crate::ProgramError> {
        let params = artifact.param_types()?;
        let checked = artifact.compile_options().is_some_and(|o| o.checked);
        Ok(Fit { entry: &artifact.entry, params, checked, by_driver: self.reports_params() })
    }

    /// The kernel `entry` whose source key is `source`, from this device's
    /// load record (see "Load records" in the module docs), if the archive
    /// holds one it can use; `Ok(None)` sends the caller the long way. A
    /// record that is damaged, another kernel's, refused by the driver, or
    /// whose load fails otherwise (its words) is removed; only an error
    /// binding the context is the caller's.
    fn load_record(
        &self,
        session: &Session,
        source: Key,
        entry: &str,
        strategy: Strategy,
    ) -> Result<Option<Arc<CudaKernel>>, crate::ProgramError> {
        let Some(archive) = self.record_archive(strategy) else { return Ok(None) };
        // Found before in this process, and still loaded: no read.
        let seen = lock(&self.recorded).get(&source).cloned();
        if let Some(k) = seen.and_then(|a| find_loaded(&self.loaded, session, &a.key)) {
            return Ok(Some(k));
        }
        let key = record_key(source);
        let Lookup::Hit(payload) = archive.get(key) else { return Ok(None) };
        let decoded = LoadRecord::decode(&payload, source).and_then(|(artifact, cubin)| {
            if artifact.entry != entry {
                return Err(format!("it holds @{}, not @{entry}", artifact.entry));
            }
            artifact.check(&artifact.key, self.target(), strategy).map_err(|e| e.to_string())?;
            Ok((Arc::new(artifact), cubin))
        });
        let (artifact, cubin) = match decoded {
            Ok(found) => found,
            Err(why) => {
                archive.reject(key, &format!("load record: {why}"));
                return Ok(None);
            }
        };
        self.bind()?;
        // Anything the record's content makes fail — a cubin the driver
        // refuses or whose parameters differ, words its manifest cannot
        // have — is the record's fault: removed, and the long way taken.
        let loaded = (|| {
            let fit = self.fit(&artifact)?;
            let (module, function) = fit.load(&self.ctx, cubin)?;
            // Loaded meanwhile (or by the long way before): that one is kept.
            load_once(&self.loaded, self.id, session, &artifact, || {
                self.finish_load(session, &artifact, fit, module, function)
            })
        })();
        let kernel = match loaded {
            Ok(k) => k,
            Err(e) => {
                archive.reject(key, &format!("load record: {e}"));
                return Ok(None);
            }
        };
        lock(&self.recorded).insert(source, artifact);
        self.code_stats.archive_hits.fetch_add(1, Ordering::Relaxed);
        self.code_stats.records.fetch_add(1, Ordering::Relaxed);
        Ok(Some(kernel))
    }

    /// Writes the load record of `artifact` and its `cubin` under `source`,
    /// once per process (a failed write is counted by the archive; the run
    /// goes on).
    fn write_record(&self, source: Key, artifact: &Artifact, cubin: &[u8]) {
        let Some(archive) = self.record_archive(artifact.strategy) else { return };
        if lock(&self.recorded).contains_key(&source) {
            return;
        }
        if let Ok(payload) = LoadRecord::encode(source, artifact, cubin) {
            let _ = archive.put(record_key(source), &payload);
        }
        lock(&self.recorded).insert(source, Arc::new(without_code(artifact)));
    }

    /// The kernel of `artifact` in `module`, whose `function` fits it
    /// ([`Fit`]): the function loaded, the words delivered, an exception
    /// record taken.
    fn finish_load(
        &self,
        session: &Session,
        artifact: &Artifact,
        fit: Fit<'_>,
        module: PtxModule,
        function: sys::CUfunction,
    ) -> Result<CudaKernel, crate::ProgramError> {
        let module = Arc::new(module);
        let Fit { params, checked, .. } = fit;
        if self.reports_params() {
            // Under lazy loading (the default since CUDA 12.2) the function
            // is loaded onto the GPU at its first launch; load it now, so
            // that the first launch costs what every launch costs.
            // SAFETY: a function of `module`, alive.
            unsafe { sys::cuFuncLoad(function) }.result().map_err(driver("cuFuncLoad"))?;
        }
        let words = crate::backend::deliver_words(session, self, &artifact.values, &artifact.manifest)?;
        let mut table = None;
        match artifact.strategy {
            Strategy::Patch => {
                for (r, &w) in artifact.manifest.records().iter().zip(&words) {
                    let (ptr, size) = module.global(r.name())?;
                    let offset = match r.site() {
                        Site::Slot => 0,
                        Site::Interior { offset } => u64::from(offset),
                    };
                    if offset + 8 > size as u64 {
                        return Err(DeviceError::OutOfBounds { addr: ptr + offset, len: 8 }.into());
                    }
                    // SAFETY: `ptr + offset .. + 8` lies inside the module
                    // global of `size` bytes (checked above).
                    unsafe { result::memcpy_htod_sync(ptr + offset, &w.to_le_bytes()) }
                        .map_err(driver("cuMemcpyHtoD"))?;
                }
            }
            Strategy::Table if !words.is_empty() => {
                let t = self.alloc_filled(&crate::backend::table_bytes(&words))?;
                table = Some(TableAlloc { ctx: Arc::clone(&self.ctx), heap: Arc::clone(&self.heap), ptr: t.0 });
            }
            _ => {}
        }
        let exception = self.records.take()?;
        Ok(CudaKernel {
            entry: artifact.entry.clone(),
            device: self.id,
            params,
            module,
            function,
            table,
            exception: Mutex::new(exception),
            words,
            checked,
        })
    }

    /// Launches a loaded kernel and waits for it. The geometry and the
    /// arguments are checked as on the cpu device; an exception comes back
    /// as its message word, block and thread, a fault checked mode
    /// recorded as [`LaunchError::Fault`].
    pub fn launch(
        &self,
        kernel: &CudaKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<Option<Thrown>, LaunchError> {
        if kernel.device != self.id {
            let message = format!("@{} was loaded on {}, not on this {}", kernel.entry, kernel.device, self.id);
            return Err(LaunchError::Device {
                kernel: kernel.entry.clone(),
                error: DeviceError::Driver { call: "launch", message },
            });
        }
        check_config(&kernel.entry, config)?;
        let mut values = self.launch_values(kernel, args)?;
        let thrown = self
            .run(kernel, config, &mut values, rng_seed)
            .map_err(|error| LaunchError::Device { kernel: kernel.entry.clone(), error })?;
        // A fault checked mode recorded is an error; a throw comes back.
        match thrown.map(|t| (t, crate::backend::thrown_error(&kernel.entry, t, None))) {
            Some((_, fault @ LaunchError::Fault { .. })) => Err(fault),
            other => Ok(other.map(|(t, _)| t)),
        }
    }

    /// The launch's parameter values: the arguments, checked against the
    /// kernel's ABI, and for a checked kernel the length of each pointer
    /// argument's buffer — bytes from the pointer to the end of the
    /// allocation it points into, 0 when it points into none — with the
    /// address of the seal table, brought up to date first.
    fn launch_values(&self, kernel: &CudaKernel, args: &[KernelArg]) -> Result<Vec<u64>, LaunchError> {
        let mut values = check_args(&kernel.entry, &kernel.params, args)?;
        if kernel.checked {
            let seals =
                self.publish_seals().map_err(|error| LaunchError::Device { kernel: kernel.entry.clone(), error })?;
            let heap = lock(&self.heap);
            let lens: Vec<u64> = kernel
                .params
                .iter()
                .zip(&values)
                .filter(|(t, _)| matches!(t, relok_ir::Type::Ptr(..)))
                .map(|(_, &p)| buffer_len(&heap.live, p))
                .collect();
            values.extend(lens);
            values.push(seals);
        }
        Ok(values)
    }

    /// Writes the seal table when the sealed copies changed since it was
    /// last written, and returns its address (0 while nothing was ever
    /// sealed). The copy is on the legacy stream, so after the launches
    /// before it on relok's streams (blocking ones), before the launch that
    /// follows.
    fn publish_seals(&self) -> Result<u64, DeviceError> {
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

    fn run(
        &self,
        kernel: &CudaKernel,
        config: &LaunchConfig,
        values: &mut [u64],
        rng_seed: u64,
    ) -> Result<Option<Thrown>, DeviceError> {
        self.bind()?;
        // One launch at a time per loaded kernel: they share its record.
        let mut record = lock(&kernel.exception);
        let mut state = KernelState { reloc_table: kernel.table_word(), exception: record.device, rng_seed };
        let mut params = kernel_params(&mut state, values);
        // SAFETY: `values` were checked against the ABI (`launch`), `state`
        // and `values` outlive the call, the context is bound above.
        unsafe { kernel.launch_on(std::ptr::null_mut(), config, &mut params) }?;
        record.unread = true;
        // SAFETY: the legacy stream of the bound context; the reading waits
        // for the launch.
        let thrown = unsafe { read_records(std::ptr::null_mut(), &mut [&mut *record]) }?;
        Ok(thrown[0])
    }
}

/// Measurements for `relok bench cuda`.
impl CudaDevice {
    /// GPU time in milliseconds of each of `iters` launches of `kernel`
    /// (events recorded around each launch on the default stream).
    pub fn time_launches(
        &self,
        kernel: &CudaKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        iters: usize,
    ) -> Result<Vec<f64>, LaunchError> {
        check_config(&kernel.entry, config)?;
        let mut values = self.launch_values(kernel, args)?;
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        self.bind().map_err(err)?;
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT;
        let start = result::event::create(flags).map_err(driver("cuEventCreate")).map_err(err)?;
        let end = result::event::create(flags).map_err(driver("cuEventCreate")).map_err(err)?;
        let mut out = Vec::with_capacity(iters);
        let mut run = || -> Result<(), DeviceError> {
            for _ in 0..iters {
                // SAFETY: live events of this context, default stream.
                unsafe { result::event::record(start, std::ptr::null_mut()) }.map_err(driver("cuEventRecord"))?;
                self.run(kernel, config, &mut values, 0)?;
                // SAFETY: as above.
                unsafe { result::event::record(end, std::ptr::null_mut()) }.map_err(driver("cuEventRecord"))?;
                // SAFETY: as above; both events were recorded.
                unsafe { result::event::synchronize(end) }.map_err(driver("cuEventSynchronize"))?;
                // SAFETY: as above.
                let ms = unsafe { result::event::elapsed(start, end) }.map_err(driver("cuEventElapsedTime"))?;
                out.push(f64::from(ms));
            }
            Ok(())
        };
        let r = run();
        // SAFETY: created above, destroyed once.
        unsafe {
            let _ = result::event::destroy(start);
            let _ = result::event::destroy(end);
        }
        r.map_err(err)?;
        Ok(out)
    }

    /// Host time in microseconds of each of `iters` bare launches of the
    /// kernel's function (cuLaunchKernel + cuCtxSynchronize; the
    /// parameters, with a checked kernel's buffer lengths, built once
    /// before the loop; no exception record read): the floor relok's
    /// per-launch overhead is measured against.
    pub fn time_raw_launches(
        &self,
        kernel: &CudaKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        iters: usize,
    ) -> Result<Vec<f64>, LaunchError> {
        let mut values = self.launch_values(kernel, args)?;
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        self.bind().map_err(err)?;
        let mut record = lock(&kernel.exception);
        // Never read here: whatever these launches write is cleared when
        // the record goes back to the pool.
        record.unread = true;
        let mut state = KernelState { reloc_table: kernel.table_word(), exception: record.device, rng_seed: 0 };
        let mut params = kernel_params(&mut state, &mut values);
        let mut out = Vec::with_capacity(iters);
        for _ in 0..iters {
            let t = std::time::Instant::now();
            // SAFETY: `values` were checked against the ABI above, `state`
            // and `values` outlive the call, the context is bound above.
            unsafe { kernel.launch_and_wait(config, &mut params) }.map_err(err)?;
            out.push(t.elapsed().as_secs_f64() * 1e6);
        }
        Ok(out)
    }
}

impl CudaDevice {
    /// Host time in microseconds of `iters` bare launches of the kernel's
    /// function enqueued on one new stream without waiting (`cuLaunchKernel`
    /// in a loop with its parameters built once, no relok checks), then the
    /// wait for them, in microseconds: the floor `relok bench launch`
    /// measures relok's asynchronous launches against.
    pub fn time_bare_async_launches(
        &self,
        kernel: &CudaKernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        iters: usize,
    ) -> Result<(f64, f64), LaunchError> {
        let mut values = self.launch_values(kernel, args)?;
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        let stream = crate::backend::Backend::new_stream(self).map_err(err)?;
        let mut record = lock(&kernel.exception);
        // Never read here: whatever these launches write is cleared when
        // the record goes back to the pool.
        record.unread = true;
        let mut state = KernelState { reloc_table: kernel.table_word(), exception: record.device, rng_seed: 0 };
        let mut params = kernel_params(&mut state, &mut values);
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        let t = std::time::Instant::now();
        for _ in 0..iters {
            // SAFETY: `values` were checked against the ABI above, `state`
            // and `values` outlive the calls (the driver copies them), the
            // context was bound by `new_stream`, the stream is its.
            unsafe { result::launch_kernel(kernel.function, (gx, gy, gz), (bx, by, bz), 0, stream.raw, &mut params) }
                .map_err(driver("cuLaunchKernel"))
                .map_err(err)?;
        }
        let launched = t.elapsed().as_secs_f64() * 1e6;
        // SAFETY: the stream is alive (dropped below).
        unsafe { result::stream::synchronize(stream.raw) }.map_err(driver("cuStreamSynchronize")).map_err(err)?;
        Ok((launched, t.elapsed().as_secs_f64() * 1e6 - launched))
    }
}

/// The bytes from `ptr` to the end of the allocation (of `allocs`: address
/// → bytes) it points into, 0 when it points into none: a buffer
/// argument's length for checked mode.
fn buffer_len(allocs: &BTreeMap<u64, u64>, ptr: u64) -> u64 {
    match allocs.range(..=ptr).next_back() {
        Some((&base, &size)) if ptr < base.saturating_add(size) => base + size - ptr,
        _ => 0,
    }
}

/// The launch's parameter pointers: the kernel state, then each argument
/// (a parameter narrower than 8 bytes reads the low bytes of its
/// little-endian `u64`). They point into `state` and `values`, which must
/// outlive the launch.
fn kernel_params(state: &mut KernelState, values: &mut [u64]) -> Vec<*mut c_void> {
    let mut params: Vec<*mut c_void> = Vec::with_capacity(1 + values.len());
    params.push(std::ptr::from_mut(state).cast());
    params.extend(values.iter_mut().map(|v| std::ptr::from_mut(v).cast::<c_void>()));
    params
}

impl CudaKernel {
    /// Launches the function with `params` and waits for it.
    ///
    /// # Safety
    ///
    /// `params` comes from [`kernel_params`] for this kernel's state and
    /// for arguments checked against its ABI (`check_args`), and the state
    /// and argument values it points into are alive until this returns;
    /// the context of this kernel's device is bound to the thread.
    unsafe fn launch_and_wait(&self, config: &LaunchConfig, params: &mut [*mut c_void]) -> Result<(), DeviceError> {
        // SAFETY: by the caller's contract; the wait below ends the
        // kernel's use of what `params` points into.
        unsafe { self.launch_on(std::ptr::null_mut(), config, params) }?;
        result::ctx::synchronize().map_err(driver("cuCtxSynchronize (the kernel)"))
    }

    /// Enqueues the function with `params` on `stream` (null: the legacy
    /// stream).
    ///
    /// # Safety
    ///
    /// As for [`CudaKernel::launch_and_wait`], and `stream` is a live
    /// stream of the bound context; the state and argument values may be
    /// dropped when this returns (the driver copies them), but the buffers
    /// they name must stay alive until the stream passes the launch.
    unsafe fn launch_on(
        &self,
        stream: sys::CUstream,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<(), DeviceError> {
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        // SAFETY: the function belongs to `self.module`, alive while `self`
        // is; by the caller's contract `params` holds one live pointer per
        // parameter of the entry (the state, then one per argument; the
        // function was checked against the ABI at load, `Fit`), and the
        // stream is the bound context's.
        unsafe { result::launch_kernel(self.function, (gx, gy, gz), (bx, by, bz), 0, stream, params) }
            .map_err(driver("cuLaunchKernel"))
    }
}

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
struct RecordPool {
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
    fn new(ctx: &Arc<CudaContext>) -> Result<Arc<RecordPool>, DeviceError> {
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
    fn take(self: &Arc<Self>) -> Result<Record, DeviceError> {
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
unsafe fn read_records(stream: sys::CUstream, records: &mut [&mut Record]) -> Result<Vec<Option<Thrown>>, DeviceError> {
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
struct Record {
    device: u64,
    pool: Arc<RecordPool>,
    chunk: usize,
    slot: usize,
    /// A launch used it since it was last read (or it was read holding a
    /// throw and its clearing failed).
    unread: bool,
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

/// Checks that `b` is a little-endian 64-bit ELF image whose program
/// header table, section header table and (file-backed) sections lie
/// inside `b`.
fn elf_bounds(b: &[u8]) -> Result<(), String> {
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u64::from(u16::from_le_bytes([s[0], s[1]])));
    let u32_at = |o: usize| b.get(o..o + 4).map(|s| u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]])));
    let u64_at = |o: usize| b.get(o..o + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes);
    if b.len() < 64 || b[..4] != *b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return Err("no 64-bit little-endian ELF header".into());
    }
    let len = b.len() as u64;
    let table = |off: Option<u64>, size: Option<u64>, n: Option<u64>| -> Result<(u64, u64, u64), String> {
        let (off, size, n) = (off.ok_or("truncated")?, size.ok_or("truncated")?, n.ok_or("truncated")?);
        match size.checked_mul(n).and_then(|t| t.checked_add(off)) {
            Some(end) if end <= len => Ok((off, size, n)),
            _ => Err("a header table lies outside the image".into()),
        }
    };
    table(u64_at(0x20), u16_at(0x36), u16_at(0x38))?;
    let (shoff, shentsize, shnum) = table(u64_at(0x28), u16_at(0x3A), u16_at(0x3C))?;
    if shnum > 0 && shentsize < 64 {
        return Err("section headers too small".into());
    }
    for i in 0..shnum {
        let h = (shoff + i * shentsize) as usize;
        let (kind, off, size) = (u32_at(h + 4), u64_at(h + 0x18), u64_at(h + 0x20));
        let (kind, off, size) = (kind.ok_or("truncated")?, off.ok_or("truncated")?, size.ok_or("truncated")?);
        // SHT_NOBITS (8) occupies no bytes in the file.
        if kind != 8 && off.checked_add(size).is_none_or(|end| end > len) {
            return Err(format!("section {i} lies outside the image"));
        }
    }
    Ok(())
}

/// The cubin the driver's linker makes of `ptx` for the context's GPU.
fn link_cubin(ctx: &Arc<CudaContext>, ptx: &[u8]) -> Result<Vec<u8>, DeviceError> {
    let text = CString::new(ptx)
        .map_err(|_| DeviceError::Driver { call: "cuLinkAddData", message: "PTX holds a NUL byte".into() })?;
    ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    // SAFETY: no options; `state` is a valid out-pointer.
    unsafe { sys::cuLinkCreate_v2(0, std::ptr::null_mut(), std::ptr::null_mut(), &mut state) }
        .result()
        .map_err(driver("cuLinkCreate"))?;
    let linked = (|| {
        let bytes = text.as_bytes_with_nul();
        // SAFETY: `state` is live; the data pointer and length describe
        // `text`, which outlives the call; the name is a static C string.
        unsafe {
            sys::cuLinkAddData_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_PTX,
                bytes.as_ptr().cast_mut().cast(),
                bytes.len(),
                c"relok.ptx".as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(driver("cuLinkAddData"))?;
        let (mut out, mut size): (*mut c_void, usize) = (std::ptr::null_mut(), 0);
        // SAFETY: `state` is live; out-pointers are valid.
        unsafe { sys::cuLinkComplete(state, &mut out, &mut size) }.result().map_err(driver("cuLinkComplete"))?;
        if out.is_null() {
            return Err(DeviceError::Driver { call: "cuLinkComplete", message: "no image".into() });
        }
        // SAFETY: the linker owns `size` bytes at `out` until the state is
        // destroyed below; they are copied first.
        Ok(unsafe { std::slice::from_raw_parts(out.cast::<u8>(), size) }.to_vec())
    })();
    // SAFETY: destroyed once; the image was copied out above.
    let _ = unsafe { sys::cuLinkDestroy(state) };
    linked
}

/// A kernel's load record (see "Load records" in the module docs): the
/// source key it is for, the artifact without its PTX and source text
/// (what a load needs: entry, ABI, options, manifest, values), and the
/// cubin of this device. Serialised with postcard, fields in this order.
#[derive(serde::Serialize, serde::Deserialize)]
struct LoadRecord<'a> {
    source: [u8; 32],
    artifact: Artifact,
    #[serde(borrow)]
    cubin: &'a [u8],
}

impl LoadRecord<'_> {
    fn encode(source: Key, artifact: &Artifact, cubin: &[u8]) -> Result<Vec<u8>, postcard::Error> {
        postcard::to_allocvec(&LoadRecord { source: source.0, artifact: without_code(artifact), cubin })
    }

    /// The artifact and cubin of the bytes of `source`'s record; a record
    /// of another source key, or with trailing bytes, is an error.
    fn decode(bytes: &[u8], source: Key) -> Result<(Artifact, &[u8]), String> {
        match postcard::take_from_bytes::<LoadRecord<'_>>(bytes) {
            Ok((r, [])) if r.source == source.0 => Ok((r.artifact, r.cubin)),
            Ok((_, [])) => Err("it is the record of another source".into()),
            Ok((_, rest)) => Err(format!("{} bytes after the record", rest.len())),
            Err(e) => Err(format!("undecodable: {e}")),
        }
    }
}

/// `artifact` without its code and source text: what a load from a cubin
/// reads of it.
fn without_code(artifact: &Artifact) -> Artifact {
    Artifact {
        key: artifact.key,
        compiler: artifact.compiler.clone(),
        target: artifact.target,
        strategy: artifact.strategy,
        entry: artifact.entry.clone(),
        abi: artifact.abi.clone(),
        manifest: artifact.manifest.clone(),
        values: artifact.values.clone(),
        code: Vec::new(),
        alias: None,
        source: String::new(),
        options: artifact.options.clone(),
        baked_for: artifact.baked_for,
    }
}

/// The bytes of `b` in a buffer aligned for any of the driver's reads (an
/// ELF image is read as 8-byte fields).
fn aligned(b: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; b.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..b.len()].copy_from_slice(b);
    words
}

/// The archive key of the load record of the kernel whose source key is
/// `source`: apart from every cubin's key (`relok_compiler::ptx::cubin_key`).
fn record_key(source: Key) -> Key {
    use sha2::{Digest, Sha256};
    Key(Sha256::new().chain_update(b"relok load record 1\0").chain_update(source.0).finalize().into())
}

/// What a loaded function must be to be launched with an artifact's ABI:
/// the entry, and — where the driver reports parameters — taking the
/// kernel state, the parameters and checked mode's, in order
/// ([`check_function_params`]).
struct Fit<'a> {
    entry: &'a str,
    params: Vec<relok_ir::Type>,
    checked: bool,
    /// Whether the driver reports parameters (CUDA 12.4).
    by_driver: bool,
}

impl Fit<'_> {
    /// The entry of `module`, checked.
    fn function(&self, module: &PtxModule) -> Result<sys::CUfunction, DeviceError> {
        let function = module.function(self.entry)?;
        if self.by_driver {
            check_function_params(function, self.entry, &self.params, self.checked)?;
        }
        Ok(function)
    }

    /// `cubin` loaded, and its entry checked (a cubin without it, or with
    /// other parameters, is another kernel's: refused).
    fn load(&self, ctx: &Arc<CudaContext>, cubin: &[u8]) -> Result<(PtxModule, sys::CUfunction), DeviceError> {
        let module = PtxModule::load_image(ctx, cubin)?;
        let function = self.function(&module)?;
        Ok((module, function))
    }
}

/// Checks that the loaded `function` takes the parameters a launch passes
/// (`relok_compiler::ptx::entry_param_sizes`: the kernel state, `params`,
/// in checked mode the lengths and the seal table), as the driver reports
/// them (`cuFuncGetParamInfo`, CUDA 12.4: a size per index, an error past
/// the last).
fn check_function_params(
    function: sys::CUfunction,
    entry: &str,
    params: &[relok_ir::Type],
    checked: bool,
) -> Result<(), DeviceError> {
    let refused =
        |message: String| DeviceError::Driver { call: "cuFuncGetParamInfo", message: format!("@{entry}: {message}") };
    let expected = relok_compiler::ptx::entry_param_sizes(params, checked).map_err(refused)?;
    let size_of = |i: usize| {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: a function of a live module; valid out-pointers.
        unsafe { sys::cuFuncGetParamInfo(function, i, &mut offset, &mut size) }.result().map(|()| size)
    };
    for (i, &want) in expected.iter().enumerate() {
        match size_of(i) {
            Ok(size) if size == want => {}
            Ok(size) => return Err(refused(format!("parameter {i} is {size} bytes in the code, {want} in its ABI"))),
            Err(_) => return Err(refused(format!("the code takes {i} parameters, its ABI {}", expected.len()))),
        }
    }
    match size_of(expected.len()) {
        Err(_) => Ok(()),
        Ok(_) => Err(refused(format!("the code takes more than the {} parameters of its ABI", expected.len()))),
    }
}

/// A loaded PTX module, unloaded on drop.
#[derive(Debug)]
pub struct PtxModule {
    raw: sys::CUmodule,
    ctx: Arc<CudaContext>,
}

// SAFETY: a module handle may be used from any thread that binds its
// context, which every use here does first.
unsafe impl Send for PtxModule {}
// SAFETY: as for Send; the handle itself is never mutated.
unsafe impl Sync for PtxModule {}

impl PtxModule {
    /// Loads PTX text (the driver JIT-compiles it).
    fn load(ctx: &Arc<CudaContext>, ptx: &[u8]) -> Result<PtxModule, DeviceError> {
        let text = CString::new(ptx)
            .map_err(|_| DeviceError::Driver { call: "cuModuleLoadData", message: "PTX holds a NUL byte".into() })?;
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: `text` is NUL-terminated PTX that outlives the call.
        let raw = unsafe { result::module::load_data(text.as_ptr().cast()) }.map_err(driver("cuModuleLoadData"))?;
        Ok(PtxModule { raw, ctx: Arc::clone(ctx) })
    }

    /// Loads a cubin: an ELF image whose header, program and section
    /// tables and sections lie inside the bytes (checked first, since
    /// `cuModuleLoadData` takes no length), else it never reaches the
    /// driver.
    fn load_image(ctx: &Arc<CudaContext>, cubin: &[u8]) -> Result<PtxModule, DeviceError> {
        elf_bounds(cubin)
            .map_err(|why| DeviceError::Driver { call: "cuModuleLoadData", message: format!("not a cubin: {why}") })?;
        // The driver reads an ELF image as 8-byte fields; a cubin inside a
        // load record or a bundle starts wherever their framing puts it.
        let words;
        let cubin = if cubin.as_ptr().align_offset(8) == 0 {
            cubin
        } else {
            words = aligned(cubin);
            &bytemuck::cast_slice(&words)[..cubin.len()]
        };
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: `cubin` holds a whole 64-bit ELF image that outlives the
        // call, every table and section of which lies inside it (checked
        // by `elf_bounds`).
        let raw =
            unsafe { result::module::load_data(cubin.as_ptr().cast()) }.map_err(driver("cuModuleLoadData (cubin)"))?;
        Ok(PtxModule { raw, ctx: Arc::clone(ctx) })
    }

    fn function(&self, name: &str) -> Result<sys::CUfunction, DeviceError> {
        let c = CString::new(name)
            .map_err(|_| DeviceError::Driver { call: "cuModuleGetFunction", message: "bad name".into() })?;
        // SAFETY: a live module.
        unsafe { result::module::get_function(self.raw, c) }.map_err(driver("cuModuleGetFunction"))
    }

    fn global(&self, name: &str) -> Result<(u64, usize), DeviceError> {
        let c = CString::new(name)
            .map_err(|_| DeviceError::Driver { call: "cuModuleGetGlobal", message: "bad name".into() })?;
        // SAFETY: a live module.
        unsafe { result::module::get_global(self.raw, c) }
            .map_err(|e| DeviceError::Driver { call: "cuModuleGetGlobal", message: format!("{name}: {e:?}") })
    }
}

/// The driver sets device allocation, host↔device copies and streams up
/// lazily, at their first use (≈0.1–0.2 ms together on an H200): do it
/// when the device opens, with the context, so that the first kernel load
/// and launch pay only for themselves. The copy back is made on `stream`,
/// as a synchronisation reads exception records. The allocation made here
/// is the device's [`SmallBlocks`], kept until the device closes.
fn ready_copies(ctx: &Arc<CudaContext>, stream: sys::CUstream) -> Result<u64, DeviceError> {
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

/// CUDA streams no longer used by a [`CudaStream`], kept for the next
/// [`Backend::new_stream`](crate::backend::Backend::new_stream) of the
/// device (creating one costs ≈10 µs), up to [`StreamPool::KEEP`]; one is
/// made when the device opens. Destroyed with the pool.
#[derive(Debug)]
struct StreamPool {
    ctx: Arc<CudaContext>,
    free: Mutex<Vec<RawStream>>,
}

/// A CUDA stream handle with no work pending.
#[derive(Debug)]
struct RawStream(sys::CUstream);

// SAFETY: a stream handle may be used from any thread with its context
// bound; the pool only holds idle ones.
unsafe impl Send for RawStream {}

impl StreamPool {
    /// Idle streams kept at most; more are destroyed.
    const KEEP: usize = 8;

    fn new(ctx: &Arc<CudaContext>) -> Result<Arc<StreamPool>, DeviceError> {
        let pool = Arc::new(StreamPool { ctx: Arc::clone(ctx), free: Mutex::default() });
        let raw = pool.create()?;
        lock(&pool.free).push(raw);
        Ok(pool)
    }

    /// The stream made when the pool was (the next one taken).
    fn first(&self) -> sys::CUstream {
        lock(&self.free).last().map_or(std::ptr::null_mut(), |raw| raw.0)
    }

    fn create(&self) -> Result<RawStream, DeviceError> {
        self.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        result::stream::create(result::stream::StreamKind::Default).map(RawStream).map_err(driver("cuStreamCreate"))
    }

    /// An idle stream: a kept one, else a new one.
    fn take(&self) -> Result<RawStream, DeviceError> {
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

impl Drop for PtxModule {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: unloaded once, at drop.
            let _ = unsafe { result::module::unload(self.raw) };
        }
    }
}

/// A kernel loaded on one cuda device with its words delivered.
#[derive(Debug)]
pub struct CudaKernel {
    entry: String,
    /// The device it was loaded on (its module, table and words are there).
    device: DeviceId,
    params: Vec<relok_ir::Type>,
    module: Arc<PtxModule>,
    function: sys::CUfunction,
    table: Option<TableAlloc>,
    exception: Mutex<Record>,
    /// The words, in manifest (rank) order.
    pub words: Vec<u64>,
    /// Compiled in checked mode: launches pass each buffer argument's
    /// length after the arguments (`relok_compiler::ptx::checked`).
    checked: bool,
}

// SAFETY: the function handle belongs to `module` (kept alive here) and is
// only used with its context bound.
unsafe impl Send for CudaKernel {}
// SAFETY: as for Send; launches do not mutate the handle.
unsafe impl Sync for CudaKernel {}

impl CudaKernel {
    /// The entry's name.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// The table buffer (`table` strategy with records).
    pub fn table(&self) -> Option<DevicePtr> {
        self.table.as_ref().map(|t| DevicePtr(t.ptr))
    }

    fn table_word(&self) -> u64 {
        self.table.as_ref().map_or(0, |t| t.ptr)
    }

    /// The module's handle (kept for the module's lifetime).
    pub fn module(&self) -> &PtxModule {
        &self.module
    }
}

#[cfg(test)]
mod tests {
    use super::{Heap, LoadRecord, Released, SmallBlocks, buffer_len, elf_bounds, record_key};
    use relok_cache::Key;
    use relok_compiler::artifact::{CodeTarget, CompileOptions, compile};
    use relok_compiler::stencil::Stencil;
    use relok_ir::Strategy;

    #[test]
    fn small_objects_take_runs_of_slots_and_give_them_back() {
        let base = 0x7000_0000;
        let mut b = SmallBlocks::new(base);
        let a = b.take(8).expect("a slot");
        let c = b.take(65).expect("two slots");
        let d = b.take(1).expect("a slot");
        assert_eq!((a, c, d), (base, base + 64, base + 192), "first fit, 64-byte slots");
        assert!(b.take(SmallBlocks::MAX + 1).is_none(), "too large for the block");
        // A freed run is taken again by what fits in it, and only that.
        assert!(b.give_back(c, 65));
        assert_eq!(b.take(200), Some(base + 256), "three slots do not fit in two");
        assert_eq!(b.take(128), Some(c));
        // Outside the block: not its to give back.
        assert!(!b.give_back(base - 64, 8) && !b.give_back(base + SmallBlocks::BYTES, 8));
        assert!(b.holds(base + SmallBlocks::BYTES - 1) && !b.holds(base + SmallBlocks::BYTES));
        // Full: every slot taken, then none.
        let mut full = SmallBlocks::new(base);
        let n = (0..).take_while(|_| full.take(SmallBlocks::MAX).is_some()).count();
        assert_eq!(n as u64, SmallBlocks::BYTES / SmallBlocks::MAX);
        assert!(full.take(1).is_none());
        assert_eq!(full.free, 0, "a full block fails without a search");
        // The free count follows what is taken and given back, once each.
        assert!(full.give_back(base, SmallBlocks::MAX) && full.give_back(base, SmallBlocks::MAX));
        assert_eq!(full.free, SmallBlocks::slots(SmallBlocks::MAX));
        assert_eq!(full.take(SmallBlocks::MAX + 1), None);
        assert_eq!(full.take(SmallBlocks::MAX), Some(base));
        assert_eq!(full.free, 0);
        // The heap tells the caller which allocations are its own to free.
        let mut heap = Heap { live: Default::default(), small: SmallBlocks::new(base) };
        let p = heap.small.take(24).expect("a slot");
        heap.live.insert(p, 24);
        heap.live.insert(0x1000, 24);
        assert_eq!(
            (heap.release(p), heap.release(0x1000), heap.release(p)),
            (Some(Released::Slots), Some(Released::Own), None)
        );
        assert_eq!(heap.small.take(64), Some(p), "the slot is free again");
    }

    #[test]
    fn a_load_record_keeps_what_a_load_needs_for_its_own_source_only() {
        let module = relok_ir::parse(include_str!("../../../examples/bench/scale.rk")).expect("parses");
        let stencil = Stencil::new(&module, "scale").expect("stencil");
        let artifact = compile(&stencil, CodeTarget::Ptx { sm: 90 }, Strategy::Table, CompileOptions::default(), None)
            .expect("compiles");
        let (source, cubin) = (Key([7; 32]), b"\x7fELF a cubin".as_slice());
        let bytes = LoadRecord::encode(source, &artifact, cubin).expect("encodes");
        let (back, code) = LoadRecord::decode(&bytes, source).expect("decodes");
        assert_eq!(code, cubin);
        // Everything but the PTX and the source text, which a load from a
        // cubin does not read.
        assert!(back.code.is_empty() && back.source.is_empty() && back.alias.is_none());
        assert_eq!(
            (back.key, &back.entry, &back.abi, &back.manifest, &back.values),
            (artifact.key, &artifact.entry, &artifact.abi, &artifact.manifest, &artifact.values)
        );
        assert_eq!(
            (back.compile_options(), back.strategy, back.target),
            (artifact.compile_options(), artifact.strategy, artifact.target)
        );
        assert!(bytes.len() < artifact.to_payload().expect("payload").len());
        // Another source's record, trailing bytes, a truncation: refused.
        assert!(LoadRecord::decode(&bytes, Key([8; 32])).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(LoadRecord::decode(&longer, source).is_err());
        for n in [0, 1, 32, bytes.len() / 2, bytes.len() - 1] {
            assert!(LoadRecord::decode(&bytes[..n], source).is_err(), "truncated to {n} bytes");
        }
        // The cubin handed to the driver from an aligned copy, unchanged.
        for n in [1, 7, 8, 13, 4096 + 3] {
            let b: Vec<u8> = (0..n).map(|i| i as u8 ^ 0x5a).collect();
            let words = super::aligned(&b);
            assert_eq!(&bytemuck::cast_slice::<u64, u8>(&words)[..n], &b[..]);
        }
        // Records live apart from the source keys and from each other.
        assert_ne!(record_key(source), source);
        assert_ne!(record_key(source), record_key(Key([8; 32])));
        assert_eq!(record_key(source), record_key(Key([7; 32])));
    }

    #[test]
    fn a_buffer_arguments_length_runs_to_the_end_of_its_allocation() {
        let allocs = std::collections::BTreeMap::from([(0x1000, 64), (0x2000, 16)]);
        assert_eq!(buffer_len(&allocs, 0x1000), 64);
        assert_eq!(buffer_len(&allocs, 0x1010), 48, "from inside");
        assert_eq!(buffer_len(&allocs, 0x103f), 1);
        assert_eq!(buffer_len(&allocs, 0x1040), 0, "one past the end");
        assert_eq!(buffer_len(&allocs, 0x0fff), 0, "before every allocation");
        assert_eq!(buffer_len(&allocs, 0x200f), 1);
        assert_eq!(buffer_len(&allocs, 0), 0, "null");
        assert_eq!(buffer_len(&allocs, u64::MAX), 0);
    }

    /// A 64-bit little-endian ELF header with one section of `size` bytes
    /// at `offset`, and the image padded to `len` bytes.
    fn image(offset: u64, size: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len.max(192)];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x28..0x30].copy_from_slice(&128u64.to_le_bytes()); // section headers at 128
        b[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        b[0x3C..0x3E].copy_from_slice(&1u16.to_le_bytes());
        b[128 + 4..128 + 8].copy_from_slice(&1u32.to_le_bytes()); // PROGBITS
        b[128 + 0x18..128 + 0x20].copy_from_slice(&offset.to_le_bytes());
        b[128 + 0x20..128 + 0x28].copy_from_slice(&size.to_le_bytes());
        b.truncate(len.max(192));
        b
    }

    #[test]
    fn elf_images_must_lie_inside_their_bytes() {
        assert_eq!(elf_bounds(&image(64, 32, 192)), Ok(()));
        assert!(elf_bounds(&image(64, 1 << 40, 192)).is_err(), "a section past the end");
        assert!(elf_bounds(&image(u64::MAX, 2, 192)).is_err(), "an overflowing section");
        assert!(elf_bounds(&image(64, 32, 192)[..150]).is_err(), "a truncated section table");
        assert!(elf_bounds(b"garbage").is_err());
        let mut not_elf = image(64, 32, 192);
        not_elf[0] = 0;
        assert!(elf_bounds(&not_elf).is_err());
    }
}

/// A device's live allocations and its small-object block.
#[derive(Debug)]
struct Heap {
    /// Live allocations (of their own or in `small`): address → bytes.
    live: BTreeMap<u64, u64>,
    small: SmallBlocks,
}

/// What [`Heap::release`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Released {
    /// The allocation was in the small-object block: its slots are free.
    Slots,
    /// An allocation of its own: the caller frees it (`cuMemFree`).
    Own,
}

impl Heap {
    /// Forgets the live allocation at `ptr` (`None` when there is none).
    fn release(&mut self, ptr: u64) -> Option<Released> {
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
/// included) with copies on the legacy stream ([`write_on_legacy_stream`]), which
/// relok's streams (blocking ones) wait for, as they do for synchronous
/// copies; slots freed are taken again only by later allocations, whose
/// copies are ordered after every launch before them. As past the
/// driver's own pooled allocations, a kernel's write past the end of a
/// small buffer lands in a neighbour (another buffer, or one of relok's
/// objects) instead of faulting; checked kernels refuse such writes where
/// they check (docs/cuda.md, "Checked mode", says where they do not).
#[derive(Debug)]
struct SmallBlocks {
    base: u64,
    /// One bit per slot, set while taken.
    used: [u64; SmallBlocks::SLOTS / 64],
    /// Slots not taken: a request for more fails without a search.
    free: usize,
}

impl SmallBlocks {
    const SLOT: u64 = 64;
    const SLOTS: usize = 1024;
    /// The block's size (64 KiB).
    const BYTES: u64 = SmallBlocks::SLOT * SmallBlocks::SLOTS as u64;
    /// The largest object taken from the block.
    const MAX: u64 = 4096;

    fn new(base: u64) -> SmallBlocks {
        SmallBlocks { base, used: [0; SmallBlocks::SLOTS / 64], free: SmallBlocks::SLOTS }
    }

    fn slots(bytes: u64) -> usize {
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
    fn take(&mut self, bytes: u64) -> Option<u64> {
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
    fn holds(&self, ptr: u64) -> bool {
        (self.base..self.base + SmallBlocks::BYTES).contains(&ptr)
    }

    /// Frees the slots of the object of `bytes` at `ptr`; false when it
    /// is not in the block.
    fn give_back(&mut self, ptr: u64, bytes: u64) -> bool {
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
unsafe fn zero_on_stream(stream: sys::CUstream, dst: u64, len: u64) -> Result<(), DeviceError> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(ZEROS.len() as u64);
        // SAFETY: by the caller's contract; `ZEROS` lives as long as the
        // process and is never written.
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst + done, ZEROS.as_ptr().cast(), n as usize, stream) }
            .result()
            .map_err(driver("cuMemcpyHtoDAsync"))?;
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
struct Staging {
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

    fn new(ctx: &Arc<CudaContext>) -> Staging {
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
    unsafe fn write(&mut self, dst: u64, bytes: &[u8]) -> Result<(), DeviceError> {
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
        let copied =
            unsafe { sys::cuMemcpyHtoDAsync_v2(dst, staged.as_ptr().cast(), staged.len(), std::ptr::null_mut()) }
                .result()
                .map_err(driver("cuMemcpyHtoDAsync"));
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
struct TableAlloc {
    ctx: Arc<CudaContext>,
    heap: Arc<Mutex<Heap>>,
    ptr: u64,
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

/// A CUDA stream of one device. Launches are enqueued with
/// `cuLaunchKernel` on it and return at once; each kernel launched on the
/// stream gets an exception record of its own there (from the device's
/// `RecordPool`), so the first failure names its kernel; `synchronize`
/// reads the records used since the last synchronisation, in order of
/// first use, with copies on the stream and a wait for it
/// (`cuStreamSynchronize`; only the wait when no kernel ran).
#[derive(Debug)]
pub struct CudaStream {
    device: DeviceId,
    ctx: Arc<CudaContext>,
    raw: sys::CUstream,
    /// Where `raw` goes back when the stream drops.
    pool: Arc<StreamPool>,
    records: Arc<RecordPool>,
    state: Mutex<StreamRecords>,
}

// SAFETY: the stream handle belongs to `ctx` (kept alive here) and is only
// used with it bound; the records are behind the mutex.
unsafe impl Send for CudaStream {}
// SAFETY: as for Send.
unsafe impl Sync for CudaStream {}

#[derive(Debug, Default)]
struct StreamRecords {
    /// (kernel, its entry, its record on this stream).
    records: Vec<(std::sync::Weak<CudaKernel>, String, Record)>,
    /// Indices into `records` used since the last synchronisation, in
    /// order of first use.
    used: Vec<usize>,
    /// The kernels of those launches, held until the stream passes them:
    /// their modules must not be unloaded under a running launch.
    alive: Vec<Arc<CudaKernel>>,
    threads: u64,
}

impl CudaStream {
    /// The record of `kernel` on this stream (made on its first launch
    /// here), marked used; its device address.
    fn record_for(&self, state: &mut StreamRecords, kernel: &Arc<CudaKernel>) -> Result<u64, DeviceError> {
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
    fn wait_and_read(&self, state: &mut StreamRecords) -> Result<Option<(String, Thrown)>, DeviceError> {
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

impl Backend for CudaDevice {
    type Kernel = CudaKernel;
    type Stream = CudaStream;

    fn target(&self) -> CodeTarget {
        CudaDevice::target(self)
    }

    /// Loads the request's artifact once per artifact key and session on
    /// this device; with a source key, also writes its load record (see
    /// "Load records" in the module docs).
    fn load(&self, session: &Session, request: &LoadRequest<'_>) -> Result<Arc<CudaKernel>, crate::ProgramError> {
        let LoadRequest { artifact, source, validated } = *request;
        load_once(&self.loaded, self.id, session, artifact, || {
            let (kernel, cubin) = self.load_new(session, artifact, validated)?;
            if let (Some(source), Some(cubin)) = (source, cubin) {
                self.write_record(source, artifact, &cubin);
            }
            Ok(kernel)
        })
    }

    fn load_by_source(
        &self,
        session: &Session,
        source: Key,
        entry: &str,
        strategy: Strategy,
    ) -> Result<Option<Arc<CudaKernel>>, crate::ProgramError> {
        self.load_record(session, source, entry, strategy)
    }

    fn entry(kernel: &CudaKernel) -> &str {
        &kernel.entry
    }

    fn params(kernel: &CudaKernel) -> &[relok_ir::Type] {
        &kernel.params
    }

    fn new_stream(&self) -> Result<CudaStream, DeviceError> {
        let RawStream(raw) = self.streams.take()?;
        Ok(CudaStream {
            device: self.id,
            ctx: Arc::clone(&self.ctx),
            raw,
            pool: Arc::clone(&self.streams),
            records: Arc::clone(&self.records),
            state: Mutex::default(),
        })
    }

    fn enqueue(
        &self,
        stream: &CudaStream,
        kernel: &Arc<CudaKernel>,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<(), LaunchError> {
        let err = |error| LaunchError::Device { kernel: kernel.entry.clone(), error };
        if kernel.device != self.id {
            return Err(crate::backend::wrong_device(&kernel.entry, "the kernel", kernel.device, self.id));
        }
        if stream.device != self.id {
            return Err(crate::backend::wrong_device(&kernel.entry, "the stream", stream.device, self.id));
        }
        let threads = check_config(&kernel.entry, config)?;
        let mut values = self.launch_values(kernel, args)?;
        self.bind().map_err(err)?;
        let mut state = lock(&stream.state);
        let exception = stream.record_for(&mut state, kernel).map_err(err)?;
        let mut ks = KernelState { reloc_table: kernel.table_word(), exception, rng_seed };
        let mut params = kernel_params(&mut ks, &mut values);
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        // SAFETY: the function belongs to the kernel's module, kept alive
        // by the caller's `Arc` until the stream passes the launch (the
        // facade holds it; `synchronize` waits); `params` points into `ks`
        // and `values`, which the driver copies before returning; the
        // arguments were checked against the ABI the function was checked
        // against at load (`Fit`); the context is bound above; the stream is
        // this context's.
        unsafe { result::launch_kernel(kernel.function, (gx, gy, gz), (bx, by, bz), 0, stream.raw, &mut params) }
            .map_err(driver("cuLaunchKernel"))
            .map_err(err)?;
        state.threads = state.threads.saturating_add(threads);
        Ok(())
    }

    fn synchronize(&self, stream: &CudaStream) -> Result<crate::LaunchStats, LaunchError> {
        // Held across the wait: a launch enqueued meanwhile (which takes
        // this lock) is either waited for and read here, or left entirely
        // to the next synchronisation — never read before it ran.
        let mut state = lock(&stream.state);
        let first_kernel = state.used.first().map(|&i| state.records[i].1.clone()).unwrap_or_default();
        let err = |error| LaunchError::Device { kernel: first_kernel.clone(), error };
        self.bind().map_err(err)?;
        let threads = std::mem::take(&mut state.threads);
        // Passed: the stream no longer needs its kernels loaded (dropped
        // after the lock, a last holder unloads the module).
        let alive = std::mem::take(&mut state.alive);
        let read = stream.wait_and_read(&mut state);
        // Records of kernels that are gone go back to the pool (unless the
        // reading failed: they are to be read again, by index).
        if state.used.is_empty() {
            state.records.retain(|(k, ..)| k.strong_count() > 0);
        }
        drop(state);
        drop(alive);
        match read.map_err(err)? {
            Some((entry, t)) => Err(crate::backend::thrown_error(&entry, t, None)),
            None => Ok(crate::LaunchStats { steps: 0, threads }),
        }
    }

    fn live_allocations(&self) -> u64 {
        lock(&self.heap).live.len() as u64
    }
}
