//! Full unrolling of loops with a constant trip count, as nvcc does for a
//! small counted loop: the body is repeated once per iteration, each copy
//! with the counter's value as a constant, so folding turns the index
//! arithmetic into constants (matmul's inner `for kk in 0..16`: sixteen
//! multiply-adds whose shared-memory addresses are the thread's base plus
//! a constant offset, against a counter, a compare and a branch each).
//!
//! A loop is unrolled when it has the shape both the text format's counted
//! loops and the Rust front end's `for` over a range have:
//!
//! ```text
//! set %k, C                 ; right before the loop, C a constant
//! loop {
//!     v = get %k
//!     c = <pure operation of v and constants>
//!     if c { break }
//!     ...                   ; one `set %k, x` at this level, x computed
//!     ...                   ; from v and constants alone
//! }
//! ```
//!
//! where `%k` is a scalar local never addressed and set nowhere else in the
//! body (other `get %k`s before the `set` read the same value as `v`: the
//! Rust front end's `for` reads the counter again for its step), and the body has no other `break` or `continue` of this loop
//! (nested loops keep theirs; `return` and `exit` are fine). The trip count
//! is found by running the counter's arithmetic with the IR's own
//! semantics ([`super::fold::eval`]), so it is exact, wrap-around included.
//! Loops of more than [`MAX_TRIPS`] iterations, or whose copies would hold
//! more than [`MAX_STATEMENTS`] statements, stay loops. After the copies,
//! `%k` holds what the loop would have left in it.

use super::fold::eval;
use super::{PassError, renumber_all};
use relok_ir::{Block, Function, Module, Op, Stmt, StmtKind, Type, Value, ValueData, Var, VarKind, walk_stmts};
use std::collections::HashMap;

/// The most iterations a loop is unrolled for.
pub const MAX_TRIPS: usize = 64;

/// The most statements (nested ones included) the copies of one loop may
/// hold together.
pub const MAX_STATEMENTS: usize = 2048;

/// Unrolls every loop of constant trip count (see the module docs) in
/// every function; returns how many loops it unrolled.
pub fn unroll(module: &mut Module) -> Result<usize, PassError> {
    let mut n = 0;
    let ids: Vec<_> = module.funcs.keys().collect();
    for id in ids {
        let f = &mut module.funcs[id];
        let mut body = std::mem::take(&mut f.body);
        let mut consts = HashMap::new();
        let mut addressed = Vec::new();
        walk_stmts(&body, &mut |s| match &s.kind {
            StmtKind::Let { result, op: Op::Const(bits) } => {
                consts.insert(*result, *bits);
            }
            StmtKind::Let { op: Op::VarAddr(v), .. } => addressed.push(*v),
            _ => {}
        });
        n += unroll_block(f, &mut body, &consts, &addressed);
        f.body = body;
    }
    renumber_all(module)?;
    Ok(n)
}

fn unroll_block(f: &mut Function, block: &mut Block, consts: &HashMap<Value, u64>, addressed: &[Var]) -> usize {
    let mut n = 0;
    let mut out: Block = Vec::with_capacity(block.len());
    for mut s in std::mem::take(block) {
        match &mut s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                n += unroll_block(f, then_body, consts, addressed);
                n += unroll_block(f, else_body, consts, addressed);
            }
            StmtKind::Loop(body) => {
                n += unroll_block(f, body, consts, addressed);
                if let Some(copies) = copies(f, out.last(), body, consts, addressed) {
                    out.extend(copies);
                    n += 1;
                    continue;
                }
            }
            _ => {}
        }
        out.push(s);
    }
    *block = out;
    n
}

/// The statements that replace `body`'s loop, when it has a constant trip
/// count (`before` is the statement before the loop).
fn copies(
    f: &mut Function,
    before: Option<&Stmt>,
    body: &Block,
    consts: &HashMap<Value, u64>,
    addressed: &[Var],
) -> Option<Block> {
    // `set %k, C` before the loop; `v = get %k; c = ...; if c { break }`.
    let Some(StmtKind::Set { var: k, value: start }) = before.map(|s| &s.kind) else { return None };
    let mut counter = *consts.get(start)?;
    let [get, test, exit, rest @ ..] = body.as_slice() else { return None };
    let StmtKind::Let { result: v, op: Op::Get(gk) } = &get.kind else { return None };
    let StmtKind::Let { result: c, op: test_op } = &test.kind else { return None };
    let StmtKind::If { cond, then_body, else_body } = &exit.kind else { return None };
    let breaks = matches!(then_body.as_slice(), [b] if matches!(b.kind, StmtKind::Break));
    if gk != k || cond != c || !breaks || !else_body.is_empty() {
        return None;
    }
    if f.vars[*k].kind != VarKind::Local || !matches!(f.vars[*k].ty, Type::Scalar(_)) || addressed.contains(k) {
        return None;
    }
    // One `set %k` in the rest, at its top level; no other way out.
    let top_sets = rest.iter().filter(|s| matches!(s.kind, StmtKind::Set { var, .. } if var == *k)).count();
    let mut all_sets = 0;
    walk_stmts(rest, &mut |s| all_sets += usize::from(matches!(s.kind, StmtKind::Set { var, .. } if var == *k)));
    if top_sets != 1 || all_sets != 1 || leaves(rest) {
        return None;
    }
    let mut size = 0;
    walk_stmts(rest, &mut |_| size += 1);
    // A `get %k` before the `set` (the Rust front end reads the counter
    // again for the step) reads what `v` holds.
    let set_at = rest.iter().position(|s| matches!(s.kind, StmtKind::Set { var, .. } if var == *k))?;
    let mut aliases = vec![*v];
    walk_stmts(&rest[..set_at], &mut |s| {
        if let StmtKind::Let { result, op: Op::Get(g) } = &s.kind
            && g == k
        {
            aliases.push(*result);
        }
    });

    // The counter's values, iteration by iteration, by the IR's semantics.
    let mut values = Vec::new();
    loop {
        let mut known = consts.clone();
        known.extend(aliases.iter().map(|&a| (a, counter)));
        if eval(f, test_op, *c, &known)? != 0 {
            break;
        }
        if values.len() == MAX_TRIPS || (values.len() + 1) * size > MAX_STATEMENTS {
            return None;
        }
        values.push(counter);
        let mut next = None;
        for s in rest {
            match &s.kind {
                StmtKind::Let { result, op } => {
                    if let Some(bits) = eval(f, op, *result, &known) {
                        known.insert(*result, bits);
                    }
                }
                StmtKind::Set { var, value } if var == k => next = known.get(value).copied(),
                _ => {}
            }
        }
        counter = next?;
    }

    // One copy of the rest per iteration, `v` the iteration's constant and
    // `c` false, every value it defines a new one.
    let mut out = Vec::new();
    for bits in values {
        let mut map = HashMap::new();
        for (old, c_bits) in [(*v, bits), (*c, 0)] {
            let new = f.values.push(ValueData { ty: f.values[old].ty.clone() });
            out.push(Stmt::new(StmtKind::Let { result: new, op: Op::Const(c_bits) }));
            map.insert(old, new);
        }
        let mut copy = rest.to_vec();
        let mut defined = Vec::new();
        walk_stmts(&copy, &mut |s| {
            if let StmtKind::Let { result, .. } = &s.kind {
                defined.push(*result);
            }
        });
        for old in defined {
            let new = f.values.push(ValueData { ty: f.values[old].ty.clone() });
            map.insert(old, new);
        }
        super::map_block(&mut copy, &mut |x| map.get(&x).copied().unwrap_or(x), true);
        // The counter's other reads before the `set` are the constant too.
        let copied: Vec<Value> = aliases[1..].iter().map(|a| map[a]).collect();
        relok_ir::walk_stmts_mut(&mut copy, &mut |s| {
            if let StmtKind::Let { result, op } = &mut s.kind
                && copied.contains(result)
            {
                *op = Op::Const(bits);
            }
        });
        out.extend(copy);
    }
    Some(out)
}

/// Whether `block` (a loop's body) has a `break` or `continue` of that loop
/// (nested loops' own are theirs).
fn leaves(block: &[Stmt]) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Break | StmtKind::Continue => true,
        StmtKind::If { then_body, else_body, .. } => leaves(then_body) || leaves(else_body),
        _ => false,
    })
}
