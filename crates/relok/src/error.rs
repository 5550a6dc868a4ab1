//! [`Error`]: everything that can go wrong between a Rust program and a
//! device, as typed variants that name the place — the file, line and
//! column of kernel text, the kernel and parameter of a launch, the
//! kernel, block and thread of an exception.

use relok_runtime::{DeviceError, FaultKind, LaunchError, OpenError, ProgramError};

/// The error of every fallible operation of the facade.
///
/// ```
/// let ctx = relok::Context::cpu();
/// match ctx.upload::<f32>(&[1.0]).and_then(|b| b.slice(0..2).download()) {
///     Err(relok::Error::SliceOutOfRange { start: 0, end: 2, len: 1 }) => {}
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The device could not be opened (unknown name, no driver, no such
    /// GPU, a feature this build lacks).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// `RELOK_DEVICE` holds something other than UTF-8.
    #[error("RELOK_DEVICE is not valid UTF-8")]
    BadEnvironment,
    /// An environment variable relok reads holds a value it does not take
    /// (`RELOK_CHECKED=maybe`).
    #[error("{variable}={value:?}: expected {expected}")]
    BadSetting {
        /// The variable.
        variable: &'static str,
        /// What it holds (lossily decoded).
        value: String,
        /// What it may hold.
        expected: &'static str,
    },
    /// Kernel text that does not parse.
    #[error("{file}:{line}:{col}: error: {message}")]
    Parse {
        /// The file name given (`<text>` for text without one).
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        col: u32,
        /// What is wrong.
        message: String,
    },
    /// Kernel IR that does not verify: every problem, one per line, as
    /// `file:line:col: error: @func: v3: message`.
    #[error("{rendered}")]
    Verify {
        /// The file name given.
        file: String,
        /// The verifier's findings, rendered against the file.
        rendered: String,
        /// The findings themselves.
        errors: relok_ir::VerifyErrors,
    },
    /// A kernel file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The name is a device function's, not a kernel's: only kernels are
    /// launched.
    #[error("@{name} is a device function, not a kernel")]
    NotAKernel {
        /// The name asked for.
        name: String,
    },
    /// No kernel of that name in the program.
    #[error("no kernel @{name} in this program (kernels: {})", if available.is_empty() { "none".to_owned() } else { available.iter().map(|k| format!("@{k}")).collect::<Vec<_>>().join(", ") })]
    NoSuchKernel {
        /// The name asked for.
        name: String,
        /// The kernels the program has.
        available: Vec<String>,
    },
    /// A launch with the wrong number of arguments.
    #[error("@{kernel} takes {expected} arguments, {found} were given")]
    ArgCount {
        /// The kernel.
        kernel: String,
        /// Its parameter count.
        expected: usize,
        /// The arguments given.
        found: usize,
    },
    /// An argument whose type does not match its parameter.
    #[error("@{kernel}, argument {index} (parameter `{param}: {expected}`): {found} was given")]
    ArgType {
        /// The kernel.
        kernel: String,
        /// The argument's position (0-based).
        index: usize,
        /// The parameter's name in the kernel (`v2`).
        param: String,
        /// The parameter's type (`ptr<global, f32>`).
        expected: String,
        /// What was given (`a Buffer<u32>`, `an f64`, `a u32`, `the symbol
        /// :name`).
        found: String,
    },
    /// A buffer, stream or kernel of another context used here: each
    /// context is its own device, even when two open the same GPU.
    #[error(
        "{what} belongs to another context (on {owner}) than this one (on {here}): each context is its own device, even on the same GPU"
    )]
    WrongContext {
        /// What was passed (`argument 2 of @saxpy`, `the stream`).
        what: String,
        /// The device of the object's context (`cpu:0`).
        owner: String,
        /// The device of this context.
        here: String,
    },
    /// A sub-slice outside its buffer.
    #[error("slice {start}..{end} is out of range for a buffer of {len} elements")]
    SliceOutOfRange {
        /// Start, in elements.
        start: usize,
        /// End, in elements.
        end: usize,
        /// The buffer's length.
        len: usize,
    },
    /// Host data of another length than the buffer it goes to.
    #[error("{found} elements given for a buffer of {expected}")]
    LengthMismatch {
        /// The buffer's length.
        expected: usize,
        /// The data's length.
        found: usize,
    },
    /// A `bool` element read back from a device holds a byte other than 0
    /// or 1 (the IR's `bool` in memory): memory the kernel did not write as
    /// a `bool`.
    #[error("element {index} of a bool buffer is the byte {byte:#04x}, not 0 or 1")]
    InvalidBool {
        /// The element's index in the buffer.
        index: usize,
        /// The byte found.
        byte: u8,
    },
    /// A buffer too large to address.
    #[error("a buffer of {len} elements of {elem_bytes} bytes is too large")]
    TooLarge {
        /// Elements asked for.
        len: usize,
        /// Bytes per element.
        elem_bytes: usize,
    },
    /// A `usize` argument of a Rust kernel (`#[relok::kernel]`) above
    /// `u32::MAX`: a kernel's `usize` is 32 bits on the device.
    #[error(
        "Rust kernel {kernel}, parameter `{param}: usize`: {value} does not fit the device's 32-bit usize (at most {})",
        u32::MAX
    )]
    UsizeOutOfRange {
        /// The kernel.
        kernel: String,
        /// The parameter's name in the Rust kernel.
        param: String,
        /// The value given.
        value: usize,
    },
    /// A [`crate::Global`] named as a cell relok writes itself, a host
    /// static's (`relok_host_…`). It would share, and corrupt, that cell.
    #[error(
        "runtime global {name:?} is a cell relok writes itself (a host static's `relok_host_…`); choose another name"
    )]
    ReservedGlobal {
        /// The global's name.
        name: String,
    },
    /// Launch geometry the device refuses (zero sizes, too many threads).
    #[error("kernel @{kernel}: bad launch configuration: {reason}")]
    Geometry {
        /// The kernel.
        kernel: String,
        /// Why.
        reason: String,
    },
    /// A kernel threw (through `@relok_throw`): reported at the next
    /// synchronisation of its stream, for the first thrower since the last
    /// one.
    #[error("kernel @{kernel}, block ({},{},{}), thread ({},{},{}): exception: {message}", block[0], block[1], block[2], thread[0], thread[1], thread[2])]
    Exception {
        /// The kernel.
        kernel: String,
        /// The message text.
        message: String,
        /// The throwing block.
        block: [u32; 3],
        /// The throwing thread.
        thread: [u32; 3],
    },
    /// Two different `#[relok::host]` statics with one identity (one
    /// `name = "…"`, or one path) on one context: they would share one
    /// device cell, and a kernel would read the other's table. Each
    /// expands alone, so the macro cannot see the pair; the context
    /// refuses the second when a kernel that reads it loads.
    #[error(
        "two #[relok::host] statics are named {identity:?} ({first} and {second}): a kernel would read one's table for the other; give them different names"
    )]
    HostStaticConflict {
        /// The identity both carry.
        identity: String,
        /// Where the first is (`file:line`).
        first: String,
        /// Where the second is.
        second: String,
    },
    /// A Rust kernel (`#[relok::kernel]`) whose IR could not be built or
    /// verified: a construct the macro let through that the IR refuses.
    #[error("Rust kernel {kernel}: {reason}")]
    KernelBuild {
        /// The kernel.
        kernel: String,
        /// The builder's or verifier's message.
        reason: String,
    },
    /// A thread faulted (the cpu device checks every access; GPUs do not).
    #[error("kernel @{kernel}, block ({},{},{}), thread ({},{},{}): {kind}", block[0], block[1], block[2], thread[0], thread[1], thread[2])]
    Fault {
        /// The kernel.
        kernel: String,
        /// The faulting block.
        block: [u32; 3],
        /// The faulting thread.
        thread: [u32; 3],
        /// What happened.
        kind: FaultKind,
    },
    /// Device memory: allocation, copies.
    #[error("device memory: {0}")]
    Memory(#[from] DeviceError),
    /// The device could not make the stream (reported at its first use).
    #[error("the stream could not be created: {0}")]
    StreamUnavailable(DeviceError),
    /// Compiling or loading a kernel failed.
    #[error(transparent)]
    Compile(ProgramError),
    /// A launch failed on the device.
    #[error(transparent)]
    Launch(LaunchError),
    /// A bundle could not be read.
    #[error("bundle: {0}")]
    Bundle(#[from] relok_cache::bundle::BundleError),
}

impl From<LaunchError> for Error {
    fn from(e: LaunchError) -> Error {
        match e {
            LaunchError::BadLaunchConfig { kernel, reason } => Error::Geometry { kernel, reason },
            LaunchError::Fault { kernel, block, thread, kind } => Error::Fault { kernel, block, thread, kind },
            e => Error::Launch(e),
        }
    }
}

impl From<ProgramError> for Error {
    fn from(e: ProgramError) -> Error {
        match e {
            ProgramError::Exception { kernel, message, block, thread } => {
                Error::Exception { kernel, message, block, thread }
            }
            ProgramError::Launch(l) => l.into(),
            e => Error::Compile(e),
        }
    }
}

/// `Result` with the facade's [`Error`].
///
/// ```
/// fn upload_two(ctx: &relok::Context) -> relok::Result<relok::Buffer<u32>> {
///     ctx.upload(&[1u32, 2])
/// }
/// assert_eq!(upload_two(&relok::Context::cpu())?.len(), 2);
/// # Ok::<(), relok::Error>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
