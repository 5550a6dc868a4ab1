//! WGSL for the exact math functions ([`MathFn::is_exact`]) and the float
//! atomics. The other math functions never reach the backend: the math
//! library (`crate::math`) has turned them into calls of IR functions.
//!
//! - `f32`: `floor`, `ceil`, `trunc` are WGSL's (exact); `round` (halfway
//!   away from zero; WGSL's rounds to even) is `trunc` plus a step of one
//!   when `|x - trunc(x)| >= 0.5` (the difference is exact); `copysign` on
//!   the bits; `fma` is `relok_fma32`, emulated exactly (WGSL's `fma` may
//!   round twice).
//! - `f64` (bits in `vec2<u32>`): `relok_fround64` on the bits; `copysign`
//!   on the bits; `fma` is refused (no exact emulation).
//! - `atomic.add`/`min`/`max` on `f32`: a compare-exchange loop on the
//!   `u32` word (`min`/`max` as the IR's binary ones, a NaN operand yields
//!   the other). On `f64`: refused (WGSL has only 32-bit atomics).

use super::FuncCx;
use crate::wgsl::Error;
use crate::wgsl::helpers::Helper;
use relok_ir::{AtomicOp, EntityRef, MathFn, Scalar, Value};

impl FuncCx<'_> {
    pub(super) fn math(&mut self, v: Value, sc: Scalar, m: MathFn, args: &[Value]) -> Result<String, Error> {
        let a: Vec<String> = args.iter().map(|a| format!("v{}", a.index())).collect();
        if a.len() != m.arity() {
            return Err(self.unsupported(v, format!("{m} with {} operands", a.len())));
        }
        let x = &a[0];
        Ok(match (m, sc) {
            (MathFn::Fma, Scalar::F32) => self.call(Helper::Fma32, &[x, &a[1], &a[2]]),
            (MathFn::Floor, Scalar::F32) => format!("floor({x})"),
            (MathFn::Ceil, Scalar::F32) => format!("ceil({x})"),
            (MathFn::Trunc, Scalar::F32) => format!("trunc({x})"),
            (MathFn::Round, Scalar::F32) => {
                let t = self.temp();
                self.line(format!("let {t}: f32 = trunc({x});"));
                let step = format!("bitcast<f32>((bitcast<u32>({x}) & 0x80000000u) | 0x3f800000u)");
                format!("select({t}, {t} + {step}, abs({x} - {t}) >= 0.5)")
            }
            (MathFn::Copysign, Scalar::F32) => {
                format!("bitcast<f32>((bitcast<u32>({x}) & 0x7fffffffu) | (bitcast<u32>({}) & 0x80000000u))", a[1])
            }
            (MathFn::Floor | MathFn::Ceil | MathFn::Trunc | MathFn::Round, Scalar::F64) => {
                let mode = match m {
                    MathFn::Floor => "0u",
                    MathFn::Ceil => "1u",
                    MathFn::Trunc => "2u",
                    _ => "3u",
                };
                self.call(Helper::FRound64, &[x, mode])
            }
            (MathFn::Copysign, Scalar::F64) => {
                format!("vec2<u32>({x}.x, ({x}.y & 0x7fffffffu) | ({}.y & 0x80000000u))", a[1])
            }
            (MathFn::Fma, Scalar::F64) => {
                return Err(self.unsupported(
                    v,
                    "fma on f64 (no exact emulation on wgpu; a multiply and an add would round twice)",
                ));
            }
            _ => return Err(self.unsupported(v, format!("{m} on {sc} (link the math library first: crate::math)"))),
        })
    }

    /// `atomic.add`/`min`/`max` on `f32` at `slot` (a `&array[i]` of
    /// `atomic<u32>`): a compare-exchange loop; the old value.
    pub(super) fn float_atomic(
        &mut self,
        v: Value,
        sc: Scalar,
        op: AtomicOp,
        slot: &str,
        value: Value,
    ) -> Result<String, Error> {
        if sc != Scalar::F32 {
            return Err(self.unsupported(v, format!("{op} on {sc} (WGSL has only 32-bit atomics)")));
        }
        let y = format!("v{}", value.index());
        let f = match op {
            AtomicOp::Add => format!("bitcast<f32>(old) + {y}"),
            AtomicOp::Min | AtomicOp::Max => {
                let f = if op == AtomicOp::Min { "min" } else { "max" };
                let (nx, ny) = (self.call(Helper::IsNan, &["bitcast<f32>(old)"]), self.call(Helper::IsNan, &[&y]));
                format!("select(select({f}(bitcast<f32>(old), {y}), bitcast<f32>(old), {ny}), {y}, {nx})")
            }
            AtomicOp::Xchg => return Err(self.unsupported(v, format!("{op} on {sc}"))),
        };
        let old = self.temp();
        self.line(format!("var {old}: u32 = atomicLoad({slot});"));
        let mark = self.open_loop();
        self.line(format!("    let old = {old};"));
        self.line(format!("    let r = atomicCompareExchangeWeak({slot}, old, bitcast<u32>({f}));"));
        self.line("    if (r.exchanged) { break; }".to_owned());
        self.line(format!("    {old} = r.old_value;"));
        self.close_loop(mark);
        Ok(format!("bitcast<f32>({old})"))
    }
}
