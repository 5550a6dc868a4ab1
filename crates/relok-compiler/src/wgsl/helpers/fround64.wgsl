// f64 to an integer value on the bits, exactly: mode 0 floor, 1 ceil,
// 2 trunc, 3 round (halfway cases away from zero). Integers, infinities
// and NaNs are returned unchanged.
fn relok_fround64(a: vec2<u32>, mode: u32) -> vec2<u32> {
    let e = i32((a.y >> 20u) & 0x7ffu) - 1023;
    let neg = (a.y >> 31u) != 0u;
    if (e >= 52) { return a; }
    let sign = a.y & 0x80000000u;
    if (e < 0) {
        let nonzero = (a.x | (a.y & 0x7fffffffu)) != 0u;
        let one = vec2<u32>(0u, sign | 0x3ff00000u);
        if (mode == 0u && neg && nonzero) { return one; }
        if (mode == 1u && !neg && nonzero) { return one; }
        if (mode == 3u && e == -1) { return one; }
        return vec2<u32>(0u, sign);
    }
    let fb = u32(52 - e);
    let unit = relok_shl64(vec2<u32>(1u, 0u), fb);
    let mask = relok_sub64(unit, vec2<u32>(1u, 0u));
    let frac = a & mask;
    let t = a & ~mask;
    if ((frac.x | frac.y) == 0u) { return a; }
    var up = false;
    if (mode == 0u) { up = neg; }
    if (mode == 1u) { up = !neg; }
    if (mode == 3u) { up = !relok_lt_u64(frac, relok_shl64(vec2<u32>(1u, 0u), fb - 1u)); }
    if (up) { return relok_add64(t, unit); }
    return t;
}
