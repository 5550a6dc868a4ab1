fn relok_f64_to_i64(a: vec2<u32>) -> vec2<u32> {
    let m = relok_f64_mag(a);
    if ((a.y >> 31u) != 0u) {
        if (relok_lt_u64(vec2<u32>(0u, 0x80000000u), m)) { return vec2<u32>(0u, 0x80000000u); }
        return relok_sub64(vec2<u32>(0u, 0u), m);
    }
    if (relok_lt_u64(vec2<u32>(0xffffffffu, 0x7fffffffu), m)) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    return m;
}
