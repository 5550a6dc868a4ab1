//! Measuring the math library's accuracy: an edge-weighted sample of
//! operands per function ([`sample`]), for `tanh` also a dense sweep with
//! its hard cases ([`tanh_sweep`]), a reference ([`reference()`]), the
//! error in ulps ([`ulp_error`]) and the bound docs/ir.md promises
//! ([`bound`]). The tests measure [`super::eval_f64`] / [`super::eval_f32`]
//! (what every device computes), and the device tests measure what a
//! device returned for the same sample (`relok math-accuracy`).
//!
//! The reference is the pure-Rust `libm` crate (musl's algorithms), in
//! `f64`. For an `f32` function that is provably enough: libm is within 1
//! `f64` ulp, 2^-29 `f32` ulps, so the measured `f32` error is exact to
//! within 2^-29 ulp. For an `f64` function the measurement is against
//! libm itself: the true error is within the measured one plus libm's own
//! (below 1 ulp for these functions), which the `f64` bounds include.

use relok_ir::{MathFn, Scalar};

/// The error in units in the last place of `got` against `want` (a
/// reference of higher accuracy, in `f64`), at the precision of `ty`:
/// 0 when both are NaN or the same infinity; infinite when exactly one is
/// NaN or infinite (a missed special).
pub fn ulp_error(got: f64, want: f64, ty: Scalar) -> f64 {
    if got.is_nan() || want.is_nan() {
        return if got.is_nan() && want.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if got.is_infinite() || want.is_infinite() {
        // A reference beyond the type's range rounds to infinity.
        let w = if ty == Scalar::F32 { f64::from(want as f32) } else { want };
        return if got == w { 0.0 } else { f64::INFINITY };
    }
    let (min_exp, digits) = if ty == Scalar::F32 { (-126, 24) } else { (-1022, 53) };
    let w = want.abs();
    let e = if w == 0.0 { min_exp } else { (libm::ilogb(w)).max(min_exp) };
    // A reference beyond f32's range, with a finite result: measure at the top binade.
    let e = if ty == Scalar::F32 { e.min(127) } else { e };
    let ulp = libm::ldexp(1.0, e - (digits - 1));
    (got - want).abs() / ulp
}

/// `x` with a subnormal of `ty` replaced by a zero of its sign: what a
/// device that flushes subnormals reads or writes (WGSL allows it for
/// `f32`; NVIDIA's Vulkan driver does it).
pub fn flush_subnormal(x: f64, ty: Scalar) -> f64 {
    let min_normal = if ty == Scalar::F32 { f64::from(f32::MIN_POSITIVE) } else { f64::MIN_POSITIVE };
    if x != 0.0 && x.abs() < min_normal { 0.0f64.copysign(x) } else { x }
}

/// [`max_error`] on a device that may flush subnormals to zero: each
/// result is measured against the reference of the operands as given and
/// of the operands with their subnormals flushed, each also with a
/// subnormal reference flushed, and the smallest error counts. Away from
/// subnormals this is [`max_error`].
pub fn max_error_flushing_subnormals(f: MathFn, ty: Scalar, args: &[Vec<f64>], got: &[f64]) -> (f64, Vec<f64>) {
    let mut worst = (0.0, Vec::new());
    for (a, &g) in args.iter().zip(got) {
        let flushed: Vec<f64> = a.iter().map(|&x| flush_subnormal(x, ty)).collect();
        let e = [reference(f, a), reference(f, &flushed)]
            .into_iter()
            .flat_map(|r| [r, flush_subnormal(r, ty)])
            .map(|r| ulp_error(g, r, ty))
            .fold(f64::INFINITY, f64::min);
        if e > worst.0 {
            worst = (e, a.clone());
        }
    }
    worst
}

/// The reference value of `f` (an accurate `f64` evaluation).
pub fn reference(f: MathFn, a: &[f64]) -> f64 {
    match f {
        MathFn::Exp => libm::exp(a[0]),
        MathFn::Exp2 => libm::exp2(a[0]),
        MathFn::Log => libm::log(a[0]),
        MathFn::Log2 => libm::log2(a[0]),
        MathFn::Log10 => libm::log10(a[0]),
        MathFn::Sin => libm::sin(a[0]),
        MathFn::Cos => libm::cos(a[0]),
        MathFn::Tan => libm::tan(a[0]),
        MathFn::Sinh => libm::sinh(a[0]),
        MathFn::Cosh => libm::cosh(a[0]),
        MathFn::Tanh => libm::tanh(a[0]),
        MathFn::Asin => libm::asin(a[0]),
        MathFn::Acos => libm::acos(a[0]),
        MathFn::Atan => libm::atan(a[0]),
        MathFn::Atan2 => libm::atan2(a[0], a[1]),
        MathFn::Pow => libm::pow(a[0], a[1]),
        MathFn::Hypot => libm::hypot(a[0], a[1]),
        MathFn::Erf => libm::erf(a[0]),
        MathFn::Fma => libm::fma(a[0], a[1], a[2]),
        MathFn::Floor => a[0].floor(),
        MathFn::Ceil => a[0].ceil(),
        MathFn::Trunc => a[0].trunc(),
        MathFn::Round => a[0].round(),
        MathFn::Copysign => a[0].copysign(a[1]),
    }
}

/// `sin`, `cos`, `tan` are within their bound for `|x|` below this (the
/// range reduction's products are exact there); beyond, the argument is
/// first reduced modulo the nearest float to `2 pi`, which keeps the result
/// in [-1, 1] but not within the bound.
pub fn trig_domain(ty: Scalar) -> f64 {
    if ty == Scalar::F32 { 1e5 } else { 1.6e6 }
}

/// The bound in ulps that docs/ir.md's accuracy table promises for `f` at
/// `ty` on every device (the library computes the same bits everywhere),
/// for operands in the documented domain ([`trig_domain`]).
pub fn bound(f: MathFn, ty: Scalar) -> f64 {
    if f.is_exact() {
        return if f == MathFn::Fma || ty == Scalar::F64 { 0.5 } else { 0.0 };
    }
    if ty == Scalar::F32 {
        return match f {
            // Through f64, rounded once.
            MathFn::Pow => 1.0,
            MathFn::Exp | MathFn::Exp2 | MathFn::Log => 1.5,
            MathFn::Atan => 2.0,
            MathFn::Erf => 7.0,
            MathFn::Sin | MathFn::Cos | MathFn::Tan => 4.0,
            _ => 2.5,
        };
    }
    match f {
        MathFn::Pow => 1024.0,
        MathFn::Erf => 8.0,
        MathFn::Tan | MathFn::Asin | MathFn::Acos | MathFn::Atan2 | MathFn::Tanh => 4.0,
        _ => 3.0,
    }
}

/// A small deterministic generator (xorshift64*).
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A float in `[lo, hi)`.
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// Random bits of `ty` as an `f64` (every exponent equally likely).
    fn bits(&mut self, ty: Scalar) -> f64 {
        if ty == Scalar::F32 { f64::from(f32::from_bits(self.next() as u32)) } else { f64::from_bits(self.next()) }
    }
}

/// Rounds to `ty` (the operands a kernel of that type receives).
fn to_ty(x: f64, ty: Scalar) -> f64 {
    if ty == Scalar::F32 { f64::from(x as f32) } else { x }
}

/// One operand of `f`: specials, subnormals, powers of two and their
/// neighbours, random bits over every exponent, and the function's
/// interesting ranges (near poles, near integers, near the overflow
/// thresholds, near multiples of `pi/2`).
fn operand(f: MathFn, ty: Scalar, r: &mut Rng, i: usize) -> f64 {
    let specials = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        if ty == Scalar::F32 { f64::from(f32::MIN_POSITIVE) } else { f64::MIN_POSITIVE },
        if ty == Scalar::F32 { f64::from(f32::from_bits(1)) } else { f64::from_bits(1) },
        if ty == Scalar::F32 { f64::from(f32::MAX) } else { f64::MAX },
        -(if ty == Scalar::F32 { f64::from(f32::from_bits(1)) } else { f64::from_bits(1) }),
    ];
    let x = if i < specials.len() { specials[i] } else { random_operand(f, ty, r) };
    let x = to_ty(x, ty);
    // The documented domain of the trigonometric functions.
    let d = trig_domain(ty);
    if matches!(f, MathFn::Sin | MathFn::Cos | MathFn::Tan) && x.abs() >= d { to_ty(x % d, ty) } else { x }
}

fn random_operand(f: MathFn, ty: Scalar, r: &mut Rng) -> f64 {
    match r.next() % 8 {
        0 => r.bits(ty),
        1 => {
            let e = (r.next() % 60) as i32 - 30;
            let m = 1.0 + f64::from((r.next() % 5) as u32) * if ty == Scalar::F32 { 1.2e-7 } else { 2.3e-16 };
            let s = if r.next().is_multiple_of(2) { 1.0 } else { -1.0 };
            s * libm::ldexp(m, e)
        }
        2 => r.range(-1.0, 1.0),
        3 => r.range(-10.0, 10.0),
        4 => match f {
            MathFn::Exp | MathFn::Sinh | MathFn::Cosh => {
                let t = if ty == Scalar::F32 { 88.72 } else { 709.78 };
                r.range(-t * 1.05, t * 1.05)
            }
            MathFn::Exp2 => r.range(
                if ty == Scalar::F32 { -151.0 } else { -1076.0 },
                if ty == Scalar::F32 { 129.0 } else { 1025.0 },
            ),
            MathFn::Log | MathFn::Log2 | MathFn::Log10 => r.range(0.5, 2.0),
            MathFn::Sin | MathFn::Cos | MathFn::Tan => {
                let k = (r.next() % 2000) as f64 - 1000.0;
                k * std::f64::consts::FRAC_PI_2 + r.range(-1e-6, 1e-6)
            }
            MathFn::Asin | MathFn::Acos => {
                1.0 - libm::ldexp(1.0, -((r.next() % 50) as i32)) * if r.next().is_multiple_of(2) { 1.0 } else { -1.0 }
            }
            MathFn::Erf | MathFn::Atan => r.range(-7.0, 7.0),
            MathFn::Tanh => {
                if r.next().is_multiple_of(2) {
                    r.range(-10.0, 10.0)
                } else {
                    // Where the reduction's k steps ([`tanh_hard_cases`]).
                    let j = (r.next() % 30) as f64;
                    (j + 0.5) * std::f64::consts::LN_2 / 2.0 * (1.0 + r.range(-1e-6, 1e-6))
                }
            }
            _ => r.range(-100.0, 100.0),
        },
        5 => (r.next() % 64) as f64 - 32.0,
        6 => r.range(-1e-3, 1e-3),
        _ => r.range(-1e5, 1e5),
    }
}

/// `n` operand tuples for `f` at `ty` (deterministic; the first ones are
/// the specials, paired with each other for two-operand functions).
pub fn sample(f: MathFn, ty: Scalar, n: usize) -> Vec<Vec<f64>> {
    let mut r =
        Rng(0x9e37_79b9_7f4a_7c15 ^ (f as u64 + 1).wrapping_mul(0x1000_0001) ^ if ty == Scalar::F32 { 1 } else { 2 });
    (0..n)
        .map(|i| {
            // Two operands: every pair of specials first.
            let index = |j: usize| match (f.arity() > 1 && i < 14 * 14, j) {
                (true, 0) => i % 14,
                (true, _) => i / 14,
                (false, 0) => i,
                (false, _) => 14 + i,
            };
            let mut args: Vec<f64> = (0..f.arity()).map(|j| operand(f, ty, &mut r, index(j))).collect();
            if f == MathFn::Pow && i >= 14 * 14 && r.next().is_multiple_of(4) {
                // Integer exponents and negative bases: the sign rules.
                args[1] = (r.next() % 41) as f64 - 20.0;
                args[0] = -args[0].abs().min(1e3);
            }
            args.iter().map(|&x| to_ty(x, ty)).collect()
        })
        .collect()
}

/// `x` (positive, finite, rounded to `ty`) and the `steps` numbers of `ty`
/// on each side of it.
fn neighbours(x: f64, ty: Scalar, steps: u64) -> Vec<f64> {
    let x = to_ty(x, ty);
    let b = if ty == Scalar::F32 { u64::from((x as f32).to_bits()) } else { x.to_bits() };
    (b - steps..=b + steps)
        .map(|b| if ty == Scalar::F32 { f64::from(f32::from_bits(b as u32)) } else { f64::from_bits(b) })
        .collect()
}

/// The operands where `tanh` is hardest at `ty`, each with its negation:
/// zeros, subnormals, the smallest normal, tiny arguments around `2^-12`
/// (`2^-27` for `f64`) where `tanh x` stops rounding to `x`, each point
/// `(j + 1/2) ln2/2` where the reduction's `k` steps and the one below
/// `0.5`, with neighbours; the argument from which the result rounds to
/// 1 (9.011 / 19.06) and the library's clamp (9.125 / 19.5), with
/// neighbours; large arguments, the largest finite, infinities and NaN.
pub fn tanh_hard_cases(ty: Scalar) -> Vec<f64> {
    let f32 = ty == Scalar::F32;
    let (min_sub, min_normal, max) = if f32 {
        (f64::from(f32::from_bits(1)), f64::from(f32::MIN_POSITIVE), f64::from(f32::MAX))
    } else {
        (f64::from_bits(1), f64::MIN_POSITIVE, f64::MAX)
    };
    let mut xs = vec![0.0, min_sub, 2.0 * min_sub, min_normal - min_sub, min_normal, 1e-30, 1e-10, 1e-5, 1e-3];
    xs.extend(neighbours(libm::ldexp(1.0, if f32 { -12 } else { -27 }), ty, 3));
    let steps = if f32 { 28 } else { 56 };
    for j in 0..steps {
        xs.extend(neighbours((f64::from(j) + 0.5) * std::f64::consts::LN_2 / 2.0, ty, 2));
    }
    xs.extend(neighbours(0.5, ty, 2));
    let (one_from, clamp) = if f32 { (9.0109, 9.125) } else { (19.06, 19.5) };
    xs.extend(neighbours(one_from, ty, 3));
    xs.extend(neighbours(clamp, ty, 3));
    xs.extend([20.0, 100.0, 1e10, 1e30, max, f64::INFINITY]);
    let mut all: Vec<f64> = xs.iter().map(|&x| to_ty(x, ty)).collect();
    all.extend(xs.iter().map(|&x| -to_ty(x, ty)));
    all.push(f64::NAN);
    all
}

/// `tanh`'s dense sweep at `ty`: [`tanh_hard_cases`], then `n` operands
/// in `[-10, 10]` (`[-20, 20]` for `f64`, past where the result is ±1),
/// signs alternating: half spread evenly over the bit patterns (the same
/// number in every binade, subnormals included), half evenly over the
/// values.
pub fn tanh_sweep(ty: Scalar, n: usize) -> Vec<f64> {
    let top = if ty == Scalar::F32 { 10.0f64 } else { 20.0 };
    let top_bits = if ty == Scalar::F32 { u64::from((top as f32).to_bits()) } else { top.to_bits() };
    let half = (n / 2).max(1) as u64;
    let mut xs = tanh_hard_cases(ty);
    for i in 0..half {
        let b = top_bits / half * i;
        let x = if ty == Scalar::F32 { f64::from(f32::from_bits(b as u32)) } else { f64::from_bits(b) };
        xs.push(if i % 2 == 0 { x } else { -x });
    }
    for i in 0..n as u64 - half {
        let x = to_ty(top * i as f64 / (n as u64 - half) as f64, ty);
        xs.push(if i % 2 == 0 { -x } else { x });
    }
    xs
}

/// The largest error of `got` over `args` (operands and results as `f64`,
/// in the precision of `ty`), and the operands where it occurs.
pub fn max_error(f: MathFn, ty: Scalar, args: &[Vec<f64>], got: &[f64]) -> (f64, Vec<f64>) {
    let mut worst = (0.0, Vec::new());
    for (a, &g) in args.iter().zip(got) {
        let e = ulp_error(g, reference(f, a), ty);
        if e > worst.0 || (e.is_nan() && !worst.0.is_nan()) {
            worst = (e, a.clone());
        }
    }
    worst
}
