// Exact; a NaN quieted, its payload kept.
fn relok_f32_to_f64(x: f32) -> vec2<u32> {
    let b = bitcast<u32>(x);
    let s = b & 0x80000000u;
    let e = (b >> 23u) & 0xffu;
    let m = b & 0x7fffffu;
    if (e == 255u) { return vec2<u32>(m << 29u, s | 0x7ff00000u | (m >> 3u) | select(0u, 0x80000u, m != 0u)); }
    if (e == 0u) {
        if (m == 0u) { return vec2<u32>(0u, s); }
        let z = countLeadingZeros(m) - 8u;
        let n = (m << z) & 0x7fffffu;
        return vec2<u32>(n << 29u, s | ((897u - z) << 20u) | (n >> 3u));
    }
    return vec2<u32>(m << 29u, s | ((e + 896u) << 20u) | (m >> 3u));
}
