//! Checked mode's code in a function ([`crate::ptx::checked`]): the check
//! before a buffer or host-value access, the loop budget, and the calls
//! that record a fault.

use super::{Base, Class, FuncCx, reg};
use crate::fault::{self, Access};
use crate::ptx::checked;
use relok_ir::{Scalar, StateField, Value};

impl FuncCx<'_> {
    /// Checked mode ([`checked`]): the check before an access (a read, a
    /// write or an atomic, [`Access`]) of `size` bytes at `addr` through
    /// `ptr`.
    /// When one is written, the label to place after the access (by
    /// [`FuncCx::end_access`]) comes back: a refused access jumps there,
    /// after setting `zero`'s register to 0.
    pub(super) fn check_access(
        &mut self,
        ptr: Value,
        addr: &str,
        size: u32,
        access: Access,
        zero: Option<(&str, Scalar)>,
    ) -> Option<String> {
        if !self.checked {
            return None;
        }
        let base = self.bases.get(&ptr).copied()?;
        if base == Base::Heap && access == Access::Read {
            return None;
        }
        let (skip, ok) = (self.label(), self.label());
        let refused = self.temp(Class::Pred);
        match base {
            Base::Param(i) => {
                let p = reg(Class::B64, *self.f.params.get(i)?);
                let (off, lim, m) = (self.temp(Class::B64), self.temp(Class::B64), self.temp(Class::B64));
                let past = self.temp(Class::Pred);
                self.line(format!("sub.s64 {off}, {addr}, {p};"));
                self.line(format!("setp.lt.u64 {refused}, %len{i}, {size};"));
                self.line(format!("sub.u64 {lim}, %len{i}, {size};"));
                self.line(format!("setp.gt.u64 {past}, {off}, {lim};"));
                self.line(format!("or.pred {refused}, {refused}, {past};"));
                self.line(format!("@!{refused} bra {ok};"));
                let code = u64::from(fault::out_of_bounds_high(i as u32, access, size)) << 32;
                self.line(format!("and.b64 {m}, {off}, 0xffffffff;"));
                self.line(format!("or.b64 {m}, {m}, {code:#x};"));
                self.fault(&m);
            }
            Base::Heap => {
                let hit = self.temp(Class::B32);
                let exc = self.state_reg(StateField::Exception);
                let size = size.to_string();
                self.call_runtime(
                    checked::SEAL_CHECK,
                    &[("e_", &exc), ("t_", "%st3"), ("a_", addr), ("s_", &size)],
                    Some(&hit),
                );
                self.line(format!("setp.ne.b32 {refused}, {hit}, 0;"));
                self.line(format!("@!{refused} bra {ok};"));
            }
        }
        if let Some((d, sc)) = zero {
            self.constant(d, sc, 0);
        }
        self.line(format!("bra.uni {skip};"));
        self.body.push_str(&format!("{ok}:\n"));
        Some(skip)
    }

    /// Places the label [`FuncCx::check_access`] returned, after the access.
    pub(super) fn end_access(&mut self, skip: Option<String>) {
        if let Some(l) = skip {
            self.body.push_str(&format!("{l}:\n"));
        }
    }

    /// Checked mode: counts a loop iteration; past the budget the thread
    /// records the fault and exits ([`checked`]).
    pub(super) fn loop_budget(&mut self) {
        if !self.checked {
            return;
        }
        let (over, go, m) = (self.temp(Class::Pred), self.label(), self.temp(Class::B64));
        self.line("add.u32 %lc, %lc, 1;".into());
        self.line(format!("setp.gt.u32 {over}, %lc, {};", fault::CHECKED_LOOP_BUDGET));
        self.line(format!("@!{over} bra {go};"));
        self.line(format!("mov.b64 {m}, {:#x};", fault::LOOP_BUDGET_MESSAGE));
        self.fault(&m);
        self.line("exit;".into());
        self.body.push_str(&format!("{go}:\n"));
    }

    /// Records a fault with message word `msg` ([`checked::FAULT`]).
    fn fault(&mut self, msg: &str) {
        let exc = self.state_reg(StateField::Exception);
        self.call_runtime(checked::FAULT, &[("e_", &exc), ("m_", msg)], None);
    }

    /// A call of one of checked mode's functions in a block of its own:
    /// each argument a `.b64` parameter (name, register or immediate), and
    /// with `hit` its `.b32` result loaded there.
    fn call_runtime(&mut self, callee: &str, args: &[(&str, &str)], hit: Option<&str>) {
        self.called.note(callee);
        self.line("{".into());
        if hit.is_some() {
            self.line("\t.param .b32 h_;".into());
        }
        for (name, src) in args {
            self.line(format!("\t.param .b64 {name};"));
            self.line(format!("\tst.param.b64 [{name}], {src};"));
        }
        let names: Vec<&str> = args.iter().map(|&(name, _)| name).collect();
        match hit {
            Some(hit) => {
                self.line(format!("\tcall (h_), {callee}, ({});", names.join(", ")));
                self.line(format!("\tld.param.b32 {hit}, [h_];"));
            }
            None => self.line(format!("\tcall {callee}, ({});", names.join(", "))),
        }
        self.line("}".into());
    }
}
