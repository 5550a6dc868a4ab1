//! What the session and the loader need of every device: an identity and
//! global memory. The cpu, cuda and wgpu devices implement
//! [`DeviceMemory`]; [`crate::Session`] resolves words through it, so a
//! value's copy and a global's cell live in the memory of the device whose
//! word is asked for.

use crate::cpu::{CpuDevice, DeviceError, DevicePtr};
use crate::session::DeviceId;
use relok_compiler::state::ExceptionLayout;

/// What a kernel threw, as a GPU device reads it from the launch's
/// exception record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thrown {
    /// The message's word.
    pub message_word: u64,
    /// The throwing block.
    pub block: [u32; 3],
    /// The throwing thread.
    pub thread: [u32; 3],
}

impl Thrown {
    /// Decodes an exception record's words (`EXCEPTION_LAYOUT`): `None`
    /// while its flag is clear (or the record is short).
    pub fn from_record(words: &[u64]) -> Option<Thrown> {
        if words.len() < ExceptionLayout::WORDS as usize || words[ExceptionLayout::FLAG_WORD as usize] == 0 {
            return None;
        }
        let three = |base: u32| [0, 1, 2].map(|k| words[(base + k) as usize] as u32);
        Some(Thrown {
            message_word: words[ExceptionLayout::MESSAGE_WORD as usize],
            block: three(ExceptionLayout::BLOCK_WORD),
            thread: three(ExceptionLayout::THREAD_WORD),
        })
    }
}

/// A device's identity and its global memory, as the host sees it.
pub trait DeviceMemory {
    /// The identity words are valid for (distinct for every open device).
    fn device_id(&self) -> DeviceId;
    /// `bytes` of global memory, zero-filled.
    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError>;
    /// `bytes` for a host object (a value's copy, a runtime global's cell),
    /// zero-filled: where the session puts what its words point to. A
    /// device whose kernels reach host objects through one heap (wgpu)
    /// allocates them there; others as any global memory.
    fn alloc_object(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        self.alloc_zeroed(bytes)
    }
    /// Copies `bytes` to `ptr`.
    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError>;
    /// Copies `len` bytes from `ptr`.
    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError>;
    /// Frees an allocation.
    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError>;
}

impl DeviceMemory for CpuDevice {
    fn device_id(&self) -> DeviceId {
        DeviceId::of(self)
    }
    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        self.alloc(bytes)
    }
    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        self.write(ptr, bytes)
    }
    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        self.read(ptr, len)
    }
    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        self.free(ptr)
    }
}

/// A device of any kind, as the command line and applications pick one.
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

impl Device {
    /// Opens the device `spec` names: `cpu[:N]`, `cuda[:N]`, `wgpu[:N]`
    /// (the N-th adapter wgpu lists, narrowed by `RELOK_WGPU_ADAPTER`), or
    /// `best`: the first CUDA GPU, else the first wgpu adapter that is a
    /// GPU (not a software rasteriser), else `cpu:0`. GPU devices get the
    /// binary archive the environment names.
    pub fn open(spec: &str) -> Result<Device, String> {
        let (kind, ordinal) = match spec.split_once(':') {
            Some((k, n)) => (k, n.parse::<u32>().map_err(|_| format!("bad device ordinal `{n}` in `{spec}`"))?),
            None => (spec, 0),
        };
        match kind {
            "cpu" => Ok(Device::Cpu(CpuDevice::new(ordinal))),
            #[cfg(feature = "cuda")]
            "cuda" => crate::cuda::CudaDevice::open_with_archive(ordinal as usize)
                .map(Device::Cuda)
                .map_err(|e| format!("device `{spec}`: {e}")),
            #[cfg(not(feature = "cuda"))]
            "cuda" => Err(format!("device `{spec}`: this relok was built without the `cuda` feature")),
            #[cfg(feature = "wgpu")]
            "wgpu" => crate::wgpu::WgpuDevice::open_with_archive(ordinal as usize)
                .map(|d| Device::Wgpu(Box::new(d)))
                .map_err(|e| format!("device `{spec}`: {e}")),
            #[cfg(not(feature = "wgpu"))]
            "wgpu" => Err(format!("device `{spec}`: this relok was built without the `wgpu` feature")),
            "best" => Ok(Device::best()),
            _ => Err(format!("unknown device `{spec}` (expected cpu[:N], cuda[:N], wgpu[:N] or best)")),
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
    fn best() -> Device {
        let spec = Device::best_spec();
        match spec.as_str() {
            "cpu:0" => Device::Cpu(CpuDevice::new(0)),
            _ => Device::open(&spec).unwrap_or_else(|e| {
                tracing::warn!("best: {e}; using the cpu device");
                Device::Cpu(CpuDevice::new(0))
            }),
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

    /// The strategies kernels can be loaded with here: all of them, but
    /// `patch` on wgpu (a loader cannot write a WGSL module's globals).
    pub fn strategies(&self) -> &'static [relok_ir::Strategy] {
        use relok_ir::Strategy;
        match self {
            #[cfg(feature = "wgpu")]
            Device::Wgpu(_) => &[Strategy::Bake, Strategy::Table],
            _ => &Strategy::ALL,
        }
    }

    /// The cpu device, if this is one.
    pub fn as_cpu(&self) -> Option<&CpuDevice> {
        match self {
            Device::Cpu(d) => Some(d),
            #[cfg(any(feature = "cuda", feature = "wgpu"))]
            _ => None,
        }
    }

    /// The device's memory, whatever its kind.
    fn memory(&self) -> &dyn DeviceMemory {
        match self {
            Device::Cpu(d) => d,
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => d,
            #[cfg(feature = "wgpu")]
            Device::Wgpu(d) => d.as_ref(),
        }
    }
}

/// Kernels a GPU device loaded, by (artifact key, session id): words
/// belong to one session.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) type Loaded<K> = std::sync::Mutex<std::collections::HashMap<([u8; 32], u64), std::sync::Arc<K>>>;

/// The kernel of `artifact` for `session` in `loaded`, loaded by `load` on
/// first use (a concurrent first use may load twice; one result is kept).
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn load_once<K>(
    loaded: &Loaded<K>,
    session: &crate::Session,
    artifact: &relok_compiler::artifact::Artifact,
    load: impl FnOnce() -> Result<K, crate::ProgramError>,
) -> Result<std::sync::Arc<K>, crate::ProgramError> {
    let lock = || loaded.lock().unwrap_or_else(|e| e.into_inner());
    let slot = (artifact.key, session.id());
    if let Some(k) = lock().get(&slot) {
        return Ok(std::sync::Arc::clone(k));
    }
    let k = std::sync::Arc::new(load()?);
    Ok(std::sync::Arc::clone(lock().entry(slot).or_insert(k)))
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
    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        self.memory().write_bytes(ptr, bytes)
    }
    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        self.memory().read_bytes(ptr, len)
    }
    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        self.memory().free_bytes(ptr)
    }
}
