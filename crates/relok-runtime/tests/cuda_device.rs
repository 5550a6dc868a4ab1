//! The cuda device where a check needs the runtime itself, not the facade
//! (`crates/relok/tests/cuda.rs` checks everything else through
//! `Context`): the binary archive of cubins fed garbage, another kernel's
//! cubin, an unchecked cubin, an old driver's folder and a tiny cap (its
//! store, entries and load counters are the device's; the facade opens
//! archives but never shows them); a small buffer's slot freed under a
//! pending launch and taken again at once (the facade frees a buffer only
//! once its launches passed, so it cannot free one under a launch); the
//! words of every kind of host object as the session resolves them, read
//! from device memory; and one session over two CUDA contexts (a primary
//! and a private one: the facade opens primary contexts only) and over two
//! GPUs. These were `crates/relok-cli/tests/cuda.rs`'s, where they ran
//! through the CLI's helpers.
//!
//! Without a CUDA driver and GPU every test prints that it was skipped and
//! passes, unless `RELOK_REQUIRE_CUDA` is set: then it fails.
//! `scripts/gpu-run.sh` runs this binary on a GPU machine and sets it.

#![cfg(feature = "cuda")]

mod common;

use common::{SAXPY, f32_bytes, f32s, isolated, load, saxpy_is_right, skip, temp_dir};
use relok_ir::Strategy;
use relok_runtime::cuda::{CudaDevice, device_count};
use relok_runtime::{Device, DeviceMemory, KernelArg, KernelCache, LaunchConfig, Session};
use std::path::Path;

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

/// A GPU device whose binary archive lives under `root` (capped at
/// `max_bytes`), with nothing loaded yet.
fn archived(root: &Path, max_bytes: u64) -> CudaDevice {
    let mut d = CudaDevice::open(0).expect("GPU 0");
    let mut config = d.archive_config(root);
    config.max_bytes = max_bytes;
    d.set_archive(Some(relok_cache::Store::open(config).expect("archive")));
    d
}

/// Runs example `name` (`saxpy` or `reduce`, table, checked against Rust)
/// on `d` through an uncached kernel cache.
fn run_on(d: CudaDevice, name: &str) -> CudaDevice {
    let device = Device::Cuda(d);
    match name {
        "saxpy" => saxpy_is_right(&device),
        "reduce" => common::reduce_is_right(&device),
        other => panic!("no example {other} here"),
    }
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
        let module = relok_ir::VerifiedModule::new(relok_ir::parse(SAXPY).expect("parses")).expect("verifies");
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
fn words_of_every_kind_of_host_object_equal_the_sessions() {
    let Some(gpu) = gpu("words") else { return };
    common::words_equal_the_sessions(&gpu, false);
}

#[test]
fn one_session_over_a_primary_and_a_private_context_keeps_them_apart() {
    if gpu("two contexts").is_none() {
        return;
    }
    let a = Device::Cuda(CudaDevice::open(0).expect("primary context"));
    let b = Device::Cuda(CudaDevice::open_private(0).expect("a context of its own"));
    isolated(&a, &b, "two contexts", true);
}

#[test]
fn one_session_over_two_gpus_keeps_them_apart() {
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
    for src in [SPIN, SAXPY] {
        relok_ir::verify(&relok_ir::parse(src).expect("parses")).expect("verifies");
    }
    let Some(gpu) = gpu("small buffer reuse") else { return };
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let spin = load(&gpu, &session, &cache, SPIN, "spin", Strategy::Table);
    // `@saxpy` with a = 1 into zeros copies its input.
    let copy = load(&gpu, &session, &cache, SAXPY, "saxpy", Strategy::Table);
    let n = 256u32;
    let old: Vec<f32> = (0..n).map(|i| (i * 3 + 1) as f32).collect();
    let new: Vec<f32> = (0..n).map(|i| -(i as f32) - 0.5).collect();
    let input = gpu.alloc_filled(&f32_bytes(&old)).expect("upload");
    let out = gpu.alloc_zeroed(4 * u64::from(n)).expect("zeros");
    let sink = gpu.alloc_zeroed(4).expect("zeros");
    let stream = gpu.stream().expect("stream");
    let spin_args = [KernelArg::u32(1 << 21), KernelArg::Ptr(sink)];
    gpu.enqueue(&stream, &spin, &LaunchConfig::linear(1, 1), &spin_args, 0).expect("spin");
    let copy_args = [KernelArg::u32(n), KernelArg::f32(1.0), KernelArg::Ptr(input), KernelArg::Ptr(out)];
    gpu.enqueue(&stream, &copy, &LaunchConfig::linear(n.div_ceil(64), 64), &copy_args, 0).expect("copy");
    gpu.free_bytes(input).expect("free");
    let again = gpu.alloc_filled(&f32_bytes(&new)).expect("upload");
    assert_eq!(again, input, "the freed slots are taken again");
    gpu.synchronize(&session, &stream).expect("no exception");
    assert_eq!(f32s(&gpu.read_bytes(out, 4 * u64::from(n)).expect("read")), old, "the launch read its bytes");
    assert_eq!(f32s(&gpu.read_bytes(again, 4 * u64::from(n)).expect("read")), new, "the new buffer holds its own");
}
