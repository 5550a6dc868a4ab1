//! From a source module to launches with host objects delivered (DESIGN §4):
//!
//! ```text
//! compile: link the runtime library ─► optimise ─► lower one kernel with a
//!          strategy (records → frozen manifest) ─► compile for the device
//! load:    validate the manifest against the code ─► resolve its words with
//!          the session on this device ─► table buffer | patch cells | (bake:
//!          nothing, but only on the device it was baked for)
//! launch:  kernel state (table address, exception record, seed) ─► run ─►
//!          an exception's message word back to its text
//! ```
//!
//! [`compile`] has no cache; [`crate::cache::KernelCache`] puts the tiers
//! of DESIGN §5 in front of the same steps.
//!
//! A [`Compiled`] kernel holds no device addresses unless it is baked, so
//! one compiled patch or table kernel loads on every device; a [`Loaded`]
//! kernel is one (kernel, device) pair: its table buffer or patch cells.
//!
//! Runtime globals named by a kernel and not declared by the application
//! are declared here with [`DEFAULT_GLOBAL_SIZE`] bytes (or enough for the
//! largest offset used).

use crate::cpu::{
    CpuDevice, DeviceError, DevicePtr, KernelArg, LaunchConfig, LaunchError, LaunchState, LaunchStats, LoadedKernel,
};
use crate::session::{DeviceId, Session, SessionError};
use relok_compiler::artifact::{self, lower_stencil, Artifact, ArtifactError, CodeTarget, CompileOptions};
use relok_compiler::lower::{site_table, HostValue, Lowered};
use relok_compiler::reloc::{FrozenManifest, ManifestError, Site, Target};
use relok_compiler::stencil::Stencil;
use relok_compiler::CompileError;
use relok_ir::{Module, Stage, Strategy};

/// Size of a runtime global declared implicitly by a kernel that names it.
pub const DEFAULT_GLOBAL_SIZE: u64 = 256;

/// Why compiling, loading or launching failed.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// Compiling failed (no such kernel, linking, optimising, lowering).
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// An artifact is not usable (only from a fresh compile: a cached one
    /// that is not usable is rebuilt).
    #[error("loading artifact: {0}")]
    Artifact(#[from] ArtifactError),
    /// A host object could not be resolved.
    #[error("resolving host objects: {0}")]
    Session(#[from] SessionError),
    /// The manifest does not match the code it travels with.
    #[error("loading: {0}")]
    Manifest(#[from] ManifestError),
    /// Device memory for the table failed.
    #[error("loading: {0}")]
    Memory(#[from] DeviceError),
    /// A baked kernel may only run where it was baked.
    #[error("kernel @{kernel} was baked for device {baked_for} and cannot load on device {device}: baked words are valid for one device")]
    BakedElsewhere {
        /// The kernel.
        kernel: String,
        /// Where it was baked.
        baked_for: DeviceId,
        /// Where it was asked to load.
        device: DeviceId,
    },
    /// The kernel threw (e.g. through `@relok_throw`).
    #[error("kernel @{kernel}, block ({},{},{}), thread ({},{},{}): exception: {message}", block[0], block[1], block[2], thread[0], thread[1], thread[2])]
    Exception {
        /// The kernel.
        kernel: String,
        /// The message text (or a description of the word).
        message: String,
        /// The throwing block.
        block: [u32; 3],
        /// The throwing thread.
        thread: [u32; 3],
    },
    /// The launch failed (bad arguments, a fault).
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The device cannot load kernels lowered with this strategy.
    #[error("strategy {strategy} is not supported for {target} (patching is impossible on wgpu; use table or bake)")]
    Unsupported {
        /// The strategy asked for.
        strategy: Strategy,
        /// The device's code target.
        target: String,
    },
}

/// A launch error with an exception's message word turned into its text.
pub fn with_message<D: crate::DeviceMemory + ?Sized>(session: &Session, device: &D, e: LaunchError) -> ProgramError {
    match e {
        LaunchError::Exception { kernel, message_word, block, thread } => {
            ProgramError::Exception { kernel, message: message_text(session, device, message_word), block, thread }
        }
        e => ProgramError::Launch(e),
    }
}

/// A kernel lowered with one strategy (its module's stage) and compiled for
/// the cpu device.
#[derive(Debug)]
pub struct Compiled {
    /// The lowered module, its frozen manifest and its values.
    pub lowered: Lowered,
    /// The key it was compiled under (see [`Stencil::key`]).
    pub key: [u8; 32],
    /// For `bake`: the device whose words are baked in.
    pub baked_for: Option<DeviceId>,
    kernel: LoadedKernel,
}

/// A compiled kernel's delivery on one device.
#[derive(Debug)]
pub struct Loaded {
    /// The device.
    pub device: DeviceId,
    /// The words, in manifest (rank) order.
    pub words: Vec<u64>,
    /// Table buffer, patch cells and constant patches for every launch.
    pub state: LaunchState,
}

/// Links, optimises and lowers `kernel` of `module` with `strategy`, with
/// no cache. The device is used only by `bake`, whose words are resolved
/// on it. [`crate::cache::KernelCache::compile`] is the cached way.
pub fn compile(
    session: &Session,
    device: &CpuDevice,
    module: &Module,
    kernel: &str,
    strategy: Strategy,
) -> Result<Compiled, ProgramError> {
    let stencil = Stencil::new(module, kernel)?;
    let artifact = build(session, device, &stencil, CodeTarget::Cpu, strategy, CompileOptions::default())?;
    instantiate(device, &artifact, (strategy == Strategy::Bake).then(|| DeviceId::of(device)))
}

/// Compiles a stencil into an artifact for `target`. For `bake`, a
/// first `table` lowering learns the kernel's host objects so that values
/// are registered and globals declared before any word is resolved
/// (`patch` and `table` register when they load: see [`deliver`]).
pub(crate) fn build<D: crate::DeviceMemory + ?Sized>(
    session: &Session,
    device: &D,
    stencil: &Stencil,
    target: CodeTarget,
    strategy: Strategy,
    options: CompileOptions,
) -> Result<Artifact, ProgramError> {
    Ok(if strategy == Strategy::Bake {
        register(session, &lower_stencil(stencil, Strategy::Table, options, None)?)?;
        let resolve = |t: &Target| session.resolve(device, t).map_err(|e| e.to_string());
        artifact::compile(stencil, target, strategy, options, Some(&resolve))?
    } else {
        artifact::compile(stencil, target, strategy, options, None)?
    })
}

/// Makes an artifact runnable on the cpu device: its code parsed and
/// verified (the same path for a fresh compile and a cached one), then
/// compiled by the device.
pub(crate) fn instantiate(
    device: &CpuDevice,
    artifact: &Artifact,
    baked_for: Option<DeviceId>,
) -> Result<Compiled, ProgramError> {
    let lowered = artifact.lowered()?;
    if artifact.strategy != Strategy::Bake {
        lowered.manifest.validate(&site_table(&lowered))?;
    }
    let kernel = device.load(&lowered.module, &lowered.kernel)?;
    Ok(Compiled { lowered, key: artifact.key, baked_for, kernel })
}

/// Registers a lowered kernel's values and declares its runtime globals.
fn register(session: &Session, lowered: &Lowered) -> Result<(), ProgramError> {
    register_values(session, &lowered.values, &lowered.manifest)
}

/// Registers `values` with the session and declares the runtime globals
/// `manifest` names (with [`DEFAULT_GLOBAL_SIZE`] bytes, or enough for the
/// largest offset, unless the application declared them).
pub(crate) fn register_values(
    session: &Session,
    values: &[HostValue],
    manifest: &FrozenManifest,
) -> Result<(), ProgramError> {
    for v in values {
        session.value(&v.type_tag, &v.bytes);
    }
    for r in manifest.records() {
        if let Target::Global { name, offset } = r.target() {
            let size = DEFAULT_GLOBAL_SIZE.max(offset.saturating_add(8));
            match session.declare_global(name, size) {
                Ok(()) | Err(SessionError::GlobalSizeConflict { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Delivers a compiled kernel's words on `device`: validates the manifest
/// against the code, resolves every record, then builds the table buffer
/// (`table`) or the patch cells and constant patches (`patch`).
pub fn load(session: &Session, device: &CpuDevice, compiled: &Compiled) -> Result<Loaded, ProgramError> {
    let id = DeviceId::of(device);
    let lowered = &compiled.lowered;
    if let Some(baked_for) = compiled.baked_for {
        if baked_for != id {
            return Err(ProgramError::BakedElsewhere { kernel: lowered.kernel.clone(), baked_for, device: id });
        }
        return Ok(Loaded { device: id, words: Vec::new(), state: LaunchState::default() });
    }
    let (words, state) = deliver(session, device, lowered)?;
    Ok(Loaded { device: id, words, state })
}

/// The delivery step of loading, for a kernel lowered with `patch` or
/// `table`: validates the manifest against the code, registers the values,
/// resolves every record on `device` (words in rank order) and builds the
/// launch state: the table buffer (`table`) or the patch cells and constant
/// patches (`patch`).
pub fn deliver(session: &Session, device: &CpuDevice, lowered: &Lowered) -> Result<(Vec<u64>, LaunchState), ProgramError> {
    lowered.manifest.validate(&site_table(lowered))?;
    register(session, lowered)?;
    let words = session.resolve_manifest(device, &lowered.manifest)?;
    let mut state = LaunchState::default();
    match lowered.module.stage {
        Stage::Lowered(Strategy::Table) if !words.is_empty() => {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let table = device.alloc(bytes.len() as u64)?;
            device.write(table, &bytes)?;
            state.reloc_table = Some(table);
        }
        Stage::Lowered(Strategy::Patch) => {
            for (r, &w) in lowered.manifest.records().iter().zip(&words) {
                match r.site() {
                    Site::Slot => {
                        state.patch_cells.set(r.name(), w);
                    }
                    Site::Interior { offset } => state.const_patches.push((r.name().to_owned(), offset, w)),
                }
            }
        }
        _ => {}
    }
    Ok((words, state))
}

/// The table buffer of a loaded `table` kernel, if it has records.
pub fn table_buffer(loaded: &Loaded) -> Option<DevicePtr> {
    loaded.state.reloc_table
}

/// Launches a loaded kernel; an exception comes back with its message text.
pub fn launch(
    session: &Session,
    device: &CpuDevice,
    compiled: &Compiled,
    loaded: &Loaded,
    config: &LaunchConfig,
    args: &[KernelArg],
) -> Result<LaunchStats, ProgramError> {
    if loaded.device != DeviceId::of(device) {
        return Err(ProgramError::BakedElsewhere {
            kernel: compiled.lowered.kernel.clone(),
            baked_for: loaded.device,
            device: DeviceId::of(device),
        });
    }
    device.launch_loaded(&compiled.kernel, config, args, &loaded.state).map_err(|e| with_message(session, device, e))
}

/// What a message word stands for: a string value's text, a symbol's name,
/// or the word itself.
pub fn message_text<D: crate::DeviceMemory + ?Sized>(session: &Session, device: &D, word: u64) -> String {
    match session.value_at(device, word) {
        Some((tag, bytes)) if tag == "str" => String::from_utf8_lossy(&bytes).into_owned(),
        Some((tag, _)) => format!("a value of type {tag} at {word:#x}"),
        None => match session.symbol_name(word) {
            Some(name) => format!(":{name}"),
            None => format!("unknown message word {word:#x}"),
        },
    }
}
