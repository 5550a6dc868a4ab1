fn relok_i64_to_f64(a: vec2<u32>) -> vec2<u32> {
    let neg = (a.y >> 31u) != 0u;
    let f = relok_u64_to_f64(select(a, relok_sub64(vec2<u32>(0u, 0u), a), neg));
    return vec2<u32>(f.x, f.y | select(0u, 0x80000000u, neg));
}
