// Toward zero, saturating, NaN to 0, on the bits (value = m * 2^(e - 150)).
fn relok_f32_to_u32(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    if ((b & 0x7fffffffu) > 0x7f800000u || (b >> 31u) != 0u || e < 127u) { return 0u; }
    if (e >= 159u) { return 0xffffffffu; }
    let m = (b & 0x7fffffu) | 0x800000u;
    if (e >= 150u) { return m << (e - 150u); }
    return m >> (150u - e);
}
