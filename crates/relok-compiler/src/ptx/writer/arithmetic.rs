//! Arithmetic with the IR's semantics: unary and binary operations
//! (integer division's rules for zero and `MIN / -1`, shifts modulo the
//! width, 32-bit negation as `not` and `add`), the exact float `rem`,
//! comparisons and conversions.

use super::{Class, FuncCx, arith};
use crate::ptx::Error;
use relok_ir::{BinaryOp, CmpOp, Scalar, UnaryOp, Value};

impl FuncCx<'_> {
    /// `d = -x` on 32 bits, written as `~x + 1`. The PTX compiler of
    /// NVIDIA's driver 580 (CUDA 13.0) miscompiles `neg.s32` — and `sub 0,
    /// x` and `mul x, -1`, which it turns into one — of a loop-carried
    /// value that starts at 0x7fffffff: the loop's result stays 0x7fffffff
    /// (found by `relok fuzz`, seed 10448; file test run_neg_loop.rk).
    /// `not` and `add` are not recognised as a negation there. Used for
    /// `neg`, for `mul`/`sub` whose operand is a `const` -1 / 0 of this
    /// function, and for signed division's `MIN / -1`; a -1 the driver
    /// derives itself (a converted or selected constant left unfolded)
    /// still reaches it as a `mul`.
    fn negate32(&mut self, d: &str, x: &str) {
        self.line(format!("not.b32 {d}, {x};"));
        self.line(format!("add.u32 {d}, {d}, 1;"));
    }

    pub(super) fn unary(&mut self, d: &str, sc: Scalar, u: UnaryOp, a: Value, v: Value) -> Result<(), Error> {
        let a = self.r(a)?;
        if u == UnaryOp::Neg && matches!(sc, Scalar::I32 | Scalar::U32) {
            self.negate32(d, &a);
            return Ok(());
        }
        let line = match (u, sc) {
            (UnaryOp::Neg, Scalar::I64 | Scalar::U64) => format!("neg.s64 {d}, {a};"),
            // Bit operations, as the IR defines them: a sign flip and a
            // cleared sign, also for NaNs (neg.f32/abs.f32 canonicalise them).
            (UnaryOp::Neg, Scalar::F32) => format!("xor.b32 {d}, {a}, 0x80000000;"),
            (UnaryOp::Neg, Scalar::F64) => format!("xor.b64 {d}, {a}, 0x8000000000000000;"),
            (UnaryOp::Abs, Scalar::F32) => format!("and.b32 {d}, {a}, 0x7FFFFFFF;"),
            (UnaryOp::Abs, Scalar::F64) => format!("and.b64 {d}, {a}, 0x7FFFFFFFFFFFFFFF;"),
            (UnaryOp::Not, Scalar::Bool) => format!("not.pred {d}, {a};"),
            (UnaryOp::Not, Scalar::I32 | Scalar::U32) => format!("not.b32 {d}, {a};"),
            (UnaryOp::Not, Scalar::I64 | Scalar::U64) => format!("not.b64 {d}, {a};"),
            (UnaryOp::Abs, Scalar::I32 | Scalar::I64) => format!("abs.{} {d}, {a};", arith(sc)),
            (UnaryOp::Abs, Scalar::U32) => format!("mov.b32 {d}, {a};"),
            (UnaryOp::Abs, Scalar::U64) => format!("mov.b64 {d}, {a};"),
            (UnaryOp::Sqrt, Scalar::F32 | Scalar::F64) => format!("sqrt.rn.{} {d}, {a};", arith(sc)),
            _ => return Err(self.unsupported(v, format!("{u} on {sc}"))),
        };
        self.line(line);
        Ok(())
    }

    pub(super) fn binary(&mut self, d: &str, sc: Scalar, b: BinaryOp, a: Value, c: Value) -> Result<(), Error> {
        let (x, y) = (self.r(a)?, self.r(c)?);
        let t = arith(sc);
        let float = matches!(sc, Scalar::F32 | Scalar::F64);
        let wide = matches!(sc, Scalar::I64 | Scalar::U64);
        let bits = if wide { "b64" } else { "b32" };
        // Negations in disguise take negate32's way (see there).
        if matches!(sc, Scalar::I32 | Scalar::U32) {
            let minus_one = |v: &Value| self.consts32.get(v) == Some(&u32::MAX);
            let negated = match b {
                BinaryOp::Mul if minus_one(&c) => Some(&x),
                BinaryOp::Mul if minus_one(&a) => Some(&y),
                BinaryOp::Sub if self.consts32.get(&a) == Some(&0) => Some(&y),
                _ => None,
            };
            if let Some(n) = negated {
                let n = n.clone();
                self.negate32(d, &n);
                return Ok(());
            }
        }
        match b {
            BinaryOp::Add | BinaryOp::Sub if float => self.line(format!("{b}.rn.{t} {d}, {x}, {y};")),
            BinaryOp::Mul if float => self.line(format!("mul.rn.{t} {d}, {x}, {y};")),
            BinaryOp::Div if float => self.line(format!("div.rn.{t} {d}, {x}, {y};")),
            BinaryOp::Rem if float => self.fmod(d, sc, &x, &y),
            BinaryOp::Min | BinaryOp::Max => self.line(format!("{b}.{t} {d}, {x}, {y};")),
            BinaryOp::Add | BinaryOp::Sub => self.line(format!("{b}.{t} {d}, {x}, {y};")),
            BinaryOp::Mul => self.line(format!("mul.lo.{t} {d}, {x}, {y};")),
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                let ty = if sc == Scalar::Bool { "pred" } else { bits };
                self.line(format!("{b}.{ty} {d}, {x}, {y};"));
            }
            BinaryOp::Shl | BinaryOp::Shr => {
                let amount = self.temp(Class::B32);
                if wide {
                    self.line(format!("cvt.u32.u64 {amount}, {y};"));
                    self.line(format!("and.b32 {amount}, {amount}, 63;"));
                } else {
                    self.line(format!("and.b32 {amount}, {y}, 31;"));
                }
                let op = match (b, sc) {
                    (BinaryOp::Shl, _) => format!("shl.{bits}"),
                    (_, Scalar::I32 | Scalar::I64) => format!("shr.{t}"),
                    _ => format!("shr.{}", if wide { "u64" } else { "u32" }),
                };
                self.line(format!("{op} {d}, {x}, {amount};"));
            }
            BinaryOp::Div | BinaryOp::Rem => {
                // x / 0 == 0, x % 0 == x, MIN / -1 == MIN (= -x), MIN % -1 == 0.
                let class = if wide { Class::B64 } else { Class::B32 };
                let zero = self.temp(Class::Pred);
                self.line(format!("setp.eq.{t} {zero}, {y}, 0;"));
                let signed = matches!(sc, Scalar::I32 | Scalar::I64);
                let minus1 = self.temp(Class::Pred);
                if signed {
                    self.line(format!("setp.eq.{t} {minus1}, {y}, -1;"));
                    self.line(format!("or.pred {minus1}, {minus1}, {zero};"));
                } else {
                    self.line(format!("mov.pred {minus1}, {zero};"));
                }
                let safe = self.temp(class);
                self.line(format!("selp.{bits} {safe}, 1, {y}, {minus1};"));
                let q = self.temp(class);
                self.line(format!("{}.{t} {q}, {x}, {safe};", if b == BinaryOp::Div { "div" } else { "rem" }));
                if b == BinaryOp::Div {
                    if signed {
                        let n = self.temp(class);
                        if wide {
                            self.line(format!("neg.{t} {n}, {x};"));
                        } else {
                            self.negate32(&n, &x);
                        }
                        let m1 = self.temp(Class::Pred);
                        self.line(format!("setp.eq.{t} {m1}, {y}, -1;"));
                        self.line(format!("selp.{bits} {q}, {n}, {q}, {m1};"));
                    }
                    self.line(format!("selp.{bits} {d}, 0, {q}, {zero};"));
                } else {
                    self.line(format!("selp.{bits} {d}, {x}, {q}, {zero};"));
                }
            }
        }
        Ok(())
    }

    /// `d = fmod(x, y)`, exactly (C's `fmod`, Rust's `%` on floats): binary
    /// long division on the magnitudes. `t` runs from the largest
    /// `|y|·2^k ≤ |x|` down to `|y|`; each `r - t` is exact (Sterbenz:
    /// `t ≤ r < 2t`), so the remainder is exact; its sign is `x`'s. NaN
    /// when `y` is 0, `x` infinite or either NaN; `x` when `|x| < |y|`.
    fn fmod(&mut self, d: &str, sc: Scalar, x: &str, y: &str) {
        let (c, t, bits, two, half, nan, sign) = if sc == Scalar::F32 {
            (Class::F32, "f32", "b32", "0f40000000", "0f3F000000", "0x7FC00000", "0x80000000")
        } else {
            (
                Class::F64,
                "f64",
                "b64",
                "0d4000000000000000",
                "0d3FE0000000000000",
                "0x7FF8000000000000",
                "0x8000000000000000",
            )
        };
        let int = if sc == Scalar::F32 { Class::B32 } else { Class::B64 };
        let (ax, ay, r, tt, t2) = (self.temp(c), self.temp(c), self.temp(c), self.temp(c), self.temp(c));
        let (special, p) = (self.temp(Class::Pred), self.temp(Class::Pred));
        let (rb, xb) = (self.temp(int), self.temp(int));
        let (up, down, done, small, nan_l, end) =
            (self.label(), self.label(), self.label(), self.label(), self.label(), self.label());
        self.line(format!("abs.{t} {ax}, {x};"));
        self.line(format!("abs.{t} {ay}, {y};"));
        self.line(format!(
            "setp.eq.{t} {special}, {ay}, 0{};",
            if sc == Scalar::F32 { "f00000000" } else { "d0000000000000000" }
        ));
        self.line(format!("testp.infinite.{t} {p}, {ax};"));
        self.line(format!("or.pred {special}, {special}, {p};"));
        self.line(format!("setp.nan.{t} {p}, {x}, {y};"));
        self.line(format!("or.pred {special}, {special}, {p};"));
        self.line(format!("@{special} bra {nan_l};"));
        self.line(format!("setp.lt.{t} {p}, {ax}, {ay};"));
        self.line(format!("@{p} bra {small};"));
        self.line(format!("mov.{t} {r}, {ax};"));
        self.line(format!("mov.{t} {tt}, {ay};"));
        self.body.push_str(&format!("{up}:\n"));
        self.line(format!("mul.rn.{t} {t2}, {tt}, {two};"));
        self.line(format!("setp.le.{t} {p}, {t2}, {r};"));
        self.line(format!("@!{p} bra {down};"));
        self.line(format!("mov.{t} {tt}, {t2};"));
        self.line(format!("bra.uni {up};"));
        self.body.push_str(&format!("{down}:\n"));
        self.line(format!("setp.ge.{t} {p}, {r}, {tt};"));
        self.line(format!("@{p} sub.rn.{t} {r}, {r}, {tt};"));
        self.line(format!("setp.eq.{t} {p}, {tt}, {ay};"));
        self.line(format!("@{p} bra {done};"));
        self.line(format!("mul.rn.{t} {tt}, {tt}, {half};"));
        self.line(format!("bra.uni {down};"));
        self.body.push_str(&format!("{done}:\n"));
        self.line(format!("mov.{bits} {rb}, {r};"));
        self.line(format!("mov.{bits} {xb}, {x};"));
        self.line(format!("and.{bits} {xb}, {xb}, {sign};"));
        self.line(format!("or.{bits} {rb}, {rb}, {xb};"));
        self.line(format!("mov.{bits} {d}, {rb};"));
        self.line(format!("bra.uni {end};"));
        self.body.push_str(&format!("{small}:\n"));
        self.line(format!("mov.{t} {d}, {x};"));
        self.line(format!("bra.uni {end};"));
        self.body.push_str(&format!("{nan_l}:\n"));
        self.line(format!("mov.{bits} {d}, {nan};"));
        self.body.push_str(&format!("{end}:\n"));
    }

    pub(super) fn compare(&mut self, d: &str, cmp: CmpOp, a: Value, b: Value) -> Result<(), Error> {
        let sc = self.scalar(a)?;
        let (x, y) = (self.r(a)?, self.r(b)?);
        if sc == Scalar::Bool {
            match cmp {
                CmpOp::Eq => {
                    let t = self.temp(Class::Pred);
                    self.line(format!("xor.pred {t}, {x}, {y};"));
                    self.line(format!("not.pred {d}, {t};"));
                }
                CmpOp::Ne => self.line(format!("xor.pred {d}, {x}, {y};")),
                _ => return Err(self.unsupported(a, format!("{cmp} on bool"))),
            }
            return Ok(());
        }
        let float = matches!(sc, Scalar::F32 | Scalar::F64);
        let c = match cmp {
            CmpOp::Eq => "eq",
            CmpOp::Ne if float => "neu",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        };
        self.line(format!("setp.{c}.{} {d}, {x}, {y};", arith(sc)));
        Ok(())
    }

    pub(super) fn convert(&mut self, d: &str, to: Scalar, a: Value) -> Result<(), Error> {
        let from = self.scalar(a)?;
        let mut x = self.r(a)?;
        let mut from_eff = from;
        if from == Scalar::Bool {
            if to == Scalar::Bool {
                self.line(format!("mov.pred {d}, {x};"));
                return Ok(());
            }
            x = self.pred_to_b32(&x);
            from_eff = Scalar::U32;
        }
        let fl = |s: Scalar| matches!(s, Scalar::F32 | Scalar::F64);
        let size = |s: Scalar| s.size();
        let ty = |s: Scalar| if s == Scalar::Word { "u64" } else { arith(s) };
        let line = match (from_eff, to) {
            (f, Scalar::Bool) if fl(f) => {
                let zero = if f == Scalar::F32 { "0f00000000" } else { "0d0000000000000000" };
                format!("setp.neu.{} {d}, {x}, {zero};", arith(f))
            }
            (f, Scalar::Bool) => format!("setp.ne.{} {d}, {x}, 0;", ty(f)),
            (f, t) if f == t => format!("mov.{} {d}, {x};", if size(t) == 8 { "b64" } else { "b32" }),
            (f, t) if fl(f) && fl(t) => {
                if t == Scalar::F32 {
                    format!("cvt.rn.f32.f64 {d}, {x};")
                } else {
                    format!("cvt.f64.f32 {d}, {x};")
                }
            }
            (f, t) if fl(f) => {
                // cvt.rzi saturates, but a NaN gives 0 only for 32-bit
                // results on the hardware: select 0 explicitly.
                let nan = self.temp(Class::Pred);
                self.line(format!("setp.nan.{} {nan}, {x}, {x};", arith(f)));
                self.line(format!("cvt.rzi.{}.{} {d}, {x};", ty(t), arith(f)));
                let bits = if size(t) == 8 { "b64" } else { "b32" };
                format!("selp.{bits} {d}, 0, {d}, {nan};")
            }
            (f, t) if fl(t) => format!("cvt.rn.{}.{} {d}, {x};", arith(t), ty(f)),
            (f, t) if size(f) == size(t) => format!("mov.{} {d}, {x};", if size(t) == 8 { "b64" } else { "b32" }),
            (f, t) if size(t) > size(f) => {
                // Widening: the destination takes the source's signedness
                // (`cvt.u64.u32` zero-extends, `cvt.s64.s32` sign-extends),
                // as nvcc writes it. With `cvt.s64.u32` the H200's driver
                // (580.159.04) sign-extended a u32 >= 2^31 on its way into
                // a following `shl.b64` (found by relok fuzz: 5 of 3 200
                // kernels).
                let signed = matches!(f, Scalar::I32 | Scalar::I64);
                format!("cvt.{}{}.{} {d}, {x};", if signed { "s" } else { "u" }, size(t) * 8, ty(f))
            }
            (f, t) => format!("cvt.{}.{} {d}, {x};", ty(t), ty(f)),
        };
        self.line(line);
        Ok(())
    }
}
