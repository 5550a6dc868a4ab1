//! Common-subexpression elimination of pure operations ([`super::is_pure`]):
//! a `Let` whose operation and result type equal those of an earlier `Let`
//! in the same block or an enclosing one (which dominates it) is removed and
//! its uses read the earlier value. Loads, `get`, calls and atomics are
//! never merged. Two `ref`s of one host object are merged: they are the same
//! word, whatever it turns out to be.

use super::{PassError, is_pure, map_stmt, renumber_all};
use relok_ir::{Block, Function, Module, Op, StmtKind, Type, Value};
use std::collections::HashMap;

/// Runs CSE on every function; returns how many operations it merged.
pub fn cse(module: &mut Module) -> Result<usize, PassError> {
    let mut n = 0;
    let ids: Vec<_> = module.funcs.keys().collect();
    for id in ids {
        let f = &mut module.funcs[id];
        let mut body = std::mem::take(&mut f.body);
        let mut cx = Cse { f, scopes: vec![HashMap::new()], subst: HashMap::new(), merged: 0 };
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
        self.block(block);
        self.scopes.pop();
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
                StmtKind::If { then_body, else_body, .. } => {
                    self.nested(then_body);
                    self.nested(else_body);
                }
                StmtKind::Loop(body) => self.nested(body),
                _ => {}
            }
            out.push(s);
        }
        *block = out;
    }
}
