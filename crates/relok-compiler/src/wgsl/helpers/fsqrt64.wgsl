// Digit-by-digit square root of the significand (its exponent made even),
// 56 root bits, the remainder sticky.
fn relok_fsqrt64(a: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a)) { return vec2<u32>(a.x, a.y | 0x80000u); }
    if (a.x == 0u && (a.y & 0x7fffffffu) == 0u) { return a; }
    if ((a.y >> 31u) != 0u) { return vec2<u32>(0u, 0xfff80000u); }
    if (a.y == 0x7ff00000u) { return a; }
    let ua = relok_unpack64(a);
    var u = bitcast<i32>(ua.z) - 1075i;
    var m = ua.xy;
    if ((u & 1i) != 0i) {
        m = relok_shl64(m, 1u);
        u -= 1i;
    }
    var x = relok_shl64(m, 10u);
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    var k = 0u;
    loop {
        if (k >= 56u) { break; }
        r = relok_shl64(r, 2u);
        r.x = r.x | (x.y >> 30u);
        x = relok_shl64(x, 2u);
        let t = vec2<u32>((q.x << 2u) | 1u, (q.y << 2u) | (q.x >> 30u));
        q = relok_shl64(q, 1u);
        if (!relok_lt_u64(r, t)) {
            r = relok_sub64(r, t);
            q.x = q.x | 1u;
        }
        continuing { k += 1u; relok_iterations += 1u; }
    }
    let mq = relok_shl64(q, 7u);
    return relok_pack64(0u, u / 2i + 1049i, vec2<u32>(mq.x | select(0u, 1u, r.x != 0u || r.y != 0u), mq.y));
}
