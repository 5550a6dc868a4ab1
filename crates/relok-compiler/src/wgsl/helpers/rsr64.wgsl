// m >> sh, to nearest even; m < 2^63 (a shift by 64 or more gives 0).
fn relok_rsr64(m: vec2<u32>, sh: u32) -> vec2<u32> {
    if (sh == 0u) { return m; }
    if (sh >= 64u) { return vec2<u32>(0u, 0u); }
    let q = relok_shr64(m, sh);
    let r = relok_sub64(m, relok_shl64(q, sh));
    let half = relok_shl64(vec2<u32>(1u, 0u), sh - 1u);
    let up = relok_lt_u64(half, r) || (r.x == half.x && r.y == half.y && (q.x & 1u) != 0u);
    return relok_add64(q, vec2<u32>(select(0u, 1u, up), 0u));
}
