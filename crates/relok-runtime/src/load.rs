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
/// a device directly is validated there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validated {
    /// From the kernel cache: validated there, or compiled there.
    Yes,
    /// From the caller: the device validates it.
    No,
}

/// What a device is asked to load: one artifact and what is known of it.
#[derive(Clone, Copy, Debug)]
pub struct LoadRequest<'a> {
    /// The artifact, compiled for the device's target.
    pub artifact: &'a Artifact,
    /// The source key of the kernel's text, when it is known: a device
    /// with a tier of its own keeps the kernel there under it (cuda's load
    /// records), for [`Backend::load_by_source`] in the next process.
    pub source: Option<Key>,
    /// Whether the kernel cache validated the artifact.
    pub validated: Validated,
}

impl<'a> LoadRequest<'a> {
    /// A request for an artifact the caller holds: validated by the device
    /// before it is loaded, kept under no source key.
    pub fn new(artifact: &'a Artifact) -> LoadRequest<'a> {
        LoadRequest { artifact, source: None, validated: Validated::No }
    }

    /// The same request, kept under source key `source` by a device with a
    /// tier of its own.
    pub fn with_source(self, source: Option<Key>) -> LoadRequest<'a> {
        LoadRequest { source, ..self }
    }

    /// A request for an artifact the kernel cache gave (validated there or
    /// compiled there).
    fn cached(artifact: &'a Artifact, source: Option<Key>) -> LoadRequest<'a> {
        LoadRequest { artifact, source, validated: Validated::Yes }
    }
}

/// Kernel `kernel` of `module` (verified: [`VerifiedModule`]) with `strategy` on `device`, through the
/// kernel cache (memory, bundles, the artifact store, else a compile),
/// with the session's words delivered. With `source` (the source key of
/// the module's text, [`KernelCache::source_key`]), the artifact is
/// remembered under it in the cache and the device's own tier, for
/// [`by_source`].
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
    if let Some(source) = source {
        cache.remember_source(source, &artifact);
    }
    device.load(session, &LoadRequest::cached(&artifact, source))
}

/// Kernel `entry` with `strategy` on `device` by its source key `source`
/// ([`KernelCache::source_key`] of its text for the device's target), if a
/// tier holds it without compiling: this process's memory, the device's
/// own tier, then the kernel cache's bundles and store. `Ok(None)`: compile
/// it ([`by_module`]); an artifact of another kernel under the key counts
/// as none.
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
    found.map(|a| device.load(session, &LoadRequest::cached(&a, Some(source)))).transpose()
}
