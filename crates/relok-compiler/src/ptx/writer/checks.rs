//! Checked mode's code in a function ([`crate::ptx::checked`]): the check
//! before a buffer or host-value access (the seal table's scan), the loop
//! budget, and the code that records a fault. The fast path of each check
//! is a compare and a predicated branch that is not taken; the fault's code
//! is out of line, after the function's body, and records the fault inline
//! (no `call`: a call would become a standard-ABI call when the driver
//! links the PTX, with its register cost on the whole function). The
//! limits a buffer's accesses are checked against are computed where first
//! needed and reused in that block.

use super::{Base, Class, FuncCx, reg};
use crate::fault::{self, Access};
use crate::ptx::Error;
use crate::ptx::checked;
use relok_ir::{Scalar, StateField, Type, Value};

impl FuncCx<'_> {
    /// Checked mode ([`checked`]): the check before an access (a read, a
    /// write or an atomic, [`Access`]) of `size` bytes at `addr`, element
    /// `index` of `ptr`. A refused access records the fault out of line and
    /// ends the thread (as a throw does), so an access that passed proves
    /// every later access of the same element and size in the same block or
    /// one nested in it: those are not checked again.
    pub(super) fn check_access(&mut self, ptr: Value, index: Option<Value>, addr: &str, size: u32, access: Access) {
        if !self.checked {
            return;
        }
        let Some(base) = self.bases.get(&ptr).copied() else { return };
        if base == Base::Heap && access == Access::Read {
            return;
        }
        if !self.proven.prove((ptr, index, size)) {
            return;
        }
        if let (Base::Param(i), Some(index)) = (base, index)
            && self.f.params.get(i) == Some(&ptr)
            && self.in_bounds.proves(ptr, index)
            && self.element_check(ptr, ptr, Some(index), size).is_some()
        {
            // The kernel's own guard proves it ([`crate::in_bounds`]).
            return;
        }
        let fault = self.label();
        let refused = self.temp(Class::Pred);
        let mut cold = vec![format!("{fault}:")];
        match base {
            Base::Param(i) => {
                let Some(&param) = self.f.params.get(i) else { return };
                let p = reg(Class::B64, param);
                let m = self.temp(Class::B64);
                match self.element_check(ptr, param, index, size) {
                    // An element of the parameter itself by a 32-bit index:
                    // refused when the index is at least the elements the
                    // length holds (the byte offset cannot wrap).
                    Some((idx, signed)) => {
                        let (count32, huge, count) = self.count(i, size);
                        if signed {
                            let wide = self.temp(Class::B64);
                            self.line(format!("cvt.s64.s32 {wide}, {idx};"));
                            self.line(format!("setp.ge.u64 {refused}, {wide}, {count};"));
                        } else {
                            self.line(format!("setp.ge.and.u32 {refused}, {idx}, {count32}, !{huge};"));
                        }
                        cold.push(format!("\tsub.s64 {m}, {addr}, {p};"));
                    }
                    // Anything else by its byte offset from the parameter.
                    None => {
                        let (lim, short) = self.limit(i, size);
                        self.line(format!("sub.s64 {m}, {addr}, {p};"));
                        self.line(format!("setp.gt.or.u64 {refused}, {m}, {lim}, {short};"));
                    }
                }
                let code = u64::from(fault::out_of_bounds_high(i as u32, access, size)) << 32;
                cold.push(format!("\tand.b64 {m}, {m}, 0xffffffff;"));
                cold.push(format!("\tor.b64 {m}, {m}, {code:#x};"));
                cold.extend(self.record_fault(&m));
            }
            Base::Heap => {
                // Nothing sealed (the table's address is 0): one compare.
                // Else the scan, out of line, back here when no sealed
                // range holds a byte of the write.
                let back = self.label();
                self.line(format!("setp.ne.u64 {refused}, %st3, 0;"));
                self.line(format!("@{refused} bra {fault};"));
                self.body.push_str(&format!("{back}:\n"));
                cold.extend(self.seal_scan(addr, size, &back));
                cold.push("\texit;".into());
                self.push_cold(&cold);
                return;
            }
        }
        self.line(format!("@{refused} bra {fault};"));
        cold.push("\texit;".into());
        self.push_cold(&cold);
    }

    /// Checked mode: counts a loop iteration; past the budget the thread
    /// records the fault and exits ([`checked`]), out of line.
    pub(super) fn loop_budget(&mut self) {
        if !self.checked {
            return;
        }
        let (over, fault, m) = (self.temp(Class::Pred), self.label(), self.temp(Class::B64));
        self.line("add.u32 %lc, %lc, 1;".into());
        self.line(format!("setp.gt.u32 {over}, %lc, {};", fault::CHECKED_LOOP_BUDGET));
        self.line(format!("@{over} bra {fault};"));
        let mut cold = vec![format!("{fault}:"), format!("\tmov.b64 {m}, {:#x};", fault::LOOP_BUDGET_MESSAGE)];
        cold.extend(self.record_fault(&m));
        cold.push("\texit;".into());
        self.push_cold(&cold);
    }

    /// For an access of element `index` of `ptr` by `size` bytes: when
    /// `ptr` is the parameter `param` itself, its elements are `size`
    /// bytes and the index is 32-bit, the index's register and whether it
    /// is signed ([`FuncCx::check_access`]'s element check).
    fn element_check(&self, ptr: Value, param: Value, index: Option<Value>, size: u32) -> Option<(String, bool)> {
        let index = index?;
        let Type::Ptr(_, pointee) = self.ty(ptr) else { return None };
        let stride = pointee.size().ok()?;
        if ptr != param || stride != size || !size.is_power_of_two() {
            return None;
        }
        match self.ty(index) {
            Type::Scalar(Scalar::U32) => Some((reg(Class::B32, index), false)),
            Type::Scalar(Scalar::I32) => Some((reg(Class::B32, index), true)),
            _ => None,
        }
    }

    /// The registers holding, for pointer parameter `i`'s elements of
    /// `size` bytes, how many its length holds (`len / size`): as 32 bits,
    /// whether that exceeds 32 bits (the length's high word is at least
    /// `size`), and as 64 bits. Computed where first needed, and reused in
    /// that block and those nested in it ([`Proven`]): a thread that never
    /// reaches an access never computes its limit.
    fn count(&mut self, i: usize, size: u32) -> Count {
        if let Some(c) = self.proven.count(i, size) {
            return c;
        }
        let c = (self.temp(Class::B32), self.temp(Class::Pred), self.temp(Class::B64));
        let (count32, huge, count) = &c;
        let (lo, hi) = (self.temp(Class::B32), self.temp(Class::B32));
        self.line(format!("shr.u64 {count}, %len{i}, {};", size.trailing_zeros()));
        self.line(format!("cvt.u32.u64 {count32}, {count};"));
        self.line(format!("mov.b64 {{{lo}, {hi}}}, %len{i};"));
        self.line(format!("setp.ge.u32 {huge}, {hi}, {size};"));
        self.proven.counts.push(((i, size), c.clone()));
        c
    }

    /// The registers holding `len - size` and `len < size` for pointer
    /// parameter `i`'s accesses of `size` bytes: an access at byte offset
    /// `off` is refused when `off > len - size` (unsigned: an offset below
    /// the pointer is huge) or `len < size`. Computed where first needed,
    /// as [`FuncCx::count`]'s.
    fn limit(&mut self, i: usize, size: u32) -> (String, String) {
        if let Some(l) = self.proven.limit(i, size) {
            return l;
        }
        let l = (self.temp(Class::B64), self.temp(Class::Pred));
        let (lim, short) = &l;
        self.line(format!("setp.lt.u64 {short}, %len{i}, {size};"));
        self.line(format!("sub.u64 {lim}, %len{i}, {size};"));
        self.proven.limits.push(((i, size), l.clone()));
        l
    }

    /// Lines of cold code, placed after the function's body.
    fn push_cold(&mut self, lines: &[String]) {
        for l in lines {
            self.cold.push_str(l);
            self.cold.push('\n');
        }
    }

    /// The out-of-line scan of the seal table (`%st3`: word 0 the entries'
    /// address, word 1 their number; an entry the first byte and the end
    /// of a sealed range) for a write of `size` bytes at `addr`: back to
    /// `back` when no range holds a byte of it, else the fault recorded
    /// ([`crate::fault::READ_ONLY_MESSAGE_HIGH`] over the byte offset in
    /// the copy), falling through to the caller's `exit`.
    fn seal_scan(&mut self, addr: &str, size: u32, back: &str) -> Vec<String> {
        let [t, n, lo, hi, end, m] = [(); 6].map(|()| self.temp(Class::B64));
        let (p, next) = (self.temp(Class::Pred), self.label());
        let high = u64::from(fault::READ_ONLY_MESSAGE_HIGH) << 32;
        let mut lines = vec![
            format!("\tld.global.u64 {t}, [%st3];"),
            format!("\tld.global.u64 {n}, [%st3+8];"),
            format!("\tadd.u64 {end}, {addr}, {size};"),
            format!("{next}:"),
            format!("\tsetp.eq.u64 {p}, {n}, 0;"),
            format!("\t@{p} bra {back};"),
            format!("\tld.global.u64 {lo}, [{t}];"),
            format!("\tld.global.u64 {hi}, [{t}+8];"),
            format!("\tadd.u64 {t}, {t}, 16;"),
            format!("\tsub.u64 {n}, {n}, 1;"),
            format!("\tsetp.ge.u64 {p}, {addr}, {hi};"),
            format!("\t@{p} bra {next};"),
            format!("\tsetp.le.u64 {p}, {end}, {lo};"),
            format!("\t@{p} bra {next};"),
            format!("\tmax.u64 {m}, {addr}, {lo};"),
            format!("\tsub.u64 {m}, {m}, {lo};"),
            format!("\tand.b64 {m}, {m}, 0xffffffff;"),
            format!("\tor.b64 {m}, {m}, {high:#x};"),
        ];
        lines.extend(self.record_fault(&m));
        lines
    }

    /// The lines that record a fault with message word `msg` in the
    /// launch's exception record, inline ([`checked::record_fault`]): no
    /// call, so linking adds no call ABI to the function.
    fn record_fault(&mut self, msg: &str) -> Vec<String> {
        self.record_exception(msg, &[])
    }

    /// [`FuncCx::record_fault`] with the record's two `values` (none or
    /// two: `@relok_throw_with`'s).
    fn record_exception(&mut self, msg: &str, values: &[String]) -> Vec<String> {
        let exc = self.state_reg(StateField::Exception);
        let regs = checked::FaultRegs {
            old: self.temp(Class::B64),
            claimed: self.temp(Class::Pred),
            id: self.temp(Class::B32),
            done: self.label(),
        };
        checked::record_fault(&exc, msg, values, &regs)
    }

    /// A call of the library's throw `name` ([`Options::library_throws`]):
    /// its arguments into the throw tail's registers (the first call
    /// allocates them), then the branch to the tail.
    ///
    /// [`Options::library_throws`]: crate::ptx::Options::library_throws
    pub(super) fn branch_to_throw(&mut self, name: &'static str, args: &[Value]) -> Result<(), Error> {
        let regs = match self.tails.iter().find(|(n, _)| *n == name) {
            Some((_, regs)) => regs.clone(),
            None => {
                let regs: Vec<String> = args.iter().map(|_| self.temp(Class::B64)).collect();
                self.tails.push((name, regs.clone()));
                regs
            }
        };
        if regs.len() != args.len() {
            return Err(self.type_error(format!("@{name} called with {} arguments", args.len())));
        }
        for (reg, &a) in regs.iter().zip(args) {
            if Class::of_scalar(self.scalar(a)?) != Class::B64 {
                return Err(self.type_error(format!("@{name}'s argument {a} is not 64 bits")));
            }
            let src = self.r(a)?;
            self.line(format!("mov.b64 {reg}, {src};"));
        }
        self.line(format!("bra.uni $tail_{name};"));
        Ok(())
    }

    /// The throw tails called in this function, after its body: each
    /// records the exception (the message word, the ids, for
    /// `@relok_throw_with` its two values) and exits.
    pub(super) fn write_throw_tails(&mut self) {
        for (name, regs) in std::mem::take(&mut self.tails) {
            let Some((msg, values)) = regs.split_first() else { continue };
            let mut lines = vec![format!("$tail_{name}:")];
            lines.extend(self.record_exception(msg, values));
            lines.push("\texit;".into());
            self.push_cold(&lines);
        }
    }
}

/// [`FuncCx::count`]'s registers: the count as 32 bits, whether it exceeds
/// 32 bits, the count as 64 bits.
type Count = (String, String, String);

/// Checked mode's accesses already checked where the code is now, by
/// (pointer, element index, size), and the limits already computed, by
/// (pointer parameter, size): those of the enclosing blocks, each dropped
/// when its block ends.
#[derive(Debug, Default)]
pub(super) struct Proven {
    checked: Vec<(Value, Option<Value>, u32)>,
    /// [`FuncCx::count`]'s registers.
    counts: Vec<((usize, u32), Count)>,
    /// [`FuncCx::limit`]'s registers.
    limits: Vec<((usize, u32), (String, String))>,
    /// The lengths of the three at each block's start.
    scopes: Vec<(usize, usize, usize)>,
}

impl Proven {
    /// Notes `access` as checked from here on; whether it was not yet.
    fn prove(&mut self, access: (Value, Option<Value>, u32)) -> bool {
        if self.checked.contains(&access) {
            return false;
        }
        self.checked.push(access);
        true
    }

    fn count(&self, i: usize, size: u32) -> Option<Count> {
        self.counts.iter().find(|(k, _)| *k == (i, size)).map(|(_, c)| c.clone())
    }

    fn limit(&self, i: usize, size: u32) -> Option<(String, String)> {
        self.limits.iter().find(|(k, _)| *k == (i, size)).map(|(_, l)| l.clone())
    }

    /// A block begins.
    pub(super) fn enter(&mut self) {
        self.scopes.push((self.checked.len(), self.counts.len(), self.limits.len()));
    }

    /// The block [`Proven::enter`] began ends.
    pub(super) fn leave(&mut self) {
        let (a, b, c) = self.scopes.pop().unwrap_or_default();
        self.checked.truncate(a);
        self.counts.truncate(b);
        self.limits.truncate(c);
    }
}
