//! Adapters: the process's one wgpu instance, the adapters `wgpu[:N]`
//! counts (narrowed by [`ADAPTER_VAR`]) and choosing one of them, and what
//! the chosen adapter allows: a launch's shape against its limits, a
//! buffer argument's offset alignment, llvmpipe's loop limit.

use super::{WgpuDevice, WgpuError};
use crate::error::LaunchError;
use crate::launch::LaunchConfig;

/// The environment variable that narrows the adapters `wgpu[:N]` counts.
pub const ADAPTER_VAR: &str = "RELOK_WGPU_ADAPTER";

/// Mesa's llvmpipe ends every loop of a shader invocation once this many
/// iterations of its loops have run (`LP_MAX_TGSI_LOOP_ITERATIONS`).
const LLVMPIPE_LOOP_LIMIT: u32 = 65_535;

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

/// Adapter `ordinal` of those `wgpu[:N]` counts ([`list_adapters`]).
pub(super) fn choose(ordinal: usize) -> Result<::wgpu::Adapter, WgpuError> {
    let instance = instance();
    let mut all = adapters(&instance);
    let count = all.len();
    if ordinal >= count {
        let filter = std::env::var(ADAPTER_VAR).map(|f| format!(" matching {ADAPTER_VAR}={f:?}")).unwrap_or_default();
        return Err(WgpuError::NotAvailable(format!("no adapter {ordinal}{filter} (wgpu lists {count})")));
    }
    Ok(all.swap_remove(ordinal))
}

impl WgpuDevice {
    /// The alignment of a buffer argument's offset in its buffer (the
    /// adapter's `min_storage_buffer_offset_alignment`, at most 256).
    pub fn buffer_offset_alignment(&self) -> u64 {
        u64::from(self.limits.min_storage_buffer_offset_alignment).max(4)
    }

    /// The adapter's limit on loop iterations per invocation, all loops
    /// together, where it has one: llvmpipe's 65 535 (docs/wgpu.md, "Long
    /// loops"). The WGSL counts against it and reports a loop it would end.
    pub fn loop_limit(&self) -> Option<u32> {
        let llvmpipe = self.info.driver == "llvmpipe" || self.info.name.starts_with("llvmpipe");
        llvmpipe.then_some(LLVMPIPE_LOOP_LIMIT)
    }

    /// Checks the launch shape against this adapter's limits.
    pub(super) fn check_limits(&self, kernel: &str, config: &LaunchConfig) -> Result<(), LaunchError> {
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
}
