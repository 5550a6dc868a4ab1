//! The operations the math library's algorithms are written with ([`Cx`]),
//! and their two meanings: IR operations emitted into a function
//! ([`IrCx`]), and the same IEEE operations evaluated in Rust ([`EvalCx`],
//! the IR semantics of `relok_ir::eval`: a mirror of what every device
//! computes, used by the tests and the accuracy measurement).
//!
//! Floats are `f64` or `f32`, integers `i64` or `i32` of the same width
//! (shifts: the amount modulo the width, `shr` arithmetic), conditions
//! `bool`; constants are given as `f64`/`i64` and rounded to the type. There are no branches: an algorithm
//! computes every path and selects.

use relok_ir::builder::FunctionBuilder;
use relok_ir::{CmpOp, MathFn, Op, Scalar, UnaryOp, Value};

/// The primitive operations of the math library.
pub(crate) trait Cx {
    /// An `f64`.
    type F: Copy;
    /// An `i64`.
    type I: Copy;
    /// A `bool`.
    type B: Copy;

    fn f(&mut self, x: f64) -> Self::F;
    fn i(&mut self, x: i64) -> Self::I;
    fn add(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn sub(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn mul(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn div(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn rem(&mut self, a: Self::F, b: Self::F) -> Self::F;
    fn sqrt(&mut self, a: Self::F) -> Self::F;
    fn abs(&mut self, a: Self::F) -> Self::F;
    fn neg(&mut self, a: Self::F) -> Self::F;
    fn trunc(&mut self, a: Self::F) -> Self::F;
    /// To the nearest integer, halfway away from zero (the IR's `round`).
    fn round(&mut self, a: Self::F) -> Self::F;
    fn flt(&mut self, a: Self::F, b: Self::F) -> Self::B;
    fn feq(&mut self, a: Self::F, b: Self::F) -> Self::B;
    fn sel(&mut self, c: Self::B, a: Self::F, b: Self::F) -> Self::F;
    fn seli(&mut self, c: Self::B, a: Self::I, b: Self::I) -> Self::I;
    fn bits(&mut self, a: Self::F) -> Self::I;
    fn float_of(&mut self, a: Self::I) -> Self::F;
    fn itof(&mut self, a: Self::I) -> Self::F;
    fn ftoi(&mut self, a: Self::F) -> Self::I;
    fn iadd(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn isub(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn iand(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn ior(&mut self, a: Self::I, b: Self::I) -> Self::I;
    fn shl(&mut self, a: Self::I, n: Self::I) -> Self::I;
    fn shr(&mut self, a: Self::I, n: Self::I) -> Self::I;
    fn ilt(&mut self, a: Self::I, b: Self::I) -> Self::B;
    fn ieq(&mut self, a: Self::I, b: Self::I) -> Self::B;
    fn and(&mut self, a: Self::B, b: Self::B) -> Self::B;
    fn or(&mut self, a: Self::B, b: Self::B) -> Self::B;
    fn not(&mut self, a: Self::B) -> Self::B;
}

/// Evaluates in Rust, exactly as the IR's operations are defined.
#[derive(Debug, Default)]
pub(crate) struct EvalCx;

impl Cx for EvalCx {
    type F = f64;
    type I = i64;
    type B = bool;
    fn f(&mut self, x: f64) -> f64 {
        x
    }
    fn i(&mut self, x: i64) -> i64 {
        x
    }
    fn add(&mut self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn sub(&mut self, a: f64, b: f64) -> f64 {
        a - b
    }
    fn mul(&mut self, a: f64, b: f64) -> f64 {
        a * b
    }
    fn div(&mut self, a: f64, b: f64) -> f64 {
        a / b
    }
    fn rem(&mut self, a: f64, b: f64) -> f64 {
        a % b
    }
    fn sqrt(&mut self, a: f64) -> f64 {
        a.sqrt()
    }
    fn abs(&mut self, a: f64) -> f64 {
        f64::from_bits(a.to_bits() & !(1 << 63))
    }
    fn neg(&mut self, a: f64) -> f64 {
        f64::from_bits(a.to_bits() ^ (1 << 63))
    }
    fn trunc(&mut self, a: f64) -> f64 {
        a.trunc()
    }
    fn round(&mut self, a: f64) -> f64 {
        a.round()
    }
    fn flt(&mut self, a: f64, b: f64) -> bool {
        a < b
    }
    fn feq(&mut self, a: f64, b: f64) -> bool {
        a == b
    }
    fn sel(&mut self, c: bool, a: f64, b: f64) -> f64 {
        if c { a } else { b }
    }
    fn seli(&mut self, c: bool, a: i64, b: i64) -> i64 {
        if c { a } else { b }
    }
    fn bits(&mut self, a: f64) -> i64 {
        a.to_bits() as i64
    }
    fn float_of(&mut self, a: i64) -> f64 {
        f64::from_bits(a as u64)
    }
    fn itof(&mut self, a: i64) -> f64 {
        a as f64
    }
    fn ftoi(&mut self, a: f64) -> i64 {
        a as i64
    }
    fn iadd(&mut self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    fn isub(&mut self, a: i64, b: i64) -> i64 {
        a.wrapping_sub(b)
    }
    fn iand(&mut self, a: i64, b: i64) -> i64 {
        a & b
    }
    fn ior(&mut self, a: i64, b: i64) -> i64 {
        a | b
    }
    fn shl(&mut self, a: i64, n: i64) -> i64 {
        a.wrapping_shl((n as u64 % 64) as u32)
    }
    fn shr(&mut self, a: i64, n: i64) -> i64 {
        a.wrapping_shr((n as u64 % 64) as u32)
    }
    fn ilt(&mut self, a: i64, b: i64) -> bool {
        a < b
    }
    fn ieq(&mut self, a: i64, b: i64) -> bool {
        a == b
    }
    fn and(&mut self, a: bool, b: bool) -> bool {
        a && b
    }
    fn or(&mut self, a: bool, b: bool) -> bool {
        a || b
    }
    fn not(&mut self, a: bool) -> bool {
        !a
    }
}

/// Evaluates `f32`/`i32` in Rust, exactly as the IR's operations are
/// defined (constants and amounts given as `f64`/`i64` are rounded /
/// truncated to the type, as [`IrCx`] writes them).
#[derive(Debug, Default)]
pub(crate) struct Eval32Cx;

impl Cx for Eval32Cx {
    type F = f32;
    type I = i32;
    type B = bool;
    fn f(&mut self, x: f64) -> f32 {
        x as f32
    }
    fn i(&mut self, x: i64) -> i32 {
        x as i32
    }
    fn add(&mut self, a: f32, b: f32) -> f32 {
        a + b
    }
    fn sub(&mut self, a: f32, b: f32) -> f32 {
        a - b
    }
    fn mul(&mut self, a: f32, b: f32) -> f32 {
        a * b
    }
    fn div(&mut self, a: f32, b: f32) -> f32 {
        a / b
    }
    fn rem(&mut self, a: f32, b: f32) -> f32 {
        a % b
    }
    fn sqrt(&mut self, a: f32) -> f32 {
        a.sqrt()
    }
    fn abs(&mut self, a: f32) -> f32 {
        f32::from_bits(a.to_bits() & 0x7fff_ffff)
    }
    fn neg(&mut self, a: f32) -> f32 {
        f32::from_bits(a.to_bits() ^ 0x8000_0000)
    }
    fn trunc(&mut self, a: f32) -> f32 {
        a.trunc()
    }
    fn round(&mut self, a: f32) -> f32 {
        a.round()
    }
    fn flt(&mut self, a: f32, b: f32) -> bool {
        a < b
    }
    fn feq(&mut self, a: f32, b: f32) -> bool {
        a == b
    }
    fn sel(&mut self, c: bool, a: f32, b: f32) -> f32 {
        if c { a } else { b }
    }
    fn seli(&mut self, c: bool, a: i32, b: i32) -> i32 {
        if c { a } else { b }
    }
    fn bits(&mut self, a: f32) -> i32 {
        a.to_bits() as i32
    }
    fn float_of(&mut self, a: i32) -> f32 {
        f32::from_bits(a as u32)
    }
    fn itof(&mut self, a: i32) -> f32 {
        a as f32
    }
    fn ftoi(&mut self, a: f32) -> i32 {
        a as i32
    }
    fn iadd(&mut self, a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }
    fn isub(&mut self, a: i32, b: i32) -> i32 {
        a.wrapping_sub(b)
    }
    fn iand(&mut self, a: i32, b: i32) -> i32 {
        a & b
    }
    fn ior(&mut self, a: i32, b: i32) -> i32 {
        a | b
    }
    fn shl(&mut self, a: i32, n: i32) -> i32 {
        a.wrapping_shl((n as u32) % 32)
    }
    fn shr(&mut self, a: i32, n: i32) -> i32 {
        a.wrapping_shr((n as u32) % 32)
    }
    fn ilt(&mut self, a: i32, b: i32) -> bool {
        a < b
    }
    fn ieq(&mut self, a: i32, b: i32) -> bool {
        a == b
    }
    fn and(&mut self, a: bool, b: bool) -> bool {
        a && b
    }
    fn or(&mut self, a: bool, b: bool) -> bool {
        a || b
    }
    fn not(&mut self, a: bool) -> bool {
        !a
    }
}

/// Emits IR operations into a function being built.
#[derive(Debug)]
pub(crate) struct IrCx<'b, 'm> {
    pub(crate) k: &'b mut FunctionBuilder<'m>,
    /// `f64`/`i64` (else `f32`/`i32`).
    pub(crate) wide: bool,
}

impl IrCx<'_, '_> {
    fn float(&self) -> Scalar {
        if self.wide { Scalar::F64 } else { Scalar::F32 }
    }
    fn int(&self) -> Scalar {
        if self.wide { Scalar::I64 } else { Scalar::I32 }
    }
}

impl Cx for IrCx<'_, '_> {
    type F = Value;
    type I = Value;
    type B = Value;
    fn f(&mut self, x: f64) -> Value {
        if self.wide { self.k.f64(x) } else { self.k.f32(x as f32) }
    }
    fn i(&mut self, x: i64) -> Value {
        if self.wide { self.k.i64(x) } else { self.k.i32(x as i32) }
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.k.add(a, b)
    }
    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.k.sub(a, b)
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.k.mul(a, b)
    }
    fn div(&mut self, a: Value, b: Value) -> Value {
        self.k.div(a, b)
    }
    fn rem(&mut self, a: Value, b: Value) -> Value {
        self.k.rem(a, b)
    }
    fn sqrt(&mut self, a: Value) -> Value {
        self.k.unary(UnaryOp::Sqrt, a)
    }
    fn abs(&mut self, a: Value) -> Value {
        self.k.unary(UnaryOp::Abs, a)
    }
    fn neg(&mut self, a: Value) -> Value {
        self.k.unary(UnaryOp::Neg, a)
    }
    fn trunc(&mut self, a: Value) -> Value {
        self.k.math(MathFn::Trunc, &[a])
    }
    fn round(&mut self, a: Value) -> Value {
        self.k.math(MathFn::Round, &[a])
    }
    fn flt(&mut self, a: Value, b: Value) -> Value {
        self.k.op(Op::Compare(CmpOp::Lt, a, b))
    }
    fn feq(&mut self, a: Value, b: Value) -> Value {
        self.k.op(Op::Compare(CmpOp::Eq, a, b))
    }
    fn sel(&mut self, c: Value, a: Value, b: Value) -> Value {
        self.k.select(c, a, b)
    }
    fn seli(&mut self, c: Value, a: Value, b: Value) -> Value {
        self.k.select(c, a, b)
    }
    fn bits(&mut self, a: Value) -> Value {
        let t = self.int();
        self.k.bitcast(a, t)
    }
    fn float_of(&mut self, a: Value) -> Value {
        let t = self.float();
        self.k.bitcast(a, t)
    }
    fn itof(&mut self, a: Value) -> Value {
        let t = self.float();
        self.k.convert(a, t)
    }
    fn ftoi(&mut self, a: Value) -> Value {
        let t = self.int();
        self.k.convert(a, t)
    }
    fn iadd(&mut self, a: Value, b: Value) -> Value {
        self.k.add(a, b)
    }
    fn isub(&mut self, a: Value, b: Value) -> Value {
        self.k.sub(a, b)
    }
    fn iand(&mut self, a: Value, b: Value) -> Value {
        self.k.and(a, b)
    }
    fn ior(&mut self, a: Value, b: Value) -> Value {
        self.k.or(a, b)
    }
    fn shl(&mut self, a: Value, n: Value) -> Value {
        self.k.shl(a, n)
    }
    fn shr(&mut self, a: Value, n: Value) -> Value {
        self.k.shr(a, n)
    }
    fn ilt(&mut self, a: Value, b: Value) -> Value {
        self.k.op(Op::Compare(CmpOp::Lt, a, b))
    }
    fn ieq(&mut self, a: Value, b: Value) -> Value {
        self.k.op(Op::Compare(CmpOp::Eq, a, b))
    }
    fn and(&mut self, a: Value, b: Value) -> Value {
        self.k.and(a, b)
    }
    fn or(&mut self, a: Value, b: Value) -> Value {
        self.k.or(a, b)
    }
    fn not(&mut self, a: Value) -> Value {
        self.k.unary(UnaryOp::Not, a)
    }
}
