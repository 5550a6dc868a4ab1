// x + (-y), a NaN y kept as it is.
fn relok_fsub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return relok_fadd64(a, select(vec2<u32>(b.x, b.y ^ 0x80000000u), b, relok_isnan64(b)));
}
