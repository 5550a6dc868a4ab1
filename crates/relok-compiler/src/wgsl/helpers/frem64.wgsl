// C's fmod, exactly (as musl's, on the 53-bit significands): binary long
// division one exponent step at a time; the remainder keeps x's sign.
fn relok_frem64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a) || relok_isnan64(b)) { return relok_nan2_64(a, b); }
    if ((b.x == 0u && (b.y & 0x7fffffffu) == 0u) || ((a.y >> 20u) & 0x7ffu) == 0x7ffu) { return vec2<u32>(0u, 0xfff80000u); }
    let sx = a.y & 0x80000000u;
    let ax = vec2<u32>(a.x, a.y & 0x7fffffffu);
    let ay = vec2<u32>(b.x, b.y & 0x7fffffffu);
    if (!relok_lt_u64(ay, ax)) {
        if (ax.x == ay.x && ax.y == ay.y) { return vec2<u32>(0u, sx); }
        return a;
    }
    let ua = relok_unpack64(a);
    let ub = relok_unpack64(b);
    let my = ub.xy;
    let ey = bitcast<i32>(ub.z);
    var ux = ua.xy;
    var e = bitcast<i32>(ua.z);
    loop {
        if (e <= ey) { break; }
        let i = relok_sub64(ux, my);
        if ((i.y >> 31u) == 0u) {
            if (i.x == 0u && i.y == 0u) { return vec2<u32>(0u, sx); }
            ux = i;
        }
        ux = relok_shl64(ux, 1u);
        e -= 1i;
        continuing { relok_iterations += 1u; }
    }
    let i = relok_sub64(ux, my);
    if ((i.y >> 31u) == 0u) {
        if (i.x == 0u && i.y == 0u) { return vec2<u32>(0u, sx); }
        ux = i;
    }
    loop {
        if ((ux.y >> 20u) != 0u) { break; }
        ux = relok_shl64(ux, 1u);
        e -= 1i;
        continuing { relok_iterations += 1u; }
    }
    if (e > 0i) { return vec2<u32>(ux.x, (ux.y - 0x100000u) | (u32(e) << 20u) | sx); }
    let r = relok_shr64(ux, u32(1i - e));
    return vec2<u32>(r.x, r.y | sx);
}
