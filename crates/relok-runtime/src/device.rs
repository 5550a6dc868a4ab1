//! One trait over the devices, in the manner of wgpu-hal's `Api`: each of
//! cpu, cuda and wgpu implements [`Backend`] (memory, load, streams,
//! launch) in its own module, and [`Device`] is the one place that
//! dispatches over them (and the one place for the `cuda`/`wgpu` feature
//! `cfg`s). Everything above — the kernel cache, the CLI, the `relok`
//! facade — is written once for every device.
//!
//! ```text
//! Device::open("best")
//!   ─► Device::load(session, cache, module, "saxpy", strategy, source)      a module, compiled on a miss
//!      Device::load_by_source(session, cache, source, "saxpy", strategy)  a source key, no compile
//!      Device::load_artifact(session, &LoadRequest::new(&artifact))       an artifact of the caller's
//!   ─► crate::load walks the tiers (KernelCache, the device's own tier) ─► Backend::load(LoadRequest)
//!   ─► words delivered (`deliver_words`, one function for every device) and placed as the device
//!      places them (table buffer, patch cells, baked) ─► Kernel
//! Device::stream() ─► Device::enqueue(stream, kernel, config, args)   (returns at once)
//!                 ─► Device::synchronize(session, stream)              (waits; exceptions here)
//! ```
//!
//! # Streams
//!
//! A stream is an ordered queue of launches on one device. `enqueue` checks
//! the geometry and the arguments against the kernel's signature (an error
//! now, before anything reaches the device) and returns without waiting.
//! What happens on the device — a kernel exception, a fault the cpu device
//! detects — is reported by the next `synchronize` of that stream (CUDA.jl's
//! rule), as the first failure since the previous synchronisation, with the
//! kernel, block and thread; the stream stays usable afterwards. Launches
//! after a failing one still run. Per device: the cpu device runs each
//! launch when it is enqueued; cuda launches on a CUDA stream of its own
//! (several streams run concurrently); wgpu records launches into a command
//! encoder submitted in batches (at synchronisation, at a read, or every
//! [`crate::wgpu::LAUNCHES_PER_SUBMIT`] launches).
//!
//! Kernel memory: a loaded kernel owns what its loading allocated (its
//! table buffer, its module) and frees it on drop; the device's map of
//! loaded kernels holds them weakly, so a kernel is loaded once while
//! anyone holds it and freed when the last holder drops it.

use crate::backend::Backend;
use crate::cache::KernelCache;
use crate::cpu::CpuDevice;
use crate::error::{DeviceError, LaunchError, ProgramError};
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, LaunchStats};
use crate::load::{self, LoadRequest};
use crate::memory::{DeviceId, DeviceMemory};
use crate::session::Session;
use relok_cache::Key;
use relok_compiler::artifact::CodeTarget;
use relok_ir::{Strategy, Type, VerifiedModule};
use std::sync::Arc;

/// Why a device could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The spec names no kind of device.
    #[error("unknown device `{spec}` (expected cpu[:N], cuda[:N], wgpu[:N] or best)")]
    UnknownDevice {
        /// What was asked for.
        spec: String,
    },
    /// The ordinal after `:` is not a number.
    #[error("bad device ordinal `{ordinal}` in `{spec}`")]
    BadOrdinal {
        /// What was asked for.
        spec: String,
        /// The part after `:`.
        ordinal: String,
    },
    /// This build has no support for that kind of device.
    #[error("device `{spec}`: this relok was built without the `{feature}` feature")]
    NotBuilt {
        /// What was asked for.
        spec: String,
        /// The missing cargo feature.
        feature: &'static str,
    },
    /// No driver, no such device, or the driver refused to open it.
    #[error("device `{spec}`: {reason}")]
    NotAvailable {
        /// What was asked for.
        spec: String,
        /// The driver's or the runtime's reason.
        reason: String,
    },
}

/// A device of any kind, as the command line and applications pick one:
/// the one dispatch over [`Backend`]s.
#[derive(Debug)]
pub enum Device {
    /// The cpu reference device.
    Cpu(CpuDevice),
    /// A GPU through the CUDA driver.
    #[cfg(feature = "cuda")]
    Cuda(crate::cuda::CudaDevice),
    /// An adapter through wgpu (Vulkan, Metal, DX12).
    #[cfg(feature = "wgpu")]
    Wgpu(Box<crate::wgpu::WgpuDevice>),
}

/// How a device obtained the machine code of the kernels it loaded, by
/// [`Device::code_stats`]. On cuda each load counts once in one field; on
/// wgpu every pipeline is compiled by the driver (`jit`; its pipeline
/// cache may make that cheap, see `relok_runtime::wgpu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CodeStats {
    /// Loaded from the device's binary archive on disk: no compile.
    pub archived: u64,
    /// Of `archived`, kernels loaded from a load record (cuda): the
    /// artifact and its cubin in one entry, so the kernel cache was not
    /// asked ([`Device::load_by_source`]).
    pub records: u64,
    /// Loaded from a bundle the application shipped: no compile.
    pub bundled: u64,
    /// Compiled by relok before loading (PTX linked into a cubin by the
    /// driver's linker), then archived.
    pub linked: u64,
    /// Left to the driver's just-in-time compiler.
    pub jit: u64,
}

/// A kernel loaded on a [`Device`] (cheap to clone; freed when the last
/// clone drops).
#[derive(Debug, Clone)]
pub enum Kernel {
    /// On the cpu device.
    Cpu(Arc<crate::cpu::CpuKernel>),
    /// On a cuda device.
    #[cfg(feature = "cuda")]
    Cuda(Arc<crate::cuda::CudaKernel>),
    /// On a wgpu device.
    #[cfg(feature = "wgpu")]
    Wgpu(Arc<crate::wgpu::WgpuKernel>),
}

/// A stream of a [`Device`] (see the module docs).
#[derive(Debug)]
pub enum Stream {
    /// Of the cpu device.
    Cpu(crate::cpu::CpuStream),
    /// Of a cuda device.
    #[cfg(feature = "cuda")]
    Cuda(crate::cuda::CudaStream),
    /// Of a wgpu device.
    #[cfg(feature = "wgpu")]
    Wgpu(crate::wgpu::WgpuStream),
}

/// Runs `$body` with `$d` bound to the backend of `$device` (and each
/// further pattern bound to that backend's variant of its enum); a
/// mismatch of kinds evaluates `$other`.
macro_rules! dispatch {
    ($device:expr, |$d:ident $(, $v:ident = $e:expr => $enm:ident)*| $body:expr, $other:expr) => {
        match $device {
            Device::Cpu($d) => {
                $(
                    #[cfg_attr(
                        not(any(feature = "cuda", feature = "wgpu")),
                        expect(irrefutable_let_patterns, reason = "the cpu device is the only kind in this build")
                    )]
                    let $enm::Cpu($v) = $e else { return $other };
                )*
                $body
            }
            #[cfg(feature = "cuda")]
            Device::Cuda($d) => {
                $(let $enm::Cuda($v) = $e else { return $other };)*
                $body
            }
            #[cfg(feature = "wgpu")]
            Device::Wgpu($d) => {
                let $d = $d.as_ref();
                $(let $enm::Wgpu($v) = $e else { return $other };)*
                $body
            }
        }
    };
}

impl From<Arc<crate::cpu::CpuKernel>> for Kernel {
    fn from(k: Arc<crate::cpu::CpuKernel>) -> Kernel {
        Kernel::Cpu(k)
    }
}

#[cfg(feature = "cuda")]
impl From<Arc<crate::cuda::CudaKernel>> for Kernel {
    fn from(k: Arc<crate::cuda::CudaKernel>) -> Kernel {
        Kernel::Cuda(k)
    }
}

#[cfg(feature = "wgpu")]
impl From<Arc<crate::wgpu::WgpuKernel>> for Kernel {
    fn from(k: Arc<crate::wgpu::WgpuKernel>) -> Kernel {
        Kernel::Wgpu(k)
    }
}

impl Kernel {
    /// The kernel's entry name.
    pub fn entry(&self) -> &str {
        match self {
            Kernel::Cpu(k) => <CpuDevice as Backend>::entry(k),
            #[cfg(feature = "cuda")]
            Kernel::Cuda(k) => <crate::cuda::CudaDevice as Backend>::entry(k),
            #[cfg(feature = "wgpu")]
            Kernel::Wgpu(k) => <crate::wgpu::WgpuDevice as Backend>::entry(k),
        }
    }

    /// The kernel's parameter types (the kernel state excluded).
    pub fn params(&self) -> &[Type] {
        match self {
            Kernel::Cpu(k) => <CpuDevice as Backend>::params(k),
            #[cfg(feature = "cuda")]
            Kernel::Cuda(k) => <crate::cuda::CudaDevice as Backend>::params(k),
            #[cfg(feature = "wgpu")]
            Kernel::Wgpu(k) => <crate::wgpu::WgpuDevice as Backend>::params(k),
        }
    }
}

impl Device {
    /// Opens the device `spec` names: `cpu[:N]`, `cuda[:N]`, `wgpu[:N]`
    /// (the N-th adapter wgpu lists, narrowed by `RELOK_WGPU_ADAPTER`), or
    /// `best`: the first CUDA GPU, else the first wgpu adapter that is a
    /// GPU (not a software rasteriser), else `cpu:0`. GPU devices get the
    /// binary archive the environment names (under
    /// [`relok_cache::default_root`], unless `RELOK_BINARY_CACHE=off` or
    /// `RELOK_CACHE=off`).
    pub fn open(spec: &str) -> Result<Device, OpenError> {
        let off = relok_cache::switched_off("RELOK_BINARY_CACHE");
        Device::open_in(spec, relok_cache::default_root().filter(|_| !off).as_deref())
    }

    /// [`Device::open`] with the binary archive under cache root
    /// `archive_root` (`None`: no archive): an explicit choice, so
    /// `RELOK_CACHE_DIR`, `RELOK_CACHE` and `RELOK_BINARY_CACHE` are not
    /// read.
    pub fn open_in(spec: &str, archive_root: Option<&std::path::Path>) -> Result<Device, OpenError> {
        let (kind, ordinal) = match spec.split_once(':') {
            Some((k, n)) => (
                k,
                n.parse::<u32>().map_err(|_| OpenError::BadOrdinal { spec: spec.to_owned(), ordinal: n.to_owned() })?,
            ),
            None => (spec, 0),
        };
        #[cfg(any(feature = "cuda", feature = "wgpu"))]
        let unavailable =
            |e: &dyn std::fmt::Display| OpenError::NotAvailable { spec: spec.to_owned(), reason: e.to_string() };
        #[cfg(not(any(feature = "cuda", feature = "wgpu")))]
        let _ = archive_root;
        match kind {
            "cpu" => Ok(Device::Cpu(CpuDevice::new(ordinal))),
            #[cfg(feature = "cuda")]
            "cuda" => {
                crate::startup::beside(|| crate::cuda::CudaDevice::open_with_archive(ordinal as usize, archive_root))
                    .map(Device::Cuda)
                    .map_err(|e| unavailable(&e))
            }
            #[cfg(not(feature = "cuda"))]
            "cuda" => Err(OpenError::NotBuilt { spec: spec.to_owned(), feature: "cuda" }),
            #[cfg(feature = "wgpu")]
            "wgpu" => crate::startup::beside(|| {
                crate::wgpu::WgpuDevice::open_in(ordinal as usize, archive_root.map(std::path::Path::to_path_buf))
            })
            .map(|d| Device::Wgpu(Box::new(d)))
            .map_err(|e| unavailable(&e)),
            #[cfg(not(feature = "wgpu"))]
            "wgpu" => Err(OpenError::NotBuilt { spec: spec.to_owned(), feature: "wgpu" }),
            "best" if ordinal == 0 && !spec.contains(':') => Ok(Device::best(archive_root)),
            _ => Err(OpenError::UnknownDevice { spec: spec.to_owned() }),
        }
    }

    /// What `best` names on this machine: `cuda:0` when the driver sees a
    /// GPU, else the first wgpu adapter that is a GPU, else `cpu:0`.
    pub fn best_spec() -> String {
        #[cfg(feature = "cuda")]
        if crate::cuda::device_count() > 0 {
            return "cuda:0".into();
        }
        #[cfg(feature = "wgpu")]
        if let Some(a) = crate::wgpu::list_adapters().into_iter().find(|a| a.hardware) {
            return format!("wgpu:{}", a.ordinal);
        }
        "cpu:0".into()
    }

    /// The device [`Device::best_spec`] names; the cpu device if it does not
    /// open.
    fn best(archive_root: Option<&std::path::Path>) -> Device {
        let spec = Device::best_spec();
        match spec.as_str() {
            "cpu:0" => Device::Cpu(CpuDevice::new(0)),
            _ => Device::open_in(&spec, archive_root).unwrap_or_else(|e| {
                tracing::warn!("best: {e}; using the cpu device");
                Device::Cpu(CpuDevice::new(0))
            }),
        }
    }

    /// The device's binary archive (machine code: cubins, the pipeline-cache
    /// blob), if it has one; the cpu device has none.
    pub fn archive(&self) -> Option<&relok_cache::Store> {
        match self {
            Device::Cpu(_) => None,
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => d.archive(),
            #[cfg(feature = "wgpu")]
            Device::Wgpu(d) => d.archive(),
        }
    }

    /// `cpu:0`, `cuda:0 (NVIDIA H200, sm_90)`, `wgpu:0 (llvmpipe, vulkan)`.
    pub fn name(&self) -> String {
        match self {
            Device::Cpu(d) => format!("cpu:{}", d.ordinal()),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => format!("cuda:{} ({}, sm_{})", d.ordinal(), d.name(), d.sm()),
            #[cfg(feature = "wgpu")]
            Device::Wgpu(d) => format!("wgpu:{} ({}, {})", d.ordinal(), d.info().name, d.info().backend.to_str()),
        }
    }

    /// The code target of this device's artifacts.
    pub fn target(&self) -> CodeTarget {
        dispatch!(self, |d| d.target(), ())
    }

    /// The strategies kernels can be loaded with here: all of them, but
    /// `patch` on wgpu (a loader cannot write a WGSL module's globals).
    pub fn strategies(&self) -> &'static [Strategy] {
        self.target().strategies()
    }

    /// The cpu device, if this is one.
    pub fn as_cpu(&self) -> Option<&CpuDevice> {
        match self {
            Device::Cpu(d) => Some(d),
            #[cfg(any(feature = "cuda", feature = "wgpu"))]
            _ => None,
        }
    }

    /// Live allocations of device memory (see [`Backend::live_allocations`]).
    pub fn live_allocations(&self) -> u64 {
        dispatch!(self, |d| d.live_allocations(), ())
    }

    /// `kernel` of `module` for this device with `strategy`, through the
    /// kernel cache (memory, bundles, the artifact store, else a compile),
    /// loaded with the session's words delivered. With `source` (the source
    /// key of the module's text, [`KernelCache::source_key`]) the kernel is
    /// remembered under it for [`Device::load_by_source`] (see
    /// [`crate::load::by_module`]).
    pub fn load(
        &self,
        session: &Session,
        cache: &KernelCache,
        module: &VerifiedModule,
        kernel: &str,
        strategy: Strategy,
        source: Option<Key>,
    ) -> Result<Kernel, ProgramError> {
        dispatch!(self, |d| load::by_module(d, session, cache, module, kernel, strategy, source).map(Kernel::from), ())
    }

    /// Kernel `entry` by its source key `source` ([`KernelCache::source_key`]
    /// of its text, for this device's target and `strategy`), if a tier
    /// holds it without compiling: this process's memory, the device's own
    /// tier (cuda's load records), then the kernel cache's bundles and
    /// store (see [`crate::load::by_source`]). `Ok(None)`: compile it with
    /// [`Device::load`].
    pub fn load_by_source(
        &self,
        session: &Session,
        cache: &KernelCache,
        source: Key,
        entry: &str,
        strategy: Strategy,
    ) -> Result<Option<Kernel>, ProgramError> {
        dispatch!(self, |d| Ok(load::by_source(d, session, cache, source, entry, strategy)?.map(Kernel::from)), ())
    }

    /// Loads an artifact compiled for this device's target
    /// ([`LoadRequest::new`]: validated first; with a source key, a cuda
    /// device with a binary archive keeps a load record under it).
    pub fn load_artifact(&self, session: &Session, request: &LoadRequest<'_>) -> Result<Kernel, ProgramError> {
        dispatch!(self, |d| d.load(session, request).map(Kernel::from), ())
    }

    /// A new stream of this device.
    pub fn stream(&self) -> Result<Stream, DeviceError> {
        match self {
            Device::Cpu(d) => d.new_stream().map(Stream::Cpu),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => d.new_stream().map(Stream::Cuda),
            #[cfg(feature = "wgpu")]
            Device::Wgpu(d) => d.new_stream().map(Stream::Wgpu),
        }
    }

    /// Checks a launch and enqueues it on `stream` without waiting (see the
    /// module docs). A kernel or stream of another kind of device is
    /// refused.
    pub fn enqueue(
        &self,
        stream: &Stream,
        kernel: &Kernel,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<(), LaunchError> {
        let foreign = || {
            Err(LaunchError::Device {
                kernel: kernel.entry().to_owned(),
                error: DeviceError::Driver {
                    call: "launch",
                    message: format!("kernel or stream of another device than {}", self.name()),
                },
            })
        };
        dispatch!(self, |d, k = kernel => Kernel, s = stream => Stream| d.enqueue(s, k, config, args, rng_seed), foreign())
    }

    /// Waits for `stream`; a kernel exception comes back with its message's
    /// text (see the module docs).
    pub fn synchronize(&self, session: &Session, stream: &Stream) -> Result<LaunchStats, ProgramError> {
        let foreign = || {
            Err(ProgramError::Launch(LaunchError::Device {
                kernel: String::new(),
                error: DeviceError::Driver {
                    call: "synchronize",
                    message: format!("stream of another device than {}", self.name()),
                },
            }))
        };
        let result = dispatch!(self, |d, s = stream => Stream| d.synchronize(s), foreign());
        result.map_err(|e| crate::backend::with_message(session, self, e))
    }

    /// Enqueues one launch and waits for it: [`Device::enqueue`], then
    /// [`Device::synchronize`].
    pub fn launch(
        &self,
        session: &Session,
        stream: &Stream,
        kernel: &Kernel,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<LaunchStats, ProgramError> {
        self.enqueue(stream, kernel, config, args, 0)?;
        self.synchronize(session, stream)
    }

    /// Registers per thread of `kernel`'s machine code, where the device
    /// reports them: on cuda the driver's count (`CudaDevice::registers`);
    /// none on the cpu device (an interpreter) and on wgpu (no API reports
    /// them).
    pub fn registers(&self, kernel: &Kernel) -> Result<Option<u32>, DeviceError> {
        match (self, kernel) {
            #[cfg(feature = "cuda")]
            (Device::Cuda(d), Kernel::Cuda(k)) => d.registers(k).map(Some),
            _ => Ok(None),
        }
    }

    /// Makes a bundle's artifacts available to `cache` and gives this
    /// device the bundle's machine code for it (cubins on cuda; the other
    /// devices have none to take). Returns the number of artifacts.
    pub fn load_bundle(&self, cache: &KernelCache, bytes: &[u8]) -> Result<usize, relok_cache::bundle::BundleError> {
        Ok(self.take_machine_code(cache.load_bundle(bytes)?))
    }

    /// [`Device::load_bundle`] of a bundle the program embeds
    /// ([`KernelCache::load_static_bundle`]: not copied).
    pub fn load_static_bundle(
        &self,
        cache: &KernelCache,
        bytes: &'static [u8],
    ) -> Result<usize, relok_cache::bundle::BundleError> {
        Ok(self.take_machine_code(cache.load_static_bundle(bytes)?))
    }

    /// Keeps a loaded bundle's machine code for this device; the number of
    /// its artifacts.
    fn take_machine_code(&self, contents: crate::BundleContents) -> usize {
        #[cfg(feature = "cuda")]
        if let Device::Cuda(d) = self {
            d.add_machine_code(&contents.machine_code);
        }
        contents.artifacts
    }

    /// How this device obtained the machine code of the kernels it loaded
    /// (all zero on the cpu device, which interprets the IR).
    pub fn code_stats(&self) -> CodeStats {
        match self {
            Device::Cpu(_) => CodeStats::default(),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => {
                let s = d.load_stats();
                CodeStats {
                    archived: s.archive_hits,
                    records: s.records,
                    bundled: s.bundled,
                    linked: s.linked,
                    jit: s.ptx_jit,
                }
            }
            #[cfg(feature = "wgpu")]
            Device::Wgpu(d) => CodeStats { jit: d.load_stats().pipelines, ..CodeStats::default() },
        }
    }

    /// The device's memory, whatever its kind.
    fn memory(&self) -> &dyn DeviceMemory {
        dispatch!(self, |d| d, ())
    }
}

impl DeviceMemory for Device {
    fn device_id(&self) -> DeviceId {
        self.memory().device_id()
    }
    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        self.memory().alloc_zeroed(bytes)
    }
    fn alloc_object(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        self.memory().alloc_object(bytes)
    }
    fn alloc_filled(&self, bytes: &[u8]) -> Result<DevicePtr, DeviceError> {
        self.memory().alloc_filled(bytes)
    }
    fn alloc_object_filled(&self, bytes: &[u8]) -> Result<DevicePtr, DeviceError> {
        self.memory().alloc_object_filled(bytes)
    }
    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        self.memory().write_bytes(ptr, bytes)
    }
    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        self.memory().read_bytes(ptr, len)
    }
    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        self.memory().free_bytes(ptr)
    }
    fn seal_value(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        self.memory().seal_value(ptr)
    }
}
