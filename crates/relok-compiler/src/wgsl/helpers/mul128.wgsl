// The full 128-bit product of two u64, as 32-bit limbs from the lowest.
fn relok_mul128(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {
    let p00 = relok_mul32(a.x, b.x);
    let p01 = relok_mul32(a.x, b.y);
    let p10 = relok_mul32(a.y, b.x);
    let p11 = relok_mul32(a.y, b.y);
    let c1 = p00.y + p01.x;
    let k1 = select(0u, 1u, c1 < p00.y);
    let r1 = c1 + p10.x;
    let k2 = k1 + select(0u, 1u, r1 < c1);
    let c2 = p01.y + p10.y;
    let k3 = select(0u, 1u, c2 < p01.y);
    let c3 = c2 + p11.x;
    let k4 = k3 + select(0u, 1u, c3 < c2);
    let r2 = c3 + k2;
    let k5 = k4 + select(0u, 1u, r2 < c3);
    return vec4<u32>(p00.x, r1, r2, p11.y + k5);
}
