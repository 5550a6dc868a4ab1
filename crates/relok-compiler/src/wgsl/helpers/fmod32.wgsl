// C's fmodf, exactly, on the bits (as musl's): the significands normalised
// to bit 23, then binary long division one exponent step at a time; the
// remainder keeps the dividend's sign. NaN when y is 0, x infinite or
// either NaN; x when |x| < |y|.
fn relok_fmod32(x: f32, y: f32) -> f32 {
    var ux = bitcast<u32>(x);
    var uy = bitcast<u32>(y);
    var ex = i32((ux >> 23u) & 0xffu);
    var ey = i32((uy >> 23u) & 0xffu);
    let sx = ux & 0x80000000u;
    if ((uy << 1u) == 0u || (uy & 0x7fffffffu) > 0x7f800000u || ex == 255i) { return bitcast<f32>(0x7fc00000u); }
    if ((ux << 1u) <= (uy << 1u)) {
        if ((ux << 1u) == (uy << 1u)) { return bitcast<f32>(sx); }
        return bitcast<f32>(ux);
    }
    if (ex == 0i) {
        var i = ux << 9u;
        loop { if ((i >> 31u) != 0u) { break; } ex -= 1i; i = i << 1u; continuing { relok_iterations += 1u; } }
        ux = ux << u32(1i - ex);
    } else {
        ux = (ux & 0x7fffffu) | 0x800000u;
    }
    if (ey == 0i) {
        var i = uy << 9u;
        loop { if ((i >> 31u) != 0u) { break; } ey -= 1i; i = i << 1u; continuing { relok_iterations += 1u; } }
        uy = uy << u32(1i - ey);
    } else {
        uy = (uy & 0x7fffffu) | 0x800000u;
    }
    loop {
        if (ex <= ey) { break; }
        let i = ux - uy;
        if ((i >> 31u) == 0u) {
            if (i == 0u) { return bitcast<f32>(sx); }
            ux = i;
        }
        ux = ux << 1u;
        ex -= 1i;
        continuing { relok_iterations += 1u; }
    }
    let i = ux - uy;
    if ((i >> 31u) == 0u) {
        if (i == 0u) { return bitcast<f32>(sx); }
        ux = i;
    }
    loop { if ((ux >> 23u) != 0u) { break; } ux = ux << 1u; ex -= 1i; continuing { relok_iterations += 1u; } }
    if (ex > 0i) {
        ux = (ux - 0x800000u) | (u32(ex) << 23u);
    } else {
        ux = ux >> u32(1i - ex);
    }
    return bitcast<f32>(ux | sx);
}
