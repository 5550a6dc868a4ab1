//! Rust kernels (`#[relok::kernel]`): every twin of the example kernels
//! verifies, round-trips through the text format, lowers and runs under
//! bake, patch and table, and equals its `.rk` version on every device
//! found (the cpu device always; wgpu on lavapipe here; cuda when a GPU is
//! present); bounds checks, `assert!` and `panic!` raise exceptions naming
//! the Rust file:line:col on each device; `get_unchecked` skips the check;
//! a host static is relocated by identity (new contents: zero compiles);
//! a second process loads every Rust kernel from the artifact store with
//! zero compiles.

#[path = "../examples/twins/kernels.rs"]
mod kernels;
#[path = "../examples/twins/run.rs"]
mod run;

mod common;

use common::{contexts, serial};
use relok::__kernel::KernelDef;
use relok::{Context, Error, Grid, Strategy};
use std::path::{Path, PathBuf};

/// Every Rust kernel of the twins and of this file.
fn definitions() -> Vec<&'static KernelDef> {
    vec![
        &kernels::saxpy::DEF,
        &kernels::reduce::DEF,
        &kernels::histogram::DEF,
        &kernels::matmul::DEF,
        &kernels::scan::DEF,
        &kernels::lookup::DEF,
        &kernels::check::DEF,
        &kernels::classify::DEF,
        &kernels::count::DEF,
        &kernels::softmax::DEF,
        &kernels::gelu::DEF,
        &atomics::DEF,
        &reverse_digits::DEF,
        &math_methods::DEF,
        &float_atomics::DEF,
        &oob::DEF,
        &unchecked_copy::DEF,
        &asserts::DEF,
        &control::DEF,
        &first::k::scale::DEF,
        &reversed_tile::DEF,
        block_sums::def::<u32, 4>(),
        block_sums::def::<f64, 8>(),
        clamp_all::def::<i32>(),
        clamp_all::def::<f64>(),
    ]
}

#[test]
fn every_rust_kernel_verifies_round_trips_and_lowers_under_every_strategy() {
    let _g = serial();
    for def in definitions() {
        let program = def.program().unwrap_or_else(|e| panic!("{}: {e}", def.name()));
        let module = program.module();
        let text = relok_ir::print(module);
        let parsed = relok_ir::parse(&text).unwrap_or_else(|e| panic!("{}: {e:?}\n{text}", def.name()));
        assert_eq!(&parsed, module, "{}: the text format round-trips", def.name());
        assert_eq!(relok_ir::print(&parsed), text, "{}", def.name());
        for strategy in Strategy::ALL {
            let ctx = Context::builder().device("cpu").strategy(strategy).no_cache().build().expect("cpu");
            def.kernel(&ctx.stream()).unwrap_or_else(|e| panic!("{} under {strategy}: {e}", def.name()));
        }
    }
}

#[test]
fn rust_twins_equal_their_rk_versions_on_every_device_and_strategy() {
    let _g = serial();
    for strategy in Strategy::ALL {
        // The cpu device (first) is the oracle of every other device.
        let mut oracle: Vec<run::Outcome> = Vec::new();
        for ctx in contexts(strategy) {
            let wgpu = ctx.device_kind() == relok::DeviceKind::Wgpu;
            for o in run::all(&ctx).unwrap_or_else(|e| panic!("{} {strategy}: {e}", ctx.device_name())) {
                assert!(
                    o.equal,
                    "{} on {} under {strategy}: the Rust twin differs from the .rk",
                    o.name,
                    ctx.device_name()
                );
                assert!(
                    o.rust_lines < o.rk_lines,
                    "{}: {} lines of Rust against {} of .rk",
                    o.name,
                    o.rust_lines,
                    o.rk_lines
                );
                match oracle.iter().find(|c| c.name == o.name) {
                    Some(cpu) => assert!(
                        o.same_as(cpu, wgpu),
                        "{} on {} under {strategy} differs from the cpu device {}",
                        o.name,
                        ctx.device_name(),
                        o.difference(cpu)
                    ),
                    None => oracle.push(o),
                }
            }
        }
    }
}

#[relok::kernel]
fn oob(x: &[u32], out: &mut [u32], k: u32) {
    let i = global_id_x();
    out[i] = x[i + k as usize];
}

/// Line and column (1-based) of `needle` in this file.
fn position(needle: &str) -> (usize, usize) {
    let src = include_str!("rust_kernels.rs");
    let (line, text) = src.lines().enumerate().find(|(_, l)| l.contains(needle)).expect("needle in this file");
    (line + 1, text.find(needle).expect("on its line") + 1)
}

#[test]
fn an_index_out_of_bounds_raises_rusts_message_with_the_rust_location_on_every_device() {
    let _g = serial();
    let (line, col) = position("i + k as usize]");
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&[1u32, 2, 3, 4]).expect("upload");
        let mut out = ctx.zeros::<u32>(4).expect("zeros");
        let s = ctx.stream();
        oob::launch(&s, Grid::new(1, 4), &x, &mut out, 0).expect("launch");
        s.synchronize().expect("in bounds: no exception");
        assert_eq!(out.download().expect("download"), [1, 2, 3, 4], "{}", ctx.device_name());
        oob::launch(&s, Grid::new(1, 4), &x, &mut out, 3).expect("launch");
        match s.synchronize() {
            Err(Error::Exception { kernel, message, block, thread }) => {
                assert_eq!(kernel, "oob");
                assert_eq!(block, [0, 0, 0]);
                assert!((1..4).contains(&thread[0]), "{thread:?}");
                let index = thread[0] + 3;
                let want =
                    format!("{}:{line}:{col}: index out of bounds: the len is 4 but the index is {index}", file!());
                assert_eq!(message, want, "{}", ctx.device_name());
            }
            other => panic!("{}: expected the bounds-check exception, got {other:?}", ctx.device_name()),
        }
        // Reported once; the next failure is recorded afresh.
        s.synchronize().expect("the stream goes on");
        oob::launch(&s, Grid::new(1, 1), &x, &mut out, 9).expect("launch");
        let err = s.synchronize().expect_err("index 9");
        assert!(err.to_string().ends_with("index out of bounds: the len is 4 but the index is 9"), "{err}");
    }
}

#[test]
fn two_streams_failing_at_once_each_report_their_own_length_and_index() {
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&[1u32, 2, 3, 4]).expect("upload");
        let (mut a, mut b) = (ctx.zeros::<u32>(4).expect("zeros"), ctx.zeros::<u32>(4).expect("zeros"));
        let (sa, sb) = (ctx.stream(), ctx.stream());
        oob::launch(&sa, Grid::new(1, 1), &x, &mut a, 7).expect("launch");
        oob::launch(&sb, Grid::new(1, 1), &x, &mut b, 9).expect("launch");
        for (s, index) in [(&sb, 9), (&sa, 7)] {
            let err = s.synchronize().expect_err("out of bounds");
            let want = format!("index out of bounds: the len is 4 but the index is {index}");
            assert!(err.to_string().ends_with(&want), "{}: {err}", ctx.device_name());
        }
    }
}

#[relok::kernel]
fn unchecked_copy(x: &[u32], out: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() {
        unsafe {
            *out.get_unchecked_mut(i) = *x.get_unchecked(i) + 1;
        }
    }
}

#[test]
fn get_unchecked_skips_the_bounds_check() {
    let _g = serial();
    let text = relok_ir::print(unchecked_copy::program().expect("builds").module());
    let kernel = &text[text.find("kernel @unchecked_copy").expect("the kernel")..];
    assert!(!kernel.contains("relok_throw_with"), "{kernel}");
    let checked = relok_ir::print(oob::program().expect("builds").module());
    assert_eq!(checked[checked.find("kernel @oob").expect("kernel")..].matches("call @relok_throw_with").count(), 2);
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&[5u32, 6, 7]).expect("upload");
        let mut out = ctx.zeros::<u32>(3).expect("zeros");
        let s = ctx.stream();
        unchecked_copy::launch(&s, Grid::new(1, 32), &x, &mut out).expect("launch");
        s.synchronize().expect("runs");
        assert_eq!(out.download().expect("download"), [6, 7, 8], "{}", ctx.device_name());
    }
    // Past the end, the cpu device's own memory checks fault: no exception.
    let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
    let x = ctx.upload(&[5u32]).expect("upload");
    let mut out = ctx.zeros::<u32>(64).expect("zeros");
    let s = ctx.stream();
    unchecked_copy::launch(&s, Grid::new(1, 64), &x, &mut out).expect("launch");
    assert!(matches!(s.synchronize(), Err(Error::Fault { .. })));
}

#[relok::kernel]
fn asserts(x: &[i32], mode: u32) {
    let i = global_id_x();
    if i == 0 {
        if mode == 0 {
            assert!(x[0] > 0);
        } else if mode == 1 {
            assert!(x[0] > 0, "x[0] must be positive");
        } else if mode == 2 {
            assert_eq!(x[0], 1, "x[0] is one");
        } else {
            panic!("mode out of range");
        }
    }
}

#[test]
fn assert_and_panic_throw_their_message_and_rust_location_on_every_device() {
    let _g = serial();
    let cases = [
        (0, position("assert!(x[0] > 0);"), "assertion failed: x[0] > 0"),
        (1, position("assert!(x[0] > 0, \""), "x[0] must be positive"),
        (2, position("assert_eq!(x[0], 1"), "assertion `left == right` failed: x[0] is one"),
        (3, position("panic!(\"mode out"), "mode out of range"),
    ];
    for ctx in contexts(Strategy::Table) {
        let s = ctx.stream();
        let ok = ctx.upload(&[1i32]).expect("upload");
        asserts::launch(&s, Grid::new(1, 1), &ok, 0).expect("launch");
        s.synchronize().expect("holds");
        let bad = ctx.upload(&[-1i32]).expect("upload");
        for (mode, (line, col), text) in cases {
            asserts::launch(&s, Grid::new(1, 1), &bad, mode).expect("launch");
            match s.synchronize() {
                Err(Error::Exception { message, .. }) => {
                    assert_eq!(message, format!("{}:{line}:{col}: {text}", file!()), "{}", ctx.device_name());
                }
                other => panic!("{}: {other:?}", ctx.device_name()),
            }
        }
    }
}

#[relok::device]
fn collatz_steps(start: u32) -> u32 {
    let mut x = start;
    let mut steps = 0;
    while x != 1 {
        if x % 2 == 0 {
            x /= 2;
        } else {
            x = 3 * x + 1;
        }
        steps += 1;
        if steps > 500 {
            return 0;
        }
    }
    steps
}

#[relok::device]
fn sum_to(x: &[f64], end: usize) -> f64 {
    let mut s = 0.0;
    for j in 0..end {
        s += x[j];
    }
    s
}

#[relok::kernel]
fn control(x: &[u32], w: &[f64], out: &mut [i64], f: &mut [f64], flag: bool) {
    let i = global_id_x();
    if i >= x.len() {
        return;
    }
    let v = x[i];
    let mut acc: i64 = 0;
    for j in (0..v as usize).step_by(3) {
        if j % 2 == 1 {
            continue;
        }
        acc += j as i64;
        if acc > 100 {
            break;
        }
    }
    let mut k = 0u32;
    loop {
        k += 1;
        if k * k > v {
            break;
        }
    }
    let sign = if v % 3 == 0 {
        -1i64
    } else if v % 3 == 1 {
        0
    } else {
        1
    };
    let v = v as i64;
    out[i] = acc * sign + collatz_steps(v as u32 + 1) as i64 + ((k as i64) << 8) - (v >> 1) + (v ^ 5) * 3;
    let g = v as f64;
    f[i] = if flag || v > 3 { g.sqrt() + (-g).abs().min(3.5) } else { sum_to(w, (v as usize) % 4) };
}

/// `control`, in plain Rust.
fn control_reference(v: u32, w: &[f64], flag: bool) -> (i64, f64) {
    let mut acc: i64 = 0;
    for j in (0..v as usize).step_by(3) {
        if j % 2 == 1 {
            continue;
        }
        acc += j as i64;
        if acc > 100 {
            break;
        }
    }
    let mut k = 0u32;
    loop {
        k += 1;
        if k * k > v {
            break;
        }
    }
    let sign = if v.is_multiple_of(3) {
        -1i64
    } else if v % 3 == 1 {
        0
    } else {
        1
    };
    let mut x = v + 1;
    let mut steps = 0u32;
    while x != 1 {
        x = if x.is_multiple_of(2) { x / 2 } else { 3 * x + 1 };
        steps += 1;
        if steps > 500 {
            steps = 0;
            break;
        }
    }
    let vi = i64::from(v);
    let out = acc * sign + i64::from(steps) + (i64::from(k) << 8) - (vi >> 1) + (vi ^ 5) * 3;
    let g = f64::from(v);
    let f = if flag || vi > 3 {
        g.sqrt() + (-g).abs().min(3.5)
    } else {
        w[..(v as usize) % 4].iter().fold(0.0, |s, x| s + x)
    };
    (out, f)
}

#[test]
fn control_flow_casts_and_device_functions_match_plain_rust_on_every_device() {
    let _g = serial();
    let xs: Vec<u32> = (0..100).map(|i| (i * 37 + 11) % 97).collect();
    let ws = [0.5f64, 1.25, -2.0, 8.0];
    for flag in [false, true] {
        let want: Vec<(i64, f64)> = xs.iter().map(|&v| control_reference(v, &ws, flag)).collect();
        for ctx in contexts(Strategy::Table) {
            let x = ctx.upload(&xs).expect("upload");
            let w = ctx.upload(&ws).expect("upload");
            let mut out = ctx.zeros::<i64>(xs.len()).expect("zeros");
            let mut f = ctx.zeros::<f64>(xs.len()).expect("zeros");
            let s = ctx.stream();
            control::launch(&s, Grid::cover(xs.len(), 32), &x, &w, &mut out, &mut f, flag).expect("launch");
            s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
            let out = out.download().expect("download");
            let f = f.download().expect("download");
            for (i, (o, g)) in want.iter().enumerate() {
                assert_eq!(out[i], *o, "{} out[{i}] (x = {})", ctx.device_name(), xs[i]);
                assert_eq!(
                    f[i].to_bits(),
                    g.to_bits(),
                    "{} f[{i}] (x = {}): {} vs {g}",
                    ctx.device_name(),
                    xs[i],
                    f[i]
                );
            }
        }
    }
}

/// Two versions of one host static (one identity, two contents): what a
/// program that edits the static between two runs sees. One kernel file
/// for both, so that its messages' locations are the same.
mod first {
    #[relok::host(name = "tests.rust_kernels.SCALE")]
    pub static SCALE: [u32; 4] = [1, 2, 3, 4];

    pub mod k {
        include!("common/scale_kernel.rs");
    }
}

mod second {
    #[relok::host(name = "tests.rust_kernels.SCALE")]
    pub static SCALE: [u32; 4] = [10, 20, 30, 40];

    pub mod k {
        include!("common/scale_kernel.rs");
    }
}

/// A fresh folder under the target directory's temp area.
fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("relok-rust-kernels-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn scaled(ctx: &Context, second_version: bool) -> Vec<u32> {
    let mut x = ctx.upload(&[1u32, 1, 1, 1, 2, 2, 2, 2]).expect("upload");
    let s = ctx.stream();
    if second_version {
        second::k::scale::launch(&s, Grid::new(1, 8), &mut x).expect("launch");
    } else {
        first::k::scale::launch(&s, Grid::new(1, 8), &mut x).expect("launch");
    }
    s.synchronize().expect("runs");
    x.download().expect("download")
}

#[test]
fn a_host_static_is_relocated_by_identity_new_contents_need_no_compile() {
    let _g = serial();
    let a = first::k::scale::program().expect("builds");
    let b = second::k::scale::program().expect("builds");
    assert_eq!(a.module(), b.module(), "the contents are not in the IR");
    let dir = temp_dir("identity");
    let ctx = Context::builder().device("cpu").cache_dir(&dir).build().expect("cpu");
    assert_eq!(scaled(&ctx, false), [1, 2, 3, 4, 2, 4, 6, 8]);
    assert_eq!(ctx.cache_stats().compiles, 1);
    // Another session on the same store, with the edited contents.
    let ctx = Context::builder().device("cpu").cache_dir(&dir).build().expect("cpu");
    assert_eq!(scaled(&ctx, true), [10, 20, 30, 40, 20, 40, 60, 80]);
    let stats = ctx.cache_stats();
    assert_eq!(stats.compiles, 0, "{stats:?}");
    assert_eq!(stats.store.hits, 1, "{stats:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rust_kernels_program_loaded_by_context_kernel_or_kernels_reads_its_host_static() {
    // A Rust kernel's `program()` loaded like any program — alone with
    // `Context::kernel`, or with others by `Context::kernels` — delivers
    // its host statics as its `launch` does: the kernel reads the static's
    // bytes, never an undelivered (zeroed) cell.
    let _g = serial();
    let program = first::k::scale::program().expect("builds");
    let run = |ctx: &Context, k: &relok::Kernel| {
        let mut x = ctx.upload(&[1u32, 1, 1, 1, 2, 2, 2, 2]).expect("upload");
        let s = ctx.stream();
        k.launch(&s, Grid::new(1, 8), (&mut x, 8u32)).expect("launch");
        s.synchronize().expect("runs");
        x.download().expect("download")
    };
    for ctx in contexts(Strategy::Table) {
        let alone = ctx.kernel(program, "scale").expect("loads");
        assert_eq!(run(&ctx, &alone), [1, 2, 3, 4, 2, 4, 6, 8], "{}: alone", ctx.device_name());
    }
    for ctx in contexts(Strategy::Table) {
        let copy = unchecked_copy::program().expect("builds");
        let together = ctx.kernels(&[(copy, "unchecked_copy"), (program, "scale")]).expect("loads");
        assert_eq!(run(&ctx, &together[1]), [1, 2, 3, 4, 2, 4, 6, 8], "{}: together", ctx.device_name());
        // The macro's own launch on the same context agrees, and finds
        // the kernel compiled.
        assert_eq!(scaled(&ctx, false), [1, 2, 3, 4, 2, 4, 6, 8], "{}: launch", ctx.device_name());
        assert_eq!(ctx.cache_stats().compiles, 2, "{}", ctx.device_name());
    }
}

#[test]
fn a_warm_launch_neither_rebuilds_nor_looks_the_kernel_up_again() {
    let _g = serial();
    let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
    let x = ctx.upload(&[1.0f32; 8]).expect("upload");
    let mut y = ctx.zeros::<f32>(8).expect("zeros");
    let s = ctx.stream();
    kernels::saxpy::launch(&s, Grid::new(1, 8), 8, 2.0, &x, &mut y).expect("launch");
    let after_first = ctx.cache_stats();
    assert_eq!(after_first.compiles, 1);
    let program = kernels::saxpy::program().expect("built") as *const relok::Program;
    for _ in 0..10 {
        kernels::saxpy::launch(&s, Grid::new(1, 8), 8, 2.0, &x, &mut y).expect("launch");
    }
    s.synchronize().expect("runs");
    assert_eq!(y.download().expect("download"), [22.0f32; 8]);
    assert_eq!(ctx.cache_stats(), after_first, "warm launches go around the kernel cache");
    assert!(std::ptr::eq(program, kernels::saxpy::program().expect("built")), "the IR is built once");
}

const CHILD: &str = "RELOK_RUST_KERNELS_CHILD";

/// Run by the next test in a process of its own: every Rust kernel from
/// the store under `$RELOK_RUST_KERNELS_CHILD`, with the edited host
/// static; prints the number of compiles.
#[test]
fn child() {
    let Ok(dir) = std::env::var(CHILD) else { return };
    let ctx = Context::builder().device("cpu").cache_dir(Path::new(&dir)).build().expect("cpu");
    for o in run::all(&ctx).expect("twins run") {
        assert!(o.equal, "{}", o.name);
    }
    assert_eq!(scaled(&ctx, true), [10, 20, 30, 40, 20, 40, 60, 80]);
    let stats = ctx.cache_stats();
    let _ =
        std::io::Write::write_all(&mut std::io::stdout(), format!("CHILD-COMPILES {}\n", stats.compiles).as_bytes());
}

#[test]
fn a_second_process_loads_every_rust_kernel_from_the_store_with_zero_compiles() {
    let _g = serial();
    let dir = temp_dir("process");
    let ctx = Context::builder().device("cpu").cache_dir(&dir).build().expect("cpu");
    assert!(run::all(&ctx).expect("twins run").iter().all(|o| o.equal));
    assert_eq!(scaled(&ctx, false), [1, 2, 3, 4, 2, 4, 6, 8]);
    assert!(ctx.cache_stats().compiles >= 8, "{:?}", ctx.cache_stats());
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, &dir)
        .env_remove("RELOK_CACHE")
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let compiles = stdout
        .lines()
        .find_map(|l| l.split_once("CHILD-COMPILES ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("the child says nothing:\n{stdout}"));
    assert_eq!(compiles.trim(), "0", "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A generic kernel: one instance per element type and tile size.
#[relok::kernel]
fn block_sums<T: relok::Number, const N: usize>(x: &[T], out: &mut [T]) {
    let tile = shared::<T, N>();
    let t = thread_id_x();
    let i = block_id_x() * N + t;
    tile[t] = x[i];
    sync_threads();
    if t == 0 {
        let mut s = tile[0];
        for k in 1..N {
            s = s + tile[k];
        }
        out[block_id_x()] = s;
    }
}

#[test]
fn a_generic_kernel_has_one_instance_per_type_and_constant_each_its_own_key() {
    let _g = serial();
    let a = block_sums::program::<u32, 4>().expect("builds");
    let b = block_sums::program::<f64, 4>().expect("builds");
    let c = block_sums::program::<u32, 8>().expect("builds");
    assert_eq!(a.kernels(), ["block_sums__u32__4"]);
    assert_eq!(b.kernels(), ["block_sums__f64__4"]);
    assert_eq!(c.kernels(), ["block_sums__u32__8"]);
    assert!(std::ptr::eq(block_sums::def::<u32, 4>(), block_sums::def::<u32, 4>()), "one definition per instance");
    for ctx in contexts(Strategy::Table) {
        let s = ctx.stream();
        let xs: Vec<u32> = (1..=16).collect();
        let x = ctx.upload(&xs).expect("upload");
        let mut out = ctx.zeros::<u32>(4).expect("zeros");
        block_sums::launch::<u32, 4>(&s, Grid::new(4, 4), &x, &mut out).expect("launch");
        let xf: Vec<f64> = xs.iter().map(|&v| f64::from(v) / 2.0).collect();
        let x = ctx.upload(&xf).expect("upload");
        let mut outf = ctx.zeros::<f64>(2).expect("zeros");
        block_sums::launch::<f64, 8>(&s, Grid::new(2, 8), &x, &mut outf).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
        assert_eq!(out.download().expect("download"), [10, 26, 42, 58], "{}", ctx.device_name());
        assert_eq!(outf.download().expect("download"), [18.0, 50.0], "{}", ctx.device_name());
    }
}

#[relok::kernel]
fn atomics(x: &[u32], stats: &mut [u32], claims: &mut [u32]) {
    let counts = shared::<u32, 4>();
    let t = thread_id_x();
    if t < 4 {
        counts[t] = 0;
    }
    sync_threads();
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        atomic_add(&mut stats[0], v);
        atomic_min(&mut stats[1], v);
        atomic_max(&mut stats[2], v);
        atomic_add(&mut counts[(v % 4) as usize], 1);
        // Exactly one thread claims each slot: the one whose swap saw 0.
        let slot = (v % 8) as usize;
        if atomic_compare_exchange(&mut claims[slot], 0, v + 1) == 0 {
            atomic_add(&mut stats[3], 1);
        }
        let _ = atomic_exchange(&mut stats[4], v);
    }
    sync_threads();
    if t < 4 {
        atomic_add(&mut stats[5 + t], counts[t]);
    }
}

#[test]
fn atomics_on_buffers_and_shared_arrays_on_every_device() {
    let _g = serial();
    let xs: Vec<u32> = (0..200).map(|i| (i * 7919 + 13) % 1000 + 1).collect();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&xs).expect("upload");
        let mut stats = ctx.upload(&[0u32, u32::MAX, 0, 0, 0, 0, 0, 0, 0]).expect("upload");
        let mut claims = ctx.zeros::<u32>(8).expect("zeros");
        let s = ctx.stream();
        atomics::launch(&s, Grid::new(4, 64), &x, &mut stats, &mut claims).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
        let st = stats.download().expect("download");
        let name = ctx.device_name();
        assert_eq!(st[0], xs.iter().sum::<u32>(), "{name}");
        assert_eq!(st[1], *xs.iter().min().expect("some"), "{name}");
        assert_eq!(st[2], *xs.iter().max().expect("some"), "{name}");
        let slots: std::collections::BTreeSet<u32> = xs.iter().map(|v| v % 8).collect();
        assert_eq!(st[3] as usize, slots.len(), "{name}: one claim per slot");
        assert!(xs.contains(&st[4]), "{name}: the last exchange left an element");
        for r in 0..4u32 {
            assert_eq!(st[5 + r as usize] as usize, xs.iter().filter(|v| *v % 4 == r).count(), "{name}");
        }
        for (slot, c) in claims.download().expect("download").iter().enumerate() {
            assert!(*c == 0 || (c - 1) % 8 == slot as u32, "{name}: slot {slot} holds {c}");
        }
    }
}

/// Parameters named like `launch`'s own (`stream`, `grid`) are fine.
#[relok::kernel]
fn names(grid: &mut [u32], stream: u32) {
    if global_id_x() == 0 {
        grid[0] = stream;
    }
}

#[test]
fn kernel_parameters_may_be_named_stream_and_grid() {
    let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
    let mut out = ctx.zeros::<u32>(1).expect("zeros");
    let s = ctx.stream();
    names::launch(&s, Grid::new(1, 1), &mut out, 7).expect("launch");
    s.synchronize().expect("runs");
    assert_eq!(out.download().expect("download"), [7]);
}

/// Ones in the first `n` elements (`n` is a `usize`: 32 bits on the device).
#[relok::kernel]
fn ones_to(out: &mut [u32], n: usize) {
    let i = global_id_x();
    if i < n && i < out.len() {
        out[i] = 1;
    }
}

#[test]
fn a_usize_argument_above_u32_max_is_refused_naming_the_kernel_and_the_parameter() {
    let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
    let mut out = ctx.zeros::<u32>(4).expect("zeros");
    let s = ctx.stream();
    let err = ones_to::launch(&s, Grid::new(1, 4), &mut out, 5_000_000_000).expect_err("above u32::MAX");
    assert!(
        matches!(&err, Error::UsizeOutOfRange { kernel, param, value: 5_000_000_000 } if kernel == "ones_to" && param == "n"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "Rust kernel ones_to, parameter `n: usize`: 5000000000 does not fit the device's 32-bit usize (at most 4294967295)"
    );
    ones_to::launch(&s, Grid::new(1, 4), &mut out, u32::MAX as usize).expect("u32::MAX fits");
    s.synchronize().expect("runs");
    assert_eq!(out.download().expect("download"), [1; 4]);
}

/// Per-thread arrays: the four low decimal digits of `x[i]`, reversed.
#[relok::kernel]
fn reverse_digits(x: &[u32], out: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() {
        let mut digits = [0u32; 4];
        let weights = [1u32, 10, 100, 1000];
        let mut v = x[i];
        for k in 0..4 {
            digits[k] = v % 10;
            v /= 10;
        }
        let mut s = 0;
        for k in 0..digits.len() {
            s += digits[3 - k] * weights[k];
        }
        out[i] = s;
    }
}

#[test]
fn per_thread_arrays_on_every_device() {
    let _g = serial();
    let xs: Vec<u32> = (0..300).map(|i| i * 37 + 5).collect();
    let want: Vec<u32> = xs.iter().map(|&v| (0..4).fold(0, |acc, k| acc * 10 + (v / 10u32.pow(k)) % 10)).collect();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&xs).expect("upload");
        let mut out = ctx.zeros::<u32>(xs.len()).expect("zeros");
        let s = ctx.stream();
        reverse_digits::launch(&s, Grid::cover(xs.len(), 64), &x, &mut out).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
        assert_eq!(out.download().expect("download"), want, "{}", ctx.device_name());
    }
}

/// Float and integer methods of the mapping table.
#[relok::kernel]
fn methods(x: &[f32], k: &[i32], out: &mut [f32], kout: &mut [i32]) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        let r = if v.is_nan() { -1.0 } else { v.abs().sqrt().max(0.5).min(4.0) + v.recip() };
        out[i] = r;
        kout[i] = k[i].abs().max(3).min(100);
    }
}

#[test]
fn methods_map_to_the_ir_on_every_device() {
    let _g = serial();
    let xs = [4.0f32, -9.0, 0.01, f32::NAN, 100.0, -0.0, 2.5, 1e-3];
    let ks = [-5i32, 2, 200, -300, 7, 0, -1, 99];
    let want: Vec<u32> = xs
        .iter()
        .map(|&v| if v.is_nan() { -1.0f32 } else { v.abs().sqrt().clamp(0.5, 4.0) + v.recip() }.to_bits())
        .collect();
    let kwant: Vec<i32> = ks.iter().map(|k| k.abs().clamp(3, 100)).collect();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&xs).expect("upload");
        let k = ctx.upload(&ks).expect("upload");
        let mut out = ctx.zeros::<f32>(xs.len()).expect("zeros");
        let mut kout = ctx.zeros::<i32>(ks.len()).expect("zeros");
        let s = ctx.stream();
        methods::launch(&s, Grid::new(1, 8), &x, &k, &mut out, &mut kout).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
        let got: Vec<u32> = out.download().expect("download").iter().map(|v| v.to_bits()).collect();
        // WGSL's f32 division and sqrt may be 2.5 ulp off (docs/wgpu.md):
        // exact elsewhere, within 3 ulp on wgpu.
        let slack = if ctx.device_kind() == relok::DeviceKind::Wgpu { 3 } else { 0 };
        for (g, w) in got.iter().zip(&want) {
            assert!(g.abs_diff(*w) <= slack, "{}: {} vs {}", ctx.device_name(), f32::from_bits(*g), f32::from_bits(*w));
        }
        assert_eq!(kout.download().expect("download"), kwant, "{}", ctx.device_name());
    }
}

/// A generic device function: staged into each caller, at the caller's
/// type.
#[relok::device]
fn clamp_to<T: relok::Number>(v: T, lo: T, hi: T) -> T {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

#[relok::kernel]
fn clamp_all<T: relok::Number>(x: &mut [T], lo: T, hi: T) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = clamp_to(x[i], lo, hi);
    }
}

#[test]
fn a_generic_device_function_is_staged_at_each_callers_type() {
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let s = ctx.stream();
        let mut a = ctx.upload(&[-5i32, 0, 7, 12]).expect("upload");
        let mut b = ctx.upload(&[0.25f64, 3.5, -1.0, 2.0]).expect("upload");
        clamp_all::launch(&s, Grid::new(1, 4), &mut a, 0, 10).expect("launch");
        clamp_all::launch(&s, Grid::new(1, 4), &mut b, 0.5, 2.5).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
        assert_eq!(a.download().expect("download"), [0, 0, 7, 10], "{}", ctx.device_name());
        assert_eq!(b.download().expect("download"), [0.5, 2.5, 0.5, 2.0], "{}", ctx.device_name());
    }
}

/// Thread 0 fails an assertion and thread 1 a bounds check, in one launch.
#[relok::kernel]
fn two_failures(x: &[u32], out: &mut [u32]) {
    let i = global_id_x();
    if i == 0 {
        assert!(x.len() > 100);
    } else if i == 1 {
        out[0] = x[x.len() + 3];
    }
}

#[test]
fn a_bounds_failure_that_lost_the_race_is_not_reported_later() {
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&[1u32, 2, 3, 4]).expect("upload");
        let mut out = ctx.zeros::<u32>(4).expect("zeros");
        let s = ctx.stream();
        two_failures::launch(&s, Grid::new(1, 2), &x, &mut out).expect("launch");
        let first = s.synchronize().expect_err("two failures").to_string();
        assert!(
            first.ends_with("assertion failed: x.len() > 100") || first.ends_with("the len is 4 but the index is 7"),
            "{}: {first}",
            ctx.device_name()
        );
        oob::launch(&s, Grid::new(1, 1), &x, &mut out, 9).expect("launch");
        let second = s.synchronize().expect_err("index 9").to_string();
        assert!(
            second.ends_with("index out of bounds: the len is 4 but the index is 9"),
            "{}: {second}",
            ctx.device_name()
        );
    }
}

/// A `cfg` under the attribute reaches the generated items: this kernel
/// and its device function do not exist (their names are free below).
#[relok::device]
#[cfg(any())]
fn never_built(x: u32) -> u32 {
    x
}

#[relok::kernel]
#[cfg(any())]
fn never_launched(x: &mut [u32]) {
    x[0] = never_built(1);
}

/// Would clash with the kernel's module, had the `cfg` not removed it.
mod never_launched {}

/// Rust's float methods through the IR's math functions.
#[relok::kernel]
fn math_methods(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        let o = i * 8;
        out[o] = v.exp();
        out[o + 1] = v.abs().ln();
        out[o + 2] = v.mul_add(2.0, 1.0);
        out[o + 3] = v.floor();
        out[o + 4] = v.round();
        out[o + 5] = v.tanh();
        out[o + 6] = v.sin();
        out[o + 7] = v.atan2(2.0);
    }
}

#[test]
fn float_methods_map_to_the_math_functions_on_every_device() {
    let _g = serial();
    let xs: Vec<f32> = (0..64).map(|k| -3.1 + k as f32 * 0.097).collect();
    let host =
        |v: f32| [v.exp(), v.abs().ln(), v.mul_add(2.0, 1.0), v.floor(), v.round(), v.tanh(), v.sin(), v.atan2(2.0)];
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&xs).expect("upload");
        let mut out = ctx.zeros::<f32>(xs.len() * 8).expect("zeros");
        let s = ctx.stream();
        math_methods::launch(&s, Grid::new(1, 64), &x, &mut out).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
        let got = out.download().expect("download");
        // The library's bounds (docs/ir.md: at most 2.5 ulp for these in
        // f32, one more on wgpu) plus std's own error; near zero an
        // absolute 1e-6. mul_add, floor and round are exact.
        let ulps = if ctx.device_kind() == relok::DeviceKind::Wgpu { 5 } else { 4 };
        for (k, &v) in xs.iter().enumerate() {
            for (j, want) in host(v).into_iter().enumerate() {
                let g = got[k * 8 + j];
                let exact = matches!(j, 2..=4);
                let ok = if exact {
                    g == want
                } else {
                    g.to_bits().abs_diff(want.to_bits()) <= ulps || (g - want).abs() <= 1e-6
                };
                assert!(ok, "{}: method {j} of {v}: {g} vs {want}", ctx.device_name());
            }
        }
    }
}

static FLOAT_SUM: relok::Global<f32> = relok::Global::new("tests_float_sum");

/// f32 atomics on a shared array, a buffer and a runtime global.
#[relok::kernel]
fn float_atomics(x: &[f32], out: &mut [f32]) {
    let acc = shared::<f32, 1>();
    if thread_id_x() == 0 {
        acc[0] = 0.0;
    }
    sync_threads();
    let i = global_id_x();
    if i < x.len() {
        atomic_add(&mut acc[0], x[i]);
        atomic_max(&mut out[1], x[i]);
        atomic_min(&mut out[2], x[i]);
        atomic_add(&FLOAT_SUM, x[i]);
    }
    sync_threads();
    if thread_id_x() == 0 {
        atomic_add(&mut out[0], acc[0]);
    }
}

#[test]
fn float_atomics_on_every_device() {
    let _g = serial();
    // Small integers: every order of the additions gives the same sum.
    let xs: Vec<f32> = (0..256).map(|k| ((k * 37) % 101) as f32 - 50.0).collect();
    let sum: f32 = xs.iter().sum();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(&xs).expect("upload");
        let mut out = ctx.upload(&[0.0f32, f32::NEG_INFINITY, f32::INFINITY]).expect("upload");
        let s = ctx.stream();
        float_atomics::launch(&s, Grid::new(4, 64), &x, &mut out).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("{}: {e}", ctx.device_name()));
        assert_eq!(out.download().expect("download"), [sum, 50.0, -50.0], "{}", ctx.device_name());
        assert_eq!(ctx.global_value(&FLOAT_SUM).expect("read"), sum, "{}", ctx.device_name());
    }
}

/// A `Global` under relok's own prefix: the name of a host static's cell.
static PANIC_ALIAS: relok::Global<u32> = relok::Global::new("relok_host__app__LUT");

#[relok::kernel]
fn touches_reserved(x: &[u32]) {
    if global_id_x() < x.len() {
        atomic_add(&PANIC_ALIAS, 1);
    }
}

#[test]
fn a_global_under_relok_s_own_prefix_is_refused_before_the_device() {
    let _g = serial();
    let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
    let x = ctx.upload(&[1u32; 4]).expect("upload");
    let s = ctx.stream();
    match touches_reserved::launch(&s, Grid::new(1, 4), &x) {
        Err(Error::ReservedGlobal { name }) => assert_eq!(name, "relok_host__app__LUT"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(ctx.global_value(&PANIC_ALIAS), Err(Error::ReservedGlobal { .. })));
    s.synchronize().expect("nothing was launched");
}

#[test]
fn the_runtime_librarys_counter_stays_shareable_and_host_static_cells_are_refused() {
    let _g = serial();
    let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
    assert_eq!(ctx.global_value(&relok::Global::<u64>::new("relok_counter")).expect("shared on purpose"), 0);
    // A host static's cell (its name leaked as a `&'static str`, as a
    // `Global`'s is), and any name under the prefix those cells take.
    let cell: &'static str = Box::leak(relok::__kernel::global_name("some::STATIC").into_boxed_str());
    for name in [cell, "relok_host__some__STATIC"] {
        let hidden = relok::Global::<u32>::new(name);
        assert!(matches!(ctx.global_value(&hidden), Err(Error::ReservedGlobal { .. })), "{name}");
    }
}

#[relok::kernel]
fn count_to(x: &mut [u32], n: u32) {
    for _ in 0..n {
        x[0] += 1;
    }
}

#[relok::kernel]
fn count_forever(x: &mut [u32]) {
    loop {
        x[0] += 1;
    }
}

/// A loop whose body holds a bounds check (a call of the runtime library
/// that never runs) counts to its end, and an endless one is a fault, on
/// every device: lavapipe used to end both silently after 65 535 loop
/// iterations (docs/wgpu.md, "Long loops").
#[test]
fn a_bounds_checked_loop_counts_to_its_end_and_an_endless_one_faults() {
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let s = ctx.stream();
        let mut x = ctx.zeros::<u32>(1).expect("zeros");
        count_to::launch(&s, Grid::new(1, 1), &mut x, 100_000).expect("launch");
        s.synchronize().expect("runs");
        assert_eq!(x.download().expect("download"), [100_000], "{}", ctx.device_name());
        count_forever::launch(&s, Grid::new(1, 1), &mut x).expect("launch");
        let err = s.synchronize().expect_err("an endless loop");
        assert!(matches!(err, Error::Fault { .. }), "{}: {err}", ctx.device_name());
    }
}

/// Each block of 8 x 4 threads writes its 32 thread numbers reversed, plus
/// 100 times its width (`block_dim_x()`, the constant 8).
#[relok::kernel(block = (8, 4))]
fn reversed_tile(out: &mut [u32]) {
    let tile = shared::<u32, 32>();
    let t = thread_id_y() * 8 + thread_id_x();
    tile[t] = t as u32;
    sync_threads();
    out[block_id_x() * 32 + t] = tile[31 - t] + 100 * block_dim_x() as u32;
}

#[test]
fn a_kernel_with_a_block_shape_runs_with_that_shape_and_refuses_another_on_every_device() {
    let _g = serial();
    let want: Vec<u32> = (0..64).map(|i| 31 - i % 32 + 800).collect();
    for ctx in contexts(Strategy::Table) {
        let name = ctx.device_name();
        let mut out = ctx.zeros::<u32>(64).expect("zeros");
        let s = ctx.stream();
        reversed_tile::launch(&s, Grid::new(2, (8, 4)), &mut out).expect("launch");
        s.synchronize().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.download().expect("download"), want, "{name}");
        for threads in [(32, 1, 1), (8, 4, 2), (4, 8, 1)] {
            let e = reversed_tile::launch(&s, Grid::new(2, threads), &mut out).expect_err("another shape");
            assert!(
                matches!(&e, Error::Geometry { kernel, reason } if kernel == "reversed_tile" && reason.contains("requires blocks of [8, 4, 1]")),
                "{name}: {e}"
            );
        }
    }
}

/// docs/kernels.md's table of lines ("Rust against `.rk` and CUDA C") is
/// what the twins and the CUDA C listing below it hold, and every Rust
/// twin is within 1.1 times the lines of its CUDA C twin.
#[test]
fn the_documented_line_counts_are_the_twins_and_within_a_tenth_of_cuda_c() {
    let doc = include_str!("../../../docs/kernels.md");
    let section = &doc[doc.find("## Rust against `.rk` and CUDA C").expect("the section")..];
    // The CUDA C functions' lines, without blank lines (a `__device__`
    // function counts with the kernel after it, which calls it).
    let listing = &section[section.find("```c\n").expect("the CUDA C") + 5..];
    let listing = &listing[..listing.find("```").expect("its end")];
    let (mut c_lines, mut pending, mut current, mut depth) = (Vec::new(), 0, None::<(String, bool, usize)>, 0i32);
    for line in listing.lines().filter(|l| !l.trim().is_empty()) {
        if depth == 0 && (line.starts_with("__global__") || line.starts_with("__device__")) {
            let name = line[..line.find('(').expect("a signature")].rsplit(' ').next().expect("a name");
            current = Some((name.to_owned(), line.starts_with("__device__"), 0));
        }
        if let Some((_, _, n)) = &mut current {
            *n += 1;
        }
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if depth == 0
            && let Some((name, device, n)) = current.take()
        {
            if device {
                pending += n;
            } else {
                c_lines.push((name, n + pending));
                pending = 0;
            }
        }
    }
    let mut rows = 0;
    for row in section.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| kernel") && !l.starts_with("| ---"))
    {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() != 4 {
            break;
        }
        let name = cells[0].split(' ').next().expect("a name");
        let rust: usize = cells[1].parse().expect("a count");
        assert_eq!(rust, run::rust_lines(name), "{name}: the table's Rust lines");
        if cells[3] != "—" {
            let c: usize = cells[3].parse().expect("a count");
            let listed = c_lines.iter().find(|(n, _)| n == name).map(|(_, n)| *n);
            assert_eq!(Some(c), listed, "{name}: the table's CUDA C lines");
            assert!(rust * 10 <= c * 11, "{name}: {rust} lines of Rust, {c} of CUDA C");
        }
        rows += 1;
    }
    assert!(rows >= 14, "the table has a row per twin ({rows})");
}
