// Toward zero, saturating, NaN to 0, on the bits (value = m * 2^(e - 150)).
fn relok_f32_to_i32(x: f32) -> i32 {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    let neg = (b >> 31u) != 0u;
    if ((b & 0x7fffffffu) > 0x7f800000u || e < 127u) { return 0i; }
    if (e >= 158u) { return select(2147483647i, bitcast<i32>(0x80000000u), neg); }
    let m = (b & 0x7fffffu) | 0x800000u;
    var u: u32;
    if (e >= 150u) { u = m << (e - 150u); } else { u = m >> (150u - e); }
    return bitcast<i32>(select(u, 0u - u, neg));
}
