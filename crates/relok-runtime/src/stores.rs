//! Where a process's stores are opened and configured: the artifact store
//! (tier 1, behind [`crate::KernelCache`]), the binary archives of the GPU
//! devices (tier 2: cubins, the pipeline-cache blob), and the remote tier
//! the environment names behind them (docs/cache.md). The devices open
//! their archives here and never see the kernel cache.

use relok_cache::remote::{Remote, RemoteConfig};
use relok_cache::{Store, StoreConfig, StoreError};
use relok_compiler::artifact::COMPILER_ID;
use std::path::Path;
use std::sync::Arc;

/// The store configuration of this compiler under `root`, with the size
/// cap from `RELOK_CACHE_MAX_BYTES` (a number with an optional `K`, `M`
/// or `G` suffix, powers of 1024) when set.
pub fn artifact_config(root: &Path) -> Result<StoreConfig, String> {
    let mut config = StoreConfig::artifacts(root, COMPILER_ID);
    if let Ok(v) = std::env::var("RELOK_CACHE_MAX_BYTES") {
        config.max_bytes = parse_size(&v).ok_or_else(|| format!("RELOK_CACHE_MAX_BYTES={v:?} is not a size"))?;
    }
    Ok(config)
}

/// The remote tier the environment names (`RELOK_REMOTE`, the key paths
/// `RELOK_REMOTE_PUBLIC_KEY` / `RELOK_REMOTE_SIGNING_KEY`, the timeouts;
/// docs/cache.md), opened once per process and shared by every store.
/// `None` when `RELOK_REMOTE` is unset (nothing else is read then), or,
/// with one warning, when it cannot be used (no key, a bad key file, a bad
/// address). Nothing connects until the first lookup.
pub fn remote() -> Option<Arc<Remote>> {
    static REMOTE: std::sync::OnceLock<Option<Arc<Remote>>> = std::sync::OnceLock::new();
    let opened = REMOTE.get_or_init(|| match RemoteConfig::from_env().and_then(|c| c.map(Remote::open).transpose()) {
        Ok(r) => {
            if let Some(r) = &r {
                let mode = if r.is_writer() { "reads and writes" } else { "reads only" };
                tracing::info!("remote cache {} ({mode}, key {})", r.url(), r.key_id());
            }
            r.map(Arc::new)
        }
        Err(e) => {
            tracing::warn!("remote cache off: {e}");
            None
        }
    });
    opened.clone()
}

/// Opens the store of `config` with the environment's [`remote`] behind
/// it: the one place where the artifact store and the binary archives
/// are opened for a process.
pub fn open(config: StoreConfig) -> Result<Store, StoreError> {
    let store = Store::open(config)?;
    Ok(match remote() {
        Some(r) => store.with_remote(r),
        None => store,
    })
}

/// A binary archive's configuration (`StoreConfig::binary`) with the cap
/// `RELOK_BINARY_CACHE_MAX_BYTES` names, if it is a size.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn binary_config(root: &Path, device: &str, build: &str) -> StoreConfig {
    let mut c = StoreConfig::binary(root, device, build);
    if let Ok(v) = std::env::var("RELOK_BINARY_CACHE_MAX_BYTES") {
        match parse_size(&v) {
            Some(n) => c.max_bytes = n,
            None => tracing::warn!("RELOK_BINARY_CACHE_MAX_BYTES={v:?} is not a size; using the default cap"),
        }
    }
    c
}

/// `123`, `64K`, `500M`, `1G` (powers of 1024).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size(" 500m "), Some(500 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
        assert_eq!(parse_size(""), None);
    }
}
