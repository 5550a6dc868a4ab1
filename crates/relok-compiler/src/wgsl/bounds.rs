//! Checked mode (`CompileOptions::checked`, docs/wgpu.md "Checked mode"):
//! every load, store and atomic on a buffer parameter or the heap is
//! checked against the bound buffer's length before it is made, and one
//! that would leave it is the same fault the cpu device reports
//! (`FaultKind::OutOfBounds`).
//!
//! `relok_bounds(off, size, len, code, b, t)` returns `off` when bytes
//! `off .. off + size` lie in the first `len` bytes, else records the fault
//! in the exception record (claiming its flag like a throw; the message
//! word's low half is `off`, its high half `code`, made by
//! [`crate::fault::out_of_bounds_high`]) and returns [`OUT`]. A store
//! through [`OUT`] is skipped (the writer wraps it in an `if`); a load or
//! atomic through it is an index far past every buffer, which wgpu's
//! bounds policy (or the driver's robust buffer access) turns into a read
//! of zero and a dropped write, and the launch fails with the fault either
//! way.

/// What `relok_bounds` returns for an access out of bounds.
pub const OUT: u32 = u32::MAX;

/// The helper a checked module declares.
pub(crate) fn declarations() -> String {
    let l = crate::state::EXCEPTION_LAYOUT;
    let (msg, block, thread) = (l.message.offset / 4, l.block.offset / 4, l.thread.offset / 4);
    let mut s = String::from(
        "fn relok_bounds(off: u32, size: u32, len: u32, code: u32, b: vec3<u32>, t: vec3<u32>) -> u32 {\n",
    );
    s.push_str("    if (off <= len && size <= len - off) { return off; }\n");
    s.push_str("    let r = atomicCompareExchangeWeak(&relok_exception[0], 0u, 1u);\n");
    s.push_str("    if (r.exchanged) {\n");
    s.push_str(&format!(
        "        atomicStore(&relok_exception[{msg}], off);\n        atomicStore(&relok_exception[{}], code);\n",
        msg + 1
    ));
    for k in 0..3 {
        let c = ["x", "y", "z"][k as usize];
        s.push_str(&format!("        atomicStore(&relok_exception[{}], b.{c});\n", block + 2 * k));
        s.push_str(&format!("        atomicStore(&relok_exception[{}], t.{c});\n", thread + 2 * k));
    }
    s.push_str(&format!("    }}\n    return {OUT}u;\n}}\n\n"));
    s
}
