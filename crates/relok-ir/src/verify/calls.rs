//! The call graph: direct callees, recursion (cycles are errors), the order
//! callees-before-callers, and the facts [`super::ModuleInfo`] carries.

use super::FunctionInfo;
use super::error::{Reporter, VerifyError, VerifyErrorKind as K};
use crate::entity::EntityRef;
use crate::ir::{FuncId, Module, Op, StmtKind, walk_stmts};

/// Direct callees of every function (existing handles only), sorted and
/// without duplicates, and whether it has a `barrier` itself.
pub(super) fn direct(m: &Module) -> Vec<(Vec<FuncId>, bool)> {
    m.funcs
        .values()
        .map(|f| {
            let mut callees = Vec::new();
            let mut barrier = false;
            walk_stmts(&f.body, &mut |s| match &s.kind {
                StmtKind::Call(g, _) | StmtKind::Let { op: Op::Call(g, _), .. } if m.funcs.contains(*g) => {
                    callees.push(*g);
                }
                StmtKind::Barrier => barrier = true,
                _ => {}
            });
            callees.sort_unstable();
            callees.dedup();
            (callees, barrier)
        })
        .collect()
}

/// Reports every cycle (one per back edge of a depth-first search in
/// function order) and returns the functions in post-order: callees before
/// callers.
pub(super) fn order(m: &Module, graph: &[(Vec<FuncId>, bool)], errors: &mut Vec<VerifyError>) -> Vec<FuncId> {
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let n = graph.len();
    let mut state = vec![NEW; n];
    let mut order = Vec::with_capacity(n);
    // (function, next callee to visit)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if state[root] != NEW {
            continue;
        }
        state[root] = OPEN;
        stack.push((root, 0));
        while let Some(&(f, i)) = stack.last() {
            let Some(&g) = graph[f].0.get(i) else {
                state[f] = DONE;
                order.push(FuncId::new(f));
                stack.pop();
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            match state[g.index()] {
                NEW => {
                    state[g.index()] = OPEN;
                    stack.push((g.index(), 0));
                }
                OPEN => {
                    let start = stack.iter().position(|&(h, _)| h == g.index()).unwrap_or(0);
                    let name = |h: usize| m.funcs.get(FuncId::new(h)).map(|x| x.name.clone()).unwrap_or_default();
                    let mut cycle: Vec<String> = stack[start..].iter().map(|&(h, _)| name(h)).collect();
                    cycle.push(name(g.index()));
                    let first = &m.funcs[g];
                    let mut r = Reporter { errors: &mut *errors, func: Some(&first.name) };
                    r.report(first.span, None, K::Recursion(cycle));
                }
                _ => {}
            }
        }
    }
    order
}

/// Per-function facts, given the callees-first `order` (of an acyclic graph).
pub(super) fn infos(m: &Module, graph: Vec<(Vec<FuncId>, bool)>, order: &[FuncId]) -> Vec<FunctionInfo> {
    let mut infos: Vec<FunctionInfo> = graph
        .into_iter()
        .zip(m.funcs.values())
        .map(|((callees, barrier), f)| FunctionInfo {
            uses_barrier: barrier,
            callees,
            shared_bytes: if f.is_kernel() { super::rules::shared_bytes(f).unwrap_or(0) } else { 0 },
        })
        .collect();
    for &f in order {
        let i = f.index();
        let via_callee = infos[i].callees.iter().any(|g| infos[g.index()].uses_barrier);
        infos[i].uses_barrier |= via_callee;
    }
    infos
}
