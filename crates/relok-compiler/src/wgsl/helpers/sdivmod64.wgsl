// Signed: on the magnitudes; the quotient negative when the signs differ,
// the remainder with the dividend's sign (truncating division). MIN / -1
// wraps to MIN, MIN % -1 is 0; n / 0 = 0, n % 0 = n.
fn relok_sdivmod64(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    let zero = vec2<u32>(0u, 0u);
    let nneg = (n.y >> 31u) != 0u;
    let dneg = (d.y >> 31u) != 0u;
    let qr = relok_udivmod64(select(n, relok_sub64(zero, n), nneg), select(d, relok_sub64(zero, d), dneg));
    let q = select(qr.xy, relok_sub64(zero, qr.xy), nneg != dneg);
    let r = select(qr.zw, relok_sub64(zero, qr.zw), nneg);
    return vec4<u32>(q, r);
}
