//! The PTX backend over every example and every `test run` / `test
//! roundtrip` file test, under bake, patch and table, checked and
//! unchecked: the output is byte-stable and — where `ptxas` is available
//! (`RELOK_PTXAS`, else `ptxas` on the PATH) — assembles for sm_90. Without
//! `ptxas` the assembly step is skipped with a message. Checked mode's
//! checks are in the checked PTX and in none of the unchecked PTX.

use relok_compiler::CompileError;
use relok_compiler::artifact::{CodeTarget, CompileOptions, compile};
use relok_compiler::fault::{Access, out_of_bounds_high};
use relok_compiler::stencil::Stencil;
use relok_ir::Strategy;
use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{fake_word, inputs, repo};

/// Every (file, kernel, strategy, checked or not) and its PTX (or the
/// compile error).
fn all_ptx() -> Vec<(String, Result<String, CompileError>)> {
    let mut out = Vec::new();
    for (file, m) in inputs() {
        for (_, k) in m.kernels() {
            let stencil = Stencil::new(&m, &k.name).expect("stencil");
            for s in Strategy::ALL {
                for checked in [false, true] {
                    let words: Option<relok_compiler::lower::WordResolver<'_>> =
                        if s == Strategy::Bake { Some(&fake_word) } else { None };
                    let options = CompileOptions { checked, ..CompileOptions::default() };
                    let r = compile(&stencil, CodeTarget::Ptx { sm: 90 }, s, options, words)
                        .map(|a| String::from_utf8(a.code).expect("PTX is UTF-8"));
                    let mode = if checked { "checked" } else { "unchecked" };
                    out.push((format!("{file}-{}-{s}-{mode}", k.name), r));
                }
            }
        }
    }
    out
}

/// The PTX of `kernel` in `source` (IR text) under table.
fn ptx_of(source: &str, kernel: &str, checked: bool) -> String {
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(source).expect("parses")).expect("verifies");
    let stencil = Stencil::new(&m, kernel).expect("stencil");
    let options = CompileOptions { checked, ..CompileOptions::default() };
    let a = compile(&stencil, CodeTarget::Ptx { sm: 90 }, Strategy::Table, options, None).expect("compiles");
    a.validate().expect("the loader accepts it");
    String::from_utf8(a.code).expect("UTF-8")
}

/// The kernels of a `test run` file test.
fn file_test(name: &str) -> String {
    let text = std::fs::read_to_string(repo().join("tests/filetests").join(name)).expect("read");
    text.strip_prefix("test run\n").expect("a run test").to_owned()
}

#[test]
fn checked_ptx_checks_buffer_accesses_loops_and_host_value_writes() {
    let faults = file_test("run_faults.rk");
    let marks = ["relok_len", "atom.global.cas.b64", "[%st3]", "relok_seals", "%lc"];
    // A buffer parameter's load and store: a hidden length, checked
    // against, a fault recorded out of line and the thread ended.
    let load = ptx_of(&faults, "oob_load", true);
    assert!(load.contains(",\n\t.param .u64 p1,\n\t.param .u64 relok_len1,\n\t.param .u64 relok_seals\n)"), "{load}");
    assert!(
        !load.contains(".visible .global"),
        "the seal table is a parameter, never a module global (slow to load):\n{load}"
    );
    assert!(load.contains("ld.param.u64 %len1, [relok_len1];"), "{load}");
    // The load by a 32-bit index is checked against the elements the
    // length holds (computed once, at entry), the store by its byte offset.
    assert!(load.contains("shr.u64 %trd") && load.contains(", %len1, 2;"), "{load}");
    assert_eq!(load.matches("setp.ge.and.u32 ").count(), 1, "{load}");
    assert_eq!(load.matches("setp.gt.or.u64 ").count(), 1, "{load}");
    // Each fault is recorded inline, after the body (no call: linked, a
    // call costs the whole function the call ABI's registers), and ends
    // the thread.
    let (body, cold) = load.split_at(load.find("\tret;\n").expect("a return"));
    assert!(!load.contains("call ") && !body.contains("atom.global.cas.b64"), "{load}");
    assert_eq!(cold.matches("atom.global.cas.b64").count(), 2, "the load's and the store's:\n{load}");
    assert_eq!(cold.matches("\texit;").count(), 2, "{load}");
    // No store through a word: no seal check declared (the driver's
    // compiler takes milliseconds over an unused function).
    assert!(!load.contains(".func") && !load.contains("[%st3]"), "{load}");
    let read = format!("{:#x}", u64::from(out_of_bounds_high(1, Access::Read, 4)) << 32);
    let write = format!("{:#x}", u64::from(out_of_bounds_high(1, Access::Write, 4)) << 32);
    assert!(load.contains(&read) && load.contains(&write), "{load}");
    // An atomic, its size in the code.
    let atomic = ptx_of(&faults, "oob_atomic", true);
    assert!(atomic.contains(&format!("{:#x}", u64::from(out_of_bounds_high(0, Access::Atomic, 8)) << 32)), "{atomic}");
    // A loop counts its iterations against the budget.
    let forever = ptx_of(&faults, "forever", true);
    assert!(
        forever.contains(&format!("setp.gt.u32 %tp0, %lc, {};", relok_compiler::fault::CHECKED_LOOP_BUDGET)),
        "{forever}"
    );
    assert!(forever.contains(&format!("{:#x}", relok_compiler::fault::LOOP_BUDGET_MESSAGE)), "{forever}");
    // A store through a value's word asks the seal table first.
    let smash = "const @t: [u32; 8] = [1, 2, 3, 4, 5, 6, 7, 8]\n\nkernel @smash(v0: u32) {\n    v1: word = ref @t\n    v2: ptr<global, u32> = wordptr v1\n    v3: u32 = const 5\n    v4: u32 = const 999\n    store v2[v3], v4\n    v5: u32 = load v2[v3]\n    return\n}\n";
    let checked = ptx_of(smash, "smash", true);
    // Inline: nothing sealed is one compare in the body; the scan of the
    // table is out of line, after the body. No function, no call.
    let (body, cold) = checked.split_at(checked.find("\tret;\n").expect("a return"));
    assert_eq!(body.matches("setp.ne.u64 %tp0, %st3, 0;").count(), 1, "the store, not the load:\n{checked}");
    assert_eq!(cold.matches(", [%st3];").count(), 1, "{checked}");
    assert!(cold.contains(&format!("{:#x}", u64::from(relok_compiler::fault::READ_ONLY_MESSAGE_HIGH) << 32)));
    assert!(!checked.contains(".func") && !checked.contains("call "), "{checked}");
    assert!(checked.contains("ld.param.u64 %st3, [relok_seals];"), "{checked}");
    // A device function gets the seal table as its fourth state parameter.
    let via_fn = "const @t: [u32; 8] = [1, 2, 3, 4, 5, 6, 7, 8]\n\nfn @poke(v0: word) {\n    v1: ptr<global, u32> = wordptr v0\n    v2: u32 = const 5\n    store v1[v2], v2\n    return\n}\n\nkernel @smash(v0: u32) {\n    v1: word = ref @t\n    call @poke(v1)\n    return\n}\n";
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(via_fn).expect("parses")).expect("verifies");
    let stencil = Stencil::new(&m, "smash").expect("stencil");
    let options = CompileOptions { checked: true, optimize: false };
    let code = String::from_utf8(
        compile(&stencil, CodeTarget::Ptx { sm: 90 }, Strategy::Table, options, None).expect("compiles").code,
    )
    .expect("UTF-8");
    assert!(code.contains(", .param .b64 st3"), "{code}");
    assert!(code.contains("ld.param.b64 %st3, [st3];") && code.contains("st.param.b64 [st3_], %st3;"), "{code}");
    assert!(code.contains(", [%st3];"), "the device function scans the table:\n{code}");
    // Unchecked: none of it.
    for (source, kernel) in
        [(faults.as_str(), "oob_load"), (faults.as_str(), "oob_atomic"), (faults.as_str(), "forever"), (smash, "smash")]
    {
        let plain = ptx_of(source, kernel, false);
        assert!(marks.iter().all(|m| !plain.contains(m)), "@{kernel} unchecked:\n{plain}");
    }
}

fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RELOK_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let ok = Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success());
    ok.then(|| PathBuf::from("ptxas"))
}

/// Assembles `ptx` for sm_90 with `ptxas` (through `dir/name.ptx`); the
/// error is ptxas's message, named.
fn assemble(ptxas: &std::path::Path, dir: &std::path::Path, name: &str, ptx: &str) -> Result<(), String> {
    let path = dir.join(format!("{name}.ptx"));
    std::fs::write(&path, ptx).expect("write");
    let out = Command::new(ptxas).args(["-arch=sm_90", "-o", "/dev/null"]).arg(&path).output().expect("ptxas runs");
    if out.status.success() { Ok(()) } else { Err(format!("{name}:\n{}", String::from_utf8_lossy(&out.stderr))) }
}

#[test]
fn every_kernel_assembles_for_sm90_under_every_strategy() {
    let mut all = all_ptx();
    // run_memory_limits.rk's two kernels over a limit are refused, by
    // name, under every strategy (relok_compiler::memory_limits).
    let over = |n: &str, r: &Result<String, CompileError>| {
        n.starts_with("run_memory_limits.rk-big_") && matches!(r, Err(CompileError::MemoryLimit(_)))
    };
    assert_eq!(all.iter().filter(|(n, r)| over(n, r)).count(), 2 * 2 * Strategy::ALL.len());
    all.retain(|(n, r)| !over(n, r));
    let failed: Vec<String> = all.iter().filter_map(|(n, r)| r.as_ref().err().map(|e| format!("{n}: {e}"))).collect();
    assert!(failed.is_empty(), "PTX generation failed:\n{}", failed.join("\n"));
    assert!(all.len() > 100, "{} kernels", all.len());
    let Some(ptxas) = ptxas() else {
        // Straight to the stream: libtest hides a passing test's eprintln.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("SKIPPED: ptxas not found (set RELOK_PTXAS); {} PTX modules generated, not assembled\n", all.len())
                .as_bytes(),
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("relok-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad: Vec<String> =
        all.iter().filter_map(|(name, r)| assemble(&ptxas, &dir, name, r.as_ref().expect("checked")).err()).collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(bad.is_empty(), "{} of {} modules rejected by ptxas:\n{}", bad.len(), all.len(), bad.join("\n"));
}

/// Committed PTX of a few kernels (`tests/out/ptx/`): any change to the
/// backend's output shows up in review. `BLESS=1` rewrites them.
#[test]
fn expected_ptx_is_unchanged() {
    // Unchecked, and (saxpy, matmul) checked: the fault paths out of line,
    // the counted inner loop of matmul unrolled; gelu: the math library's
    // f32 tanh, inlined.
    let cases = [
        ("examples/saxpy.rk", "saxpy", Strategy::Table, false),
        ("examples/saxpy.rk", "saxpy", Strategy::Table, true),
        ("examples/reloc/symbols.rk", "classify", Strategy::Patch, false),
        ("examples/reloc/symbols.rk", "classify", Strategy::Table, false),
        ("examples/reloc/boxed.rk", "unbox", Strategy::Patch, false),
        ("examples/reloc/boxed.rk", "unbox", Strategy::Table, false),
        ("examples/reloc/throw.rk", "check", Strategy::Table, false),
        ("examples/reduce.rk", "reduce", Strategy::Patch, false),
        ("examples/matmul.rk", "matmul", Strategy::Table, false),
        ("examples/matmul.rk", "matmul", Strategy::Table, true),
        ("examples/gelu.rk", "gelu", Strategy::Table, false),
    ];
    let bless = std::env::var_os("BLESS").is_some();
    let mut changed = Vec::new();
    for (file, kernel, s, checked) in cases {
        let options = CompileOptions { checked, ..CompileOptions::default() };
        let m = relok_ir::VerifiedModule::new(
            relok_ir::parse(&std::fs::read_to_string(repo().join(file)).expect("read")).expect("parses"),
        )
        .expect("verifies");
        let stencil = Stencil::new(&m, kernel).expect("stencil");
        let a = compile(&stencil, CodeTarget::Ptx { sm: 90 }, s, options, None).expect("compiles");
        let got = String::from_utf8(a.code).expect("UTF-8");
        // Byte-stable within a process too.
        let again = compile(&stencil, CodeTarget::Ptx { sm: 90 }, s, options, None).expect("compiles");
        assert_eq!(got.as_bytes(), again.code.as_slice());
        let mode = if checked { "-checked" } else { "" };
        let path = repo().join(format!("tests/out/ptx/{kernel}-{s}{mode}.ptx"));
        if bless {
            std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
            std::fs::write(&path, &got).expect("write");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == got => {}
            _ => changed.push(path.display().to_string()),
        }
    }
    assert!(changed.is_empty(), "PTX changed (review, then run with BLESS=1): {changed:?}");
}

#[test]
fn thirty_two_bit_negations_are_written_as_not_and_add() {
    // Driver 580's PTX compiler miscompiles `neg.s32` (and `sub 0, x`,
    // `mul x, -1`) of a loop-carried 0x7fffffff (docs/cuda.md).
    let source = file_test("run_neg_loop.rk");
    for kernel in ["neg_loop", "mul_loop", "sub_loop"] {
        for checked in [false, true] {
            let ptx = ptx_of(&source, kernel, checked);
            assert!(ptx.contains("not.b32"), "@{kernel}: {ptx}");
            for negation in ["neg.s32", "mul.lo.s32", "sub.s32"] {
                assert!(!ptx.contains(negation), "@{kernel} (checked: {checked}) still has {negation}:\n{ptx}");
            }
        }
    }
    // Division keeps MIN / -1 == MIN through the same negation.
    let div = ptx_of(
        "kernel @d(v0: ptr<global, i32>) {\n    v1: u32 = thread_id.x\n    v2: i32 = load v0[v1]\n    v3: i32 = load v0[v1]\n    v4: i32 = div v2, v3\n    store v0[v1], v4\n    return\n}\n",
        "d",
        false,
    );
    assert!(div.contains("not.b32") && !div.contains("neg.s32"), "{div}");
}

#[test]
fn entry_param_sizes_are_the_sizes_of_the_entrys_declared_parameters() {
    // What a loader compares with the parameters the driver reports for a
    // cubin: it must be what the PTX declares, for every kernel, checked
    // or not.
    let mut compared = 0;
    for (file, m) in inputs() {
        for (_, k) in m.kernels() {
            let stencil = Stencil::new(&m, &k.name).expect("stencil");
            for checked in [false, true] {
                let options = CompileOptions { checked, ..CompileOptions::default() };
                let Ok(a) = compile(&stencil, CodeTarget::Ptx { sm: 90 }, Strategy::Table, options, None) else {
                    continue;
                };
                let ptx = String::from_utf8(a.code.clone()).expect("UTF-8");
                let head = format!(".visible .entry {}(", k.name);
                let start = ptx.find(&head).expect("the entry") + head.len();
                let end = start + ptx[start..].find(')').expect("the parameter list's end");
                let declared: Vec<usize> = ptx[start..end]
                    .split(',')
                    .map(|p| match p.split_whitespace().nth(1) {
                        Some(".u32" | ".f32") => 4,
                        Some(".u64" | ".f64") => 8,
                        Some(".align") => 24,
                        other => panic!("{file} @{}: unexpected parameter {p:?} ({other:?})", k.name),
                    })
                    .collect();
                let params = a.param_types().expect("ABI");
                let sizes = relok_compiler::ptx::entry_param_sizes(&params, checked).expect("sizes");
                assert_eq!(sizes, declared, "{file} @{} checked={checked}", k.name);
                compared += 1;
            }
        }
    }
    assert!(compared > 100, "{compared} entries compared");
}

/// Checked mode proves an access by an earlier one of the same element and
/// size in its block or an enclosing one (a refused access ends the
/// thread): only that first one is checked. One in a nested block proves
/// nothing after the block.
#[test]
fn a_checked_access_proves_the_same_access_after_it_in_its_block() {
    let saxpy = std::fs::read_to_string(repo().join("examples/saxpy.rk")).expect("read");
    let ptx = ptx_of(&saxpy, "saxpy", true);
    // x[i] once; y[i] loaded, then stored: one check.
    assert_eq!(ptx.matches("setp.ge.and.u32 ").count(), 2, "{ptx}");
    let nested = "kernel @k(v0: u32, v1: bool, v2: ptr<global, u32>) {
    if v1 {
        v3: u32 = load v2[v0]
        v4: u32 = add v3, v3
        if v1 {
            store v2[v0], v4
        }
    }
    v5: u32 = load v2[v0]
    store v2[v0], v5
    return
}
";
    let ptx = ptx_of(nested, "k", true);
    // The store inside is proven by the load before it; the load after the
    // `if` is not (the one inside may not have run); the last store is.
    assert_eq!(ptx.matches("setp.ge.and.u32 ").count(), 2, "{ptx}");
    // Another index or another size is checked apart.
    let other = "kernel @k(v0: u32, v1: u32, v2: ptr<global, u32>) {
    v3: u32 = load v2[v0]
    store v2[v1], v3
    return
}
";
    assert_eq!(ptx_of(other, "k", true).matches("setp.ge.and.u32 ").count(), 2);
}

/// A kernel's guard `lt i, len` (or a failed `ge i, len` that never falls
/// through) on a length parameter `len(v0)` proves element `i` of `v0` in
/// bounds: checked mode does not check it again. Without the `len(…)`, or
/// without a guard, it does.
#[test]
fn a_guard_on_a_length_parameter_is_the_accesses_only_check() {
    let source = file_test("run_len_params.rk");
    let element_checks = |ptx: &str| ptx.matches("setp.ge.and.u32").count();
    let guarded = ptx_of(&source, "copy_guarded", true);
    assert_eq!(element_checks(&guarded), 0, "{guarded}");
    let unguarded = ptx_of(&source, "unguarded", true);
    assert_eq!(element_checks(&unguarded), 2, "the load and the store:\n{unguarded}");
    let no_lens = source.replace(" len(v0)", "").replace(" len(v2)", "");
    let plain = ptx_of(&no_lens, "copy_guarded", true);
    assert_eq!(element_checks(&plain), 2, "the load and the store:\n{plain}");
}

#[test]
fn a_kernels_block_shape_makes_block_dim_a_constant_without_a_reqntid() {
    // No `.reqntid`: it cost registers when linked (the writer's comment).
    let src = "kernel @k(v0: ptr<global, u32>) block(32, 2, 1) {\n    v1: u32 = block_dim.y\n    store v0[v1], v1\n    return\n}\n";
    for checked in [false, true] {
        let ptx = ptx_of(src, "k", checked);
        assert!(!ptx.contains(".reqntid"), "{ptx}");
        // `block_dim.y` is the constant 2, not %ntid.y.
        assert!(!ptx.contains("%ntid"), "{ptx}");
    }
    let any = ptx_of(&src.replace(" block(32, 2, 1)", ""), "k", false);
    assert!(!any.contains(".reqntid") && any.contains("%ntid.y"), "{any}");
}

#[test]
fn checked_mode_counts_only_the_loops_not_proven_to_end_soon() {
    // reduce.rk's halving loop (`stride >>= 1` until 0) and scan.rk's
    // doubling one (`offset <<= 1` from 1 while below `block_dim.x`) end
    // within 33 iterations: no budget count. A loop up to a parameter is
    // counted.
    let example = |name: &str| std::fs::read_to_string(repo().join("examples").join(name)).expect("read");
    for (file, kernel) in [("reduce.rk", "reduce"), ("scan.rk", "scan")] {
        let ptx = ptx_of(&example(file), kernel, true);
        assert!(!ptx.contains("add.u32 %lc, %lc, 1;"), "{ptx}");
    }
    let up_to_n = "kernel @k(v0: ptr<global, u32>, v1: u32) {\n    local %i: u32\n    v2: u32 = const 0\n    v3: u32 = const 1\n    set %i, v2\n    loop {\n        v4: u32 = get %i\n        v5: bool = ge v4, v1\n        if v5 {\n            break\n        }\n        store v0[v4], v4\n        v6: u32 = add v4, v3\n        set %i, v6\n    }\n    return\n}\n";
    let counted = ptx_of(up_to_n, "k", true);
    assert_eq!(counted.matches("add.u32 %lc, %lc, 1;").count(), 1, "{counted}");
}

/// A storage type (`u8 i8 u16 i16`) is loaded into a 32-bit register by its
/// own width and signedness (PTX zero- or sign-extends), and stored from one
/// by its width (the low bits): no separate masking or extension.
#[test]
fn storage_types_load_extended_and_store_their_low_bits() {
    let file = file_test("run_storage_types.rk");
    let bytes = ptx_of(&file, "bytes", false);
    assert!(bytes.contains("ld.global.u8 %r") && bytes.contains("st.global.u8 ["), "{bytes}");
    let signed = ptx_of(&file, "signed_halves", false);
    assert!(signed.contains("ld.global.s16 %r") && signed.contains("st.global.s16 ["), "{signed}");
    let shared = ptx_of(&file, "shared_bytes", false);
    assert!(shared.contains("st.shared.u8 [") && shared.contains("ld.shared.u8 %r"), "{shared}");
    for ptx in [&bytes, &signed, &shared] {
        assert!(
            !ptx.contains("cvt.") || !ptx.contains(".u8.") && !ptx.contains(".s16."),
            "no separate extension:\n{ptx}"
        );
    }
    // Checked mode checks a u8 load by its one byte.
    let checked = ptx_of(&file, "oob_byte", true);
    assert!(checked.contains("ld.global.u8 %r"), "{checked}");
}

#[test]
fn a_functions_throws_branch_to_one_tail_per_throw_that_reads_the_ids_itself() {
    let src = "import fn @relok_throw(v0: word)
import fn @relok_throw_with(v0: word, v1: u64, v2: u64)

kernel @k(v0: u32, v1: ptr<global, u32>, v2: ptr<global, u32>) {
    v3: u32 = thread_id.x
    v4: u64 = convert v3
    v5: u64 = convert v0
    v6: bool = ge v3, v0
    if v6 {
        v7: word = ref \"x: {0} past {1}\"
        call @relok_throw_with(v7, v4, v5)
    }
    v8: u32 = load v1[v3]
    v9: bool = ge v8, v0
    if v9 {
        v10: word = ref \"y: {0} past {1}\"
        v11: u64 = convert v8
        call @relok_throw_with(v10, v11, v5)
    }
    v12: u32 = const 7
    v13: bool = eq v8, v12
    if v13 {
        v14: word = ref \"seven\"
        call @relok_throw(v14)
    }
    store v2[v8], v3
    return
}
";
    for checked in [false, true] {
        let ptx = ptx_of(src, "k", checked);
        // One tail per throw, after the body; every site branches there.
        assert_eq!(ptx.matches("$tail_relok_throw_with:").count(), 1, "{ptx}");
        assert_eq!(ptx.matches("$tail_relok_throw:").count(), 1, "{ptx}");
        assert_eq!(ptx.matches("bra.uni $tail_relok_throw_with;").count(), 2, "{ptx}");
        assert_eq!(ptx.matches("bra.uni $tail_relok_throw;").count(), 1, "{ptx}");
        assert!(!ptx.contains(".func") && !ptx.contains("call"), "no function is called:\n{ptx}");
        // The body (to its `ret`) reads no id the kernel does not use:
        // the tails, after it, do.
        let body = ptx.split_once("\tret;").expect("a ret").0;
        assert!(!body.contains("%ctaid") && !body.contains("%tid.y"), "{body}");
        let with = ptx.split_once("\n$tail_relok_throw_with:").expect("a tail").1;
        let (with, plain) = with.split_once("\n$tail_relok_throw:").expect("both tails, in call order");
        for id in ["%ctaid.x", "%ctaid.y", "%ctaid.z", "%tid.x", "%tid.y", "%tid.z"] {
            assert!(with.contains(id) && plain.contains(id), "the tails record {id}:\n{ptx}");
        }
        // `@relok_throw_with`'s tail writes its two values and moves the
        // flag on to 2; `@relok_throw`'s writes neither. Both end the thread.
        let at = relok_compiler::state::EXCEPTION_LAYOUT.values.offset;
        let (first, second) = (format!("+{at}], %trd"), format!("+{}], %trd", at + 8));
        assert!(with.contains(&first) && with.contains(&second) && with.contains("atom.global.add.u64"), "{with}");
        assert!(!plain.contains(&first) && !plain.contains(&second) && !plain.contains("atom.global.add"), "{plain}");
        for tail in [with, plain] {
            assert!(tail.trim_end().trim_end_matches('}').trim_end().ends_with("exit;"), "{tail}");
        }
        if let Some(ptxas) = ptxas() {
            let dir = std::env::temp_dir().join(format!("relok-ptx-tails-{}-{checked}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("mkdir");
            let assembled = assemble(&ptxas, &dir, "k", &ptx);
            let _ = std::fs::remove_dir_all(&dir);
            assert!(assembled.is_ok(), "{assembled:?}\n{ptx}");
        }
    }
    // A function of the name that is not the library's is inlined as any
    // other: no tail.
    let own = src.replace("import fn @relok_throw(v0: word)\n", "fn @relok_throw(v0: word) {\n    exit\n}\n");
    let ptx = ptx_of(&own, "k", false);
    assert!(!ptx.contains("$tail_relok_throw:") && ptx.contains("$tail_relok_throw_with:"), "{ptx}");
    // Unoptimised, a throw is a call of the library's function.
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(src).expect("parses")).expect("verifies");
    let stencil = Stencil::new(&m, "k").expect("stencil");
    let options = CompileOptions { optimize: false, ..CompileOptions::default() };
    let a = compile(&stencil, CodeTarget::Ptx { sm: 90 }, Strategy::Table, options, None).expect("compiles");
    let plain = String::from_utf8(a.code).expect("UTF-8");
    assert!(plain.contains("call.uni f_relok_throw_with") && !plain.contains("$tail_"), "{plain}");
}
