//! WGSL helper functions for what WGSL lacks: 64-bit integers (`i64`,
//! `u64` as `vec2<u32>` (low, high)), `f64` (its bits as `vec2<u32>`,
//! IEEE binary64 emulated exactly: naga cannot bitcast to f64 and Metal
//! has none), float conversions and `fmod` done on the bits, and NaN tests
//! by bits (a driver may assume no NaNs and fold `x != x`; integer
//! operations it cannot fold).
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
    /// `relok_isnan64(a) -> bool`: f64 (as `vec2<u32>` bits) NaN.
    IsNan64,
    /// `relok_eq_f64(a, b) -> bool`: IEEE `==` (NaN unordered, -0 == +0).
    EqF64,
    /// `relok_lt_f64(a, b) -> bool`: IEEE `<`.
    LtF64,
    /// `relok_min_f64(a, b)`: Rust's `f64::min` on x86-64.
    MinF64,
    /// `relok_max_f64(a, b)`: Rust's `f64::max` on x86-64.
    MaxF64,
    /// `relok_u64_to_f64(a)`: to nearest, ties to even.
    U64ToF64,
    /// `relok_i64_to_f64(a)`: to nearest, ties to even.
    I64ToF64,
    /// `relok_f32_to_f64(x: f32)`: exact.
    F32ToF64,
    /// `relok_rsr64(m, sh)`: a right shift rounding to nearest even.
    Rsr64,
    /// `relok_f64_to_f32(a) -> f32`: to nearest, ties to even.
    F64ToF32,
    /// `relok_pack64(s, e, m)`: a rounded f64 from sign, exponent, significand.
    Pack64,
    /// `relok_unpack64(a) -> vec3<u32>`: normalised significand and exponent.
    Unpack64,
    /// `relok_nan2_64(a, b)`: the first NaN operand, quieted.
    Nan2F64,
    /// `relok_fadd64(a, b)`: f64 `+`.
    FAdd64,
    /// `relok_fsub64(a, b)`: f64 `-`.
    FSub64,
    /// `relok_mul128(a, b) -> vec4<u32>`: the full product of two u64.
    Mul128,
    /// `relok_fmul64(a, b)`: f64 `*`.
    FMul64,
    /// `relok_fdiv64(a, b)`: f64 `/`.
    FDiv64,
    /// `relok_fsqrt64(a)`: f64 square root.
    FSqrt64,
    /// `relok_frem64(a, b)`: C's `fmod`, exactly.
    FRem64,
    /// `relok_f64_mag(a)`: |x| toward zero as a saturated u64.
    F64Mag,
    /// `relok_f64_to_i32(a) -> i32`: toward zero, saturating, NaN to 0.
    F64ToI32,
    /// `relok_f64_to_u32(a) -> u32`: toward zero, saturating, NaN to 0.
    F64ToU32,
    /// `relok_f64_to_i64(a)`: toward zero, saturating, NaN to 0.
    F64ToI64,
    /// `relok_f64_to_u64(a)`: toward zero, saturating, NaN to 0.
    F64ToU64,
}

impl Helper {
    /// Every helper, in output order.
    const ALL: [Helper; 44] = [
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
        Helper::IsNan64,
        Helper::EqF64,
        Helper::LtF64,
        Helper::MinF64,
        Helper::MaxF64,
        Helper::U64ToF64,
        Helper::I64ToF64,
        Helper::F32ToF64,
        Helper::Rsr64,
        Helper::F64ToF32,
        Helper::Pack64,
        Helper::Unpack64,
        Helper::Nan2F64,
        Helper::FAdd64,
        Helper::FSub64,
        Helper::Mul128,
        Helper::FMul64,
        Helper::FDiv64,
        Helper::FSqrt64,
        Helper::FRem64,
        Helper::F64Mag,
        Helper::F64ToI32,
        Helper::F64ToU32,
        Helper::F64ToI64,
        Helper::F64ToU64,
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
            Helper::IsNan64 => "relok_isnan64",
            Helper::EqF64 => "relok_eq_f64",
            Helper::LtF64 => "relok_lt_f64",
            Helper::MinF64 => "relok_min_f64",
            Helper::MaxF64 => "relok_max_f64",
            Helper::U64ToF64 => "relok_u64_to_f64",
            Helper::I64ToF64 => "relok_i64_to_f64",
            Helper::F32ToF64 => "relok_f32_to_f64",
            Helper::Rsr64 => "relok_rsr64",
            Helper::F64ToF32 => "relok_f64_to_f32",
            Helper::Pack64 => "relok_pack64",
            Helper::Unpack64 => "relok_unpack64",
            Helper::Nan2F64 => "relok_nan2_64",
            Helper::FAdd64 => "relok_fadd64",
            Helper::FSub64 => "relok_fsub64",
            Helper::Mul128 => "relok_mul128",
            Helper::FMul64 => "relok_fmul64",
            Helper::FDiv64 => "relok_fdiv64",
            Helper::FSqrt64 => "relok_fsqrt64",
            Helper::FRem64 => "relok_frem64",
            Helper::F64Mag => "relok_f64_mag",
            Helper::F64ToI32 => "relok_f64_to_i32",
            Helper::F64ToU32 => "relok_f64_to_u32",
            Helper::F64ToI64 => "relok_f64_to_i64",
            Helper::F64ToU64 => "relok_f64_to_u64",
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
            Helper::EqF64 => &[Helper::IsNan64],
            Helper::LtF64 => &[Helper::IsNan64, Helper::LtU64],
            Helper::MinF64 => &[Helper::IsNan64, Helper::LtF64],
            Helper::MaxF64 => &[Helper::IsNan64, Helper::LtF64],
            Helper::U64ToF64 => &[Helper::Shl64, Helper::Add64],
            Helper::I64ToF64 => &[Helper::U64ToF64, Helper::Sub64],
            Helper::Rsr64 => &[Helper::Shr64, Helper::Shl64, Helper::Sub64, Helper::LtU64, Helper::Add64],
            Helper::F64ToF32 => &[Helper::Rsr64],
            Helper::Pack64 => &[Helper::Rsr64, Helper::Add64],
            Helper::Unpack64 => &[Helper::Shl64],
            Helper::Nan2F64 => &[Helper::IsNan64],
            Helper::FAdd64 => &[Helper::IsNan64, Helper::Nan2F64, Helper::LtU64, Helper::Shl64, Helper::Shr64, Helper::Sub64, Helper::Add64, Helper::Pack64],
            Helper::FSub64 => &[Helper::FAdd64, Helper::IsNan64],
            Helper::Mul128 => &[Helper::Mul32],
            Helper::FMul64 => &[Helper::IsNan64, Helper::Nan2F64, Helper::Unpack64, Helper::Mul128, Helper::Shl64, Helper::Pack64],
            Helper::FDiv64 => &[Helper::IsNan64, Helper::Nan2F64, Helper::Unpack64, Helper::LtU64, Helper::Shl64, Helper::Sub64, Helper::Pack64],
            Helper::FSqrt64 => &[Helper::IsNan64, Helper::Unpack64, Helper::Shl64, Helper::LtU64, Helper::Sub64, Helper::Pack64],
            Helper::FRem64 => &[Helper::IsNan64, Helper::Nan2F64, Helper::LtU64, Helper::Unpack64, Helper::Sub64, Helper::Shl64, Helper::Shr64],
            Helper::F64Mag => &[Helper::IsNan64, Helper::Shl64, Helper::Shr64],
            Helper::F64ToI32 => &[Helper::F64Mag],
            Helper::F64ToU32 => &[Helper::F64Mag],
            Helper::F64ToI64 => &[Helper::F64Mag, Helper::LtU64, Helper::Sub64],
            Helper::F64ToU64 => &[Helper::F64Mag],
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
            Helper::IsNan64 => ISNAN64,
            Helper::EqF64 => EQ_F64,
            Helper::LtF64 => LT_F64,
            Helper::MinF64 => MIN_F64,
            Helper::MaxF64 => MAX_F64,
            Helper::U64ToF64 => U64_TO_F64,
            Helper::I64ToF64 => I64_TO_F64,
            Helper::F32ToF64 => F32_TO_F64,
            Helper::Rsr64 => RSR64,
            Helper::F64ToF32 => F64_TO_F32,
            Helper::Pack64 => PACK64,
            Helper::Unpack64 => UNPACK64,
            Helper::Nan2F64 => NAN2_64,
            Helper::FAdd64 => FADD64,
            Helper::FSub64 => FSUB64,
            Helper::Mul128 => MUL128,
            Helper::FMul64 => FMUL64,
            Helper::FDiv64 => FDIV64,
            Helper::FSqrt64 => FSQRT64,
            Helper::FRem64 => FREM64,
            Helper::F64Mag => F64_MAG,
            Helper::F64ToI32 => F64_TO_I32,
            Helper::F64ToU32 => F64_TO_U32,
            Helper::F64ToI64 => F64_TO_I64,
            Helper::F64ToU64 => F64_TO_U64,
        }
    }
}

/// The helpers a module uses (a bit per [`Helper`], closed under calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Used(u64);

impl Used {
    /// Adds `h` and what it calls.
    pub(super) fn insert(&mut self, h: Helper) {
        self.0 |= 1 << h as u64;
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
        Helper::ALL.iter().filter(|&&h| self.0 & (1 << h as u64) != 0).map(|h| h.text()).collect()
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

const ISNAN64: &str = "\
// f64 is held as its bits, vec2<u32> (low, high), and computed on them
// exactly as IEEE binary64 with round to nearest even (as x86-64 does: a
// NaN operand gives the first NaN operand quieted, an invalid operation
// the default NaN 0xfff8000000000000).
fn relok_isnan64(a: vec2<u32>) -> bool {
    let h = a.y & 0x7fffffffu;
    return h > 0x7ff00000u || (h == 0x7ff00000u && a.x != 0u);
}

";

const EQ_F64: &str = "\
fn relok_eq_f64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return !relok_isnan64(a) && !relok_isnan64(b) && ((a.x == b.x && a.y == b.y) || ((a.x | b.x) == 0u && ((a.y | b.y) & 0x7fffffffu) == 0u));
}

";

const LT_F64: &str = "\
// Ordered keys: a negative's bits inverted, a positive's sign set.
fn relok_lt_f64(a: vec2<u32>, b: vec2<u32>) -> bool {
    if (relok_isnan64(a) || relok_isnan64(b) || ((a.x | b.x) == 0u && ((a.y | b.y) & 0x7fffffffu) == 0u)) { return false; }
    let ka = select(vec2<u32>(a.x, a.y | 0x80000000u), vec2<u32>(~a.x, ~a.y), (a.y >> 31u) != 0u);
    let kb = select(vec2<u32>(b.x, b.y | 0x80000000u), vec2<u32>(~b.x, ~b.y), (b.y >> 31u) != 0u);
    return relok_lt_u64(ka, kb);
}

";

const MIN_F64: &str = "\
// Rust's f64::min on x86-64: a NaN operand yields the other; equal (-0, +0): a.
fn relok_min_f64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a)) { return b; }
    if (relok_isnan64(b)) { return a; }
    return select(a, b, relok_lt_f64(b, a));
}

";

const MAX_F64: &str = "\
fn relok_max_f64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a)) { return b; }
    if (relok_isnan64(b)) { return a; }
    return select(a, b, relok_lt_f64(a, b));
}

";

const U64_TO_F64: &str = "\
// To nearest, ties to even: the leading one moved to bit 63, 53 bits kept.
fn relok_u64_to_f64(a: vec2<u32>) -> vec2<u32> {
    if (a.x == 0u && a.y == 0u) { return vec2<u32>(0u, 0u); }
    let z = select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u);
    let m = relok_shl64(a, z);
    let mant = vec2<u32>((m.x >> 11u) | (m.y << 21u), m.y >> 11u);
    let rest = m.x & 0x7ffu;
    let up = rest > 0x400u || (rest == 0x400u && (mant.x & 1u) != 0u);
    return relok_add64(vec2<u32>(mant.x, mant.y + ((1085u - z) << 20u)), vec2<u32>(select(0u, 1u, up), 0u));
}

";

const I64_TO_F64: &str = "\
fn relok_i64_to_f64(a: vec2<u32>) -> vec2<u32> {
    let neg = (a.y >> 31u) != 0u;
    let f = relok_u64_to_f64(select(a, relok_sub64(vec2<u32>(0u, 0u), a), neg));
    return vec2<u32>(f.x, f.y | select(0u, 0x80000000u, neg));
}

";

const F32_TO_F64: &str = "\
// Exact; a NaN quieted, its payload kept.
fn relok_f32_to_f64(x: f32) -> vec2<u32> {
    let b = bitcast<u32>(x);
    let s = b & 0x80000000u;
    let e = (b >> 23u) & 0xffu;
    let m = b & 0x7fffffu;
    if (e == 255u) { return vec2<u32>(m << 29u, s | 0x7ff00000u | (m >> 3u) | select(0u, 0x80000u, m != 0u)); }
    if (e == 0u) {
        if (m == 0u) { return vec2<u32>(0u, s); }
        let z = countLeadingZeros(m) - 8u;
        let n = (m << z) & 0x7fffffu;
        return vec2<u32>(n << 29u, s | ((897u - z) << 20u) | (n >> 3u));
    }
    return vec2<u32>(m << 29u, s | ((e + 896u) << 20u) | (m >> 3u));
}

";

const RSR64: &str = "\
// m >> sh, to nearest even; m < 2^63 (a shift by 64 or more gives 0).
fn relok_rsr64(m: vec2<u32>, sh: u32) -> vec2<u32> {
    if (sh == 0u) { return m; }
    if (sh >= 64u) { return vec2<u32>(0u, 0u); }
    let q = relok_shr64(m, sh);
    let r = relok_sub64(m, relok_shl64(q, sh));
    let half = relok_shl64(vec2<u32>(1u, 0u), sh - 1u);
    let up = relok_lt_u64(half, r) || (r.x == half.x && r.y == half.y && (q.x & 1u) != 0u);
    return relok_add64(q, vec2<u32>(select(0u, 1u, up), 0u));
}

";

const F64_TO_F32: &str = "\
// To nearest even, subnormals and overflow included; a NaN quieted, the
// top of its payload kept.
fn relok_f64_to_f32(a: vec2<u32>) -> f32 {
    let s = a.y & 0x80000000u;
    let e = (a.y >> 20u) & 0x7ffu;
    let hm = a.y & 0xfffffu;
    if (e == 0x7ffu) {
        if ((hm | a.x) != 0u) { return bitcast<f32>(s | 0x7fc00000u | (hm << 3u) | (a.x >> 29u)); }
        return bitcast<f32>(s | 0x7f800000u);
    }
    if (e >= 1151u) { return bitcast<f32>(s | 0x7f800000u); }
    let m = vec2<u32>(a.x, hm | select(0x100000u, 0u, e == 0u));
    let big = e >= 897u;
    let r = relok_rsr64(m, select(926u - e, 29u, big));
    if (big) { return bitcast<f32>(s | (((e - 897u) << 23u) + r.x)); }
    return bitcast<f32>(s | r.x);
}

";

const PACK64: &str = "\
// The binary64 of sign s (bit 31) and m * 2^(e - 1085), m in [2^62, 2^63)
// (its low bit sticky), to nearest even: overflow to infinity, subnormals.
fn relok_pack64(s: u32, e: i32, m: vec2<u32>) -> vec2<u32> {
    if (e >= 2047i) { return vec2<u32>(0u, s | 0x7ff00000u); }
    if (e >= 1i) {
        let r = relok_rsr64(m, 10u);
        let b = relok_add64(r, vec2<u32>(0u, u32(e - 1i) << 20u));
        return vec2<u32>(b.x, b.y | s);
    }
    let r = relok_rsr64(m, u32(11i - e));
    return vec2<u32>(r.x, r.y | s);
}

";

const UNPACK64: &str = "\
// A finite nonzero f64 as (significand with its leading one at bit 52,
// low and high, exponent e): the value is m * 2^(e - 1075).
fn relok_unpack64(a: vec2<u32>) -> vec3<u32> {
    let e = bitcast<i32>((a.y >> 20u) & 0x7ffu);
    let m = vec2<u32>(a.x, a.y & 0xfffffu);
    if (e != 0i) { return vec3<u32>(m.x, m.y | 0x100000u, bitcast<u32>(e)); }
    let z = select(countLeadingZeros(m.y), 32u + countLeadingZeros(m.x), m.y == 0u) - 11u;
    return vec3<u32>(relok_shl64(m, z), bitcast<u32>(1i - bitcast<i32>(z)));
}

";

const NAN2_64: &str = "\
// The first NaN operand, quieted.
fn relok_nan2_64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let n = select(b, a, relok_isnan64(a));
    return vec2<u32>(n.x, n.y | 0x80000u);
}

";

const FADD64: &str = "\
// |x| >= |y|; the significands at bits 62..10, y's aligned with the bits
// shifted out ORed into its low bit (sticky), added or subtracted.
fn relok_fadd64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a) || relok_isnan64(b)) { return relok_nan2_64(a, b); }
    let ea = (a.y >> 20u) & 0x7ffu;
    let eb = (b.y >> 20u) & 0x7ffu;
    if (ea == 0x7ffu) {
        if (eb == 0x7ffu && ((a.y ^ b.y) >> 31u) != 0u) { return vec2<u32>(0u, 0xfff80000u); }
        return a;
    }
    if (eb == 0x7ffu) { return b; }
    let swap = relok_lt_u64(vec2<u32>(a.x, a.y & 0x7fffffffu), vec2<u32>(b.x, b.y & 0x7fffffffu));
    let x = select(a, b, swap);
    let y = select(b, a, swap);
    let ex = (x.y >> 20u) & 0x7ffu;
    let ey = (y.y >> 20u) & 0x7ffu;
    let sx = x.y & 0x80000000u;
    let sub = ((x.y ^ y.y) >> 31u) != 0u;
    let mx = relok_shl64(vec2<u32>(x.x, (x.y & 0xfffffu) | select(0x100000u, 0u, ex == 0u)), 10u);
    let m0 = relok_shl64(vec2<u32>(y.x, (y.y & 0xfffffu) | select(0x100000u, 0u, ey == 0u)), 10u);
    let d = max(ex, 1u) - max(ey, 1u);
    var my = m0;
    if (d >= 64u) {
        my = vec2<u32>(select(0u, 1u, m0.x != 0u || m0.y != 0u), 0u);
    } else if (d > 0u) {
        my = relok_shr64(m0, d);
        let lost = relok_sub64(m0, relok_shl64(my, d));
        my.x = my.x | select(0u, 1u, lost.x != 0u || lost.y != 0u);
    }
    let s = select(relok_add64(mx, my), relok_sub64(mx, my), sub);
    if (s.x == 0u && s.y == 0u) { return vec2<u32>(0u, select(sx, 0u, sub)); }
    let e = bitcast<i32>(max(ex, 1u));
    if ((s.y >> 31u) != 0u) { return relok_pack64(sx, e + 1i, vec2<u32>((s.x >> 1u) | (s.y << 31u) | (s.x & 1u), s.y >> 1u)); }
    let z = select(countLeadingZeros(s.y), 32u + countLeadingZeros(s.x), s.y == 0u) - 1u;
    return relok_pack64(sx, e - bitcast<i32>(z), relok_shl64(s, z));
}

";

const FSUB64: &str = "\
// x + (-y), a NaN y kept as it is.
fn relok_fsub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return relok_fadd64(a, select(vec2<u32>(b.x, b.y ^ 0x80000000u), b, relok_isnan64(b)));
}

";

const MUL128: &str = "\
// The full 128-bit product of two u64, as 32-bit limbs from the lowest.
fn relok_mul128(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {
    let p00 = relok_mul32(a.x, b.x);
    let p01 = relok_mul32(a.x, b.y);
    let p10 = relok_mul32(a.y, b.x);
    let p11 = relok_mul32(a.y, b.y);
    let c1 = p00.y + p01.x;
    let k1 = select(0u, 1u, c1 < p00.y);
    let r1 = c1 + p10.x;
    let k2 = k1 + select(0u, 1u, r1 < c1);
    let c2 = p01.y + p10.y;
    let k3 = select(0u, 1u, c2 < p01.y);
    let c3 = c2 + p11.x;
    let k4 = k3 + select(0u, 1u, c3 < c2);
    let r2 = c3 + k2;
    let k5 = k4 + select(0u, 1u, r2 < c3);
    return vec4<u32>(p00.x, r1, r2, p11.y + k5);
}

";

const FMUL64: &str = "\
// The significands at bits 62 and 63 multiplied: the high 64 bits of the
// product, the low ones sticky.
fn relok_fmul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a) || relok_isnan64(b)) { return relok_nan2_64(a, b); }
    let s = (a.y ^ b.y) & 0x80000000u;
    let za = a.x == 0u && (a.y & 0x7fffffffu) == 0u;
    let zb = b.x == 0u && (b.y & 0x7fffffffu) == 0u;
    let ia = ((a.y >> 20u) & 0x7ffu) == 0x7ffu;
    let ib = ((b.y >> 20u) & 0x7ffu) == 0x7ffu;
    if (ia || ib) {
        if (za || zb) { return vec2<u32>(0u, 0xfff80000u); }
        return vec2<u32>(0u, s | 0x7ff00000u);
    }
    if (za || zb) { return vec2<u32>(0u, s); }
    let ua = relok_unpack64(a);
    let ub = relok_unpack64(b);
    let p = relok_mul128(relok_shl64(ua.xy, 10u), relok_shl64(ub.xy, 11u));
    let e = bitcast<i32>(ua.z) + bitcast<i32>(ub.z);
    if ((p.w >> 30u) != 0u) { return relok_pack64(s, e - 1022i, vec2<u32>(p.z | select(0u, 1u, p.x != 0u || p.y != 0u), p.w)); }
    return relok_pack64(s, e - 1023i, vec2<u32>((p.z << 1u) | (p.y >> 31u) | select(0u, 1u, p.x != 0u || (p.y << 1u) != 0u), (p.w << 1u) | (p.z >> 31u)));
}

";

const FDIV64: &str = "\
// Restoring long division of the significands, 63 quotient bits, the
// remainder sticky.
fn relok_fdiv64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a) || relok_isnan64(b)) { return relok_nan2_64(a, b); }
    let s = (a.y ^ b.y) & 0x80000000u;
    let za = a.x == 0u && (a.y & 0x7fffffffu) == 0u;
    let zb = b.x == 0u && (b.y & 0x7fffffffu) == 0u;
    let ia = ((a.y >> 20u) & 0x7ffu) == 0x7ffu;
    let ib = ((b.y >> 20u) & 0x7ffu) == 0x7ffu;
    if (ia) {
        if (ib) { return vec2<u32>(0u, 0xfff80000u); }
        return vec2<u32>(0u, s | 0x7ff00000u);
    }
    if (ib) { return vec2<u32>(0u, s); }
    if (zb) {
        if (za) { return vec2<u32>(0u, 0xfff80000u); }
        return vec2<u32>(0u, s | 0x7ff00000u);
    }
    if (za) { return vec2<u32>(0u, s); }
    let ua = relok_unpack64(a);
    let ub = relok_unpack64(b);
    let mb = ub.xy;
    var e = bitcast<i32>(ua.z) - bitcast<i32>(ub.z) + 1023i;
    var r = ua.xy;
    if (relok_lt_u64(r, mb)) {
        r = relok_shl64(r, 1u);
        e -= 1i;
    }
    var q = vec2<u32>(0u, 0u);
    for (var k = 0u; k < 63u; k += 1u) {
        q = relok_shl64(q, 1u);
        if (!relok_lt_u64(r, mb)) {
            r = relok_sub64(r, mb);
            q.x = q.x | 1u;
        }
        r = relok_shl64(r, 1u);
    }
    return relok_pack64(s, e, vec2<u32>(q.x | select(0u, 1u, r.x != 0u || r.y != 0u), q.y));
}

";

const FSQRT64: &str = "\
// Digit-by-digit square root of the significand (its exponent made even),
// 56 root bits, the remainder sticky.
fn relok_fsqrt64(a: vec2<u32>) -> vec2<u32> {
    if (relok_isnan64(a)) { return vec2<u32>(a.x, a.y | 0x80000u); }
    if (a.x == 0u && (a.y & 0x7fffffffu) == 0u) { return a; }
    if ((a.y >> 31u) != 0u) { return vec2<u32>(0u, 0xfff80000u); }
    if (a.y == 0x7ff00000u) { return a; }
    let ua = relok_unpack64(a);
    var u = bitcast<i32>(ua.z) - 1075i;
    var m = ua.xy;
    if ((u & 1i) != 0i) {
        m = relok_shl64(m, 1u);
        u -= 1i;
    }
    var x = relok_shl64(m, 10u);
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    for (var k = 0u; k < 56u; k += 1u) {
        r = relok_shl64(r, 2u);
        r.x = r.x | (x.y >> 30u);
        x = relok_shl64(x, 2u);
        let t = vec2<u32>((q.x << 2u) | 1u, (q.y << 2u) | (q.x >> 30u));
        q = relok_shl64(q, 1u);
        if (!relok_lt_u64(r, t)) {
            r = relok_sub64(r, t);
            q.x = q.x | 1u;
        }
    }
    let mq = relok_shl64(q, 7u);
    return relok_pack64(0u, u / 2i + 1049i, vec2<u32>(mq.x | select(0u, 1u, r.x != 0u || r.y != 0u), mq.y));
}

";

const FREM64: &str = "\
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
    }
    if (e > 0i) { return vec2<u32>(ux.x, (ux.y - 0x100000u) | (u32(e) << 20u) | sx); }
    let r = relok_shr64(ux, u32(1i - e));
    return vec2<u32>(r.x, r.y | sx);
}

";

const F64_MAG: &str = "\
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

";

const F64_TO_U64: &str = "\
// Toward zero, saturating, NaN to 0.
fn relok_f64_to_u64(a: vec2<u32>) -> vec2<u32> {
    return select(relok_f64_mag(a), vec2<u32>(0u, 0u), (a.y >> 31u) != 0u);
}

";

const F64_TO_I64: &str = "\
fn relok_f64_to_i64(a: vec2<u32>) -> vec2<u32> {
    let m = relok_f64_mag(a);
    if ((a.y >> 31u) != 0u) {
        if (relok_lt_u64(vec2<u32>(0u, 0x80000000u), m)) { return vec2<u32>(0u, 0x80000000u); }
        return relok_sub64(vec2<u32>(0u, 0u), m);
    }
    if (relok_lt_u64(vec2<u32>(0xffffffffu, 0x7fffffffu), m)) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    return m;
}

";

const F64_TO_U32: &str = "\
fn relok_f64_to_u32(a: vec2<u32>) -> u32 {
    let m = relok_f64_mag(a);
    if ((a.y >> 31u) != 0u) { return 0u; }
    return select(m.x, 0xffffffffu, m.y != 0u);
}

";

const F64_TO_I32: &str = "\
fn relok_f64_to_i32(a: vec2<u32>) -> i32 {
    let m = relok_f64_mag(a);
    if ((a.y >> 31u) != 0u) {
        if (m.y != 0u || m.x > 0x80000000u) { return bitcast<i32>(0x80000000u); }
        return bitcast<i32>(0u - m.x);
    }
    if (m.y != 0u || m.x > 0x7fffffffu) { return 2147483647i; }
    return bitcast<i32>(m.x);
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

    // f64 as V2 (low, high): the binary64 helpers.

    const DNAN: V2 = v2(0, 0xfff8_0000);

    fn clz64(a: V2) -> u32 {
        sel(a.y.leading_zeros(), 32 + a.x.leading_zeros(), a.y == 0)
    }

    fn isnan64(a: V2) -> bool {
        let h = a.y & 0x7fff_ffff;
        h > 0x7ff0_0000 || (h == 0x7ff0_0000 && a.x != 0)
    }

    fn eq_f64(a: V2, b: V2) -> bool {
        !isnan64(a) && !isnan64(b) && ((a.x == b.x && a.y == b.y) || ((a.x | b.x) == 0 && ((a.y | b.y) & 0x7fff_ffff) == 0))
    }

    fn lt_f64(a: V2, b: V2) -> bool {
        if isnan64(a) || isnan64(b) || ((a.x | b.x) == 0 && ((a.y | b.y) & 0x7fff_ffff) == 0) {
            return false;
        }
        let ka = sel(v2(a.x, a.y | 0x8000_0000), v2(!a.x, !a.y), shr(a.y, 31) != 0);
        let kb = sel(v2(b.x, b.y | 0x8000_0000), v2(!b.x, !b.y), shr(b.y, 31) != 0);
        lt_u64(ka, kb)
    }

    fn min_f64(a: V2, b: V2) -> V2 {
        if isnan64(a) {
            return b;
        }
        if isnan64(b) {
            return a;
        }
        sel(a, b, lt_f64(b, a))
    }

    fn max_f64(a: V2, b: V2) -> V2 {
        if isnan64(a) {
            return b;
        }
        if isnan64(b) {
            return a;
        }
        sel(a, b, lt_f64(a, b))
    }

    fn u64_to_f64(a: V2) -> V2 {
        if a.x == 0 && a.y == 0 {
            return v2(0, 0);
        }
        let z = clz64(a);
        let m = shl64(a, z);
        let mant = v2(shr(m.x, 11) | shl(m.y, 21), shr(m.y, 11));
        let rest = m.x & 0x7ff;
        let up = rest > 0x400 || (rest == 0x400 && (mant.x & 1) != 0);
        add64(v2(mant.x, mant.y.wrapping_add(shl(1085 - z, 20))), v2(b2u(up), 0))
    }

    fn i64_to_f64(a: V2) -> V2 {
        let neg = shr(a.y, 31) != 0;
        let f = u64_to_f64(sel(a, sub64(v2(0, 0), a), neg));
        v2(f.x, f.y | sel(0, 0x8000_0000, neg))
    }

    fn f32_to_f64(x: f32) -> V2 {
        let b = x.to_bits();
        let s = b & 0x8000_0000;
        let e = shr(b, 23) & 0xff;
        let m = b & 0x7f_ffff;
        if e == 255 {
            return v2(shl(m, 29), s | 0x7ff0_0000 | shr(m, 3) | sel(0, 0x8_0000, m != 0));
        }
        if e == 0 {
            if m == 0 {
                return v2(0, s);
            }
            let z = m.leading_zeros() - 8;
            let n = shl(m, z) & 0x7f_ffff;
            return v2(shl(n, 29), s | shl(897 - z, 20) | shr(n, 3));
        }
        v2(shl(m, 29), s | shl(e + 896, 20) | shr(m, 3))
    }

    fn rsr64(m: V2, sh: u32) -> V2 {
        if sh == 0 {
            return m;
        }
        if sh >= 64 {
            return v2(0, 0);
        }
        let q = shr64(m, sh);
        let r = sub64(m, shl64(q, sh));
        let half = shl64(v2(1, 0), sh - 1);
        let up = lt_u64(half, r) || (r.x == half.x && r.y == half.y && (q.x & 1) != 0);
        add64(q, v2(b2u(up), 0))
    }

    fn f64_to_f32(a: V2) -> f32 {
        let s = a.y & 0x8000_0000;
        let e = shr(a.y, 20) & 0x7ff;
        let hm = a.y & 0xf_ffff;
        if e == 0x7ff {
            if (hm | a.x) != 0 {
                return f32::from_bits(s | 0x7fc0_0000 | shl(hm, 3) | shr(a.x, 29));
            }
            return f32::from_bits(s | 0x7f80_0000);
        }
        if e >= 1151 {
            return f32::from_bits(s | 0x7f80_0000);
        }
        let m = v2(a.x, hm | sel(0x10_0000, 0, e == 0));
        let big = e >= 897;
        let r = rsr64(m, sel(926u32.wrapping_sub(e), 29, big));
        if big {
            return f32::from_bits(s | shl(e - 897, 23).wrapping_add(r.x));
        }
        f32::from_bits(s | r.x)
    }

    fn pack64(s: u32, e: i32, m: V2) -> V2 {
        if e >= 2047 {
            return v2(0, s | 0x7ff0_0000);
        }
        if e >= 1 {
            let r = rsr64(m, 10);
            let b = add64(r, v2(0, shl((e - 1) as u32, 20)));
            return v2(b.x, b.y | s);
        }
        let r = rsr64(m, (11 - e) as u32);
        v2(r.x, r.y | s)
    }

    fn unpack64(a: V2) -> (V2, i32) {
        let e = (shr(a.y, 20) & 0x7ff) as i32;
        let m = v2(a.x, a.y & 0xf_ffff);
        if e != 0 {
            return (v2(m.x, m.y | 0x10_0000), e);
        }
        let z = clz64(m) - 11;
        (shl64(m, z), 1 - z as i32)
    }

    fn nan2(a: V2, b: V2) -> V2 {
        let n = sel(b, a, isnan64(a));
        v2(n.x, n.y | 0x8_0000)
    }

    fn fadd64(a: V2, b: V2) -> V2 {
        if isnan64(a) || isnan64(b) {
            return nan2(a, b);
        }
        let ea = shr(a.y, 20) & 0x7ff;
        let eb = shr(b.y, 20) & 0x7ff;
        if ea == 0x7ff {
            if eb == 0x7ff && shr(a.y ^ b.y, 31) != 0 {
                return DNAN;
            }
            return a;
        }
        if eb == 0x7ff {
            return b;
        }
        let swap = lt_u64(v2(a.x, a.y & 0x7fff_ffff), v2(b.x, b.y & 0x7fff_ffff));
        let x = sel(a, b, swap);
        let y = sel(b, a, swap);
        let ex = shr(x.y, 20) & 0x7ff;
        let ey = shr(y.y, 20) & 0x7ff;
        let sx = x.y & 0x8000_0000;
        let sub = shr(x.y ^ y.y, 31) != 0;
        let mx = shl64(v2(x.x, (x.y & 0xf_ffff) | sel(0x10_0000, 0, ex == 0)), 10);
        let m0 = shl64(v2(y.x, (y.y & 0xf_ffff) | sel(0x10_0000, 0, ey == 0)), 10);
        let d = ex.max(1) - ey.max(1);
        let mut my = m0;
        if d >= 64 {
            my = v2(b2u(m0.x != 0 || m0.y != 0), 0);
        } else if d > 0 {
            my = shr64(m0, d);
            let lost = sub64(m0, shl64(my, d));
            my.x |= b2u(lost.x != 0 || lost.y != 0);
        }
        let s = sel(add64(mx, my), sub64(mx, my), sub);
        if s.x == 0 && s.y == 0 {
            return v2(0, sel(sx, 0, sub));
        }
        let e = ex.max(1) as i32;
        if shr(s.y, 31) != 0 {
            return pack64(sx, e + 1, v2(shr(s.x, 1) | shl(s.y, 31) | (s.x & 1), shr(s.y, 1)));
        }
        let z = clz64(s) - 1;
        pack64(sx, e - z as i32, shl64(s, z))
    }

    fn fsub64(a: V2, b: V2) -> V2 {
        fadd64(a, sel(v2(b.x, b.y ^ 0x8000_0000), b, isnan64(b)))
    }

    fn mul128(a: V2, b: V2) -> [u32; 4] {
        let p00 = mul32(a.x, b.x);
        let p01 = mul32(a.x, b.y);
        let p10 = mul32(a.y, b.x);
        let p11 = mul32(a.y, b.y);
        let c1 = p00.y.wrapping_add(p01.x);
        let k1 = b2u(c1 < p00.y);
        let r1 = c1.wrapping_add(p10.x);
        let k2 = k1 + b2u(r1 < c1);
        let c2 = p01.y.wrapping_add(p10.y);
        let k3 = b2u(c2 < p01.y);
        let c3 = c2.wrapping_add(p11.x);
        let k4 = k3 + b2u(c3 < c2);
        let r2 = c3.wrapping_add(k2);
        let k5 = k4 + b2u(r2 < c3);
        [p00.x, r1, r2, p11.y.wrapping_add(k5)]
    }

    fn fmul64(a: V2, b: V2) -> V2 {
        if isnan64(a) || isnan64(b) {
            return nan2(a, b);
        }
        let s = (a.y ^ b.y) & 0x8000_0000;
        let za = a.x == 0 && (a.y & 0x7fff_ffff) == 0;
        let zb = b.x == 0 && (b.y & 0x7fff_ffff) == 0;
        let ia = (shr(a.y, 20) & 0x7ff) == 0x7ff;
        let ib = (shr(b.y, 20) & 0x7ff) == 0x7ff;
        if ia || ib {
            if za || zb {
                return DNAN;
            }
            return v2(0, s | 0x7ff0_0000);
        }
        if za || zb {
            return v2(0, s);
        }
        let (ma, ea) = unpack64(a);
        let (mb, eb) = unpack64(b);
        let p = mul128(shl64(ma, 10), shl64(mb, 11));
        let e = ea + eb;
        if shr(p[3], 30) != 0 {
            return pack64(s, e - 1022, v2(p[2] | b2u(p[0] != 0 || p[1] != 0), p[3]));
        }
        pack64(s, e - 1023, v2(shl(p[2], 1) | shr(p[1], 31) | b2u(p[0] != 0 || shl(p[1], 1) != 0), shl(p[3], 1) | shr(p[2], 31)))
    }

    fn fdiv64(a: V2, b: V2) -> V2 {
        if isnan64(a) || isnan64(b) {
            return nan2(a, b);
        }
        let s = (a.y ^ b.y) & 0x8000_0000;
        let za = a.x == 0 && (a.y & 0x7fff_ffff) == 0;
        let zb = b.x == 0 && (b.y & 0x7fff_ffff) == 0;
        let ia = (shr(a.y, 20) & 0x7ff) == 0x7ff;
        let ib = (shr(b.y, 20) & 0x7ff) == 0x7ff;
        if ia {
            if ib {
                return DNAN;
            }
            return v2(0, s | 0x7ff0_0000);
        }
        if ib {
            return v2(0, s);
        }
        if zb {
            if za {
                return DNAN;
            }
            return v2(0, s | 0x7ff0_0000);
        }
        if za {
            return v2(0, s);
        }
        let (ma, ea) = unpack64(a);
        let (mb, eb) = unpack64(b);
        let mut e = ea - eb + 1023;
        let mut r = ma;
        if lt_u64(r, mb) {
            r = shl64(r, 1);
            e -= 1;
        }
        let mut q = v2(0, 0);
        for _ in 0..63 {
            q = shl64(q, 1);
            if !lt_u64(r, mb) {
                r = sub64(r, mb);
                q.x |= 1;
            }
            r = shl64(r, 1);
        }
        pack64(s, e, v2(q.x | b2u(r.x != 0 || r.y != 0), q.y))
    }

    fn fsqrt64(a: V2) -> V2 {
        if isnan64(a) {
            return v2(a.x, a.y | 0x8_0000);
        }
        if a.x == 0 && (a.y & 0x7fff_ffff) == 0 {
            return a;
        }
        if shr(a.y, 31) != 0 {
            return DNAN;
        }
        if a.y == 0x7ff0_0000 {
            return a;
        }
        let (m0, e0) = unpack64(a);
        let mut u = e0 - 1075;
        let mut m = m0;
        if (u & 1) != 0 {
            m = shl64(m, 1);
            u -= 1;
        }
        let mut x = shl64(m, 10);
        let mut q = v2(0, 0);
        let mut r = v2(0, 0);
        for _ in 0..56 {
            r = shl64(r, 2);
            r.x |= shr(x.y, 30);
            x = shl64(x, 2);
            let t = v2(shl(q.x, 2) | 1, shl(q.y, 2) | shr(q.x, 30));
            q = shl64(q, 1);
            if !lt_u64(r, t) {
                r = sub64(r, t);
                q.x |= 1;
            }
        }
        let m = shl64(q, 7);
        pack64(0, u / 2 + 1049, v2(m.x | b2u(r.x != 0 || r.y != 0), m.y))
    }

    fn frem64(a: V2, b: V2) -> V2 {
        if isnan64(a) || isnan64(b) {
            return nan2(a, b);
        }
        if (b.x == 0 && (b.y & 0x7fff_ffff) == 0) || (shr(a.y, 20) & 0x7ff) == 0x7ff {
            return DNAN;
        }
        let sx = a.y & 0x8000_0000;
        let ax = v2(a.x, a.y & 0x7fff_ffff);
        let ay = v2(b.x, b.y & 0x7fff_ffff);
        if !lt_u64(ay, ax) {
            if ax.x == ay.x && ax.y == ay.y {
                return v2(0, sx);
            }
            return a;
        }
        let (mx, ex) = unpack64(a);
        let (my, ey) = unpack64(b);
        let mut ux = mx;
        let mut e = ex;
        loop {
            if e <= ey {
                break;
            }
            let i = sub64(ux, my);
            if shr(i.y, 31) == 0 {
                if i.x == 0 && i.y == 0 {
                    return v2(0, sx);
                }
                ux = i;
            }
            ux = shl64(ux, 1);
            e -= 1;
        }
        let i = sub64(ux, my);
        if shr(i.y, 31) == 0 {
            if i.x == 0 && i.y == 0 {
                return v2(0, sx);
            }
            ux = i;
        }
        loop {
            if shr(ux.y, 20) != 0 {
                break;
            }
            ux = shl64(ux, 1);
            e -= 1;
        }
        if e > 0 {
            return v2(ux.x, (ux.y - 0x10_0000) | shl(e as u32, 20) | sx);
        }
        let r = shr64(ux, (1 - e) as u32);
        v2(r.x, r.y | sx)
    }

    fn f64_mag(a: V2) -> V2 {
        if isnan64(a) {
            return v2(0, 0);
        }
        let e = shr(a.y, 20) & 0x7ff;
        if e < 1023 {
            return v2(0, 0);
        }
        if e >= 1087 {
            return v2(0xffff_ffff, 0xffff_ffff);
        }
        let m = v2(a.x, (a.y & 0xf_ffff) | 0x10_0000);
        if e >= 1075 {
            return shl64(m, e - 1075);
        }
        shr64(m, 1075 - e)
    }

    fn f64_to_u64(a: V2) -> V2 {
        sel(f64_mag(a), v2(0, 0), shr(a.y, 31) != 0)
    }

    fn f64_to_i64(a: V2) -> V2 {
        let m = f64_mag(a);
        if shr(a.y, 31) != 0 {
            if lt_u64(v2(0, 0x8000_0000), m) {
                return v2(0, 0x8000_0000);
            }
            return sub64(v2(0, 0), m);
        }
        if lt_u64(v2(0xffff_ffff, 0x7fff_ffff), m) {
            return v2(0xffff_ffff, 0x7fff_ffff);
        }
        m
    }

    fn f64_to_u32(a: V2) -> u32 {
        let m = f64_mag(a);
        if shr(a.y, 31) != 0 {
            return 0;
        }
        sel(m.x, 0xffff_ffff, m.y != 0)
    }

    fn f64_to_i32(a: V2) -> i32 {
        let m = f64_mag(a);
        if shr(a.y, 31) != 0 {
            if m.y != 0 || m.x > 0x8000_0000 {
                return 0x8000_0000u32 as i32;
            }
            return 0u32.wrapping_sub(m.x) as i32;
        }
        if m.y != 0 || m.x > 0x7fff_ffff {
            return 2_147_483_647;
        }
        m.x as i32
    }

    /// f64 bit patterns biased towards the edges: zeros, subnormals,
    /// MIN_POSITIVE, MAX, infinities, NaNs with payloads, values near
    /// powers of two, the integer limits' neighbourhoods.
    fn any_f64() -> impl Strategy<Value = u64> {
        let sign = |s: bool| if s { 1u64 << 63 } else { 0 };
        prop_oneof![
            any::<u64>(),
            (0u64..(1 << 52), any::<bool>()).prop_map(move |(m, s)| m | sign(s)),
            (0u64..16, any::<bool>()).prop_map(move |(m, s)| m | sign(s)),
            (0u64..2047, -3i64..=3, any::<bool>()).prop_map(move |(e, d, s)| ((e << 52) as i64 + d) as u64 & !(1 << 63) | sign(s)),
            (1000u64..1100, any::<u64>(), any::<bool>()).prop_map(move |(e, m, s)| (e << 52) | (m & 0xf_ffff_ffff_ffff) | sign(s)),
            (1u64..(1 << 52), any::<bool>()).prop_map(move |(m, s)| 0x7ff0_0000_0000_0000 | m | sign(s)),
            prop::sample::select(vec![
                0u64,
                1 << 63,
                f64::INFINITY.to_bits(),
                f64::NEG_INFINITY.to_bits(),
                f64::NAN.to_bits(),
                (-f64::NAN).to_bits(),
                f64::MIN_POSITIVE.to_bits(),
                f64::MAX.to_bits(),
                f64::MIN.to_bits(),
                1,
                1.0f64.to_bits(),
                (-1.0f64).to_bits(),
                0.5f64.to_bits(),
                2.0f64.to_bits(),
            ]),
        ]
    }

    /// A pair of f64 with close exponents (add/sub cancellation, ties).
    fn close_f64() -> impl Strategy<Value = (u64, u64)> {
        (any_f64(), -3i64..=3, any::<u32>(), any::<bool>(), 0u32..64).prop_map(|(a, d, m, s, k)| {
            let b = (a as i64).wrapping_add(d << 52).wrapping_add(i64::from(m >> k)) as u64;
            (a, if s { b ^ (1 << 63) } else { b })
        })
    }

    fn check_bin(a: u64, b: u64) -> Result<(), TestCaseError> {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let (va, vb) = (of(a), of(b));
        prop_assert_eq!(to(fadd64(va, vb)), (x + y).to_bits(), "{:#x} + {:#x}", a, b);
        prop_assert_eq!(to(fsub64(va, vb)), (x - y).to_bits(), "{:#x} - {:#x}", a, b);
        prop_assert_eq!(to(fmul64(va, vb)), (x * y).to_bits(), "{:#x} * {:#x}", a, b);
        prop_assert_eq!(to(fdiv64(va, vb)), (x / y).to_bits(), "{:#x} / {:#x}", a, b);
        prop_assert_eq!(to(frem64(va, vb)), (x % y).to_bits(), "{:#x} % {:#x}", a, b);
        prop_assert_eq!(to(min_f64(va, vb)), x.min(y).to_bits(), "{:#x} min {:#x}", a, b);
        prop_assert_eq!(to(max_f64(va, vb)), x.max(y).to_bits(), "{:#x} max {:#x}", a, b);
        prop_assert_eq!(eq_f64(va, vb), x == y);
        prop_assert_eq!(lt_f64(va, vb), x < y);
        prop_assert_eq!(lt_f64(vb, va), x > y);
        Ok(())
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

        #[test]
        fn f64_arithmetic_matches_rust(a in any_f64(), b in any_f64()) {
            check_bin(a, b)?;
        }

        #[test]
        fn f64_arithmetic_of_close_operands_matches_rust((a, b) in close_f64()) {
            check_bin(a, b)?;
        }

        #[test]
        fn f64_to_f32_ties_match_rust(a in any_f64(), e in 850u64..1160, k in 0u32..3) {
            // The bits below f32's last place made exactly half of it (or
            // just below or above), subnormal f32 results included.
            let sh = if e >= 897 { 29 } else { (926 - e).min(63) };
            let half = 1u64 << (sh - 1);
            let m = (a & 0x800f_ffff_ffff_ffff & !((half << 1) - 1)) | (half - 1 + u64::from(k)) & ((half << 1) - 1);
            let b = m | (e << 52);
            prop_assert_eq!(f64_to_f32(of(b)).to_bits(), (f64::from_bits(b) as f32).to_bits(), "{:#x} as f32", b);
        }

        #[test]
        fn f64_unary_and_conversions_match_rust(a in any_f64(), i in any64(), f in any_f32()) {
            let x = f64::from_bits(a);
            prop_assert_eq!(to(fsqrt64(of(a))), x.sqrt().to_bits(), "sqrt {:#x}", a);
            prop_assert_eq!(isnan64(of(a)), x.is_nan());
            prop_assert_eq!(f64_to_f32(of(a)).to_bits(), (x as f32).to_bits(), "{:#x} as f32", a);
            prop_assert_eq!(f64_to_i32(of(a)), x as i32);
            prop_assert_eq!(f64_to_u32(of(a)), x as u32);
            prop_assert_eq!(to(f64_to_i64(of(a))), x as i64 as u64);
            prop_assert_eq!(to(f64_to_u64(of(a))), x as u64);
            prop_assert_eq!(to(u64_to_f64(of(i))), (i as f64).to_bits(), "{} as f64", i);
            prop_assert_eq!(to(i64_to_f64(of(i))), (i as i64 as f64).to_bits(), "{} as f64", i as i64);
            prop_assert_eq!(to(f32_to_f64(f)), f64::from(f).to_bits(), "{:#x} as f64", f.to_bits());
            let p = mul128(of(a), of(i));
            let want = u128::from(a) * u128::from(i);
            prop_assert_eq!(p, [want as u32, (want >> 32) as u32, (want >> 64) as u32, (want >> 96) as u32]);
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

    /// Every pair of special f64 values, every operation: zeros of both
    /// signs, subnormals, MIN_POSITIVE, MAX, infinities, quiet and
    /// signalling NaNs with payloads of both signs.
    #[test]
    fn f64_specials_pairwise_match_rust() {
        let mut specials = vec![
            0u64, 1, 2, 0x000f_ffff_ffff_ffff, 0x0010_0000_0000_0000, 0x7fef_ffff_ffff_ffff, 0x7ff0_0000_0000_0000,
            0x7ff0_0000_0000_0001, 0x7ff4_0000_0000_0000, 0x7ff8_0000_0000_0000, 0x7fff_ffff_ffff_ffff, 0x7ff8_dead_beef_0001,
        ];
        for x in [0.1f64, 1.0, 1.5, 2.0, 3.0, 1e300, 1e-300, 4.503_599_627_370_496e15, 9.007_199_254_740_993e15] {
            specials.push(x.to_bits());
        }
        let negated: Vec<u64> = specials.iter().map(|b| b ^ (1 << 63)).collect();
        specials.extend(negated);
        for &a in &specials {
            for &b in &specials {
                check_bin(a, b).unwrap_or_else(|e| panic!("{a:#x}, {b:#x}: {e}"));
            }
            let x = f64::from_bits(a);
            assert_eq!(to(fsqrt64(of(a))), x.sqrt().to_bits(), "sqrt {a:#x}");
            assert_eq!(f64_to_f32(of(a)).to_bits(), (x as f32).to_bits(), "{a:#x} as f32");
            assert_eq!((f64_to_i32(of(a)), f64_to_u32(of(a))), (x as i32, x as u32), "{a:#x}");
            assert_eq!((to(f64_to_i64(of(a))), to(f64_to_u64(of(a)))), (x as i64 as u64, x as u64), "{a:#x}");
            let f = f32::from_bits((a >> 32) as u32);
            assert_eq!(to(f32_to_f64(f)), f64::from(f).to_bits(), "{:#x} as f64", f.to_bits());
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
