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

use relok_ir::{BinaryOp, Block, CmpOp, Function, Op, Scalar, Stmt, StmtKind, Type, Value, VarKind, walk_stmts};

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
    let (def, mut addressed) = (definitions(f), false);
    walk_stmts(&f.body, &mut |s| {
        addressed |= matches!(&s.kind, StmtKind::Let { op: Op::VarAddr(var), .. } if var == k);
    });
    let constant = |x: &Value| match def(x) {
        Some(Op::Const(bits)) => Some(bits),
        _ => None,
    };
    // Leaves exactly when `v == 0`.
    let StmtKind::Let { result: c, op: Op::Compare(cmp, a, b) } = &test.kind else { return false };
    let zero_and_v = (constant(a) == Some(0) && b == v) || (constant(b) == Some(0) && a == v);
    let StmtKind::If { cond, then_body, else_body } = &exit.kind else { return false };
    let is_break = |b: &Block| matches!(b.as_slice(), [s] if matches!(s.kind, StmtKind::Break));
    let leaves_at_zero = match cmp {
        CmpOp::Eq => is_break(then_body) && else_body.is_empty(),
        CmpOp::Ne => then_body.is_empty() && is_break(else_body),
        _ => false,
    };
    if addressed || cond != c || !zero_and_v || !leaves_at_zero || continues(rest) {
        return false;
    }
    // One `set %k` in the rest, at its top level, of `shr g, S`.
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
    let Some(Op::Binary(BinaryOp::Shr, g, s)) = def(&step) else { return false };
    sets == 1
        && this_iteration(&step)
        && this_iteration(&g)
        && matches!(def(&g), Some(Op::Get(gk)) if gk == *k)
        && constant(&s).is_some_and(|s| s % width != 0)
}

/// The operation defining each value of `f` (values are SSA).
fn definitions(f: &Function) -> impl Fn(&Value) -> Option<Op> + '_ {
    move |v: &Value| {
        let mut found = None;
        walk_stmts(&f.body, &mut |s| {
            if let StmtKind::Let { result, op } = &s.kind
                && result == v
            {
                found = Some(op.clone());
            }
        });
        found
    }
}

/// Whether `block` continues the loop it is the body of (a `continue` not
/// inside a loop of its own).
fn continues(block: &[Stmt]) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Continue => true,
        StmtKind::If { then_body, else_body, .. } => continues(then_body) || continues(else_body),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::ends_within_its_width;
    use relok_ir::{StmtKind, parse};

    /// Whether kernel `k`'s first loop has the shape, for `halving` (its
    /// counter's start, test, exit and step, `%s` the counter).
    fn first_loop_ends(halving: &str) -> bool {
        let src = format!(
            "kernel @k(v0: ptr<global, u32>, v1: u32) {{\n    local %s: u32\n    local %t: u32\n    v2: u32 = const 0\n    v3: u32 = const 1\n    set %s, v1\n    set %t, v1\n    v11: u32 = get %s\n    loop {{\n{halving}    }}\n    return\n}}\n"
        );
        let m = parse(&src).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
        let f = m.funcs.values().next().expect("a kernel");
        let body = f.body.iter().find_map(|s| match &s.kind {
            StmtKind::Loop(b) => Some(b),
            _ => None,
        });
        ends_within_its_width(f, body.expect("a loop"))
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
}
