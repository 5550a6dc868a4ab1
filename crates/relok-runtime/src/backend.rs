//! One trait over the devices, in the manner of wgpu-hal's `Api`: each of
//! cpu, cuda and wgpu implements [`Backend`] (memory, load, streams,
//! launch) in its own module; [`crate::Device`] is the one place that
//! dispatches over them. What every backend shares lives here: the one
//! delivery of words ([`deliver_words`], [`table_bytes`]), the map of
//! loaded kernels (`load_once`), the exception record's decoding.
//! See [`crate::device`] for the whole path and the rules of streams.

use crate::error::{DeviceError, LaunchError, ProgramError, SessionError};
use crate::launch::{KernelArg, LaunchConfig, LaunchStats};
use crate::load::LoadRequest;
use crate::memory::{DeviceId, DeviceMemory};
use crate::session::Session;
use relok_cache::Key;
use relok_compiler::artifact::{Artifact, CodeTarget};
use relok_compiler::lower::HostValue;
use relok_compiler::reloc::{FrozenManifest, Target};
use relok_compiler::state::ExceptionLayout;
use relok_ir::{Strategy, Type};
use std::sync::{Arc, Mutex, Weak};

/// Size of a runtime global declared implicitly by a kernel that names it.
pub const DEFAULT_GLOBAL_SIZE: u64 = 256;

/// What a kernel threw, as a GPU device reads it from the launch's
/// exception record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thrown {
    /// The message's word.
    pub message_word: u64,
    /// The throwing block.
    pub block: [u32; 3],
    /// The throwing thread.
    pub thread: [u32; 3],
    /// The two values thrown with the message (`@relok_throw_with`).
    pub values: Option<[u64; 2]>,
}

impl Thrown {
    /// Decodes an exception record's words (`EXCEPTION_LAYOUT`): `None`
    /// while its flag is clear (or the record is short).
    pub fn from_record(words: &[u64]) -> Option<Thrown> {
        if words.len() < ExceptionLayout::WORDS as usize || words[ExceptionLayout::FLAG_WORD as usize] == 0 {
            return None;
        }
        let three = |base: u32| [0, 1, 2].map(|k| words[(base + k) as usize] as u32);
        let values = (words[ExceptionLayout::FLAG_WORD as usize] == ExceptionLayout::THREW_WITH_VALUES)
            .then(|| [0, 1].map(|k| words[(ExceptionLayout::VALUES_WORD + k) as usize]));
        Some(Thrown {
            message_word: words[ExceptionLayout::MESSAGE_WORD as usize],
            block: three(ExceptionLayout::BLOCK_WORD),
            thread: three(ExceptionLayout::THREAD_WORD),
            values,
        })
    }
}

/// What a GPU device's set exception record means: a fault checked mode
/// recorded (a message word of `relok_compiler::fault`, shared by the WGSL
/// and the PTX, decoded by `relok_compiler::fault::decode`), else the
/// kernel's throw. `loop_limit` is the device's own limit on loop
/// iterations per invocation, where it has one (llvmpipe's, on wgpu).
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn thrown_error(kernel: &str, t: Thrown, loop_limit: Option<u32>) -> LaunchError {
    use crate::error::{Access, FaultKind};
    use relok_compiler::fault::{self, Fault};
    let Some(f) = fault::decode(t.message_word) else {
        return LaunchError::Exception {
            kernel: kernel.to_owned(),
            message_word: t.message_word,
            block: t.block,
            thread: t.thread,
            values: t.values,
        };
    };
    let kind = match f {
        // Checked mode: the address is the byte offset from the pointer
        // argument the access went through (or in the wgpu heap).
        Fault::OutOfBounds { access, offset, size, .. } => FaultKind::OutOfBounds {
            space: relok_ir::AddrSpace::Global,
            access: match access {
                fault::Access::Read => Access::Read,
                fault::Access::Write => Access::Write,
                fault::Access::Atomic => Access::Atomic,
            },
            addr: u64::from(offset),
            size,
        },
        Fault::ReadOnly { offset } => FaultKind::ReadOnly { addr: u64::from(offset) },
        Fault::LoopBudget => FaultKind::LoopBudgetExceeded { budget: u64::from(fault::CHECKED_LOOP_BUDGET) },
        Fault::LoopLimit => FaultKind::LoopLimit { limit: u64::from(loop_limit.unwrap_or(u32::MAX)) },
    };
    LaunchError::Fault { kernel: kernel.to_owned(), block: t.block, thread: t.thread, kind }
}

/// What every device offers above its memory: loading artifacts with their
/// words delivered, and launching on streams (see the module docs).
pub trait Backend: DeviceMemory + Send + Sync + std::fmt::Debug {
    /// A kernel loaded on this device with its words delivered.
    type Kernel: Send + Sync + std::fmt::Debug + 'static;
    /// An ordered queue of launches on this device.
    type Stream: Send + Sync + std::fmt::Debug;

    /// The code target artifacts for this device are compiled for.
    fn target(&self) -> CodeTarget;
    /// The strategies kernels can be loaded with here.
    fn strategies(&self) -> &'static [Strategy] {
        self.target().strategies()
    }
    /// Loads the artifact of `request` with the words of `session`
    /// delivered, once per (artifact key, session) while the kernel is held
    /// (see [`crate::load`]): the one way a kernel reaches this device.
    fn load(&self, session: &Session, request: &LoadRequest<'_>) -> Result<Arc<Self::Kernel>, ProgramError>;
    /// The kernel `entry` a tier of this device's own holds under source
    /// key `source` (cuda's load records), if any: a step of
    /// [`crate::load::by_source`] before the kernel cache's bundles and
    /// store. The default: no such tier.
    fn load_by_source(
        &self,
        session: &Session,
        source: Key,
        entry: &str,
        strategy: Strategy,
    ) -> Result<Option<Arc<Self::Kernel>>, ProgramError> {
        let _ = (session, source, entry, strategy);
        Ok(None)
    }
    /// A loaded kernel's entry name.
    fn entry(kernel: &Self::Kernel) -> &str;
    /// A loaded kernel's parameter types.
    fn params(kernel: &Self::Kernel) -> &[Type];
    /// A new stream.
    fn new_stream(&self) -> Result<Self::Stream, DeviceError>;
    /// Checks the launch and enqueues it on `stream` without waiting.
    fn enqueue(
        &self,
        stream: &Self::Stream,
        kernel: &Arc<Self::Kernel>,
        config: &LaunchConfig,
        args: &[KernelArg],
        rng_seed: u64,
    ) -> Result<(), LaunchError>;
    /// Waits for every launch enqueued on `stream`; the first failure since
    /// the last synchronisation ([`LaunchError::Exception`] with the
    /// message's word, or a fault) comes back, and the stream is usable
    /// again. On success: what the launches did, summed (steps are counted
    /// by the cpu device only).
    fn synchronize(&self, stream: &Self::Stream) -> Result<LaunchStats, LaunchError>;
    /// Live allocations of device memory: buffers, host objects, table
    /// buffers (not the device's own fixed buffers).
    fn live_allocations(&self) -> u64;
}

/// A launch error with an exception's message word turned into its text.
pub fn with_message<D: DeviceMemory + ?Sized>(session: &Session, device: &D, e: LaunchError) -> ProgramError {
    match e {
        LaunchError::Exception { kernel, message_word, block, thread, values } => {
            let mut message = message_text(session, device, message_word);
            if let Some(values) = values {
                message = with_values(&message, values);
            }
            ProgramError::Exception { kernel, message, block, thread }
        }
        e => ProgramError::Launch(e),
    }
}

/// `message` with the values thrown with it (`@relok_throw_with`) in
/// place of `{0}` and `{1}`.
///
/// ```
/// let m = relok_runtime::backend::with_values("the len is {0} but the index is {1}", [4, 7]);
/// assert_eq!(m, "the len is 4 but the index is 7");
/// ```
pub fn with_values(message: &str, values: [u64; 2]) -> String {
    message.replace("{0}", &values[0].to_string()).replace("{1}", &values[1].to_string())
}

/// What a message word stands for: a string value's text, a symbol's name,
/// or the word itself.
pub fn message_text<D: DeviceMemory + ?Sized>(session: &Session, device: &D, word: u64) -> String {
    match session.value_at(device, word) {
        Some((tag, bytes)) if tag == "str" => String::from_utf8_lossy(&bytes).into_owned(),
        Some((tag, _)) => format!("a value of type {tag} at {word:#x}"),
        None => match session.symbol_name(word) {
            Some(name) => format!(":{name}"),
            None => format!("unknown message word {word:#x}"),
        },
    }
}

/// Registers a kernel's values with the session, declares its runtime
/// globals, and resolves its manifest's words on `device` (in rank order):
/// the delivery every device shares before it places the words.
pub fn deliver_words<D: DeviceMemory + ?Sized>(
    session: &Session,
    device: &D,
    values: &[HostValue],
    manifest: &FrozenManifest,
) -> Result<Vec<u64>, ProgramError> {
    register_values(session, values, manifest)?;
    Ok(session.resolve_manifest(device, manifest)?)
}

/// The bytes of a relocation table: the words in rank order, little-endian
/// (what `state.reloc_table[i]` loads on every device).
pub fn table_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Registers `values` with the session and declares the runtime globals
/// `manifest` names (with [`DEFAULT_GLOBAL_SIZE`] bytes, or enough for the
/// largest offset, unless the application declared them).
pub fn register_values(session: &Session, values: &[HostValue], manifest: &FrozenManifest) -> Result<(), ProgramError> {
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

/// The error for a kernel or stream of one device used on another.
pub(crate) fn wrong_device(kernel: &str, what: &str, owner: DeviceId, here: DeviceId) -> LaunchError {
    let message = format!("{what} belongs to {owner}, not to this {here}");
    LaunchError::Device { kernel: kernel.to_owned(), error: DeviceError::Driver { call: "launch", message } }
}

/// Kernels a device loaded, by (artifact key, session id), held weakly:
/// words belong to one session, and a kernel nobody holds is freed.
pub(crate) type LoadedKernels<K> = Mutex<std::collections::HashMap<([u8; 32], u64), Weak<K>>>;

/// The live kernel of the artifact with key `key` for `session` in
/// `loaded`, if there is one.
pub(crate) fn find_loaded<K>(loaded: &LoadedKernels<K>, session: &Session, key: &[u8; 32]) -> Option<Arc<K>> {
    crate::lock(loaded).get(&(*key, session.id())).and_then(Weak::upgrade)
}

/// The kernel of `artifact` for `session` in `loaded` on `device`, loaded
/// by `load` when no live one is there (a concurrent first use may load
/// twice; one result is kept). A baked artifact loads only on the device
/// it was baked for ([`ProgramError::BakedElsewhere`]). Entries of dropped
/// kernels are pruned as the map grows.
pub(crate) fn load_once<K>(
    loaded: &LoadedKernels<K>,
    device: DeviceId,
    session: &Session,
    artifact: &Artifact,
    load: impl FnOnce() -> Result<K, ProgramError>,
) -> Result<Arc<K>, ProgramError> {
    if let Some(baked_for) = artifact.baked_for.filter(|&b| b != device.bits()) {
        let baked_for = DeviceId::from_bits(baked_for);
        return Err(ProgramError::BakedElsewhere { kernel: artifact.entry.clone(), baked_for, device });
    }
    if let Some(k) = find_loaded(loaded, session, &artifact.key) {
        return Ok(k);
    }
    let slot = (artifact.key, session.id());
    let k = Arc::new(load()?);
    let mut map = crate::lock(loaded);
    if let Some(live) = map.get(&slot).and_then(Weak::upgrade) {
        return Ok(live);
    }
    if map.len() >= 64 && map.len().is_power_of_two() {
        map.retain(|_, w| w.strong_count() > 0);
    }
    map.insert(slot, Arc::downgrade(&k));
    Ok(k)
}
