//! `Context::kernels`: several kernels loaded together — the cached ones
//! at once, the rest compiled in parallel — on every device found (the
//! cpu device always; wgpu and cuda when present, else skipped with a
//! message). Each result is checked against plain Rust.

mod common;

use common::serial;
use relok::{Context, Error, Grid, KernelSource, Program, Source, Strategy};

const SCALE: &str = include_str!("../../../examples/bench/scale.rk");

/// `scale.rk` as kernel `scale_<i>` with factor `i + 2` (as the
/// `first_launch` example's application).
fn scale_text(i: usize) -> String {
    SCALE
        .replace("const @factor: f32 = 2.0", &format!("const @factor: f32 = {}.0", i + 2))
        .replace("kernel @scale(", &format!("kernel @scale_{i}("))
}

/// Kernel `i` as a `Source` (a `static` in a real program).
fn scale_source(i: usize) -> Source {
    Source::new(Box::leak(format!("scale_{i}.rk").into_boxed_str()), Box::leak(scale_text(i).into_boxed_str()))
}

fn temp_dir(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("relok-kernels-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Launches each kernel `scale_<i>` of `kernels` (in the order of
/// `factors`) on `x` and checks `y = factor · x`.
fn check_scales(ctx: &Context, kernels: &[relok::Kernel], factors: &[f32]) {
    let x: Vec<f32> = (0..300).map(|i| i as f32 * 0.5 - 20.0).collect();
    let dx = ctx.upload(&x).expect("upload");
    let stream = ctx.stream();
    let mut outs = Vec::new();
    for k in kernels {
        let mut out = ctx.zeros::<f32>(x.len()).expect("zeros");
        k.launch(&stream, Grid::cover(x.len(), 64), (x.len() as u32, &dx, &mut out)).expect("launch");
        outs.push(out);
    }
    stream.synchronize().expect("synchronize");
    for ((k, out), factor) in kernels.iter().zip(outs).zip(factors) {
        let y = out.download().expect("download");
        assert!(
            y.iter().zip(&x).all(|(y, x)| *y == factor * x),
            "{}: @{} did not scale by {factor}",
            ctx.device_name(),
            k.name()
        );
    }
}

#[test]
fn kernels_loaded_together_are_the_ones_asked_for_in_order() {
    // Sources and programs mixed (as `&dyn KernelSource`), more kernels
    // than this machine has cores; every one must be the one asked for at
    // its place, with its own host value.
    let _serial = serial();
    let n = 12;
    let sources: Vec<Source> = (0..n).map(scale_source).collect();
    let programs: Vec<Program> = (0..n).map(|i| Program::parse(&scale_text(i)).expect("parses")).collect();
    let names: Vec<String> = (0..n).map(|i| format!("scale_{i}")).collect();
    // Every other kernel from a program, in reverse order of definition.
    let wanted: Vec<(&(dyn KernelSource + Sync), &str)> = (0..n)
        .rev()
        .map(|i| (if i % 2 == 0 { &sources[i] as &(dyn KernelSource + Sync) } else { &programs[i] }, names[i].as_str()))
        .collect();
    let factors: Vec<f32> = (0..n).rev().map(|i| (i + 2) as f32).collect();
    for ctx in common::contexts(Strategy::Table) {
        let kernels = ctx.kernels(&wanted).expect("loads");
        assert_eq!(
            kernels.iter().map(relok::Kernel::name).collect::<Vec<_>>(),
            wanted.iter().map(|w| w.1).collect::<Vec<_>>()
        );
        check_scales(&ctx, &kernels, &factors);
        assert_eq!(ctx.cache_stats().compiles, n as u64, "{}: one compile per kernel", ctx.device_name());
        assert!(ctx.kernels::<&Program>(&[]).expect("nothing to load").is_empty());
    }
}

#[test]
fn a_second_context_loads_them_all_from_the_store_without_compiling() {
    // The first context compiles every kernel (in parallel) and stores it;
    // a second one on the same cache directory, as the next process
    // would, finds them all by their text's source key.
    let _serial = serial();
    let dir = temp_dir("warm");
    let n = 9;
    let sources: Vec<Source> = (0..n).map(scale_source).collect();
    let names: Vec<String> = (0..n).map(|i| format!("scale_{i}")).collect();
    let wanted: Vec<(&Source, &str)> = sources.iter().zip(&names).map(|(s, n)| (s, n.as_str())).collect();
    let factors: Vec<f32> = (0..n).map(|i| (i + 2) as f32).collect();
    let cold = Context::builder().device("cpu").cache_dir(&dir).build().expect("cpu");
    check_scales(&cold, &cold.kernels(&wanted).expect("cold"), &factors);
    assert_eq!(cold.cache_stats().compiles, n as u64);
    let warm = Context::builder().device("cpu").cache_dir(&dir).build().expect("cpu");
    check_scales(&warm, &warm.kernels(&wanted).expect("warm"), &factors);
    let stats = warm.cache_stats();
    assert_eq!((stats.compiles, stats.store.hits), (0, n as u64), "{stats:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_error_is_the_first_failing_kernels_in_the_order_asked() {
    // Failures at several places among good kernels: whichever thread
    // finishes first, the error returned is the first one in order, and
    // names its place (the kernel, or the source's file:line:col).
    let _serial = serial();
    let good: Vec<Source> = (0..6).map(scale_source).collect();
    let broken = Source::new("broken.rk", "kernel @broken(v0: u32) {\n    v1: u32 = bogus\n}\n");
    let ctx = Context::builder().device("cpu").no_cache().build().expect("cpu");
    let wanted = [
        (&good[0], "scale_0"),
        (&good[1], "scale_1"),
        (&good[2], "missing"),
        (&broken, "broken"),
        (&good[3], "scale_3"),
    ];
    match ctx.kernels(&wanted) {
        Err(Error::NoSuchKernel { name, available }) => {
            assert_eq!((name.as_str(), available), ("missing", vec!["scale_2".to_owned()]))
        }
        other => panic!("expected the missing kernel's error, got {other:?}"),
    }
    let wanted = [(&good[4], "scale_4"), (&broken, "broken"), (&good[5], "missing")];
    match ctx.kernels(&wanted) {
        Err(Error::Parse { file, line, .. }) => assert_eq!((file.as_str(), line), ("broken.rk", 2)),
        other => panic!("expected the broken source's parse error, got {other:?}"),
    }
}
