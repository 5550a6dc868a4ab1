//! Statements and control flow: stores, `set`, barriers, `if`, loops and
//! their `break`/`continue`, `return`, `exit`, and calls of device
//! functions.

use super::function::state_regs;
use super::{Class, FuncCx, mem, reg, scalar_of};
use crate::fault::Access;
use crate::ptx::Error;
use relok_ir::{Block, EntityRef, Stmt, StmtKind, Value};

impl FuncCx<'_> {
    pub(super) fn block(&mut self, b: &Block) -> Result<(), Error> {
        self.branch(b, None)
    }

    /// A block; `taken` is the `if` condition and branch (`true`: then)
    /// it is the branch of, whose guard it knows ([`crate::in_bounds`]).
    fn branch(&mut self, b: &Block, taken: Option<(Value, bool)>) -> Result<(), Error> {
        self.proven.enter();
        self.in_bounds.enter();
        if let Some((cond, then)) = taken {
            self.in_bounds.branch(cond, then);
        }
        let written = b.iter().try_for_each(|s| self.write_stmt(s));
        self.in_bounds.leave();
        self.proven.leave();
        written
    }

    fn write_stmt(&mut self, s: &Stmt) -> Result<(), Error> {
        match &s.kind {
            StmtKind::Let { result, op } => self.write_op(*result, op),
            StmtKind::Store { ptr, index, value } => {
                let (space, pointee) = self.pointer(*ptr)?;
                let addr = self.address(*ptr, *index, &pointee)?;
                let sc = self.scalar(*value)?;
                let msc = scalar_of(&pointee).unwrap_or(sc);
                self.check_access(*ptr, *index, &addr, msc.size(), Access::Write);
                let src = self.r(*value)?;
                let src = self.as_stored(sc, src);
                let space = if space == "global.nc" { "global" } else { space };
                self.line(format!("st.{space}.{} [{addr}], {src};", mem(msc)));
                Ok(())
            }
            StmtKind::Set { var, value } => {
                let src = self.r(*value)?;
                match self.reg_var[var.index()] {
                    Some(c) => self.line(format!("mov.{} %v{}{}, {src};", c.reg_ty(), c.prefix(), var.index())),
                    None => {
                        let sc = self.scalar(*value)?;
                        let src = self.as_stored(sc, src);
                        let (space, name) = self.var_place(*var);
                        self.line(format!("st.{space}.{} [{name}], {src};", mem(sc)));
                    }
                }
                Ok(())
            }
            StmtKind::Call(g, args) => self.call(None, *g, args),
            StmtKind::Barrier => {
                self.line("bar.sync 0;".into());
                Ok(())
            }
            // A branch that never comes back (a failed bounds check's
            // report, ending in `exit`) goes out of line, after the body:
            // the fast path falls through a branch not taken.
            StmtKind::If { cond, then_body, else_body }
                if else_body.is_empty() && !relok_ir::falls_through(then_body) =>
            {
                let c = self.r(*cond)?;
                let cold = self.label();
                self.line(format!("@{c} bra {cold};"));
                let hot = std::mem::replace(&mut self.body, format!("{cold}:\n"));
                self.branch(then_body, Some((*cond, true)))?;
                let code = std::mem::replace(&mut self.body, hot);
                self.cold.push_str(&code);
                self.in_bounds.after(*cond, then_body, else_body);
                Ok(())
            }
            StmtKind::If { cond, then_body, else_body } => {
                let c = self.r(*cond)?;
                let (else_l, end_l) = (self.label(), self.label());
                self.line(format!("@!{c} bra {else_l};"));
                self.branch(then_body, Some((*cond, true)))?;
                if else_body.is_empty() {
                    self.body.push_str(&format!("{else_l}:\n"));
                    self.body.push_str(&format!("{end_l}:\n"));
                } else {
                    self.line(format!("bra.uni {end_l};"));
                    self.body.push_str(&format!("{else_l}:\n"));
                    self.branch(else_body, Some((*cond, false)))?;
                    self.body.push_str(&format!("{end_l}:\n"));
                }
                self.in_bounds.after(*cond, then_body, else_body);
                Ok(())
            }
            StmtKind::Loop(body) => {
                let (top, end) = (self.label(), self.label());
                self.body.push_str(&format!("{top}:\n"));
                // Checked mode's budget counts the loops not proven to
                // end soon ([`crate::finite`]).
                if !crate::finite::ends_within_its_width(self.f, body) {
                    self.loop_budget();
                }
                self.loops.push((top.clone(), end.clone()));
                self.block(body)?;
                self.loops.pop();
                self.line(format!("bra.uni {top};"));
                self.body.push_str(&format!("{end}:\n"));
                Ok(())
            }
            StmtKind::Break | StmtKind::Continue => {
                let (top, end) = self
                    .loops
                    .last()
                    .cloned()
                    .ok_or_else(|| self.type_error("break or continue outside a loop".into()))?;
                let target = if matches!(s.kind, StmtKind::Break) { end } else { top };
                self.line(format!("bra.uni {target};"));
                Ok(())
            }
            StmtKind::Return(v) => {
                if let Some(v) = v {
                    let sc = self.scalar(*v)?;
                    let class = Class::of_scalar(sc);
                    let src = self.r(*v)?;
                    let src = if class == Class::Pred { self.pred_to_b32(&src) } else { src };
                    self.line(format!("st.param.{} [retval], {src};", class.param_ty()));
                }
                self.line("ret;".into());
                Ok(())
            }
            StmtKind::Exit => {
                self.line("exit;".into());
                Ok(())
            }
        }
    }

    pub(super) fn call(&mut self, result: Option<Value>, g: relok_ir::FuncId, args: &[Value]) -> Result<(), Error> {
        let callee = self.module.funcs.get(g).ok_or_else(|| self.type_error(format!("no function {g}")))?;
        if let Some(&(_, name)) = self.throws.iter().find(|(t, _)| *t == g) {
            return self.branch_to_throw(name, args);
        }
        self.line("{".into());
        let mut names = Vec::new();
        for i in 0..state_regs(self.checked) {
            self.line(format!("\t.param .b64 st{i}_;"));
            self.line(format!("\tst.param.b64 [st{i}_], %st{i};"));
            names.push(format!("st{i}_"));
        }
        for (i, &a) in args.iter().enumerate() {
            let class = Class::of_scalar(self.scalar(a)?);
            let src = self.r(a)?;
            let src = if class == Class::Pred { self.pred_to_b32(&src) } else { src };
            self.line(format!("\t.param .{} a{i}_;", class.param_ty()));
            self.line(format!("\tst.param.{} [a{i}_], {src};", class.param_ty()));
            names.push(format!("a{i}_"));
        }
        let ret = match (result, &callee.ret) {
            (Some(r), Some(_)) => {
                let class = Class::of_scalar(self.scalar(r)?);
                self.line(format!("\t.param .{} r_;", class.param_ty()));
                Some((r, class))
            }
            _ => None,
        };
        let retpart = if ret.is_some() { "(r_), " } else { "" };
        self.line(format!("\tcall.uni {retpart}f_{}, ({});", callee.name, names.join(", ")));
        if let Some((r, class)) = ret {
            if class == Class::Pred {
                let t = self.temp(Class::B32);
                self.line(format!("\tld.param.b32 {t}, [r_];"));
                self.line(format!("\tsetp.ne.b32 {}, {t}, 0;", reg(class, r)));
            } else {
                self.line(format!("\tld.param.{} {}, [r_];", class.param_ty(), reg(class, r)));
            }
        }
        self.line("}".into());
        Ok(())
    }
}
