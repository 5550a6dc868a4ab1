fn relok_i64_to_f32(a: vec2<u32>) -> f32 {
    let neg = (a.y >> 31u) != 0u;
    let f = relok_u64_to_f32(select(a, relok_sub64(vec2<u32>(0u, 0u), a), neg));
    return bitcast<f32>(bitcast<u32>(f) | select(0u, 0x80000000u, neg));
}
