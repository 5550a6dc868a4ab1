//! The facade on the wgpu device against the cpu device (the oracle),
//! under table and bake: every example (equal to the cpu device and to its
//! Rust reference), every file test's run lines, every f64 operation bit
//! for bit on 16 384 edge-weighted operand pairs, f32 `sqrt` bit for bit
//! on 65 536 operands (hard cases included), the words of every kind
//! of host object, a runtime global per context, exceptions (and the
//! device still usable after one), two contexts isolated, `patch` refused
//! with the reason, a second process that loads every WGSL artifact from
//! the store with zero compiles, a precompiled bundle run without
//! compiling, checked mode's out-of-bounds faults as the cpu device's, and
//! loops ended as typed faults.
//!
//! These were `crates/relok-cli/tests/wgpu.rs`, which drove the runtime
//! (`Device`, `Session`, `KernelCache`) through the CLI's helpers; here
//! every check goes through `Context`, `Kernel`, `Buffer` and `Stream`.
//! What needs the runtime itself moved to
//! `crates/relok-runtime/tests/wgpu_device.rs`: the pipeline-cache archive
//! (its state, a blob saved by one process and loaded by the next, blobs
//! damaged, foreign or random), the heap growing under concurrent
//! launches (heap objects allocated directly), the words as the session
//! resolves them, read from the heap, and one session over two devices.
//! What tests a CLI command stayed in the CLI
//! (`crates/relok-cli/tests/wgpu_commands.rs`: `relok bench wgpu`'s report,
//! a `relok fuzz` campaign).
//!
//! Runs on the first adapter wgpu lists (`RELOK_WGPU_ADAPTER` narrows the
//! list): lavapipe in CI (`.ci/run` installs it), NVIDIA's Vulkan driver on
//! a GPU machine. Without an adapter every test says on stderr that it
//! skips the device and passes, unless `RELOK_REQUIRE_WGPU=1` is set (CI
//! and `scripts/gpu-run.sh` set it).

mod common;

use common::examples::{EXAMPLES, Tolerance, run_example};
use common::filetest::{FAULT_LINES, PATCH_ONLY_LINES, checked_mode_faults_as_the_cpu_device, kernels_of, run_file};
use common::host_objects::{check_words, globals_are_per_context_and_exceptions_leave_the_device_usable, isolated};
use common::values::{Value, run};
use common::{as_child, repo, second_process, serial, temp_dir};
use relok::{Context, Error, Grid, Program, Strategy};
use relok_ir::Scalar;
use std::path::{Path, PathBuf};

/// The run lines of the refused kernels below (`@atom_xchg_cas` has two,
/// `@fma_f64` four, `@fatom_add_f64` one; `@fma_f64_folded` runs: its
/// `fma` is folded to the exact constant first; the math library's `f64`
/// functions and `pow`: `@pow_f32` 13, `@pow_f64` 8, `@nan_f64` 6,
/// `@spec_f64` 5, `@un_f64` 2, `@exact_f64` 2, `@dom_f64` and
/// `@exact_f64_folded` one each).
const REFUSED_LINES: usize = 52;

/// The wgpu device under bake and table, or `None` after saying why
/// `test` skips it.
fn gpu(test: &str) -> Option<Vec<Context>> {
    common::gpu_contexts("wgpu", test)
}

/// The adapter's limit on loop iterations per invocation, where it has
/// one: llvmpipe's 65 535 (docs/wgpu.md, "Long loops"; as the runtime's
/// `WgpuDevice::loop_limit` decides it, by the adapter's name).
fn loop_limit(ctx: &Context) -> Option<u32> {
    ctx.device_name().contains("(llvmpipe").then_some(65_535)
}

#[test]
fn every_example_equals_the_cpu_device_under_table_and_bake() {
    let _serial = serial();
    let Some(gpus) = gpu("examples") else { return };
    assert_eq!(gpus.iter().map(Context::strategy).collect::<Vec<_>>(), [Strategy::Bake, Strategy::Table]);
    for g in &gpus {
        let strategy = g.strategy();
        let c = Context::builder().device("cpu").strategy(strategy).no_cache().build().expect("cpu");
        for ex in EXAMPLES {
            let on = |ctx: &Context| run_example(ctx, ex).unwrap_or_else(|e| panic!("{} ({strategy}): {e}", ex.name));
            let (go, co) = (on(g), on(&c));
            assert!(go.matches, "{} ({strategy}): the wgpu result differs from the Rust reference", ex.name);
            // The math examples (softmax, gelu) within their tolerance of
            // the reference (above; a WGSL driver may flush subnormals and
            // round the library's divisions differently), the rest bit for bit.
            if ex.tolerance == Tolerance::EXACT {
                assert_eq!(go.args, co.args, "{} ({strategy}): wgpu and cpu differ", ex.name);
            }
            assert_eq!(go.exception, co.exception, "{} ({strategy})", ex.name);
        }
    }
}

#[test]
fn every_file_test_run_line_passes_on_wgpu() {
    let _serial = serial();
    let Some(gpus) = gpu("file tests") else { return };
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
        match run_file(&name, &text, &gpus) {
            Ok(n) => skipped += n,
            Err(errs) => failures.extend(errs),
        }
    }
    common::note(&format!(
        "file tests: {skipped} run lines skipped: `fault:` lines are the cpu device's; `strategy=patch` lines cannot run on wgpu"
    ));
    // Exactly the documented lines (the CLI's tests/filetests.rs pins
    // them: 19 `fault:` lines, no `strategy=patch` line): a run that
    // skipped everything cannot pass.
    assert_eq!(skipped, FAULT_LINES + PATCH_ONLY_LINES, "file-test run lines skipped on {}", gpus[0].device_name());
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
    }
    common::note(&format!("file tests: {} run lines refused by the WGSL backend, each documented", refused.len()));
    // One refusal per run line of those kernels, and no more.
    assert_eq!(refused.len(), REFUSED_LINES, "run lines refused by the WGSL backend:\n{}", refused.join("\n"));
    assert!(failures.is_empty(), "{} failures on {}:\n{}", failures.len(), gpus[0].device_name(), failures.join("\n"));
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
    let other = Context::builder().device("wgpu").no_cache().build().expect("adapter 0 opens twice");
    globals_are_per_context_and_exceptions_leave_the_device_usable(&gpus, &other);
}

#[test]
fn two_wgpu_contexts_in_one_process_are_isolated() {
    let _serial = serial();
    let Some(gpus) = gpu("two contexts") else { return };
    let b = Context::builder().device("wgpu").no_cache().build().expect("adapter 0 opens twice");
    isolated(&gpus[1], &b, "two wgpu contexts", false);
}

#[test]
fn patch_is_refused_on_wgpu_with_the_reason() {
    let _serial = serial();
    if gpu("patch").is_none() {
        return;
    }
    let e = Context::builder().device("wgpu").strategy(Strategy::Patch).no_cache().build().expect_err("refused");
    assert!(matches!(e, Error::Compile(relok_runtime::ProgramError::Unsupported { .. })), "{e}");
    assert!(e.to_string().contains("patching is impossible on wgpu"), "{e}");
}

/// Every example under table on a context whose artifact store and
/// pipeline-cache archive are under `dir`: the cache's counters (the
/// context is dropped, saving its pipeline cache, before they return).
fn run_all_cached(dir: &Path) -> serde_json::Value {
    let ctx = Context::builder().device("wgpu").cache_dir(dir).build().expect("adapter 0");
    for ex in EXAMPLES {
        assert!(run_example(&ctx, ex).expect("runs").matches, "{}", ex.name);
    }
    let cache = ctx.cache_stats();
    serde_json::json!({ "compiles": cache.compiles, "store_hits": cache.store.hits })
}

/// The second process's part (a no-op unless this binary runs as it).
#[test]
fn child() {
    as_child(run_all_cached);
}

#[test]
fn a_second_process_loads_every_wgsl_artifact_from_the_store() {
    let _serial = serial();
    if gpu("cross-process").is_none() {
        return;
    }
    let dir = temp_dir("wgpu", "store");
    let n = EXAMPLES.len() as u64;
    let a = run_all_cached(&dir);
    assert_eq!((&a["compiles"], &a["store_hits"]), (&n.into(), &0.into()), "{a}");
    let b = second_process(&dir);
    // Process B: no relok compile.
    assert_eq!(b["compiles"], 0, "{b}");
    assert_eq!(b["store_hits"], n, "{b}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `relok precompile --target wgsl` (relok-build's bundle) ships every
/// example as a table artifact (patch is skipped for WGSL): a context
/// that loads the bundle compiles nothing on the wgpu device.
#[test]
fn a_precompiled_wgsl_bundle_runs_every_example_without_compiling() {
    let _serial = serial();
    let Some(gpus) = gpu("wgsl bundle") else { return };
    let mut files: Vec<PathBuf> = EXAMPLES.iter().map(|e| repo().join(e.file)).collect();
    files.dedup();
    let target = relok_compiler::artifact::CodeTarget::Wgsl;
    let precompile = files.iter().fold(relok_build::Precompile::new().target(target), |p, f| p.file(f));
    let (bytes, items) =
        precompile.clone().strategy(Strategy::Patch).strategy(Strategy::Table).build().expect("builds");
    assert!(items.iter().all(|i| i.strategy == Strategy::Table), "patch is skipped for WGSL");
    let ctx = &gpus[1];
    assert_eq!(ctx.load_bundle(&bytes).expect("bundle loads"), 2 * items.len(), "each artifact and its source alias");
    for ex in EXAMPLES {
        assert!(run_example(ctx, ex).expect("runs").matches, "{}", ex.name);
    }
    assert_eq!(ctx.cache_stats().compiles, 0, "{:?}", ctx.cache_stats());
    let only_patch = precompile.strategy(Strategy::Patch).build();
    assert!(only_patch.is_err_and(|e| e.to_string().contains("patching is impossible on wgpu")));
}

/// f64 (emulated on its bits by the WGSL backend) equals the cpu device
/// bit for bit on edge-weighted operand pairs: every operation, compare
/// and conversion.
#[test]
fn f64_operations_equal_the_cpu_device_bit_for_bit() {
    let _serial = serial();
    let Some(gpus) = gpu("f64") else { return };
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
    let program = Program::parse(&src).expect("parses");
    let args = [
        Value::Buffer(Scalar::U64, a.clone()),
        Value::Buffer(Scalar::U64, b.clone()),
        Value::Buffer(Scalar::U64, vec![0; 32 * n]),
        Value::Scalar(Scalar::U32, 0),
    ];
    let grid = Grid::new((n / 64) as u32, 64);
    for g in &gpus {
        let strategy = g.strategy();
        let c = Context::builder().device("cpu").strategy(strategy).no_cache().build().expect("cpu");
        let on = |ctx: &Context| {
            run(ctx, &program, "f64ops", grid, &args)
                .unwrap_or_else(|e| panic!("{strategy} on {}: {e}", ctx.device_name()))
        };
        let (go, co) = (on(g), on(&c));
        let (g, c) = (go[2].buffer(), co[2].buffer());
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

/// f32 `sqrt` (correctly rounded in the IR; `relok_fsqrt32` on wgpu)
/// equals the cpu device bit for bit on 65 536 operands: every exponent
/// with random significands and both signs, subnormals, the 40
/// significands whose roots lie closest to a midpoint at every exponent of
/// their parity, and the specials (NaN results by their bits: x86's).
#[test]
fn f32_sqrt_equals_the_cpu_device_bit_for_bit() {
    let _serial = serial();
    let Some(gpus) = gpu("f32 sqrt") else { return };
    // As the compiler's helper tests find them (`wgsl/helpers/tests.rs`).
    let hard: [u32; 40] = [
        0x407f_ffff,
        0x3f80_0001,
        0x3ffc_114a,
        0x407f_fffd,
        0x3f80_0003,
        0x406e_9372,
        0x3f92_5859,
        0x4055_1dbf,
        0x3fb0_c6c3,
        0x405a_e03b,
        0x3fa9_7bef,
        0x407f_fffb,
        0x3f80_0005,
        0x402a_177f,
        0x3ff0_28ab,
        0x4041_bc4e,
        0x3fcb_41e9,
        0x3fcd_aeb2,
        0x3fb8_cc66,
        0x3ff0_d9ce,
        0x407f_fff9,
        0x3f80_0007,
        0x403b_8bcc,
        0x3fd4_6581,
        0x400f_e042,
        0x404d_142a,
        0x3fbb_61f7,
        0x403b_8e2a,
        0x3fd4_61f1,
        0x405f_5fa5,
        0x3fa3_f60b,
        0x401d_c3f5,
        0x3fc3_d4c6,
        0x407f_fff7,
        0x4051_5a77,
        0x4012_1e3f,
        0x4033_02be,
        0x4071_a284,
        0x4053_64e1,
        0x407f_fff5,
    ];
    let mut xs: Vec<u64> = [0u32, 0x8000_0000, 1, 0x007f_ffff, 0x0080_0000, 0x7f7f_ffff, 0x7f80_0000, 0xff80_0000]
        .into_iter()
        .chain([0x7fc0_0000, 0x7f80_0001, 0xffc0_1234, 0xbf80_0000, 0x8000_0001, 0x3f80_0000, 0x4080_0000])
        .map(u64::from)
        .collect();
    for h in hard {
        xs.extend((2..254).step_by(2).map(|e| u64::from((h & 0x007f_ffff) | ((e + ((h >> 23) & 1)) << 23))));
    }
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let n = 65536usize;
    while xs.len() < n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let r = seed as u32;
        let x = match xs.len() % 4 {
            // Every exponent in turn, either sign.
            0 | 1 => (r & 0x807f_ffff) | (((xs.len() as u32 / 2) % 256) << 23),
            2 => r & 0x007f_ffff,
            _ => r,
        };
        xs.push(u64::from(x));
    }
    let src = "kernel @sqrt_bits(v0: ptr<global, u32>, v1: ptr<global, u32>) {\n    v2: u32 = block_id.x\n    v3: u32 = block_dim.x\n    v4: u32 = thread_id.x\n    v5: u32 = mul v2, v3\n    v6: u32 = add v5, v4\n    v7: u32 = load v0[v6]\n    v8: f32 = bitcast v7\n    v9: f32 = sqrt v8\n    v10: u32 = bitcast v9\n    store v1[v6], v10\n    return\n}\n";
    let program = Program::parse(src).expect("parses");
    let args = [Value::Buffer(Scalar::U32, xs.clone()), Value::Buffer(Scalar::U32, vec![0; n])];
    let grid = Grid::new((n / 256) as u32, 256);
    for g in &gpus {
        let strategy = g.strategy();
        let c = Context::builder().device("cpu").strategy(strategy).no_cache().build().expect("cpu");
        let on = |ctx: &Context| {
            run(ctx, &program, "sqrt_bits", grid, &args)
                .unwrap_or_else(|e| panic!("{strategy} on {}: {e}", ctx.device_name()))
        };
        let (go, co) = (on(g), on(&c));
        let (g, c) = (go[1].buffer(), co[1].buffer());
        let bad: Vec<usize> = (0..n).filter(|&i| g[i] != c[i]).collect();
        let shown: Vec<String> =
            bad.iter().take(20).map(|&i| format!("sqrt {:#x}: wgpu {:#x}, cpu {:#x}", xs[i], g[i], c[i])).collect();
        assert!(bad.is_empty(), "{strategy}: {} of {n} differ:\n{}", bad.len(), shown.join("\n"));
    }
}

/// Loops past llvmpipe's limit, counted by their back edges, by loops
/// that do not run (in a branch not taken, after a `continue`, in a
/// function or a helper not called) and by the loops inside an operation
/// (a float atomic, a u64 division): each
/// counts to its end or, on llvmpipe only, fails with the loop-limit
/// fault — never a wrong result (docs/wgpu.md, "Long loops").
#[test]
fn a_loop_past_llvmpipes_limit_is_a_typed_fault_there_and_runs_elsewhere() {
    let _serial = serial();
    let Some(gpus) = gpu("loop limit") else { return };
    let kernels = kernels_of("run_long_loops.rk");
    for line in [
        // 2000 × 1000 inner iterations: unrolled 16 times, still 2000 × 63
        // back edges of the inner loop.
        "@nested(2000, 1000, zeros:1) => _, _, [2000000]",
        // A bounds check's throw in every iteration: 2 000 000 iterations,
        // unrolled 16 times (the throw is a call: `wgsl::throws`), still
        // 125 000 back edges.
        "@count_checked(2000000, 2000001, zeros:1) => _, _, [2000000]",
        "@masked_loop(40000, zeros:1) => _, [40000]",
        "@masked_call(40000, zeros:1) => _, [40000]",
        "@masked_fmod(40000, 2.5, zeros:1) => _, _, [40000]",
        "@float_atomic(100000, zeros:1) => _, [100000.0]",
        // u64 division of operands past 32 bits: a helper loop of 64 steps.
        "@div_loop(2000, 7, zeros:1) => _, _, [313989106274888286]",
        // Every iteration continues before a loop (llvmpipe runs it masked).
        "@continue_loop(40000, zeros:1) => _, [40000]",
    ] {
        let result = run_file("long.rk", &format!("test run\n; run: {line}\n{kernels}"), &gpus);
        let kernel = &line[..line.find('(').unwrap_or(0)];
        match loop_limit(&gpus[0]) {
            Some(limit) => {
                let errs = result.expect_err("llvmpipe would end the loop early: the launch must fail");
                let expected =
                    format!("a loop would run past the device's limit of {limit} loop iterations per invocation");
                assert!(errs.len() == 1 && errs[0].contains(kernel) && errs[0].contains(&expected), "{errs:?}");
            }
            None => assert_eq!(result, Ok(0), "no loop limit on {}: {line} runs to its end", gpus[0].device_name()),
        }
    }
}

#[test]
fn checked_mode_reports_the_cpu_devices_out_of_bounds_faults() {
    let _serial = serial();
    let Some(gpus) = gpu("checked mode") else { return };
    checked_mode_faults_as_the_cpu_device(&gpus);
}

#[test]
fn an_endless_loop_is_a_typed_fault_never_a_hang_or_a_success() {
    let _serial = serial();
    let Some(gpus) = gpu("endless loop") else { return };
    // run_faults.rk's @forever: the cpu device's step budget ends it; in
    // checked mode (the default) the WGSL ends it at llvmpipe's limit or
    // at checked mode's loop budget elsewhere.
    let expected = match loop_limit(&gpus[0]) {
        Some(limit) => format!("a loop would run past the device's limit of {limit} loop iterations"),
        None => format!("loop budget of {} iterations per thread exceeded", relok_compiler::fault::CHECKED_LOOP_BUDGET),
    };
    let text = format!("test run\n; run: @forever(zeros:1) => error: {expected}\n{}", kernels_of("run_faults.rk"));
    assert_eq!(run_file("forever.rk", &text, &gpus), Ok(0), "on {}", gpus[0].device_name());
}
