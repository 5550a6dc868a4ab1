//! The compiler's optimiser changes no result: each module runs on the cpu
//! device before and after `relok_compiler::passes::optimize`, and every
//! buffer ends the same. (The structure of the optimised code is tested in
//! relok-compiler's `src/passes/tests.rs`; these tests live here because
//! the compiler does not depend on the runtime.)

use relok_compiler::passes::optimize;
use relok_ir::{Module, Op, StmtKind};
use relok_runtime::{CpuDevice, KernelArg, LaunchConfig};

fn parse(src: &str) -> Module {
    let m = relok_ir::parse(src).expect("parses");
    relok_ir::verify(&m).expect("verifies");
    m
}

/// A kernel argument: a scalar or a buffer of bytes.
#[derive(Clone)]
enum Arg {
    S(KernelArg),
    Buf(Vec<u8>),
}

fn u32s(xs: impl IntoIterator<Item = u32>) -> Arg {
    Arg::Buf(xs.into_iter().flat_map(u32::to_le_bytes).collect())
}
fn f32s(xs: impl IntoIterator<Item = f32>) -> Arg {
    Arg::Buf(xs.into_iter().flat_map(f32::to_le_bytes).collect())
}
fn rand_u32(n: usize, seed: u32) -> Vec<u32> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}
fn rand_f32(n: usize, seed: u32) -> Arg {
    f32s(rand_u32(n, seed).into_iter().map(|x| (x % 1000) as f32 / 100.0 - 5.0))
}

/// Launches `k` of `m` and returns every buffer's bytes afterwards.
fn run(m: &Module, k: &str, config: &LaunchConfig, args: &[Arg]) -> Vec<Vec<u8>> {
    let dev = CpuDevice::new(0);
    let mut ptrs = Vec::new();
    let kargs: Vec<KernelArg> = args
        .iter()
        .map(|a| match a {
            Arg::S(s) => *s,
            Arg::Buf(bytes) => {
                let p = dev.alloc(bytes.len() as u64).expect("alloc");
                dev.write(p, bytes).expect("write");
                ptrs.push((p, bytes.len() as u64));
                KernelArg::Ptr(p)
            }
        })
        .collect();
    dev.launch(m, k, config, &kargs).expect("launch");
    ptrs.into_iter().map(|(p, n)| dev.read(p, n).expect("read")).collect()
}

/// Optimises `src` and checks the cpu device computes the same before and
/// after; returns the optimised module.
fn same_results(src: &str, k: &str, config: LaunchConfig, args: &[Arg]) -> Module {
    let before = parse(src);
    let mut after = before.clone();
    optimize(&mut after).expect("optimises");
    relok_ir::verify(&after).expect("output verifies");
    let a = run(&before, k, &config, args);
    let b = run(&after, k, &config, args);
    assert_eq!(a, b, "results differ after optimisation of @{k}:\n{}", relok_ir::print(&after));
    after
}

/// How many operations of kernel `k` are not constants.
fn non_consts(m: &Module, k: &str) -> usize {
    let f = &m.funcs[m.func_by_name(k).expect("kernel")];
    let mut n = 0;
    relok_ir::walk_stmts(&f.body, &mut |s| {
        if let StmtKind::Let { op, .. } = &s.kind {
            n += usize::from(!matches!(op, Op::Const(_)));
        }
    });
    n
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
fn folding_matches_the_cpu_device() {
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
        let src = binop_kernel(ty, op, a, b);
        let size = if ty.ends_with("64") { 8 } else { 4 };
        let after = same_results(&src, "k", LaunchConfig::linear(1, 1), &[Arg::Buf(vec![0; size])]);
        assert_eq!(non_consts(&after, "k"), 0, "{ty} {op}");
    }
}

#[test]
fn if_on_a_constant_computes_the_same() {
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
    same_results(src, "k", LaunchConfig::linear(1, 1), &[u32s([0])]);
}

#[test]
fn dce_keeps_the_effects() {
    // The cpu device runs no `ref`: relok-compiler's DCE test less its
    // dead `ref :unused`.
    let src = "kernel @k(v0: ptr<global, u32>) {
    local %x: u32
    v1: u32 = thread_id.x
    v2: u32 = mul v1, v1
    v3: u32 = add v2, v1
    v4: u32 = const 1
    v5: u32 = atomic.add v0[v2], v4
    v6: u32 = get %x
    store v0[v1], v1
    return
}";
    // The atomic goes to element tid², the store to element tid: no two
    // threads touch one element (the race detector would fault).
    same_results(src, "k", LaunchConfig::linear(1, 4), &[u32s([0; 16])]);
}

#[test]
fn inlining_early_returns_computes_the_same() {
    let src = include_str!("../../relok-compiler/tests/inputs/inline_early_returns.rk");
    let args = [u32s([5, 3, 7, 1, 3, 0, 2, 6]), Arg::S(KernelArg::u32(8)), u32s([0; 8]), u32s([0; 16])];
    same_results(src, "k", LaunchConfig::linear(1, 8), &args);
    // n = 0 takes the early return inside the `if`.
    let args0 = [u32s([5, 3, 7, 1, 3, 0, 2, 6]), Arg::S(KernelArg::u32(0)), u32s([0; 8]), u32s([0; 16])];
    same_results(src, "k", LaunchConfig::linear(1, 8), &args0);
}

#[test]
fn examples_compute_the_same_after_optimisation() {
    let lin = LaunchConfig::linear;
    same_results(
        include_str!("../../../examples/saxpy.rk"),
        "saxpy",
        lin(2, 64),
        &[Arg::S(KernelArg::u32(100)), Arg::S(KernelArg::f32(2.5)), rand_f32(128, 1), rand_f32(128, 2)],
    );
    same_results(
        include_str!("../../../examples/reduce.rk"),
        "reduce",
        lin(2, 64),
        &[Arg::S(KernelArg::u32(100)), rand_f32(128, 3), f32s([0.0; 2])],
    );
    same_results(
        include_str!("../../../examples/histogram.rk"),
        "histogram",
        lin(2, 64),
        &[Arg::S(KernelArg::u32(120)), Arg::S(KernelArg::u32(16)), u32s(rand_u32(128, 4)), u32s([0; 16])],
    );
    same_results(
        include_str!("../../../examples/scan.rk"),
        "scan",
        lin(2, 64),
        &[Arg::S(KernelArg::u32(100)), u32s(rand_u32(128, 5).into_iter().map(|x| x % 100)), u32s([0; 128])],
    );
    let (m, n, k) = (20u32, 24u32, 36u32);
    same_results(
        include_str!("../../../examples/matmul.rk"),
        "matmul",
        LaunchConfig { grid: [2, 2, 1], block: [16, 16, 1], ..lin(1, 1) },
        &[
            Arg::S(KernelArg::u32(m)),
            Arg::S(KernelArg::u32(n)),
            Arg::S(KernelArg::u32(k)),
            rand_f32((m * k) as usize, 6),
            rand_f32((k * n) as usize, 7),
            f32s(vec![0.0; (m * n) as usize]),
        ],
    );
}
