//! Expressions: one `let`'s operation ([`FuncCx::write_op`]) — pointers as
//! a base and a byte offset, constants, loads, builtins, state, calls —
//! and WGSL literals.

use super::{Base, FuncCx, wgsl_ty, wide};
use crate::fault::Access;
use crate::wgsl::Error;
use crate::wgsl::bindings::{ARGS_VAR, SEED_SLOT};
use relok_ir::{Axis, Builtin, EntityRef, FuncKind, Op, Scalar, StateField, Type, Value, VarKind};

impl FuncCx<'_> {
    pub(super) fn write_op(&mut self, v: Value, op: &Op) -> Result<(), Error> {
        let name = format!("v{}", v.index());
        // Pointers: a base and a byte offset.
        if let Type::Ptr(..) = &self.f.values[v].ty {
            let (base, off) = match op {
                Op::Offset { ptr, index } => {
                    let size = self.pointee(*ptr)?.size().map_err(|e| self.unsupported(v, e.to_string()))?;
                    (self.base(*ptr)?, self.offset(*ptr, Some(*index), size)?)
                }
                Op::Elem { ptr, index } => {
                    let Type::Array(e, _) = self.pointee(*ptr)? else {
                        return Err(self.unsupported(v, "elem of a non-array"));
                    };
                    let size = e.size().map_err(|e| self.unsupported(v, e.to_string()))?;
                    (self.base(*ptr)?, self.offset(*ptr, Some(*index), size)?)
                }
                Op::Field { ptr, field } => {
                    let t = self.pointee(*ptr)?;
                    let off = t
                        .field_offset(*field as usize)
                        .and_then(Result::ok)
                        .ok_or_else(|| self.unsupported(v, format!("field {field} of {t}")))?;
                    (self.base(*ptr)?, format!("v{} + {off}u", ptr.index()))
                }
                Op::VarAddr(var) => {
                    let b = match self.f.vars[*var].kind {
                        VarKind::Shared => Base::Shared(*var),
                        VarKind::Local => Base::Local(*var),
                    };
                    (b, "0u".into())
                }
                Op::ConstAddr(c) => (Base::Const(*c), "0u".into()),
                Op::WordPtr(w) => (Base::Heap, format!("v{}.x", w.index())),
                Op::State(StateField::RelocTable) => (Base::Table, "0u".into()),
                // A zero the shader compiler cannot see through: with a
                // literal 0, an exception-record index made of constants
                // only (a baked word, a `const` offset) makes naga 30's
                // SPIR-V writer panic in its bounds check ("Expression … is
                // not cached") on every Vulkan device.
                Op::State(StateField::Exception) => {
                    (Base::Exception, format!("{ARGS_VAR}[arrayLength(&{ARGS_VAR}) - 1u]"))
                }
                Op::Select(c, a, b) => {
                    let (ba, bb) = (self.base(*a)?, self.base(*b)?);
                    if ba != bb {
                        return Err(self.unsupported(v, "a select of pointers with different bases"));
                    }
                    (ba, format!("select(v{}, v{}, v{})", b.index(), a.index(), c.index()))
                }
                _ => return Err(self.unsupported(v, "a pointer whose base is not statically known")),
            };
            self.bases.insert(v, base);
            self.line(format!("let {name}: u32 = {off};"));
            return Ok(());
        }
        let sc = self.scalar(v)?;
        let ty = wgsl_ty(sc);
        // An operation of constants is written as its value (the IR's own
        // evaluation): as a WGSL `const` expression it would be evaluated
        // when the shader is created, where i32 `MIN / -1` or an overflow
        // is an error rather than the IR's result. (`const` values are in
        // `self.consts` from the start.)
        let folded = match op {
            Op::Unary(..) | Op::Binary(..) | Op::Compare(..) | Op::Select(..) | Op::Convert(..) | Op::Bitcast(..) => {
                crate::passes::fold::eval(self.f, op, v, &self.consts)
            }
            _ => None,
        };
        if let Some(bits) = folded {
            self.consts.insert(v, bits);
        }
        let e = if let Some(bits) = folded {
            literal(sc, bits)
        } else {
            match op {
                Op::Const(bits) => literal(sc, *bits),
                Op::BakedWord(w) => format!("vec2<u32>({}u, {}u)", *w as u32, (*w >> 32) as u32),
                Op::Unary(u, a) => self.unary(v, sc, *u, *a)?,
                Op::Binary(b, a, c) => self.binary(v, sc, *b, *a, *c)?,
                Op::Compare(cmp, a, b) => self.compare(v, *cmp, *a, *b)?,
                Op::Select(c, a, b) => format!("select(v{}, v{}, v{})", b.index(), a.index(), c.index()),
                Op::Convert(a) => self.convert(v, sc, *a)?,
                Op::Bitcast(a) => {
                    if wide(self.scalar(*a)?) {
                        // word, u64, i64: the same vec2<u32>.
                        format!("v{}", a.index())
                    } else {
                        format!("bitcast<{ty}>(v{})", a.index())
                    }
                }
                Op::Load { ptr, index } => {
                    let b = self.base(*ptr)?;
                    let pointee = self.pointee(*ptr)?;
                    let size = pointee.size().map_err(|e| self.unsupported(v, e.to_string()))?;
                    let msc = pointee.as_scalar().unwrap_or(sc);
                    let off = self.offset(*ptr, *index, size)?;
                    let t = self.temp();
                    self.line(format!("let {t}: u32 = {off};"));
                    let t = self.bounds_check(b, &t, msc.size(), Access::Read, Some((*ptr, *index)));
                    self.load_expr(b, &t, msc)
                }
                Op::Get(var) => match self.reg_var(*var) {
                    Some(_) => format!("l{}", var.index()),
                    None => self.load_expr(Base::Local(*var), "0u", sc),
                },
                Op::Builtin(_) if self.f.kind != FuncKind::Kernel => {
                    // The ids are the kernel entry's parameters.
                    return Err(self.unsupported(v, "a thread or block id in a device function (inline it)"));
                }
                Op::Builtin(b) => {
                    let axis = match b.axis() {
                        Axis::X => "x",
                        Axis::Y => "y",
                        Axis::Z => "z",
                    };
                    match b {
                        Builtin::ThreadId(_) => format!("relok_tid.{axis}"),
                        Builtin::BlockId(_) => format!("relok_bid.{axis}"),
                        // Plus a zero the compiler cannot see: an override
                        // is a constant after naga processes it, and naga
                        // 30 then rejects a `let` copying the `let` bound
                        // to it ("ExpressionAlreadyInScope"; found by
                        // `relok fuzz`, seed 10).
                        Builtin::BlockDim(_) => {
                            self.opaque_zero = true;
                            format!("relok_block_{axis} + relok_zero")
                        }
                        Builtin::GridDim(_) => format!("relok_nblocks.{axis}"),
                    }
                }
                Op::Call(g, args) => self.call_function(*g, args),
                Op::Math(m, args) => self.math(v, sc, *m, args)?,
                Op::Atomic { op, ptr, index, value } => self.atomic(v, sc, *op, *ptr, *index, *value)?,
                Op::AtomicCas { ptr, index, expected, new } => self.cas(v, sc, *ptr, *index, *expected, *new)?,
                Op::VarAddr(_)
                | Op::ConstAddr(_)
                | Op::Offset { .. }
                | Op::Elem { .. }
                | Op::Field { .. }
                | Op::WordPtr(_) => {
                    return Err(self.unsupported(v, "a pointer operation with a non-pointer result"));
                }
                // Two slots of relok_args hold the seed (docs/wgpu.md).
                Op::State(StateField::RngSeed) => {
                    format!("vec2<u32>({ARGS_VAR}[{SEED_SLOT}], {ARGS_VAR}[{}])", SEED_SLOT + 1)
                }
                Op::State(f) => return Err(self.unsupported(v, format!("state.{} as a value", f.name()))),
                Op::Ref(_) => return Err(self.unsupported(v, "`ref` (lower the module first)")),
                Op::Patch(_) => return Err(Error::Patch),
            }
        };
        // Integer, bool and word constants are WGSL `const`s: naga 30's
        // override processing (every pipeline wgpu makes) mis-scopes a
        // `let` bound to a constant expression ("NotInScope"). Float
        // constants stay `let`: a NaN or infinite `const` is an error.
        //
        // A baked word is neither: a `let` read through a zero the shader
        // compiler cannot see. As a `const`, a copy of it (`let x = word;
        // … x.x`) makes naga 30's SPIR-V writer panic in a bounds check
        // ("Expression … is not cached", every Vulkan device).
        let e = match (op, self.f.kind) {
            (Op::BakedWord(w), FuncKind::Kernel) => {
                self.opaque_zero = true;
                format!("vec2<u32>({}u ^ relok_zero, {}u)", *w as u32, (*w >> 32) as u32)
            }
            (Op::BakedWord(w), _) => {
                format!("vec2<u32>({}u ^ {ARGS_VAR}[arrayLength(&{ARGS_VAR}) - 1u], {}u)", *w as u32, (*w >> 32) as u32)
            }
            _ => e,
        };
        let constant = folded.is_some() || matches!(op, Op::Const(_));
        let keyword = if constant && sc != Scalar::F32 { "const" } else { "let" };
        // A float constant the driver can see lets it fold `0.0 - x` into
        // `-x` (lavapipe does: -0.0 where the IR gives +0.0; found by
        // `relok fuzz`, seed 97): in a kernel it is read through the zero
        // the driver cannot know.
        let e = match (
            constant,
            sc,
            self.f.kind,
            folded.or(match op {
                Op::Const(b) => Some(*b),
                _ => None,
            }),
        ) {
            (true, Scalar::F32, FuncKind::Kernel, Some(bits)) => {
                self.opaque_zero = true;
                format!("bitcast<f32>({}u ^ relok_zero)", bits as u32)
            }
            _ => e,
        };
        self.line(format!("{keyword} {name}: {ty} = {e};"));
        Ok(())
    }
}

/// A WGSL literal of scalar type `s` with these bits.
fn literal(s: Scalar, bits: u64) -> String {
    match s {
        Scalar::Bool => (bits != 0).to_string(),
        // A plain literal (naga cannot evaluate `bitcast` in a `const`);
        // i32::MIN has no literal of its own.
        Scalar::I32 if bits as u32 == 0x8000_0000 => "(-2147483647i - 1i)".into(),
        Scalar::I32 => format!("{}i", bits as u32 as i32),
        Scalar::U32 => format!("{}u", bits as u32),
        Scalar::F32 => format!("bitcast<f32>({}u)", bits as u32),
        _ => format!("vec2<u32>({}u, {}u)", bits as u32, (bits >> 32) as u32),
    }
}
