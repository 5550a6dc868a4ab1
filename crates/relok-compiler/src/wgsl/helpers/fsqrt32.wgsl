// f32 `sqrt`, correctly rounded (the IR's; x86's `sqrtss`). WGSL bounds a
// driver's `sqrt` only as `1.0 / inverseSqrt(x)`, a few ulp (NVIDIA's
// Vulkan driver was 1 ulp off for 60 of 300 values), and lets it flush
// subnormals. Specials are decided on the bits. Otherwise x = m * 2^e
// (m of 24 bits, subnormals normalised) and N = m * 2^24 or m * 2^23 (an
// even exponent left over) lies in [2^46, 2^48): the result's significand
// is the integer y nearest sqrt(N). The driver's `sqrt` of m scaled into
// [1, 4) (never subnormal) guesses y; one Newton step on the exact
// residual N - y * y (modulo 2^32: it fits an i32 while the guess is
// within 16 ulp) brings it within one of the answer, and the residual
// against the midpoints y +- 1/2 decides it (no square root of an f32
// lies on a midpoint). NaN results are x86's: the NaN quieted, or the
// default NaN for a negative operand.
fn relok_fsqrt32(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    let a = b & 0x7fffffffu;
    if (a == 0u || b == 0x7f800000u) { return x; }
    if (a > 0x7f800000u) { return bitcast<f32>(b | 0x00400000u); }
    if (b != a) { return bitcast<f32>(0xffc00000u); }
    var e = i32(b >> 23u);
    var m = b & 0x7fffffu;
    if (e == 0) {
        let s = 23u - firstLeadingBit(m);
        m = m << s;
        e = 1 - i32(s);
    } else {
        m = m | 0x800000u;
    }
    let odd = (e & 1) != 0;
    let n = select(m << 24u, m << 23u, odd);
    let z = bitcast<f32>(select(0x40000000u, 0x3f800000u, odd) | (m & 0x7fffffu));
    var y = u32(sqrt(z) * 8388608.0);
    let d = bitcast<i32>(n - y * y);
    y = u32(i32(y) + i32(round(f32(d) / f32(2u * y))));
    let r = bitcast<i32>(n - y * y);
    y = y + select(0u, 1u, r - i32(y) > 0) - select(0u, 1u, r + i32(y) <= 0);
    return bitcast<f32>((u32((e + 125) >> 1u) << 23u) + y);
}
