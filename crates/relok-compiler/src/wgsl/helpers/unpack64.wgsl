// A finite nonzero f64 as (significand with its leading one at bit 52,
// low and high, exponent e): the value is m * 2^(e - 1075).
fn relok_unpack64(a: vec2<u32>) -> vec3<u32> {
    let e = bitcast<i32>((a.y >> 20u) & 0x7ffu);
    let m = vec2<u32>(a.x, a.y & 0xfffffu);
    if (e != 0i) { return vec3<u32>(m.x, m.y | 0x100000u, bitcast<u32>(e)); }
    let z = select(countLeadingZeros(m.y), 32u + countLeadingZeros(m.x), m.y == 0u) - 11u;
    return vec3<u32>(relok_shl64(m, z), bitcast<u32>(1i - bitcast<i32>(z)));
}
