// Toward zero, saturating, NaN to 0, on the bits (value = m * 2^(e - 150)).
fn relok_f32_to_i64(x: f32) -> vec2<u32> {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    let neg = (b >> 31u) != 0u;
    if ((b & 0x7fffffffu) > 0x7f800000u || e < 127u) { return vec2<u32>(0u, 0u); }
    if (e >= 190u) { return select(vec2<u32>(0xffffffffu, 0x7fffffffu), vec2<u32>(0u, 0x80000000u), neg); }
    let m = vec2<u32>((b & 0x7fffffu) | 0x800000u, 0u);
    var u: vec2<u32>;
    if (e >= 150u) { u = relok_shl64(m, e - 150u); } else { u = vec2<u32>(m.x >> (150u - e), 0u); }
    return select(u, relok_sub64(vec2<u32>(0u, 0u), u), neg);
}
