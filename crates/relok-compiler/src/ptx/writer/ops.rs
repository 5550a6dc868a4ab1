//! Instructions: one `let`'s operation ([`FuncCx::write_op`]) — constants,
//! selects, conversions' and arithmetic's dispatch, loads, address
//! arithmetic, builtins, state, calls and atomics.

use super::{Base, Class, FuncCx, arith, const_name, mem, reg, scalar_of};
use crate::fault::Access;
use crate::ptx::Error;
use relok_ir::{AtomicOp, Axis, Builtin, EntityRef, Op, Scalar, StateField, Type, Value};

impl FuncCx<'_> {
    pub(super) fn write_op(&mut self, v: Value, op: &Op) -> Result<(), Error> {
        if self.checked {
            let base = match op {
                Op::Offset { ptr, .. } | Op::Elem { ptr, .. } | Op::Field { ptr, .. } => self.bases.get(ptr).copied(),
                Op::WordPtr(_) => Some(Base::Heap),
                Op::Select(_, a, b) => self.bases.get(a).copied().filter(|x| self.bases.get(b) == Some(x)),
                _ => None,
            };
            if let Some(b) = base {
                self.bases.insert(v, b);
            }
        }
        let sc = self.scalar(v)?;
        let class = Class::of_scalar(sc);
        let d = reg(class, v);
        match op {
            Op::Const(bits) => {
                if matches!(sc, Scalar::I32 | Scalar::U32) {
                    self.consts32.insert(v, *bits as u32);
                }
                self.constant(&d, sc, *bits)
            }
            Op::BakedWord(w) => self.line(format!("mov.b64 {d}, {w:#x};")),
            Op::Unary(u, a) => self.unary(&d, sc, *u, *a, v)?,
            Op::Binary(b, a, c) => self.binary(&d, sc, *b, *a, *c)?,
            Op::Compare(cmp, a, b) => self.compare(&d, *cmp, *a, *b)?,
            Op::Select(c, a, b) => {
                let (c, a, b) = (self.r(*c)?, self.r(*a)?, self.r(*b)?);
                if class == Class::Pred {
                    let t = self.temp(Class::Pred);
                    self.line(format!("and.pred {t}, {c}, {a};"));
                    let u = self.temp(Class::Pred);
                    self.line(format!("not.pred {u}, {c};"));
                    self.line(format!("and.pred {u}, {u}, {b};"));
                    self.line(format!("or.pred {d}, {t}, {u};"));
                } else {
                    self.line(format!("selp.{} {d}, {a}, {b}, {c};", class.reg_ty()));
                }
            }
            Op::Convert(a) => self.convert(&d, sc, *a)?,
            Op::Bitcast(a) => {
                let a = self.r(*a)?;
                let width = if matches!(class, Class::B32 | Class::F32) { "b32" } else { "b64" };
                self.line(format!("mov.{width} {d}, {a};"));
            }
            Op::Load { ptr, index } => {
                let (space, pointee) = self.pointer(*ptr)?;
                let addr = self.address(*ptr, *index, &pointee)?;
                let msc = scalar_of(&pointee).unwrap_or(sc);
                self.check_access(*ptr, *index, &addr, msc.size(), Access::Read);
                if sc == Scalar::Bool {
                    let t = self.temp(Class::B32);
                    self.line(format!("ld.{space}.u8 {t}, [{addr}];"));
                    self.line(format!("setp.ne.b32 {d}, {t}, 0;"));
                } else {
                    self.line(format!("ld.{space}.{} {d}, [{addr}];", mem(msc)));
                }
            }
            Op::Offset { ptr, index } => {
                let (_, pointee) = self.pointer(*ptr)?;
                let size = pointee.size().map_err(|e| self.type_error(e.to_string()))?;
                let t = self.offset_reg(*ptr, *index, size)?;
                self.line(format!("mov.b64 {d}, {t};"));
            }
            Op::Elem { ptr, index } => {
                let (_, pointee) = self.pointer(*ptr)?;
                let Type::Array(elem, _) = &pointee else {
                    return Err(self.type_error(format!("elem of {ptr}, not a pointer to an array")));
                };
                let size = elem.size().map_err(|e| self.type_error(e.to_string()))?;
                let t = self.offset_reg(*ptr, *index, size)?;
                self.line(format!("mov.b64 {d}, {t};"));
            }
            Op::Field { ptr, field } => {
                let (_, pointee) = self.pointer(*ptr)?;
                let off = pointee
                    .field_offset(*field as usize)
                    .ok_or_else(|| self.type_error(format!("no field {field} in {pointee}")))?
                    .map_err(|e| self.type_error(e.to_string()))?;
                self.line(format!("add.s64 {d}, {}, {off};", reg(Class::B64, *ptr)));
            }
            Op::VarAddr(var) => {
                let (_, name) = self.var_place(*var);
                self.line(format!("mov.u64 {d}, {name};"));
            }
            Op::ConstAddr(c) => {
                let c = self.module.consts.get(*c).ok_or_else(|| self.type_error(format!("no constant {c}")))?;
                self.line(format!("mov.u64 {d}, {};", const_name(c)));
            }
            Op::Get(var) => match self.reg_var[var.index()] {
                Some(c) => self.line(format!("mov.{} {d}, %v{}{};", c.reg_ty(), c.prefix(), var.index())),
                None => {
                    let (space, name) = self.var_place(*var);
                    if sc == Scalar::Bool {
                        let t = self.temp(Class::B32);
                        self.line(format!("ld.{space}.u8 {t}, [{name}];"));
                        self.line(format!("setp.ne.b32 {d}, {t}, 0;"));
                    } else {
                        self.line(format!("ld.{space}.{} {d}, [{name}];", mem(sc)));
                    }
                }
            },
            Op::Builtin(b) => {
                let axis = match b.axis() {
                    Axis::X => "x",
                    Axis::Y => "y",
                    Axis::Z => "z",
                };
                let reg = match b {
                    Builtin::ThreadId(_) => "tid",
                    Builtin::BlockId(_) => "ctaid",
                    Builtin::BlockDim(_) => "ntid",
                    Builtin::GridDim(_) => "nctaid",
                };
                self.line(format!("mov.u32 {d}, %{reg}.{axis};"));
            }
            Op::Ref(_) => return Err(self.unsupported(v, "`ref` (lower the module first)")),
            Op::WordPtr(a) => self.line(format!("mov.b64 {d}, {};", reg(Class::B64, *a))),
            Op::State(field) => {
                let i = StateField::ALL.iter().position(|f| f == field).unwrap_or(0);
                self.line(format!("mov.b64 {d}, %st{i};"));
            }
            Op::Patch(name) => self.line(format!("ld.global.u64 {d}, [{name}];")),
            Op::Call(g, args) => self.call(Some(v), *g, args)?,
            Op::Math(m, args) => self.math(&d, sc, *m, args, v)?,
            Op::Atomic { op, ptr, index, value } => {
                let (space, pointee) = self.pointer(*ptr)?;
                let addr = self.address(*ptr, *index, &pointee)?;
                if sc.is_float() {
                    let val = self.r(*value)?;
                    self.check_access(*ptr, *index, &addr, sc.size(), Access::Atomic);
                    self.float_atomic(&d, sc, *op, (space, &addr), &val, v)?;
                    return Ok(());
                }
                let (name, ty) = match op {
                    AtomicOp::Add => ("add", if matches!(sc, Scalar::I64) { "u64" } else { arith(sc) }),
                    AtomicOp::Min => ("min", arith(sc)),
                    AtomicOp::Max => ("max", arith(sc)),
                    AtomicOp::Xchg => ("exch", if class == Class::B64 { "b64" } else { "b32" }),
                };
                if !matches!(sc, Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::U64) {
                    return Err(self.unsupported(v, format!("an atomic on {sc}")));
                }
                let val = self.r(*value)?;
                self.check_access(*ptr, *index, &addr, sc.size(), Access::Atomic);
                self.line(format!("atom.{space}.{name}.{ty} {d}, [{addr}], {val};"));
            }
            Op::AtomicCas { ptr, index, expected, new } => {
                let (space, pointee) = self.pointer(*ptr)?;
                let addr = self.address(*ptr, *index, &pointee)?;
                if !matches!(class, Class::B32 | Class::B64) {
                    return Err(self.unsupported(v, format!("a compare-and-swap on {sc}")));
                }
                let (e, n) = (self.r(*expected)?, self.r(*new)?);
                self.check_access(*ptr, *index, &addr, sc.size(), Access::Atomic);
                self.line(format!("atom.{space}.cas.{} {d}, [{addr}], {e}, {n};", class.reg_ty()));
            }
        }
        Ok(())
    }

    pub(super) fn constant(&mut self, d: &str, sc: Scalar, bits: u64) {
        let line = self.constant_line(d, sc, bits);
        self.line(line);
    }

    /// The instruction of [`FuncCx::constant`].
    pub(super) fn constant_line(&self, d: &str, sc: Scalar, bits: u64) -> String {
        match Class::of_scalar(sc) {
            Class::Pred => format!("setp.ne.u32 {d}, {}, 0;", u32::from(bits != 0)),
            Class::B32 => format!("mov.b32 {d}, {:#x};", bits as u32),
            Class::B64 => format!("mov.b64 {d}, {bits:#x};"),
            Class::F32 => format!("mov.b32 {d}, 0f{:08X};", bits as u32),
            Class::F64 => format!("mov.b64 {d}, 0d{bits:016X};"),
        }
    }
}
