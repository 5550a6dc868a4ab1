//! The pipeline-cache archive (tier 2; the `wgpu` module docs, "The
//! pipeline-cache archive", say what it holds): where the adapter has
//! `PIPELINE_CACHE`, the device's one wgpu `PipelineCache`, seeded at open
//! from the archive's blob once its header matches this adapter and
//! driver, and saved back when pipelines were made.

use super::WgpuDevice;
use crate::lock;
use relok_cache::{Key, Lookup, Store, StoreConfig};
use sha2::{Digest, Sha256};
use std::sync::atomic::Ordering;

/// wgpu's major version, part of the pipeline-cache header.
const WGPU_MAJOR: u32 = 30;

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

/// The Vulkan driver's pipeline-cache UUID of `adapter`; `None` on other
/// backends.
#[cfg(not(target_vendor = "apple"))]
pub(super) fn cache_uuid(adapter: &::wgpu::Adapter) -> Option<[u8; 16]> {
    // SAFETY: the hal adapter is only read (its properties from
    // vkGetPhysicalDeviceProperties) while `adapter` is alive.
    let hal = unsafe { adapter.as_hal::<::wgpu::hal::api::Vulkan>() }?;
    Some(hal.physical_device_capabilities().properties().pipeline_cache_uuid)
}

/// Metal has no Vulkan driver (nor a wgpu pipeline cache).
#[cfg(target_vendor = "apple")]
pub(super) fn cache_uuid(_: &::wgpu::Adapter) -> Option<[u8; 16]> {
    None
}

impl WgpuDevice {
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
    pub(super) fn open_pipeline_cache(&self, supported: bool) -> Option<::wgpu::PipelineCache> {
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
}
