// To nearest even, subnormals and overflow included; a NaN quieted, the
// top of its payload kept.
fn relok_f64_to_f32(a: vec2<u32>) -> f32 {
    let s = a.y & 0x80000000u;
    let e = (a.y >> 20u) & 0x7ffu;
    let hm = a.y & 0xfffffu;
    if (e == 0x7ffu) {
        if ((hm | a.x) != 0u) { return bitcast<f32>(s | 0x7fc00000u | (hm << 3u) | (a.x >> 29u)); }
        return bitcast<f32>(s | 0x7f800000u);
    }
    if (e >= 1151u) { return bitcast<f32>(s | 0x7f800000u); }
    let m = vec2<u32>(a.x, hm | select(0x100000u, 0u, e == 0u));
    let big = e >= 897u;
    let r = relok_rsr64(m, select(926u - e, 29u, big));
    if (big) { return bitcast<f32>(s | (((e - 897u) << 23u) + r.x)); }
    return bitcast<f32>(s | r.x);
}
