//! A function's signature and prologue: the `.func` prototype of a device
//! function, the `.entry` parameter list of a kernel (the ABI a loader
//! checks, [`entry_signature`], [`entry_param_sizes`]), and the writing of
//! one function: its parameters and state into registers, its body, then
//! its header and register declarations.

use super::{Base, Class, FuncCx, Writer, reg, scalar_of, value_class, var_name};
use crate::ptx::{Error, checked};
use crate::state::STATE_LAYOUT;
use relok_ir::{AddrSpace, EntityRef, FuncId, FuncKind, Function, StateField, Type, VarKind};
use std::fmt::Write as _;

impl Writer<'_> {
    /// `.func (.param .b32 retval) f_name(.param .b64 st0, …)`.
    pub(super) fn signature(&self, f: &Function) -> Result<String, Error> {
        let mut s = String::from(".func ");
        if let Some(ret) = &f.ret {
            let class = value_class(f, ret)?;
            let _ = write!(s, "(.param .{} retval) ", class.param_ty());
        }
        let _ = write!(s, "f_{}(.param .b64 st0, .param .b64 st1, .param .b64 st2", f.name);
        if self.options.checked {
            s.push_str(", .param .b64 st3");
        }
        for (i, &p) in f.params.iter().enumerate() {
            let class = value_class(f, &f.values[p].ty)?;
            let _ = write!(s, ", .param .{} p{i}", class.param_ty());
        }
        s.push(')');
        Ok(s)
    }

    pub(super) fn write_function(&mut self, f: &Function, throws: &[(FuncId, &'static str)]) -> Result<(), Error> {
        let mut cx = FuncCx::new(self.module, f);
        cx.checked = self.options.checked;
        cx.throws = throws.to_vec();
        let kernel = f.kind == FuncKind::Kernel;
        // Parameters and state into registers.
        if kernel {
            for (i, field) in StateField::ALL.into_iter().enumerate() {
                let off = STATE_LAYOUT.field(field).offset;
                cx.line(format!("ld.param.u64 %st{i}, [relok_state+{off}];"));
            }
            if cx.checked {
                cx.line(format!("ld.param.u64 %st3, [{}];", checked::SEALS_PARAM));
            }
        } else {
            for i in 0..state_regs(cx.checked) {
                cx.line(format!("ld.param.b64 %st{i}, [st{i}];"));
            }
        }
        for (i, &p) in f.params.iter().enumerate() {
            let class = value_class(f, &f.values[p].ty)?;
            let dst = reg(class, p);
            match class {
                Class::Pred => {
                    let t = cx.temp(Class::B32);
                    cx.line(format!("ld.param.b32 {t}, [p{i}];"));
                    cx.line(format!("setp.ne.b32 {dst}, {t}, 0;"));
                }
                _ => cx.line(format!("ld.param.{} {dst}, [p{i}];", class.param_ty())),
            }
            // Checked mode: a buffer parameter's accesses are checked
            // against its hidden length (super::checked).
            if cx.checked && kernel && matches!(f.values[p].ty, Type::Ptr(AddrSpace::Global, _)) {
                cx.line(format!("ld.param.u64 %len{i}, [{}];", checked::len_param(i)));
                cx.bases.insert(p, Base::Param(i));
            }
        }
        if cx.checked {
            cx.line("mov.u32 %lc, 0;".into());
        }
        cx.block(&f.body)?;
        cx.line("ret;".into());
        cx.write_throw_tails();
        let cold = std::mem::take(&mut cx.cold);
        cx.body.push_str(&cold);

        // Header, declarations, body.
        let mut head = String::new();
        if kernel {
            let params: Vec<Type> = f.params.iter().map(|&p| f.values[p].ty.clone()).collect();
            head.push_str(
                &entry_signature(&f.name, &params, self.options.checked)
                    .map_err(|what| Error::Type { function: f.name.clone(), what })?,
            );
            // No `.reqntid` for a kernel's block shape: told a block has
            // 256 threads, the driver's linker (which compiles as `ptxas
            // -c` does) gave matmul.rk 43 registers against 30 without
            // and lost occupancy (26.3 ms against 18.0 on the H200). The
            // shape still makes `block_dim` a constant and bounds
            // `thread_id` in the IR.
            head.push('\n');
        } else {
            head.push_str(&self.signature(f)?);
            head.push('\n');
        }
        head.push_str("{\n");
        let n = f.values.len().max(1);
        for c in Class::ALL {
            let _ = writeln!(head, "\t.reg .{} %{}<{n}>;", c.reg_ty(), c.prefix());
            if cx.temps[c as usize] > 0 {
                let _ = writeln!(head, "\t.reg .{} %t{}<{}>;", c.reg_ty(), c.prefix(), cx.temps[c as usize]);
            }
        }
        let _ = writeln!(head, "\t.reg .b64 %st<{}>;", state_regs(cx.checked));
        if cx.checked {
            let _ = writeln!(head, "\t.reg .b32 %lc;");
            if kernel && f.params.iter().any(|&p| matches!(f.values[p].ty, Type::Ptr(AddrSpace::Global, _))) {
                let _ = writeln!(head, "\t.reg .b64 %len<{}>;", f.params.len());
            }
        }
        for (v, d) in f.vars.iter() {
            let class = cx.reg_var[v.index()];
            if let Some(class) = class {
                let _ = writeln!(head, "\t.reg .{} %v{}{};", class.reg_ty(), class.prefix(), v.index());
                continue;
            }
            let size = d.ty.size().map_err(|e| Error::Type { function: f.name.clone(), what: e.to_string() })?;
            let space = match d.kind {
                VarKind::Local => "local",
                VarKind::Shared => "shared",
            };
            // Arrays of 16 bytes or more are 16-aligned, so ptxas may
            // access four neighbouring 32-bit elements as one vector.
            let align = if size >= 16 { d.ty.align().max(16) } else { d.ty.align().max(1) };
            let _ = writeln!(head, "\t.{space} .align {align} .b8 {}[{}];", var_name(f, v), size.max(1));
        }
        self.out.push_str(&head);
        self.out.push_str(&cx.body);
        self.out.push_str("}\n\n");
        Ok(())
    }
}

/// The state registers of a function: `%st0..2` are the kernel state's
/// fields; checked mode adds `%st3`, the seal table (see [`checked`]).
pub(super) fn state_regs(checked: bool) -> usize {
    if checked { 4 } else { 3 }
}

/// The entry's parameters after the kernel state (see the module docs for
/// the ABI), as (name, PTX type): one per parameter of `params`, then in
/// checked mode one hidden `.u64` length per pointer parameter and the
/// seal table's address ([`checked`]).
fn entry_params(params: &[Type], checked: bool) -> Result<Vec<(String, &'static str)>, String> {
    let mut out = Vec::with_capacity(params.len() + 1);
    for (i, ty) in params.iter().enumerate() {
        let class =
            scalar_of(ty).map(Class::of_scalar).ok_or_else(|| format!("parameter {i} of aggregate type {ty}"))?;
        let t = match class {
            Class::Pred | Class::B32 => "u32",
            Class::B64 => "u64",
            Class::F32 => "f32",
            Class::F64 => "f64",
        };
        out.push((format!("p{i}"), t));
    }
    if checked {
        for (i, _) in params.iter().enumerate().filter(|(_, t)| matches!(t, Type::Ptr(..))) {
            out.push((checked::len_param(i), "u64"));
        }
        out.push((checked::SEALS_PARAM.to_owned(), "u64"));
    }
    Ok(out)
}

/// The `.entry` line and parameter list of kernel `name` with parameters
/// `params` (see the module docs for the ABI), as the writer prints it: a
/// loader checks that a PTX artifact holds exactly this for its ABI. In
/// checked mode one hidden `.u64` length per pointer parameter follows,
/// then the seal table's address ([`checked`]).
pub fn entry_signature(name: &str, params: &[Type], checked: bool) -> Result<String, String> {
    let mut s = format!(".visible .entry {name}(\n\t.param .align 8 .b8 relok_state[{}]", STATE_LAYOUT.size);
    for (param, t) in entry_params(params, checked)? {
        let _ = write!(s, ",\n\t.param .{t} {param}");
    }
    s.push_str("\n)");
    Ok(s)
}

/// The size in bytes of each parameter of the entry [`entry_signature`]
/// declares, the kernel state first: what a loader compares with the
/// parameters the driver reports for a loaded function (a cubin has no
/// text to check).
pub fn entry_param_sizes(params: &[Type], checked: bool) -> Result<Vec<usize>, String> {
    let sizes = entry_params(params, checked)?.into_iter().map(|(_, t)| if matches!(t, "u32" | "f32") { 4 } else { 8 });
    Ok(std::iter::once(STATE_LAYOUT.size as usize).chain(sizes).collect())
}
