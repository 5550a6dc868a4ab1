//! The artifact store end to end (issue: tier-1 store): kernels compiled in
//! one process load in another with zero compiles; damaged, stale, foreign
//! or misplaced entries are misses that are rebuilt, never a wrong kernel;
//! eight processes share one folder; nothing baked reaches the disk;
//! bundles start a program with zero compiles; the bytes are the same in
//! every process.
//!
//! Child processes are this test binary run again with
//! `RELOK_STORE_TEST_CHILD` set: [`child`] then does the child's part and
//! prints its counters as one JSON line.

mod common;

use common::repo;
use relok_cache::entry::{self, Kind};
use relok_cache::{Key, Lookup, Store};
use relok_cli::demo::run_example;
use relok_cli::examples::EXAMPLES;
use relok_cli::launch::Target;
use relok_compiler::artifact::{COMPILER_ID, CodeTarget, CompileOptions};
use relok_compiler::reloc::Target as HostTarget;
use relok_compiler::stencil::Stencil;
use relok_ir::Strategy;
use relok_runtime::stores::artifact_config;
use relok_runtime::{Backend, CacheStats, CpuDevice, Device, KernelArg, KernelCache, LaunchConfig, Session};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

const CHILD: &str = "RELOK_STORE_TEST_CHILD";
const WORDS: &str = include_str!("../../../examples/reloc/words.rk");
const STRATEGIES: [Strategy; 2] = [Strategy::Patch, Strategy::Table];

/// A folder removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let p = std::env::temp_dir().join(format!("relok-store-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        make_writable(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
fn make_writable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o700));
                make_writable(&e.path());
            }
        }
    }
}

#[cfg(not(unix))]
fn make_writable(_: &Path) {}

/// A message that reaches the terminal even when the test passes (libtest
/// hides a passing test's `eprintln!`).
fn note(msg: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("note: {msg}\n").as_bytes());
}

fn open(dir: &Path) -> KernelCache {
    KernelCache::open(dir).expect("store opens")
}

fn store(dir: &Path) -> Store {
    Store::open(artifact_config(dir).expect("config")).expect("store opens")
}

fn is_root() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
    }
    #[cfg(not(unix))]
    false
}

/// Loads `kernel` of `m` through `cache` on the cpu device and runs it once
/// on a new stream with `args`.
fn run_once(
    cache: &KernelCache,
    session: &Session,
    device: &CpuDevice,
    m: &relok_ir::VerifiedModule,
    kernel: &str,
    strategy: Strategy,
    args: &[KernelArg],
) {
    let loaded = relok_runtime::load::by_module(device, session, cache, m, kernel, strategy, None).expect("loads");
    let stream = device.new_stream().expect("stream");
    device.enqueue(&stream, &loaded, &LaunchConfig::default(), args, 0).expect("enqueues");
    device.synchronize(&stream).expect("runs");
}

/// Runs `words.rk` through `cache`; every word must equal the session's.
fn check_words(cache: &KernelCache, session: &Session, device: &CpuDevice, strategy: Strategy) {
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(WORDS).expect("words.rk parses")).expect("verifies");
    let out = device.alloc(32).expect("alloc");
    device.write(out, &[0; 32]).expect("write");
    run_once(cache, session, device, &m, "words", strategy, &[KernelArg::Ptr(out)]);
    let got: Vec<u64> = device
        .read(out, 32)
        .expect("read")
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let t: Vec<u8> = [7u32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    let want = [
        session.resolve(device, &HostTarget::Global { name: "relok_counter".into(), offset: 8 }).expect("global"),
        session.resolve(device, &session.symbol("alpha")).expect("symbol"),
        session.resolve(device, &session.value("[u32; 2]", &t)).expect("value"),
        session.resolve(device, &session.value("str", b"hello")).expect("string"),
    ];
    assert_eq!(got, want, "words under {strategy}");
}

/// Every example and `words.rk` under patch and table through `cache`,
/// each result checked; returns how many kernels that is.
fn run_all(cache: &KernelCache) -> u64 {
    let (session, device) = (Session::new(), Device::Cpu(CpuDevice::new(0)));
    let cpu = device.as_cpu().expect("a cpu device");
    for strategy in STRATEGIES {
        let target = Target { device: &device, session: &session, cache, strategy };
        for ex in EXAMPLES {
            let o = run_example(&target, ex).unwrap_or_else(|e| panic!("{}: {e}", ex.name));
            assert!(o.matches, "{} under {strategy} does not match its reference", ex.name);
        }
        check_words(cache, &session, cpu, strategy);
    }
    (EXAMPLES.len() as u64 + 1) * STRATEGIES.len() as u64
}

/// Fifty distinct small kernels, each with a symbol record and its own
/// constant.
fn fifty() -> Vec<(String, String)> {
    (0..50)
        .map(|i| {
            let text = format!(
                "kernel @k{i}(v0: ptr<global, word>, v1: ptr<global, u32>) {{\n    v2: word = ref :s{i}\n    store v0, v2\n    v3: u32 = const {}\n    store v1, v3\n    return\n}}\n",
                i * 7 + 1
            );
            (format!("k{i}"), text)
        })
        .collect()
}

/// Compiles, loads and runs the fifty kernels through `cache`, checking
/// each (kernel `i` uses patch when `i` is even, table otherwise).
fn run_fifty(cache: &KernelCache) {
    let (session, device) = (Session::new(), CpuDevice::new(0));
    for (i, (name, text)) in fifty().into_iter().enumerate() {
        let m = relok_ir::VerifiedModule::new(relok_ir::parse(&text).expect("parses")).expect("verifies");
        let strategy = if i % 2 == 0 { Strategy::Patch } else { Strategy::Table };
        let (w, u) = (device.alloc(8).expect("alloc"), device.alloc(4).expect("alloc"));
        run_once(cache, &session, &device, &m, &name, strategy, &[KernelArg::Ptr(w), KernelArg::Ptr(u)]);
        let word = u64::from_le_bytes(device.read(w, 8).expect("read").try_into().expect("8 bytes"));
        let val = u32::from_le_bytes(device.read(u, 4).expect("read").try_into().expect("4 bytes"));
        assert_eq!(word, session.resolve(&device, &session.symbol(&format!("s{i}"))).expect("symbol"), "{name}");
        assert_eq!(val, i as u32 * 7 + 1, "{name}");
    }
}

/// The child's part, when this binary runs as a child; a no-op otherwise.
#[test]
fn child() {
    let Ok(spec) = std::env::var(CHILD) else { return };
    let (what, dir) = spec.split_once(':').expect("what:dir");
    let cache = open(Path::new(dir));
    match what {
        "all" => {
            run_all(&cache);
        }
        "fifty" => run_fifty(&cache),
        other => panic!("unknown child {other}"),
    }
    let line = format!("CHILD-STATS {}\n", serde_json::to_string(&cache.stats()).expect("json"));
    std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes()).expect("stdout");
}

/// A command with the cache settings of the environment removed, so that
/// what the caller sets is all that applies.
fn clean(mut c: Command) -> Command {
    for v in ["RELOK_CACHE", "RELOK_CACHE_DIR", "RELOK_CACHE_MAX_BYTES", "RELOK_BINARY_CACHE"] {
        c.env_remove(v);
    }
    c
}

/// Starts this binary as a child doing `what` on the store under `dir`.
fn spawn_child(what: &str, dir: &Path) -> std::process::Child {
    clean(Command::new(std::env::current_exe().expect("test binary")))
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{what}:{}", dir.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("child starts")
}

/// Waits for a child; panics with its output if it failed; its counters.
fn child_stats(child: std::process::Child) -> serde_json::Value {
    let out = child.wait_with_output().expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line =
        stdout.lines().find_map(|l| l.split_once("CHILD-STATS ").map(|(_, r)| r)).expect("child prints its stats");
    serde_json::from_str(line).expect("stats are JSON")
}

#[test]
fn a_second_process_loads_every_kernel_from_the_store_and_compiles_nothing() {
    let dir = TempDir::new("cross");
    let a = open(dir.path());
    let n = run_all(&a);
    let sa = a.stats();
    assert_eq!((sa.compiles, sa.store.hits, sa.store.misses), (n, 0, n));
    assert_eq!(a.store().expect("store").entries().len() as u64, n);
    drop(a);
    // Process B: other addresses (a new process and session), same keys.
    let sb = child_stats(spawn_child("all", dir.path()));
    assert_eq!(sb["compiles"], 0, "{sb}");
    assert_eq!(sb["store"]["hits"], n, "{sb}");
    assert_eq!(sb["store"]["misses"], 0, "{sb}");
    assert_eq!(sb["store"]["corrupt"], 0, "{sb}");
}

#[test]
fn nothing_baked_reaches_the_disk() {
    let dir = TempDir::new("bake");
    let cache = open(dir.path());
    let (session, device) = (Session::new(), Device::Cpu(CpuDevice::new(0)));
    let cpu = device.as_cpu().expect("a cpu device");
    let target = Target { device: &device, session: &session, cache: &cache, strategy: Strategy::Bake };
    for ex in EXAMPLES {
        assert!(run_example(&target, ex).expect("runs").matches, "{}", ex.name);
    }
    check_words(&cache, &session, cpu, Strategy::Bake);
    // Again: the per-process, per-device map answers.
    check_words(&cache, &session, cpu, Strategy::Bake);
    let st = cache.stats();
    assert!(st.baked.hits >= 1 && st.compiles == EXAMPLES.len() as u64 + 1, "{st:?}");
    assert_eq!((st.store.bytes_written, st.store.hits, st.store.misses), (0, 0, 0));
    let s = cache.store().expect("store");
    assert!(s.entries().is_empty());
    let files: Vec<_> = walk(s.dir());
    assert!(files.is_empty(), "files in the store after baking: {files:?}");
    // On another device the baked kernel is compiled again, not reused.
    let other = CpuDevice::new(1);
    check_words(&cache, &session, &other, Strategy::Bake);
    assert_eq!(cache.stats().compiles, st.compiles + 1);
}

#[test]
fn two_sessions_never_share_baked_words() {
    // Words belong to one session: a baked kernel of one session must not
    // serve another, even on the same device through the same cache.
    let cache = KernelCache::uncached();
    let device = CpuDevice::new(0);
    let (a, b) = (Session::new(), Session::new());
    assert_ne!(a.id(), b.id());
    check_words(&cache, &a, &device, Strategy::Bake);
    check_words(&cache, &b, &device, Strategy::Bake);
    check_words(&cache, &a, &device, Strategy::Bake);
    assert_eq!(cache.stats().compiles, 2, "one bake per session, the third call a hit");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.path().is_dir() {
                out.extend(walk(&e.path()));
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// The smallest example with a relocation: symbols (table).
fn symbols_example() -> &'static relok_cli::examples::Example {
    EXAMPLES.iter().find(|e| e.name == "symbols").expect("symbols example")
}

fn key_of(example: &relok_cli::examples::Example, strategy: Strategy) -> Key {
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(example.source).expect("parses")).expect("verifies");
    Key(Stencil::new(&m, example.kernel).expect("stencil").key(CodeTarget::Cpu, strategy, CompileOptions::default()))
}

/// Runs the symbols example through a fresh cache on `dir`; it must match.
fn run_symbols(dir: &Path) -> CacheStats {
    let cache = open(dir);
    let (session, device) = (Session::new(), Device::Cpu(CpuDevice::new(0)));
    let target = Target { device: &device, session: &session, cache: &cache, strategy: Strategy::Table };
    let o = run_example(&target, symbols_example()).expect("runs");
    assert!(o.matches, "wrong result");
    cache.stats()
}

/// Fills the store with the symbols kernel, damages its entry with
/// `inject`, and checks: a miss, one compile, the right result, and the
/// entry valid again afterwards (the next process hits).
fn fault(name: &str, inject: impl Fn(&Path, &[u8])) -> CacheStats {
    let dir = TempDir::new(name);
    run_symbols(dir.path());
    let key = key_of(symbols_example(), Strategy::Table);
    let s = store(dir.path());
    let path = s.entry_path(key);
    let good = std::fs::read(&path).expect("entry written");
    drop(s);
    inject(&path, &good);
    let st = run_symbols(dir.path());
    assert_eq!((st.compiles, st.store.hits), (1, 0), "{name}: {st:?}");
    let again = run_symbols(dir.path());
    assert_eq!((again.compiles, again.store.hits), (0, 1), "{name}: rebuilt entry not valid: {again:?}");
    let s = store(dir.path());
    assert!(s.verify().iter().all(|(_, r)| r.is_ok()), "{name}: invalid entries remain");
    assert_eq!(std::fs::read(&path).expect("entry"), good, "{name}: the rebuilt entry differs");
    st
}

fn payload_of(entry_bytes: &[u8], key: Key) -> Vec<u8> {
    let expect = entry::Expect { kind: Kind::Artifact, identity: COMPILER_ID, key: Some(key) };
    entry::decode(entry_bytes, &expect).expect("valid entry").to_vec()
}

#[test]
fn damaged_stale_and_misplaced_entries_are_misses_that_are_rebuilt() {
    let key = key_of(symbols_example(), Strategy::Table);
    let corrupt = |st: CacheStats| assert_eq!(st.store.corrupt, 1, "{st:?}");
    corrupt(fault("truncated", |p, good| std::fs::write(p, &good[..good.len() / 2]).expect("write")));
    corrupt(fault("magic", |p, good| {
        let mut b = good.to_vec();
        b[..8].copy_from_slice(b"NOTRELOK");
        std::fs::write(p, b).expect("write")
    }));
    corrupt(fault("old-version", |p, good| {
        let b = entry::encode_version(0, Kind::Artifact, COMPILER_ID, key, &payload_of(good, key));
        std::fs::write(p, b).expect("write")
    }));
    corrupt(fault("other-compiler", |p, good| {
        let b = entry::encode(Kind::Artifact, "relok-0.0.9-0123456789abcdef", key, &payload_of(good, key));
        std::fs::write(p, b).expect("write")
    }));
    corrupt(fault("empty", |p, _| std::fs::write(p, b"").expect("write")));
    corrupt(fault("directory", |p, _| {
        std::fs::remove_file(p).expect("remove");
        std::fs::create_dir_all(p.join("inside")).expect("mkdir");
    }));
    // Another kernel's entry copied to this key's path: its header names
    // its own key.
    corrupt(fault("other-kernel", |p, _| {
        let dir = p.ancestors().nth(4).expect("cache root").to_owned();
        let cache = open(&dir);
        let (session, device) = (Session::new(), Device::Cpu(CpuDevice::new(0)));
        let saxpy = &EXAMPLES[0];
        let target = Target { device: &device, session: &session, cache: &cache, strategy: Strategy::Table };
        run_example(&target, saxpy).expect("saxpy runs");
        let other = std::fs::read(cache.store().expect("store").entry_path(key_of(saxpy, Strategy::Table)))
            .expect("saxpy entry");
        std::fs::write(p, other).expect("write")
    }));
    // Another kernel's artifact framed under this key (a valid entry whose
    // payload is for something else): the artifact check rejects it.
    corrupt(fault("other-artifact", |p, _| {
        let saxpy = &EXAMPLES[0];
        let m = relok_ir::VerifiedModule::new(relok_ir::parse(saxpy.source).expect("parses")).expect("verifies");
        let st = Stencil::new(&m, saxpy.kernel).expect("stencil");
        let a =
            relok_compiler::artifact::compile(&st, CodeTarget::Cpu, Strategy::Table, CompileOptions::default(), None)
                .expect("compiles");
        let b = entry::encode(Kind::Artifact, COMPILER_ID, key, &a.to_payload().expect("payload"));
        std::fs::write(p, b).expect("write")
    }));
    // A temporary file left by a killed writer and no entry: a plain miss;
    // a collection an hour later removes the temporary file.
    let st = fault("temp-left", |p, good| {
        let tmp = p.with_file_name(format!(".tmp-{}-99999-1-0", p.file_name().and_then(|n| n.to_str()).unwrap_or("x")));
        std::fs::write(&tmp, &good[..good.len() / 3]).expect("write");
        std::fs::remove_file(p).expect("remove");
    });
    assert_eq!((st.store.corrupt, st.store.misses), (0, 1));
}

#[test]
fn a_temporary_file_of_a_killed_writer_is_never_read_and_is_collected() {
    let dir = TempDir::new("temp");
    run_symbols(dir.path());
    let s = store(dir.path());
    let key = key_of(symbols_example(), Strategy::Table);
    let path = s.entry_path(key);
    let tmp = path.with_file_name(".tmp-partial-1-2-3");
    std::fs::write(&tmp, b"RELOKENT partial").expect("write");
    assert!(matches!(s.get(key), Lookup::Hit(_)));
    assert!(s.entries().iter().all(|e| !e.path.ends_with(".tmp-partial-1-2-3")));
    assert_eq!(s.collect_at(SystemTime::now()).temps_removed, 0, "a fresh temporary file may be a live writer's");
    assert_eq!(s.collect_at(SystemTime::now() + Duration::from_secs(7200)).temps_removed, 1);
    assert!(!tmp.exists());
}

#[test]
fn every_flipped_byte_of_an_entry_is_a_miss_and_a_correct_rebuild() {
    let dir = TempDir::new("flip");
    run_symbols(dir.path());
    let key = key_of(symbols_example(), Strategy::Table);
    let path = store(dir.path()).entry_path(key);
    let good = std::fs::read(&path).expect("entry");
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 1 << (i % 8);
        std::fs::write(&path, &bad).expect("write");
        let st = run_symbols(dir.path());
        assert_eq!((st.compiles, st.store.hits, st.store.corrupt), (1, 0, 1), "byte {i}: {st:?}");
        assert_eq!(std::fs::read(&path).expect("entry"), good, "byte {i}: not replaced");
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_folder_or_an_unusable_path_still_gives_correct_results() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("readonly");
    let s = store(dir.path());
    let key = key_of(symbols_example(), Strategy::Table);
    let shard = s.entry_path(key).parent().expect("shard").to_owned();
    std::fs::create_dir_all(&shard).expect("shard");
    let store_dir = s.dir().to_owned();
    drop(s);
    for d in [&shard, &store_dir] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o500)).expect("chmod");
    }
    let st = run_symbols(dir.path());
    assert_eq!(st.compiles, 1);
    if is_root() {
        note("running as root, so a read-only folder is still writable; only the result is checked");
    } else {
        assert_eq!(st.store.write_errors, 1, "{st:?}");
    }
    for d in [&shard, &store_dir] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    // The shard's place taken by a file: every write fails, results stay right.
    let dir = TempDir::new("shardfile");
    let s = store(dir.path());
    let shard = s.entry_path(key).parent().expect("shard").to_owned();
    std::fs::write(&shard, b"not a folder").expect("write");
    drop(s);
    let st = run_symbols(dir.path());
    assert_eq!((st.compiles, st.store.write_errors), (1, 1), "{st:?}");
    // A cache root under a regular file cannot be opened at all.
    let root = dir.path().join("file");
    std::fs::write(&root, b"x").expect("write");
    assert!(KernelCache::open(&root.join("cache")).is_err());
}

#[cfg(unix)]
#[test]
fn folders_others_can_write_and_entries_of_other_users_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("insecure");
    let root = dir.path().join("cache");
    drop(open(&root));
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let err = KernelCache::open(&root).expect_err("a world-writable root is refused").to_string();
    assert!(err.contains("lets other users write it"), "{err}");
    // The CLI warns and runs uncached.
    let out = clean(Command::new(env!("CARGO_BIN_EXE_relok")))
        .args([
            "run",
            "examples/saxpy.rk",
            "-g",
            "1",
            "-b",
            "4",
            "-a",
            "4",
            "-a",
            "2",
            "-a",
            "[1,2,3,4]",
            "-a",
            "[1,1,1,1]",
        ])
        .current_dir(repo())
        .env("RELOK_CACHE_DIR", &root)
        .output()
        .expect("relok runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: artifact cache disabled for this run")
            && stderr.contains("lets other users write it"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("[3.0, 5.0, 7.0, 9.0]"));
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    if !is_root() {
        note("SKIPPED: entries owned by another user (needs root to chown)");
        return;
    }
    fault("foreign-owner", |p, _| std::os::unix::fs::chown(p, Some(4242), Some(4242)).expect("chown"));
}

#[test]
fn eight_processes_share_one_folder() {
    let dir = TempDir::new("concurrent");
    for round in 0..3 {
        let children: Vec<_> = (0..8).map(|_| spawn_child("fifty", dir.path())).collect();
        let stats: Vec<serde_json::Value> = children.into_iter().map(child_stats).collect();
        if round > 0 {
            for st in &stats {
                assert_eq!(st["compiles"], 0, "round {round}: {st}");
                assert_eq!(st["store"]["hits"], 50, "round {round}: {st}");
            }
        }
        let s = store(dir.path());
        let v = s.verify();
        assert_eq!(v.len(), 50, "round {round}");
        assert!(v.iter().all(|(_, r)| r.is_ok()), "round {round}: {v:?}");
        assert!(walk(s.dir()).iter().all(|p| !p.to_string_lossy().contains(".tmp-")), "temporary files left");
    }
}

#[test]
fn a_bundle_starts_a_program_with_zero_compiles() {
    let files: Vec<PathBuf> = example_files();
    let (bytes, items) =
        relok_cli::cachecmd::precompile(&files, &[CodeTarget::Cpu], &STRATEGIES, &[], &mut |_, _, _| {})
            .expect("precompiles");
    assert!(items.len() as u64 >= (EXAMPLES.len() as u64 + 1) * 2);
    let cache = KernelCache::uncached();
    assert_eq!(
        cache.load_bundle(&bytes).expect("bundle loads").artifacts,
        2 * items.len(),
        "each artifact and its source alias"
    );
    let n = run_all(&cache);
    let st = cache.stats();
    assert_eq!((st.compiles, st.bundle.hits), (0, n), "{st:?}");
    // A damaged bundle is refused as a whole, with the reason.
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 1;
    assert!(KernelCache::uncached().load_bundle(&bad).is_err());
    assert!(
        relok_cli::cachecmd::precompile(&files, &[CodeTarget::Cpu], &[Strategy::Bake], &[], &mut |_, _, _| {})
            .expect_err("bake cannot be precompiled")
            .contains("cannot be precompiled")
    );
}

fn example_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for d in ["examples", "examples/reloc"] {
        for e in std::fs::read_dir(repo().join(d)).expect("examples").flatten() {
            if e.path().extension().is_some_and(|x| x == "rk") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    files
}

fn relok(args: &[&str], cache_dir: &Path) -> std::process::Output {
    let out = clean(Command::new(env!("CARGO_BIN_EXE_relok")))
        .args(args)
        .env("RELOK_CACHE_DIR", cache_dir)
        .output()
        .expect("relok runs");
    assert!(out.status.success(), "relok {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Every kernel of the examples and of the `test run` / `test roundtrip`
/// file tests (their header turned into a comment) gives the same artifact
/// bytes in two processes; and `relok demo` fills two stores with the same
/// files.
#[test]
fn artifacts_are_byte_identical_across_processes() {
    let dir = TempDir::new("stable");
    let mut files: Vec<String> = example_files().iter().map(|p| p.display().to_string()).collect();
    for e in std::fs::read_dir(repo().join("tests/filetests")).expect("filetests").flatten() {
        let text = std::fs::read_to_string(e.path()).expect("read");
        let Some(rest) = text.strip_prefix("test run\n").or_else(|| text.strip_prefix("test roundtrip\n")) else {
            continue;
        };
        let p = dir.path().join(e.file_name());
        std::fs::write(&p, format!("; file test\n{rest}")).expect("write");
        files.push(p.display().to_string());
    }
    assert!(files.len() > 30, "{files:?}");
    let bundle = |name: &str| {
        let out = dir.path().join(name);
        let mut args = vec!["precompile", "--out", out.to_str().expect("utf-8")];
        args.extend(files.iter().map(String::as_str));
        relok(&args, &dir.path().join("unused"));
        std::fs::read(&out).expect("bundle")
    };
    let (a, b) = (bundle("a.bundle"), bundle("b.bundle"));
    assert_eq!(a, b, "precompiled bundles differ between processes");
    assert!(relok_cache::bundle::decode(&a, COMPILER_ID).expect("decodes").len() > 60);
    // Stores filled by `relok demo` in two processes hold the same bytes.
    let (ca, cb) = (dir.path().join("ca"), dir.path().join("cb"));
    for c in [&ca, &cb] {
        relok(&["demo", "--strategy", "patch"], c);
        relok(&["demo", "--strategy", "table"], c);
    }
    let files_of = |root: &Path| {
        let mut v: Vec<(PathBuf, Vec<u8>)> = walk(store(root).dir())
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n != "stats.log" && n != "gc-stamp"))
            .map(|p| (p.strip_prefix(root).expect("under root").to_owned(), std::fs::read(&p).expect("read")))
            .collect();
        v.sort();
        v
    };
    let (fa, fb) = (files_of(&ca), files_of(&cb));
    assert_eq!(fa.len(), EXAMPLES.len() * 2);
    assert!(fa == fb, "the two stores differ");
}

#[test]
fn demo_twice_compiles_nothing_the_second_time_and_cache_commands_report_it() {
    let dir = TempDir::new("demo");
    let first = relok(&["demo", "--json"], dir.path());
    let second = relok(&["demo", "--json"], dir.path());
    let summary = |o: &std::process::Output| -> serde_json::Value {
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        serde_json::from_str(text.lines().last().expect("summary line")).expect("json")
    };
    assert_eq!(summary(&first)["summary"]["compiled"], EXAMPLES.len());
    assert_eq!(summary(&second)["summary"]["compiled"], 0);
    assert_eq!(summary(&second)["summary"]["artifact_store"], EXAMPLES.len());
    let stats = relok(&["cache", "stats", "--json"], dir.path());
    let v: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("json");
    assert_eq!(v["entries"], EXAMPLES.len());
    assert_eq!(v["lifetime"]["compiles"], EXAMPLES.len());
    assert_eq!(v["lifetime"]["hits"], EXAMPLES.len());
    assert_eq!(v["binary"], serde_json::json!([]));
    // A binary archive folder (tier 2) is reported from its stats log.
    let archive = dir.path().join("binary/NVIDIA_H200-sm90-driver13000-580");
    std::fs::create_dir_all(&archive).expect("mkdir");
    std::fs::write(archive.join("stats.log"), "v1 3 1 1 0 0 0 0 0\n").expect("write");
    let stats = relok(&["cache", "stats", "--json"], dir.path());
    let v: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("json");
    assert_eq!(v["binary"][0]["name"], "NVIDIA_H200-sm90-driver13000-580");
    assert_eq!((&v["binary"][0]["lifetime"]["hits"], &v["binary"][0]["entries"]), (&3.into(), &0.into()));
    let list = relok(&["cache", "list"], dir.path());
    assert_eq!(String::from_utf8_lossy(&list.stdout).lines().count(), EXAMPLES.len());
    assert!(String::from_utf8_lossy(&list.stdout).contains("@saxpy table cpu"));
    relok(&["cache", "verify"], dir.path());
    // A damaged entry makes verify fail and name it.
    let s = store(dir.path());
    let victim = s.entries()[0].clone();
    std::fs::write(&victim.path, b"garbage").expect("write");
    let out = clean(Command::new(env!("CARGO_BIN_EXE_relok")))
        .args(["cache", "verify"])
        .env("RELOK_CACHE_DIR", dir.path())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&victim.key.to_hex()));
    // Clear, import a bundle, and the demo compiles nothing again.
    relok(&["cache", "clear"], dir.path());
    assert!(s.entries().is_empty());
    let bundle = dir.path().join("app.bundle");
    let mut args = vec![
        "precompile".to_owned(),
        "--out".into(),
        bundle.display().to_string(),
        "--strategy".into(),
        "table".into(),
    ];
    args.extend(example_files().iter().map(|p| p.display().to_string()));
    relok(&args.iter().map(String::as_str).collect::<Vec<_>>(), dir.path());
    relok(&["cache", "import", bundle.to_str().expect("utf-8")], dir.path());
    let third = relok(&["demo", "--json"], dir.path());
    assert_eq!(summary(&third)["summary"]["compiled"], 0);
    let gc = relok(&["cache", "gc"], dir.path());
    assert!(String::from_utf8_lossy(&gc.stdout).contains("0 evicted"));
}

/// `relok cache clear` on a store it cannot write says what it left and
/// exits 1 (as root, modes do not bind: the folder is made immutable, and
/// the test says it skipped when that is not possible either).
#[test]
fn cache_clear_that_cannot_remove_fails() {
    let dir = TempDir::new("clear-fails");
    let root = dir.0.as_path();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_relok")).args(args).env("RELOK_CACHE_DIR", root).output().expect("relok runs")
    };
    let example = repo().join("examples/saxpy.rk").display().to_string();
    assert!(
        run(&["run", &example, "--arg", "4", "--arg", "2.0", "--arg", "iota:4", "--arg", "iota:4", "--block", "4"])
            .status
            .success()
    );
    let stats = run(&["cache", "stats"]);
    let text = String::from_utf8_lossy(&stats.stdout).to_string();
    let Some(store) = text.lines().find_map(|l| l.strip_prefix("artifact store")).map(|p| PathBuf::from(p.trim()))
    else {
        panic!("no store path in {text}");
    };
    let shards: Vec<_> =
        std::fs::read_dir(&store).expect("store").flatten().filter(|e| e.path().is_dir()).map(|e| e.path()).collect();
    let lock = |flag: &str| {
        shards.iter().all(|s| Command::new("chattr").arg(flag).arg(s).status().is_ok_and(|st| st.success()))
    };
    let mut perms_locked = false;
    if !lock("+i") {
        use std::os::unix::fs::PermissionsExt;
        for s in &shards {
            let _ = std::fs::set_permissions(s, std::fs::Permissions::from_mode(0o500));
        }
        perms_locked = true;
    }
    let out = run(&["cache", "clear"]);
    if perms_locked {
        use std::os::unix::fs::PermissionsExt;
        for s in &shards {
            let _ = std::fs::set_permissions(s, std::fs::Permissions::from_mode(0o700));
        }
    } else {
        lock("-i");
    }
    if out.status.success() && perms_locked {
        note(
            "SKIPPED cache_clear_that_cannot_remove_fails: neither chattr nor the folder's mode could stop the removal (root without chattr)",
        );
        return;
    }
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout {} stderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not removed:"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// An artifact with forged code and a recomputed checksum (what a plain
/// checksum cannot catch): `relok cache import` rebuilds every artifact
/// and rejects the bundle, naming the artifact and the field; `relok
/// cache verify --rebuild` names a forged store entry, while plain
/// `verify` cannot tell. A corrupted host value is rejected by the loader
/// and the entry rebuilt.
#[test]
fn forged_artifacts_are_rejected_by_rebuilding_them() {
    use relok_compiler::artifact::Artifact;
    let dir = TempDir::new("forged");
    let lookup = repo().join("examples/reloc/lookup.rk");
    let bundle = dir.path().join("app.bundle");
    relok(
        &[
            "precompile",
            "--out",
            bundle.to_str().expect("utf-8"),
            "--strategy",
            "table",
            "--target",
            "cpu",
            lookup.to_str().expect("utf-8"),
        ],
        dir.path(),
    );
    let bytes = std::fs::read(&bundle).expect("bundle");
    let entries = relok_cache::bundle::decode(&bytes, COMPILER_ID).expect("decodes");
    assert_eq!(entries.len(), 2, "the artifact and its source-key alias");
    let read = |e: &relok_cache::bundle::BundleEntry<'_>| {
        let expect = entry::Expect { kind: Kind::Artifact, identity: COMPILER_ID, key: Some(e.key) };
        Artifact::from_payload(entry::decode(e.bytes, &expect).expect("entry")).expect("artifact")
    };
    let e = entries.iter().find(|e| read(e).alias.is_none()).expect("the artifact");
    let key = e.key;
    let mut a = read(e);
    // The lowered code reads table[x % 256]: make it % 255, a valid kernel.
    let code = String::from_utf8(a.code.clone()).expect("utf-8");
    assert!(code.contains("const 256"), "{code}");
    a.code = code.replacen("const 256", "const 255", 1).into_bytes();
    let forged_entry = entry::encode(Kind::Artifact, COMPILER_ID, key, &a.to_payload().expect("payload"));
    let forged = dir.path().join("forged.bundle");
    std::fs::write(&forged, relok_cache::bundle::encode(COMPILER_ID, [forged_entry.as_slice()]).expect("bundle"))
        .expect("write");
    let import = |extra: &[&str]| {
        clean(Command::new(env!("CARGO_BIN_EXE_relok")))
            .args(["cache", "import", forged.to_str().expect("utf-8")])
            .args(extra)
            .env("RELOK_CACHE_DIR", dir.path())
            .output()
            .expect("runs")
    };
    let out = import(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&key.to_hex()) && err.contains("its code differs") && err.contains("nothing imported"),
        "{err}"
    );
    let s = store(dir.path());
    assert!(s.entries().is_empty(), "a rejected bundle imports nothing");
    // `--trust` imports it; plain verify passes it, `--rebuild` does not.
    assert!(import(&["--trust"]).status.success());
    relok(&["cache", "verify"], dir.path());
    let out = clean(Command::new(env!("CARGO_BIN_EXE_relok")))
        .args(["cache", "verify", "--rebuild"])
        .env("RELOK_CACHE_DIR", dir.path())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&key.to_hex()) && text.contains("its code differs"), "{text}");
    // The genuine bundle imports, and verifies under --rebuild.
    relok(&["cache", "clear"], dir.path());
    relok(&["cache", "import", bundle.to_str().expect("utf-8")], dir.path());
    relok(&["cache", "verify", "--rebuild"], dir.path());
    // A host value's byte changed (checksum recomputed): the loader
    // rejects the entry and compiles again, and the kernel runs right.
    let mut a = read(e);
    a.values[0].bytes[0] ^= 0x40;
    s.put(key, &a.to_payload().expect("payload")).expect("put");
    let out = clean(Command::new(env!("CARGO_BIN_EXE_relok")))
        .args([
            "run",
            lookup.to_str().expect("utf-8"),
            "--grid",
            "1",
            "--block",
            "4",
            "--arg",
            "4",
            "--arg",
            "[0, 1, 2, 3]",
            "--arg",
            "zeros:4",
        ])
        .env("RELOK_CACHE_DIR", dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("[3, 10, 31, 66]"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    relok(&["cache", "verify", "--rebuild"], dir.path());
}
