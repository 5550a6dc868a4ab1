// |x| >= |y|; the significands at bits 62..10, y's aligned with the bits
// shifted out ORed into its low bit (sticky), added or subtracted.
fn relok_fadd64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a) || relok_isnan64(b)) { return relok_nan2_64(a, b); }
    let ea = (a.y >> 20u) & 0x7ffu;
    let eb = (b.y >> 20u) & 0x7ffu;
    if (ea == 0x7ffu) {
        if (eb == 0x7ffu && ((a.y ^ b.y) >> 31u) != 0u) { return vec2<u32>(0u, 0xfff80000u); }
        return a;
    }
    if (eb == 0x7ffu) { return b; }
    let swap = relok_lt_u64(vec2<u32>(a.x, a.y & 0x7fffffffu), vec2<u32>(b.x, b.y & 0x7fffffffu));
    let x = select(a, b, swap);
    let y = select(b, a, swap);
    let ex = (x.y >> 20u) & 0x7ffu;
    let ey = (y.y >> 20u) & 0x7ffu;
    let sx = x.y & 0x80000000u;
    let sub = ((x.y ^ y.y) >> 31u) != 0u;
    let mx = relok_shl64(vec2<u32>(x.x, (x.y & 0xfffffu) | select(0x100000u, 0u, ex == 0u)), 10u);
    let m0 = relok_shl64(vec2<u32>(y.x, (y.y & 0xfffffu) | select(0x100000u, 0u, ey == 0u)), 10u);
    let d = max(ex, 1u) - max(ey, 1u);
    var my = m0;
    if (d >= 64u) {
        my = vec2<u32>(select(0u, 1u, m0.x != 0u || m0.y != 0u), 0u);
    } else if (d > 0u) {
        my = relok_shr64(m0, d);
        let lost = relok_sub64(m0, relok_shl64(my, d));
        my.x = my.x | select(0u, 1u, lost.x != 0u || lost.y != 0u);
    }
    let s = select(relok_add64(mx, my), relok_sub64(mx, my), sub);
    if (s.x == 0u && s.y == 0u) { return vec2<u32>(0u, select(sx, 0u, sub)); }
    let e = bitcast<i32>(max(ex, 1u));
    if ((s.y >> 31u) != 0u) { return relok_pack64(sx, e + 1i, vec2<u32>((s.x >> 1u) | (s.y << 31u) | (s.x & 1u), s.y >> 1u)); }
    let z = select(countLeadingZeros(s.y), 32u + countLeadingZeros(s.x), s.y == 0u) - 1u;
    return relok_pack64(sx, e - bitcast<i32>(z), relok_shl64(s, z));
}
