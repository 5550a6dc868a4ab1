//! The facade on the cuda device against the cpu device (the oracle),
//! under bake, patch and table: every example (equal to the cpu device
//! and to its Rust reference), the words of every kind of host object, a
//! runtime global per context, exceptions (and the device still usable
//! after one), two contexts and two GPUs isolated, checked mode's
//! out-of-bounds faults as the cpu device's, an endless loop a typed
//! fault, buffers dropped and uploaded behind a long launch, a throw
//! nobody waited for, a second process that loads every PTX artifact
//! from the store and every cubin from the binary archive, and each
//! kernel's registers as the driver reports them.
//!
//! These were `crates/relok-cli/tests/cuda.rs`, which drove the runtime
//! (`Device`, `Session`, `KernelCache`) through the CLI's helpers; here
//! every check goes through `Context`, `Kernel`, `Buffer` and `Stream`.
//! What needs the runtime itself moved to
//! `crates/relok-runtime/tests/cuda_device.rs`: the binary archive fed
//! garbage, foreign cubins, old drivers' folders and a tiny cap (its
//! entries and store are the device's); a freed slot taken again at once
//! under a pending launch (the facade frees a buffer only once its
//! launches passed); the words as the session resolves them, read from
//! device memory; one session over two CUDA contexts (a primary and a
//! private one: the facade opens primary contexts) and over two GPUs.
//!
//! Without a CUDA driver and GPU every test says on stderr that it skips
//! the device and passes, unless `RELOK_REQUIRE_CUDA=1` is set: then it
//! fails. `scripts/gpu-run.sh` runs this binary on a GPU machine and sets
//! it.

mod common;

use common::examples::{EXAMPLES, run_example};
use common::filetest::{checked_mode_faults_as_the_cpu_device, kernels_of, run_file};
use common::host_objects::{check_words, globals_are_per_context_and_exceptions_leave_the_device_usable, isolated};
use common::{as_child, cpu_contexts, second_process, serial, temp_dir};
use relok::{Context, Error, Grid, Program, Strategy};
use std::path::Path;

/// The cuda device under every strategy (bake, patch, table), or `None`
/// after saying why `test` skips it.
fn gpu(test: &str) -> Option<Vec<Context>> {
    common::gpu_contexts("cuda", test)
}

#[test]
fn every_example_equals_the_cpu_device_under_every_strategy() {
    let _serial = serial();
    let Some(gpus) = gpu("examples") else { return };
    assert_eq!(gpus.iter().map(Context::strategy).collect::<Vec<_>>(), Strategy::ALL);
    for (g, c) in gpus.iter().zip(cpu_contexts()) {
        let strategy = g.strategy();
        for ex in EXAMPLES {
            let on = |ctx: &Context| run_example(ctx, ex).unwrap_or_else(|e| panic!("{} ({strategy}): {e}", ex.name));
            let (go, co) = (on(g), on(&c));
            assert!(go.matches, "{} ({strategy}): the GPU's result differs from the Rust reference", ex.name);
            assert_eq!(go.args, co.args, "{} ({strategy}): GPU and cpu differ", ex.name);
            assert_eq!(go.exception.is_some(), co.exception.is_some(), "{} ({strategy})", ex.name);
        }
    }
}

#[test]
fn a_kernel_reports_the_registers_of_its_machine_code() {
    let _serial = serial();
    let Some(gpus) = gpu("registers") else { return };
    let p = Program::parse_named("examples/saxpy.rk", include_str!("../../../examples/saxpy.rk")).expect("parses");
    for g in &gpus {
        let regs = g.kernel(&p, "saxpy").expect("loads").registers();
        // A thread has at most 255 registers on every CUDA GPU.
        assert!(regs.is_some_and(|r| (1..=255).contains(&r)), "{regs:?} ({})", g.strategy());
    }
}

#[test]
fn words_of_every_kind_of_host_object_are_the_contexts() {
    let _serial = serial();
    let Some(gpus) = gpu("words") else { return };
    for ctx in &gpus {
        check_words(ctx);
    }
}

#[test]
fn runtime_globals_are_per_context_and_exceptions_leave_the_device_usable() {
    let _serial = serial();
    let Some(gpus) = gpu("globals") else { return };
    let other = Context::builder().device("cuda").no_cache().build().expect("GPU 0 opens twice");
    globals_are_per_context_and_exceptions_leave_the_device_usable(&gpus, &other);
}

/// Every example under patch and table on contexts whose artifact store
/// and binary archive are under `dir`: the caches' and the device's
/// counters, summed over both contexts.
fn run_all_cached(dir: &Path) -> serde_json::Value {
    let (mut compiles, mut store_hits, mut linked, mut archived, mut jit) = (0, 0, 0, 0, 0);
    for strategy in [Strategy::Patch, Strategy::Table] {
        let ctx = Context::builder().device("cuda").strategy(strategy).cache_dir(dir).build().expect("GPU 0");
        for ex in EXAMPLES {
            assert!(run_example(&ctx, ex).expect("runs").matches, "{} ({strategy})", ex.name);
        }
        let (cache, code) = (ctx.cache_stats(), ctx.code_stats());
        compiles += cache.compiles;
        store_hits += cache.store.hits;
        (linked, archived, jit) = (linked + code.linked, archived + code.archived, jit + code.jit);
    }
    serde_json::json!({
        "compiles": compiles, "store_hits": store_hits, "linked": linked, "archived": archived, "jit": jit,
    })
}

/// The second process's part (a no-op unless this binary runs as it).
#[test]
fn child() {
    as_child(run_all_cached);
}

#[test]
fn a_second_process_loads_every_ptx_artifact_from_the_store() {
    let _serial = serial();
    if gpu("cross-process").is_none() {
        return;
    }
    let dir = temp_dir("cuda", "store");
    let n = EXAMPLES.len() as u64 * 2;
    let a = run_all_cached(&dir);
    assert_eq!((&a["compiles"], &a["store_hits"]), (&n.into(), &0.into()), "{a}");
    // Kernels without records have the same PTX under patch and table: one
    // cubin serves both, so some of process A's loads already hit.
    let (linked, hits) = (a["linked"].as_u64().expect("n"), a["archived"].as_u64().expect("n"));
    assert_eq!((linked + hits, &a["jit"]), (n, &0.into()), "{a}");
    assert!(linked >= EXAMPLES.len() as u64, "{a}");
    let b = second_process(&dir);
    // Process B: no relok compile, no PTX JIT: every cubin from the archive.
    assert_eq!(b["compiles"], 0, "{b}");
    assert_eq!(b["store_hits"], n, "{b}");
    assert_eq!(b["archived"], n, "{b}");
    assert_eq!((&b["linked"], &b["jit"]), (&0.into(), &0.into()), "{b}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_contexts_on_one_gpu_are_isolated() {
    let _serial = serial();
    let Some(gpus) = gpu("two contexts") else { return };
    let b = Context::builder().device("cuda").no_cache().build().expect("a second context");
    isolated(&gpus[2], &b, "two contexts", true);
}

#[test]
fn two_gpus_are_isolated() {
    let _serial = serial();
    let Some(gpus) = gpu("two GPUs") else { return };
    let b = match Context::builder().device("cuda:1").no_cache().build() {
        Ok(b) => b,
        Err(e) => {
            common::note(&format!("two GPUs: skipping: cuda:1 does not open: {e}"));
            return;
        }
    };
    isolated(&gpus[2], &b, "two GPUs", true);
}

/// run_faults.rk's kernels without its `; run:` lines.
#[test]
fn checked_mode_reports_the_cpu_devices_out_of_bounds_faults() {
    let _serial = serial();
    let Some(gpus) = gpu("checked mode") else { return };
    checked_mode_faults_as_the_cpu_device(&gpus);
}

#[test]
fn an_endless_loop_is_a_typed_fault_never_a_hang() {
    let _serial = serial();
    let Some(gpus) = gpu("endless loop") else { return };
    // run_faults.rk's @forever: checked mode's loop budget ends it.
    let expected =
        format!("loop budget of {} iterations per thread exceeded", relok_compiler::fault::CHECKED_LOOP_BUDGET);
    let text = format!("test run\n; run: @forever(zeros:1) => error: {expected}\n{}", kernels_of("run_faults.rk"));
    assert_eq!(run_file("forever.rk", &text, &gpus), Ok(0), "on {}", gpus[0].device_name());
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
fn a_small_buffer_dropped_under_a_pending_launch_reaches_it_with_its_bytes() {
    // Buffers of up to 4 KiB are slots of one block, written on the legacy
    // stream. An input dropped while a launch queued behind a long one
    // still has to read it, and a new upload made at once, must reach that
    // launch with its old bytes and the new buffer with the new ones.
    // Parsed and verified first, so that a machine without a GPU checks
    // them. (The runtime's own test, crates/relok-runtime/tests/cuda_device.rs,
    // frees the slot itself and takes it again at once.)
    let spin = Program::parse(SPIN).expect("parses");
    // `@saxpy` with a = 1 into zeros copies its input.
    let copy = Program::parse(include_str!("../../../examples/saxpy.rk")).expect("parses");
    let _serial = serial();
    let Some(gpus) = gpu("small buffer reuse") else { return };
    let ctx = &gpus[2];
    let (spin, copy) = (ctx.kernel(&spin, "spin").expect("loads"), ctx.kernel(&copy, "saxpy").expect("loads"));
    let n = 256u32;
    let old: Vec<f32> = (0..n).map(|i| (i * 3 + 1) as f32).collect();
    let new: Vec<f32> = (0..n).map(|i| -(i as f32) - 0.5).collect();
    let input = ctx.upload(&old).expect("upload");
    let mut out = ctx.zeros::<f32>(n as usize).expect("zeros");
    let mut sink = ctx.zeros::<u32>(1).expect("zeros");
    let stream = ctx.stream();
    spin.launch(&stream, Grid::new(1, 1), (1u32 << 21, &mut sink)).expect("spin");
    copy.launch(&stream, Grid::new(n.div_ceil(64), 64), (n, 1.0f32, &input, &mut out)).expect("copy");
    drop(input);
    let again = ctx.upload(&new).expect("upload");
    stream.synchronize().expect("no exception");
    assert_eq!(out.download().expect("read"), old, "the launch read the bytes it was given");
    assert_eq!(again.download().expect("read"), new, "the new buffer holds its own");
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
    // so must zeros. Sizes of 4096, 1000 and 64 bytes are u32 buffers, of
    // one byte bool buffers.
    let spin = Program::parse(SPIN).expect("parses");
    let _serial = serial();
    let Some(gpus) = gpu("uploads behind a long launch") else { return };
    let ctx = &gpus[2];
    let spin = ctx.kernel(&spin, "spin").expect("loads");
    let mut sink = ctx.zeros::<u32>(1).expect("zeros");
    let stream = ctx.stream();
    spin.launch(&stream, Grid::new(1, 1), (1u32 << 23, &mut sink)).expect("spin");
    let mut host = vec![0u32; 1024];
    let mut bools = [false];
    let (mut words, mut bytes) = (Vec::new(), Vec::new());
    for round in 0..64u32 {
        let len = [4096usize, 1, 1000, 64, 1, 1, 1, 1][round as usize % 8];
        for (i, w) in host.iter_mut().enumerate() {
            *w = (i as u32).wrapping_mul(31).wrapping_add(round * 97);
        }
        bools[0] = round % 3 == 1;
        if len == 1 {
            bytes.push((ctx.upload(&bools).expect("upload"), bools.to_vec()));
        } else {
            words.push((ctx.upload(&host[..len / 4]).expect("upload"), host[..len / 4].to_vec()));
        }
        if round % 8 == 2 {
            words.push((ctx.zeros::<u32>(len / 4).expect("zeros"), vec![0; len / 4]));
        }
        // The next round's bytes overwrite this round's at once.
        host.fill(0xA5A5_A5A5);
        bools[0] = !bools[0];
    }
    stream.synchronize().expect("no exception");
    for (i, (buffer, want)) in words.iter().enumerate() {
        assert_eq!(&buffer.download().expect("read"), want, "upload {i} holds the bytes it was given");
    }
    for (i, (buffer, want)) in bytes.iter().enumerate() {
        assert_eq!(&buffer.download().expect("read"), want, "one-byte upload {i} holds the byte it was given");
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
    let throw = Program::parse(include_str!("../../../examples/reloc/throw.rk")).expect("parses");
    let copy = Program::parse(include_str!("../../../examples/saxpy.rk")).expect("parses");
    let _serial = serial();
    let Some(gpus) = gpu("unread throw") else { return };
    let ctx = &gpus[2];
    let (check, saxpy) = (ctx.kernel(&throw, "check").expect("loads"), ctx.kernel(&copy, "saxpy").expect("loads"));
    let mut data: Vec<i32> = (1..=40).collect();
    data[37] = -38;
    let bad = ctx.upload(&data).expect("upload");
    let good = ctx.upload(&[1i32; 40]).expect("upload");
    let (x, mut y) = (ctx.upload(&[0.0f32; 64]).expect("upload"), ctx.zeros::<f32>(64).expect("zeros"));
    let grid = Grid::new(4, 32);
    for round in 0..3 {
        let stream = ctx.stream();
        check.launch(&stream, grid, (40u32, &bad)).expect("enqueued");
        drop(stream);
        let stream = ctx.stream();
        check.launch(&stream, grid, (40u32, &good)).expect("enqueued");
        assert!(stream.synchronize().is_ok(), "round {round}: a stale throw was reported");
        saxpy.launch(&stream, Grid::new(1, 64), (64u32, 2.0f32, &x, &mut y)).expect("enqueued");
        check.launch(&stream, grid, (40u32, &bad)).expect("enqueued");
        match stream.synchronize() {
            Err(Error::Exception { kernel, message, .. }) => {
                assert_eq!((kernel.as_str(), message.as_str()), ("check", "negative input"), "round {round}")
            }
            other => panic!("round {round}: {other:?}"),
        }
        assert!(stream.synchronize().is_ok(), "round {round}: reported once");
    }
}
