//! Loops that end within a few iterations whatever the values, which
//! checked mode does not count against its loop budget (docs/cuda.md and
//! docs/wgpu.md, "Checked mode"): the budget is there to end endless
//! loops, and counting a tree reduction's eight halvings costs an add, a
//! compare and a branch per iteration of a barrier-bound loop.
//!
//! The shape is the halving loop of a reduction, as the text format writes
//! it and as the Rust front end writes `while stride != 0 { …; stride >>=
//! 1; }`:
//!
//! ```text
//! loop {
//!     v = get %k                ; %k an unsigned local, never addressed
//!     ...                       ; constants only
//!     c = eq v, Z | ne v, Z     ; Z the constant 0 (either operand order)
//!     if c { break }            ; (`eq`), or `if c { } else { break }` (`ne`)
//!     ...                       ; no `continue` of this loop
//!     set %k, (shr g, S)        ; once, at this level; the shift and g, a
//!     ...                       ; `get %k`, at this level before it; S a
//!                               ; constant not a multiple of the width
//! }
//! ```
//!
//! `%k` is set nowhere else. Every iteration that does not leave shifts a
//! nonzero `%k` right by at least one bit, so the loop's top runs at most
//! width + 1 times (33 for `u32`, 65 for `u64`); loops inside its body are
//! loops of their own, each counted unless it has this shape too.
//!
//! The doubling loop of a scan (`offset = 1; while offset < dim { …;
//! offset <<= 1; }`) has the same shape with `shl` for `shr`, a `u32`
//! counter, and the test `v < B` (`lt v, B` leaving when false, or `ge v,
//! B` when true) against a value `B` defined before the loop whose range
//! ([`crate::passes::facts::ranges`]) is at most `2^(32 - S)`; the
//! statement right before the loop sets `%k` to a constant of at least 1.
//! Then `%k` is nonzero, below `B` wherever it is shifted, so the shift
//! never wraps, and it at least doubles each iteration: at most 33. The
//! step may also be `select c, (shl g, S), B` (the Rust front end's
//! `doubling(from, below)`, which moves to its bound rather than past it):
//! either it doubles, or it is `B` and the next test leaves.

use relok_ir::{BinaryOp, Block, CmpOp, Function, Op, Scalar, Stmt, StmtKind, Type, Value, VarKind, walk_stmts};
use std::collections::HashMap;

/// Whether the loop whose body is `body` (a loop of `f`) has the shape of
/// the module docs: it ends within [`relok_ir::Scalar`]'s width + 1
/// iterations.
pub(crate) fn ends_within_its_width(f: &Function, body: &Block) -> bool {
    // Constants may come between the `get` and the test (the Rust front
    // end's `0` of `stride != 0`).
    let Some((get, after)) = body.split_first() else { return false };
    let consts = after.iter().take_while(|s| matches!(s.kind, StmtKind::Let { op: Op::Const(_), .. })).count();
    let [test, exit, rest @ ..] = &after[consts..] else { return false };
    let StmtKind::Let { result: v, op: Op::Get(k) } = &get.kind else { return false };
    let width = match &f.vars[*k].ty {
        Type::Scalar(Scalar::U32) => 32,
        Type::Scalar(Scalar::U64) => 64,
        _ => return false,
    };
    if f.vars[*k].kind != VarKind::Local {
        return false;
    }
    // Every value's defining operation (values are SSA), and whether `%k`
    // is addressed, in one walk.
    let (mut defs, mut addressed) = (HashMap::new(), false);
    walk_stmts(&f.body, &mut |s| {
        if let StmtKind::Let { result, op } = &s.kind {
            addressed |= matches!(op, Op::VarAddr(var) if var == k);
            defs.insert(*result, op);
        }
    });
    let def = |x: &Value| defs.get(x).copied();
    let constant = |x: &Value| match def(x) {
        Some(Op::Const(bits)) => Some(*bits),
        _ => None,
    };
    // Leaves exactly when `v == 0` (halving), or when `v >= B` (doubling).
    let StmtKind::Let { result: c, op: Op::Compare(cmp, a, b) } = &test.kind else { return false };
    let StmtKind::If { cond, then_body, else_body } = &exit.kind else { return false };
    let is_break = |b: &Block| matches!(b.as_slice(), [s] if matches!(s.kind, StmtKind::Break));
    let (when_true, when_false) =
        (is_break(then_body) && else_body.is_empty(), then_body.is_empty() && is_break(else_body));
    let zero_and_v = (constant(a) == Some(0) && b == v) || (constant(b) == Some(0) && a == v);
    let halving = zero_and_v && matches!((cmp, when_true, when_false), (CmpOp::Eq, true, _) | (CmpOp::Ne, _, true));
    // `v >= B` leaves: `ge v, B` / `le B, v` when true, `lt v, B` / `gt B, v` when false.
    let bound = match (cmp, a == v, b == v) {
        (CmpOp::Ge, true, false) | (CmpOp::Lt, true, false) => Some(*b),
        (CmpOp::Le, false, true) | (CmpOp::Gt, false, true) => Some(*a),
        _ => None,
    }
    .filter(|_| match cmp {
        CmpOp::Ge | CmpOp::Le => when_true,
        _ => when_false,
    });
    if addressed || cond != c || (!halving && bound.is_none()) || rest.iter().any(crate::wgsl::unroll::may_continue) {
        return false;
    }
    // One `set %k` in the rest, at its top level, of `shr g, S` (`shl`
    // when doubling).
    let mut sets = 0;
    walk_stmts(rest, &mut |s| sets += usize::from(matches!(&s.kind, StmtKind::Set { var, .. } if var == k)));
    let Some((at, step)) = rest.iter().enumerate().find_map(|(at, s)| match &s.kind {
        StmtKind::Set { var, value } if var == k => Some((at, *value)),
        _ => None,
    }) else {
        return false;
    };
    // The shift and the `get` it shifts are this iteration's: defined at
    // this level before the `set` (a `get %k` from before the loop would
    // be the same value every time).
    let this_iteration =
        |x: &Value| x == v || rest[..at].iter().any(|s| matches!(&s.kind, StmtKind::Let { result, .. } if result == x));
    // A doubling may instead move to its bound where the next value would
    // reach it (`select c, (shl g, S), B`: the Rust front end's
    // `doubling(from, below)`, which never wraps): that value leaves at
    // the next test.
    let step = match (def(&step), bound) {
        (Some(&Op::Select(_, x, y)), Some(b)) if y == b && this_iteration(&x) => x,
        _ => step,
    };
    let Some(&Op::Binary(shift, g, s)) = def(&step) else { return false };
    let Some(amount) = constant(&s).map(|s| s % width).filter(|&s| s != 0) else { return false };
    let counted =
        sets == 1 && this_iteration(&step) && this_iteration(&g) && matches!(def(&g), Some(Op::Get(gk)) if gk == k);
    match (halving, bound) {
        (true, _) => counted && shift == BinaryOp::Shr,
        (false, Some(bound)) => {
            counted && shift == BinaryOp::Shl && width == 32 && doubling_ends(f, body, *k, bound, amount, &constant)
        }
        (false, None) => false,
    }
}

/// The doubling loop's conditions beyond its shape (module docs): `bound`
/// defined before the loop, at most `2^(32 - amount)`, and `%k` set to a
/// constant of at least 1 right before the loop.
fn doubling_ends(
    f: &Function,
    body: &Block,
    k: relok_ir::Var,
    bound: Value,
    amount: u64,
    constant: &dyn Fn(&Value) -> Option<u64>,
) -> bool {
    let mut inside = false;
    walk_stmts(body, &mut |s| inside |= matches!(&s.kind, StmtKind::Let { result, .. } if *result == bound));
    let small = crate::passes::facts::ranges(f).get(&bound).is_some_and(|&(_, hi)| hi <= 1u64 << (32 - amount));
    let starts_nonzero = matches!(
        statement_before(&f.body, body).map(|s| &s.kind),
        Some(StmtKind::Set { var, value }) if *var == k && constant(value).is_some_and(|c| c >= 1)
    );
    !inside && small && starts_nonzero
}

/// The statement right before the loop whose body is `body`, in `block`
/// or the blocks nested in it.
fn statement_before<'a>(block: &'a [Stmt], body: &Block) -> Option<&'a Stmt> {
    for (i, s) in block.iter().enumerate() {
        match &s.kind {
            StmtKind::Loop(b) if std::ptr::eq(b, body) => return i.checked_sub(1).map(|j| &block[j]),
            StmtKind::Loop(b) => {
                if let Some(found) = statement_before(b, body) {
                    return Some(found);
                }
            }
            StmtKind::If { then_body, else_body, .. } => {
                if let Some(found) = statement_before(then_body, body).or_else(|| statement_before(else_body, body)) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::ends_within_its_width;
    use relok_ir::{StmtKind, parse};

    /// Whether the first loop of the kernel `src` is proven to end.
    fn kernels_first_loop_ends(src: &str) -> bool {
        let m = parse(src).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
        let f = m.funcs.values().next().expect("a kernel");
        let body = f.body.iter().find_map(|s| match &s.kind {
            StmtKind::Loop(b) => Some(b),
            _ => None,
        });
        ends_within_its_width(f, body.expect("a loop"))
    }

    /// Whether kernel `k`'s first loop has the shape, for `halving` (its
    /// counter's test, exit and step, `%s` the counter).
    fn first_loop_ends(halving: &str) -> bool {
        kernels_first_loop_ends(&format!(
            "kernel @k(v0: ptr<global, u32>, v1: u32) {{\n    local %s: u32\n    local %t: u32\n    v2: u32 = const 0\n    v3: u32 = const 1\n    set %s, v1\n    set %t, v1\n    v11: u32 = get %s\n    loop {{\n{halving}    }}\n    return\n}}\n"
        ))
    }

    #[test]
    fn a_counter_halved_to_zero_ends_the_loop_within_its_width() {
        let eq =
            "        v4: u32 = get %s\n        v5: bool = eq v4, v2\n        if v5 {\n            break\n        }\n";
        let ne = "        v4: u32 = get %s\n        v10: u32 = const 0\n        v5: bool = ne v10, v4\n        if v5 {\n        } else {\n            break\n        }\n";
        let step = "        v6: u32 = get %s\n        v7: u32 = shr v6, v3\n        set %s, v7\n";
        for head in [eq, ne] {
            assert!(first_loop_ends(&format!("{head}{step}")), "{head}");
        }
        // Not proven: a `continue` skipping the step; a shift by 32 (0 mod
        // the width); a left shift; a test against 1; another counter's
        // value; a second set, or a set inside an `if`.
        let cont = "        v8: bool = eq v4, v3\n        if v8 {\n            continue\n        }\n";
        let not = [
            format!("{eq}{cont}{step}"),
            format!(
                "{eq}        v9: u32 = const 32\n        v6: u32 = get %s\n        v7: u32 = shr v6, v9\n        set %s, v7\n"
            ),
            format!("{eq}{}", step.replace("shr", "shl")),
            format!("{}{step}", eq.replace("eq v4, v2", "eq v4, v3")),
            format!("{eq}{}", step.replace("v6: u32 = get %s", "v6: u32 = get %t")),
            // The value of `%s` from before the loop, shifted every time.
            format!("{eq}        v7: u32 = shr v11, v3\n        set %s, v7\n"),
            format!("{eq}{step}        set %s, v2\n"),
            format!(
                "{eq}        v6: u32 = get %s\n        v7: u32 = shr v6, v3\n        if v5 {{\n            set %s, v7\n        }}\n"
            ),
        ];
        for body in not {
            assert!(!first_loop_ends(&body), "{body}");
        }
    }

    /// Whether the doubling loop `offset = start; while offset < bound {
    /// offset <<= shift }` is proven to end (`bound` is defined by
    /// `bound_def`, before the loop).
    fn doubling_ends(start: &str, bound_def: &str, shift: u32) -> bool {
        kernels_first_loop_ends(&format!(
            "kernel @k(v0: ptr<global, u32>, v1: u32) {{\n    local %s: u32\n{bound_def}    v3: u32 = const {start}\n    v4: u32 = const {shift}\n    set %s, v3\n    loop {{\n        v5: u32 = get %s\n        v6: bool = lt v5, v2\n        if v6 {{\n        }} else {{\n            break\n        }}\n        store v0[v5], v5\n        v7: u32 = shl v5, v4\n        set %s, v7\n    }}\n    return\n}}\n"
        ))
    }

    #[test]
    fn a_counter_doubled_from_one_up_to_a_small_bound_ends_the_loop() {
        let dim = "    v2: u32 = block_dim.x\n";
        assert!(doubling_ends("1", dim, 1));
        assert!(doubling_ends("3", "    v2: u32 = const 1048576\n", 4));
        // From 0 it never grows; a bound that may be 2^32 - 1 lets it wrap
        // to 0; 1024 << 23 would wrap; a shift by 32 is by 0.
        assert!(!doubling_ends("0", dim, 1));
        assert!(!doubling_ends("1", "    v2: u32 = add v1, v1\n", 1));
        assert!(!doubling_ends("1", dim, 23));
        assert!(!doubling_ends("1", dim, 32));
    }

    #[test]
    fn a_doubling_that_moves_to_its_bound_instead_of_past_it_ends_too() {
        let dim = "    v2: u32 = block_dim.x\n";
        let select = |to: &str| {
            kernels_first_loop_ends(&format!(
                "kernel @k(v0: ptr<global, u32>, v1: u32) {{\n    local %s: u32\n{dim}    v3: u32 = const 1\n    v4: u32 = const 1\n    set %s, v3\n    loop {{\n        v5: u32 = get %s\n        v6: bool = ge v5, v2\n        if v6 {{\n            break\n        }}\n        v7: u32 = shl v5, v4\n        v8: bool = le v5, v1\n        v9: u32 = select v8, v7, {to}\n        set %s, v9\n        store v0[v5], v5\n    }}\n    return\n}}\n"
            ))
        };
        assert!(select("v2"));
        // Moved anywhere but the bound, it may not leave.
        assert!(!select("v1"));
        assert!(!select("v5"));
    }
}
