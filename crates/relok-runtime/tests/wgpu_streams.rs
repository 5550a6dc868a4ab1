//! wgpu streams (src/wgpu/mod.rs, "Streams"): launches recorded into a
//! command encoder and submitted in batches. Many launches and one
//! synchronisation give the exact count; an exception surfaces at
//! synchronisation with its kernel, block and thread, and the stream runs
//! on; a host read sees the launches enqueued before it, a launch enqueued
//! before a host write does not see it; two streams interleave; a dropped
//! stream's launches run; the heap grows under an open batch; a buffer
//! argument may point into a buffer at the adapter's offset alignment.
//!
//! Runs on the first adapter wgpu lists (lavapipe in CI). Without one
//! every test prints that it was skipped and passes, unless
//! `RELOK_REQUIRE_WGPU` is set.

#![cfg(feature = "wgpu")]

use relok_ir::Strategy;
use relok_runtime::wgpu::{LAUNCHES_PER_SUBMIT, WgpuDevice, list_adapters};
use relok_runtime::{
    Device, DeviceMemory, DevicePtr, Kernel, KernelArg, KernelCache, LaunchConfig, ProgramError, Session, Stream,
};
use std::time::Instant;

/// `v1[0] += v0`, by one thread.
const BUMP: &str = "
kernel @bump(v0: u32, v1: ptr<global, u32>) {
    v2: u32 = const 0
    v3: u32 = load v1[v2]
    v4: u32 = add v3, v0
    store v1[v2], v4
    return
}
";
/// `@check(n, input)`: a thread whose input is negative throws
/// \"negative input\".
const THROW: &str = include_str!("../../../examples/reloc/throw.rk");
/// `@count(out)`: every thread adds 1 to the runtime global
/// `relok_counter` (a cell in the device's heap).
const COUNTER: &str = include_str!("../../../examples/reloc/counter.rk");

/// Says on stderr that `test` was skipped and why.
fn skip(test: &str, why: &str) {
    let msg = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
}

/// One test at a time on the GPU: several wgpu devices driven from
/// concurrent threads stall NVIDIA's Vulkan driver (docs/wgpu.md, "Known
/// problems").
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The first adapter as a device (without the pipeline-cache archive), held
/// by this test alone until the guard drops (after the device: declare it
/// first), or `None` after printing why the test is skipped; with
/// `RELOK_REQUIRE_WGPU` set a missing adapter fails the test.
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

fn load(device: &Device, session: &Session, src: &str, name: &str) -> Kernel {
    let module = relok_ir::VerifiedModule::new(relok_ir::parse(src).expect("parses")).expect("verifies");
    device
        .load(session, &KernelCache::uncached(), &module, name, Strategy::Table, None)
        .unwrap_or_else(|e| panic!("@{name}: {e}"))
}

fn read_u32(device: &Device, ptr: DevicePtr) -> u32 {
    u32::from_le_bytes(device.read_bytes(ptr, 4).expect("read").try_into().expect("4 bytes"))
}

fn bump(device: &Device, stream: &Stream, kernel: &Kernel, by: u32, at: DevicePtr) {
    device
        .enqueue(stream, kernel, &LaunchConfig::linear(1, 1), &[KernelArg::u32(by), KernelArg::Ptr(at)], 0)
        .expect("enqueue");
}

/// An `i32` input buffer for `@check` of `n` elements, element `negative`
/// (if any) below zero.
fn inputs(device: &Device, n: usize, negative: Option<usize>) -> DevicePtr {
    let values: Vec<i32> = (0..n).map(|i| if Some(i) == negative { -5 } else { i as i32 }).collect();
    let ptr = device.alloc_zeroed(4 * n as u64).expect("alloc");
    device.write_bytes(ptr, &values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).expect("write");
    ptr
}

fn check(device: &Device, stream: &Stream, kernel: &Kernel, n: u32, input: DevicePtr) {
    device
        .enqueue(
            stream,
            kernel,
            &LaunchConfig::linear(n.div_ceil(32), 32),
            &[KernelArg::u32(n), KernelArg::Ptr(input)],
            0,
        )
        .expect("enqueue");
}

#[test]
fn many_launches_and_one_synchronisation_give_the_exact_count() {
    let Some((_one, gpu)) = gpu("many launches") else { return };
    let session = Session::new();
    let k = load(&gpu, &session, BUMP, "bump");
    let buf = gpu.alloc_zeroed(4).expect("alloc");
    let stream = gpu.stream().expect("stream");
    let n = 1000u32;
    assert!(n as usize > 3 * LAUNCHES_PER_SUBMIT);
    // The first launch makes the pipeline.
    bump(&gpu, &stream, &k, 0, buf);
    gpu.synchronize(&session, &stream).expect("first launch");
    let t = Instant::now();
    for i in 0..n {
        bump(&gpu, &stream, &k, i, buf);
    }
    let enqueued = t.elapsed();
    let stats = gpu.synchronize(&session, &stream).expect("no exception");
    let synchronized = t.elapsed();
    assert_eq!(stats.threads, u64::from(n), "every launch's threads");
    // Each launch read what the one before wrote, with its own argument.
    assert_eq!(read_u32(&gpu, buf), n * (n - 1) / 2);
    skip(
        &format!(
            "nothing: {n} launches on {} enqueued in {enqueued:?} and synchronized after {synchronized:?}",
            gpu.name()
        ),
        "(timing, for information)",
    );
    // A synchronisation with nothing enqueued.
    assert_eq!(gpu.synchronize(&session, &stream).expect("idle").threads, 0);
}

#[test]
fn an_exception_surfaces_at_synchronize_and_the_stream_runs_on() {
    let Some((_one, gpu)) = gpu("exceptions") else { return };
    let session = Session::new();
    let (throw, add) = (load(&gpu, &session, THROW, "check"), load(&gpu, &session, BUMP, "bump"));
    let (bad, good) = (inputs(&gpu, 64, Some(37)), inputs(&gpu, 64, None));
    let count = gpu.alloc_zeroed(4).expect("alloc");
    let stream = gpu.stream().expect("stream");
    for round in 0..3 {
        bump(&gpu, &stream, &add, 1, count);
        check(&gpu, &stream, &throw, 64, good);
        check(&gpu, &stream, &throw, 64, bad);
        // Launches after the failing one still run.
        for _ in 0..LAUNCHES_PER_SUBMIT {
            bump(&gpu, &stream, &add, 1, count);
        }
        check(&gpu, &stream, &throw, 64, good);
        match gpu.synchronize(&session, &stream) {
            Err(ProgramError::Exception { kernel, message, block, thread }) => {
                assert_eq!((kernel.as_str(), message.as_str()), ("check", "negative input"), "round {round}");
                assert_eq!((block, thread), ([1, 0, 0], [5, 0, 0]), "round {round}: element 37 is block 1, thread 5");
            }
            other => panic!("round {round}: expected the exception, got {other:?}"),
        }
        assert_eq!(read_u32(&gpu, count), (round + 1) * (1 + LAUNCHES_PER_SUBMIT as u32), "round {round}");
        // The record was cleared: the stream is clean again.
        check(&gpu, &stream, &throw, 64, good);
        bump(&gpu, &stream, &add, 0, count);
        let stats = gpu.synchronize(&session, &stream).expect("no exception after the reported one");
        assert_eq!(stats.threads, 65, "round {round}");
    }
    // The synchronous launch path reports it too.
    let Device::Wgpu(d) = &gpu else { unreachable!("opened as wgpu") };
    let Kernel::Wgpu(k) = &throw else { unreachable!("loaded on wgpu") };
    let config = LaunchConfig::linear(2, 32);
    let thrown = d.launch(k, &config, &[KernelArg::u32(64), KernelArg::Ptr(bad)], 0).expect("runs").expect("throws");
    assert_eq!((thrown.block, thrown.thread), ([1, 0, 0], [5, 0, 0]));
    assert_eq!(d.launch(k, &config, &[KernelArg::u32(64), KernelArg::Ptr(good)], 0).expect("runs"), None);
}

#[test]
fn host_reads_and_writes_keep_their_order_with_enqueued_launches() {
    let Some((_one, gpu)) = gpu("host order") else { return };
    let session = Session::new();
    let k = load(&gpu, &session, BUMP, "bump");
    let buf = gpu.alloc_zeroed(4).expect("alloc");
    let stream = gpu.stream().expect("stream");
    for _ in 0..3 {
        bump(&gpu, &stream, &k, 1, buf);
    }
    // Not synchronized: the read sees the three launches all the same.
    assert_eq!(read_u32(&gpu, buf), 3);
    bump(&gpu, &stream, &k, 1, buf);
    // A write after an enqueued launch lands after it.
    gpu.write_bytes(buf, &100u32.to_le_bytes()).expect("write");
    bump(&gpu, &stream, &k, 1, buf);
    gpu.synchronize(&session, &stream).expect("runs");
    assert_eq!(read_u32(&gpu, buf), 101);
    // A dropped stream's launches run.
    let other = gpu.stream().expect("stream");
    for _ in 0..5 {
        bump(&gpu, &other, &k, 2, buf);
    }
    drop(other);
    assert_eq!(read_u32(&gpu, buf), 111);
}

#[test]
fn two_streams_interleave() {
    let Some((_one, gpu)) = gpu("two streams") else { return };
    let session = Session::new();
    let (add, throw) = (load(&gpu, &session, BUMP, "bump"), load(&gpu, &session, THROW, "check"));
    let bad = inputs(&gpu, 64, Some(3));
    let (a, b) = (gpu.alloc_zeroed(4).expect("alloc"), gpu.alloc_zeroed(4).expect("alloc"));
    let (sa, sb) = (gpu.stream().expect("stream"), gpu.stream().expect("stream"));
    let n = 2 * LAUNCHES_PER_SUBMIT as u32 + 17;
    for i in 0..n {
        bump(&gpu, &sa, &add, 1, a);
        bump(&gpu, &sb, &add, 2, b);
        if i == n / 2 {
            check(&gpu, &sa, &throw, 64, bad);
        }
    }
    // The exception is stream a's only.
    assert_eq!(gpu.synchronize(&session, &sb).expect("stream b is clean").threads, u64::from(n));
    assert!(matches!(gpu.synchronize(&session, &sa), Err(ProgramError::Exception { .. })));
    assert_eq!((read_u32(&gpu, a), read_u32(&gpu, b)), (n, 2 * n));
    // A stream belongs to its device.
    let other = Device::Wgpu(Box::new(WgpuDevice::open(0).expect("adapter 0 opens twice")));
    let e = gpu.enqueue(
        &other.stream().expect("stream"),
        &add,
        &LaunchConfig::default(),
        &[KernelArg::u32(1), KernelArg::Ptr(a)],
        0,
    );
    assert!(e.is_err_and(|e| e.to_string().contains("the stream belongs to")));
}

#[test]
fn the_heap_grows_under_an_open_batch_without_losing_a_launch() {
    let Some((_one, gpu)) = gpu("heap growth") else { return };
    let session = Session::new();
    let k = load(&gpu, &session, COUNTER, "count");
    let out = gpu.alloc_zeroed(8 * 32).expect("alloc");
    let stream = gpu.stream().expect("stream");
    let config = LaunchConfig::linear(1, 32);
    gpu.launch(&session, &stream, &k, &config, &[KernelArg::Ptr(out)]).expect("runs");
    let cell = session.global_cell(&gpu, "relok_counter").expect("the counter's cell");
    let counter = || u64::from_le_bytes(gpu.read_bytes(cell, 8).expect("read").try_into().expect("8 bytes"));
    let start = counter();
    let mut objects = Vec::new();
    for i in 0..8u8 {
        for _ in 0..10 {
            gpu.enqueue(&stream, &k, &config, &[KernelArg::Ptr(out)], 0).expect("enqueue");
        }
        // 8 objects of 64 KiB: the heap grows several times, each time
        // with launches recorded against the old buffer.
        let p = gpu.alloc_object(64 << 10).expect("heap object");
        objects.push((p, i));
    }
    gpu.synchronize(&session, &stream).expect("runs");
    assert_eq!(counter(), start + 8 * 10 * 32, "every launch counted in the heap that is now");
    for (p, i) in objects {
        gpu.write_bytes(p, &[i; 16]).expect("write");
        assert_eq!(gpu.read_bytes(p, 16).expect("read"), [i; 16]);
    }
}

#[test]
fn a_buffer_argument_may_point_into_a_buffer_at_the_offset_alignment() {
    let Some((_one, gpu)) = gpu("sub-buffers") else { return };
    let session = Session::new();
    let k = load(&gpu, &session, BUMP, "bump");
    let stream = gpu.stream().expect("stream");
    let buf = gpu.alloc_zeroed(512).expect("alloc");
    // 256 bytes is a multiple of every adapter's alignment (WebGPU caps
    // it there).
    bump(&gpu, &stream, &k, 7, buf.offset(256));
    bump(&gpu, &stream, &k, 5, buf);
    gpu.synchronize(&session, &stream).expect("runs");
    let words: Vec<u32> = gpu
        .read_bytes(buf, 512)
        .expect("read")
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().expect("4")))
        .collect();
    assert_eq!((words[0], words[64]), (5, 7));
    assert_eq!(words.iter().filter(|&&w| w != 0).count(), 2);
    // At the adapter's own alignment.
    let Device::Wgpu(d) = &gpu else { unreachable!("opened as wgpu") };
    let align = d.buffer_offset_alignment();
    assert!(align.is_power_of_two() && align <= 256, "{align}");
    bump(&gpu, &stream, &k, 9, buf.offset(align));
    gpu.synchronize(&session, &stream).expect("runs");
    assert_eq!(read_u32(&gpu, buf.offset(align)), if align == 256 { 16 } else { 9 });
    // A pointer off the alignment, or past the end, is refused at enqueue.
    let args = |p| [KernelArg::u32(1), KernelArg::Ptr(p)];
    if align > 4 {
        let e = gpu
            .enqueue(&stream, &k, &LaunchConfig::default(), &args(buf.offset(align / 2)), 0)
            .expect_err("misaligned");
        assert!(e.to_string().contains(&format!("min_storage_buffer_offset_alignment ({align} bytes)")), "{e}");
    }
    let e = gpu.enqueue(&stream, &k, &LaunchConfig::default(), &args(buf.offset(512)), 0).expect_err("past the end");
    assert!(e.to_string().contains("past the end"), "{e}");
    assert_eq!(gpu.synchronize(&session, &stream).expect("nothing ran").threads, 0);
}

#[test]
fn table_buffers_count_among_live_allocations_while_their_kernel_lives() {
    let Some((_one, gpu)) = gpu("live allocations") else { return };
    let session = Session::new();
    let before = gpu.live_allocations();
    let k = load(&gpu, &session, THROW, "check");
    let Kernel::Wgpu(w) = &k else { unreachable!("loaded on wgpu") };
    assert!(w.has_table(), "the message's word is in the table");
    // The session's copy of the message (a heap object) and the table.
    let loaded = gpu.live_allocations();
    assert_eq!(loaded, before + 2);
    let input = inputs(&gpu, 64, Some(1));
    let stream = gpu.stream().expect("stream");
    check(&gpu, &stream, &k, 64, input);
    drop(k);
    // The launch holds what it bound; the table is the kernel's.
    assert!(matches!(gpu.synchronize(&session, &stream), Err(ProgramError::Exception { .. })));
    gpu.free_bytes(input).expect("free");
    assert_eq!(gpu.live_allocations(), loaded - 1);
}
