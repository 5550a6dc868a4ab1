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
    let mut s = String::from(
        "fn relok_bounds(off: u32, size: u32, len: u32, code: u32, b: vec3<u32>, t: vec3<u32>) -> u32 {\n",
    );
    s.push_str("    if (off <= len && size <= len - off) { return off; }\n");
    s.push_str(&super::record_fault("off", "code"));
    s.push_str(&format!("    return {OUT}u;\n}}\n\n"));
    s
}
