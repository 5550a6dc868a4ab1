// |x| toward zero as a u64: 2^64 - 1 from 2^64 up (infinities too), NaN 0.
fn relok_f64_mag(a: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a)) { return vec2<u32>(0u, 0u); }
    let e = (a.y >> 20u) & 0x7ffu;
    if (e < 1023u) { return vec2<u32>(0u, 0u); }
    if (e >= 1087u) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
    let m = vec2<u32>(a.x, (a.y & 0xfffffu) | 0x100000u);
    if (e >= 1075u) { return relok_shl64(m, e - 1075u); }
    return relok_shr64(m, 1075u - e);
}
