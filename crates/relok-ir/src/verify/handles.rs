//! Phase 1: handles and order, per function. Checks every value, variable,
//! function and constant handle; the parameter numbering; the canonical
//! numbering of `Let`s; and that every use is dominated by its definition.
//! Nothing here indexes an arena without checking first.

use super::error::{Reporter, VerifyErrorKind as K};
use crate::entity::EntityRef;
use crate::ir::{Function, Module, Op, Span, Stmt, StmtKind, Value};

/// Runs phase 1 on `f`; returns whether it passed (and phase 2 may index
/// freely).
pub(super) fn check(m: &Module, f: &Function, r: &mut Reporter<'_>) -> bool {
    let before = r.errors.len();
    let n = f.values.len();
    let mut scan = Scan {
        m,
        f,
        defined: vec![false; n],
        visible: vec![false; n],
        scope: Vec::new(),
        next: f.params.len(),
        order_reported: false,
        r,
    };
    for (i, &p) in f.params.iter().enumerate() {
        if !f.values.contains(p) {
            scan.r.report(f.span, None, K::DanglingValue(p));
            continue;
        }
        if p.index() != i {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            scan.r.report(f.span, None, K::ParamOrder { index, found: p });
        }
        if scan.defined[p.index()] {
            scan.r.report(f.span, None, K::Redefined(p));
        }
        scan.defined[p.index()] = true;
        scan.visible[p.index()] = true;
    }
    scan.block(&f.body);
    for (i, &d) in scan.defined.iter().enumerate() {
        if !d {
            scan.r.report(f.span, None, K::Undefined(Value::new(i)));
        }
    }
    scan.r.errors.len() == before
}

struct Scan<'a, 'r, 'p> {
    m: &'a Module,
    f: &'a Function,
    /// Values defined so far (parameters and `Let`s met in text order).
    defined: Vec<bool>,
    /// Values whose definition dominates the current statement.
    visible: Vec<bool>,
    /// Values defined in the open blocks, innermost last.
    scope: Vec<Value>,
    /// The value the next `Let` must define.
    next: usize,
    /// Whether a numbering break was reported (only the first is).
    order_reported: bool,
    r: &'r mut Reporter<'p>,
}

impl Scan<'_, '_, '_> {
    fn block(&mut self, b: &[Stmt]) {
        let mark = self.scope.len();
        for s in b {
            self.stmt(s);
        }
        for v in self.scope.drain(mark..) {
            self.visible[v.index()] = false;
        }
    }

    fn use_(&mut self, v: Value, span: Span, at: Option<Value>) {
        match self.visible.get(v.index()) {
            None => self.r.report(span, at, K::DanglingValue(v)),
            Some(false) => self.r.report(span, at, K::NotDominated(v)),
            Some(true) => {}
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let span = s.span;
        match &s.kind {
            StmtKind::Let { result, op } => {
                let at = Some(*result);
                op.for_each_operand(|v| self.use_(v, span, at));
                self.op_handles(op, span, at);
                self.define(*result, span);
            }
            StmtKind::Store { ptr, index, value } => {
                self.use_(*ptr, span, None);
                if let Some(i) = index {
                    self.use_(*i, span, None);
                }
                self.use_(*value, span, None);
            }
            StmtKind::Set { var, value } => {
                if !self.f.vars.contains(*var) {
                    self.r.report(span, None, K::DanglingVar(*var));
                }
                self.use_(*value, span, None);
            }
            StmtKind::Call(callee, args) => {
                if !self.m.funcs.contains(*callee) {
                    self.r.report(span, None, K::DanglingFunc(*callee));
                }
                for &a in args {
                    self.use_(a, span, None);
                }
            }
            StmtKind::If { cond, then_body, else_body } => {
                self.use_(*cond, span, None);
                self.block(then_body);
                self.block(else_body);
            }
            StmtKind::Loop(body) => self.block(body),
            StmtKind::Return(v) => {
                if let Some(v) = v {
                    self.use_(*v, span, None);
                }
            }
            StmtKind::Barrier | StmtKind::Break | StmtKind::Continue | StmtKind::Exit => {}
        }
    }

    /// The non-value handles of an operation.
    fn op_handles(&mut self, op: &Op, span: Span, at: Option<Value>) {
        match op {
            Op::VarAddr(var) | Op::Get(var) if !self.f.vars.contains(*var) => {
                self.r.report(span, at, K::DanglingVar(*var));
            }
            Op::ConstAddr(c) | Op::Ref(crate::ir::HostRef::Value(c)) if !self.m.consts.contains(*c) => {
                self.r.report(span, at, K::DanglingConst(*c));
            }
            Op::Call(callee, _) if !self.m.funcs.contains(*callee) => {
                self.r.report(span, at, K::DanglingFunc(*callee));
            }
            _ => {}
        }
    }

    fn define(&mut self, v: Value, span: Span) {
        let i = v.index();
        if i >= self.defined.len() {
            self.r.report(span, None, K::DanglingValue(v));
        } else if self.defined[i] {
            self.r.report(span, None, K::Redefined(v));
        } else {
            if i != self.next && !self.order_reported {
                self.order_reported = true;
                let expected = Value::from_u32(u32::try_from(self.next).unwrap_or(u32::MAX));
                self.r.report(span, None, K::OutOfOrder { found: v, expected });
            }
            self.defined[i] = true;
            self.visible[i] = true;
            self.scope.push(v);
        }
        self.next = self.next.saturating_add(1);
    }
}
