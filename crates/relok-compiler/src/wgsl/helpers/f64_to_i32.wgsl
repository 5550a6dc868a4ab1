fn relok_f64_to_i32(a: vec2<u32>) -> i32 {
    let m = relok_f64_mag(a);
    if ((a.y >> 31u) != 0u) {
        if (m.y != 0u || m.x > 0x80000000u) { return bitcast<i32>(0x80000000u); }
        return bitcast<i32>(0u - m.x);
    }
    if (m.y != 0u || m.x > 0x7fffffffu) { return 2147483647i; }
    return bitcast<i32>(m.x);
}
