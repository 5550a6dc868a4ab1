// To nearest, ties to even: the leading one moved to bit 63, 53 bits kept.
fn relok_u64_to_f64(a: vec2<u32>) -> vec2<u32> {
    if (a.x == 0u && a.y == 0u) { return vec2<u32>(0u, 0u); }
    let z = select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u);
    let m = relok_shl64(a, z);
    let mant = vec2<u32>((m.x >> 11u) | (m.y << 21u), m.y >> 11u);
    let rest = m.x & 0x7ffu;
    let up = rest > 0x400u || (rest == 0x400u && (mant.x & 1u) != 0u);
    return relok_add64(vec2<u32>(mant.x, mant.y + ((1085u - z) << 20u)), vec2<u32>(select(0u, 1u, up), 0u));
}
