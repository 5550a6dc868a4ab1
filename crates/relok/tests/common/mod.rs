//! What the facade's device tests share: where the repository is
//! ([`repo`]), a message that is always shown,
//! one test at a time on the GPUs, and the contexts to test; kernel
//! arguments as text and runs with them ([`values`]), the example kernels
//! with their references ([`examples`]), the file tests' run lines through
//! the facade ([`filetest`]), a second process of the test binary
//! ([`second_process`]).

#![allow(dead_code, reason = "each test binary uses part of it")]

pub mod examples;
pub mod filetest;
pub mod host_objects;
pub mod values;

use relok::{Context, Error, Strategy};
use std::path::{Path, PathBuf};

/// The repository root, whose `examples/` and `tests/` the tests read:
/// `RELOK_REPO` when it is set (a test binary run from another checkout,
/// as scripts/gpu-run.sh runs them on the GPU machine), else the checkout
/// the binary was built in.
pub fn repo() -> PathBuf {
    std::env::var_os("RELOK_REPO").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), PathBuf::from)
}

/// A message that reaches the terminal even when the test passes (libtest
/// captures `eprintln!`): what was skipped is always said.
pub fn note(msg: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("note: {msg}\n").as_bytes());
}

/// Held by every test: one test at a time uses the GPUs. On NVIDIA's
/// Vulkan driver (580), several wgpu devices driven from concurrent threads
/// of one process hung (docs/wgpu.md, "Known problems"); one at a time they
/// pass.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes the GPUs for the calling test.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The contexts to test under `strategy`, the cpu device first
/// (`RELOK_TEST_DEVICES=wgpu`, `=cuda` or `=cuda,wgpu` narrows the GPUs
/// tried; see [`gpu_context`] for each).
pub fn contexts(strategy: Strategy) -> Vec<Context> {
    let mut out = vec![Context::builder().device("cpu").strategy(strategy).no_cache().build().expect("cpu opens")];
    let wanted = std::env::var("RELOK_TEST_DEVICES").unwrap_or_else(|_| "cuda,wgpu".to_owned());
    for spec in ["wgpu", "cuda"] {
        if !wanted.split(',').any(|w| w.trim() == spec) {
            note(&format!("skipping the {spec} device: not in RELOK_TEST_DEVICES={wanted}"));
            continue;
        }
        out.extend(gpu_context(spec, strategy));
    }
    out
}

/// A context on GPU device `spec` (`wgpu` or `cuda`) under `strategy`, or
/// `None`, said on stderr, when there is none or it does not offer the
/// strategy; `RELOK_REQUIRE_WGPU=1` / `RELOK_REQUIRE_CUDA=1` make a missing
/// one a failure.
pub fn gpu_context(spec: &str, strategy: Strategy) -> Option<Context> {
    let required = std::env::var(format!("RELOK_REQUIRE_{}", spec.to_uppercase())).is_ok_and(|v| v == "1");
    match Context::builder().device(spec).strategy(strategy).no_cache().build() {
        Ok(ctx) => Some(ctx),
        Err(Error::Compile(relok_runtime::ProgramError::Unsupported { .. })) => {
            note(&format!("skipping the {spec} device under {strategy}: it does not offer that strategy"));
            None
        }
        Err(e) if required => panic!("{spec} is required here: {e}"),
        Err(e) => {
            note(&format!("skipping the {spec} device: {e}"));
            None
        }
    }
}

/// Runs `launch` over a buffer of `input` and an output buffer of
/// `want.len()` zeros on every device of [`contexts`] (under table) and
/// compares the output with `want`, element by element (`what` names
/// the kernel in a failure).
pub fn check<T, U>(
    what: &str,
    input: &[T],
    want: &[U],
    launch: impl Fn(&relok::Stream, &relok::Buffer<T>, &mut relok::Buffer<U>),
) where
    T: relok::Element,
    U: relok::Element + PartialEq + std::fmt::Debug,
{
    let _g = serial();
    for ctx in contexts(Strategy::Table) {
        let x = ctx.upload(input).expect("upload");
        let mut out = ctx.zeros::<U>(want.len()).expect("zeros");
        let s = ctx.stream();
        launch(&s, &x, &mut out);
        s.synchronize().unwrap_or_else(|e| panic!("{what} on {}: {e}", ctx.device_name()));
        let got = out.download().expect("download");
        assert_eq!(got.len(), want.len(), "{what} on {}", ctx.device_name());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g, w, "{what} on {}: out[{i}]", ctx.device_name());
        }
    }
}

/// The cpu device under every strategy (bake, patch, table), uncached.
pub fn cpu_contexts() -> Vec<Context> {
    Strategy::ALL
        .iter()
        .map(|&s| Context::builder().device("cpu").strategy(s).no_cache().build().expect("cpu opens"))
        .collect()
}

/// Contexts on GPU device `spec` (`cuda`, `cuda:1`, `wgpu`), one per
/// strategy it offers in `Strategy::ALL`'s order (bake, patch, table),
/// uncached; or `None` after saying on stderr that `test` skips it, when
/// it does not open — unless `RELOK_REQUIRE_CUDA=1` / `RELOK_REQUIRE_WGPU=1`
/// (by the device's kind) makes that a failure (`scripts/gpu-run.sh` and
/// `.ci/run` set them: a run there cannot pass by skipping).
pub fn gpu_contexts(spec: &str, test: &str) -> Option<Vec<Context>> {
    let kind = spec.split(':').next().unwrap_or(spec);
    let required = std::env::var(format!("RELOK_REQUIRE_{}", kind.to_uppercase())).is_ok_and(|v| v == "1");
    let open = |s: Strategy| Context::builder().device(spec).strategy(s).no_cache().build();
    if let Err(e) = open(Strategy::Table) {
        assert!(!required, "{test}: RELOK_REQUIRE_{} is set but {spec} does not open: {e}", kind.to_uppercase());
        note(&format!("{test}: skipping the {spec} device: {e}"));
        return None;
    }
    let mut contexts = Vec::new();
    for &s in &Strategy::ALL {
        match open(s) {
            Ok(ctx) => contexts.push(ctx),
            Err(Error::Compile(relok_runtime::ProgramError::Unsupported { .. })) => {}
            Err(e) => panic!("{test}: {spec} opened under table but not under {s}: {e}"),
        }
    }
    Some(contexts)
}

/// A fresh temporary folder for `test` of this process.
pub fn temp_dir(prefix: &str, name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("relok-facade-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).expect("temp dir");
    p
}

/// The env variable that makes this test binary's `child` test the
/// second process, on the folder it names.
pub const CHILD: &str = "RELOK_TEST_CHILD";

/// The second process's part: when this binary runs as the child, `run`
/// on its folder, its counters printed for the parent (else nothing).
pub fn as_child(run: impl FnOnce(&Path) -> serde_json::Value) {
    let Ok(dir) = std::env::var(CHILD) else { return };
    let line = format!("CHILD-STATS {}\n", run(Path::new(&dir)));
    std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes()).expect("stdout");
}

/// Runs this test binary's `child` test as a new process on `dir`: the
/// counters it printed.
pub fn second_process(dir: &Path) -> serde_json::Value {
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir)
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find_map(|l| l.split_once("CHILD-STATS ").map(|(_, r)| r)).expect("stats");
    serde_json::from_str(line).expect("json")
}
