//! Memory operands: a pointer's space and pointee, element addresses, where
//! a variable lives, the state registers, and bools as the bytes memory
//! holds.

use super::{Class, FuncCx, reg, var_name};
use crate::ptx::Error;
use relok_ir::{AddrSpace, Scalar, StateField, Type, Value, Var, VarKind};

impl FuncCx<'_> {
    /// A bool as 0/1 in a `.b32` temporary.
    pub(super) fn pred_to_b32(&mut self, p: &str) -> String {
        let t = self.temp(Class::B32);
        self.line(format!("selp.b32 {t}, 1, 0, {p};"));
        t
    }

    /// A register ready to store as `mem(sc)`: bools become 0/1.
    pub(super) fn as_stored(&mut self, sc: Scalar, src: String) -> String {
        if sc == Scalar::Bool { self.pred_to_b32(&src) } else { src }
    }

    /// The space and pointee of a pointer value.
    pub(super) fn pointer(&self, p: Value) -> Result<(&'static str, Type), Error> {
        match self.ty(p) {
            Type::Ptr(space, pointee) => Ok((
                match space {
                    AddrSpace::Global => "global",
                    AddrSpace::Shared => "shared",
                    AddrSpace::Local => "local",
                    AddrSpace::Const => "global.nc",
                },
                (**pointee).clone(),
            )),
            t => Err(self.type_error(format!("{p} of type {t} is not a pointer"))),
        }
    }

    /// `p + i * size`, as a 64-bit register (the index widened by its
    /// signedness).
    pub(super) fn offset_reg(&mut self, p: Value, index: Value, size: u32) -> Result<String, Error> {
        let base = reg(Class::B64, p);
        let isc = self.scalar(index)?;
        let wide = match isc {
            Scalar::I32 | Scalar::U32 => {
                let t = self.temp(Class::B64);
                let cvt = if isc == Scalar::I32 { "s64.s32" } else { "u64.u32" };
                self.line(format!("cvt.{cvt} {t}, {};", reg(Class::B32, index)));
                t
            }
            Scalar::I64 | Scalar::U64 => reg(Class::B64, index),
            other => return Err(self.type_error(format!("index {index} of type {other}"))),
        };
        let t = self.temp(Class::B64);
        self.line(format!("mad.lo.s64 {t}, {wide}, {size}, {base};"));
        Ok(t)
    }

    /// The address operand of `p[i]` for elements of type `pointee`. In
    /// shared memory, by a 32-bit index, a 32-bit address (the space is
    /// smaller than 4 GiB): computed in 32 bits, `base + i * size` lets
    /// ptxas see the alignment of neighbouring elements and merge their
    /// accesses into vector ones (`LDS.128`), which a 64-bit sum of a
    /// widened 32-bit index hides. (Only where the index wraps past 4 GiB
    /// do the two differ, far outside any shared array.)
    pub(super) fn address(&mut self, p: Value, index: Option<Value>, pointee: &Type) -> Result<String, Error> {
        match index {
            None => Ok(reg(Class::B64, p)),
            Some(i) => {
                let size = pointee.size().map_err(|e| self.type_error(e.to_string()))?;
                let shared = matches!(self.ty(p), Type::Ptr(AddrSpace::Shared, _));
                if shared && matches!(self.scalar(i)?, Scalar::U32 | Scalar::I32) {
                    let (base, at) = (self.temp(Class::B32), self.temp(Class::B32));
                    self.line(format!("cvt.u32.u64 {base}, {};", reg(Class::B64, p)));
                    self.line(format!("mad.lo.u32 {at}, {}, {size}, {base};", reg(Class::B32, i)));
                    return Ok(at);
                }
                self.offset_reg(p, i, size)
            }
        }
    }

    /// The register holding a state field.
    pub(super) fn state_reg(&self, field: StateField) -> String {
        format!("%st{}", StateField::ALL.iter().position(|f| *f == field).unwrap_or(0))
    }

    /// Where a variable lives in memory: its space and PTX name.
    pub(super) fn var_place(&self, v: Var) -> (&'static str, String) {
        let space = match self.f.vars[v].kind {
            VarKind::Local => "local",
            VarKind::Shared => "shared",
        };
        (space, var_name(self.f, v))
    }
}
