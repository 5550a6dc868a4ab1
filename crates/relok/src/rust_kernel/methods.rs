//! Rust's integer and float methods the IR has no operation for, composed
//! from the operations it has (no new IR operations: every backend
//! already computes these): bit counts (`count_ones`, `leading_zeros`, …,
//! by bit tricks on the unsigned type of the same width), rotations,
//! byte and bit reversal, `pow` / `powi` (square and multiply, in the
//! order of Rust's), the `wrapping_*`, `saturating_*` and `checked_*`
//! (an `Option`, `option.rs`) arithmetic, `clamp`, `signum`, the float
//! classification (`is_finite`, …, by the bits), `to_bits` / `from_bits`,
//! and a slice's `swap`.
//!
//! Each computes what Rust's does, for every value: the tests compare
//! them with Rust's on the host over the types' edge values. Where Rust
//! panics, the device throws Rust's message (`clamp` with `min > max`);
//! where Rust panics only in debug builds (overflow of `pow`), the device
//! wraps as a release build does, as for `+` (docs/kernels.md).

use super::build::Cx;
use super::option::Opt;
use super::staged::*;
use relok_ir::Scalar;

/// `bits` (zero-extended) with only the type's width kept.
fn mask<T: DevScalar>(bits: u64) -> u64 {
    let w = width::<T>();
    if w >= 64 { bits } else { bits & ((1u64 << w) - 1) }
}

/// The width of `T` in bits (a small integer's own: 8 or 16, although its
/// values are computed on in 32 bits and kept in range, [`Cx::wrap`]).
fn width<T: DevScalar>() -> u32 {
    T::MEM.bits()
}

impl Cx<'_> {
    fn c<T: DevScalar>(&mut self, bits: u64) -> Val<T> {
        self.lit_bits::<T>(mask::<T>(bits))
    }

    fn select<T: DevScalar>(&mut self, c: Val<bool>, a: Val<T>, b: Val<T>) -> Val<T> {
        Val::new(self.b.select(c.v, a.v, b.v))
    }

    fn bitcast<T: DevScalar, U: DevScalar>(&mut self, a: Val<T>) -> Val<U> {
        Val::new(self.b.bitcast(a.v, U::SCALAR))
    }

    /// The largest value of `T`.
    fn max_of<T: Int>(&mut self) -> Val<T> {
        let bits = if T::SCALAR.is_signed() { u64::MAX >> (65 - width::<T>()) } else { u64::MAX };
        self.c(bits)
    }

    /// The smallest value of `T`.
    fn min_of<T: Int>(&mut self) -> Val<T> {
        let bits = if T::SCALAR.is_signed() { 1u64 << (width::<T>() - 1) } else { 0 };
        self.c(bits)
    }

    /// The population count of `x` (unsigned), as `T`.
    fn popcount<U: Int>(&mut self, x: Val<U>) -> Val<U> {
        let w = width::<U>();
        let one = self.c::<U>(1);
        let two = self.c::<U>(2);
        let four = self.c::<U>(4);
        let m1 = self.c::<U>(0x5555_5555_5555_5555);
        let m2 = self.c::<U>(0x3333_3333_3333_3333);
        let m4 = self.c::<U>(0x0f0f_0f0f_0f0f_0f0f);
        let h01 = self.c::<U>(0x0101_0101_0101_0101);
        let a = self.shr(x, one);
        let a = self.bitand(a, m1);
        let x = self.sub(x, a);
        let lo = self.bitand(x, m2);
        let hi = self.shr(x, two);
        let hi = self.bitand(hi, m2);
        let x = self.add(lo, hi);
        let s = self.shr(x, four);
        let x = self.add(x, s);
        let x = self.bitand(x, m4);
        let x = self.mul(x, h01);
        let top = self.c::<U>(u64::from(w - 8));
        self.shr(x, top)
    }

    /// `x.count_ones()`
    pub fn count_ones<T: Int>(&mut self, x: Val<T>) -> Val<u32> {
        let u = self.cast::<T, T::Unsigned>(x);
        let n = self.popcount(u);
        self.cast(n)
    }

    /// `x.count_zeros()`
    pub fn count_zeros<T: Int>(&mut self, x: Val<T>) -> Val<u32> {
        let n = self.not(x);
        self.count_ones(n)
    }

    /// `x.leading_zeros()`: the bits below the highest set one, all set,
    /// then counted.
    pub fn leading_zeros<T: Int>(&mut self, x: Val<T>) -> Val<u32> {
        let mut u = self.cast::<T, T::Unsigned>(x);
        let mut s = 1;
        while s < width::<T>() {
            let k = self.c::<T::Unsigned>(u64::from(s));
            let shifted = self.shr(u, k);
            u = self.bitor(u, shifted);
            s *= 2;
        }
        let ones = self.popcount(u);
        let ones = self.cast::<T::Unsigned, u32>(ones);
        let w = self.lit(width::<T>());
        self.sub(w, ones)
    }

    /// `x.trailing_zeros()`: the ones of `!x & (x - 1)`.
    pub fn trailing_zeros<T: Int>(&mut self, x: Val<T>) -> Val<u32> {
        let u = self.cast::<T, T::Unsigned>(x);
        let one = self.c::<T::Unsigned>(1);
        let below = self.sub(u, one);
        let n = self.not(u);
        let t = self.bitand(n, below);
        let c = self.popcount(t);
        self.cast(c)
    }

    /// `x.leading_ones()`
    pub fn leading_ones<T: Int>(&mut self, x: Val<T>) -> Val<u32> {
        let n = self.not(x);
        self.leading_zeros(n)
    }

    /// `x.trailing_ones()`
    pub fn trailing_ones<T: Int>(&mut self, x: Val<T>) -> Val<u32> {
        let n = self.not(x);
        self.trailing_zeros(n)
    }

    /// `x.rotate_left(n)` (by `n` modulo the width, as Rust's).
    pub fn rotate_left<T: Int>(&mut self, x: Val<T>, n: Val<u32>) -> Val<T> {
        let u = self.cast::<T, T::Unsigned>(x);
        let w = self.lit(width::<T>());
        let back = self.sub(w, n);
        // Shifts take their amount modulo the width: `n % w` and
        // `(w - n) % w`, and a rotation by 0 is `x | x`.
        let a = self.shl(u, n);
        let b = self.shr(u, back);
        let r = self.bitor(a, b);
        self.cast(r)
    }

    /// `x.rotate_right(n)`
    pub fn rotate_right<T: Int>(&mut self, x: Val<T>, n: Val<u32>) -> Val<T> {
        let w = self.lit(width::<T>());
        let left = self.sub(w, n);
        self.rotate_left(x, left)
    }

    /// `x.swap_bytes()`
    pub fn swap_bytes<T: Int>(&mut self, x: Val<T>) -> Val<T> {
        let u = self.cast::<T, T::Unsigned>(x);
        let w = width::<T>();
        let ff = self.c::<T::Unsigned>(0xff);
        let mut r = self.c::<T::Unsigned>(0);
        for k in 0..w / 8 {
            let down = self.c::<T::Unsigned>(u64::from(8 * k));
            let byte = self.shr(u, down);
            let byte = self.bitand(byte, ff);
            let up = self.c::<T::Unsigned>(u64::from(w - 8 - 8 * k));
            let byte = self.shl(byte, up);
            r = self.bitor(r, byte);
        }
        self.cast(r)
    }

    /// `x.reverse_bits()`: bits swapped within bytes, then the bytes.
    pub fn reverse_bits<T: Int>(&mut self, x: Val<T>) -> Val<T> {
        let mut u = self.cast::<T, T::Unsigned>(x);
        for (s, m) in [(1u64, 0x5555_5555_5555_5555u64), (2, 0x3333_3333_3333_3333), (4, 0x0f0f_0f0f_0f0f_0f0f)] {
            let k = self.c::<T::Unsigned>(s);
            let m = self.c::<T::Unsigned>(m);
            let a = self.shr(u, k);
            let a = self.bitand(a, m);
            let b = self.bitand(u, m);
            let b = self.shl(b, k);
            u = self.bitor(a, b);
        }
        let t = self.cast::<T::Unsigned, T>(u);
        self.swap_bytes(t)
    }

    /// `x.pow(e)` / `x.wrapping_pow(e)`: square and multiply, wrapping (as
    /// a release build's `pow`).
    pub fn pow<T: Int>(&mut self, x: Val<T>, e: Val<u32>) -> Val<T> {
        let one = self.c::<T>(1);
        let r = self.var(one);
        let base = self.var(x);
        let exp = self.var(e);
        self.loop_(|cx| {
            let k = cx.get(exp);
            let zero = cx.lit(0u32);
            let done = cx.eq(k, zero);
            cx.if_(done, |cx| cx.break_(), |_| {});
            let one = cx.lit(1u32);
            let bit = cx.bitand(k, one);
            let set = cx.ne(bit, zero);
            let b = cx.get(base);
            cx.if_(
                set,
                |cx| {
                    let a = cx.get(r);
                    let m = cx.mul(a, b);
                    cx.set(r, m);
                },
                |_| {},
            );
            let k = cx.shr(k, one);
            cx.set(exp, k);
            let sq = cx.mul(b, b);
            cx.set(base, sq);
        });
        self.get(r)
    }

    /// `x.powi(n)`: Rust's algorithm (compiler-builtins' `__powisf2`):
    /// square and multiply over `|n|`, then `1 / r` for a negative `n`.
    pub fn powi<T: Float>(&mut self, x: Val<T>, n: Val<i32>) -> Val<T> {
        let one = self.lit_bits::<T>(T::ONE_BITS);
        let r = self.var(one);
        let a = self.var(x);
        let abs = self.abs(n);
        let abs = self.cast::<i32, u32>(abs);
        let p = self.var(abs);
        self.loop_(|cx| {
            let k = cx.get(p);
            let one_u = cx.lit(1u32);
            let zero = cx.lit(0u32);
            let bit = cx.bitand(k, one_u);
            let set = cx.ne(bit, zero);
            cx.if_(
                set,
                |cx| {
                    let m = cx.get(r);
                    let b = cx.get(a);
                    let m = cx.mul(m, b);
                    cx.set(r, m);
                },
                |_| {},
            );
            let k = cx.shr(k, one_u);
            cx.set(p, k);
            let done = cx.eq(k, zero);
            cx.if_(done, |cx| cx.break_(), |_| {});
            let b = cx.get(a);
            let sq = cx.mul(b, b);
            cx.set(a, sq);
        });
        let m = self.get(r);
        let zero = self.lit(0i32);
        let neg = self.lt(n, zero);
        let inv = self.div(one, m);
        self.select(neg, inv, m)
    }

    /// `a + b` and whether it overflows.
    pub(super) fn add_overflow<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> (Val<T>, Val<bool>) {
        let r = self.add(a, b);
        if !T::SCALAR.is_signed() {
            return (r, self.lt(r, a));
        }
        let zero = self.c::<T>(0);
        let up = self.gt(b, zero);
        let lt = self.lt(r, a);
        let gt = self.gt(r, a);
        (r, self.select(up, lt, gt))
    }

    /// `a - b` and whether it overflows.
    pub(super) fn sub_overflow<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> (Val<T>, Val<bool>) {
        let r = self.sub(a, b);
        if !T::SCALAR.is_signed() {
            return (r, self.lt(a, b));
        }
        let zero = self.c::<T>(0);
        let up = self.gt(b, zero);
        let lt = self.lt(r, a);
        let gt = self.gt(r, a);
        (r, self.select(up, gt, lt))
    }

    /// `a * b` and whether it overflows: `r / a != b` (and, signed,
    /// `-1 * MIN`, whose quotient is `MIN` again).
    pub(super) fn mul_overflow<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> (Val<T>, Val<bool>) {
        let r = self.mul(a, b);
        let zero = self.c::<T>(0);
        let nonzero = self.ne(a, zero);
        let q = self.div(r, a);
        let differs = self.ne(q, b);
        let mut o = self.bitand(nonzero, differs);
        if T::SCALAR.is_signed() {
            let m1 = self.c::<T>(u64::MAX);
            let min = self.min_of::<T>();
            let a_m1 = self.eq(a, m1);
            let b_min = self.eq(b, min);
            let both = self.bitand(a_m1, b_min);
            o = self.bitor(o, both);
        }
        (r, o)
    }

    /// The bound a saturating operation stops at: `MAX`, or `MIN` when
    /// `toward_min`.
    fn bound<T: Int>(&mut self, toward_min: Val<bool>) -> Val<T> {
        let max = self.max_of::<T>();
        let min = self.min_of::<T>();
        self.select(toward_min, min, max)
    }

    /// `a.saturating_add(b)`
    pub fn saturating_add<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Val<T> {
        let (r, o) = self.add_overflow(a, b);
        let zero = self.c::<T>(0);
        let down = if T::SCALAR.is_signed() { self.lt(b, zero) } else { self.lit(false) };
        let s = self.bound(down);
        self.select(o, s, r)
    }

    /// `a.saturating_sub(b)`
    pub fn saturating_sub<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Val<T> {
        let (r, o) = self.sub_overflow(a, b);
        let zero = self.c::<T>(0);
        let down = if T::SCALAR.is_signed() { self.gt(b, zero) } else { self.lit(true) };
        let s = self.bound(down);
        self.select(o, s, r)
    }

    /// `a.saturating_mul(b)`
    pub fn saturating_mul<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Val<T> {
        let (r, o) = self.mul_overflow(a, b);
        let down = if T::SCALAR.is_signed() {
            let zero = self.c::<T>(0);
            let an = self.lt(a, zero);
            let bn = self.lt(b, zero);
            self.ne(an, bn)
        } else {
            self.lit(false)
        };
        let s = self.bound(down);
        self.select(o, s, r)
    }

    /// `a.checked_add(b)`
    pub fn checked_add<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Opt<Val<T>> {
        let (r, o) = self.add_overflow(a, b);
        self.some_unless(o, r)
    }

    /// `a.checked_sub(b)`
    pub fn checked_sub<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Opt<Val<T>> {
        let (r, o) = self.sub_overflow(a, b);
        self.some_unless(o, r)
    }

    /// `a.checked_mul(b)`
    pub fn checked_mul<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Opt<Val<T>> {
        let (r, o) = self.mul_overflow(a, b);
        self.some_unless(o, r)
    }

    /// Whether `a / b` has no value: `b == 0`, or `MIN / -1`.
    fn div_none<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Val<bool> {
        let zero = self.c::<T>(0);
        let z = self.eq(b, zero);
        if !T::SCALAR.is_signed() {
            return z;
        }
        let m1 = self.c::<T>(u64::MAX);
        let min = self.min_of::<T>();
        let a_min = self.eq(a, min);
        let b_m1 = self.eq(b, m1);
        let o = self.bitand(a_min, b_m1);
        self.bitor(z, o)
    }

    /// `a.checked_div(b)`
    pub fn checked_div<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Opt<Val<T>> {
        let none = self.div_none(a, b);
        let r = self.div(a, b);
        self.some_unless(none, r)
    }

    /// `a.checked_rem(b)`
    pub fn checked_rem<T: Int>(&mut self, a: Val<T>, b: Val<T>) -> Opt<Val<T>> {
        let none = self.div_none(a, b);
        let r = self.rem(a, b);
        self.some_unless(none, r)
    }

    /// `a.checked_neg()`: `MIN` (signed), anything but 0 (unsigned) has
    /// none.
    pub fn checked_neg<T: Int>(&mut self, a: Val<T>) -> Opt<Val<T>> {
        let zero = self.c::<T>(0);
        let r = self.sub(zero, a);
        let none = if T::SCALAR.is_signed() {
            let min = self.min_of::<T>();
            self.eq(a, min)
        } else {
            self.ne(a, zero)
        };
        self.some_unless(none, r)
    }

    /// `a.checked_shl(n)`: none from the width on.
    pub fn checked_shl<T: Int>(&mut self, a: Val<T>, n: Val<u32>) -> Opt<Val<T>> {
        let w = self.lit(width::<T>());
        let none = self.ge(n, w);
        let r = self.shl(a, n);
        self.some_unless(none, r)
    }

    /// `a.checked_shr(n)`
    pub fn checked_shr<T: Int>(&mut self, a: Val<T>, n: Val<u32>) -> Opt<Val<T>> {
        let w = self.lit(width::<T>());
        let none = self.ge(n, w);
        let r = self.shr(a, n);
        self.some_unless(none, r)
    }

    /// `Some(r)` unless `none`.
    fn some_unless<T: DevScalar>(&mut self, none: Val<bool>, r: Val<T>) -> Opt<Val<T>> {
        let some = self.not(none);
        self.some_if(some, r)
    }

    /// `x.wrapping_neg()` (unsigned too: `0 - x`).
    pub fn wrapping_neg<T: Int>(&mut self, x: Val<T>) -> Val<T> {
        let zero = self.c::<T>(0);
        self.sub(zero, x)
    }

    /// `x.wrapping_shl(n)`: by `n` modulo the width.
    pub fn wrapping_shl<T: Int>(&mut self, x: Val<T>, n: Val<u32>) -> Val<T> {
        self.shl(x, n)
    }

    /// `x.wrapping_shr(n)`: by `n` modulo the width.
    pub fn wrapping_shr<T: Int>(&mut self, x: Val<T>, n: Val<u32>) -> Val<T> {
        self.shr(x, n)
    }

    /// `x.clamp(lo, hi)`: throws Rust's message when `lo <= hi` does not
    /// hold (for floats, also when either is NaN); a NaN `x` stays NaN.
    pub fn clamp<T: Num>(&mut self, x: Val<T>, lo: Val<T>, hi: Val<T>, at: Loc) -> Val<T> {
        let ok = self.le(lo, hi);
        let message =
            if T::SCALAR.is_float() { "min > max, or either was NaN" } else { "assertion failed: min <= max" };
        self.assert(ok, message, at);
        let below = self.lt(x, lo);
        let x = self.select(below, lo, x);
        let above = self.gt(x, hi);
        self.select(above, hi, x)
    }

    /// `x.signum()`: floats: NaN for NaN, else 1.0 with `x`'s sign (so
    /// `-0.0` gives `-1.0`); signed integers: -1, 0 or 1.
    pub fn signum<T: Signed>(&mut self, x: Val<T>) -> Val<T> {
        if T::SCALAR.is_float() {
            let nan = self.c::<T>(if T::SCALAR == Scalar::F32 { 0x7fc0_0000 } else { 0x7ff8_0000_0000_0000 });
            let one = self.c::<T>(if T::SCALAR == Scalar::F32 { 0x3f80_0000 } else { 0x3ff0_0000_0000_0000 });
            let s = Val::new(self.b.math(relok_ir::MathFn::Copysign, &[one.v, x.v]));
            let is_nan = self.ne(x, x);
            return self.select(is_nan, nan, s);
        }
        let zero = self.c::<T>(0);
        let one = self.c::<T>(1);
        let m1 = self.c::<T>(u64::MAX);
        let pos = self.gt(x, zero);
        let neg = self.lt(x, zero);
        let s = self.select(neg, m1, zero);
        self.select(pos, one, s)
    }

    /// `x.is_positive()` (signed integers)
    pub fn is_positive<T: Int + Signed>(&mut self, x: Val<T>) -> Val<bool> {
        let zero = self.c::<T>(0);
        self.gt(x, zero)
    }

    /// `x.is_negative()` (signed integers)
    pub fn is_negative<T: Int + Signed>(&mut self, x: Val<T>) -> Val<bool> {
        let zero = self.c::<T>(0);
        self.lt(x, zero)
    }

    /// The bits of `x` and its exponent's mask.
    fn float_bits<T: Float>(&mut self, x: Val<T>) -> (Val<T::Bits>, Val<T::Bits>) {
        let bits = self.to_bits(x);
        let exp = self.c::<T::Bits>(if width::<T>() == 32 { 0x7f80_0000 } else { 0x7ff0_0000_0000_0000 });
        (bits, exp)
    }

    /// `x.is_finite()`: its exponent is not all ones.
    pub fn is_finite<T: Float>(&mut self, x: Val<T>) -> Val<bool> {
        let (bits, exp) = self.float_bits(x);
        let e = self.bitand(bits, exp);
        self.ne(e, exp)
    }

    /// `x.is_infinite()`: all but the sign are the exponent's ones.
    pub fn is_infinite<T: Float>(&mut self, x: Val<T>) -> Val<bool> {
        let (bits, exp) = self.float_bits(x);
        let abs = self.c::<T::Bits>(u64::MAX >> (65 - width::<T>()));
        let a = self.bitand(bits, abs);
        self.eq(a, exp)
    }

    /// `x.is_sign_negative()`: the sign bit (NaNs and `-0.0` too).
    pub fn is_sign_negative<T: Float>(&mut self, x: Val<T>) -> Val<bool> {
        let bits = self.to_bits(x);
        let sign = self.c::<T::Bits>(1u64 << (width::<T>() - 1));
        let s = self.bitand(bits, sign);
        let zero = self.c::<T::Bits>(0);
        self.ne(s, zero)
    }

    /// `x.is_sign_positive()`
    pub fn is_sign_positive<T: Float>(&mut self, x: Val<T>) -> Val<bool> {
        let n = self.is_sign_negative(x);
        self.not(n)
    }

    /// `x.to_bits()`
    pub fn to_bits<T: Float>(&mut self, x: Val<T>) -> Val<T::Bits> {
        self.bitcast(x)
    }

    /// `f32::from_bits(b)` / `f64::from_bits(b)`.
    pub fn from_bits<T: Float>(&mut self, b: Val<T::Bits>) -> Val<T> {
        self.bitcast(b)
    }

    /// `x.swap(i, j)` of a slice or array: both indices bounds-checked
    /// `s.fill(v)`: every element of the slice, array or sub-slice set to
    /// `v`, in order (no bounds check: each index is below the length).
    pub fn fill<T: super::structs::Stored, S: Indexed<T>>(&mut self, s: S, v: T::Val)
    where
        T::Val: Copy,
    {
        let (p, len) = s.base(self);
        let zero = self.lit(0usize);
        let it = self.range(zero, len, false);
        self.each(it, |cx, i| T::store_at(cx, p, Some(i.v), v));
    }

    /// (`i` first, at `at`, as Rust's), then the two elements exchanged.
    pub fn swap<T: super::structs::Stored, S: Indexed<T>>(&mut self, s: S, i: Val<usize>, j: Val<usize>, at: Loc) {
        let a = self.load(s, i, at);
        let b = self.load(s, j, at);
        let (p, _) = s.base(self);
        T::store_at(self, p, Some(i.v), b);
        T::store_at(self, p, Some(j.v), a);
    }
}
