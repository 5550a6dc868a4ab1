fn relok_shl64(a: vec2<u32>, n: u32) -> vec2<u32> {
    let s = n & 63u;
    if (s == 0u) { return a; }
    if (s < 32u) { return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s))); }
    return vec2<u32>(0u, a.x << (s - 32u));
}
