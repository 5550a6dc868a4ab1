fn relok_mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = relok_mul32(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}
