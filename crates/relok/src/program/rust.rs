//! The Rust-kernel glue of a [`Program`](super::Program): what a Rust kernel's program
//! reads from the host ([`HostUse`]: `#[relok::host]` statics and
//! `relok::Global`s), delivered on a context whenever one of its kernels
//! is loaded, however it is loaded; the runtime globals a program declares;
//! and the bounds-check exception of a Rust kernel, whose message the
//! stream's synchronisation completes from [`PANIC_CELL`]
//! ([`rust_exception`]).

use crate::cells::{HostObject, PANIC_CELL, global_name, is_global_name};
use crate::core::Shared;
use crate::error::{Error, Result};
use relok_runtime::DeviceMemory;
use std::sync::Arc;

/// What a Rust kernel reads from the host, kept with its [`Program`](super::Program):
/// whichever way one of its kernels is loaded (its `launch`,
/// `Context::kernel` or `Context::kernels` of its `program()`), the
/// statics' bytes are delivered and the globals declared first
/// ([`HostUse::prepare`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct HostUse {
    /// The `#[relok::host]` statics it reads.
    pub(crate) statics: Vec<&'static dyn HostObject>,
    /// The runtime globals (`relok::Global`) it names, with their sizes.
    pub(crate) globals: Vec<(&'static str, usize)>,
}

impl HostUse {
    /// Delivers the statics' bytes (this process's, whatever a stored
    /// artifact was compiled with) and declares the globals on `ctx`.
    pub(crate) fn prepare(&self, ctx: &Arc<Shared>) -> Result<()> {
        for s in &self.statics {
            deliver(ctx, *s)?;
        }
        for (name, bytes) in &self.globals {
            declare_user_global(ctx, name, *bytes)?;
        }
        Ok(())
    }
}

/// Writes a host static's bytes into its runtime global on `ctx`'s device
/// (each time a context loads a kernel that reads it: the bytes of this
/// process, whatever a stored artifact was compiled with).
fn deliver(ctx: &Arc<Shared>, s: &dyn HostObject) -> Result<()> {
    let name = global_name(s.path());
    let bytes = s.bytes();
    declare_global(ctx, &name, bytes.len())?;
    let cell = ctx
        .session
        .global_cell(&ctx.device, &name)
        .map_err(relok_runtime::ProgramError::from)
        .map_err(Error::Compile)?;
    if !bytes.is_empty() {
        ctx.device.write_bytes(cell, bytes)?;
    }
    Ok(())
}

/// [`declare_global`] for a [`crate::Global`] of the program: refused
/// under a name of a cell relok writes itself ([`PANIC_CELL`], a host
/// static's `relok_host__…`, [`global_name`]). The runtime library's
/// `relok_counter` stays shared on purpose.
pub(crate) fn declare_user_global(ctx: &Shared, name: &str, bytes: usize) -> Result<()> {
    if name == PANIC_CELL || is_global_name(name) {
        return Err(Error::ReservedGlobal { name: name.to_owned() });
    }
    declare_global(ctx, name, bytes)
}

/// Declares the runtime global `name` of `bytes` bytes (at least 8) in
/// `ctx`'s session; declared already (by a kernel that named it, with the
/// runtime's default size, or by the program) is fine.
pub(crate) fn declare_global(ctx: &Shared, name: &str, bytes: usize) -> Result<()> {
    match ctx.session.declare_global(name, (bytes as u64).max(8)) {
        Ok(()) | Err(relok_runtime::SessionError::GlobalSizeConflict { .. }) => Ok(()),
        Err(e) => Err(Error::Compile(e.into())),
    }
}

/// Bytes of [`PANIC_CELL`]: flag u32, pad, message word (u64), len u32,
/// index u32, block x y z u32, thread x y z u32.
const PANIC_CELL_BYTES: u64 = 48;

/// Fills a Rust kernel's bounds-check message from [`PANIC_CELL`] (the
/// first failing check's message, length, index, block and thread) and
/// clears the cell; other errors pass through. Only a Rust kernel's
/// exception (its message starts with a Rust location) touches the cell:
/// one whose launch also failed a bounds check that lost the race for the
/// exception record clears what that check left, so it is not reported
/// later for another failure.
pub(crate) fn rust_exception(ctx: &Shared, e: Error) -> Error {
    let Error::Exception { kernel, message, block, thread } = e else { return e };
    let from_rust = message.split_once(": ").is_some_and(|(at, _)| at.contains(".rs:"));
    if !from_rust {
        return Error::Exception { kernel, message, block, thread };
    }
    let Ok(cell) = ctx.session.global_cell(&ctx.device, PANIC_CELL) else {
        return Error::Exception { kernel, message, block, thread };
    };
    let Ok(bytes) = ctx.device.read_bytes(cell, PANIC_CELL_BYTES) else {
        return Error::Exception { kernel, message, block, thread };
    };
    // Best effort: a cell that cannot be cleared is overwritten by the next
    // failure's claim only after it is cleared, so its next report may be
    // this one's again — never a wrong error type.
    let _ = ctx.device.write_bytes(cell, &[0; PANIC_CELL_BYTES as usize]);
    let u32_at = |i: usize| u32::from_le_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
    if u32_at(0) == 0 || !message.contains("{len}") {
        return Error::Exception { kernel, message, block, thread };
    }
    let word = u64::from(u32_at(2)) | (u64::from(u32_at(3)) << 32);
    let text = match ctx.session.value_at(&ctx.device, word) {
        Some((_, b)) => String::from_utf8_lossy(&b).into_owned(),
        None => message,
    };
    let message = text.replace("{len}", &u32_at(4).to_string()).replace("{index}", &u32_at(5).to_string());
    Error::Exception {
        kernel,
        message,
        block: [u32_at(6), u32_at(7), u32_at(8)],
        thread: [u32_at(9), u32_at(10), u32_at(11)],
    }
}
