//! The wgpu device against the cpu device (the oracle), under table and
//! bake: every example, every file test's run lines, every f64 operation
//! bit for bit on 16 384 edge-weighted operand pairs, the words of every
//! kind of host object, a runtime global per device, exceptions (and the
//! device still usable after one), two devices in one process, `patch`
//! refused, a second process that loads every WGSL artifact from the store
//! and its pipelines from the pipeline-cache archive, and archive faults.
//!
//! Runs on the first adapter wgpu lists (`RELOK_WGPU_ADAPTER` narrows the
//! list): lavapipe in CI (`.ci/run` installs it), NVIDIA's Vulkan driver on
//! a GPU machine. Without an adapter every test prints that it was skipped
//! and passes.

use relok_cli::args::ArgValue;
use relok_cli::demo::run_example;
use relok_cli::examples::EXAMPLES;
use relok_cli::launch::{Target, prepare};
use relok_ir::{Scalar, Strategy};
use relok_runtime::cpu::LaunchConfig;
use relok_runtime::wgpu::{PipelineCacheState, WgpuDevice, list_adapters};
use relok_runtime::{CpuDevice, Device, DeviceMemory, KernelCache, Session};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use relok_cli::filetest::{FAULT_LINES, PATCH_ONLY_LINES};

/// The run lines of the refused kernels below (`@atom_xchg_cas` has two,
/// `@fma_f64` four, `@fatom_add_f64` one; `@fma_f64_folded` runs: its
/// `fma` is folded to the exact constant first; the math library's `f64`
/// functions and `pow`: `@pow_f32` 13, `@pow_f64` 8, `@nan_f64` 6,
/// `@spec_f64` 5, `@un_f64` 2, `@exact_f64` 2, `@dom_f64` and
/// `@exact_f64_folded` one each).
const REFUSED_LINES: usize = 52;
use common::{
    COUNTER, WORDS, as_child, checked_mode_faults_as_the_cpu_device, counter, fault_kernels, isolated, run,
    second_process, session_words, skip, temp_dir,
};

/// The first adapter as a device (no archive), or `None` after printing
/// why the test is skipped — unless `RELOK_REQUIRE_WGPU` is set (CI sets
/// it: there lavapipe must be found).
fn gpu(test: &str) -> Option<Device> {
    if list_adapters().is_empty() {
        let why = "wgpu finds no adapter (install mesa-vulkan-drivers for lavapipe)";
        assert!(std::env::var_os("RELOK_REQUIRE_WGPU").is_none(), "{test}: RELOK_REQUIRE_WGPU is set but {why}");
        skip(test, why);
        return None;
    }
    Some(Device::Wgpu(Box::new(WgpuDevice::open(0).expect("adapter 0 opens"))))
}

/// The repository root (`RELOK_REPO` for a test binary run elsewhere).
fn repo() -> PathBuf {
    std::env::var_os("RELOK_REPO").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), PathBuf::from)
}

#[test]
fn every_example_equals_the_cpu_device_under_table_and_bake() {
    let Some(gpu) = gpu("examples") else { return };
    assert_eq!(gpu.strategies(), [Strategy::Bake, Strategy::Table]);
    let cpu = Device::Cpu(CpuDevice::new(0));
    let (session, cache) = (Session::new(), KernelCache::uncached());
    for &strategy in gpu.strategies() {
        for ex in EXAMPLES {
            let on = |device: &Device| {
                let target = Target { device, session: &session, cache: &cache, strategy };
                run_example(&target, ex)
                    .unwrap_or_else(|e| panic!("{} ({strategy}) on {}: {e}", ex.name, device.name()))
            };
            let (g, c) = (on(&gpu), on(&cpu));
            assert!(g.matches, "{} ({strategy}): the wgpu result differs from the Rust reference", ex.name);
            // The math examples (softmax, gelu) within their tolerance of
            // the reference (above; a WGSL driver may flush subnormals and
            // round the library's divisions differently), the rest bit for bit.
            if ex.tolerance == relok_cli::examples::Tolerance::EXACT {
                assert_eq!(g.args, c.args, "{} ({strategy}): wgpu and cpu differ", ex.name);
            }
            assert_eq!(g.exception, c.exception, "{} ({strategy})", ex.name);
        }
    }
}

#[test]
fn every_file_test_run_line_passes_on_wgpu() {
    let Some(gpu) = gpu("file tests") else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/filetests"))
        .expect("tests/filetests")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("run_")))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{} run files", files.len());
    let (mut failures, mut skipped) = (Vec::new(), 0);
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read");
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        match relok_cli::filetest::run_file(&name, &text, &gpu) {
            Ok(n) => skipped += n,
            Err(errs) => failures.extend(errs),
        }
    }
    skip(
        &format!("{skipped} file-test run lines"),
        "`fault:` lines are the cpu device's; `strategy=patch` lines cannot run on wgpu",
    );
    // Exactly the documented lines (tests/filetests.rs pins them: 19
    // `fault:` lines, no `strategy=patch` line): a run that skipped
    // everything cannot pass.
    assert_eq!(skipped, FAULT_LINES + PATCH_ONLY_LINES, "file-test run lines skipped on {}", gpu.name());
    // What WGSL cannot express is refused at compile time, by name:
    // exactly these kernels' 64-bit atomics other than add and pointers
    // without a static base (docs/wgpu.md; f64 is emulated on its bits).
    const REFUSED: [(&str, &str); 17] = [
        ("@pow_f32", "pow on f32 (the math library computes it in f64"),
        ("@pow_f64", "pow on f64 (the math library computes it in f64"),
        ("@nan_f64", "log on f64 (the math library computes it in f64"),
        ("@spec_f64", "exp on f64 (the math library computes it in f64"),
        ("@un_f64", "exp on f64 (the math library computes it in f64"),
        ("@dom_f64", "log on f64 (the math library computes it in f64"),
        ("@exact_f64", "exp2 on f64 (the math library computes it in f64"),
        ("@exact_f64_folded", "exp2 on f64 (the math library computes it in f64"),
        ("@fma_f64", "fma on f64 (no exact emulation on wgpu"),
        ("@fatom_add_f64", "atomic.add on f64 (WGSL has only 32-bit atomics)"),
        ("@atom_minmax_i64", "atomic.min on i64 (WGSL has only 32-bit atomics)"),
        ("@atom_minmax_u64", "atomic.min on u64 (WGSL has only 32-bit atomics)"),
        ("@atom_xchg_cas", "atomic.xchg on i64 (WGSL has only 32-bit atomics)"),
        ("@shared_u64", "atomic.min on u64 (WGSL has only 32-bit atomics)"),
        ("@sel_ptr", "a select of pointers with different bases"),
        ("@use_ptr", "a value of type ptr<global, u64> here"),
        ("@ptr_in_local", "a value of type ptr<global, i64> here"),
    ];
    let (refused, failures): (Vec<String>, Vec<String>) =
        failures.into_iter().partition(|f| f.contains("is not supported by the WGSL backend"));
    for r in &refused {
        let documented = REFUSED.iter().any(|(k, why)| r.contains(&format!("WGSL: {k}: ")) && r.contains(why));
        assert!(documented, "an undocumented refusal: {r}");
        skip(r, "refused by the WGSL backend");
    }
    // One refusal per run line of those kernels, and no more.
    assert_eq!(refused.len(), REFUSED_LINES, "run lines refused by the WGSL backend:\n{}", refused.join("\n"));
    assert!(failures.is_empty(), "{} failures on {}:\n{}", failures.len(), gpu.name(), failures.join("\n"));
}

#[test]
fn words_of_every_kind_of_host_object_equal_the_sessions() {
    let Some(gpu) = gpu("words") else { return };
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let t: Vec<u8> = [7u32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    for &strategy in gpu.strategies() {
        let target = Target { device: &gpu, session: &session, cache: &cache, strategy };
        let out = run(&target, WORDS, "words", &["zeros:4"], &LaunchConfig::default());
        let want = session_words(&session, &gpu);
        assert_eq!(out[0], ArgValue::Buffer(Scalar::Word, want.clone()), "{strategy}");
        // Host objects live in the device's heap: their words are heap
        // offsets, and the copy there holds the value's bytes.
        assert!(want[2] < 1 << 32 && want[3] < 1 << 32, "{want:x?}");
        assert_eq!(gpu.read_bytes(relok_runtime::DevicePtr(want[2]), 8).expect("read"), t, "{strategy}");
        assert_eq!(gpu.read_bytes(relok_runtime::DevicePtr(want[3]), 5).expect("read"), b"hello", "{strategy}");
    }
}

#[test]
fn runtime_globals_are_per_device_and_exceptions_leave_the_device_usable() {
    let Some(gpu) = gpu("globals") else { return };
    let other = Device::Wgpu(Box::new(WgpuDevice::open(0).expect("adapter 0 opens twice")));
    assert_ne!(gpu.device_id(), other.device_id());
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let config = LaunchConfig::linear(2, 64);
    for &strategy in gpu.strategies() {
        let start = counter(&session, &gpu);
        let target = Target { device: &gpu, session: &session, cache: &cache, strategy };
        let out = run(&target, COUNTER, "count", &["zeros:128"], &config);
        let ArgValue::Buffer(_, mut olds) = out[0].clone() else { panic!("a buffer") };
        olds.sort_unstable();
        assert_eq!(olds, (start..start + 128).collect::<Vec<_>>(), "{strategy}: every thread took one ticket");
        assert_eq!(counter(&session, &gpu), start + 128, "{strategy}");
        assert_eq!(counter(&session, &other), 0, "{strategy}: the other device's counter is untouched");
    }
    // An exception comes back with its text, and the device runs on.
    let throw = EXAMPLES.iter().find(|e| e.name == "throw").expect("throw example");
    for &strategy in gpu.strategies() {
        let target = Target { device: &gpu, session: &session, cache: &cache, strategy };
        let o = run_example(&target, throw).expect("runs");
        assert!(
            o.matches && o.exception.as_deref().is_some_and(|e| e.contains("negative input")),
            "{strategy}: {:?}",
            o.exception
        );
        let saxpy = run_example(&target, &EXAMPLES[0]).expect("saxpy after an exception");
        assert!(saxpy.matches, "{strategy}");
    }
}

#[test]
fn two_wgpu_devices_in_one_process_are_isolated() {
    let Some(a) = gpu("two devices") else { return };
    let b = Device::Wgpu(Box::new(WgpuDevice::open(0).expect("adapter 0 opens twice")));
    isolated(&a, &b, "two wgpu devices", false);
}

#[test]
fn patch_is_refused_on_wgpu_with_the_reason() {
    let Some(gpu) = gpu("patch") else { return };
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(WORDS).expect("parses")).expect("verifies");
    let target = Target { device: &gpu, session: &session, cache: &cache, strategy: Strategy::Patch };
    let e = prepare(&target, &m, "words").expect_err("patch refused");
    assert!(e.to_string().contains("patching is impossible on wgpu"), "{e}");
}

/// Adapter 0 with its pipeline-cache archive under `root`.
fn archived(root: &Path) -> WgpuDevice {
    WgpuDevice::open_in(0, Some(root.to_owned())).expect("adapter 0")
}

/// Every example under table through a cache (artifact store and
/// pipeline-cache archive) on `dir`: the cache's and the device's counters
/// (the device is dropped, saving its pipeline cache, before they return).
fn run_all_cached(dir: &Path) -> serde_json::Value {
    let gpu = Device::Wgpu(Box::new(archived(dir)));
    let (session, cache) = (Session::new(), KernelCache::open(dir).expect("store"));
    let target = Target { device: &gpu, session: &session, cache: &cache, strategy: Strategy::Table };
    for ex in EXAMPLES {
        assert!(run_example(&target, ex).expect("runs").matches, "{}", ex.name);
    }
    let Device::Wgpu(d) = &gpu else { unreachable!("built as wgpu") };
    let saved = d.save_pipeline_cache();
    serde_json::json!({ "cache": cache.stats(), "loads": d.load_stats(), "saved": saved })
}

/// The child's part (a no-op unless this binary runs as the child).
#[test]
fn child() {
    as_child(run_all_cached);
}

#[test]
fn a_second_process_loads_every_wgsl_artifact_from_the_store_and_its_pipelines_from_the_archive() {
    let Some(gpu) = gpu("cross-process") else { return };
    let Device::Wgpu(d) = &gpu else { unreachable!("built as wgpu") };
    let supported = d.has_pipeline_cache();
    drop(gpu);
    let dir = temp_dir("wgpu", "store");
    let n = EXAMPLES.len() as u64;
    let a = run_all_cached(&dir);
    assert_eq!((&a["cache"]["compiles"], &a["cache"]["store"]["hits"]), (&n.into(), &0.into()), "{a}");
    if supported {
        assert_eq!(a["loads"]["pipeline_cache"], "miss", "{a}");
        assert!(a["saved"].as_u64().is_some_and(|b| b > 0), "process A saves its pipeline cache: {a}");
    }
    let b = second_process(&dir);
    // Process B: no relok compile; the pipeline cache from the archive.
    assert_eq!(b["cache"]["compiles"], 0, "{b}");
    assert_eq!(b["cache"]["store"]["hits"], n, "{b}");
    if supported {
        assert_eq!(b["loads"]["pipeline_cache"], "hit", "{b}");
        assert!(b["loads"]["pipeline_cache_loaded_bytes"].as_u64().is_some_and(|x| x > 0), "{b}");
    } else {
        skip("pipeline-cache hit", "this adapter's backend has no pipeline cache");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs saxpy (table) on a device with the archive under `root`; returns
/// the archive state it opened with. The device is dropped: its pipeline
/// cache is saved.
fn saxpy_with_archive(root: &Path) -> PipelineCacheState {
    let device = Device::Wgpu(Box::new(archived(root)));
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let target = Target { device: &device, session: &session, cache: &cache, strategy: Strategy::Table };
    assert!(run_example(&target, &EXAMPLES[0]).expect("runs").matches, "saxpy");
    let Device::Wgpu(d) = &device else { unreachable!("built as wgpu") };
    d.load_stats().pipeline_cache
}

#[test]
fn a_bad_pipeline_cache_blob_is_a_miss_then_correct() {
    let Some(gpu) = gpu("archive faults") else { return };
    let Device::Wgpu(d) = &gpu else { unreachable!("built as wgpu") };
    if !d.has_pipeline_cache() {
        skip("archive faults", "this adapter's backend has no pipeline cache");
        return;
    }
    drop(gpu);
    let root = temp_dir("wgpu", "archive");
    assert_eq!(saxpy_with_archive(&root), PipelineCacheState::Miss);
    assert_eq!(saxpy_with_archive(&root), PipelineCacheState::Hit);
    let probe = archived(&root);
    let store = probe.archive().expect("archive");
    let entry = store.entries().into_iter().next().expect("the blob's entry");
    let (identity, key) = (store.config().identity.clone(), entry.key);
    let good = std::fs::read(&entry.path).expect("read");
    let h = relok_cache::entry::header(&good).expect("header");
    let payload = good[h.payload_at..good.len() - 32].to_vec();
    let header_len = payload.windows(2).position(|w| w == b"\n\n").expect("our header") + 2;
    drop(probe);
    let framed = |p: &[u8]| relok_cache::entry::encode(relok_cache::entry::Kind::Binary, &identity, key, p);
    let mut other_adapter = String::from_utf8(payload[..header_len].to_vec()).expect("text header");
    other_adapter = other_adapter.replace("\nvendor ", "\nvendor 0x1");
    let other_adapter = [other_adapter.as_bytes(), &payload[header_len..]].concat();
    let mut other_driver = payload.clone();
    other_driver.splice(header_len - 2..header_len - 2, b"-other".iter().copied());
    let random: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let faults: [(&str, Vec<u8>, PipelineCacheState); 5] = [
        ("truncated", good[..good.len() / 2].to_vec(), PipelineCacheState::Rejected),
        ("another adapter", framed(&other_adapter), PipelineCacheState::Rejected),
        ("another driver", framed(&other_driver), PipelineCacheState::Rejected),
        ("random bytes", random.clone(), PipelineCacheState::Rejected),
        // Our header intact, wgpu's blob random: wgpu refuses its own
        // header and starts empty (`fallback`); the run is still right.
        (
            "a random blob under our header",
            framed(&[&payload[..header_len], &random[..]].concat()),
            PipelineCacheState::Hit,
        ),
    ];
    for (what, bytes, state) in faults {
        std::fs::write(&entry.path, &bytes).expect("write");
        assert_eq!(saxpy_with_archive(&root), state, "{what}");
        // The fault was replaced by a good blob when the device dropped.
        assert_eq!(saxpy_with_archive(&root), PipelineCacheState::Hit, "after {what}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn bench_wgpu_reports_what_served_each_first_launch() {
    let Some(gpu) = gpu("bench wgpu") else { return };
    let Device::Wgpu(d) = &gpu else { unreachable!("built as wgpu") };
    let (miss, hit) = if d.has_pipeline_cache() { ("miss", "hit") } else { ("off", "off") };
    drop(gpu);
    // RELOK_BIN: the relok binary, for a test binary run elsewhere.
    let relok = std::env::var_os("RELOK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_relok")), PathBuf::from);
    let out = Command::new(relok).args(["bench", "wgpu", "--quick", "--json"]).output().expect("relok runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON record");
    let starts = r["starts"].as_array().expect("starts");
    let mode = |m: &str| starts.iter().find(|s| s["mode"] == m).unwrap_or_else(|| panic!("mode {m}: {r}"));
    assert_eq!(
        (&mode("cold")["last"]["compiles"], &mode("cold")["last"]["pipeline_cache"]),
        (&1.into(), &miss.into()),
        "{r}"
    );
    assert_eq!(
        (&mode("store")["last"]["compiles"], &mode("store")["last"]["store_hits"]),
        (&0.into(), &1.into()),
        "{r}"
    );
    let archived = &mode("store+archive")["last"];
    assert_eq!((&archived["compiles"], &archived["pipeline_cache"]), (&0.into(), &hit.into()), "{r}");
    assert!(starts.iter().all(|s| s["median_us"].as_f64().is_some_and(|t| t > 0.0)), "{r}");
    assert_eq!(r["launches"].as_array().map(Vec::len), Some(2), "{r}");
}

/// The heap grows (by copying into a larger buffer) while another thread
/// launches kernels that count in a runtime global there: no word changes,
/// no object loses its bytes, and no launch's writes are lost.
#[test]
fn the_heap_grows_under_concurrent_launches_without_losing_a_write() {
    let Some(gpu) = gpu("heap growth") else { return };
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let target = Target { device: &gpu, session: &session, cache: &cache, strategy: Strategy::Table };
    let before = run(&target, WORDS, "words", &["zeros:4"], &LaunchConfig::default());
    let (rounds, per_round) = (40u64, 64u64);
    let start = counter(&session, &gpu);
    let objects: Vec<(relok_runtime::DevicePtr, u8)> = std::thread::scope(|s| {
        let launches = s.spawn(|| {
            for _ in 0..rounds {
                run(&target, COUNTER, "count", &["zeros:64"], &LaunchConfig::linear(1, per_round as u32));
            }
        });
        // 40 objects of 16 KiB: the 64 KiB heap grows several times.
        let objects = (0..40u8)
            .map(|i| {
                let p = gpu.alloc_object(16 << 10).expect("heap object");
                gpu.write_bytes(p, &vec![i; 16 << 10]).expect("write");
                (p, i)
            })
            .collect();
        launches.join().expect("launch thread");
        objects
    });
    assert_eq!(counter(&session, &gpu), start + rounds * per_round, "every launch's increments are in the heap");
    for (p, i) in objects {
        assert_eq!(gpu.read_bytes(p, 16 << 10).expect("read"), vec![i; 16 << 10], "object {i}");
    }
    let after = run(&target, WORDS, "words", &["zeros:4"], &LaunchConfig::default());
    assert_eq!(before, after, "words are heap offsets: growth changes none");
    assert_eq!(after[0], ArgValue::Buffer(Scalar::Word, session_words(&session, &gpu)));
}

/// `relok precompile --target wgsl` ships every example as a table
/// artifact (patch is skipped for WGSL): a process that loads the bundle
/// compiles nothing on the wgpu device.
#[test]
fn a_precompiled_wgsl_bundle_runs_every_example_without_compiling() {
    let Some(gpu) = gpu("wgsl bundle") else { return };
    let mut files: Vec<PathBuf> = EXAMPLES.iter().map(|e| repo().join(e.file)).collect();
    files.dedup();
    let target = [relok_compiler::artifact::CodeTarget::Wgsl];
    let (bytes, items) =
        relok_cli::cachecmd::precompile(&files, &target, &[Strategy::Patch, Strategy::Table], &[], &mut |_, _, _| {})
            .expect("precompiles");
    assert!(items.iter().all(|i| i.strategy == Strategy::Table), "patch is skipped for WGSL");
    let (session, cache) = (Session::new(), KernelCache::uncached());
    assert_eq!(
        cache.load_bundle(&bytes).expect("bundle loads").artifacts,
        2 * items.len(),
        "each artifact and its source alias"
    );
    let t = Target { device: &gpu, session: &session, cache: &cache, strategy: Strategy::Table };
    for ex in EXAMPLES {
        assert!(run_example(&t, ex).expect("runs").matches, "{}", ex.name);
    }
    assert_eq!(cache.stats().compiles, 0, "{:?}", cache.stats());
    let only_patch = relok_cli::cachecmd::precompile(&files, &target, &[Strategy::Patch], &[], &mut |_, _, _| {});
    assert!(only_patch.is_err_and(|e| e.contains("patching is impossible on wgpu")));
}

/// f64 (emulated on its bits by the WGSL backend) equals the cpu device
/// bit for bit on edge-weighted operand pairs: every operation, compare
/// and conversion.
#[test]
fn f64_operations_equal_the_cpu_device_bit_for_bit() {
    let Some(gpu) = gpu("f64") else { return };
    let cpu = Device::Cpu(CpuDevice::new(0));
    let (session, cache) = (Session::new(), KernelCache::uncached());
    // Operands: random bits, specials, subnormals, near powers of two,
    // close pairs (cancellation), from a fixed generator.
    let specials = [
        0u64,
        1 << 63,
        1,
        0x000f_ffff_ffff_ffff,
        0x0010_0000_0000_0000,
        0x7fef_ffff_ffff_ffff,
        0x7ff0_0000_0000_0000,
        0x7ff0_0000_0000_0001,
        0x7ff8_0000_0000_0000,
        0x7ff8_dead_beef_0001,
        0x3ff0_0000_0000_0000,
        0x3fb9_9999_9999_999a,
        0x4330_0000_0000_0001,
        0x43e0_0000_0000_0000,
        0x41e0_0000_0000_0000,
        0x3690_0000_0000_0000,
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let n = 16384usize;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..n {
        let r = next();
        let sign = (r >> 20) << 63;
        let x = match i % 6 {
            0 => r,
            1 => specials[(r % 16) as usize] ^ sign,
            2 => r & 0x800f_ffff_ffff_ffff,
            3 => (((r >> 8) % 2047) << 52) ^ (r & 7) ^ sign,
            _ => ((1000 + (r >> 40) % 100) << 52) | (next() & 0x000f_ffff_ffff_ffff) | sign,
        };
        let r = next();
        let y = match i % 5 {
            0 => r,
            1 => specials[(r % 16) as usize] ^ ((r >> 30) << 63),
            2 => x.wrapping_add((r % 7) << 52).wrapping_add(r >> (r % 64)) ^ ((r >> 9) << 63),
            3 => x ^ (r & 0xfff) ^ (1 << 63),
            _ => r & 0x800f_ffff_ffff_ffff,
        };
        a.push(x);
        b.push(y);
    }
    let ops64 = ["add", "sub", "mul", "div", "rem", "min", "max"];
    let mut body = String::from(
        "    v4: u32 = block_id.x\n    v5: u32 = block_dim.x\n    v6: u32 = thread_id.x\n    v7: u32 = mul v4, v5\n    v8: u32 = add v7, v6\n    v9: u64 = load v0[v8]\n    v10: u64 = load v1[v8]\n    v11: f64 = bitcast v9\n    v12: f64 = bitcast v10\n    v13: u32 = const 32\n    v14: u32 = mul v8, v13\n",
    );
    let mut k = 15;
    let mut slot = 0;
    let mut out = |body: &mut String, k: &mut usize, ty: &str, op: String| {
        let (r, i, at) = (*k, *k + 1, *k + 2);
        *k += 3;
        let bits = if ty == "f64" {
            format!("    v{}: u64 = bitcast v{r}\n", *k)
        } else {
            format!("    v{}: u64 = convert v{r}\n", *k)
        };
        body.push_str(&format!("    v{r}: {ty} = {op}\n{bits}    v{i}: u32 = const {slot}\n    v{at}: u32 = add v14, v{i}\n    store v2[v{at}], v{}\n", *k));
        *k += 1;
        slot += 1;
    };
    for op in ops64 {
        out(&mut body, &mut k, "f64", format!("{op} v11, v12"));
    }
    for op in ["neg", "abs", "sqrt"] {
        out(&mut body, &mut k, "f64", format!("{op} v11"));
    }
    for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
        out(&mut body, &mut k, "bool", format!("{op} v11, v12"));
    }
    for t in ["i32", "u32", "i64", "u64", "bool"] {
        out(&mut body, &mut k, t, "convert v11".into());
    }
    // f64 -> f32 (its bits), integers and f32 -> f64.
    let (f, c32, lo, hi) = (k, k + 1, k + 2, k + 3);
    k += 4;
    body.push_str(&format!("    v{f}: f32 = convert v11\n    v{c32}: u64 = const 32\n    v{lo}: i32 = convert v9\n    v{hi}: u64 = shr v9, v{c32}\n"));
    out(&mut body, &mut k, "u32", format!("bitcast v{f}"));
    let (h32, hf) = (k, k + 1);
    k += 2;
    body.push_str(&format!("    v{h32}: u32 = convert v{hi}\n    v{hf}: f32 = bitcast v{h32}\n"));
    for (t, v) in [
        ("f64", format!("convert v{lo}")),
        ("f64", format!("convert v{h32}")),
        ("f64", "convert v9".into()),
        ("f64", format!("convert v{hf}")),
    ] {
        out(&mut body, &mut k, t, v);
    }
    let (i64v, b0) = (k, k + 1);
    k += 2;
    body.push_str(&format!("    v{i64v}: i64 = bitcast v10\n    v{b0}: bool = lt v11, v12\n"));
    out(&mut body, &mut k, "f64", format!("convert v{i64v}"));
    out(&mut body, &mut k, "f64", format!("convert v{b0}"));
    assert!(slot <= 32, "{slot} results");
    let src = format!(
        "kernel @f64ops(v0: ptr<global, u64>, v1: ptr<global, u64>, v2: ptr<global, u64>, v3: u32) {{\n{body}    return\n}}\n"
    );
    let list = |v: &[u64]| format!("[{}]", v.iter().map(u64::to_string).collect::<Vec<_>>().join(", "));
    let (la, lb, zeros) = (list(&a), list(&b), format!("zeros:{}", 32 * n));
    let config = LaunchConfig { grid: [(n / 64) as u32, 1, 1], block: [64, 1, 1], ..LaunchConfig::default() };
    for &strategy in gpu.strategies() {
        let on = |device: &Device| {
            let target = Target { device, session: &session, cache: &cache, strategy };
            run(&target, &src, "f64ops", &[&la, &lb, &zeros, "0"], &config)
        };
        let (g, c) = (on(&gpu), on(&cpu));
        let (ArgValue::Buffer(_, g), ArgValue::Buffer(_, c)) = (&g[2], &c[2]) else { panic!("buffers") };
        let bad: Vec<String> = (0..g.len())
            .filter(|&i| g[i] != c[i])
            .take(20)
            .map(|i| {
                format!("x {:#x} y {:#x} result {}: wgpu {:#x}, cpu {:#x}", a[i / 32], b[i / 32], i % 32, g[i], c[i])
            })
            .collect();
        assert!(
            bad.is_empty(),
            "{strategy}: {} of {} differ:\n{}\n{src}",
            (0..g.len()).filter(|&i| g[i] != c[i]).count(),
            g.len(),
            bad.join("\n")
        );
    }
}

#[test]
fn a_loop_past_llvmpipes_limit_is_a_typed_fault_there_and_runs_elsewhere() {
    let Some(gpu) = gpu("loop limit") else { return };
    let Device::Wgpu(wgpu) = &gpu else { panic!("gpu() opens a wgpu device") };
    // 2000 × 1000 inner iterations: unrolled 16 times, still 2000 × 63
    // back edges of the inner loop, past llvmpipe's 65 535.
    let source = std::fs::read_to_string(repo().join("tests/filetests/run_long_loops.rk")).expect("read");
    let kernels: String =
        source.lines().filter(|l| !l.starts_with("; run:") && *l != "test run").map(|l| format!("{l}\n")).collect();
    let text = format!("test run\n; run: @nested(2000, 1000, zeros:1) => _, _, [2000000]\n{kernels}");
    let result = relok_cli::filetest::run_file("long_nested.rk", &text, &gpu);
    match wgpu.loop_limit() {
        Some(limit) => {
            let errs = result.expect_err("llvmpipe ends the loop: the launch must fail");
            assert_eq!(errs.len(), 1, "{errs:?}");
            let expected =
                format!("a loop would run past the device's limit of {limit} loop iterations per invocation");
            assert!(errs[0].contains("@nested") && errs[0].contains(&expected), "{}", errs[0]);
        }
        None => assert_eq!(result, Ok(0), "no loop limit on {}: the loop runs to its end", gpu.name()),
    }
}

#[test]
fn checked_mode_reports_the_cpu_devices_out_of_bounds_faults() {
    let Some(gpu) = gpu("checked mode") else { return };
    checked_mode_faults_as_the_cpu_device(&gpu);
}

#[test]
fn a_fixed_seed_fuzz_campaign_finds_wgpu_equal_to_the_cpu_device() {
    let Some(gpu) = gpu("fuzz campaign") else { return };
    // `relok fuzz --devices cpu,wgpu --count 12 --seed 1000`: random
    // kernels (64-bit and f64 arithmetic through the WGSL helpers, loops,
    // shared memory, atomics) under table and bake.
    let cpu = Device::Cpu(CpuDevice::new(0));
    let others = [gpu];
    let mismatches: Vec<String> = (1000..1012)
        .filter_map(|seed| relok_cli::fuzz::run_case(&cpu, &others, seed, 24))
        .map(|m| format!("seed {} ({} steps) on {}: {}\n{}", m.seed, m.steps, m.on, m.what, m.file_test))
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn an_endless_loop_is_a_typed_fault_never_a_hang_or_a_success() {
    let Some(gpu) = gpu("endless loop") else { return };
    let Device::Wgpu(wgpu) = &gpu else { panic!("gpu() opens a wgpu device") };
    // run_faults.rk's @forever: the cpu device's step budget ends it; in
    // checked mode (the default) the WGSL ends it at llvmpipe's limit or
    // at checked mode's loop budget elsewhere.
    let kernels = fault_kernels();
    let expected = match wgpu.loop_limit() {
        Some(limit) => format!("a loop would run past the device's limit of {limit} loop iterations"),
        None => format!("loop budget of {} iterations per thread exceeded", relok_compiler::fault::CHECKED_LOOP_BUDGET),
    };
    let text = format!("test run\n; run: @forever(zeros:1) => error: {expected}\n{kernels}");
    assert_eq!(relok_cli::filetest::run_file("forever.rk", &text, &gpu), Ok(0), "on {}", gpu.name());
}
