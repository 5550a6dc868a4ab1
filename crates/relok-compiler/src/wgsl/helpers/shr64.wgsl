fn relok_shr64(a: vec2<u32>, n: u32) -> vec2<u32> {
    let s = n & 63u;
    if (s == 0u) { return a; }
    if (s < 32u) { return vec2<u32>((a.x >> s) | (a.y << (32u - s)), a.y >> s); }
    return vec2<u32>(a.y >> (s - 32u), 0u);
}
