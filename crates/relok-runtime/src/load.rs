//! The one load path: from a kernel's source to a kernel loaded on a
//! device, through every tier that may already hold it.
//!
//! ```text
//! source text ─► source key ─► this process's memory ─► the device's own tier ─► bundles, the store
//!                                (KernelCache)            (cuda: load records)     (KernelCache)
//! module ──────► artifact key ─► memory, bundles, the store, else a compile (KernelCache::artifact)
//! artifact ────────────────────────────────────────────────────────────────────────────┐
//!                                                                                     ▼
//!                           LoadRequest { artifact, source, validated } ─► Backend::load ─► Kernel
//! ```
//!
//! Whatever way a kernel comes, a device loads it through one call,
//! [`Backend::load`], given a [`LoadRequest`]: the artifact, its source key
//! when the kernel's text is known (a device may keep its own record under
//! it: cuda's load records), and whether the kernel cache validated it
//! (then the device does not validate it again). The walks in this module
//! are written once for every device; [`crate::Device`] has one entry
//! point per way in, each one dispatch over the backends:
//!
//! - [`by_module`]: a kernel of a module, through the kernel cache
//!   (compiled on a miss), remembered under its source key when given;
//! - [`by_source`]: a kernel by its source key alone, from the tiers that
//!   hold it without compiling — this process's memory, then the device's
//!   own tier ([`Backend::load_by_source`]), then bundles and the store;
//! - an artifact the caller holds ([`LoadRequest::new`]): validated by the
//!   device before it is loaded.

use crate::backend::Backend;
use crate::cache::KernelCache;
use crate::error::ProgramError;
use crate::session::Session;
use relok_cache::Key;
use relok_compiler::artifact::Artifact;
use relok_ir::{Strategy, VerifiedModule};
use std::sync::Arc;

/// Whether an artifact's code is known to agree with the rest of it
/// (`Artifact::validate`): the kernel cache validates what it takes from
/// a bundle or the store and compiles the rest itself, so a device loading
/// what the cache gave does not validate it again; an artifact handed to
/// a device directly is validated there. Crate-only: only the kernel
/// cache may say an artifact was validated (a driver that does not check a
/// function's parameters itself launches what the PTX declares).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Validated {
    /// From the kernel cache: validated there, or compiled there.
    Yes,
    /// From the caller: the device validates it.
    No,
}

/// What a device is asked to load: one artifact and what is known of it —
/// its source key, if the kernel's text is known, and whether the kernel
/// cache validated it. A caller's request ([`LoadRequest::new`]) is always
/// validated by the device; only the walks of this module make requests
/// for what the cache gave.
#[derive(Clone, Copy, Debug)]
pub struct LoadRequest<'a> {
    /// The artifact, compiled for the device's target.
    pub(crate) artifact: &'a Artifact,
    /// The source key of the kernel's text, when it is known: a device
    /// with a tier of its own keeps the kernel there under it (cuda's load
    /// records), for [`Backend::load_by_source`] in the next process.
    pub(crate) source: Option<Key>,
    /// Whether the kernel cache validated the artifact.
    #[cfg_attr(
        not(any(feature = "cuda", feature = "wgpu")),
        expect(dead_code, reason = "only GPU devices skip validating; the cpu device checks its code as it loads it")
    )]
    pub(crate) validated: Validated,
}

impl<'a> LoadRequest<'a> {
    /// A request for an artifact the caller holds: validated by the device
    /// before it is loaded, kept under no source key.
    ///
    /// ```
    /// use relok_runtime::{Backend, CpuDevice, KernelCache, LoadRequest, Session};
    /// let m = relok_ir::parse("kernel @k() {\n    return\n}\n").unwrap();
    /// let m = relok_ir::VerifiedModule::new(m).unwrap();
    /// let (session, device) = (Session::new(), CpuDevice::new(0));
    /// let target = relok_compiler::artifact::CodeTarget::Cpu;
    /// let artifact = KernelCache::uncached().artifact(&session, &device, &m, "k", target, relok_ir::Strategy::Table)?;
    /// let kernel = device.load(&session, &LoadRequest::new(&artifact))?;
    /// assert_eq!(<CpuDevice as Backend>::entry(&kernel), "k");
    /// # Ok::<(), relok_runtime::ProgramError>(())
    /// ```
    pub fn new(artifact: &'a Artifact) -> LoadRequest<'a> {
        LoadRequest { artifact, source: None, validated: Validated::No }
    }

    /// The same request, kept under source key `source` by a device with a
    /// tier of its own (a cuda device with a binary archive writes a load
    /// record under it, see [`Backend::load_by_source`]).
    pub fn with_source(self, source: Option<Key>) -> LoadRequest<'a> {
        LoadRequest { source, ..self }
    }

    /// The artifact to load.
    pub fn artifact(&self) -> &'a Artifact {
        self.artifact
    }

    /// The source key the device may keep the kernel under.
    pub fn source(&self) -> Option<Key> {
        self.source
    }

    /// A request for an artifact the kernel cache gave (validated there or
    /// compiled there).
    fn cached(artifact: &'a Artifact, source: Option<Key>) -> LoadRequest<'a> {
        LoadRequest { artifact, source, validated: Validated::Yes }
    }
}

/// Kernel `kernel` of `module` (verified: [`VerifiedModule`]) with
/// `strategy` on `device`, through the kernel cache (memory, bundles, the
/// artifact store, else a compile),
/// with the session's words delivered. With `source` (the source key of
/// the module's text, [`KernelCache::source_key`]), the artifact is
/// remembered under it in the cache and the device's own tier, for
/// [`by_source`]. An artifact a tier gave that does not load for a reason
/// of its own (its code, its manifest) is a miss: it is removed from the
/// tier and the kernel compiled again.
pub fn by_module<B: Backend + ?Sized>(
    device: &B,
    session: &Session,
    cache: &KernelCache,
    module: &VerifiedModule,
    kernel: &str,
    strategy: Strategy,
    source: Option<Key>,
) -> Result<Arc<B::Kernel>, ProgramError> {
    let target = device.target();
    if !target.strategies().contains(&strategy) {
        return Err(ProgramError::Unsupported { strategy, target: target.name() });
    }
    let artifact = cache.artifact(session, device, module, kernel, target, strategy)?;
    let (loaded, artifact) = match device.load(session, &LoadRequest::cached(&artifact, source)) {
        // A tier's artifact that does not load for a reason of its own is a
        // miss: forgotten, and compiled again (once).
        Err(e) if e.is_the_artifacts() && cache.forget(&artifact, &e.to_string()) => {
            let artifact = cache.artifact(session, device, module, kernel, target, strategy)?;
            (device.load(session, &LoadRequest::cached(&artifact, source))?, artifact)
        }
        loaded => (loaded?, artifact),
    };
    if let Some(source) = source {
        cache.remember_source(source, &artifact);
    }
    Ok(loaded)
}

/// Kernel `entry` with `strategy` on `device` by its source key `source`
/// ([`KernelCache::source_key`] of its text for the device's target), if a
/// tier holds it without compiling: this process's memory, the device's
/// own tier, then the kernel cache's bundles and store. `Ok(None)`: compile
/// it ([`by_module`]); an artifact of another kernel under the key, or one
/// that does not load for a reason of its own (then removed from its
/// tier), counts as none.
pub fn by_source<B: Backend + ?Sized>(
    device: &B,
    session: &Session,
    cache: &KernelCache,
    source: Key,
    entry: &str,
    strategy: Strategy,
) -> Result<Option<Arc<B::Kernel>>, ProgramError> {
    let remembered = cache.remembered_source(source).filter(|a| a.entry == entry);
    if remembered.is_none()
        && let Some(k) = device.load_by_source(session, source, entry, strategy)?
    {
        return Ok(Some(k));
    }
    let found =
        remembered.or_else(|| cache.artifact_by_source(source, device.target(), strategy).filter(|a| a.entry == entry));
    let Some(artifact) = found else { return Ok(None) };
    match device.load(session, &LoadRequest::cached(&artifact, Some(source))) {
        // A tier's artifact that does not load for a reason of its own is
        // a miss: forgotten, and the caller compiles.
        Err(e) if e.is_the_artifacts() && cache.forget(&artifact, &e.to_string()) => Ok(None),
        loaded => loaded.map(Some),
    }
}
