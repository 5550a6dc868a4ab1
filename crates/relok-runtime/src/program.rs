//! From a source module to launches with host objects delivered, on the cpu
//! device without streams (the devices share `crate::Device::load` and
//! streams; this is the lower level the cpu tests use):
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
//! of docs/cache.md in front of the same steps.
//!
//! A [`Compiled`] kernel holds no device addresses unless it is baked, so
//! one compiled patch or table kernel loads on every device; a [`Loaded`]
//! kernel is one (kernel, device) pair: its table buffer or patch cells.
//!
//! Runtime globals named by a kernel and not declared by the application
//! are declared here with [`DEFAULT_GLOBAL_SIZE`] bytes (or enough for the
//! largest offset used).

use crate::backend::register_values;
use crate::cpu::{CpuDevice, DevicePtr, KernelArg, LaunchConfig, LaunchError, LaunchState, LaunchStats, LoadedKernel};
use crate::memory::DeviceId;
use crate::session::Session;
use relok_compiler::artifact::{self, Artifact, CodeTarget, CompileOptions, lower_stencil};
use relok_compiler::lower::{Lowered, site_table};
use relok_compiler::reloc::Target;
use relok_compiler::stencil::Stencil;
use relok_ir::{Module, Strategy};

pub use crate::backend::DEFAULT_GLOBAL_SIZE;
pub use crate::cpu::deliver;
pub use crate::error::ProgramError;

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
    let artifact = if strategy == Strategy::Bake {
        register(session, &lower_stencil(stencil, Strategy::Table, options, None)?)?;
        let resolve = |t: &Target| session.resolve(device, t).map_err(|e| e.to_string());
        artifact::compile(stencil, target, strategy, options, Some(&resolve))?
    } else {
        artifact::compile(stencil, target, strategy, options, None)?
    };
    // Devices load what the kernel cache gives without validating it
    // again (`Validated`): a fresh compile must pass as a cached one does.
    debug_assert_eq!(artifact.validate(), Ok(()), "a fresh compile of @{} validates", artifact.entry);
    Ok(artifact)
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
