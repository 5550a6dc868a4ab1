fn relok_f64_to_u32(a: vec2<u32>) -> u32 {
    let m = relok_f64_mag(a);
    if ((a.y >> 31u) != 0u) { return 0u; }
    return select(m.x, 0xffffffffu, m.y != 0u);
}
