// Rust's f64::min on x86-64: a NaN operand yields the other; equal (-0, +0): a.
fn relok_min_f64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a)) { return b; }
    if (relok_isnan64(b)) { return a; }
    return select(a, b, relok_lt_f64(b, a));
}
