//! The wgpu device where a check needs the runtime itself, not the facade
//! (`crates/relok/tests/wgpu.rs` checks everything else through
//! `Context`): the pipeline-cache archive (a blob one process saves and
//! the next loads; blobs truncated, of another adapter or driver, random,
//! or random under a valid header: each a miss or wgpu's own fallback,
//! and the run still right), whose state only the device reports; the
//! heap growing while another thread launches (heap objects allocated
//! directly, their bytes and the words checked); the words of every kind
//! of host object as the session resolves them, read from the heap; and
//! one session over two devices. These were
//! `crates/relok-cli/tests/wgpu.rs`'s, where they ran through the CLI's
//! helpers.
//!
//! Runs on the first adapter wgpu lists (`RELOK_WGPU_ADAPTER` narrows the
//! list): lavapipe in CI, NVIDIA's Vulkan driver on a GPU machine. Without
//! an adapter every test prints that it was skipped and passes, unless
//! `RELOK_REQUIRE_WGPU` is set.

#![cfg(feature = "wgpu")]

mod common;

use common::{as_child, count, counter, isolated, saxpy_is_right, second_process, session_words, skip};
use common::{temp_dir, words};
use relok_ir::Strategy;
use relok_runtime::wgpu::{PipelineCacheState, WgpuDevice, list_adapters};
use relok_runtime::{Device, DeviceMemory, DevicePtr, KernelCache, Session};
use std::path::Path;

/// One test at a time on the GPU: several wgpu devices driven from
/// concurrent threads stall NVIDIA's Vulkan driver (docs/wgpu.md, "Known
/// problems").
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The first adapter as a device (no archive) and the GPU for this test
/// alone while the guard lives (declare it first), or `None` after
/// printing why the test is skipped — unless `RELOK_REQUIRE_WGPU` is set
/// (CI sets it: there lavapipe must be found).
fn gpu(test: &str) -> Option<(std::sync::MutexGuard<'static, ()>, Device)> {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if list_adapters().is_empty() {
        let why = "wgpu finds no adapter (install mesa-vulkan-drivers for lavapipe)";
        assert!(std::env::var_os("RELOK_REQUIRE_WGPU").is_none(), "{test}: RELOK_REQUIRE_WGPU is set but {why}");
        skip(test, why);
        return None;
    }
    Some((one, Device::Wgpu(Box::new(WgpuDevice::open(0).expect("adapter 0 opens")))))
}

/// Adapter 0 with its pipeline-cache archive under `root`.
fn archived(root: &Path) -> WgpuDevice {
    WgpuDevice::open_in(0, Some(root.to_owned())).expect("adapter 0")
}

/// Runs saxpy (table, checked against Rust) on a device with the archive
/// under `root`; the archive state it opened with and the bytes of the
/// blob it loaded. The device is dropped: its pipeline cache is saved.
fn saxpy_with_archive(root: &Path) -> (PipelineCacheState, u64) {
    let device = Device::Wgpu(Box::new(archived(root)));
    saxpy_is_right(&device);
    let Device::Wgpu(d) = &device else { unreachable!("built as wgpu") };
    let s = d.load_stats();
    (s.pipeline_cache, s.pipeline_cache_loaded_bytes)
}

/// The second process's part: saxpy with the archive under `dir`; the
/// state the archive opened with and the bytes loaded (a no-op unless
/// this binary runs as the child).
#[test]
fn child() {
    as_child(|dir| {
        let (state, loaded) = saxpy_with_archive(dir);
        format!("{state:?} {loaded}")
    });
}

#[test]
fn a_second_process_loads_its_pipelines_from_the_pipeline_cache_archive() {
    let Some((_one, gpu)) = gpu("pipeline cache across processes") else { return };
    let Device::Wgpu(d) = &gpu else { unreachable!("built as wgpu") };
    if !d.has_pipeline_cache() {
        skip("pipeline-cache hit", "this adapter's backend has no pipeline cache");
        return;
    }
    drop(gpu);
    let dir = temp_dir("wgpu", "pipelines");
    // Process A: two kernels on a device whose archive starts empty.
    let device = Device::Wgpu(Box::new(archived(&dir)));
    saxpy_is_right(&device);
    common::reduce_is_right(&device);
    let Device::Wgpu(a) = &device else { unreachable!("built as wgpu") };
    assert_eq!(a.load_stats().pipeline_cache, PipelineCacheState::Miss, "process A starts empty");
    let saved = a.save_pipeline_cache();
    assert!(saved.is_some_and(|b| b > 0), "process A saves its pipeline cache: {saved:?}");
    drop(device);
    // Process B: the pipeline cache from the archive.
    let b = second_process(&dir);
    let (state, loaded) = b.split_once(' ').expect("state and bytes");
    assert_eq!(state, "Hit", "{b}");
    assert!(loaded.parse::<u64>().is_ok_and(|x| x > 0), "{b}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_pipeline_cache_blob_is_a_miss_then_correct() {
    let Some((_one, gpu)) = gpu("archive faults") else { return };
    let Device::Wgpu(d) = &gpu else { unreachable!("built as wgpu") };
    if !d.has_pipeline_cache() {
        skip("archive faults", "this adapter's backend has no pipeline cache");
        return;
    }
    drop(gpu);
    let root = temp_dir("wgpu", "archive");
    assert_eq!(saxpy_with_archive(&root).0, PipelineCacheState::Miss);
    assert_eq!(saxpy_with_archive(&root).0, PipelineCacheState::Hit);
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
        assert_eq!(saxpy_with_archive(&root).0, state, "{what}");
        // The fault was replaced by a good blob when the device dropped.
        assert_eq!(saxpy_with_archive(&root).0, PipelineCacheState::Hit, "after {what}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn words_of_every_kind_of_host_object_equal_the_sessions() {
    let Some((_one, gpu)) = gpu("words") else { return };
    common::words_equal_the_sessions(&gpu, true);
}

#[test]
fn one_session_over_two_wgpu_devices_keeps_them_apart() {
    let Some((_one, a)) = gpu("two devices") else { return };
    let b = Device::Wgpu(Box::new(WgpuDevice::open(0).expect("adapter 0 opens twice")));
    isolated(&a, &b, "two wgpu devices", false);
}

/// The heap grows (by copying into a larger buffer) while another thread
/// launches kernels that count in a runtime global there: no word changes,
/// no object loses its bytes, and no launch's writes are lost.
#[test]
fn the_heap_grows_under_concurrent_launches_without_losing_a_write() {
    let Some((_one, gpu)) = gpu("heap growth") else { return };
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let before = words(&gpu, &session, &cache, Strategy::Table);
    let (rounds, per_round) = (40u64, 64u64);
    let start = counter(&session, &gpu);
    let objects: Vec<(DevicePtr, u8)> = std::thread::scope(|s| {
        let launches = s.spawn(|| {
            for _ in 0..rounds {
                count(&gpu, &session, &cache, Strategy::Table, per_round as u32);
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
    let after = words(&gpu, &session, &cache, Strategy::Table);
    assert_eq!(before, after, "words are heap offsets: growth changes none");
    assert_eq!(after, session_words(&session, &gpu));
}
