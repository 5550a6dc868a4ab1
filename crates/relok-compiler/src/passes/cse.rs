//! Common-subexpression elimination of pure operations ([`super::is_pure`]):
//! a `Let` whose operation and result type equal those of an earlier `Let`
//! in the same block or an enclosing one (which dominates it) is removed and
//! its uses read the earlier value. Loads, calls and atomics are never
//! merged. Two `ref`s of one host object are merged: they are the same
//! word, whatever it turns out to be.
//!
//! A `get %x` of a `local` never addressed reads what an earlier `get %x`
//! or `set %x, v` that dominates it left, when nothing between them may
//! set `%x`: a `set` inside an `if` or a loop ends what is known of `%x`
//! after it, and a loop that sets `%x` anywhere starts knowing nothing of
//! it (its second iteration may read another value). So the Rust front
//! end's repeated reads of a loop counter are one value, which the guards
//! on it then speak of (`if t >= offset { buf[t - offset] }`).

use super::{PassError, is_pure, map_stmt, renumber_all};
use relok_ir::{Block, EntityRef, Function, Module, Op, StmtKind, Type, Value, Var, VarKind, walk_stmts};
use std::collections::HashMap;

/// Runs CSE on every function; returns how many operations it merged.
pub fn cse(module: &mut Module) -> Result<usize, PassError> {
    let mut n = 0;
    let ids: Vec<_> = module.funcs.keys().collect();
    for id in ids {
        let f = &mut module.funcs[id];
        let mut body = std::mem::take(&mut f.body);
        let mut forwardable: Vec<bool> = f.vars.iter().map(|(_, d)| d.kind == VarKind::Local).collect();
        walk_stmts(&body, &mut |s| {
            if let StmtKind::Let { op: Op::VarAddr(v), .. } = &s.kind {
                forwardable[v.index()] = false;
            }
        });
        let mut cx = Cse {
            f,
            scopes: vec![HashMap::new()],
            reads: vec![HashMap::new()],
            forwardable,
            subst: HashMap::new(),
            merged: 0,
        };
        cx.block(&mut body);
        n += cx.merged;
        f.body = body;
    }
    renumber_all(module)?;
    Ok(n)
}

struct Cse<'f> {
    f: &'f Function,
    /// Available expressions, innermost block last.
    scopes: Vec<HashMap<(Op, Type), Value>>,
    /// What each forwardable local holds, as far as known, innermost
    /// block last.
    reads: Vec<HashMap<Var, Value>>,
    /// The locals never addressed, by index.
    forwardable: Vec<bool>,
    /// Removed value → the value that replaces it.
    subst: HashMap<Value, Value>,
    merged: usize,
}

impl Cse<'_> {
    fn lookup(&self, key: &(Op, Type)) -> Option<Value> {
        self.scopes.iter().rev().find_map(|s| s.get(key).copied())
    }

    fn nested(&mut self, block: &mut Block) {
        self.scopes.push(HashMap::new());
        self.reads.push(HashMap::new());
        self.block(block);
        self.reads.pop();
        self.scopes.pop();
    }

    /// Forgets what is known of every local `stmts` may set.
    fn forget_sets(&mut self, stmts: &[relok_ir::Stmt]) {
        let mut set = Vec::new();
        walk_stmts(stmts, &mut |s| {
            if let StmtKind::Set { var, .. } = s.kind {
                set.push(var);
            }
        });
        for scope in &mut self.reads {
            scope.retain(|v, _| !set.contains(v));
        }
    }

    fn known_read(&self, var: Var) -> Option<Value> {
        self.reads.iter().rev().find_map(|s| s.get(&var).copied())
    }

    fn block(&mut self, block: &mut Block) {
        let mut out = Vec::with_capacity(block.len());
        for mut s in std::mem::take(block) {
            let subst = &self.subst;
            map_stmt(&mut s, &mut |v| subst.get(&v).copied().unwrap_or(v), false);
            match &mut s.kind {
                StmtKind::Let { result, op } if is_pure(op) => {
                    let key = (op.clone(), self.f.ty(*result).clone());
                    if let Some(earlier) = self.lookup(&key) {
                        self.subst.insert(*result, earlier);
                        self.merged += 1;
                        continue;
                    }
                    if let Some(scope) = self.scopes.last_mut() {
                        scope.insert(key, *result);
                    }
                }
                StmtKind::Let { result, op: Op::Get(var) } if self.forwardable[var.index()] => {
                    if let Some(earlier) = self.known_read(*var) {
                        self.subst.insert(*result, earlier);
                        self.merged += 1;
                        continue;
                    }
                    if let Some(scope) = self.reads.last_mut() {
                        scope.insert(*var, *result);
                    }
                }
                StmtKind::Set { var, value } if self.forwardable[var.index()] => {
                    if let Some(scope) = self.reads.last_mut() {
                        scope.insert(*var, *value);
                    }
                }
                StmtKind::If { then_body, else_body, .. } => {
                    self.nested(then_body);
                    self.nested(else_body);
                }
                StmtKind::Loop(body) => {
                    self.forget_sets(body);
                    self.nested(body);
                    self.forget_sets(body);
                }
                _ => {}
            }
            if matches!(s.kind, StmtKind::If { .. }) {
                self.forget_sets(std::slice::from_ref(&s));
            }
            out.push(s);
        }
        *block = out;
    }
}
