//! Scalar semantics of the IR's operations on value bits: the one
//! definition that the cpu device executes and the constant folder folds
//! with (so a folded kernel computes exactly what the oracle computes).
//!
//! A value is held as a value's bits zero-extended to 64, exactly as
//! [`crate::Op::Const`] spells them: `bool` is 0 or 1, 32-bit types use
//! the low half (`i32 -1` is `0xffff_ffff`), `f32` is its bit pattern.
//! Every function here returns canonical bits for the result type.

use crate::ir::{AtomicOp, BinaryOp, CmpOp, MathFn, UnaryOp};
use crate::types::Scalar;

#[inline]
fn f32_of(x: u64) -> f32 {
    f32::from_bits(x as u32)
}
#[inline]
fn f64_of(x: u64) -> f64 {
    f64::from_bits(x)
}
#[inline]
fn of_f32(x: f32) -> u64 {
    u64::from(x.to_bits())
}
#[inline]
fn of_f64(x: f64) -> u64 {
    x.to_bits()
}
#[inline]
fn of_bool(b: bool) -> u64 {
    u64::from(b)
}
#[inline]
fn low32(x: u64) -> u64 {
    x & 0xffff_ffff
}

/// `op a` at type `ty`.
#[inline]
pub fn unary(op: UnaryOp, ty: Scalar, a: u64) -> u64 {
    match (op, ty) {
        (UnaryOp::Neg, Scalar::I32 | Scalar::U32) => low32(a.wrapping_neg()),
        (UnaryOp::Neg, Scalar::F32) => a ^ 0x8000_0000,
        (UnaryOp::Neg, Scalar::F64) => a ^ (1 << 63),
        (UnaryOp::Neg, _) => a.wrapping_neg(),
        (UnaryOp::Not, Scalar::Bool) => a ^ 1,
        (UnaryOp::Not, Scalar::I32 | Scalar::U32) => low32(!a),
        (UnaryOp::Not, _) => !a,
        (UnaryOp::Abs, Scalar::I32) => u64::from((a as i32).wrapping_abs() as u32),
        (UnaryOp::Abs, Scalar::I64) => (a as i64).wrapping_abs() as u64,
        (UnaryOp::Abs, Scalar::F32) => a & 0x7fff_ffff,
        (UnaryOp::Abs, Scalar::F64) => a & !(1 << 63),
        (UnaryOp::Abs, _) => a,
        (UnaryOp::Sqrt, Scalar::F32) => of_f32(f32_of(a).sqrt()),
        (UnaryOp::Sqrt, Scalar::F64) => of_f64(f64_of(a).sqrt()),
        (UnaryOp::Sqrt, _) => a,
    }
}

macro_rules! int_binary {
    ($op:expr, $a:expr, $b:expr, $t:ty, $ut:ty) => {{
        let (a, b): ($t, $t) = ($a, $b);
        let bits = <$t>::BITS;
        let r: $t = match $op {
            BinaryOp::Add => a.wrapping_add(b),
            BinaryOp::Sub => a.wrapping_sub(b),
            BinaryOp::Mul => a.wrapping_mul(b),
            BinaryOp::Div => {
                if b == 0 {
                    0
                } else {
                    a.wrapping_div(b)
                }
            }
            BinaryOp::Rem => {
                if b == 0 {
                    a
                } else {
                    a.wrapping_rem(b)
                }
            }
            BinaryOp::Min => a.min(b),
            BinaryOp::Max => a.max(b),
            BinaryOp::And => a & b,
            BinaryOp::Or => a | b,
            BinaryOp::Xor => a ^ b,
            BinaryOp::Shl => a.wrapping_shl((b as $ut as u32) % bits),
            BinaryOp::Shr => a.wrapping_shr((b as $ut as u32) % bits),
        };
        r as $ut as u64
    }};
}

/// `op a, b` at type `ty`.
#[inline]
pub fn binary(op: BinaryOp, ty: Scalar, a: u64, b: u64) -> u64 {
    match ty {
        // Not well typed (no value has a storage type): as its widened type.
        Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 => binary(op, ty.widened(), a, b),
        Scalar::I32 => int_binary!(op, a as u32 as i32, b as u32 as i32, i32, u32),
        Scalar::U32 => int_binary!(op, a as u32, b as u32, u32, u32),
        Scalar::I64 => int_binary!(op, a as i64, b as i64, i64, u64),
        Scalar::U64 | Scalar::Word => int_binary!(op, a, b, u64, u64),
        Scalar::Bool => match op {
            BinaryOp::And => a & b,
            BinaryOp::Or => a | b,
            BinaryOp::Xor => a ^ b,
            // Not well typed; keep the result canonical anyway.
            _ => int_binary!(op, a, b, u64, u64) & 1,
        },
        Scalar::F32 => {
            let (x, y) = (f32_of(a), f32_of(b));
            match op {
                BinaryOp::Add => of_f32(x + y),
                BinaryOp::Sub => of_f32(x - y),
                BinaryOp::Mul => of_f32(x * y),
                BinaryOp::Div => of_f32(x / y),
                BinaryOp::Rem => of_f32(x % y),
                BinaryOp::Min => of_f32(x.min(y)),
                BinaryOp::Max => of_f32(x.max(y)),
                _ => low32(int_binary!(op, a, b, u64, u64)),
            }
        }
        Scalar::F64 => {
            let (x, y) = (f64_of(a), f64_of(b));
            match op {
                BinaryOp::Add => of_f64(x + y),
                BinaryOp::Sub => of_f64(x - y),
                BinaryOp::Mul => of_f64(x * y),
                BinaryOp::Div => of_f64(x / y),
                BinaryOp::Rem => of_f64(x % y),
                BinaryOp::Min => of_f64(x.min(y)),
                BinaryOp::Max => of_f64(x.max(y)),
                _ => int_binary!(op, a, b, u64, u64),
            }
        }
    }
}

fn cmp_ord<T: PartialOrd>(op: CmpOp, a: T, b: T) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }
}

/// `op a, b` where the operands have type `ty` (`None`: pointers, compared
/// as unsigned addresses).
#[inline]
pub fn compare(op: CmpOp, ty: Option<Scalar>, a: u64, b: u64) -> u64 {
    of_bool(match ty {
        Some(Scalar::I32) => cmp_ord(op, a as u32 as i32, b as u32 as i32),
        Some(Scalar::I64) => cmp_ord(op, a as i64, b as i64),
        Some(Scalar::F32) => cmp_ord(op, f32_of(a), f32_of(b)),
        Some(Scalar::F64) => cmp_ord(op, f64_of(a), f64_of(b)),
        _ => cmp_ord(op, a, b),
    })
}

/// A source value, exactly.
enum Num {
    Int(i128),
    F32(f32),
    F64(f64),
}

/// `convert a` from `from` to `to` (Rust's `as` semantics: float → int
/// truncates toward zero and saturates, NaN gives 0; `bool` from `!= 0`).
pub fn convert(from: Scalar, to: Scalar, a: u64) -> u64 {
    let n = match from {
        Scalar::I32 => Num::Int(i128::from(a as u32 as i32)),
        Scalar::I64 => Num::Int(i128::from(a as i64)),
        Scalar::F32 => Num::F32(f32_of(a)),
        Scalar::F64 => Num::F64(f64_of(a)),
        Scalar::Bool | Scalar::U32 | Scalar::U64 | Scalar::Word => Num::Int(i128::from(a)),
        // Not well typed (no value has a storage type): as its widened type.
        Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 => return convert(from.widened(), to, a),
    };
    if to.is_storage() {
        return convert(from, to.widened(), a);
    }
    match (n, to) {
        (Num::Int(v), Scalar::Bool) => of_bool(v != 0),
        (Num::F32(x), Scalar::Bool) => of_bool(x != 0.0),
        (Num::F64(x), Scalar::Bool) => of_bool(x != 0.0),
        (Num::Int(v), Scalar::I32) => u64::from(v as i32 as u32),
        (Num::Int(v), Scalar::U32) => u64::from(v as u32),
        (Num::Int(v), Scalar::I64) => v as i64 as u64,
        (Num::Int(v), Scalar::U64 | Scalar::Word) => v as u64,
        (Num::Int(v), Scalar::F32) => of_f32(v as f32),
        (Num::Int(v), Scalar::F64) => of_f64(v as f64),
        (Num::F32(x), Scalar::I32) => u64::from(x as i32 as u32),
        (Num::F32(x), Scalar::U32) => u64::from(x as u32),
        (Num::F32(x), Scalar::I64) => x as i64 as u64,
        (Num::F32(x), Scalar::U64 | Scalar::Word) => x as u64,
        (Num::F32(x), Scalar::F32) => of_f32(x),
        (Num::F32(x), Scalar::F64) => of_f64(f64::from(x)),
        (Num::F64(x), Scalar::I32) => u64::from(x as i32 as u32),
        (Num::F64(x), Scalar::U32) => u64::from(x as u32),
        (Num::F64(x), Scalar::I64) => x as i64 as u64,
        (Num::F64(x), Scalar::U64 | Scalar::Word) => x as u64,
        (Num::F64(x), Scalar::F32) => of_f32(x as f32),
        (Num::F64(x), Scalar::F64) => of_f64(x),
        (_, Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16) => unreachable!("storage types are widened above"),
    }
}

/// An exact math function ([`MathFn::is_exact`]) of `args` at float type
/// `ty`; `None` for the others (computed by the math library, in the IR)
/// and for a wrong type or operand count. `fma` is correctly rounded by the
/// pure-Rust `libm` crate, so the result is the same on every host (std's
/// `mul_add` may call the platform's C library).
pub fn math(f: MathFn, ty: Scalar, args: &[u64]) -> Option<u64> {
    if args.len() != f.arity() {
        return None;
    }
    match ty {
        Scalar::F32 => {
            let x = f32_of(args[0]);
            let y = || f32_of(args[1]);
            Some(of_f32(match f {
                MathFn::Fma => libm::fmaf(x, y(), f32_of(args[2])),
                MathFn::Floor => x.floor(),
                MathFn::Ceil => x.ceil(),
                MathFn::Trunc => x.trunc(),
                MathFn::Round => x.round(),
                MathFn::Copysign => return Some((args[0] & 0x7fff_ffff) | (args[1] & 0x8000_0000)),
                _ => return None,
            }))
        }
        Scalar::F64 => {
            let x = f64_of(args[0]);
            let y = || f64_of(args[1]);
            Some(of_f64(match f {
                MathFn::Fma => libm::fma(x, y(), f64_of(args[2])),
                MathFn::Floor => x.floor(),
                MathFn::Ceil => x.ceil(),
                MathFn::Trunc => x.trunc(),
                MathFn::Round => x.round(),
                MathFn::Copysign => return Some((args[0] & !(1 << 63)) | (args[1] & (1 << 63))),
                _ => return None,
            }))
        }
        _ => None,
    }
}

/// The new memory value of `op` applied to `old` and `v` at integer type `ty`.
#[inline]
pub fn atomic(op: AtomicOp, ty: Scalar, old: u64, v: u64) -> u64 {
    match op {
        AtomicOp::Add => binary(BinaryOp::Add, ty, old, v),
        AtomicOp::Min => binary(BinaryOp::Min, ty, old, v),
        AtomicOp::Max => binary(BinaryOp::Max, ty, old, v),
        AtomicOp::Xchg => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i32b(x: i32) -> u64 {
        u64::from(x as u32)
    }

    #[test]
    fn exact_math_functions() {
        let f = |x: f32| u64::from(x.to_bits());
        let m = |g, args: &[f32]| math(g, Scalar::F32, &args.iter().map(|&x| f(x)).collect::<Vec<_>>());
        assert_eq!(m(MathFn::Round, &[-2.5]), Some(f(-3.0)));
        assert_eq!(m(MathFn::Floor, &[-0.5]), Some(f(-1.0)));
        assert_eq!(m(MathFn::Ceil, &[-0.5]), Some(f(-0.0)));
        assert_eq!(m(MathFn::Trunc, &[-1.75]), Some(f(-1.0)));
        assert_eq!(m(MathFn::Copysign, &[2.0, -0.0]), Some(f(-2.0)));
        // One rounding: 1 + 2^-23 squared is 1 + 2^-22 + 2^-46; minus the
        // rounded square leaves exactly 2^-46 (two roundings would give 0).
        let a = 1.0 + f32::EPSILON;
        assert_eq!(m(MathFn::Fma, &[a, a, -(a * a)]), Some(f(2f32.powi(-46))));
        let d = 1.0 + f64::EPSILON;
        assert_eq!(
            math(MathFn::Fma, Scalar::F64, &[d.to_bits(), d.to_bits(), (-(d * d)).to_bits()]),
            Some(2f64.powi(-104).to_bits())
        );
        assert_eq!(m(MathFn::Exp, &[1.0]), None);
        assert_eq!(m(MathFn::Fma, &[1.0]), None);
    }

    #[test]
    fn integer_division_edge_cases() {
        let (min, m1) = (i32b(i32::MIN), i32b(-1));
        assert_eq!(binary(BinaryOp::Div, Scalar::I32, i32b(7), 0), 0);
        assert_eq!(binary(BinaryOp::Rem, Scalar::I32, i32b(7), 0), i32b(7));
        assert_eq!(binary(BinaryOp::Div, Scalar::I32, min, m1), min);
        assert_eq!(binary(BinaryOp::Rem, Scalar::I32, min, m1), 0);
        assert_eq!(binary(BinaryOp::Rem, Scalar::I32, i32b(-7), i32b(2)), i32b(-1));
        assert_eq!(binary(BinaryOp::Div, Scalar::U64, 7, 0), 0);
        assert_eq!(binary(BinaryOp::Rem, Scalar::U64, 7, 0), 7);
        assert_eq!(binary(BinaryOp::Div, Scalar::I64, i64::MIN as u64, u64::MAX), i64::MIN as u64);
    }

    #[test]
    fn shifts_wrap_the_amount_and_respect_sign() {
        assert_eq!(binary(BinaryOp::Shl, Scalar::U32, 1, 33), 2);
        assert_eq!(binary(BinaryOp::Shr, Scalar::I32, i32b(-8), 1), i32b(-4));
        assert_eq!(binary(BinaryOp::Shr, Scalar::U32, i32b(-8), 1), 0x7fff_fffc);
        assert_eq!(binary(BinaryOp::Shr, Scalar::I64, u64::MAX, 64), u64::MAX);
        assert_eq!(binary(BinaryOp::Shl, Scalar::I32, 1, i32b(-1)), i32b(i32::MIN));
    }

    #[test]
    fn results_stay_canonical() {
        assert_eq!(unary(UnaryOp::Neg, Scalar::I32, 1), 0xffff_ffff);
        assert_eq!(unary(UnaryOp::Not, Scalar::U32, 0), 0xffff_ffff);
        assert_eq!(unary(UnaryOp::Not, Scalar::Bool, 1), 0);
        assert_eq!(unary(UnaryOp::Abs, Scalar::I32, i32b(i32::MIN)), i32b(i32::MIN));
        assert_eq!(binary(BinaryOp::Add, Scalar::U32, 0xffff_ffff, 1), 0);
        assert_eq!(binary(BinaryOp::Mul, Scalar::I32, i32b(i32::MAX), 2), i32b(-2));
    }

    #[test]
    fn conversions_follow_rust_as() {
        let f = |x: f32| u64::from(x.to_bits());
        assert_eq!(convert(Scalar::F32, Scalar::I32, f(f32::NAN)), 0);
        assert_eq!(convert(Scalar::F32, Scalar::I32, f(1e20)), i32b(i32::MAX));
        assert_eq!(convert(Scalar::F32, Scalar::I32, f(-2.7)), i32b(-2));
        assert_eq!(convert(Scalar::F32, Scalar::U32, f(-5.0)), 0);
        assert_eq!(convert(Scalar::I32, Scalar::I64, i32b(-1)), u64::MAX);
        assert_eq!(convert(Scalar::U32, Scalar::I64, i32b(-1)), 0xffff_ffff);
        assert_eq!(convert(Scalar::I64, Scalar::U32, u64::MAX), 0xffff_ffff);
        assert_eq!(convert(Scalar::U64, Scalar::F32, u64::MAX), f(u64::MAX as f32));
        assert_eq!(convert(Scalar::F64, Scalar::Bool, f64::NAN.to_bits()), 1);
        assert_eq!(convert(Scalar::Bool, Scalar::F64, 1), 1.0f64.to_bits());
    }

    #[test]
    fn float_min_max_and_compare_with_nan() {
        let f = |x: f32| u64::from(x.to_bits());
        assert_eq!(binary(BinaryOp::Min, Scalar::F32, f(f32::NAN), f(3.0)), f(3.0));
        assert_eq!(binary(BinaryOp::Max, Scalar::F32, f(3.0), f(f32::NAN)), f(3.0));
        assert_eq!(compare(CmpOp::Eq, Some(Scalar::F32), f(f32::NAN), f(f32::NAN)), 0);
        assert_eq!(compare(CmpOp::Ne, Some(Scalar::F32), f(f32::NAN), f(f32::NAN)), 1);
        assert_eq!(compare(CmpOp::Lt, Some(Scalar::I32), i32b(-1), 0), 1);
        assert_eq!(compare(CmpOp::Lt, Some(Scalar::U32), i32b(-1), 0), 0);
    }
}
