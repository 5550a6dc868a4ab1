//! Tests of the optimisation passes: the structure of their output. That
//! the cpu device computes the same before and after is checked in
//! relok-runtime's `tests/compiler_run.rs` (the compiler does not depend on
//! the runtime).

use super::*;
use relok_ir::{CmpOp, HostRef, Module, Op, StmtKind, walk_stmts};
use std::collections::HashMap;

fn parse(src: &str) -> Module {
    let m = relok_ir::parse(src).expect("parses");
    relok_ir::verify(&m).expect("verifies");
    m
}

fn optimized(src: &str) -> (Module, PassStats) {
    let mut m = parse(src);
    let stats = optimize(&mut m).expect("optimises");
    relok_ir::verify(&m).expect("output verifies");
    (m, stats)
}

/// Every operation of kernel `k`, in text order.
fn ops(m: &Module, k: &str) -> Vec<Op> {
    let f = &m.funcs[m.func_by_name(k).expect("kernel")];
    let mut out = Vec::new();
    walk_stmts(&f.body, &mut |s| {
        if let StmtKind::Let { op, .. } = &s.kind {
            out.push(op.clone());
        }
    });
    out
}

fn count(m: &Module, k: &str, pred: impl Fn(&Op) -> bool) -> usize {
    ops(m, k).iter().filter(|o| pred(o)).count()
}

#[test]
fn symbol_comparisons_survive_optimisation() {
    // docs/design.md §8: a symbol's word is unknown until load; nothing may fold it.
    let src = "kernel @classify(v0: word, v1: ptr<global, i32>) {
    v2: word = ref :foo
    v3: word = ref :bar
    v4: i32 = const 1
    v5: i32 = const 2
    v6: i32 = const -1
    v7: bool = eq v0, v2
    v8: bool = eq v0, v3
    v9: i32 = select v8, v5, v6
    v10: i32 = select v7, v4, v9
    v11: u32 = const 0
    store v1[v11], v10
    return
}";
    let (m, _) = optimized(src);
    let refs = |name: &str| count(&m, "classify", |o| matches!(o, Op::Ref(HostRef::Symbol(s)) if s == name));
    assert_eq!(refs("foo"), 1);
    assert_eq!(refs("bar"), 1);
    assert_eq!(count(&m, "classify", |o| matches!(o, Op::Compare(CmpOp::Eq, ..))), 2);
    assert_eq!(count(&m, "classify", |o| matches!(o, Op::Select(..))), 2);
    // The stored value is not a constant.
    let f = &m.funcs[m.func_by_name("classify").expect("kernel")];
    let mut stored = None;
    walk_stmts(&f.body, &mut |s| {
        if let StmtKind::Store { value, .. } = s.kind {
            stored = Some(value);
        }
    });
    let stored = stored.expect("a store");
    let mut def = None;
    walk_stmts(&f.body, &mut |s| {
        if let StmtKind::Let { result, op } = &s.kind
            && *result == stored
        {
            def = Some(op.clone());
        }
    });
    assert!(matches!(def, Some(Op::Select(..))), "stored {def:?}");
}

#[test]
fn word_ops_with_constant_looking_operands_stay() {
    // eq of two refs to the same symbol is still not folded (CSE merges the
    // refs, the comparison stays), nor is a bitcast of a word.
    let src = "kernel @k(v0: ptr<global, u64>) {
    v1: word = ref :foo
    v2: word = ref :foo
    v3: bool = eq v1, v2
    v4: u64 = bitcast v1
    v5: u64 = const 0
    v6: u64 = select v3, v4, v5
    v7: u32 = const 0
    store v0[v7], v6
    return
}";
    let (m, stats) = optimized(src);
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Ref(_))), 1);
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Compare(CmpOp::Eq, ..))), 1);
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Bitcast(_))), 1);
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Select(..))), 1);
    assert_eq!(stats.cse, 1);
    assert_eq!(stats.folded, 0);
}

fn stored_const(src: &str) -> u64 {
    let (m, _) = optimized(src);
    let f = &m.funcs[m.func_by_name("k").expect("k")];
    let mut consts = HashMap::new();
    let mut stored = None;
    walk_stmts(&f.body, &mut |s| match &s.kind {
        StmtKind::Let { result, op: Op::Const(b) } => {
            consts.insert(*result, *b);
        }
        StmtKind::Let { .. } => panic!("not folded:\n{}", relok_ir::print(&m)),
        StmtKind::Store { value, .. } => stored = Some(consts[value]),
        _ => {}
    });
    stored.expect("a store")
}

fn binop_kernel(ty: &str, op: &str, a: &str, b: &str) -> String {
    format!(
        "kernel @k(v0: ptr<global, {ty}>) {{
    v1: {ty} = const {a}
    v2: {ty} = const {b}
    v3: {ty} = {op} v1, v2
    v4: u32 = const 0
    store v0[v4], v3
    return
}}"
    )
}

#[test]
fn folding_follows_ir_semantics() {
    assert_eq!(stored_const(&binop_kernel("i32", "add", "2", "3")), 5);
    assert_eq!(stored_const(&binop_kernel("i32", "div", "7", "0")), 0);
    assert_eq!(stored_const(&binop_kernel("i32", "rem", "7", "0")), 7);
    let min = u64::from(i32::MIN as u32);
    assert_eq!(stored_const(&binop_kernel("i32", "div", "-2147483648", "-1")), min);
    assert_eq!(stored_const(&binop_kernel("i32", "rem", "-2147483648", "-1")), 0);
    assert_eq!(stored_const(&binop_kernel("u32", "shl", "1", "33")), 2);
    // Float NaN: minNum returns the other operand; 0/0 is NaN.
    let three = u64::from(3.0f32.to_bits());
    assert_eq!(stored_const(&binop_kernel("f32", "min", "nan", "3.0")), three);
    let q = stored_const(&binop_kernel("f32", "div", "0.0", "0.0"));
    assert!(f32::from_bits(q as u32).is_nan());
    // Saturating float → int, NaN → 0, and NaN compares unequal.
    let conv = |x: &str| {
        stored_const(&format!(
            "kernel @k(v0: ptr<global, i32>) {{
    v1: f32 = const {x}
    v2: i32 = convert v1
    v3: u32 = const 0
    store v0[v3], v2
    return
}}"
        ))
    };
    assert_eq!(conv("nan"), 0);
    assert_eq!(conv("1e20"), u64::from(i32::MAX as u32));
    assert_eq!(conv("-2.7"), u64::from((-2i32) as u32));
    let nan_eq = stored_const(
        "kernel @k(v0: ptr<global, bool>) {
    v1: f32 = const nan
    v2: bool = eq v1, v1
    v3: u32 = const 0
    store v0[v3], v2
    return
}",
    );
    assert_eq!(nan_eq, 0);
}

#[test]
fn constant_operations_fold_completely() {
    // The same cases run on the cpu device in relok-runtime's
    // tests/compiler_run.rs.
    let cases = [
        ("i32", "div", "-7", "2"),
        ("i32", "rem", "-7", "2"),
        ("i32", "shr", "-8", "33"),
        ("u32", "shr", "4294967288", "1"),
        ("i64", "mul", "9223372036854775807", "2"),
        ("f32", "max", "1.5", "nan"),
        ("f64", "rem", "-7.5", "2.0"),
        ("u64", "sub", "0", "1"),
    ];
    for (ty, op, a, b) in cases {
        let (after, _) = optimized(&binop_kernel(ty, op, a, b));
        assert_eq!(count(&after, "k", |o| !matches!(o, Op::Const(_))), 0, "{ty} {op}");
    }
}

/// `kernel @k(v0: ptr<global, TY>, v1: TY)` storing `v1`-based `lets`'
/// last value, `d`.
fn difference(ty: &str, lets: &str) -> String {
    format!("kernel @k(v0: ptr<global, {ty}>, v1: {ty}) {{\n{lets}    v20: u32 = const 0\n    store v0[v20], vd\n    return\n}}")
        .replace("vd", "v19")
}

#[test]
fn differences_of_one_value_plus_constants_fold_exactly() {
    // `(a + 3) - a`: a sub-slice's length; `(a + 4) - (a + 1)`; `(a - 2) -
    // (5 + a)` wraps as integers do; `(a + 1 + 2) - a` through two adds.
    let cases = [
        ("u32", "    v2: u32 = const 3\n    v3: u32 = add v1, v2\n    v19: u32 = sub v3, v1\n", 3u64),
        (
            "u32",
            "    v2: u32 = const 4\n    v3: u32 = const 1\n    v4: u32 = add v1, v2\n    v5: u32 = add v1, v3\n    v19: u32 = sub v4, v5\n",
            3,
        ),
        (
            "u32",
            "    v2: u32 = const 2\n    v3: u32 = const 5\n    v4: u32 = sub v1, v2\n    v5: u32 = add v3, v1\n    v19: u32 = sub v4, v5\n",
            u64::from(u32::MAX - 6),
        ),
        (
            "i64",
            "    v2: i64 = const 1\n    v3: i64 = const 2\n    v4: i64 = add v1, v2\n    v5: i64 = add v4, v3\n    v19: i64 = sub v5, v1\n",
            3,
        ),
    ];
    for (ty, lets, want) in cases {
        assert_eq!(stored_const(&difference(ty, lets)), want, "{lets}");
    }
    // Not folded: floats (rounding), and two different bases.
    for (ty, lets) in [
        ("f32", "    v2: f32 = const 3.0\n    v3: f32 = add v1, v2\n    v19: f32 = sub v3, v1\n"),
        (
            "u32",
            "    v2: u32 = const 3\n    v3: u32 = add v1, v2\n    v4: u32 = mul v1, v2\n    v19: u32 = sub v3, v4\n",
        ),
    ] {
        let (m, _) = optimized(&difference(ty, lets));
        assert_eq!(count(&m, "k", |o| matches!(o, Op::Binary(relok_ir::BinaryOp::Sub, ..))), 1, "{lets}");
    }
}

#[test]
fn if_on_a_constant_keeps_the_taken_branch() {
    let src = "kernel @k(v0: ptr<global, u32>) {
    v1: bool = const true
    v2: u32 = const 0
    if v1 {
        v3: u32 = const 11
        store v0[v2], v3
    } else {
        v4: u32 = const 22
        store v0[v2], v4
    }
    return
}";
    let (m, stats) = optimized(src);
    assert!(stats.folded >= 1);
    let f = &m.funcs[m.func_by_name("k").expect("k")];
    let mut ifs = 0;
    walk_stmts(&f.body, &mut |s| ifs += usize::from(matches!(s.kind, StmtKind::If { .. })));
    assert_eq!(ifs, 0);
    assert!(ops(&m, "k").contains(&Op::Const(11)));
    assert!(!ops(&m, "k").contains(&Op::Const(22)));
}

#[test]
fn cse_merges_pure_ops_and_refs_but_not_loads() {
    let src = "kernel @k(v0: ptr<global, u32>, v1: ptr<global, u64>) {
    v2: u32 = thread_id.x
    v3: u32 = add v2, v2
    v4: u32 = add v2, v2
    v5: u32 = load v0[v2]
    v6: u32 = load v0[v2]
    v7: u32 = add v3, v4
    v8: u32 = add v5, v6
    v9: u32 = add v7, v8
    store v0[v2], v9
    v10: word = ref :foo
    v11: word = ref :foo
    v12: u64 = bitcast v10
    v13: u64 = bitcast v11
    v14: bool = eq v12, v13
    v15: u64 = convert v14
    store v1[v2], v15
    return
}";
    let (m, stats) = optimized(src);
    assert!(stats.cse >= 3, "{stats:?}");
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Ref(_))), 1);
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Load { .. })), 2);
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Binary(relok_ir::BinaryOp::Add, a, b) if a == b)), 2);
    // The compare of a word's bits with itself is not folded either.
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Compare(..))), 1);
}

#[test]
fn dce_removes_unused_pure_values_and_keeps_effects() {
    let src = "kernel @k(v0: ptr<global, u32>) {
    local %x: u32
    v1: u32 = thread_id.x
    v2: u32 = mul v1, v1
    v3: u32 = add v2, v1
    v4: u32 = const 1
    v5: u32 = atomic.add v0[v4], v4
    v6: u32 = get %x
    v7: word = ref :unused
    store v0[v1], v1
    return
}";
    let (m, stats) = optimized(src);
    assert!(stats.removed >= 4, "{stats:?}");
    let o = ops(&m, "k");
    assert!(o.iter().any(|o| matches!(o, Op::Atomic { .. })));
    assert!(!o.iter().any(|o| matches!(o, Op::Binary(..) | Op::Get(_) | Op::Ref(_))));
    let f = &m.funcs[m.func_by_name("k").expect("k")];
    let mut stores = 0;
    walk_stmts(&f.body, &mut |s| stores += usize::from(matches!(s.kind, StmtKind::Store { .. })));
    assert_eq!(stores, 1);
}

/// Device functions that return early from loops and `if`s, called from a
/// kernel in a loop (shared with the cpu-device comparison in
/// relok-runtime's `tests/compiler_run.rs`).
const INLINE_SRC: &str = include_str!("../../tests/inputs/inline_early_returns.rk");

#[test]
fn inlining_handles_early_returns_and_removes_device_functions() {
    let (after, _) = optimized(INLINE_SRC);
    assert_eq!(after.funcs.len(), 1, "only the kernel remains:\n{}", relok_ir::print(&after));
    assert_eq!(count(&after, "k", |o| matches!(o, Op::Call(..))), 0);
    let mut m = parse(INLINE_SRC);
    assert_eq!(inline(&mut m).expect("inlines"), 4);
    relok_ir::verify(&m).expect("inlined module verifies");
}

#[test]
fn inlining_keeps_imports() {
    let src = "import fn @ext(v0: u32) -> u32

fn @wrap(v0: u32) -> u32 {
    v1: u32 = call @ext(v0)
    return v1
}

kernel @k(v0: ptr<global, u32>) {
    v1: u32 = thread_id.x
    v2: u32 = call @wrap(v1)
    store v0[v1], v2
    return
}";
    let (m, stats) = optimized(src);
    assert_eq!(stats.inlined, 1);
    assert_eq!(m.funcs.len(), 2);
    let ext = m.func_by_name("ext").expect("import kept");
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Call(f, _) if *f == ext)), 1);
}

#[test]
fn renumbering_is_canonical() {
    // parse(print(m)) == m holds only when values are numbered in order.
    let (m, _) = optimized(INLINE_SRC);
    let text = relok_ir::print(&m);
    assert_eq!(relok_ir::parse(&text).expect("reparses"), m);
}

/// The statements of kernel `k` (nested ones included) that `pred` holds for.
fn stmts(m: &Module, k: &str, pred: impl Fn(&StmtKind) -> bool) -> usize {
    let f = &m.funcs[m.func_by_name(k).expect("kernel")];
    let mut n = 0;
    walk_stmts(&f.body, &mut |s| n += usize::from(pred(&s.kind)));
    n
}

/// The `if`s of kernel `k`.
fn ifs(m: &Module, k: &str) -> usize {
    stmts(m, k, |s| matches!(s, StmtKind::If { .. }))
}

#[test]
fn a_dominating_guard_decides_the_checks_it_implies() {
    // Rust's `if i < len { x[i] = x[i] + 1 }`: both bounds checks (`ge i,
    // len`, failing with `exit`) go; the guard stays.
    let guarded = "kernel @k(v0: u32, v1: ptr<global, u32>, v2: u32) {
    v3: bool = lt v0, v2
    if v3 {
        v4: bool = ge v0, v2
        if v4 {
            exit
        }
        v5: u32 = load v1[v0]
        v6: bool = le v2, v0
        if v6 {
            exit
        }
        v7: u32 = const 1
        v8: u32 = add v5, v7
        store v1[v0], v8
    }
    return
}
";
    let (m, _) = optimized(guarded);
    assert_eq!(ifs(&m, "k"), 1, "{}", relok_ir::print(&m));
    // Without the guard the first check stays and decides the second (the
    // rest of the block runs only where it failed to fire).
    let unguarded = "kernel @k(v0: u32, v1: ptr<global, u32>, v2: u32) {
    v3: bool = ge v0, v2
    if v3 {
        exit
    }
    v4: u32 = load v1[v0]
    v5: bool = ge v0, v2
    if v5 {
        exit
    }
    store v1[v0], v4
    return
}
";
    let (m, _) = optimized(unguarded);
    assert_eq!(ifs(&m, "k"), 1, "{}", relok_ir::print(&m));
    // A fact learnt inside a branch ends with it.
    let scoped = "kernel @k(v0: u32, v1: ptr<global, u32>, v2: u32, v3: bool) {
    if v3 {
        v4: bool = ge v0, v2
        if v4 {
            exit
        }
    }
    v5: bool = ge v0, v2
    if v5 {
        exit
    }
    store v1[v0], v0
    return
}
";
    let (m, _) = optimized(scoped);
    assert_eq!(ifs(&m, "k"), 3, "{}", relok_ir::print(&m));
}

#[test]
fn floats_are_not_decided_by_a_negation_nor_words_by_another_comparison() {
    // `lt a, b` false does not make `ge a, b` true for floats (NaN).
    let float = "kernel @k(v0: f32, v1: f32, v2: ptr<global, u32>) {
    v3: bool = lt v0, v1
    if v3 {
        exit
    }
    v4: bool = ge v0, v1
    if v4 {
        v5: u32 = const 1
        store v2, v5
    }
    v6: bool = gt v1, v0
    if v6 {
        v7: u32 = const 2
        store v2, v7
    }
    return
}
";
    let (m, _) = optimized(float);
    // The second `if` stays; the third is the first's comparison swapped:
    // known false, gone.
    assert_eq!(ifs(&m, "k"), 2, "{}", relok_ir::print(&m));
    let words = "kernel @k(v0: word, v1: word, v2: ptr<global, u32>) {
    v3: bool = eq v0, v1
    if v3 {
        exit
    }
    v4: bool = eq v0, v1
    if v4 {
        v5: u32 = const 1
        store v2, v5
    }
    return
}
";
    let (m, _) = optimized(words);
    // CSE merges the comparisons; the one `bool` is then known false
    // after the `if` that exits on it (control flow, not the words'
    // values), but the comparison of the words stays.
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Compare(CmpOp::Eq, ..))), 1, "{}", relok_ir::print(&m));
    assert_eq!(ifs(&m, "k"), 1, "{}", relok_ir::print(&m));
    // Another comparison of the same words is not decided by it.
    let other = words.replace("v4: bool = eq v0, v1", "v4: bool = ne v0, v1");
    let (m, _) = optimized(&other);
    assert_eq!(ifs(&m, "k"), 2, "{}", relok_ir::print(&m));
}

/// The `loop`s of kernel `k`.
fn loops(m: &Module, k: &str) -> usize {
    stmts(m, k, |s| matches!(s, StmtKind::Loop(_)))
}

/// `acc += x[i]` for `i` from `start` while `i <cmp> end`, by `step`.
fn counted(start: &str, cmp: &str, end: &str, step: &str, extra: &str) -> String {
    format!(
        "kernel @k(v0: ptr<global, u32>, v1: u32) {{
    local %i: u32
    local %acc: u32
    v2: u32 = const {start}
    v3: u32 = const {end}
    v4: u32 = const {step}
    set %acc, v2
    set %i, v2
    loop {{
        v5: u32 = get %i
        v6: bool = {cmp} v5, v3
        if v6 {{
            break
        }}
{extra}        v7: u32 = load v0[v5]
        v8: u32 = get %acc
        v9: u32 = add v8, v7
        set %acc, v9
        v10: u32 = add v5, v4
        set %i, v10
    }}
    v11: u32 = get %acc
    store v0, v11
    return
}}
"
    )
}

#[test]
fn counted_loops_of_constant_trip_count_are_unrolled_exactly() {
    // 0..16 by 1: sixteen loads at constant indices, no loop.
    let (m, stats) = optimized(&counted("0", "ge", "16", "1", ""));
    assert_eq!((loops(&m, "k"), stats.unrolled), (0, 1), "{}", relok_ir::print(&m));
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Load { .. })), 16);
    // 3..16 by 4: 3, 7, 11, 15.
    let (m, _) = optimized(&counted("3", "ge", "16", "4", ""));
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Load { .. })), 4, "{}", relok_ir::print(&m));
    // Counting down through the wrap: 2, 1, 0, then 0xffff_ffff stops it.
    let (m, _) = optimized(&counted("2", "gt", "2", "4294967295", ""));
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Load { .. })), 3, "{}", relok_ir::print(&m));
    // Too many iterations, a bound that is not a constant, a `continue`:
    // loops stay.
    let (m, _) = optimized(&counted("0", "ge", "1000", "1", ""));
    assert_eq!(loops(&m, "k"), 1);
    let (m, _) = optimized(&counted("0", "ge", "16", "1", "").replace("v6: bool = ge v5, v3", "v6: bool = ge v5, v1"));
    assert_eq!(loops(&m, "k"), 1);
    let cont = "        v12: bool = eq v5, v1\n        if v12 {\n            v13: u32 = add v5, v4\n            set %i, v13\n            continue\n        }\n";
    let (m, _) = optimized(&counted("0", "ge", "16", "1", cont));
    assert_eq!(loops(&m, "k"), 1);
    // The step reading the counter again (as the Rust front end's `for`
    // does) is the same counter: still sixteen loads at 0..16.
    let reread = counted("0", "ge", "16", "1", "")
        .replace("        v10: u32 = add v5, v4\n", "        v12: u32 = get %i\n        v10: u32 = add v12, v4\n");
    let (m, _) = optimized(&reread);
    assert_eq!(loops(&m, "k"), 0, "{}", relok_ir::print(&m));
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Load { .. })), 16);
}

/// Kernel `k` storing to `v0[index]` behind a check `index >= len`
/// (`exit` when it fails, as an inlined bounds check), where `index` is
/// computed by `lets` (`v1` onwards) and `len` is `const len`.
fn range_checked(block: &str, lets: &str, index: &str, len: u32) -> String {
    format!(
        "kernel @k(v0: ptr<global, u32>){block} {{
{lets}    v90: u32 = const {len}
    v91: bool = ge {index}, v90
    if v91 {{
        exit
    }}
    store v0[{index}], v90
    return
}}
"
    )
}

#[test]
fn checks_that_value_ranges_decide_are_dropped() {
    let tile = "    v1: u32 = thread_id.x\n    v2: u32 = thread_id.y\n    v3: u32 = const 16\n    v4: u32 = mul v2, v3\n    v5: u32 = add v4, v1\n";
    // 16 x 16 threads: `ty * 16 + tx` is at most 255.
    let (m, _) = optimized(&range_checked(" block(16, 16, 1)", tile, "v5", 256));
    assert_eq!(ifs(&m, "k"), 0, "{}", relok_ir::print(&m));
    // One more element would be past the end (255 >= 255 for the last
    // thread), and any block shape is up to 1023 threads along y.
    let (m, _) = optimized(&range_checked(" block(16, 16, 1)", tile, "v5", 255));
    assert_eq!(ifs(&m, "k"), 1, "{}", relok_ir::print(&m));
    let (m, _) = optimized(&range_checked("", tile, "v5", 256));
    assert_eq!(ifs(&m, "k"), 1, "{}", relok_ir::print(&m));
    // Without a block shape a thread index is below 1024 on every device.
    let (m, _) = optimized(&range_checked("", "    v1: u32 = thread_id.x\n", "v1", 1024));
    assert_eq!(ifs(&m, "k"), 0, "{}", relok_ir::print(&m));
    // A product that may wrap around has no range: 1023 * 2^23 > u32::MAX.
    let wraps = "    v1: u32 = thread_id.x\n    v2: u32 = const 8388608\n    v3: u32 = mul v1, v2\n";
    let (m, _) = optimized(&range_checked("", wraps, "v3", 16));
    assert_eq!(ifs(&m, "k"), 1, "{}", relok_ir::print(&m));
    // `rem`, `and` and a shift bound their results; `block_dim` is the
    // kernel's shape, a constant.
    for (lets, index, len) in [
        ("    v1: u32 = block_id.x\n    v2: u32 = const 100\n    v3: u32 = rem v1, v2\n", "v3", 100),
        ("    v1: u32 = block_id.x\n    v2: u32 = const 63\n    v3: u32 = and v1, v2\n", "v3", 64),
        ("    v1: u32 = thread_id.x\n    v2: u32 = const 4\n    v3: u32 = shr v1, v2\n", "v3", 64),
    ] {
        let (m, _) = optimized(&range_checked("", lets, index, len));
        assert_eq!(ifs(&m, "k"), 0, "{lets}: {}", relok_ir::print(&m));
        let (m, _) = optimized(&range_checked("", lets, index, len - 1));
        assert_eq!(ifs(&m, "k"), 1, "{lets}: {}", relok_ir::print(&m));
    }
    let (m, _) = optimized(&range_checked(" block(32, 4, 1)", "    v1: u32 = block_dim.y\n", "v1", 5));
    assert!(ops(&m, "k").contains(&Op::Const(4)) && ifs(&m, "k") == 0, "{}", relok_ir::print(&m));
    assert_eq!(count(&m, "k", |o| matches!(o, Op::Builtin(_))), 0, "{}", relok_ir::print(&m));
}

#[test]
fn a_difference_under_a_guard_that_it_cannot_wrap_is_at_most_its_minuend() {
    // Inside `if t >= offset`, `t - offset <= t < 1024`: the check of a
    // 1024-element array is dropped; without the guard it stays.
    let src = |guard: &str| {
        format!(
            "kernel @k(v0: ptr<global, u32>, v1: u32) {{
    v2: u32 = thread_id.x
    v3: bool = {guard} v2, v1
    if v3 {{
        v4: u32 = sub v2, v1
        v5: u32 = const 1024
        v6: bool = ge v4, v5
        if v6 {{
            exit
        }}
        store v0[v4], v5
    }}
    return
}}
"
        )
    };
    let (m, _) = optimized(&src("ge"));
    assert_eq!(ifs(&m, "k"), 1, "{}", relok_ir::print(&m));
    let (m, _) = optimized(&src("le"));
    assert_eq!(ifs(&m, "k"), 2, "{}", relok_ir::print(&m));
}

#[test]
fn a_local_read_again_is_the_value_last_read_or_set_where_nothing_between_may_set_it() {
    let gets = |m: &Module| count(m, "k", |o| matches!(o, Op::Get(_)));
    let src = |between: &str| {
        format!(
            "kernel @k(v0: ptr<global, u32>, v1: u32, v2: bool) {{
    local %x: u32
    set %x, v1
    v3: u32 = get %x
    v4: u32 = add v3, v1
    set %x, v4
    v5: u32 = get %x
{between}    v6: u32 = get %x
    store v0[v5], v6
    return
}}
"
        )
    };
    // Both reads after `set %x, v4` are v4 itself: no `get` is left.
    let (m, _) = optimized(&src(""));
    assert_eq!(gets(&m), 0, "{}", relok_ir::print(&m));
    // A `set` inside an `if` between them: the second read stays.
    let (m, _) = optimized(&src("    if v2 {\n        set %x, v1\n    }\n"));
    assert_eq!(gets(&m), 1, "{}", relok_ir::print(&m));
    // A loop that sets the local reads it afresh in every iteration.
    let looped = "kernel @k(v0: ptr<global, u32>, v1: u32) {
    local %x: u32
    set %x, v1
    loop {
        v2: u32 = get %x
        v3: bool = eq v2, v1
        if v3 {
            break
        }
        v4: u32 = get %x
        store v0[v4], v2
        v5: u32 = const 1
        v6: u32 = shr v4, v5
        set %x, v6
    }
    return
}
";
    let (m, _) = optimized(looped);
    assert_eq!(gets(&m), 1, "{}", relok_ir::print(&m));
}
