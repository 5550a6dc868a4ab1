//! Arithmetic with the IR's semantics: unary and binary operations (64-bit
//! ones on `vec2<u32>` through helpers, f32 sums with IEEE's signed
//! zeros), comparisons and conversions.

use super::{FuncCx, wide};
use crate::wgsl::Error;
use crate::wgsl::helpers::Helper;
use relok_ir::{BinaryOp, CmpOp, EntityRef, Scalar, UnaryOp, Value};

impl FuncCx<'_> {
    pub(super) fn unary(&mut self, v: Value, sc: Scalar, u: UnaryOp, a: Value) -> Result<String, Error> {
        let x = format!("v{}", a.index());
        Ok(match (u, sc) {
            (UnaryOp::Neg, Scalar::I32) => format!("bitcast<i32>(0u - bitcast<u32>({x}))"),
            (UnaryOp::Neg, Scalar::U32) => format!("0u - {x}"),
            (UnaryOp::Neg, Scalar::I64 | Scalar::U64) => self.call(Helper::Sub64, &["vec2<u32>(0u, 0u)", &x]),
            (UnaryOp::Neg, Scalar::F32) => format!("bitcast<f32>(bitcast<u32>({x}) ^ 0x80000000u)"),
            (UnaryOp::Not, Scalar::Bool) => format!("!{x}"),
            (UnaryOp::Not, Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::U64) => format!("~{x}"),
            (UnaryOp::Abs, Scalar::I32) => format!("select({x}, bitcast<i32>(0u - bitcast<u32>({x})), {x} < 0i)"),
            (UnaryOp::Abs, Scalar::I64) => {
                let neg = self.call(Helper::Sub64, &["vec2<u32>(0u, 0u)", &x]);
                format!("select({x}, {neg}, ({x}.y >> 31u) != 0u)")
            }
            (UnaryOp::Abs, Scalar::U32 | Scalar::U64) => x,
            (UnaryOp::Abs, Scalar::F32) => format!("bitcast<f32>(bitcast<u32>({x}) & 0x7fffffffu)"),
            // Correctly rounded (a driver's sqrt need not be).
            (UnaryOp::Sqrt, Scalar::F32) => self.call(Helper::FSqrt32, &[&x]),
            // f64: sign bit operations on the bits, sqrt correctly rounded.
            (UnaryOp::Neg, Scalar::F64) => format!("({x} ^ vec2<u32>(0u, 0x80000000u))"),
            (UnaryOp::Abs, Scalar::F64) => format!("({x} & vec2<u32>(0xffffffffu, 0x7fffffffu))"),
            (UnaryOp::Sqrt, Scalar::F64) => self.call(Helper::FSqrt64, &[&x]),
            _ => return Err(self.unsupported(v, format!("{u} on {sc}"))),
        })
    }

    pub(super) fn binary(&mut self, v: Value, sc: Scalar, b: BinaryOp, a: Value, c: Value) -> Result<String, Error> {
        let (x, y) = (format!("v{}", a.index()), format!("v{}", c.index()));
        if matches!(sc, Scalar::I64 | Scalar::U64) {
            return Ok(self.binary64(sc, b, &x, &y));
        }
        if sc == Scalar::F64 {
            // IEEE binary64 on the bits, as x86-64 computes it.
            let h = match b {
                BinaryOp::Add => Helper::FAdd64,
                BinaryOp::Sub => Helper::FSub64,
                BinaryOp::Mul => Helper::FMul64,
                BinaryOp::Div => Helper::FDiv64,
                BinaryOp::Rem => Helper::FRem64,
                BinaryOp::Min => Helper::MinF64,
                BinaryOp::Max => Helper::MaxF64,
                _ => return Err(self.unsupported(v, format!("{b} on {sc}"))),
            };
            return Ok(self.call(h, &[&x, &y]));
        }
        let int = matches!(sc, Scalar::I32 | Scalar::U32);
        // Signed wrapping arithmetic through u32 (WGSL's i32 may trap in
        // constant evaluation; the bits are the same).
        let wrap = |op: &str| {
            if sc == Scalar::I32 {
                format!("bitcast<i32>(bitcast<u32>({x}) {op} bitcast<u32>({y}))")
            } else {
                format!("{x} {op} {y}")
            }
        };
        Ok(match b {
            BinaryOp::Add | BinaryOp::Sub if sc == Scalar::F32 => f32_add_sub(b == BinaryOp::Sub, &x, &y),
            BinaryOp::Add => wrap("+"),
            BinaryOp::Sub => wrap("-"),
            BinaryOp::Mul if sc == Scalar::F32 => {
                // The IR rounds every operation: a driver must not fuse this
                // product into a following add (NVIDIA's does, and WGSL
                // lets it). An xor with a zero it cannot see through keeps
                // the product rounded on its own.
                self.opaque_zero = true;
                format!("bitcast<f32>(bitcast<u32>({x} * {y}) ^ relok_zero)")
            }
            BinaryOp::Mul => wrap("*"),
            BinaryOp::Div if int => {
                let zero = if sc == Scalar::I32 { "0i" } else { "0u" };
                let one = if sc == Scalar::I32 { "1i" } else { "1u" };
                // x / 0 == 0; MIN / -1 == MIN (WGSL defines that one too).
                format!("select({x} / select({y}, {one}, {y} == {zero}), {zero}, {y} == {zero})")
            }
            BinaryOp::Rem if int => {
                let zero = if sc == Scalar::I32 { "0i" } else { "0u" };
                let one = if sc == Scalar::I32 { "1i" } else { "1u" };
                format!("select({x} % select({y}, {one}, {y} == {zero}), {x}, {y} == {zero})")
            }
            BinaryOp::Div if sc == Scalar::F32 => self.call(Helper::FDiv32, &[&x, &y]),
            BinaryOp::Div => format!("{x} / {y}"),
            // WGSL's % on floats is x - y * trunc(x / y), not fmod.
            BinaryOp::Rem if sc == Scalar::F32 => self.call(Helper::Fmod32, &[&x, &y]),
            BinaryOp::Rem => return Err(self.unsupported(v, format!("rem on {sc}"))),
            BinaryOp::Min | BinaryOp::Max if sc == Scalar::F32 => {
                // minNum/maxNum: a NaN operand yields the other one.
                let f = if b == BinaryOp::Min { "min" } else { "max" };
                let (nx, ny) = (self.call(Helper::IsNan, &[&x]), self.call(Helper::IsNan, &[&y]));
                format!("select(select({f}({x}, {y}), {x}, {ny}), {y}, {nx})")
            }
            BinaryOp::Min => format!("min({x}, {y})"),
            BinaryOp::Max => format!("max({x}, {y})"),
            BinaryOp::And if sc == Scalar::Bool => format!("{x} && {y}"),
            BinaryOp::Or if sc == Scalar::Bool => format!("{x} || {y}"),
            BinaryOp::Xor if sc == Scalar::Bool => format!("{x} != {y}"),
            BinaryOp::And => format!("{x} & {y}"),
            BinaryOp::Or => format!("{x} | {y}"),
            BinaryOp::Xor => format!("{x} ^ {y}"),
            BinaryOp::Shl => format!("{x} << (bitcast<u32>({y}) & 31u)"),
            BinaryOp::Shr => format!("{x} >> (bitcast<u32>({y}) & 31u)"),
        })
    }

    /// A binary operation on `i64`/`u64` (`vec2<u32>` (low, high)).
    fn binary64(&mut self, sc: Scalar, b: BinaryOp, x: &str, y: &str) -> String {
        let signed = sc == Scalar::I64;
        let lt = if signed { Helper::LtI64 } else { Helper::LtU64 };
        let divmod = if signed { Helper::SDivMod64 } else { Helper::UDivMod64 };
        match b {
            BinaryOp::Add => self.call(Helper::Add64, &[x, y]),
            BinaryOp::Sub => self.call(Helper::Sub64, &[x, y]),
            BinaryOp::Mul => self.call(Helper::Mul64, &[x, y]),
            BinaryOp::Div => format!("{}.xy", self.call(divmod, &[x, y])),
            BinaryOp::Rem => format!("{}.zw", self.call(divmod, &[x, y])),
            BinaryOp::Min => format!("select({y}, {x}, {})", self.call(lt, &[x, y])),
            BinaryOp::Max => format!("select({y}, {x}, {})", self.call(lt, &[y, x])),
            BinaryOp::And => format!("{x} & {y}"),
            BinaryOp::Or => format!("{x} | {y}"),
            BinaryOp::Xor => format!("{x} ^ {y}"),
            // The amount modulo 64: its low word suffices.
            BinaryOp::Shl => self.call(Helper::Shl64, &[x, &format!("{y}.x")]),
            BinaryOp::Shr if signed => self.call(Helper::Sar64, &[x, &format!("{y}.x")]),
            BinaryOp::Shr => self.call(Helper::Shr64, &[x, &format!("{y}.x")]),
        }
    }

    pub(super) fn compare(&mut self, v: Value, cmp: CmpOp, a: Value, b: Value) -> Result<String, Error> {
        let sc = self.scalar(a)?;
        let (x, y) = (format!("v{}", a.index()), format!("v{}", b.index()));
        let op = match cmp {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        };
        Ok(match sc {
            // IEEE on the bits: NaN unordered (only ne holds), -0 == +0.
            Scalar::F64 => match cmp {
                CmpOp::Eq => self.call(Helper::EqF64, &[&x, &y]),
                CmpOp::Ne => format!("!{}", self.call(Helper::EqF64, &[&x, &y])),
                CmpOp::Lt => self.call(Helper::LtF64, &[&x, &y]),
                CmpOp::Gt => self.call(Helper::LtF64, &[&y, &x]),
                CmpOp::Le => {
                    format!("({} || {})", self.call(Helper::LtF64, &[&x, &y]), self.call(Helper::EqF64, &[&x, &y]))
                }
                CmpOp::Ge => {
                    format!("({} || {})", self.call(Helper::LtF64, &[&y, &x]), self.call(Helper::EqF64, &[&x, &y]))
                }
            },
            _ if wide(sc) && cmp == CmpOp::Eq => format!("all({x} == {y})"),
            _ if wide(sc) && cmp == CmpOp::Ne => format!("any({x} != {y})"),
            Scalar::I64 | Scalar::U64 => {
                // High halves first (signed for i64), then the low ones.
                let lt = if sc == Scalar::I64 { Helper::LtI64 } else { Helper::LtU64 };
                match cmp {
                    CmpOp::Lt => self.call(lt, &[&x, &y]),
                    CmpOp::Gt => self.call(lt, &[&y, &x]),
                    CmpOp::Le => format!("!{}", self.call(lt, &[&y, &x])),
                    _ => format!("!{}", self.call(lt, &[&x, &y])),
                }
            }
            Scalar::Word => return Err(self.unsupported(v, format!("{cmp} on words"))),
            Scalar::F32 => {
                // NaN by its bits: eq and the orderings are false with a NaN
                // operand, ne true, whatever the driver assumes.
                let (nx, ny) = (self.call(Helper::IsNan, &[&x]), self.call(Helper::IsNan, &[&y]));
                if cmp == CmpOp::Ne {
                    format!("({x} != {y} || {nx} || {ny})")
                } else {
                    format!("(!{nx} && !{ny} && {x} {op} {y})")
                }
            }
            _ => format!("{x} {op} {y}"),
        })
    }

    pub(super) fn convert(&mut self, v: Value, to: Scalar, a: Value) -> Result<String, Error> {
        let from = self.scalar(a)?;
        let x = format!("v{}", a.index());
        // i32 sign-extended, u32 zero-extended, to (low, high).
        let sext = format!("vec2<u32>(bitcast<u32>({x}), select(0u, 0xffffffffu, {x} < 0i))");
        let zext = format!("vec2<u32>({x}, 0u)");
        Ok(match (from, to) {
            (f, t) if f == t => x,
            (Scalar::Bool, Scalar::I32) => format!("select(0i, 1i, {x})"),
            (Scalar::Bool, Scalar::U32) => format!("select(0u, 1u, {x})"),
            (Scalar::Bool, Scalar::F32) => format!("select(0.0f, 1.0f, {x})"),
            (Scalar::Bool, Scalar::I64 | Scalar::U64) => format!("vec2<u32>(select(0u, 1u, {x}), 0u)"),
            (Scalar::I32, Scalar::Bool) => format!("{x} != 0i"),
            (Scalar::U32, Scalar::Bool) => format!("{x} != 0u"),
            (Scalar::I64 | Scalar::U64, Scalar::Bool) => format!("any({x} != vec2<u32>(0u, 0u))"),
            // Nonzero by the bits (NaN is nonzero).
            (Scalar::F32, Scalar::Bool) => format!("(bitcast<u32>({x}) & 0x7fffffffu) != 0u"),
            (Scalar::I32, Scalar::U32) => format!("bitcast<u32>({x})"),
            (Scalar::U32, Scalar::I32) => format!("bitcast<i32>({x})"),
            (Scalar::I32, Scalar::I64 | Scalar::U64) => sext,
            (Scalar::U32, Scalar::I64 | Scalar::U64) => zext,
            (Scalar::I64 | Scalar::U64, Scalar::I32) => format!("bitcast<i32>({x}.x)"),
            (Scalar::I64 | Scalar::U64, Scalar::U32) => format!("{x}.x"),
            (Scalar::I64, Scalar::U64) | (Scalar::U64, Scalar::I64) => x,
            // To nearest even on the bits (WGSL leaves the rounding of an
            // inexact integer to the implementation).
            (Scalar::I32, Scalar::F32) => self.call(Helper::I64ToF32, &[&sext]),
            (Scalar::U32, Scalar::F32) => self.call(Helper::U64ToF32, &[&zext]),
            (Scalar::I64, Scalar::F32) => self.call(Helper::I64ToF32, &[&x]),
            (Scalar::U64, Scalar::F32) => self.call(Helper::U64ToF32, &[&x]),
            // Toward zero, saturating, NaN to 0, on the bits.
            (Scalar::F32, Scalar::I32) => self.call(Helper::F32ToI32, &[&x]),
            (Scalar::F32, Scalar::U32) => self.call(Helper::F32ToU32, &[&x]),
            (Scalar::F32, Scalar::I64) => self.call(Helper::F32ToI64, &[&x]),
            (Scalar::F32, Scalar::U64) => self.call(Helper::F32ToU64, &[&x]),
            // f64 on its bits: exact or to nearest even; to integers toward
            // zero, saturating, NaN to 0; nonzero (NaN too) is true.
            (Scalar::Bool, Scalar::F64) => format!("vec2<u32>(0u, select(0u, 0x3ff00000u, {x}))"),
            (Scalar::F64, Scalar::Bool) => {
                format!("any(({x} & vec2<u32>(0xffffffffu, 0x7fffffffu)) != vec2<u32>(0u, 0u))")
            }
            (Scalar::I32, Scalar::F64) => self.call(Helper::I64ToF64, &[&sext]),
            (Scalar::U32, Scalar::F64) => self.call(Helper::U64ToF64, &[&zext]),
            (Scalar::I64, Scalar::F64) => self.call(Helper::I64ToF64, &[&x]),
            (Scalar::U64, Scalar::F64) => self.call(Helper::U64ToF64, &[&x]),
            (Scalar::F32, Scalar::F64) => self.call(Helper::F32ToF64, &[&x]),
            (Scalar::F64, Scalar::F32) => self.call(Helper::F64ToF32, &[&x]),
            (Scalar::F64, Scalar::I32) => self.call(Helper::F64ToI32, &[&x]),
            (Scalar::F64, Scalar::U32) => self.call(Helper::F64ToU32, &[&x]),
            (Scalar::F64, Scalar::I64) => self.call(Helper::F64ToI64, &[&x]),
            (Scalar::F64, Scalar::U64) => self.call(Helper::F64ToU64, &[&x]),
            _ => return Err(self.unsupported(v, format!("a conversion from {from} to {to}"))),
        })
    }
}

/// `x + y` or `x - y` in f32 with IEEE's sign of a zero result: a Vulkan
/// driver may ignore signed zeros (lavapipe turned `0.0 - x`, after
/// inlining a conversion that returned the literal 0.0, into `-x`, giving
/// -0.0 for 0.0 - 0.0; found by `relok fuzz`, seed 5056). A zero sum's sign
/// is set from the operands' bits: -0.0 only for -0 + -0 and for -0 - +0.
fn f32_add_sub(sub: bool, x: &str, y: &str) -> String {
    let (op, y_zero) = if sub { ("-", "0u") } else { ("+", "0x80000000u") };
    let r = format!("bitcast<u32>({x} {op} {y})");
    format!(
        "bitcast<f32>(select({r}, select(0u, 0x80000000u, bitcast<u32>({x}) == 0x80000000u && bitcast<u32>({y}) == {y_zero}), ({r} & 0x7fffffffu) == 0u))"
    )
}
