// The binary64 of sign s (bit 31) and m * 2^(e - 1085), m in [2^62, 2^63)
// (its low bit sticky), to nearest even: overflow to infinity, subnormals.
fn relok_pack64(s: u32, e: i32, m: vec2<u32>) -> vec2<u32> {
    if (e >= 2047i) { return vec2<u32>(0u, s | 0x7ff00000u); }
    if (e >= 1i) {
        let r = relok_rsr64(m, 10u);
        let b = relok_add64(r, vec2<u32>(0u, u32(e - 1i) << 20u));
        return vec2<u32>(b.x, b.y | s);
    }
    let r = relok_rsr64(m, u32(11i - e));
    return vec2<u32>(r.x, r.y | s);
}
