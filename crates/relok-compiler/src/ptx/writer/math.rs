//! PTX for the exact math functions ([`MathFn::is_exact`]) and the float
//! atomics. The other math functions never reach the backend: the math
//! library (`crate::math`) has turned them into calls of IR functions.
//!
//! - `fma`: `fma.rn`, one rounding (never `mul` + `add`).
//! - `floor`, `ceil`, `trunc`: `cvt.rmi`, `cvt.rpi`, `cvt.rzi` (no `.ftz`:
//!   subnormals are kept).
//! - `round` (halfway cases away from zero): `t = trunc(x)`; `x - t` is
//!   exact; when `|x - t| >= 0.5`, `t + copysign(1, x)`.
//! - `copysign`: on the bits.
//! - `atomic.add` on `f32`/`f64`: `atom.add.f32`/`.f64`; `atomic.min`/`max`
//!   on floats: a compare-and-swap loop on the bits around `min.f`/`max.f`
//!   (the `min`/`max` the IR's binary operations use).

use super::{Class, FuncCx, arith};
use crate::ptx::Error;
use relok_ir::{AtomicOp, MathFn, Scalar, Value};

impl FuncCx<'_> {
    pub(super) fn math(&mut self, d: &str, sc: Scalar, m: MathFn, args: &[Value], v: Value) -> Result<(), Error> {
        let t = arith(sc);
        let (bits, sign, mag, one) = match sc {
            Scalar::F32 => ("b32", "0x80000000", "0x7FFFFFFF", "0f3F800000"),
            Scalar::F64 => ("b64", "0x8000000000000000", "0x7FFFFFFFFFFFFFFF", "0d3FF0000000000000"),
            _ => return Err(self.unsupported(v, format!("{m} on {sc}"))),
        };
        let a: Vec<String> = args.iter().map(|&a| self.r(a)).collect::<Result<_, _>>()?;
        if a.len() != m.arity() {
            return Err(self.type_error(format!("{v}: {m} takes {} operands", m.arity())));
        }
        let class = Class::of_scalar(sc);
        match m {
            MathFn::Fma => self.line(format!("fma.rn.{t} {d}, {}, {}, {};", a[0], a[1], a[2])),
            MathFn::Floor => self.line(format!("cvt.rmi.{t}.{t} {d}, {};", a[0])),
            MathFn::Ceil => self.line(format!("cvt.rpi.{t}.{t} {d}, {};", a[0])),
            MathFn::Trunc => self.line(format!("cvt.rzi.{t}.{t} {d}, {};", a[0])),
            MathFn::Round => {
                let (tr, frac, step, up) = (self.temp(class), self.temp(class), self.temp(class), self.temp(class));
                let p = self.temp(Class::Pred);
                self.line(format!("cvt.rzi.{t}.{t} {tr}, {};", a[0]));
                self.line(format!("sub.rn.{t} {frac}, {}, {tr};", a[0]));
                self.line(format!("abs.{t} {frac}, {frac};"));
                let half = if sc == Scalar::F32 { "0f3F000000" } else { "0d3FE0000000000000" };
                self.line(format!("setp.ge.{t} {p}, {frac}, {half};"));
                self.line(format!("and.{bits} {step}, {}, {sign};", a[0]));
                self.line(format!("or.{bits} {step}, {step}, {one};"));
                self.line(format!("add.rn.{t} {up}, {tr}, {step};"));
                self.line(format!("selp.{t} {d}, {up}, {tr}, {p};"));
            }
            MathFn::Copysign => {
                let (x, y) = (self.temp(class), self.temp(class));
                self.line(format!("and.{bits} {x}, {}, {mag};", a[0]));
                self.line(format!("and.{bits} {y}, {}, {sign};", a[1]));
                self.line(format!("or.{bits} {d}, {x}, {y};"));
            }
            _ => return Err(self.unsupported(v, format!("{m} (link the math library first: crate::math)"))),
        }
        Ok(())
    }

    /// `atomic.add`/`min`/`max` on a float at `[addr]` of `space`
    /// (`place` is `(space, addr)`).
    pub(super) fn float_atomic(
        &mut self,
        d: &str,
        sc: Scalar,
        op: AtomicOp,
        place: (&str, &str),
        val: &str,
        v: Value,
    ) -> Result<(), Error> {
        let (space, addr) = place;
        let t = arith(sc);
        let bits = if sc == Scalar::F32 { "b32" } else { "b64" };
        match op {
            AtomicOp::Add => self.line(format!("atom.{space}.add.{t} {d}, [{addr}], {val};")),
            AtomicOp::Min | AtomicOp::Max => {
                // old = *addr; loop { new = min(old, val); seen = cas(addr, old, new); if seen == old break; old = seen }
                let class = Class::of_scalar(sc);
                let int = if sc == Scalar::F32 { Class::B32 } else { Class::B64 };
                let (old, new) = (self.temp(int), self.temp(int));
                let (fold, fnew) = (self.temp(class), self.temp(class));
                let seen = self.temp(int);
                let p = self.temp(Class::Pred);
                let top = self.label();
                self.line(format!("ld.volatile.{space}.{bits} {old}, [{addr}];"));
                self.line(format!("{top}:"));
                self.line(format!("mov.{bits} {fold}, {old};"));
                self.line(format!(
                    "{op_name}.{t} {fnew}, {fold}, {val};",
                    op_name = if op == AtomicOp::Min { "min" } else { "max" }
                ));
                self.line(format!("mov.{bits} {new}, {fnew};"));
                self.line(format!("atom.{space}.cas.{bits} {seen}, [{addr}], {old}, {new};"));
                self.line(format!("setp.ne.{bits} {p}, {seen}, {old};"));
                self.line(format!("mov.{bits} {old}, {seen};"));
                self.line(format!("@{p} bra {top};"));
                self.line(format!("mov.{bits} {d}, {seen};"));
            }
            AtomicOp::Xchg => return Err(self.unsupported(v, format!("atomic.xchg on {sc}"))),
        }
        Ok(())
    }
}
