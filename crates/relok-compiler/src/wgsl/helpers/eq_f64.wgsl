fn relok_eq_f64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return !relok_isnan64(a) && !relok_isnan64(b) && ((a.x == b.x && a.y == b.y) || ((a.x | b.x) == 0u && ((a.y | b.y) & 0x7fffffffu) == 0u));
}
