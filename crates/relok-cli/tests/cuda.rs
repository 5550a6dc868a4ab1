//! The cuda device against the cpu device (the oracle), under bake, patch
//! and table: every example, the words of every kind of host object, a
//! runtime global per device, exceptions (and the device still usable
//! after one), two devices in one process, and a second process that
//! loads every PTX artifact from the store.
//!
//! Without a CUDA driver and GPU every test prints that it was skipped and
//! passes, unless `RELOK_REQUIRE_CUDA` is set: then it fails.
//! `scripts/gpu-run.sh` runs this binary on a GPU machine and sets it.

use relok_cli::args::ArgValue;
use relok_cli::demo::run_example;
use relok_cli::examples::EXAMPLES;
use relok_cli::launch::Target;
use relok_ir::{Scalar, Strategy};
use relok_runtime::cpu::LaunchConfig;
use relok_runtime::cuda::{CudaDevice, device_count};
use relok_runtime::{CpuDevice, Device, DeviceMemory, KernelCache, Session};
use std::path::Path;

mod common;
use common::{
    COUNTER, WORDS, as_child, checked_mode_faults_as_the_cpu_device, counter, fault_kernels, isolated, run,
    second_process, session_words, skip, temp_dir,
};

/// The GPU, or `None` after printing why the test is skipped — unless
/// `RELOK_REQUIRE_CUDA` is set (`scripts/gpu-run.sh` sets it: a GPU run
/// must not pass by skipping).
fn gpu(test: &str) -> Option<Device> {
    if device_count() == 0 {
        let why = "no CUDA driver or GPU on this machine (run scripts/gpu-run.sh on one)";
        assert!(std::env::var_os("RELOK_REQUIRE_CUDA").is_none(), "{test}: RELOK_REQUIRE_CUDA is set but {why}");
        skip(test, why);
        return None;
    }
    Some(Device::Cuda(CudaDevice::open(0).expect("GPU 0 opens")))
}

#[test]
fn every_example_equals_the_cpu_device_under_every_strategy() {
    let Some(gpu) = gpu("examples") else { return };
    let cpu = Device::Cpu(CpuDevice::new(0));
    let (session, cache) = (Session::new(), KernelCache::uncached());
    for strategy in Strategy::ALL {
        for ex in EXAMPLES {
            let on = |device: &Device| {
                let target = Target { device, session: &session, cache: &cache, strategy };
                run_example(&target, ex)
                    .unwrap_or_else(|e| panic!("{} ({strategy}) on {}: {e}", ex.name, device.name()))
            };
            let (g, c) = (on(&gpu), on(&cpu));
            assert!(g.matches, "{} ({strategy}): the GPU's result differs from the Rust reference", ex.name);
            assert_eq!(g.args, c.args, "{} ({strategy}): GPU and cpu differ", ex.name);
            assert_eq!(g.exception.is_some(), c.exception.is_some(), "{} ({strategy})", ex.name);
        }
    }
}

#[test]
fn words_of_every_kind_of_host_object_equal_the_sessions() {
    let Some(gpu) = gpu("words") else { return };
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let t: Vec<u8> = [7u32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    for strategy in Strategy::ALL {
        let target = Target { device: &gpu, session: &session, cache: &cache, strategy };
        let out = run(&target, WORDS, "words", &["zeros:4"], &LaunchConfig::default());
        let want = session_words(&session, &gpu);
        assert_eq!(out[0], ArgValue::Buffer(Scalar::Word, want.clone()), "{strategy}");
        // The value's copy on the GPU holds its bytes.
        assert_eq!(gpu.read_bytes(relok_runtime::DevicePtr(want[2]), 8).expect("read"), t, "{strategy}");
    }
}

#[test]
fn runtime_globals_are_per_device_and_exceptions_leave_the_device_usable() {
    let Some(gpu) = gpu("globals") else { return };
    let other = Device::Cuda(CudaDevice::open(0).expect("GPU 0 opens twice"));
    assert_ne!(gpu.device_id(), other.device_id());
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let config = LaunchConfig::linear(2, 64);
    for strategy in Strategy::ALL {
        let before = |d: &Device| counter(&session, d);
        let start = before(&gpu);
        let target = Target { device: &gpu, session: &session, cache: &cache, strategy };
        let out = run(&target, COUNTER, "count", &["zeros:128"], &config);
        let ArgValue::Buffer(_, mut olds) = out[0].clone() else { panic!("a buffer") };
        olds.sort_unstable();
        assert_eq!(olds, (start..start + 128).collect::<Vec<_>>(), "{strategy}: every thread took one ticket");
        assert_eq!(before(&gpu), start + 128, "{strategy}");
        assert_eq!(before(&other), 0, "{strategy}: the other device's counter is untouched");
    }
    // An exception comes back with its text, and the device runs on.
    let throw = EXAMPLES.iter().find(|e| e.name == "throw").expect("throw example");
    for strategy in Strategy::ALL {
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

/// Every example under patch and table through a cache (artifact store
/// and binary archive) on `dir`: the cache's and the device's counters.
fn run_all_cached(dir: &Path) -> serde_json::Value {
    let gpu = Device::Cuda(archived(dir, 1 << 30));
    let (session, cache) = (Session::new(), KernelCache::open(dir).expect("store"));
    for strategy in [Strategy::Patch, Strategy::Table] {
        let target = Target { device: &gpu, session: &session, cache: &cache, strategy };
        for ex in EXAMPLES {
            assert!(run_example(&target, ex).expect("runs").matches, "{} ({strategy})", ex.name);
        }
    }
    let Device::Cuda(d) = &gpu else { unreachable!("built as cuda") };
    serde_json::json!({ "cache": cache.stats(), "loads": d.load_stats() })
}

/// The child's part (a no-op unless this binary runs as the child).
#[test]
fn child() {
    as_child(run_all_cached);
}

#[test]
fn a_second_process_loads_every_ptx_artifact_from_the_store() {
    if gpu("cross-process").is_none() {
        return;
    }
    let dir = temp_dir("cuda", "store");
    let n = EXAMPLES.len() as u64 * 2;
    let a = run_all_cached(&dir);
    assert_eq!((&a["cache"]["compiles"], &a["cache"]["store"]["hits"]), (&n.into(), &0.into()), "{a}");
    // Kernels without records have the same PTX under patch and table: one
    // cubin serves both, so some of process A's loads already hit.
    let (linked, hits) = (a["loads"]["linked"].as_u64().expect("n"), a["loads"]["archive_hits"].as_u64().expect("n"));
    assert_eq!((linked + hits, &a["loads"]["ptx_jit"]), (n, &0.into()), "{a}");
    assert!(linked >= EXAMPLES.len() as u64, "{a}");
    let b = second_process(&dir);
    // Process B: no relok compile, no PTX JIT: every cubin from the archive.
    assert_eq!(b["cache"]["compiles"], 0, "{b}");
    assert_eq!(b["cache"]["store"]["hits"], n, "{b}");
    assert_eq!(b["loads"]["archive_hits"], n, "{b}");
    assert_eq!((&b["loads"]["linked"], &b["loads"]["ptx_jit"]), (&0.into(), &0.into()), "{b}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A GPU device whose binary archive lives under `root` (capped at
/// `max_bytes`), with nothing loaded yet.
fn archived(root: &Path, max_bytes: u64) -> CudaDevice {
    let mut d = CudaDevice::open(0).expect("GPU 0");
    let mut config = d.archive_config(root);
    config.max_bytes = max_bytes;
    d.set_archive(Some(relok_cache::Store::open(config).expect("archive")));
    d
}

/// Runs example `name` (table) on `d` through an uncached kernel cache.
fn run_on(d: CudaDevice, name: &str) -> CudaDevice {
    let device = Device::Cuda(d);
    let session = Session::new();
    let cache = KernelCache::uncached();
    let ex = EXAMPLES.iter().find(|e| e.name == name).expect("example");
    let target = Target { device: &device, session: &session, cache: &cache, strategy: Strategy::Table };
    assert!(run_example(&target, ex).expect("runs").matches, "{name}");
    let Device::Cuda(d) = device else { unreachable!("built as cuda") };
    d
}

#[test]
fn the_binary_archive_survives_garbage_foreign_cubins_old_drivers_and_a_tiny_cap() {
    if gpu("archive").is_none() {
        return;
    }
    let root = temp_dir("cuda", "archive");
    let d = run_on(archived(&root, 1 << 30), "saxpy");
    assert_eq!((d.load_stats().linked, d.load_stats().archive_hits), (1, 0));
    let entries = d.archive().expect("archive").entries();
    assert_eq!(entries.len(), 1);
    let saxpy_entry = entries[0].clone();
    drop(d);
    // A warm load: from the archive, nothing linked.
    let d = run_on(archived(&root, 1 << 30), "saxpy");
    assert_eq!((d.load_stats().linked, d.load_stats().archive_hits, d.load_stats().ptx_jit), (0, 1, 0));
    drop(d);
    // Garbage: a miss, relinked, replaced.
    std::fs::write(&saxpy_entry.path, b"garbage").expect("write");
    let d = run_on(archived(&root, 1 << 30), "saxpy");
    assert_eq!((d.load_stats().linked, d.load_stats().archive.corrupt), (1, 1));
    drop(d);
    // Another kernel's cubin framed under this key: it loads but has no
    // @saxpy, so it is rejected and relinked.
    let d = run_on(archived(&root, 1 << 30), "reduce");
    let store = d.archive().expect("archive");
    let reduce = store.entries().into_iter().find(|e| e.key != saxpy_entry.key).expect("reduce's cubin");
    let reduce_bytes = std::fs::read(&reduce.path).expect("read");
    let h = relok_cache::entry::header(&reduce_bytes).expect("header");
    let payload = &reduce_bytes[h.payload_at..reduce_bytes.len() - 32];
    let forged = relok_cache::entry::encode(
        relok_cache::entry::Kind::Binary,
        &store.config().identity,
        saxpy_entry.key,
        payload,
    );
    std::fs::write(&saxpy_entry.path, forged).expect("write");
    drop(d);
    let d = run_on(archived(&root, 1 << 30), "saxpy");
    assert_eq!((d.load_stats().linked, d.load_stats().archive_hits, d.load_stats().archive.corrupt), (1, 0, 1));
    drop(d);
    // The unchecked kernel's cubin framed under this key: @saxpy is there,
    // taking other parameters (no buffer lengths, no seal table): the
    // driver's report of its parameters refuses it; relinked.
    let unchecked = {
        let other = temp_dir("cuda", "archive-unchecked");
        let d = archived(&other, 1 << 30);
        let module =
            relok_ir::VerifiedModule::new(relok_ir::parse(include_str!("../../../examples/saxpy.rk")).expect("parses"))
                .expect("verifies");
        let stencil = relok_compiler::stencil::Stencil::new(&module, "saxpy").expect("stencil");
        let options = relok_compiler::artifact::CompileOptions { checked: false, ..Default::default() };
        let a =
            relok_compiler::artifact::compile(&stencil, d.target(), Strategy::Table, options, None).expect("compiles");
        relok_runtime::Backend::load(&d, &Session::new(), &relok_runtime::LoadRequest::new(&a))
            .expect("loads unchecked");
        let e = d.archive().expect("archive").entries().pop().expect("its cubin");
        let bytes = std::fs::read(&e.path).expect("read");
        let h = relok_cache::entry::header(&bytes).expect("header");
        let cubin = bytes[h.payload_at..bytes.len() - 32].to_vec();
        drop(d);
        let _ = std::fs::remove_dir_all(&other);
        cubin
    };
    let d = archived(&root, 1 << 30);
    let identity = d.archive().expect("archive").config().identity.clone();
    std::fs::write(
        &saxpy_entry.path,
        relok_cache::entry::encode(relok_cache::entry::Kind::Binary, &identity, saxpy_entry.key, &unchecked),
    )
    .expect("write");
    let d = run_on(d, "saxpy");
    assert_eq!(
        (d.load_stats().linked, d.load_stats().archive_hits, d.load_stats().archive.corrupt),
        (1, 0, 1),
        "the unchecked cubin was used"
    );
    // Another driver build's folder for this GPU goes at the next
    // collection; another GPU's folder stays.
    let store = d.archive().expect("archive");
    let family = store.dir().parent().expect("binary/").to_owned();
    let prefix = store.config().stale_prefix.clone();
    let old = family.join(format!("{prefix}driver12000-535.00"));
    let other_gpu = family.join("NVIDIA_A100-sm80-driver13000-580");
    for f in [&old, &other_gpu] {
        std::fs::create_dir_all(f.join("ab")).expect("mkdir");
        // Unused for more than a week.
        let t = std::time::SystemTime::now() - relok_cache::STALE_FOLDER_AGE - std::time::Duration::from_secs(60);
        std::fs::File::open(f).and_then(|d| d.set_modified(t)).expect("mtime");
    }
    let report = store.collect();
    assert!(report.folders_removed.iter().any(|f| old.ends_with(f)), "{report:?}");
    assert!(!old.exists() && other_gpu.exists());
    drop(d);
    // A cap of one byte: a collection evicts everything, and no cubin fits
    // (the cap bounds each entry: docs/cache.md), so the next load links
    // and archives nothing; with room again, the load after archives.
    let d = archived(&root, 1);
    let report = d.archive().expect("archive").collect();
    assert_eq!((report.entries, report.bytes), (0, 0), "{report:?}");
    let d = run_on(d, "saxpy");
    assert_eq!(d.load_stats().linked, 1);
    assert_eq!(d.archive().expect("archive").entries().len(), 0);
    drop(d);
    let d = run_on(archived(&root, 1 << 30), "saxpy");
    assert_eq!((d.load_stats().linked, d.load_stats().archive_hits), (1, 0));
    assert_eq!(d.archive().expect("archive").entries().len(), 1);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn two_contexts_on_one_gpu_are_isolated() {
    if gpu("two contexts").is_none() {
        return;
    }
    let a = Device::Cuda(CudaDevice::open(0).expect("primary context"));
    let b = Device::Cuda(CudaDevice::open_private(0).expect("a context of its own"));
    isolated(&a, &b, "two contexts", true);
}

#[test]
fn two_gpus_are_isolated() {
    if gpu("two GPUs").is_none() {
        return;
    }
    if device_count() < 2 {
        skip("two GPUs", &format!("this machine has {} GPU(s)", device_count()));
        return;
    }
    let a = Device::Cuda(CudaDevice::open(0).expect("GPU 0"));
    let b = Device::Cuda(CudaDevice::open(1).expect("GPU 1"));
    isolated(&a, &b, "two GPUs", true);
}

/// run_faults.rk's kernels without its `; run:` lines.
#[test]
fn checked_mode_reports_the_cpu_devices_out_of_bounds_faults() {
    let Some(gpu) = gpu("checked mode") else { return };
    checked_mode_faults_as_the_cpu_device(&gpu);
}

#[test]
fn an_endless_loop_is_a_typed_fault_never_a_hang() {
    let Some(gpu) = gpu("endless loop") else { return };
    // run_faults.rk's @forever: checked mode's loop budget ends it.
    let expected =
        format!("loop budget of {} iterations per thread exceeded", relok_compiler::fault::CHECKED_LOOP_BUDGET);
    let text = format!("test run\n; run: @forever(zeros:1) => error: {expected}\n{}", fault_kernels());
    assert_eq!(relok_cli::filetest::run_file("forever.rk", &text, &gpu), Ok(0), "on {}", gpu.name());
}

/// `@spin(n, out)`: one thread iterates `n` times and stores what it
/// computed (a launch that keeps the stream busy for a while).
const SPIN: &str = "kernel @spin(v0: u32, v1: ptr<global, u32>) {
    local %i: u32
    local %acc: u32
    v2: u32 = const 0
    v3: u32 = const 1
    v11: u32 = const 1664525
    set %i, v2
    set %acc, v3
    loop {
        v4: u32 = get %i
        v5: bool = eq v4, v0
        if v5 {
            break
        }
        v6: u32 = get %acc
        v7: u32 = mul v6, v11
        v8: u32 = add v7, v4
        set %acc, v8
        v9: u32 = add v4, v3
        set %i, v9
    }
    v10: u32 = get %acc
    store v1[v2], v10
    return
}
";

#[test]
fn a_small_buffer_freed_under_a_pending_launch_is_rewritten_only_after_it() {
    // Buffers of up to 4 KiB are slots of one block, written on the legacy
    // stream: a slot freed while a launch queued behind a long one still
    // has to read it, and taken at once by a new upload, must reach that
    // launch with its old bytes and the new buffer with the new ones.
    // Parsed and verified first, so that a machine without a GPU checks them.
    let spin = relok_ir::VerifiedModule::new(relok_ir::parse(SPIN).expect("parses")).expect("verifies");
    // `@saxpy` with a = 1 into zeros copies its input.
    let copy = relok_ir::parse(include_str!("../../../examples/saxpy.rk")).expect("parses");
    let copy = relok_ir::VerifiedModule::new(copy).expect("verifies");
    let Some(gpu) = gpu("small buffer reuse") else { return };
    let session = Session::new();
    let load = |module: &relok_ir::VerifiedModule, name: &str| {
        gpu.load(&session, &KernelCache::uncached(), module, name, Strategy::Table, None).expect("loads")
    };
    let (spin, copy) = (load(&spin, "spin"), load(&copy, "saxpy"));
    let n = 256u32;
    let bytes = |v: &[f32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let old: Vec<f32> = (0..n).map(|i| (i * 3 + 1) as f32).collect();
    let new: Vec<f32> = (0..n).map(|i| -(i as f32) - 0.5).collect();
    let input = gpu.alloc_filled(&bytes(&old)).expect("upload");
    let out = gpu.alloc_zeroed(4 * u64::from(n)).expect("zeros");
    let sink = gpu.alloc_zeroed(4).expect("zeros");
    let stream = gpu.stream().expect("stream");
    gpu.enqueue(
        &stream,
        &spin,
        &LaunchConfig::linear(1, 1),
        &[relok_runtime::KernelArg::u32(1 << 21), relok_runtime::KernelArg::Ptr(sink)],
        0,
    )
    .expect("spin");
    gpu.enqueue(
        &stream,
        &copy,
        &LaunchConfig::linear(n.div_ceil(64), 64),
        &[
            relok_runtime::KernelArg::u32(n),
            relok_runtime::KernelArg::f32(1.0),
            relok_runtime::KernelArg::Ptr(input),
            relok_runtime::KernelArg::Ptr(out),
        ],
        0,
    )
    .expect("copy");
    gpu.free_bytes(input).expect("free");
    let again = gpu.alloc_filled(&bytes(&new)).expect("upload");
    assert_eq!(again, input, "the freed slots are taken again");
    gpu.synchronize(&session, &stream).expect("no exception");
    assert_eq!(
        gpu.read_bytes(out, 4 * u64::from(n)).expect("read"),
        bytes(&old),
        "the launch read the bytes it was given"
    );
    assert_eq!(gpu.read_bytes(again, 4 * u64::from(n)).expect("read"), bytes(&new), "the new buffer holds its own");
}

#[test]
fn small_uploads_queued_behind_a_long_launch_each_keep_the_bytes_they_were_given() {
    // Uploads of up to 4 KiB are asynchronous copies on the legacy stream,
    // which waits for the launches of relok's streams: behind a long one
    // they run well after the call returned, while the caller rewrites its
    // one host buffer for the next upload. Each must still land with the
    // bytes it was given (relok stages them in buffers of its own, freed
    // once an event after them has passed: enough uploads, by bytes and
    // by count, to record it more than once while the launch runs), and
    // so must zeros.
    let spin = relok_ir::VerifiedModule::new(relok_ir::parse(SPIN).expect("parses")).expect("verifies");
    let Some(gpu) = gpu("uploads behind a long launch") else { return };
    let session = Session::new();
    let spin = gpu.load(&session, &KernelCache::uncached(), &spin, "spin", Strategy::Table, None).expect("loads");
    let sink = gpu.alloc_zeroed(4).expect("zeros");
    let stream = gpu.stream().expect("stream");
    gpu.enqueue(
        &stream,
        &spin,
        &LaunchConfig::linear(1, 1),
        &[relok_runtime::KernelArg::u32(1 << 23), relok_runtime::KernelArg::Ptr(sink)],
        0,
    )
    .expect("spin");
    let mut host = vec![0u8; 4096];
    let mut uploads = Vec::new();
    for round in 0..64u32 {
        let len = [4096usize, 1, 1000, 64, 1, 1, 1, 1][round as usize % 8];
        for (i, b) in host.iter_mut().enumerate() {
            *b = (i as u32).wrapping_mul(31).wrapping_add(round * 97) as u8;
        }
        let ptr = gpu.alloc_filled(&host[..len]).expect("upload");
        uploads.push((ptr, host[..len].to_vec()));
        if round % 8 == 2 {
            let zeros = gpu.alloc_zeroed(len as u64).expect("zeros");
            uploads.push((zeros, vec![0; len]));
        }
        // The next round's bytes overwrite this round's at once.
        host.fill(0xA5);
    }
    gpu.synchronize(&session, &stream).expect("no exception");
    for (i, (ptr, want)) in uploads.iter().enumerate() {
        assert_eq!(
            &gpu.read_bytes(*ptr, want.len() as u64).expect("read"),
            want,
            "upload {i} holds the bytes it was given"
        );
    }
}

#[test]
fn a_throw_nobody_waited_for_never_reaches_the_records_next_holder() {
    // Exception records live in device memory and go back to the device's
    // pool when their stream drops. A stream dropped with a throw unread
    // leaves its record to the next stream (the pool hands out the first
    // free one): it must come back zeroed (the dropping stream reads and
    // clears it), or the next launch would report a throw that never
    // happened. Two kernels on one stream are read with one copy: the
    // thrower must be named, not its neighbour; and a throw is reported
    // once (its record cleared on the stream).
    let module = relok_ir::VerifiedModule::new(
        relok_ir::parse(include_str!("../../../examples/reloc/throw.rk")).expect("parses"),
    )
    .expect("verifies");
    let copy =
        relok_ir::VerifiedModule::new(relok_ir::parse(include_str!("../../../examples/saxpy.rk")).expect("parses"))
            .expect("verifies");
    let Some(gpu) = gpu("unread throw") else { return };
    let session = Session::new();
    let cache = KernelCache::uncached();
    let check = gpu.load(&session, &cache, &module, "check", Strategy::Table, None).expect("loads");
    let saxpy = gpu.load(&session, &cache, &copy, "saxpy", Strategy::Table, None).expect("loads");
    let ints = |v: &[i32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let mut data: Vec<i32> = (1..=40).collect();
    data[37] = -38;
    let bad = gpu.alloc_filled(&ints(&data)).expect("upload");
    let good = gpu.alloc_filled(&ints(&[1; 40])).expect("upload");
    let (x, y) = (gpu.alloc_filled(&[0; 256]).expect("upload"), gpu.alloc_zeroed(256).expect("zeros"));
    let config = LaunchConfig::linear(4, 32);
    let args = |buffer| [relok_runtime::KernelArg::u32(40), relok_runtime::KernelArg::Ptr(buffer)];
    for round in 0..3 {
        let stream = gpu.stream().expect("stream");
        gpu.enqueue(&stream, &check, &config, &args(bad), 0).expect("enqueued");
        drop(stream);
        let stream = gpu.stream().expect("stream");
        gpu.enqueue(&stream, &check, &config, &args(good), 0).expect("enqueued");
        assert!(gpu.synchronize(&session, &stream).is_ok(), "round {round}: a stale throw was reported");
        let saxpy_args = [
            relok_runtime::KernelArg::u32(64),
            relok_runtime::KernelArg::f32(2.0),
            relok_runtime::KernelArg::Ptr(x),
            relok_runtime::KernelArg::Ptr(y),
        ];
        gpu.enqueue(&stream, &saxpy, &LaunchConfig::linear(1, 64), &saxpy_args, 0).expect("enqueued");
        gpu.enqueue(&stream, &check, &config, &args(bad), 0).expect("enqueued");
        match gpu.synchronize(&session, &stream) {
            Err(relok_runtime::ProgramError::Exception { kernel, message, .. }) => {
                assert_eq!((kernel.as_str(), message.as_str()), ("check", "negative input"), "round {round}")
            }
            other => panic!("round {round}: {other:?}"),
        }
        assert!(gpu.synchronize(&session, &stream).is_ok(), "round {round}: reported once");
    }
}
