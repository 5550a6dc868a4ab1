// (n / d, n % d) as (q.x, q.y, r.x, r.y); n / 0 = 0 and n % 0 = n (the
// IR's rule). Restoring long division, one quotient bit a step; `top` is
// the bit shifted out of r (then r >= d).
fn relok_udivmod64(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    if (d.x == 0u && d.y == 0u) { return vec4<u32>(0u, 0u, n.x, n.y); }
    if (n.y == 0u && d.y == 0u) { return vec4<u32>(n.x / d.x, 0u, n.x % d.x, 0u); }
    var q = n;
    var r = vec2<u32>(0u, 0u);
    var k = 0u;
    loop {
        if (k >= 64u) { break; }
        let top = r.y >> 31u;
        r = vec2<u32>((r.x << 1u) | (q.y >> 31u), (r.y << 1u) | (r.x >> 31u));
        q = vec2<u32>(q.x << 1u, (q.y << 1u) | (q.x >> 31u));
        if (top != 0u || !relok_lt_u64(r, d)) {
            r = relok_sub64(r, d);
            q.x = q.x | 1u;
        }
        continuing { k += 1u; relok_iterations += 1u; }
    }
    return vec4<u32>(q, r);
}
