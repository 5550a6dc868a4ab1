//! Phase 2: types and rules of one function that passed phase 1 (so every
//! handle indexes its arena). Operation typing is [`crate::typing`]'s; this
//! file adds the rules of statements, declarations and signatures.

use super::error::{NameKind, Reporter, VerifyErrorKind as K};
use super::items::{host_ref_name, is_ident, patch_name, well_formed};
use crate::ir::{FuncKind, Function, Module, Op, Span, Stage, Stmt, StmtKind, Strategy, Value, VarKind};
use crate::types::{AddrSpace, Scalar, Type};
use crate::typing::{self, TypeError};
use std::collections::HashSet;

/// Runs phase 2 on `f`, which passed phase 1.
pub(super) fn check(m: &Module, f: &Function, r: &mut Reporter<'_>) {
    let mut cx = Rules { m, f, r, loops: 0 };
    cx.signature();
    if f.kind == FuncKind::Import && (!f.body.is_empty() || !f.vars.is_empty()) {
        cx.r.report(f.span, None, K::ImportWithBody);
    }
    cx.vars();
    cx.block(&f.body);
    match (f.kind, &f.ret) {
        (FuncKind::Device, Some(ret)) if !diverges(&f.body) => {
            cx.r.report(f.span, None, K::MissingReturn(Box::new(ret.clone())));
        }
        _ => {}
    }
}

/// The bytes a kernel's `shared` variables take, laid out in declaration
/// order like the fields of a struct; `None` when they have no layout or
/// overflow 4 GiB.
pub(super) fn shared_bytes(f: &Function) -> Option<u32> {
    let mut end: u64 = 0;
    for d in f.vars.values().filter(|d| d.kind == VarKind::Shared) {
        let size = u64::from(d.ty.size().ok()?);
        end = end.checked_next_multiple_of(u64::from(d.ty.align()))?.checked_add(size)?;
    }
    u32::try_from(end).ok()
}

/// Whether control never reaches the end of `block`: some statement of it
/// returns on every path (`return` or `exit`; an `if` whose branches both
/// diverge; a `loop` that no `break` leaves).
pub(super) fn diverges(block: &[Stmt]) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Return(_) | StmtKind::Exit => true,
        StmtKind::If { then_body, else_body, .. } => diverges(then_body) && diverges(else_body),
        StmtKind::Loop(body) => !breaks(body),
        _ => false,
    })
}

/// Whether `block` contains a `break` of the loop whose body it is (not
/// counting those of nested loops).
fn breaks(block: &[Stmt]) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Break => true,
        StmtKind::If { then_body, else_body, .. } => breaks(then_body) || breaks(else_body),
        _ => false,
    })
}

struct Rules<'a, 'r, 'p> {
    m: &'a Module,
    f: &'a Function,
    r: &'r mut Reporter<'p>,
    /// Loops enclosing the current statement.
    loops: u32,
}

impl Rules<'_, '_, '_> {
    /// Reports a value type that is not a scalar or pointer, or whose
    /// pointee has no layout; returns whether it is fine.
    fn value_type(&mut self, ty: &Type, span: Span, at: Option<Value>) -> bool {
        if !ty.is_value_type() {
            self.r.report(span, at, K::NotValueType(Box::new(ty.clone())));
            return false;
        }
        self.layout(ty, span, at)
    }

    fn layout(&mut self, ty: &Type, span: Span, at: Option<Value>) -> bool {
        match well_formed(ty) {
            Ok(()) => true,
            Err((bad, source)) => {
                self.r.report(span, at, K::Layout { ty: Box::new(bad.clone()), source });
                false
            }
        }
    }

    fn signature(&mut self) {
        let f = self.f;
        for &p in &f.params {
            let ty = f.ty(p);
            match f.kind {
                FuncKind::Kernel => {
                    let ok = ty.is_value_type() && matches!(ty, Type::Scalar(_) | Type::Ptr(AddrSpace::Global, _));
                    if !ok {
                        self.r.report(f.span, Some(p), K::KernelParam(Box::new(ty.clone())));
                    } else {
                        self.layout(ty, f.span, Some(p));
                    }
                }
                FuncKind::Device | FuncKind::Import => {
                    self.value_type(ty, f.span, Some(p));
                }
            }
        }
        self.len_params();
        if let Some(block) = f.block {
            let why = if f.kind != FuncKind::Kernel {
                Some("only kernels are launched with a block shape".to_owned())
            } else {
                crate::block_shape_problem(block)
            };
            if let Some(why) = why {
                self.r.report(f.span, None, K::BadBlock(why));
            }
        }
        match (f.kind, &f.ret) {
            (_, None) => {}
            (FuncKind::Kernel, Some(t)) => self.r.report(f.span, None, K::KernelResult(Box::new(t.clone()))),
            (FuncKind::Device | FuncKind::Import, Some(t)) if !t.is_value_type() => {
                self.r.report(f.span, None, K::BadResultType(Box::new(t.clone())));
            }
            (FuncKind::Device | FuncKind::Import, Some(t)) => {
                self.layout(t, f.span, None);
            }
        }
    }

    /// The rules of [`crate::LenParam`]: a kernel's `u32` parameters, each a
    /// length of one earlier parameter, a `ptr<global, T>`, each parameter
    /// in at most one of them, listed in the order of their length
    /// parameters (as the text format writes and reads them).
    fn len_params(&mut self) {
        let f = self.f;
        let mut seen = HashSet::new();
        let position = |v: Value| f.params.iter().position(|&p| p == v);
        let mut last = None;
        for l in &f.lens {
            let (at, of_at) = (position(l.len), position(l.of));
            let why = if f.kind != FuncKind::Kernel {
                Some("only a kernel's parameters are lengths".to_owned())
            } else if at.is_none() || of_at.is_none() {
                Some(format!("{} and {} must both be parameters", l.len, l.of))
            } else if of_at >= at {
                Some(format!("{} counts elements of {}, which is not an earlier parameter", l.len, l.of))
            } else if last >= at {
                Some(format!("the length {} is listed after a later parameter's", l.len))
            } else if *f.ty(l.len) != Type::Scalar(Scalar::U32) {
                Some(format!("the length {} is {}, not u32", l.len, f.ty(l.len)))
            } else if !matches!(f.ty(l.of), Type::Ptr(AddrSpace::Global, _)) {
                Some(format!("{} counts elements of {}, a {}, not a ptr<global, T>", l.len, l.of, f.ty(l.of)))
            } else if !seen.insert(l.len) || !seen.insert(l.of) || l.len == l.of {
                Some(format!("{} or {} is in two lengths", l.len, l.of))
            } else {
                None
            };
            if let Some(why) = why {
                self.r.report(f.span, Some(l.len), K::BadLenParam(why));
            }
            last = last.max(at);
        }
    }

    fn vars(&mut self) {
        let f = self.f;
        let mut seen = HashSet::new();
        for d in f.vars.values() {
            if !is_ident(&d.name) {
                self.r.report(d.span, None, K::BadName { kind: NameKind::Variable, name: d.name.clone() });
            } else if !seen.insert(d.name.as_str()) {
                self.r.report(d.span, None, K::DuplicateName { kind: NameKind::Variable, name: d.name.clone() });
            }
            if d.kind == VarKind::Shared && f.kind == FuncKind::Device {
                self.r.report(d.span, None, K::SharedInDevice(d.name.clone()));
            }
            self.layout(&d.ty, d.span, None);
        }
        if f.kind == FuncKind::Kernel
            && shared_bytes(f).is_none()
            && f.vars.values().all(|d| d.kind == VarKind::Local || well_formed(&d.ty).is_ok())
        {
            self.r.report(f.span, None, K::SharedTooLarge);
        }
    }

    fn block(&mut self, b: &[Stmt]) {
        for s in b {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let (m, f, span) = (self.m, self.f, s.span);
        match &s.kind {
            StmtKind::Let { result, op } => {
                let declared = f.ty(*result);
                let checked = self.value_type(declared, span, Some(*result)).then(|| typing::check(m, f, op, declared));
                if let Some(Err(e)) = checked {
                    self.r.report(span, Some(*result), K::Type(Box::new(e)));
                }
                if let Some(kind) = stage_rule(m.stage, op) {
                    self.r.report(span, Some(*result), kind);
                }
            }
            StmtKind::Store { ptr, index, value } => self.store(*ptr, *index, *value, span),
            StmtKind::Set { var, value } => {
                let d = &f.vars[*var];
                let vt = f.ty(*value);
                if d.kind != VarKind::Local || !d.ty.is_value_type() {
                    let shared = d.kind == VarKind::Shared;
                    self.r.report(span, None, K::SetTarget { var: d.name.clone(), ty: Box::new(d.ty.clone()), shared });
                } else if *vt != d.ty {
                    let types = Box::new((d.ty.clone(), vt.clone()));
                    self.r.report(span, None, K::SetMismatch { var: d.name.clone(), types });
                }
            }
            StmtKind::Call(callee, args) => match typing::check_call(m, f, *callee, args) {
                Err(e) => self.r.report(span, None, K::Call(Box::new(e))),
                Ok(Some(ret)) => {
                    let callee = m.funcs[*callee].name.clone();
                    self.r.report(span, None, K::UnusedResult { callee, ret: Box::new(ret) });
                }
                Ok(None) => {}
            },
            StmtKind::Barrier | StmtKind::Exit => {}
            StmtKind::If { cond, then_body, else_body } => {
                let ct = f.ty(*cond);
                if *ct != Type::Scalar(Scalar::Bool) {
                    self.r.report(span, None, K::CondNotBool(Box::new(ct.clone())));
                }
                self.block(then_body);
                self.block(else_body);
            }
            StmtKind::Loop(body) => {
                self.loops += 1;
                self.block(body);
                self.loops -= 1;
            }
            StmtKind::Break if self.loops == 0 => self.r.report(span, None, K::BreakOutsideLoop),
            StmtKind::Continue if self.loops == 0 => self.r.report(span, None, K::ContinueOutsideLoop),
            StmtKind::Break | StmtKind::Continue => {}
            StmtKind::Return(v) => {
                let found = v.map(|v| f.ty(v));
                match f.kind {
                    FuncKind::Kernel if found.is_some() => self.r.report(span, None, K::KernelReturnsValue),
                    FuncKind::Kernel => {}
                    FuncKind::Device | FuncKind::Import => {
                        if found != f.ret.as_ref() {
                            let expected = f.ret.clone().map(Box::new);
                            let found = found.cloned().map(Box::new);
                            self.r.report(span, None, K::ReturnType { expected, found });
                        }
                    }
                }
            }
        }
    }

    fn store(&mut self, ptr: Value, index: Option<Value>, value: Value, span: Span) {
        let f = self.f;
        let bad = |operand: Value, found: &Type, expected: &'static str| {
            K::Store(Box::new(TypeError::Operand { op: "store", operand, found: found.clone(), expected }))
        };
        if let Some(i) = index {
            let it = f.ty(i);
            if !it.as_scalar().is_some_and(Scalar::is_int) {
                self.r.report(span, None, bad(i, it, "an integer index"));
            }
        }
        let (pt, vt) = (f.ty(ptr), f.ty(value));
        match pt.as_ptr() {
            None => self.r.report(span, None, bad(ptr, pt, "a pointer")),
            Some((space, pointee)) => {
                if space == AddrSpace::Const {
                    self.r.report(span, None, K::StoreToConst);
                }
                if !pointee.is_loadable() {
                    self.r.report(span, None, bad(ptr, pt, "a pointer to a scalar or pointer"));
                } else if pointee.loaded() != *vt {
                    let e = TypeError::Disagree { op: "store", a: ptr, a_ty: pt.clone(), b: value, b_ty: vt.clone() };
                    self.r.report(span, None, K::Store(Box::new(e)));
                }
            }
        }
    }
}

/// The stage rule `op` breaks, if any: `ref` only before lowering, `word`
/// only in `lowered bake`, `patch` only in `lowered patch`; and the names
/// inside `ref` and `patch`.
fn stage_rule(stage: Stage, op: &Op) -> Option<K> {
    let (name, needs) = match op {
        Op::Ref(r) => {
            return match stage {
                Stage::Lowered(stage) => Some(K::RefAfterLowering { stage, path: None }),
                Stage::Source => host_ref_name(r),
            };
        }
        Op::BakedWord(_) => ("word", Strategy::Bake),
        Op::Patch(_) => ("patch", Strategy::Patch),
        _ => return None,
    };
    match stage {
        Stage::Source => Some(K::LoweredOnly { op: name }),
        Stage::Lowered(s) if s != needs => Some(K::WrongStrategy { op: name, needs, stage: s }),
        Stage::Lowered(_) => match op {
            Op::Patch(p) => patch_name(p),
            _ => None,
        },
    }
}
