// The significands at bits 62 and 63 multiplied: the high 64 bits of the
// product, the low ones sticky.
fn relok_fmul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a) || relok_isnan64(b)) { return relok_nan2_64(a, b); }
    let s = (a.y ^ b.y) & 0x80000000u;
    let za = a.x == 0u && (a.y & 0x7fffffffu) == 0u;
    let zb = b.x == 0u && (b.y & 0x7fffffffu) == 0u;
    let ia = ((a.y >> 20u) & 0x7ffu) == 0x7ffu;
    let ib = ((b.y >> 20u) & 0x7ffu) == 0x7ffu;
    if (ia || ib) {
        if (za || zb) { return vec2<u32>(0u, 0xfff80000u); }
        return vec2<u32>(0u, s | 0x7ff00000u);
    }
    if (za || zb) { return vec2<u32>(0u, s); }
    let ua = relok_unpack64(a);
    let ub = relok_unpack64(b);
    let p = relok_mul128(relok_shl64(ua.xy, 10u), relok_shl64(ub.xy, 11u));
    let e = bitcast<i32>(ua.z) + bitcast<i32>(ub.z);
    if ((p.w >> 30u) != 0u) { return relok_pack64(s, e - 1022i, vec2<u32>(p.z | select(0u, 1u, p.x != 0u || p.y != 0u), p.w)); }
    return relok_pack64(s, e - 1023i, vec2<u32>((p.z << 1u) | (p.y >> 31u) | select(0u, 1u, p.x != 0u || (p.y << 1u) != 0u), (p.w << 1u) | (p.z >> 31u)));
}
