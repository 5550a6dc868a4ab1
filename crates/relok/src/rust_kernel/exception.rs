//! Rust kernels' bounds-check exceptions: the runtime global the first
//! failing check of a device fills, and the host side that puts its
//! length and index into the message.

use crate::context::Shared;
use crate::error::Error;
use relok_runtime::DeviceMemory;

/// The runtime global where the first failing bounds check of a device
/// records its message word, length, index, block and thread.
pub const PANIC_CELL: &str = "relok_rust_panic";
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
