//! Dead-code elimination: removes `Let`s of pure operations (and `get`)
//! whose result is unused, until none is left; statements after a `break`,
//! `continue`, `return` or `exit` in the same block (unreachable); and `if`s
//! with two empty branches. Stores, atomics, calls, barriers, `exit`, `set`
//! and loads (which may fault) are kept.

use super::{PassError, for_each_use, is_pure, renumber_all};
use relok_ir::{Block, Module, Op, StmtKind, Value};
use std::collections::HashSet;

/// Runs DCE on every function; returns how many statements it removed.
pub fn dce(module: &mut Module) -> Result<usize, PassError> {
    let mut n = 0;
    let ids: Vec<_> = module.funcs.keys().collect();
    for id in ids {
        let f = &mut module.funcs[id];
        loop {
            let mut used = HashSet::new();
            for_each_use(&f.body, &mut |v| {
                used.insert(v);
            });
            let removed = sweep(&mut f.body, &used);
            n += removed;
            if removed == 0 {
                break;
            }
        }
    }
    renumber_all(module)?;
    Ok(n)
}

fn removable(op: &Op) -> bool {
    is_pure(op) || matches!(op, Op::Get(_))
}

fn sweep(block: &mut Block, used: &HashSet<Value>) -> usize {
    let mut n = 0;
    if let Some(end) = block
        .iter()
        .position(|s| matches!(s.kind, StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) | StmtKind::Exit))
    {
        n += block.len() - (end + 1);
        block.truncate(end + 1);
    }
    let before = block.len();
    block.retain_mut(|s| match &mut s.kind {
        StmtKind::Let { result, op } => !removable(op) || used.contains(result),
        StmtKind::If { then_body, else_body, .. } => {
            n += sweep(then_body, used) + sweep(else_body, used);
            !(then_body.is_empty() && else_body.is_empty())
        }
        StmtKind::Loop(body) => {
            n += sweep(body, used);
            true
        }
        _ => true,
    });
    n + before - block.len()
}
