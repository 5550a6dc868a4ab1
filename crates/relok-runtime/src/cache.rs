//! The kernel cache of a process (docs/design.md §5): [`KernelCache::artifact`]
//! puts three tiers in front of compiling, for every device's target.
//!
//! ```text
//! artifact(module, kernel, target, strategy)
//!   stencil + key ─► memory: this process's artifacts            (patch, table)
//!                    baked: per (key, device, session), never on disk (bake)
//!                 ─► bundles loaded by the application (load_bundle)
//!                 ─► the artifact store on disk (relok_cache::Store)
//!                     └► behind it the remote tier, when RELOK_REMOTE names one ([`crate::stores::remote`])
//!                 ─► compile; the artifact goes to the store (and, from a writer, the remote)
//! ```
//!
//! The cache gives artifacts, never loaded kernels: [`crate::load`] walks
//! it and hands what it gives to a device.
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
//! [`crate::load::by_module`] after the first compile or load).
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

use crate::backend::register_values;
use crate::error::ProgramError;
use crate::memory::{DeviceId, DeviceMemory};
use crate::session::Session;
use crate::stores;
use bytes::Bytes;
use relok_cache::bundle::{self, BundleError};
use relok_cache::{Key, Lookup, RemoteStats, Store, StoreError, TierStats};
use relok_compiler::artifact::{Artifact, COMPILER_ID, CodeTarget, CompileOptions, lower_stencil};
use relok_compiler::reloc::Target;
use relok_compiler::stencil::Stencil;
use relok_ir::{Strategy, VerifiedModule};
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
    /// This process's artifacts, patch and table (hits, misses).
    pub memory: TierStats,
    /// Baked artifacts per (device, session) (hits, misses).
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
    /// Artifacts by key (patch, table).
    artifacts: Mutex<HashMap<Key, Arc<Artifact>>>,
    /// Baked artifacts by (key, device, session): baked words are one
    /// session's on one device.
    baked_artifacts: Mutex<HashMap<(Key, DeviceId, u64), Arc<Artifact>>>,
    bundles: Mutex<HashMap<Key, Bytes>>,
    /// Artifacts by source key (patch, table).
    sources: Mutex<HashMap<Key, Arc<Artifact>>>,
    /// Where the artifacts that came from a bundle or the store came from,
    /// by artifact key: the tier and the key it holds them under (the
    /// artifact's, or a source key), for [`KernelCache::forget`].
    served: Mutex<HashMap<Key, Vec<(Served, Key)>>>,
    counts: [AtomicU64; 7],
}

/// The tier that gave an artifact (see `KernelCache::served`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Served {
    Bundle,
    Store,
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

impl KernelCache {
    fn new(store: Option<Store>, warning: Option<String>) -> KernelCache {
        KernelCache {
            store,
            warning,
            options: CompileOptions::default(),
            artifacts: Mutex::default(),
            baked_artifacts: Mutex::default(),
            bundles: Mutex::default(),
            sources: Mutex::default(),
            served: Mutex::default(),
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
        let config =
            stores::artifact_config(root).map_err(|reason| StoreError::Insecure { path: root.to_owned(), reason })?;
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
        let opened = stores::artifact_config(root).and_then(|c| stores::open(c).map_err(|e| e.to_string()));
        match opened {
            Ok(store) => KernelCache::with_store(store),
            Err(why) => {
                let warning = format!("artifact cache disabled for this run: {why}");
                tracing::warn!("{warning}");
                KernelCache::new(None, Some(warning))
            }
        }
    }

    /// This cache compiling with `options` (checked mode, the optimiser):
    /// they are part of every key, so a cache holds the artifacts of one
    /// set of options. The default is [`CompileOptions::default`]: the
    /// optimiser on, checked mode on.
    ///
    /// ```
    /// use relok_compiler::artifact::CompileOptions;
    /// let cache = relok_runtime::KernelCache::uncached().with_options(CompileOptions { checked: true, ..CompileOptions::default() });
    /// assert!(cache.options().checked);
    /// ```
    pub fn with_options(mut self, options: CompileOptions) -> KernelCache {
        self.options = options;
        self
    }

    /// The options this cache compiles with ([`KernelCache::with_options`]).
    pub fn options(&self) -> CompileOptions {
        self.options
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
    /// precompile`) available to [`KernelCache::artifact`]: a program that
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

    /// The artifact of `kernel` of `module` for `target` with `strategy`,
    /// through the tiers (see the module docs): memory, bundles, the store,
    /// else a compile — `bake` per (device, session), never stored.
    /// `device` gives the words of `bake`.
    pub fn artifact<D: DeviceMemory + ?Sized>(
        &self,
        session: &Session,
        device: &D,
        module: &VerifiedModule,
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
        let artifact = match self.cached(key, Some(key), target, strategy) {
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
        let a = Arc::new(self.cached(source, None, target, strategy)?);
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
    /// ([`crate::load::by_module`] is the way in).
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
    /// its code (`Artifact::validate`; the cpu target's code is parsed,
    /// verified and checked by the cpu device as it loads it, where a
    /// failure is a miss too: [`KernelCache::forget`]). Anything that fails is
    /// corrupt: a bundle entry is dropped, a store entry removed, and the
    /// caller compiles.
    /// `artifact_key` is the key the artifact must have been compiled
    /// under: `key` itself (then it must be no alias), or for a source key
    /// (`None`) the artifact's own (then it must be the alias of `key`).
    fn cached(&self, key: Key, artifact_key: Option<Key>, target: CodeTarget, strategy: Strategy) -> Option<Artifact> {
        let found = self.lookup(key, artifact_key, target, strategy);
        if let Some((artifact, tier)) = &found {
            lock(&self.served).entry(Key(artifact.key)).or_default().push((*tier, key));
        }
        found.map(|(artifact, _)| artifact)
    }

    /// [`KernelCache::cached`]: the artifact and the tier that gave it.
    fn lookup(
        &self,
        key: Key,
        artifact_key: Option<Key>,
        target: CodeTarget,
        strategy: Strategy,
    ) -> Option<(Artifact, Served)> {
        let usable = |payload: &[u8]| -> Result<Artifact, ProgramError> {
            let mut artifact = Artifact::from_payload(payload)?;
            let alias = if artifact_key.is_some() { None } else { Some(key.0) };
            if artifact.alias != alias {
                return Err(relok_compiler::artifact::ArtifactError::Key.into());
            }
            artifact.alias = None;
            artifact.check(&artifact_key.map_or(artifact.key, |k| k.0), target, strategy)?;
            // The cpu device's load parses, verifies and checks the manifest
            // itself, and a load that fails so is a miss too
            // ([`KernelCache::forget`], `crate::load`): validating here
            // would parse the code twice.
            if target != CodeTarget::Cpu {
                artifact.validate()?;
            }
            Ok(artifact)
        };
        let bundled = lock(&self.bundles).get(&key).cloned();
        if let Some(payload) = bundled {
            match usable(&payload) {
                Ok(c) => {
                    self.count(Count::BundleHits);
                    return Some((c, Served::Bundle));
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
                Ok(c) => Some((c, Served::Store)),
                Err(e) => {
                    store.reject(key, &e.to_string());
                    None
                }
            },
            Lookup::Miss | Lookup::Rejected(_) => None,
        }
    }

    /// Forgets `artifact`, which a tier gave but which did not load on a
    /// device for a reason of its own (its code, its manifest: see
    /// `crate::load`): this process's maps let go of it, the bundle entry
    /// is dropped and the store's entries (by key and by source key)
    /// removed, each counted as corrupt, so that the next lookup compiles.
    /// `false` when no tier gave it (it was compiled here, or is unknown):
    /// then nothing would change on a second try.
    pub(crate) fn forget(&self, artifact: &Artifact, why: &str) -> bool {
        let key = Key(artifact.key);
        let Some(served) = lock(&self.served).remove(&key) else { return false };
        lock(&self.artifacts).remove(&key);
        lock(&self.sources).retain(|_, a| a.key != artifact.key);
        for (tier, under) in served {
            match tier {
                Served::Bundle => {
                    tracing::warn!("bundled artifact {under} rejected: {why}");
                    lock(&self.bundles).remove(&under);
                    self.counts[Count::BundleHits as usize].fetch_sub(1, Ordering::Relaxed);
                    self.count(Count::BundleCorrupt);
                }
                Served::Store => {
                    if let Some(store) = &self.store {
                        store.reject(under, why);
                    }
                }
            }
        }
        true
    }

    /// Compiles the artifact and writes it to the store (a failed write is
    /// counted by the store; the run goes on).
    fn build_and_store<D: DeviceMemory + ?Sized>(
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

/// Compiles a stencil into an artifact for `target`. For `bake`, a first
/// `table` lowering learns the kernel's host objects so that values are
/// registered and globals declared before any word is resolved (`patch`
/// and `table` register when they load: `crate::backend::deliver_words`).
fn build<D: DeviceMemory + ?Sized>(
    session: &Session,
    device: &D,
    stencil: &Stencil,
    target: CodeTarget,
    strategy: Strategy,
    options: CompileOptions,
) -> Result<Artifact, ProgramError> {
    let artifact = if strategy == Strategy::Bake {
        let lowered = lower_stencil(stencil, Strategy::Table, options, None)?;
        register_values(session, &lowered.values, &lowered.manifest)?;
        let resolve = |t: &Target| session.resolve(device, t).map_err(|e| e.to_string());
        let baked = relok_compiler::artifact::compile(stencil, target, strategy, options, Some(&resolve))?;
        Artifact { baked_for: Some(device.device_id().bits()), ..baked }
    } else {
        relok_compiler::artifact::compile(stencil, target, strategy, options, None)?
    };
    // Devices load what the kernel cache gives without validating it
    // again (`Validated`): a fresh compile must pass as a cached one does.
    debug_assert_eq!(artifact.validate(), Ok(()), "a fresh compile of @{} validates", artifact.entry);
    Ok(artifact)
}
