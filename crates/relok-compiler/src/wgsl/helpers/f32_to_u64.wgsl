// Toward zero, saturating, NaN to 0, on the bits (value = m * 2^(e - 150)).
fn relok_f32_to_u64(x: f32) -> vec2<u32> {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    if ((b & 0x7fffffffu) > 0x7f800000u || (b >> 31u) != 0u || e < 127u) { return vec2<u32>(0u, 0u); }
    if (e >= 191u) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
    let m = vec2<u32>((b & 0x7fffffu) | 0x800000u, 0u);
    if (e >= 150u) { return relok_shl64(m, e - 150u); }
    return vec2<u32>(m.x >> (150u - e), 0u);
}
