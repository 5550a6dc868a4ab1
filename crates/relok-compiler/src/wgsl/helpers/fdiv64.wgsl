// Restoring long division of the significands, 63 quotient bits, the
// remainder sticky.
fn relok_fdiv64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a) || relok_isnan64(b)) { return relok_nan2_64(a, b); }
    let s = (a.y ^ b.y) & 0x80000000u;
    let za = a.x == 0u && (a.y & 0x7fffffffu) == 0u;
    let zb = b.x == 0u && (b.y & 0x7fffffffu) == 0u;
    let ia = ((a.y >> 20u) & 0x7ffu) == 0x7ffu;
    let ib = ((b.y >> 20u) & 0x7ffu) == 0x7ffu;
    if (ia) {
        if (ib) { return vec2<u32>(0u, 0xfff80000u); }
        return vec2<u32>(0u, s | 0x7ff00000u);
    }
    if (ib) { return vec2<u32>(0u, s); }
    if (zb) {
        if (za) { return vec2<u32>(0u, 0xfff80000u); }
        return vec2<u32>(0u, s | 0x7ff00000u);
    }
    if (za) { return vec2<u32>(0u, s); }
    let ua = relok_unpack64(a);
    let ub = relok_unpack64(b);
    let mb = ub.xy;
    var e = bitcast<i32>(ua.z) - bitcast<i32>(ub.z) + 1023i;
    var r = ua.xy;
    if (relok_lt_u64(r, mb)) {
        r = relok_shl64(r, 1u);
        e -= 1i;
    }
    var q = vec2<u32>(0u, 0u);
    var k = 0u;
    loop {
        if (k >= 63u) { break; }
        q = relok_shl64(q, 1u);
        if (!relok_lt_u64(r, mb)) {
            r = relok_sub64(r, mb);
            q.x = q.x | 1u;
        }
        r = relok_shl64(r, 1u);
        continuing { k += 1u; relok_iterations += 1u; }
    }
    return relok_pack64(s, e, vec2<u32>(q.x | select(0u, 1u, r.x != 0u || r.y != 0u), q.y));
}
