fn relok_lt_i64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return bitcast<i32>(a.y) < bitcast<i32>(b.y) || (a.y == b.y && a.x < b.x);
}
