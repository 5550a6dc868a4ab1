//! What the runtime-level GPU tests (`cuda_device.rs`, `wgpu_device.rs`)
//! share: a visible skip, kernels loaded and run with byte buffers on a
//! `Device`, the words a session must deliver, one session over two
//! devices, saxpy checked against Rust, temporary folders and a second
//! process of the test binary.

#![allow(dead_code, reason = "each test binary uses part of it")]

use relok_compiler::reloc::Target as HostTarget;
use relok_ir::Strategy;
use relok_runtime::{Device, DeviceMemory, DevicePtr, Kernel, KernelArg, KernelCache, LaunchConfig, Session};
use std::path::{Path, PathBuf};

pub const WORDS: &str = include_str!("../../../../examples/reloc/words.rk");
pub const COUNTER: &str = include_str!("../../../../examples/reloc/counter.rk");
pub const SAXPY: &str = include_str!("../../../../examples/saxpy.rk");
pub const REDUCE: &str = include_str!("../../../../examples/reduce.rk");

/// Says on stderr that `test` was skipped and why (the test then passes).
pub fn skip(test: &str, why: &str) {
    let msg = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
}

/// Kernel `name` of `src` on `device` (through `cache`, with `strategy`).
pub fn load(
    device: &Device,
    session: &Session,
    cache: &KernelCache,
    src: &str,
    name: &str,
    strategy: Strategy,
) -> Kernel {
    let module = relok_ir::VerifiedModule::new(relok_ir::parse(src).expect("parses")).expect("verifies");
    device.load(session, cache, &module, name, strategy, None).unwrap_or_else(|e| panic!("@{name} ({strategy}): {e}"))
}

/// A launch argument: a scalar, or a buffer uploaded with these bytes and
/// read back after the launch.
pub enum Arg {
    Scalar(KernelArg),
    Bytes(Vec<u8>),
}

/// Launches `kernel` on a new stream of `device` and waits: every buffer
/// argument's bytes afterwards (the buffers are freed).
pub fn launch(
    device: &Device,
    session: &Session,
    kernel: &Kernel,
    config: &LaunchConfig,
    args: &[Arg],
) -> Vec<Vec<u8>> {
    let mut buffers: Vec<(DevicePtr, usize)> = Vec::new();
    let kernel_args: Vec<KernelArg> = args
        .iter()
        .map(|a| match a {
            Arg::Scalar(k) => *k,
            Arg::Bytes(bytes) => {
                let p = device.alloc_filled(bytes).expect("upload");
                buffers.push((p, bytes.len()));
                KernelArg::Ptr(p)
            }
        })
        .collect();
    let stream = device.stream().expect("stream");
    device
        .launch(session, &stream, kernel, config, &kernel_args)
        .unwrap_or_else(|e| panic!("@{} on {}: {e}", kernel.entry(), device.name()));
    buffers
        .into_iter()
        .map(|(p, len)| {
            let bytes = device.read_bytes(p, len as u64).expect("read");
            device.free_bytes(p).expect("free");
            bytes
        })
        .collect()
}

/// Little-endian `u64`s.
pub fn u64s(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

/// Little-endian `f32`s.
pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()
}

/// Bytes of `f32`s.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Runs `words.rk` on `device`: the four words it wrote.
pub fn words(device: &Device, session: &Session, cache: &KernelCache, strategy: Strategy) -> Vec<u64> {
    let k = load(device, session, cache, WORDS, "words", strategy);
    u64s(&launch(device, session, &k, &LaunchConfig::default(), &[Arg::Bytes(vec![0; 32])])[0])
}

/// Runs `counter.rk` with `threads` threads in one block on `device`.
pub fn count(device: &Device, session: &Session, cache: &KernelCache, strategy: Strategy, threads: u32) {
    let k = load(device, session, cache, COUNTER, "count", strategy);
    launch(device, session, &k, &LaunchConfig::linear(1, threads), &[Arg::Bytes(vec![0; 8 * threads as usize])]);
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
        let on = |d: &Device| {
            let w = words(d, &session, &cache, strategy);
            assert_eq!(w, session_words(&session, d), "{what} ({strategy}): words on {}", d.name());
            w
        };
        let (wa, wb) = (on(a), on(b));
        assert_eq!(wa[1], wb[1], "{what}: a symbol's word is the process's, the same on every device");
        for i in [0, 2, 3].into_iter().filter(|_| distinct_words) {
            assert_ne!(wa[i], wb[i], "{what} ({strategy}): word {i} must be each device's own copy");
        }
        let (before_a, before_b) = (counter(&session, a), counter(&session, b));
        count(a, &session, &cache, strategy, 64);
        assert_eq!(
            (counter(&session, a), counter(&session, b)),
            (before_a + 64, before_b),
            "{what} ({strategy}): counters are per device"
        );
    }
}

/// Checks the words every kind of host object gets on `device` under each
/// of its strategies against the session's, and that the value's and the
/// string's copies there hold their bytes. With `heap`, host objects live
/// in the device's heap (wgpu): their words are heap offsets.
pub fn words_equal_the_sessions(device: &Device, heap: bool) {
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let t: Vec<u8> = [7u32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    for &strategy in device.strategies() {
        let out = words(device, &session, &cache, strategy);
        let want = session_words(&session, device);
        assert_eq!(out, want, "{strategy}");
        if heap {
            assert!(want[2] < 1 << 32 && want[3] < 1 << 32, "{want:x?}");
        }
        assert_eq!(device.read_bytes(DevicePtr(want[2]), 8).expect("read"), t, "{strategy}");
        assert_eq!(device.read_bytes(DevicePtr(want[3]), 5).expect("read"), b"hello", "{strategy}");
    }
}

/// Runs `@saxpy` (table) on `device` through an uncached kernel cache and
/// checks it against Rust: `y = 2.5 x + y` on 4000 elements.
pub fn saxpy_is_right(device: &Device) {
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let k = load(device, &session, &cache, SAXPY, "saxpy", Strategy::Table);
    let n = 4000usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let args = [
        Arg::Scalar(KernelArg::u32(n as u32)),
        Arg::Scalar(KernelArg::f32(2.5)),
        Arg::Bytes(f32_bytes(&x)),
        Arg::Bytes(f32_bytes(&y)),
    ];
    let out = launch(device, &session, &k, &LaunchConfig::linear(16, 256), &args);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.5 * x + y).collect();
    assert_eq!(f32s(&out[1]), want, "saxpy on {}", device.name());
}

/// Runs `@reduce` (table) on `device` through an uncached kernel cache and
/// checks it against Rust: the sums of 0..1000 per block of 256.
pub fn reduce_is_right(device: &Device) {
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let k = load(device, &session, &cache, REDUCE, "reduce", Strategy::Table);
    let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let args = [Arg::Scalar(KernelArg::u32(1000)), Arg::Bytes(f32_bytes(&x)), Arg::Bytes(vec![0; 16])];
    let out = launch(device, &session, &k, &LaunchConfig::linear(4, 256), &args);
    let want: Vec<f32> = (0..4).map(|b| (b * 256..((b + 1) * 256).min(1000)).map(|i| i as f32).sum()).collect();
    assert_eq!(f32s(&out[1]), want, "reduce on {}", device.name());
}

/// A fresh temporary folder for `test` of this process.
pub fn temp_dir(prefix: &str, name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("relok-runtime-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).expect("temp dir");
    p
}

/// The env variable that makes this test binary's `child` test the
/// second process, on the folder it names.
pub const CHILD: &str = "RELOK_TEST_CHILD";

/// The second process's part: when this binary runs as the child, `run`
/// on its folder and print what it returns for the parent.
pub fn as_child(run: impl FnOnce(&Path) -> String) {
    let Ok(dir) = std::env::var(CHILD) else { return };
    let line = format!("CHILD-STATS {}\n", run(Path::new(&dir)));
    std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes()).expect("stdout");
}

/// Runs this test binary's `child` test as a new process on `dir`: the
/// line it printed.
pub fn second_process(dir: &Path) -> String {
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir)
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout.lines().find_map(|l| l.split_once("CHILD-STATS ").map(|(_, r)| r.to_owned())).expect("stats")
}
