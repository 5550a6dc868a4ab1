//! The runtime's errors: host-side memory errors ([`DeviceError`]), launch
//! errors ([`LaunchError`], whose [`LaunchError::Fault`] names the kernel,
//! block and thread that faulted and what happened: [`FaultKind`]), the
//! session's ([`SessionError`]) and loading's ([`ProgramError`]).

use crate::id::DeviceId;
use relok_compiler::CompileError;
use relok_compiler::artifact::ArtifactError;
use relok_compiler::reloc::{ManifestError, ValueKey};
use relok_ir::{AddrSpace, Strategy, Type};
use std::fmt;

/// A host-side memory operation failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum DeviceError {
    /// The allocation would exceed the device's memory limit.
    #[error("out of device memory: {requested} bytes requested, {in_use} of {limit} bytes in use")]
    OutOfMemory {
        /// Bytes requested.
        requested: u64,
        /// Bytes currently allocated.
        in_use: u64,
        /// The device's limit.
        limit: u64,
    },
    /// The device's address range is used up (addresses are never reused).
    #[error("device address space exhausted")]
    AddressSpaceExhausted,
    /// `free` of an address that is not the start of a live allocation.
    #[error("{addr:#x} is not the start of a live allocation on this device")]
    InvalidFree {
        /// The address passed.
        addr: u64,
    },
    /// `read`/`write` of a range that is not inside one live allocation.
    #[error("out-of-bounds host access of {len} bytes at {addr:#x}")]
    OutOfBounds {
        /// Start address.
        addr: u64,
        /// Length in bytes.
        len: u64,
    },
    /// A GPU driver call failed (cuda device).
    #[error("{call}: {message}")]
    Driver {
        /// The driver call.
        call: &'static str,
        /// The driver's error.
        message: String,
    },
}

/// What kind of memory access faulted.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Access {
    /// A load.
    Read,
    /// A store.
    Write,
    /// A read-modify-write atomic.
    Atomic,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Atomic => "atomic",
        })
    }
}

/// Why a thread stopped a launch.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum FaultKind {
    /// The accessed bytes are not inside the address space's live memory.
    #[error("out-of-bounds {space} {access} of {size} bytes at {addr:#x}")]
    OutOfBounds {
        /// The pointer's address space.
        space: AddrSpace,
        /// Load, store or atomic.
        access: Access,
        /// The address.
        addr: u64,
        /// Bytes accessed.
        size: u32,
    },
    /// The address is not a multiple of the accessed scalar's size.
    #[error("misaligned {space} {access} at {addr:#x} (alignment {align})")]
    Misaligned {
        /// The pointer's address space.
        space: AddrSpace,
        /// Load, store or atomic.
        access: Access,
        /// The address.
        addr: u64,
        /// The required alignment.
        align: u32,
    },
    /// A store or atomic through a `const` pointer, or into a host value's
    /// copy (host values are read-only to kernels; the cpu device).
    #[error("write to read-only memory (a constant or a host value) at {addr:#x}")]
    ReadOnly {
        /// The address.
        addr: u64,
    },
    /// A `bool` load found a byte other than 0 or 1.
    #[error("invalid bool byte {byte:#04x} loaded from {space} memory at {addr:#x}")]
    InvalidBool {
        /// The pointer's address space.
        space: AddrSpace,
        /// The address.
        addr: u64,
        /// The byte found.
        byte: u8,
    },
    /// Threads of a block did not all reach the same barrier: this thread
    /// finished or waits elsewhere while `waiting` waits at a barrier.
    #[error("barrier divergence: thread ({},{},{}) waits at a barrier this thread does not reach", waiting[0], waiting[1], waiting[2])]
    BarrierDivergence {
        /// A thread waiting at the barrier the reported thread missed.
        waiting: [u32; 3],
    },
    /// The launch executed more instructions than its step budget.
    #[error("step budget of {budget} instructions exceeded")]
    StepBudgetExceeded {
        /// The budget.
        budget: u64,
    },
    /// Nested device-function calls went deeper than the limit.
    #[error("call depth limit of {limit} exceeded")]
    CallDepthExceeded {
        /// The limit.
        limit: u32,
    },
    /// The thread's local memory (all live frames) exceeded the limit.
    #[error("local memory limit of {limit} bytes per thread exceeded")]
    LocalMemoryExceeded {
        /// The limit.
        limit: u64,
    },
    /// The interpreter met a state its compiler should have ruled out.
    #[error("internal interpreter error: {reason}")]
    Internal {
        /// What went wrong.
        reason: String,
    },
    /// A device function with a result reached its end without `return v`.
    #[error("@{func} reached its end without returning a value")]
    MissingReturn {
        /// The function.
        func: String,
    },
    /// The device ends every loop of an invocation once `limit` iterations
    /// (all its loops together) have run, and a loop would have run on
    /// (llvmpipe; docs/wgpu.md, "Long loops"). Block and thread are 0 when
    /// the loop is in a device function that was not inlined.
    #[error(
        "a loop would run past the device's limit of {limit} loop iterations per invocation (all loops together); its result would be wrong"
    )]
    LoopLimit {
        /// The limit.
        limit: u64,
    },
    /// Checked mode on a GPU: the thread's loops ran more iterations than
    /// the budget (all loops together), so the loop was ended (wgpu;
    /// docs/wgpu.md, "Checked mode"). The cpu device's bound is
    /// [`FaultKind::StepBudgetExceeded`], counted in instructions.
    #[error("loop budget of {budget} iterations per thread exceeded (checked mode)")]
    LoopBudgetExceeded {
        /// The budget.
        budget: u64,
    },
    /// This thread and `other_thread` of the same block accessed the same
    /// byte between the same pair of barriers, not both with loads and not
    /// both with atomics (the cpu device's race detector).
    #[error("data race on {space} byte {addr:#x}: {access} by this thread, {other_access} by thread ({},{},{}) between the same barriers", other_thread[0], other_thread[1], other_thread[2])]
    DataRace {
        /// Global or shared.
        space: AddrSpace,
        /// The byte.
        addr: u64,
        /// The thread whose earlier access conflicts.
        other_thread: [u32; 3],
        /// Its access.
        other_access: Access,
        /// This thread's access.
        access: Access,
    },
}

/// A launch failed, before it started or while it ran.
#[derive(Clone, PartialEq, Debug, thiserror::Error)]
pub enum LaunchError {
    /// No function of that name in the module.
    #[error("no kernel @{name} in the module")]
    UnknownKernel {
        /// The name asked for.
        name: String,
    },
    /// The function exists but is a device function.
    #[error("@{name} is a device function, not a kernel")]
    NotAKernel {
        /// The name asked for.
        name: String,
    },
    /// The number of arguments differs from the kernel's parameters.
    #[error("kernel @{kernel} takes {expected} arguments, {found} given")]
    ArgCount {
        /// The kernel.
        kernel: String,
        /// Parameters.
        expected: usize,
        /// Arguments given.
        found: usize,
    },
    /// An argument does not match its parameter.
    #[error("kernel @{kernel}, parameter {index} ({param}: {expected}): {why}")]
    ArgType {
        /// The kernel.
        kernel: String,
        /// 0-based parameter number.
        index: usize,
        /// The parameter's value name (`v0`).
        param: String,
        /// The parameter's type.
        expected: Type,
        /// What is wrong with the argument.
        why: String,
    },
    /// Grid or block dimensions are not allowed.
    #[error("kernel @{kernel}: bad launch configuration: {reason}")]
    BadLaunchConfig {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
    /// The kernel's `shared` variables exceed the per-block limit.
    #[error("kernel @{kernel} needs {bytes} bytes of shared memory, the limit is {limit}")]
    SharedMemoryTooLarge {
        /// The kernel.
        kernel: String,
        /// Bytes needed (`u64::MAX` when the layout overflows).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// A function's `local` variables exceed the per-thread limit.
    #[error("@{func} needs {bytes} bytes of local memory per thread, the limit is {limit}")]
    LocalMemoryTooLarge {
        /// The function.
        func: String,
        /// Bytes needed (`u64::MAX` when the layout overflows).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The module breaks an IR invariant the interpreter relies on (it was
    /// not verified).
    #[error("kernel @{kernel}: invalid module: {reason}")]
    InvalidModule {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
    /// A thread raised a kernel exception (docs/design.md §4): it claimed the
    /// launch's exception record and wrote the word of its message. The
    /// host turns the word into the message text through the session that
    /// delivered it. Reported after the launch, also when the launch then
    /// faulted.
    #[error("kernel @{kernel}, block ({},{},{}), thread ({},{},{}): exception (message word {message_word:#x})", block[0], block[1], block[2], thread[0], thread[1], thread[2])]
    Exception {
        /// The kernel.
        kernel: String,
        /// The word of the message (a host value), as the kernel wrote it.
        message_word: u64,
        /// The raising thread's block, as the kernel wrote it.
        block: [u32; 3],
        /// The raising thread within its block, as the kernel wrote it.
        thread: [u32; 3],
        /// The two values thrown with the message (`@relok_throw_with`),
        /// which the host writes in place of `{0}` and `{1}` in its text.
        values: Option<[u64; 2]>,
    },
    /// The kernel reads a patch cell the launch did not provide.
    #[error("kernel @{kernel}: patch cell {name} was never written")]
    MissingPatchCell {
        /// The kernel.
        kernel: String,
        /// The cell (a relocation record's name).
        name: String,
    },
    /// A patched constant word does not fit the module's constants.
    #[error("kernel @{kernel}: cannot patch constant @{constant} at byte {offset}: {reason}")]
    BadConstPatch {
        /// The kernel.
        kernel: String,
        /// The constant named.
        constant: String,
        /// The byte offset given.
        offset: u32,
        /// What is wrong.
        reason: String,
    },
    /// The device failed to set the launch up (its kernel-state or
    /// exception buffers) or, on a GPU, to run it (a driver call).
    #[error("kernel @{kernel}: device error: {error}")]
    Device {
        /// The kernel.
        kernel: String,
        /// What failed.
        error: DeviceError,
    },
    /// A thread faulted; the launch stopped there.
    #[error("kernel @{kernel}, block ({},{},{}), thread ({},{},{}): {kind}", block[0], block[1], block[2], thread[0], thread[1], thread[2])]
    Fault {
        /// The kernel.
        kernel: String,
        /// The faulting thread's block.
        block: [u32; 3],
        /// The faulting thread within its block.
        thread: [u32; 3],
        /// What happened.
        kind: FaultKind,
    },
}

/// Why a session could not declare an object or deliver a word.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum SessionError {
    /// A record names a value whose bytes were never registered with
    /// [`crate::Session::value`].
    #[error("value {0} was never registered in this session, so it has no bytes to upload")]
    UnknownValue(ValueKey),
    /// A runtime global was used before [`crate::Session::declare_global`].
    #[error("runtime global {0:?} was never declared in this session")]
    UnknownGlobal(String),
    /// A runtime global was declared twice with different sizes.
    #[error("runtime global {name:?} is already declared with {declared} bytes, cannot redeclare it with {requested}")]
    GlobalSizeConflict {
        /// The global's name.
        name: String,
        /// The size it already has.
        declared: u64,
        /// The size asked for now.
        requested: u64,
    },
    /// A runtime global's name is not `[A-Za-z0-9_]+`.
    #[error("{0:?} is not a runtime global's name: use letters, digits and '_'")]
    GlobalName(String),
    /// A runtime global was declared with no bytes: it could hold no word.
    #[error("runtime global {0:?} cannot be declared with size 0")]
    EmptyGlobal(String),
    /// A target names a byte offset past the end of its runtime global.
    #[error("offset {offset} is out of range for runtime global {name:?} of {size} bytes")]
    GlobalOffsetOutOfRange {
        /// The global's name.
        name: String,
        /// The offset asked for.
        offset: u64,
        /// The global's declared size.
        size: u64,
    },
    /// The device could not allocate or fill the copy of a value or the cell
    /// of a global.
    #[error("{device}: cannot place {object} in device memory: {source}")]
    Device {
        /// The device.
        device: DeviceId,
        /// The object, as [`relok_compiler::reloc::Target`]'s `Display` names it.
        object: String,
        /// The device's error.
        source: DeviceError,
    },
}

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
    #[error(
        "kernel @{kernel} was baked for device {baked_for} and cannot load on device {device}: baked words are valid for one device"
    )]
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

impl ProgramError {
    /// Whether loading failed because of the artifact itself — its code
    /// does not parse, verify or compile for the device, or its manifest
    /// does not fit the code — rather than the device or the session: a
    /// cached artifact that fails so is a miss (`crate::load`).
    pub(crate) fn is_the_artifacts(&self) -> bool {
        matches!(
            self,
            ProgramError::Artifact(_)
                | ProgramError::Manifest(_)
                | ProgramError::Launch(LaunchError::InvalidModule { .. })
        )
    }
}
