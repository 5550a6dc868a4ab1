// f32 `/` over the whole range. WGSL (and Vulkan) bound a driver's f32
// division only for divisors of magnitude in [2^-126, 2^126]; NVIDIA's
// Vulkan driver multiplies by a reciprocal that flushes to zero beyond
// (26 / 3.2e38 gave 0) and gave NaN for x / 0. Specials are decided on
// the bits, a divisor above 2^126 is scaled by 1/4 first and a subnormal
// one by 2^24 (both operands:
// the quotient is unchanged, and x / 4 only loses bits where the
// quotient is far below f32's range); everything else is the driver's `/`.
fn relok_fdiv32(x: f32, y: f32) -> f32 {
    let xb = bitcast<u32>(x);
    let yb = bitcast<u32>(y);
    let sign = (xb ^ yb) & 0x80000000u;
    let xa = xb & 0x7fffffffu;
    let ya = yb & 0x7fffffffu;
    if (xa > 0x7f800000u || ya > 0x7f800000u || (xa == 0u && ya == 0u) || (xa == 0x7f800000u && ya == 0x7f800000u)) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (ya == 0u || xa == 0x7f800000u) { return bitcast<f32>(sign | 0x7f800000u); }
    if (ya == 0x7f800000u) { return bitcast<f32>(sign); }
    if (ya > 0x7e800000u) { return (x * 0.25) / (y * 0.25); }
    if (ya < 0x00800000u) {
        // A subnormal divisor, made normal on the bits (times 2^24: a
        // driver that flushes subnormals would read the float as zero),
        // and the dividend times 2^24 too.
        let k = firstLeadingBit(ya);
        let y24 = bitcast<f32>((yb & 0x80000000u) | ((k + 2u) << 23u) | ((ya << (23u - k)) & 0x7fffffu));
        return (x * 16777216.0) / y24;
    }
    return x / y;
}
