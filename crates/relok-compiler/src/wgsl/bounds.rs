//! Checked mode (`CompileOptions::checked`, docs/wgpu.md "Checked mode"):
//! every load, store and atomic on a buffer parameter or the heap is
//! checked against the bound buffer's length before it is made, and one
//! that would leave it is the same fault the cpu device reports
//! (`FaultKind::OutOfBounds`).
//!
//! `relok_bounds(off, size, len, code, b, t)` returns `off` when bytes
//! `off .. off + size` lie in the first `len` bytes, else records the fault
//! in the exception record (claiming its flag like a throw; the message
//! word's low half is `off`, its high half `code`, see [`code`]) and
//! returns [`OUT`]. A store through [`OUT`] is skipped (the writer wraps
//! it in an `if`); a load or atomic through it is an index far past every
//! buffer, which wgpu's bounds policy (or the driver's robust buffer
//! access) turns into a read of zero and a dropped write, and the launch
//! fails with the fault either way.

/// What `relok_bounds` returns for an access out of bounds.
pub const OUT: u32 = u32::MAX;

/// The high half of an out-of-bounds fault's message word: [`MARK`], the
/// binding (8 bits), the access (4 bits: 0 read, 1 write, 2 atomic) and
/// the size in bytes (4 bits).
pub const fn code(binding: u32, access: u32, size: u32) -> u32 {
    MARK | (binding & 0xff) << 8 | (access & 0xf) << 4 | (size & 0xf)
}

/// The mark of [`code`] (its high 16 bits).
pub const MARK: u32 = 0xfffc_0000;

/// Decodes a message word's high half made by [`code`]: (binding, access,
/// size), or `None` when it is not one.
pub const fn decode(high: u32) -> Option<(u32, u32, u32)> {
    if high & 0xffff_0000 != MARK {
        return None;
    }
    Some(((high >> 8) & 0xff, (high >> 4) & 0xf, high & 0xf))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_stay_apart_from_the_other_marks() {
        for (binding, access, size) in [(3, 0, 4), (4, 1, 8), (31, 2, 1)] {
            assert_eq!(decode(code(binding, access, size)), Some((binding, access, size)));
        }
        assert_eq!(decode(super::super::sealed::READ_ONLY_MESSAGE_HIGH), None);
        assert_eq!(decode((super::super::LOOP_LIMIT_MESSAGE >> 32) as u32), None);
    }
}
