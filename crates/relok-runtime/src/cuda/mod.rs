//! The cuda device (docs/design.md §6): PTX artifacts run through the CUDA driver.
//!
//! The driver is loaded at run time (cudarc with `dynamic-loading`): a build
//! needs no CUDA, and on a machine without a driver [`CudaDevice::open`]
//! answers [`CudaError::NotAvailable`] so callers fall back to the cpu
//! device.
//!
//! Layers, as cudarc's own: `cudarc::driver::result` holds one thin call
//! per driver function, and `driver` relok's own, one for each driver
//! function relok calls through `cudarc::driver::sys` itself; this module
//! owns what they return — a [`CudaContext`] (the GPU's primary context)
//! per device, a [`PtxModule`] per loaded artifact (unloaded on drop), the
//! device allocations — and exposes them safely.
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
//! [`DeviceMemory::seal_value`](crate::DeviceMemory::seal_value); 0 while
//! nothing is sealed), written before the launch when it changed. The
//! faults it records are decoded as the wgpu device's
//! (`backend::thrown_error`).
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
//!
//! # Files
//!
//! - `mod.rs` (here): [`CudaError`], [`driver_present`], [`device_count`],
//!   [`CudaDevice`] and its opening and identity;
//! - `driver.rs`: the thin calls of the driver functions relok calls
//!   through `cudarc::driver::sys` (`cuDriverGetVersion`, `cuDeviceGet`,
//!   `cuFuncLoad`, `cuFuncGetParamInfo`, `cuLink*`, `cuMemcpyHtoDAsync`),
//!   each with its driver API documentation and a driver failure as a
//!   [`DeviceError`] naming the call;
//! - `memory.rs`: the device's allocations — the heap of live allocations,
//!   the small-object block (`SmallBlocks`), staged uploads (`Staging`),
//!   kernels' table buffers, checked mode's seal table (`Seals`) — and the
//!   [`DeviceMemory`](crate::DeviceMemory) impl;
//! - `stream.rs`: [`CudaStream`], the pool of idle streams, and the
//!   exception records (`RecordPool`) and their reading;
//! - `module.rs`: [`PtxModule`], linking PTX into a cubin, the ELF checks,
//!   where a load's machine code comes from (bundles, the binary archive, a
//!   link, the JIT), the check of a function's parameters (`Fit`), the
//!   words' delivery, [`CudaLoadStats`];
//! - `load_record.rs`: load records (see above);
//! - `launch.rs`: [`CudaKernel`], launching (blocking and on streams), and
//!   the [`Backend`](crate::Backend) impl;
//! - [`timing`]: the benchmarks' timing loops (`relok bench cuda`,
//!   `relok bench launch`);
//! - `tests.rs`: the unit tests (those that need no GPU).

mod driver;
mod launch;
mod load_record;
mod memory;
mod module;
mod stream;
#[cfg(test)]
mod tests;
pub mod timing;

pub use launch::CudaKernel;
pub use module::{CudaLoadStats, PtxModule};
pub use stream::CudaStream;

use crate::backend::LoadedKernels;
use crate::error::DeviceError;
use crate::memory::{DeviceId, DeviceKind};
use cudarc::driver::{CudaContext, result};
use driver::driver;
use memory::{Heap, Seals, SmallBlocks, Staging, ready_copies};
use module::CodeStats;
use relok_cache::{Key, Store};
use relok_compiler::artifact::{Artifact, CodeTarget};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use stream::{RecordPool, StreamPool};

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

/// Whether a CUDA driver can be loaded on this machine.
pub fn driver_present() -> bool {
    driver::library_present()
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
/// which must not exist
/// ([`check_function_params`](module::check_function_params)). The call
/// asks for GPU `count`, which does not exist; it changes nothing, but
/// tools that report failed driver calls (a driver log, `CUDA_LOG_FILE`;
/// compute-sanitizer; cuda-gdb's `api_failures`) show it as an invalid
/// device ordinal, as they show each load's probe.
fn ready_error_path(count: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = std::thread::Builder::new().name("relok-cuda-ready".into()).spawn(move || {
            let past = i32::try_from(count).unwrap_or(i32::MAX);
            // The ordinal is past the last GPU the driver reports, so the
            // call fails.
            let _ = driver::device_get(past);
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
        let version = driver::driver_get_version()?;
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

    /// Whether the driver reports a function's parameters
    /// (`cuFuncGetParamInfo`, CUDA 12.4).
    fn reports_params(&self) -> bool {
        self.driver_version >= PARAM_INFO_DRIVER
    }
}
