// To nearest, ties to even, on the bits: the leading one moved to bit 63,
// 24 significant bits kept, the 40 below them rounding.
fn relok_u64_to_f32(a: vec2<u32>) -> f32 {
    if (a.x == 0u && a.y == 0u) { return 0.0f; }
    let z = select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u);
    let m = relok_shl64(a, z);
    let mant = m.y >> 8u;
    let rest = m.y & 0xffu;
    let up = rest > 0x80u || (rest == 0x80u && (m.x != 0u || (mant & 1u) != 0u));
    return bitcast<f32>(((189u - z) << 23u) + mant + select(0u, 1u, up));
}
