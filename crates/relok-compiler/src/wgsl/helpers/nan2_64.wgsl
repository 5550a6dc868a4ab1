// The first NaN operand, quieted.
fn relok_nan2_64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let n = select(b, a, relok_isnan64(a));
    return vec2<u32>(n.x, n.y | 0x80000u);
}
