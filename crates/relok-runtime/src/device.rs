//! What the session and the loader need of every device: an identity and
//! global memory. The cpu device and the cuda device implement
//! [`DeviceMemory`]; [`crate::Session`] resolves words through it, so a
//! value's copy and a global's cell live in the memory of the device whose
//! word is asked for.

use crate::cpu::{CpuDevice, DeviceError, DevicePtr};
use crate::session::DeviceId;

/// A device's identity and its global memory, as the host sees it.
pub trait DeviceMemory {
    /// The identity words are valid for (distinct for every open device).
    fn device_id(&self) -> DeviceId;
    /// `bytes` of global memory, zero-filled.
    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError>;
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
}

impl Device {
    /// Opens the device `spec` names: `cpu[:N]`, `cuda[:N]`, or `best` (the
    /// first GPU when a CUDA driver and a GPU are present, else `cpu:0`). A
    /// cuda device gets the binary archive the environment names.
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
            #[cfg(feature = "cuda")]
            "best" => Ok(crate::cuda::CudaDevice::open_with_archive(0).map_or_else(|_| Device::Cpu(CpuDevice::new(0)), Device::Cuda)),
            #[cfg(not(feature = "cuda"))]
            "best" => Ok(Device::Cpu(CpuDevice::new(0))),
            "wgpu" => Err(format!("device `{spec}`: the wgpu backend is not built yet; use `cpu` or `cuda`")),
            _ => Err(format!("unknown device `{spec}` (expected cpu[:N], cuda[:N] or best)")),
        }
    }

    /// `cpu:0`, or `cuda:0 (NVIDIA H200, sm_90)`.
    pub fn name(&self) -> String {
        match self {
            Device::Cpu(d) => format!("cpu:{}", d.ordinal()),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => format!("cuda:{} ({}, sm_{})", d.ordinal(), d.name(), d.sm()),
        }
    }

    /// The cpu device, if this is one.
    pub fn as_cpu(&self) -> Option<&CpuDevice> {
        match self {
            Device::Cpu(d) => Some(d),
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => None,
        }
    }
}

impl DeviceMemory for Device {
    fn device_id(&self) -> DeviceId {
        match self {
            Device::Cpu(d) => d.device_id(),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => d.device_id(),
        }
    }
    fn alloc_zeroed(&self, bytes: u64) -> Result<DevicePtr, DeviceError> {
        match self {
            Device::Cpu(d) => d.alloc_zeroed(bytes),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => d.alloc_zeroed(bytes),
        }
    }
    fn write_bytes(&self, ptr: DevicePtr, bytes: &[u8]) -> Result<(), DeviceError> {
        match self {
            Device::Cpu(d) => d.write_bytes(ptr, bytes),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => d.write_bytes(ptr, bytes),
        }
    }
    fn read_bytes(&self, ptr: DevicePtr, len: u64) -> Result<Vec<u8>, DeviceError> {
        match self {
            Device::Cpu(d) => d.read_bytes(ptr, len),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => d.read_bytes(ptr, len),
        }
    }
    fn free_bytes(&self, ptr: DevicePtr) -> Result<(), DeviceError> {
        match self {
            Device::Cpu(d) => d.free_bytes(ptr),
            #[cfg(feature = "cuda")]
            Device::Cuda(d) => d.free_bytes(ptr),
        }
    }
}
