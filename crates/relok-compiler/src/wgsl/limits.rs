//! The binding model against the targets' limits (docs/wgpu.md, "Metal and
//! DX12").
//!
//! Every binding of a relok kernel ([`super::bindings`]) is a storage
//! buffer of the compute stage: [`FIXED_STORAGE_BUFFERS`] of relok's own,
//! then one per buffer parameter ([`storage_buffers`]). wgpu counts them
//! against its `max_storage_buffers_per_shader_stage` when a bind group
//! layout is made, and a kernel with more is refused there. Known values,
//! read from wgpu 30.0.2:
//!
//! | whose | storage buffers | buffer parameters |
//! |---|---|---|
//! | [`WEBGPU_DEFAULT`]: `wgpu::Limits::default()`, WebGPU's guaranteed minimum | 8 | 4 |
//! | [`DX12_TIER_1_2`]: wgpu-hal's DX12, resource binding tier 1 (feature level 11.1+) or 2 | 16 | 12 |
//! | [`METAL`]: wgpu-hal's Metal (31 buffer argument slots, [`METAL_BUFFER_SLOTS`], less one for immediates and one for the buffer-sizes buffer) | 29 | 25 |
//! | wgpu-hal's DX12, resource binding tier 3 | 262 144 | |
//! | wgpu-hal's Vulkan: the driver's `maxPerStageDescriptorStorageBuffers`, within its descriptor-set limits; lavapipe (Mesa 22.3, CI) reports | 32 | 28 |
//!
//! A WGSL artifact is the same for every adapter, and adapters accept more
//! than Metal's 29 (lavapipe, DX12 tier 3, Vulkan drivers), so the WGSL
//! backend refuses no kernel for its count: any such refusal would refuse a
//! kernel that runs somewhere. The wgpu device, which asks for its
//! adapter's own limits, checks the count against that limit before wgpu
//! sees the kernel ([`check_storage_buffers`]); the error names the kernel,
//! the count and the limit. [`WEBGPU_DEFAULT`] is the portable limit: a
//! kernel with at most 4 buffer parameters fits every adapter that meets
//! WebGPU's minimum, one with at most 12 fits every DX12 adapter but those
//! of resource binding tier 1 at feature level 11.0, one with at most 25
//! fits Metal.

use super::Error;
use super::bindings::FIRST_BUFFER;

/// Storage buffers relok binds for every kernel: the exception record, the
/// arguments, the table and the heap (bindings 0–3).
pub const FIXED_STORAGE_BUFFERS: u32 = FIRST_BUFFER;

/// `max_storage_buffers_per_shader_stage` of `wgpu::Limits::default()`:
/// WebGPU's guaranteed minimum, what an adapter that meets WebGPU offers at
/// least (a wgpu device asked for the defaults gets no more).
pub const WEBGPU_DEFAULT: u32 = 8;

/// Buffer argument-table slots of a Metal compute function (Apple's Metal
/// feature set tables; wgpu-hal's `metal::adapter::MAX_BUFFERS`).
pub const METAL_BUFFER_SLOTS: u32 = 31;

/// `max_storage_buffers_per_shader_stage` of every wgpu Metal adapter
/// (without `STRICT_WEBGPU_COMPLIANCE`, which relok does not set):
/// [`METAL_BUFFER_SLOTS`] less the slot wgpu keeps for immediates and the
/// one for the sizes of runtime-sized buffers (every relok binding is
/// one).
pub const METAL: u32 = METAL_BUFFER_SLOTS - 2;

/// `max_storage_buffers_per_shader_stage` of a wgpu DX12 adapter of
/// resource binding tier 1 (feature level 11.1 or later) or tier 2: 64
/// UAVs across all stages, half per stage, half of that for storage
/// buffers.
pub const DX12_TIER_1_2: u32 = 16;

/// Storage buffers a kernel with `buffers` buffer parameters binds
/// (saturating: no count wraps below a limit).
pub const fn storage_buffers(buffers: usize) -> u64 {
    (buffers as u64).saturating_add(FIXED_STORAGE_BUFFERS as u64)
}

/// The most buffer parameters a kernel may have under `limit` storage
/// buffers per shader stage.
pub const fn max_buffer_params(limit: u32) -> u32 {
    limit.saturating_sub(FIXED_STORAGE_BUFFERS)
}

/// Checks kernel `function` with `buffers` buffer parameters against
/// `limit` storage buffers per shader stage, which is `limit_of`'s (e.g.
/// "this adapter (Apple M2, metal)").
pub fn check_storage_buffers(function: &str, buffers: usize, limit: u32, limit_of: &str) -> Result<(), Error> {
    if storage_buffers(buffers) <= u64::from(limit) {
        return Ok(());
    }
    Err(Error::TooManyStorageBuffers { function: function.to_owned(), buffers, limit, limit_of: limit_of.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_limits() {
        assert_eq!(storage_buffers(0), 4);
        assert_eq!(storage_buffers(25), 29);
        assert_eq!([WEBGPU_DEFAULT, DX12_TIER_1_2, METAL].map(max_buffer_params), [4, 12, 25]);
        assert_eq!(max_buffer_params(3), 0);
        // On Metal the sizes buffer takes the slot after the bindings: a
        // kernel at wgpu's limit still fits the argument table.
        assert!(storage_buffers(max_buffer_params(METAL) as usize) < u64::from(METAL_BUFFER_SLOTS));
    }

    #[test]
    fn the_error_names_the_kernel_the_count_and_the_limit() {
        assert_eq!(check_storage_buffers("k", 4, WEBGPU_DEFAULT, "wgpu's default limits"), Ok(()));
        assert_eq!(check_storage_buffers("k", 25, METAL, "Metal"), Ok(()));
        let e = check_storage_buffers("wide", 26, METAL, "this adapter (Apple M2, metal)").expect_err("over");
        assert_eq!(
            e.to_string(),
            "@wide binds 30 storage buffers (relok's 4 and 26 buffer parameters), more than the 29 per shader stage of this adapter (Apple M2, metal); pack arrays into fewer buffer parameters (docs/wgpu.md, \"Metal and DX12\")"
        );
        assert!(check_storage_buffers("k", 5, WEBGPU_DEFAULT, "wgpu's default limits").is_err());
        assert!(check_storage_buffers("k", usize::MAX, u32::MAX, "any").is_err());
    }
}
