//! The kernel cache of a process (docs/design.md §5): [`KernelCache::compile`] puts
//! three tiers in front of compiling.
//!
//! ```text
//! compile(module, kernel, strategy)
//!   stencil + key ─► memory: this process's compiled kernels     (patch, table)
//!                    baked: per (key, device, session), never on disk (bake)
//!                 ─► bundles loaded by the application (load_bundle)
//!                 ─► the artifact store on disk (relok_cache::Store)
//!                     └► behind it the remote tier, when RELOK_REMOTE names one ([`remote`])
//!                 ─► compile; the artifact goes to the store (and, from a writer, the remote)
//! ```
//!
//! # Two levels of keys
//!
//! An artifact's key ([`Stencil::key`]) hashes the kernel's canonical IR:
//! computing it parses, verifies and links the source. A program whose
//! kernel text is known (the facade's `Program` and `Source`) also has a
//! **source key** ([`relok_compiler::stencil::source_key`]: a hash of the
//! text and the kernel's name, no parsing), and
//! [`KernelCache::artifact_by_source`] looks it up first: in this
//! process's map, in bundles, then in the store, where the artifact is
//! kept under its source key too (an alias entry, written by
//! [`crate::Device::load_remembering`] after the first compile or load).
//! A warm start therefore never touches the compiler.
//!
//! An artifact from a bundle or the store is checked (payload, compiler,
//! key, target, strategy, state layout) and its code validated against its
//! ABI and manifest (`Artifact::validate`) before it is used; anything
//! wrong is counted
//! as corrupt, the entry is removed and the kernel is compiled and stored
//! again. A store that cannot be opened leaves the cache running without
//! it, with the reason in [`KernelCache::warning`]. Nothing baked reaches
//! the disk.

use crate::cpu::CpuDevice;
use crate::error::ProgramError;
use crate::memory::DeviceId;
use crate::program::{Compiled, build, instantiate};
use crate::session::Session;
use bytes::Bytes;
use relok_cache::bundle::{self, BundleError};
use relok_cache::remote::{Remote, RemoteConfig};
use relok_cache::{Key, Lookup, RemoteStats, Store, StoreConfig, StoreError, TierStats};
use relok_compiler::artifact::{Artifact, COMPILER_ID, CodeTarget, CompileOptions};
use relok_compiler::stencil::Stencil;
use relok_ir::{Module, Strategy};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the tiers of a [`KernelCache`] did in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Kernels compiled (every tier missed).
    pub compiles: u64,
    /// This process's compiled kernels, patch and table (hits, misses).
    pub memory: TierStats,
    /// Baked kernels per device (hits, misses).
    pub baked: TierStats,
    /// Bundles loaded by the application (hits, misses, corrupt).
    pub bundle: TierStats,
    /// The artifact store on disk (all counters); zero without a store.
    pub store: TierStats,
    /// The remote tier behind the artifact store; zero without one.
    pub remote: RemoteStats,
}

/// What [`KernelCache::load_bundle`] found in a bundle.
#[derive(Clone, Debug, Default)]
pub struct BundleContents {
    /// Artifacts now available to the cache.
    pub artifacts: usize,
    /// Machine code for particular devices, by key (see
    /// `relok_compiler::ptx::cubin_key`), for the device to keep.
    pub machine_code: Vec<(Key, Bytes)>,
}

/// A process's kernel cache. Share one per process (`&self` everywhere).
#[derive(Debug)]
pub struct KernelCache {
    store: Option<Store>,
    warning: Option<String>,
    options: CompileOptions,
    memory: Mutex<HashMap<Key, Arc<Compiled>>>,
    /// Baked kernels by (key, device, session): baked words are one
    /// session's on one device.
    baked: Mutex<HashMap<(Key, DeviceId, u64), Arc<Compiled>>>,
    /// Artifacts for devices other than the cpu (patch, table).
    artifacts: Mutex<HashMap<Key, Arc<Artifact>>>,
    /// Baked artifacts for devices other than the cpu.
    baked_artifacts: Mutex<HashMap<(Key, DeviceId, u64), Arc<Artifact>>>,
    bundles: Mutex<HashMap<Key, Bytes>>,
    /// Artifacts by source key (patch, table).
    sources: Mutex<HashMap<Key, Arc<Artifact>>>,
    counts: [AtomicU64; 7],
}

/// Indices into `counts`.
#[derive(Clone, Copy)]
enum Count {
    Compiles,
    MemoryHits,
    MemoryMisses,
    BakedHits,
    BakedMisses,
    BundleHits,
    BundleCorrupt,
}

use crate::lock;

/// The store configuration of this compiler under `root`, with the size
/// cap from `RELOK_CACHE_MAX_BYTES` (a number with an optional `K`, `M`
/// or `G` suffix, powers of 1024) when set.
pub fn store_config(root: &Path) -> Result<StoreConfig, String> {
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
pub fn open_store(config: StoreConfig) -> Result<Store, StoreError> {
    let store = Store::open(config)?;
    Ok(match remote() {
        Some(r) => store.with_remote(r),
        None => store,
    })
}

/// A binary archive's configuration (`StoreConfig::binary`) with the cap
/// `RELOK_BINARY_CACHE_MAX_BYTES` names, if it is a size.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn binary_store_config(root: &Path, device: &str, build: &str) -> StoreConfig {
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

impl KernelCache {
    fn new(store: Option<Store>, warning: Option<String>) -> KernelCache {
        KernelCache {
            store,
            warning,
            options: CompileOptions::default(),
            memory: Mutex::default(),
            baked: Mutex::default(),
            artifacts: Mutex::default(),
            baked_artifacts: Mutex::default(),
            bundles: Mutex::default(),
            sources: Mutex::default(),
            counts: Default::default(),
        }
    }

    /// A cache with no store: memory and bundles only.
    pub fn uncached() -> KernelCache {
        KernelCache::new(None, None)
    }

    /// A cache over `store`.
    pub fn with_store(store: Store) -> KernelCache {
        KernelCache::new(Some(store), None)
    }

    /// A cache over the store of this compiler under `root`, on its own:
    /// no remote behind it, and an error when it cannot be opened
    /// ([`KernelCache::at`] adds the environment's remote and turns the
    /// error into a warning).
    pub fn open(root: &Path) -> Result<KernelCache, StoreError> {
        let config = store_config(root).map_err(|reason| StoreError::Insecure { path: root.to_owned(), reason })?;
        Ok(KernelCache::with_store(Store::open(config)?))
    }

    /// The cache the environment asks for: the store under
    /// [`relok_cache::default_root`] unless `RELOK_CACHE=off`. A store that
    /// cannot be opened (unsafe folder, read-only file system, bad
    /// settings) gives a cache without one, and [`KernelCache::warning`]
    /// says why.
    pub fn from_env() -> KernelCache {
        let Some(root) = relok_cache::default_root() else { return KernelCache::uncached() };
        KernelCache::at(&root)
    }

    /// The cache over the store under `root` with the environment's remote
    /// behind it (as [`KernelCache::from_env`] opens its own): a store that
    /// cannot be opened gives a cache without one, and
    /// [`KernelCache::warning`] says why.
    pub fn at(root: &Path) -> KernelCache {
        let opened = store_config(root).and_then(|c| open_store(c).map_err(|e| e.to_string()));
        match opened {
            Ok(store) => KernelCache::with_store(store),
            Err(why) => {
                let warning = format!("artifact cache disabled for this run: {why}");
                tracing::warn!("{warning}");
                KernelCache::new(None, Some(warning))
            }
        }
    }

    /// The store, if there is one.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// Why the store is missing, when it was asked for and refused.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// What every tier did in this process.
    pub fn stats(&self) -> CacheStats {
        let c = |i: Count| self.counts[i as usize].load(Ordering::Relaxed);
        CacheStats {
            compiles: c(Count::Compiles),
            memory: TierStats { hits: c(Count::MemoryHits), misses: c(Count::MemoryMisses), ..TierStats::default() },
            baked: TierStats { hits: c(Count::BakedHits), misses: c(Count::BakedMisses), ..TierStats::default() },
            bundle: TierStats { hits: c(Count::BundleHits), corrupt: c(Count::BundleCorrupt), ..TierStats::default() },
            store: self.store.as_ref().map(Store::stats).unwrap_or_default(),
            remote: self.store.as_ref().map(Store::remote_stats).unwrap_or_default(),
        }
    }

    fn count(&self, i: Count) {
        self.counts[i as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Makes the artifacts of a bundle (e.g. a file made by `relok
    /// precompile`) available to [`KernelCache::compile`]: a program that
    /// ships its bundle starts with zero compiles. Returns how many
    /// artifacts it holds and its machine code, for the device
    /// ([`crate::Device::load_bundle`] hands it over). Entries are checked
    /// now (framing, checksums: once, by `bundle::decode`) and again when
    /// used (artifact). The bundle is copied once and its entries share the
    /// copy, which therefore lives as long as the cache keeps any of them
    /// (machine code for another device included);
    /// [`KernelCache::load_static_bundle`] takes one that lives as long as
    /// the program without copying it.
    pub fn load_bundle(&self, bytes: &[u8]) -> Result<BundleContents, BundleError> {
        self.load_bundle_bytes(Bytes::copy_from_slice(bytes))
    }

    /// [`KernelCache::load_bundle`] of a bundle the program embeds
    /// (`include_bytes!`): its entries are used where they lie.
    pub fn load_static_bundle(&self, bytes: &'static [u8]) -> Result<BundleContents, BundleError> {
        self.load_bundle_bytes(Bytes::from_static(bytes))
    }

    fn load_bundle_bytes(&self, bytes: Bytes) -> Result<BundleContents, BundleError> {
        let entries = bundle::decode(&bytes, COMPILER_ID)?;
        let mut contents = BundleContents::default();
        let mut map = lock(&self.bundles);
        for e in &entries {
            let payload = bytes.slice_ref(e.payload);
            match e.kind {
                relok_cache::entry::Kind::Artifact => {
                    map.insert(e.key, payload);
                    contents.artifacts += 1;
                }
                relok_cache::entry::Kind::Binary => contents.machine_code.push((e.key, payload)),
            }
        }
        Ok(contents)
    }

    /// Compiles `kernel` of `module` with `strategy`, or takes it from a
    /// tier (see the module docs). The device runs the code and, for
    /// `bake`, gives the words.
    pub fn compile(
        &self,
        session: &Session,
        device: &CpuDevice,
        module: &Module,
        kernel: &str,
        strategy: Strategy,
    ) -> Result<Arc<Compiled>, ProgramError> {
        let stencil = Stencil::new(module, kernel)?;
        let key = Key(stencil.key(CodeTarget::Cpu, strategy, self.options));
        if strategy == Strategy::Bake {
            let slot = (key, DeviceId::of(device), session.id());
            if let Some(c) = lock(&self.baked).get(&slot) {
                self.count(Count::BakedHits);
                return Ok(Arc::clone(c));
            }
            self.count(Count::BakedMisses);
            self.count(Count::Compiles);
            let artifact = build(session, device, &stencil, CodeTarget::Cpu, strategy, self.options)?;
            let c = Arc::new(instantiate(device, &artifact, Some(slot.1))?);
            return Ok(Arc::clone(lock(&self.baked).entry(slot).or_insert(c)));
        }
        if let Some(c) = lock(&self.memory).get(&key) {
            self.count(Count::MemoryHits);
            return Ok(Arc::clone(c));
        }
        self.count(Count::MemoryMisses);
        let compiled = match self.cached(key, Some(key), CodeTarget::Cpu, strategy, |a| instantiate(device, &a, None)) {
            Some(c) => c,
            None => {
                self.count(Count::Compiles);
                let artifact = self.build_and_store(session, device, &stencil, key, CodeTarget::Cpu, strategy)?;
                instantiate(device, &artifact, None)?
            }
        };
        Ok(Arc::clone(lock(&self.memory).entry(key).or_insert(Arc::new(compiled))))
    }

    /// The artifact of `kernel` of `module` for `target` with `strategy`,
    /// through the same tiers as [`KernelCache::compile`] (memory, bundle,
    /// store, compile — `bake` per device, never stored), for devices that
    /// take artifacts rather than cpu kernels (cuda). `device` gives the
    /// words of `bake`.
    pub fn artifact<D: crate::DeviceMemory + ?Sized>(
        &self,
        session: &Session,
        device: &D,
        module: &Module,
        kernel: &str,
        target: CodeTarget,
        strategy: Strategy,
    ) -> Result<Arc<Artifact>, ProgramError> {
        let stencil = Stencil::new(module, kernel)?;
        let key = Key(stencil.key(target, strategy, self.options));
        if strategy == Strategy::Bake {
            let slot = (key, device.device_id(), session.id());
            if let Some(a) = lock(&self.baked_artifacts).get(&slot) {
                self.count(Count::BakedHits);
                return Ok(Arc::clone(a));
            }
            self.count(Count::BakedMisses);
            self.count(Count::Compiles);
            let a = Arc::new(build(session, device, &stencil, target, strategy, self.options)?);
            return Ok(Arc::clone(lock(&self.baked_artifacts).entry(slot).or_insert(a)));
        }
        if let Some(a) = lock(&self.artifacts).get(&key) {
            self.count(Count::MemoryHits);
            return Ok(Arc::clone(a));
        }
        self.count(Count::MemoryMisses);
        let artifact = match self.cached(key, Some(key), target, strategy, Ok) {
            Some(a) => a,
            None => {
                self.count(Count::Compiles);
                self.build_and_store(session, device, &stencil, key, target, strategy)?
            }
        };
        Ok(Arc::clone(lock(&self.artifacts).entry(key).or_insert(Arc::new(artifact))))
    }

    /// The source key of `kernel` of the text-format source `text` for
    /// `target` and `strategy` with this cache's options (see the module
    /// docs).
    pub fn source_key(&self, text: &str, kernel: &str, target: CodeTarget, strategy: Strategy) -> Key {
        Key(relok_compiler::stencil::source_key(text, kernel, target, strategy, self.options))
    }

    /// The artifact a source key names, if a tier holds it: this process's
    /// map, a bundle, the store (checked and validated as every artifact
    /// from there). Never for `bake` (baked kernels are one session's).
    pub fn artifact_by_source(&self, source: Key, target: CodeTarget, strategy: Strategy) -> Option<Arc<Artifact>> {
        if strategy == Strategy::Bake {
            return None;
        }
        if let Some(a) = self.remembered_source(source) {
            return Some(a);
        }
        let a = Arc::new(self.cached(source, None, target, strategy, Ok)?);
        lock(&self.artifacts).entry(Key(a.key)).or_insert_with(|| Arc::clone(&a));
        Some(Arc::clone(lock(&self.sources).entry(source).or_insert(a)))
    }

    /// The artifact this process found or compiled for a source key (the
    /// first tier of [`KernelCache::artifact_by_source`], counted as a
    /// memory hit).
    pub(crate) fn remembered_source(&self, source: Key) -> Option<Arc<Artifact>> {
        let found = lock(&self.sources).get(&source).cloned();
        if found.is_some() {
            self.count(Count::MemoryHits);
        }
        found
    }

    /// Remembers that `source` names `artifact`: in this process and, as an
    /// alias entry, in the store (a failed write is counted by the store).
    /// Only for an artifact this cache gave (validated or compiled): what
    /// is remembered is loaded without validating it again
    /// ([`crate::Device::load_remembering`] is the way in).
    pub(crate) fn remember_source(&self, source: Key, artifact: &Arc<Artifact>) {
        if artifact.strategy == Strategy::Bake {
            return;
        }
        lock(&self.sources).insert(source, Arc::clone(artifact));
        if let (Some(store), Ok(payload)) = (&self.store, artifact.alias_under(source.0).to_payload()) {
            let _ = store.put(source, &payload);
        }
    }

    /// What a bundle or the store holds for `key`, if it is usable: the
    /// artifact decoded, checked (`Artifact::check`) and validated against
    /// its code (`Artifact::validate`), then made `ready` (the cpu device
    /// instantiates it). Anything that fails is corrupt: a bundle entry is
    /// dropped, a store entry removed, and the caller compiles.
    /// `artifact_key` is the key the artifact must have been compiled
    /// under: `key` itself (then it must be no alias), or for a source key
    /// (`None`) the artifact's own (then it must be the alias of `key`).
    fn cached<T>(
        &self,
        key: Key,
        artifact_key: Option<Key>,
        target: CodeTarget,
        strategy: Strategy,
        ready: impl Fn(Artifact) -> Result<T, ProgramError>,
    ) -> Option<T> {
        let usable = |payload: &[u8]| -> Result<T, ProgramError> {
            let mut artifact = Artifact::from_payload(payload)?;
            let alias = if artifact_key.is_some() { None } else { Some(key.0) };
            if artifact.alias != alias {
                return Err(relok_compiler::artifact::ArtifactError::Key.into());
            }
            artifact.alias = None;
            artifact.check(&artifact_key.map_or(artifact.key, |k| k.0), target, strategy)?;
            // The cpu device's `instantiate` parses, verifies and checks the
            // manifest itself: validating first would do it twice.
            if target != CodeTarget::Cpu {
                artifact.validate()?;
            }
            ready(artifact)
        };
        let bundled = lock(&self.bundles).get(&key).cloned();
        if let Some(payload) = bundled {
            match usable(&payload) {
                Ok(c) => {
                    self.count(Count::BundleHits);
                    return Some(c);
                }
                Err(e) => {
                    tracing::warn!("bundled artifact {key} rejected: {e}");
                    self.count(Count::BundleCorrupt);
                    lock(&self.bundles).remove(&key);
                }
            }
        }
        let store = self.store.as_ref()?;
        match store.get(key) {
            Lookup::Hit(payload) => match usable(&payload) {
                Ok(c) => Some(c),
                Err(e) => {
                    store.reject(key, &e.to_string());
                    None
                }
            },
            Lookup::Miss | Lookup::Rejected(_) => None,
        }
    }

    /// Compiles the artifact and writes it to the store (a failed write is
    /// counted by the store; the run goes on).
    fn build_and_store<D: crate::DeviceMemory + ?Sized>(
        &self,
        session: &Session,
        device: &D,
        stencil: &Stencil,
        key: Key,
        target: CodeTarget,
        strategy: Strategy,
    ) -> Result<Artifact, ProgramError> {
        let artifact = build(session, device, stencil, target, strategy, self.options)?;
        if let Some(store) = &self.store {
            store.count_compile();
            let _ = store.put(key, &artifact.to_payload()?);
        }
        Ok(artifact)
    }
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
