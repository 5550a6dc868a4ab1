// Ordered keys: a negative's bits inverted, a positive's sign set.
fn relok_lt_f64(a: vec2<u32>, b: vec2<u32>) -> bool {
    if (relok_isnan64(a) || relok_isnan64(b) || ((a.x | b.x) == 0u && ((a.y | b.y) & 0x7fffffffu) == 0u)) { return false; }
    let ka = select(vec2<u32>(a.x, a.y | 0x80000000u), vec2<u32>(~a.x, ~a.y), (a.y >> 31u) != 0u);
    let kb = select(vec2<u32>(b.x, b.y | 0x80000000u), vec2<u32>(~b.x, ~b.y), (b.y >> 31u) != 0u);
    return relok_lt_u64(ka, kb);
}
