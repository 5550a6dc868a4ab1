fn relok_sar64(a: vec2<u32>, n: u32) -> vec2<u32> {
    let s = n & 63u;
    let h = bitcast<i32>(a.y);
    if (s == 0u) { return a; }
    if (s < 32u) { return vec2<u32>((a.x >> s) | (a.y << (32u - s)), bitcast<u32>(h >> s)); }
    return vec2<u32>(bitcast<u32>(h >> (s - 32u)), bitcast<u32>(h >> 31u));
}
