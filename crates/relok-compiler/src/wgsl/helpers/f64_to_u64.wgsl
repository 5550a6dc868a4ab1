// Toward zero, saturating, NaN to 0.
fn relok_f64_to_u64(a: vec2<u32>) -> vec2<u32> {
    return select(relok_f64_mag(a), vec2<u32>(0u, 0u), (a.y >> 31u) != 0u);
}
