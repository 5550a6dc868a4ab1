//! Statements and control flow: stores, `set`, calls, barriers, `if`,
//! `return`, `exit`, and loops — unrolled into copies of their body and
//! counted against the device's limit and checked mode's budget
//! ([`super::super::unroll`]).

use super::{Base, FuncCx};
use crate::fault;
use crate::wgsl::{Error, unroll};
use relok_ir::{Block, EntityRef, FuncKind, Stmt, StmtKind, Type, Value};

impl FuncCx<'_> {
    pub(super) fn block(&mut self, b: &Block) -> Result<(), Error> {
        self.branch(b, None)
    }

    /// A block; `taken` is the `if` condition and branch (`true`: then)
    /// it is the branch of, whose guard it knows ([`crate::in_bounds`]).
    fn branch(&mut self, b: &Block, taken: Option<(Value, bool)>) -> Result<(), Error> {
        self.in_bounds.enter();
        if let Some((cond, then)) = taken {
            self.in_bounds.branch(cond, then);
        }
        let written = match self.cont_flag.clone() {
            None => b.iter().try_for_each(|s| self.write_stmt(s)),
            Some(flag) => self.guarded_block(b, &flag),
        };
        self.in_bounds.leave();
        written
    }

    /// A call of the runtime library's throw `g` ([`crate::wgsl::throws`]):
    /// its WGSL function, in a kernel (a device function that throws is
    /// inlined). The `exit` the optimiser puts after the call
    /// (`crate::passes::inline_keeping`) is the `return` that ends the
    /// thread.
    fn throw(&mut self, g: relok_ir::FuncId, args: &[Value]) -> Result<(), Error> {
        let name = self.throws[&g];
        if self.f.kind != FuncKind::Kernel {
            let at = args.first().copied().unwrap_or(Value::new(0));
            return Err(self.unsupported(at, format!("a call of @{name} in a device function that is not inlined")));
        }
        if !self.called_throws.contains(&name) {
            self.called_throws.push(name);
        }
        let a: Vec<String> = args.iter().map(|v| format!("v{}", v.index())).collect();
        self.line(format!("{name}({}, relok_bid, relok_tid);", a.join(", ")));
        Ok(())
    }

    /// `b` in a copy of an unrolled body ([`super::unroll`]): what follows
    /// a statement that may `continue` runs only while `flag` is clear.
    fn guarded_block(&mut self, b: &Block, flag: &str) -> Result<(), Error> {
        let mut open = 0;
        for s in b {
            self.write_stmt(s)?;
            if matches!(s.kind, StmtKind::Continue | StmtKind::Break | StmtKind::Return(_) | StmtKind::Exit) {
                break;
            }
            if unroll::may_continue(s) {
                self.line(format!("if (!{flag}) {{"));
                self.depth += 1;
                open += 1;
            }
        }
        for _ in 0..open {
            self.depth -= 1;
            self.line("}".into());
        }
        Ok(())
    }

    /// A loop: an innermost one as copies of its body ([`super::unroll`]).
    fn write_loop(&mut self, body: &Block) -> Result<(), Error> {
        let copies = if self.cont_flag.is_none() { unroll::copies(body, self.throws) } else { 1 };
        // Checked mode's budget counts the loops not proven to end soon.
        let counted = self.checked && !crate::finite::ends_within_its_width(self.f, body);
        if copies == 1 {
            let mark = self.loop_head(1, counted);
            self.block(body)?;
            return self.loop_tail(mark, counted);
        }
        let flag = self.temp();
        self.line(format!("var {flag}: bool;"));
        let mark = self.loop_head(copies, counted);
        for copy in 0..copies {
            self.line("{".into());
            self.depth += 1;
            if copy + 1 < copies {
                self.line(format!("{flag} = false;"));
                self.cont_flag = Some(flag.clone());
            }
            let written = self.block(body);
            self.cont_flag = None;
            written?;
            self.depth -= 1;
            self.line("}".into());
        }
        self.loop_tail(mark, counted)
    }

    /// A loop's first lines: when `counted` (checked mode, a loop not
    /// proven to end within a few iterations: [`crate::finite`]) it counts
    /// the IR iterations its back edges run (`copies` bodies each) for the
    /// budget ([`super::unroll`]). The mark for [`Self::loop_tail`].
    fn loop_head(&mut self, copies: usize, counted: bool) -> usize {
        let mark = self.open_loop();
        self.depth += 1;
        if counted {
            self.line(format!("relok_steps += {copies}u;"));
        }
        mark
    }

    /// A loop's last lines: its back edge counted for the device's limit
    /// ([`FuncCx::back_edge`]); past the limit or the budget it ends, and
    /// the fault is recorded after it ([`super::unroll`]).
    fn loop_tail(&mut self, mark: usize, counted: bool) -> Result<(), Error> {
        self.line("continuing {".into());
        self.line(format!("    {}", self.back_edge(mark)));
        let budget =
            if counted { format!(" || relok_steps >= {}u", fault::CHECKED_LOOP_BUDGET) } else { String::new() };
        self.line(format!(
            "    if (relok_iterations > {}{budget}) {{ relok_truncated = true; }}",
            unroll::LOOP_BUDGET_OVERRIDE
        ));
        self.line("    break if relok_truncated;".into());
        self.line("}".into());
        self.depth -= 1;
        self.line("}".into());
        let ids = if self.f.kind == FuncKind::Kernel { "relok_bid, relok_tid" } else { "vec3<u32>(), vec3<u32>()" };
        self.line(format!("if (relok_truncated) {{ relok_loop_limit({ids}); }}"));
        Ok(())
    }

    fn write_stmt(&mut self, s: &Stmt) -> Result<(), Error> {
        match &s.kind {
            StmtKind::Let { result, op } => self.write_op(*result, op),
            StmtKind::Store { ptr, index, value } => {
                let b = self.base(*ptr)?;
                let pointee = self.pointee(*ptr)?;
                let size = pointee.size().map_err(|e| self.unsupported(*ptr, e.to_string()))?;
                let off = self.offset(*ptr, *index, size)?;
                let sc = match pointee {
                    Type::Scalar(s) => s,
                    _ => self.scalar(*value)?,
                };
                let t = self.temp();
                self.line(format!("let {t}: u32 = {off};"));
                self.store(b, &t, sc, &format!("v{}", value.index()), *value, Some((*ptr, *index)))
            }
            StmtKind::Set { var, value } => {
                match self.reg_var(*var) {
                    Some(_) => self.line(format!("l{} = v{};", var.index(), value.index())),
                    None => {
                        let sc = self.scalar(*value)?;
                        self.store(Base::Local(*var), "0u", sc, &format!("v{}", value.index()), *value, None)?;
                    }
                }
                Ok(())
            }
            StmtKind::Call(g, args) if self.throws.contains_key(g) => self.throw(*g, args),
            StmtKind::Call(g, args) => {
                let call = self.call_function(*g, args);
                self.line(format!("{call};"));
                Ok(())
            }
            // What the barrier must order (`usage`): storage, shared
            // memory, or only the wait.
            StmtKind::Barrier => {
                let fence = self.usage.fence(s);
                if fence.storage {
                    self.line("storageBarrier();".into());
                }
                if fence.workgroup {
                    self.line("workgroupBarrier();".into());
                }
                Ok(())
            }
            StmtKind::If { cond, then_body, else_body } => {
                self.line(format!("if (v{}) {{", cond.index()));
                self.depth += 1;
                self.branch(then_body, Some((*cond, true)))?;
                self.depth -= 1;
                if else_body.is_empty() {
                    self.line("}".into());
                } else {
                    self.line("} else {".into());
                    self.depth += 1;
                    self.branch(else_body, Some((*cond, false)))?;
                    self.depth -= 1;
                    self.line("}".into());
                }
                self.in_bounds.after(*cond, then_body, else_body);
                Ok(())
            }
            StmtKind::Loop(body) => self.write_loop(body),
            StmtKind::Break => {
                self.line("break;".into());
                Ok(())
            }
            StmtKind::Continue => {
                match &self.cont_flag {
                    Some(flag) => self.line(format!("{flag} = true;")),
                    None => self.line("continue;".into()),
                }
                Ok(())
            }
            StmtKind::Return(v) => {
                match v {
                    Some(v) => self.line(format!("return v{};", v.index())),
                    None => self.line("return;".into()),
                }
                Ok(())
            }
            StmtKind::Exit if self.f.kind == FuncKind::Kernel => {
                self.line("return;".into());
                Ok(())
            }
            StmtKind::Exit => Err(self.unsupported(Value::new(0), "`exit` in a device function (inline it)")),
        }
    }
}
