//! WGSL helper functions for what WGSL lacks: 64-bit integers (`i64`,
//! `u64` as `vec2<u32>` (low, high)), float conversions and `fmod` done on
//! the bits, and NaN tests by bits (a driver may assume no NaNs and fold
//! `x != x`; integer operations it cannot fold).
//!
//! A module gets each helper it uses (and what that one calls) once, in the
//! order of [`Helper`], so the text is byte-stable. Every helper's WGSL has
//! a line-by-line Rust transcription in the tests below, checked against
//! Rust's native operations (the IR semantics of `relok_ir::eval`).

/// One helper function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Helper {
    /// `relok_isnan(x: f32) -> bool`.
    IsNan,
    /// `relok_add64(a, b)`: wrapping, with the carry.
    Add64,
    /// `relok_sub64(a, b)`: wrapping, with the borrow (`neg` is `0 - a`).
    Sub64,
    /// `relok_mul32(a: u32, b: u32) -> vec2<u32>`: the full product.
    Mul32,
    /// `relok_mul64(a, b)`: the low 64 bits of the product.
    Mul64,
    /// `relok_lt_u64(a, b) -> bool`.
    LtU64,
    /// `relok_lt_i64(a, b) -> bool`.
    LtI64,
    /// `relok_shl64(a, n: u32)`: `n` modulo 64.
    Shl64,
    /// `relok_shr64(a, n: u32)`: logical, `n` modulo 64.
    Shr64,
    /// `relok_sar64(a, n: u32)`: arithmetic, `n` modulo 64.
    Sar64,
    /// `relok_udivmod64(n, d) -> vec4<u32>`: (quotient, remainder).
    UDivMod64,
    /// `relok_sdivmod64(n, d) -> vec4<u32>`: (quotient, remainder), signed.
    SDivMod64,
    /// `relok_u64_to_f32(a) -> f32`: to nearest, ties to even.
    U64ToF32,
    /// `relok_i64_to_f32(a) -> f32`: to nearest, ties to even.
    I64ToF32,
    /// `relok_f32_to_i32(x) -> i32`: toward zero, saturating, NaN to 0.
    F32ToI32,
    /// `relok_f32_to_u32(x) -> u32`: toward zero, saturating, NaN to 0.
    F32ToU32,
    /// `relok_f32_to_u64(x)`: toward zero, saturating, NaN to 0.
    F32ToU64,
    /// `relok_f32_to_i64(x)`: toward zero, saturating, NaN to 0.
    F32ToI64,
    /// `relok_fmod32(x, y) -> f32`: C's `fmodf`, exactly.
    Fmod32,
}

impl Helper {
    /// Every helper, in output order.
    const ALL: [Helper; 19] = [
        Helper::IsNan,
        Helper::Add64,
        Helper::Sub64,
        Helper::Mul32,
        Helper::Mul64,
        Helper::LtU64,
        Helper::LtI64,
        Helper::Shl64,
        Helper::Shr64,
        Helper::Sar64,
        Helper::UDivMod64,
        Helper::SDivMod64,
        Helper::U64ToF32,
        Helper::I64ToF32,
        Helper::F32ToI32,
        Helper::F32ToU32,
        Helper::F32ToU64,
        Helper::F32ToI64,
        Helper::Fmod32,
    ];

    /// The WGSL function's name.
    pub(super) const fn name(self) -> &'static str {
        match self {
            Helper::IsNan => "relok_isnan",
            Helper::Add64 => "relok_add64",
            Helper::Sub64 => "relok_sub64",
            Helper::Mul32 => "relok_mul32",
            Helper::Mul64 => "relok_mul64",
            Helper::LtU64 => "relok_lt_u64",
            Helper::LtI64 => "relok_lt_i64",
            Helper::Shl64 => "relok_shl64",
            Helper::Shr64 => "relok_shr64",
            Helper::Sar64 => "relok_sar64",
            Helper::UDivMod64 => "relok_udivmod64",
            Helper::SDivMod64 => "relok_sdivmod64",
            Helper::U64ToF32 => "relok_u64_to_f32",
            Helper::I64ToF32 => "relok_i64_to_f32",
            Helper::F32ToI32 => "relok_f32_to_i32",
            Helper::F32ToU32 => "relok_f32_to_u32",
            Helper::F32ToU64 => "relok_f32_to_u64",
            Helper::F32ToI64 => "relok_f32_to_i64",
            Helper::Fmod32 => "relok_fmod32",
        }
    }

    /// The helpers this one calls.
    const fn deps(self) -> &'static [Helper] {
        match self {
            Helper::Mul64 => &[Helper::Mul32],
            Helper::UDivMod64 => &[Helper::LtU64, Helper::Sub64],
            Helper::SDivMod64 => &[Helper::UDivMod64, Helper::Sub64],
            Helper::U64ToF32 => &[Helper::Shl64],
            Helper::I64ToF32 => &[Helper::U64ToF32, Helper::Sub64],
            Helper::F32ToU64 => &[Helper::Shl64],
            Helper::F32ToI64 => &[Helper::Shl64, Helper::Sub64],
            _ => &[],
        }
    }

    /// The WGSL text.
    const fn text(self) -> &'static str {
        match self {
            Helper::IsNan => ISNAN,
            Helper::Add64 => ADD64,
            Helper::Sub64 => SUB64,
            Helper::Mul32 => MUL32,
            Helper::Mul64 => MUL64,
            Helper::LtU64 => LT_U64,
            Helper::LtI64 => LT_I64,
            Helper::Shl64 => SHL64,
            Helper::Shr64 => SHR64,
            Helper::Sar64 => SAR64,
            Helper::UDivMod64 => UDIVMOD64,
            Helper::SDivMod64 => SDIVMOD64,
            Helper::U64ToF32 => U64_TO_F32,
            Helper::I64ToF32 => I64_TO_F32,
            Helper::F32ToI32 => F32_TO_I32,
            Helper::F32ToU32 => F32_TO_U32,
            Helper::F32ToU64 => F32_TO_U64,
            Helper::F32ToI64 => F32_TO_I64,
            Helper::Fmod32 => FMOD32,
        }
    }
}

/// The helpers a module uses (a bit per [`Helper`], closed under calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Used(u32);

impl Used {
    /// Adds `h` and what it calls.
    pub(super) fn insert(&mut self, h: Helper) {
        self.0 |= 1 << h as u32;
        for &d in h.deps() {
            self.insert(d);
        }
    }

    /// Adds every helper of `other`.
    pub(super) fn extend(&mut self, other: Used) {
        self.0 |= other.0;
    }

    /// The WGSL text of the helpers used, in [`Helper`] order.
    pub(super) fn text(self) -> String {
        Helper::ALL.iter().filter(|&&h| self.0 & (1 << h as u32) != 0).map(|h| h.text()).collect()
    }
}

const ISNAN: &str = "\
// NaN by its bits: a driver may assume no NaNs and fold `x != x`.
fn relok_isnan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

";

const ADD64: &str = "\
fn relok_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

";

const SUB64: &str = "\
fn relok_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

";

const MUL32: &str = "\
// The full 64-bit product of two u32 from 16-bit halves (WGSL has no mulhi).
fn relok_mul32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((mid << 16u) | (p00 & 0xffffu), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

";

const MUL64: &str = "\
fn relok_mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = relok_mul32(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}

";

const LT_U64: &str = "\
fn relok_lt_u64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

";

const LT_I64: &str = "\
fn relok_lt_i64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return bitcast<i32>(a.y) < bitcast<i32>(b.y) || (a.y == b.y && a.x < b.x);
}

";

const SHL64: &str = "\
fn relok_shl64(a: vec2<u32>, n: u32) -> vec2<u32> {
    let s = n & 63u;
    if (s == 0u) { return a; }
    if (s < 32u) { return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s))); }
    return vec2<u32>(0u, a.x << (s - 32u));
}

";

const SHR64: &str = "\
fn relok_shr64(a: vec2<u32>, n: u32) -> vec2<u32> {
    let s = n & 63u;
    if (s == 0u) { return a; }
    if (s < 32u) { return vec2<u32>((a.x >> s) | (a.y << (32u - s)), a.y >> s); }
    return vec2<u32>(a.y >> (s - 32u), 0u);
}

";

const SAR64: &str = "\
fn relok_sar64(a: vec2<u32>, n: u32) -> vec2<u32> {
    let s = n & 63u;
    let h = bitcast<i32>(a.y);
    if (s == 0u) { return a; }
    if (s < 32u) { return vec2<u32>((a.x >> s) | (a.y << (32u - s)), bitcast<u32>(h >> s)); }
    return vec2<u32>(bitcast<u32>(h >> (s - 32u)), bitcast<u32>(h >> 31u));
}

";

const UDIVMOD64: &str = "\
// (n / d, n % d) as (q.x, q.y, r.x, r.y); n / 0 = 0 and n % 0 = n (the
// IR's rule). Restoring long division, one quotient bit a step; `top` is
// the bit shifted out of r (then r >= d).
fn relok_udivmod64(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    if (d.x == 0u && d.y == 0u) { return vec4<u32>(0u, 0u, n.x, n.y); }
    if (n.y == 0u && d.y == 0u) { return vec4<u32>(n.x / d.x, 0u, n.x % d.x, 0u); }
    var q = n;
    var r = vec2<u32>(0u, 0u);
    for (var k = 0u; k < 64u; k += 1u) {
        let top = r.y >> 31u;
        r = vec2<u32>((r.x << 1u) | (q.y >> 31u), (r.y << 1u) | (r.x >> 31u));
        q = vec2<u32>(q.x << 1u, (q.y << 1u) | (q.x >> 31u));
        if (top != 0u || !relok_lt_u64(r, d)) {
            r = relok_sub64(r, d);
            q.x = q.x | 1u;
        }
    }
    return vec4<u32>(q, r);
}

";

const SDIVMOD64: &str = "\
// Signed: on the magnitudes; the quotient negative when the signs differ,
// the remainder with the dividend's sign (truncating division). MIN / -1
// wraps to MIN, MIN % -1 is 0; n / 0 = 0, n % 0 = n.
fn relok_sdivmod64(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    let zero = vec2<u32>(0u, 0u);
    let nneg = (n.y >> 31u) != 0u;
    let dneg = (d.y >> 31u) != 0u;
    let qr = relok_udivmod64(select(n, relok_sub64(zero, n), nneg), select(d, relok_sub64(zero, d), dneg));
    let q = select(qr.xy, relok_sub64(zero, qr.xy), nneg != dneg);
    let r = select(qr.zw, relok_sub64(zero, qr.zw), nneg);
    return vec4<u32>(q, r);
}

";

const U64_TO_F32: &str = "\
// To nearest, ties to even, on the bits: the leading one moved to bit 63,
// 24 significant bits kept, the 40 below them rounding.
fn relok_u64_to_f32(a: vec2<u32>) -> f32 {
    if (a.x == 0u && a.y == 0u) { return 0.0f; }
    let z = select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u);
    let m = relok_shl64(a, z);
    let mant = m.y >> 8u;
    let rest = m.y & 0xffu;
    let up = rest > 0x80u || (rest == 0x80u && (m.x != 0u || (mant & 1u) != 0u));
    return bitcast<f32>(((189u - z) << 23u) + mant + select(0u, 1u, up));
}

";

const I64_TO_F32: &str = "\
fn relok_i64_to_f32(a: vec2<u32>) -> f32 {
    let neg = (a.y >> 31u) != 0u;
    let f = relok_u64_to_f32(select(a, relok_sub64(vec2<u32>(0u, 0u), a), neg));
    return bitcast<f32>(bitcast<u32>(f) | select(0u, 0x80000000u, neg));
}

";

const F32_TO_I32: &str = "\
// Toward zero, saturating, NaN to 0, on the bits (value = m * 2^(e - 150)).
fn relok_f32_to_i32(x: f32) -> i32 {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    let neg = (b >> 31u) != 0u;
    if ((b & 0x7fffffffu) > 0x7f800000u || e < 127u) { return 0i; }
    if (e >= 158u) { return select(2147483647i, bitcast<i32>(0x80000000u), neg); }
    let m = (b & 0x7fffffu) | 0x800000u;
    var u: u32;
    if (e >= 150u) { u = m << (e - 150u); } else { u = m >> (150u - e); }
    return bitcast<i32>(select(u, 0u - u, neg));
}

";

const F32_TO_U32: &str = "\
// Toward zero, saturating, NaN to 0, on the bits (value = m * 2^(e - 150)).
fn relok_f32_to_u32(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    if ((b & 0x7fffffffu) > 0x7f800000u || (b >> 31u) != 0u || e < 127u) { return 0u; }
    if (e >= 159u) { return 0xffffffffu; }
    let m = (b & 0x7fffffu) | 0x800000u;
    if (e >= 150u) { return m << (e - 150u); }
    return m >> (150u - e);
}

";

const F32_TO_U64: &str = "\
// Toward zero, saturating, NaN to 0, on the bits (value = m * 2^(e - 150)).
fn relok_f32_to_u64(x: f32) -> vec2<u32> {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    if ((b & 0x7fffffffu) > 0x7f800000u || (b >> 31u) != 0u || e < 127u) { return vec2<u32>(0u, 0u); }
    if (e >= 191u) { return vec2<u32>(0xffffffffu, 0xffffffffu); }
    let m = vec2<u32>((b & 0x7fffffu) | 0x800000u, 0u);
    if (e >= 150u) { return relok_shl64(m, e - 150u); }
    return vec2<u32>(m.x >> (150u - e), 0u);
}

";

const F32_TO_I64: &str = "\
// Toward zero, saturating, NaN to 0, on the bits (value = m * 2^(e - 150)).
fn relok_f32_to_i64(x: f32) -> vec2<u32> {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    let neg = (b >> 31u) != 0u;
    if ((b & 0x7fffffffu) > 0x7f800000u || e < 127u) { return vec2<u32>(0u, 0u); }
    if (e >= 190u) { return select(vec2<u32>(0xffffffffu, 0x7fffffffu), vec2<u32>(0u, 0x80000000u), neg); }
    let m = vec2<u32>((b & 0x7fffffu) | 0x800000u, 0u);
    var u: vec2<u32>;
    if (e >= 150u) { u = relok_shl64(m, e - 150u); } else { u = vec2<u32>(m.x >> (150u - e), 0u); }
    return select(u, relok_sub64(vec2<u32>(0u, 0u), u), neg);
}

";

const FMOD32: &str = "\
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
        loop { if ((i >> 31u) != 0u) { break; } ex -= 1i; i = i << 1u; }
        ux = ux << u32(1i - ex);
    } else {
        ux = (ux & 0x7fffffu) | 0x800000u;
    }
    if (ey == 0i) {
        var i = uy << 9u;
        loop { if ((i >> 31u) != 0u) { break; } ey -= 1i; i = i << 1u; }
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
    }
    let i = ux - uy;
    if ((i >> 31u) == 0u) {
        if (i == 0u) { return bitcast<f32>(sx); }
        ux = i;
    }
    loop { if ((ux >> 23u) != 0u) { break; } ux = ux << 1u; ex -= 1i; }
    if (ex > 0i) {
        ux = (ux - 0x800000u) | (u32(ex) << 23u);
    } else {
        ux = ux >> u32(1i - ex);
    }
    return bitcast<f32>(ux | sx);
}

";

/// Rust transcriptions of the helpers, line by line (`u32` arithmetic
/// wrapping as WGSL's; a shift asserts its amount is below 32, where WGSL
/// would take it modulo 32), checked against Rust's native operations.
#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct V2 {
        x: u32,
        y: u32,
    }
    const fn v2(x: u32, y: u32) -> V2 {
        V2 { x, y }
    }
    fn of(a: u64) -> V2 {
        v2(a as u32, (a >> 32) as u32)
    }
    fn to(a: V2) -> u64 {
        u64::from(a.x) | (u64::from(a.y) << 32)
    }
    fn shl(a: u32, s: u32) -> u32 {
        assert!(s < 32, "shift by {s}");
        a << s
    }
    fn shr(a: u32, s: u32) -> u32 {
        assert!(s < 32, "shift by {s}");
        a >> s
    }
    fn sar(a: i32, s: u32) -> i32 {
        assert!(s < 32, "shift by {s}");
        a >> s
    }
    fn sel<T>(f: T, t: T, c: bool) -> T {
        if c { t } else { f }
    }
    fn b2u(c: bool) -> u32 {
        sel(0, 1, c)
    }

    fn isnan(x: f32) -> bool {
        (x.to_bits() & 0x7fff_ffff) > 0x7f80_0000
    }

    fn add64(a: V2, b: V2) -> V2 {
        let lo = a.x.wrapping_add(b.x);
        v2(lo, a.y.wrapping_add(b.y).wrapping_add(b2u(lo < a.x)))
    }

    fn sub64(a: V2, b: V2) -> V2 {
        v2(a.x.wrapping_sub(b.x), a.y.wrapping_sub(b.y).wrapping_sub(b2u(a.x < b.x)))
    }

    fn mul32(a: u32, b: u32) -> V2 {
        let a0 = a & 0xffff;
        let a1 = shr(a, 16);
        let b0 = b & 0xffff;
        let b1 = shr(b, 16);
        let p00 = a0.wrapping_mul(b0);
        let p01 = a0.wrapping_mul(b1);
        let p10 = a1.wrapping_mul(b0);
        let p11 = a1.wrapping_mul(b1);
        let mid = shr(p00, 16).wrapping_add(p01 & 0xffff).wrapping_add(p10 & 0xffff);
        v2(
            shl(mid, 16) | (p00 & 0xffff),
            p11.wrapping_add(shr(p01, 16)).wrapping_add(shr(p10, 16)).wrapping_add(shr(mid, 16)),
        )
    }

    fn mul64(a: V2, b: V2) -> V2 {
        let p = mul32(a.x, b.x);
        v2(p.x, p.y.wrapping_add(a.x.wrapping_mul(b.y)).wrapping_add(a.y.wrapping_mul(b.x)))
    }

    fn lt_u64(a: V2, b: V2) -> bool {
        a.y < b.y || (a.y == b.y && a.x < b.x)
    }

    fn lt_i64(a: V2, b: V2) -> bool {
        (a.y as i32) < (b.y as i32) || (a.y == b.y && a.x < b.x)
    }

    fn shl64(a: V2, n: u32) -> V2 {
        let s = n & 63;
        if s == 0 {
            return a;
        }
        if s < 32 {
            return v2(shl(a.x, s), shl(a.y, s) | shr(a.x, 32 - s));
        }
        v2(0, shl(a.x, s - 32))
    }

    fn shr64(a: V2, n: u32) -> V2 {
        let s = n & 63;
        if s == 0 {
            return a;
        }
        if s < 32 {
            return v2(shr(a.x, s) | shl(a.y, 32 - s), shr(a.y, s));
        }
        v2(shr(a.y, s - 32), 0)
    }

    fn sar64(a: V2, n: u32) -> V2 {
        let s = n & 63;
        let h = a.y as i32;
        if s == 0 {
            return a;
        }
        if s < 32 {
            return v2(shr(a.x, s) | shl(a.y, 32 - s), sar(h, s) as u32);
        }
        v2(sar(h, s - 32) as u32, sar(h, 31) as u32)
    }

    fn udivmod64(n: V2, d: V2) -> (V2, V2) {
        if d.x == 0 && d.y == 0 {
            return (v2(0, 0), n);
        }
        if n.y == 0 && d.y == 0 {
            return (v2(n.x / d.x, 0), v2(n.x % d.x, 0));
        }
        let mut q = n;
        let mut r = v2(0, 0);
        for _ in 0..64 {
            let top = shr(r.y, 31);
            r = v2(shl(r.x, 1) | shr(q.y, 31), shl(r.y, 1) | shr(r.x, 31));
            q = v2(shl(q.x, 1), shl(q.y, 1) | shr(q.x, 31));
            if top != 0 || !lt_u64(r, d) {
                r = sub64(r, d);
                q.x |= 1;
            }
        }
        (q, r)
    }

    fn sdivmod64(n: V2, d: V2) -> (V2, V2) {
        let zero = v2(0, 0);
        let nneg = shr(n.y, 31) != 0;
        let dneg = shr(d.y, 31) != 0;
        let qr = udivmod64(sel(n, sub64(zero, n), nneg), sel(d, sub64(zero, d), dneg));
        let q = sel(qr.0, sub64(zero, qr.0), nneg != dneg);
        let r = sel(qr.1, sub64(zero, qr.1), nneg);
        (q, r)
    }

    fn u64_to_f32(a: V2) -> f32 {
        if a.x == 0 && a.y == 0 {
            return 0.0;
        }
        let z = sel(a.y.leading_zeros(), 32 + a.x.leading_zeros(), a.y == 0);
        let m = shl64(a, z);
        let mant = shr(m.y, 8);
        let rest = m.y & 0xff;
        let up = rest > 0x80 || (rest == 0x80 && (m.x != 0 || (mant & 1) != 0));
        f32::from_bits(shl(189 - z, 23).wrapping_add(mant).wrapping_add(b2u(up)))
    }

    fn i64_to_f32(a: V2) -> f32 {
        let neg = shr(a.y, 31) != 0;
        let f = u64_to_f32(sel(a, sub64(v2(0, 0), a), neg));
        f32::from_bits(f.to_bits() | sel(0, 0x8000_0000, neg))
    }

    fn f32_to_i32(x: f32) -> i32 {
        let b = x.to_bits();
        let e = shr(b, 23) & 0xff;
        let neg = shr(b, 31) != 0;
        if (b & 0x7fff_ffff) > 0x7f80_0000 || e < 127 {
            return 0;
        }
        if e >= 158 {
            return sel(2_147_483_647, 0x8000_0000u32 as i32, neg);
        }
        let m = (b & 0x7f_ffff) | 0x80_0000;
        let u = if e >= 150 { shl(m, e - 150) } else { shr(m, 150 - e) };
        sel(u, 0u32.wrapping_sub(u), neg) as i32
    }

    fn f32_to_u32(x: f32) -> u32 {
        let b = x.to_bits();
        let e = shr(b, 23) & 0xff;
        if (b & 0x7fff_ffff) > 0x7f80_0000 || shr(b, 31) != 0 || e < 127 {
            return 0;
        }
        if e >= 159 {
            return 0xffff_ffff;
        }
        let m = (b & 0x7f_ffff) | 0x80_0000;
        if e >= 150 {
            return shl(m, e - 150);
        }
        shr(m, 150 - e)
    }

    fn f32_to_u64(x: f32) -> V2 {
        let b = x.to_bits();
        let e = shr(b, 23) & 0xff;
        if (b & 0x7fff_ffff) > 0x7f80_0000 || shr(b, 31) != 0 || e < 127 {
            return v2(0, 0);
        }
        if e >= 191 {
            return v2(0xffff_ffff, 0xffff_ffff);
        }
        let m = v2((b & 0x7f_ffff) | 0x80_0000, 0);
        if e >= 150 {
            return shl64(m, e - 150);
        }
        v2(shr(m.x, 150 - e), 0)
    }

    fn f32_to_i64(x: f32) -> V2 {
        let b = x.to_bits();
        let e = shr(b, 23) & 0xff;
        let neg = shr(b, 31) != 0;
        if (b & 0x7fff_ffff) > 0x7f80_0000 || e < 127 {
            return v2(0, 0);
        }
        if e >= 190 {
            return sel(v2(0xffff_ffff, 0x7fff_ffff), v2(0, 0x8000_0000), neg);
        }
        let m = v2((b & 0x7f_ffff) | 0x80_0000, 0);
        let u = if e >= 150 { shl64(m, e - 150) } else { v2(shr(m.x, 150 - e), 0) };
        sel(u, sub64(v2(0, 0), u), neg)
    }

    fn fmod32(x: f32, y: f32) -> f32 {
        let mut ux = x.to_bits();
        let mut uy = y.to_bits();
        let mut ex = (shr(ux, 23) & 0xff) as i32;
        let mut ey = (shr(uy, 23) & 0xff) as i32;
        let sx = ux & 0x8000_0000;
        if shl(uy, 1) == 0 || (uy & 0x7fff_ffff) > 0x7f80_0000 || ex == 255 {
            return f32::from_bits(0x7fc0_0000);
        }
        if shl(ux, 1) <= shl(uy, 1) {
            if shl(ux, 1) == shl(uy, 1) {
                return f32::from_bits(sx);
            }
            return f32::from_bits(ux);
        }
        if ex == 0 {
            let mut i = shl(ux, 9);
            loop {
                if shr(i, 31) != 0 {
                    break;
                }
                ex -= 1;
                i = shl(i, 1);
            }
            ux = shl(ux, (1 - ex) as u32);
        } else {
            ux = (ux & 0x7f_ffff) | 0x80_0000;
        }
        if ey == 0 {
            let mut i = shl(uy, 9);
            loop {
                if shr(i, 31) != 0 {
                    break;
                }
                ey -= 1;
                i = shl(i, 1);
            }
            uy = shl(uy, (1 - ey) as u32);
        } else {
            uy = (uy & 0x7f_ffff) | 0x80_0000;
        }
        loop {
            if ex <= ey {
                break;
            }
            let i = ux.wrapping_sub(uy);
            if shr(i, 31) == 0 {
                if i == 0 {
                    return f32::from_bits(sx);
                }
                ux = i;
            }
            ux = shl(ux, 1);
            ex -= 1;
        }
        let i = ux.wrapping_sub(uy);
        if shr(i, 31) == 0 {
            if i == 0 {
                return f32::from_bits(sx);
            }
            ux = i;
        }
        loop {
            if shr(ux, 23) != 0 {
                break;
            }
            ux = shl(ux, 1);
            ex -= 1;
        }
        if ex > 0 {
            ux = ux.wrapping_sub(0x80_0000) | shl(ex as u32, 23);
        } else {
            ux = shr(ux, (1 - ex) as u32);
        }
        f32::from_bits(ux | sx)
    }

    /// 64-bit values biased towards the edges: 0, 1, MIN, MAX, -1, powers
    /// of two and their neighbours, small ones, equal halves.
    fn any64() -> impl Strategy<Value = u64> {
        prop_oneof![
            any::<u64>(),
            (0u32..64, -2i64..=2).prop_map(|(k, d)| (1u64 << k).wrapping_add(d as u64)),
            (0u32..64, -2i64..=2).prop_map(|(k, d)| (1u64 << k).wrapping_add(d as u64).wrapping_neg()),
            any::<u32>().prop_map(u64::from),
            any::<u16>().prop_map(|x| u64::from(x) * 0x0001_0001_0001_0001),
            Just(i64::MIN as u64),
            Just(i64::MAX as u64),
            Just(u64::MAX),
        ]
    }

    /// f32 bit patterns biased towards the edges: zeros, subnormals,
    /// infinities, NaNs, the integer limits and their neighbours.
    fn any_f32() -> impl Strategy<Value = f32> {
        prop_oneof![
            any::<u32>().prop_map(f32::from_bits),
            (0u32..0x80_0000, any::<bool>()).prop_map(|(m, s)| f32::from_bits(m | if s { 0x8000_0000 } else { 0 })),
            (120u32..200, -2i32..=2, any::<bool>())
                .prop_map(|(e, d, s)| f32::from_bits(((e << 23) as i32 + d) as u32 | if s { 0x8000_0000 } else { 0 })),
            prop::sample::select(vec![0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, 0.5, -0.5, 1.0, -1.0]),
        ]
    }

    fn same_f32(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn integer_ops_match_rust(a in any64(), b in any64()) {
            prop_assert_eq!(to(add64(of(a), of(b))), a.wrapping_add(b));
            prop_assert_eq!(to(sub64(of(a), of(b))), a.wrapping_sub(b));
            prop_assert_eq!(to(sub64(of(0), of(a))), a.wrapping_neg());
            prop_assert_eq!(to(mul32(a as u32, b as u32)), u64::from(a as u32) * u64::from(b as u32));
            prop_assert_eq!(to(mul64(of(a), of(b))), a.wrapping_mul(b));
            prop_assert_eq!(lt_u64(of(a), of(b)), a < b);
            prop_assert_eq!(lt_i64(of(a), of(b)), (a as i64) < (b as i64));
            let n = b as u32;
            prop_assert_eq!(to(shl64(of(a), n)), a.wrapping_shl(n % 64));
            prop_assert_eq!(to(shr64(of(a), n)), a.wrapping_shr(n % 64));
            prop_assert_eq!(to(sar64(of(a), n)), (a as i64).wrapping_shr(n % 64) as u64);
        }

        #[test]
        fn division_matches_the_ir(a in any64(), b in any64()) {
            use relok_ir::{BinaryOp, Scalar};
            let (q, r) = udivmod64(of(a), of(b));
            prop_assert_eq!(to(q), relok_ir::eval::binary(BinaryOp::Div, Scalar::U64, a, b));
            prop_assert_eq!(to(r), relok_ir::eval::binary(BinaryOp::Rem, Scalar::U64, a, b));
            let (q, r) = sdivmod64(of(a), of(b));
            prop_assert_eq!(to(q), relok_ir::eval::binary(BinaryOp::Div, Scalar::I64, a, b));
            prop_assert_eq!(to(r), relok_ir::eval::binary(BinaryOp::Rem, Scalar::I64, a, b));
        }

        #[test]
        fn conversions_match_rust_as(a in any64(), x in any_f32()) {
            prop_assert_eq!(u64_to_f32(of(a)).to_bits(), (a as f32).to_bits());
            prop_assert_eq!(i64_to_f32(of(a)).to_bits(), (a as i64 as f32).to_bits());
            prop_assert_eq!(u64_to_f32(v2(a as u32, 0)).to_bits(), (a as u32 as f32).to_bits());
            prop_assert_eq!(f32_to_i32(x), x as i32);
            prop_assert_eq!(f32_to_u32(x), x as u32);
            prop_assert_eq!(to(f32_to_u64(x)), x as u64);
            prop_assert_eq!(to(f32_to_i64(x)), x as i64 as u64);
            prop_assert_eq!(isnan(x), x.is_nan());
        }

        #[test]
        fn fmod_matches_rust_rem(x in any_f32(), y in any_f32()) {
            let r = fmod32(x, y);
            prop_assert!(same_f32(r, x % y), "{:?} % {:?}: {:?} ({:#x}), Rust {:?} ({:#x})", x, y, r, r.to_bits(), x % y, (x % y).to_bits());
        }
    }

    #[test]
    fn signed_division_edges() {
        let (min, m1) = (of(i64::MIN as u64), of(u64::MAX));
        assert_eq!(sdivmod64(min, m1), (min, v2(0, 0)));
        assert_eq!(sdivmod64(of(7), of(0)), (v2(0, 0), of(7)));
        assert_eq!(sdivmod64(of(-7i64 as u64), of(2)), (of(-3i64 as u64), of(-1i64 as u64)));
        assert_eq!(udivmod64(of(u64::MAX), of(u64::MAX - 1)), (of(1), of(1)));
    }

    #[test]
    fn fmod_of_close_and_subnormal_operands() {
        let cases = [(5.5f32, 2.0f32), (-5.5, 2.0), (1e30, 3.0), (f32::from_bits(7), f32::from_bits(3)), (1.0, f32::from_bits(1)), (-0.0, 1.0), (3.0, 3.0), (-3.0, 3.0), (f32::MAX, f32::MIN_POSITIVE)];
        for (x, y) in cases {
            assert!(same_f32(fmod32(x, y), x % y), "{x} % {y}");
        }
    }

    /// The helpers' texts are what the enum lists, in order, each once.
    #[test]
    fn texts_name_their_function() {
        for h in super::Helper::ALL {
            assert!(h.text().contains(&format!("fn {}(", h.name())), "{h:?}");
        }
        let mut all = super::Used::default();
        super::Helper::ALL.iter().for_each(|&h| all.insert(h));
        let text = all.text();
        for h in super::Helper::ALL {
            assert_eq!(text.matches(&format!("fn {}(", h.name())).count(), 1, "{h:?}");
        }
    }
}
