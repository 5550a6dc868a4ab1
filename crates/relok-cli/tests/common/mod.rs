//! What the GPU device tests (cuda.rs, wgpu.rs) share: running a kernel
//! with `--arg`-syntax arguments, the words a session must deliver, the
//! isolation check of two devices, a visible skip, temporary folders.

#![allow(dead_code, reason = "each test binary uses part of it")]

use relok_cli::args::{ArgValue, parse_args};
use relok_cli::launch::{Target, prepare, run_prepared};
use relok_compiler::reloc::Target as HostTarget;
use relok_runtime::cpu::LaunchConfig;
use relok_runtime::{Device, DeviceMemory, KernelCache, Session};
use std::path::{Path, PathBuf};

pub const WORDS: &str = include_str!("../../../../examples/reloc/words.rk");
pub const COUNTER: &str = include_str!("../../../../examples/reloc/counter.rk");

/// Says on stderr that `test` was skipped and why (the test then passes).
pub fn skip(test: &str, why: &str) {
    let msg = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
}

/// Runs `kernel` of `src` with `args` (the `--arg` syntax) on the target.
pub fn run(target: &Target<'_>, src: &str, kernel: &str, args: &[&str], config: &LaunchConfig) -> Vec<ArgValue> {
    let strategy = target.strategy;
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(src).expect("parses")).expect("verifies");
    let f = &m.funcs[m.func_by_name(kernel).expect("kernel")];
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let values = parse_args(f, &args).expect("arguments");
    let prepared = prepare(target, &m, kernel).unwrap_or_else(|e| panic!("@{kernel} ({strategy}): {e}"));
    let mut buffers = Vec::new();
    let out = run_prepared(target, &prepared, config, &values, &mut buffers)
        .unwrap_or_else(|e| panic!("@{kernel} ({strategy}): {e}"));
    for b in buffers {
        target.device.free_bytes(b).expect("free");
    }
    out.args
}

/// The words `words.rk` must write on `device`, as the session resolves
/// them: a runtime global + 8, a symbol, a value, a string.
pub fn session_words(session: &Session, device: &Device) -> Vec<u64> {
    let t: Vec<u8> = [7u32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    [
        HostTarget::Global { name: "relok_counter".into(), offset: 8 },
        session.symbol("alpha"),
        session.value("[u32; 2]", &t),
        session.value("str", b"hello"),
    ]
    .iter()
    .map(|t| session.resolve(device, t).expect("resolves"))
    .collect()
}

/// The runtime global `relok_counter` on `d` (0 before its first use).
pub fn counter(session: &Session, d: &Device) -> u64 {
    session
        .global_cell(d, "relok_counter")
        .map_or(0, |c| u64::from_le_bytes(d.read_bytes(c, 8).expect("read").try_into().expect("8 bytes")))
}

/// Runs words.rk and counter.rk on `a` and `b` through one session under
/// every strategy both support: each device gets its own copies and cells
/// (different words where the object lives in device memory), results
/// are right on both, and a runtime global counts per device. With
/// `distinct_words` the devices share one address space (cuda), so their
/// copies' and cells' words must differ too.
pub fn isolated(a: &Device, b: &Device, what: &str, distinct_words: bool) {
    assert_ne!(a.device_id(), b.device_id(), "{what}");
    let (session, cache) = (Session::new(), KernelCache::uncached());
    for &strategy in a.strategies().iter().filter(|s| b.strategies().contains(s)) {
        let words = |d: &Device| {
            let target = Target { device: d, session: &session, cache: &cache, strategy };
            let out = run(&target, WORDS, "words", &["zeros:4"], &LaunchConfig::default());
            let ArgValue::Buffer(_, w) = out[0].clone() else { panic!("a buffer") };
            assert_eq!(w, session_words(&session, d), "{what} ({strategy}): words on {}", d.name());
            w
        };
        let (wa, wb) = (words(a), words(b));
        assert_eq!(wa[1], wb[1], "{what}: a symbol's word is the process's, the same on every device");
        for i in [0, 2, 3].into_iter().filter(|_| distinct_words) {
            assert_ne!(wa[i], wb[i], "{what} ({strategy}): word {i} must be each device's own copy");
        }
        let (before_a, before_b) = (counter(&session, a), counter(&session, b));
        let target = Target { device: a, session: &session, cache: &cache, strategy };
        run(&target, COUNTER, "count", &["zeros:64"], &LaunchConfig::linear(1, 64));
        assert_eq!(
            (counter(&session, a), counter(&session, b)),
            (before_a + 64, before_b),
            "{what} ({strategy}): counters are per device"
        );
    }
}

/// The env variable that makes this test binary's `child` test process B.
pub const CHILD: &str = "RELOK_TEST_CHILD";

/// Process B's part: when this binary runs as the child, `run(dir)` and
/// print its counters for the parent.
pub fn as_child(run: impl FnOnce(&Path) -> serde_json::Value) {
    let Ok(dir) = std::env::var(CHILD) else { return };
    let line = format!("CHILD-STATS {}\n", run(Path::new(&dir)));
    std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes()).expect("stdout");
}

/// Runs this test binary's `child` test as a new process on `dir`; its
/// counters.
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

/// A fresh temporary folder for `test`.
pub fn temp_dir(prefix: &str, name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("relok-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).expect("temp dir");
    p
}

/// `tests/filetests/run_faults.rk`'s kernels without its run lines (the
/// repository is `RELOK_REPO` for a test binary run elsewhere).
pub fn fault_kernels() -> String {
    let repo = std::env::var_os("RELOK_REPO")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), PathBuf::from);
    let source = std::fs::read_to_string(repo.join("tests/filetests/run_faults.rk")).expect("read run_faults.rk");
    source.lines().filter(|l| !l.starts_with("; run:") && *l != "test run").map(|l| format!("{l}\n")).collect()
}

/// `run_faults.rk`'s global out-of-bounds lines as `error:` lines naming
/// access and size: the cpu device and `gpu` in checked mode (the
/// default) fail alike, an in-bounds line between them still runs, and
/// the device stays usable (the last line).
pub fn checked_mode_faults_as_the_cpu_device(gpu: &Device) {
    let lines = [
        "; run: @oob_load(4, zeros:4) => error: out-of-bounds global read of 4 bytes at 0x",
        "; run: @oob_load(3, [1, 2, 3, 4]) => _, [4, 2, 3, 4]",
        "; run: @oob_store(zeros:4) block=8 => error: out-of-bounds global write of 4 bytes at 0x",
        "; run: @oob_atomic(zeros:2) block=3 => error: out-of-bounds global atomic of 8 bytes at 0x",
        "; run: @oob_store(zeros:8) block=8 => [0, 1, 2, 3, 4, 5, 6, 7]",
    ];
    let text = format!("test run\n{}\n{}", lines.join("\n"), fault_kernels());
    let cpu = Device::Cpu(relok_runtime::CpuDevice::new(0));
    for device in [&cpu, gpu] {
        assert_eq!(relok_cli::filetest::run_file("checked.rk", &text, device), Ok(0), "on {}", device.name());
    }
}
