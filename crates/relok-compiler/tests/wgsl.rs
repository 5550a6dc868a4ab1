//! The WGSL backend over every example and every `test run` / `test
//! roundtrip` file test under table and bake: what it writes is valid WGSL
//! (naga parses and validates it) and byte-stable; what it refuses, it
//! refuses by name; `patch` is refused.

use relok_compiler::CompileError;
use relok_compiler::artifact::{CodeTarget, CompileOptions, compile};
use relok_compiler::stencil::Stencil;
use relok_ir::Strategy;

mod common;
use common::{fake_word, inputs, repo};

/// Parses and validates `wgsl` as naga does, then, for every compute
/// entry, does what wgpu does on Vulkan when it makes a pipeline: sets the
/// block-size overrides (which constant-evaluates every expression whose
/// operands became constants — where WGSL's overflow rules bite), then
/// validates again and writes SPIR-V.
fn validate(wgsl: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
    let flags = naga::valid::ValidationFlags::all();
    let info = naga::valid::Validator::new(flags, naga::valid::Capabilities::empty())
        .validate(&module)
        .map_err(|e| format!("{e:?}"))?;
    let constants: naga::back::PipelineConstants =
        [("relok_block_x", 64.0), ("relok_block_y", 2.0), ("relok_block_z", 1.0)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
    for ep in &module.entry_points {
        let (m, i) =
            naga::back::pipeline_constants::process_overrides(&module, &info, Some((ep.stage, &ep.name)), &constants)
                .map_err(|e| format!("pipeline constants of @{}: {e:?}", ep.name))?;
        let options = naga::back::spv::Options::default();
        let pipeline = naga::back::spv::PipelineOptions { shader_stage: ep.stage, entry_point: ep.name.clone() };
        naga::back::spv::write_vec(&m, &i, &options, Some(&pipeline))
            .map_err(|e| format!("SPIR-V of @{}: {e:?}", ep.name))?;
    }
    Ok(())
}

#[test]
fn written_wgsl_validates_and_refusals_name_the_operation() {
    let (mut valid, mut refused) = (Vec::new(), Vec::new());
    let mut invalid = Vec::new();
    for (file, m) in inputs() {
        for (_, k) in m.kernels() {
            let stencil = Stencil::new(&m, &k.name).expect("stencil");
            for s in [Strategy::Table, Strategy::Bake] {
                let words: Option<relok_compiler::lower::WordResolver<'_>> =
                    if s == Strategy::Bake { Some(&fake_word) } else { None };
                let name = format!("{file} @{} {s}", k.name);
                match compile(&stencil, CodeTarget::Wgsl, s, CompileOptions::default(), words) {
                    Ok(a) => {
                        let text = String::from_utf8(a.code.clone()).expect("UTF-8");
                        let again =
                            compile(&stencil, CodeTarget::Wgsl, s, CompileOptions::default(), words).expect("again");
                        assert_eq!(a.code, again.code, "{name}: not byte-stable");
                        match validate(&text) {
                            Ok(()) => valid.push(name),
                            Err(e) => invalid.push(format!("{name}:\n{e}\n{text}")),
                        }
                    }
                    Err(CompileError::Wgsl(e)) => {
                        assert!(e.to_string().contains("is not supported by the WGSL backend"), "{name}: {e}");
                        refused.push(format!("{name}: {e}"));
                    }
                    // Over a memory limit every target enforces.
                    Err(CompileError::MemoryLimit(e)) => refused.push(format!("{name}: {e}")),
                    Err(e) => panic!("{name}: {e}"),
                }
            }
        }
    }
    assert!(invalid.is_empty(), "{} invalid WGSL modules; the first:\n{}", invalid.len(), invalid[0]);
    // Every kernel without a 64-bit atomic.xchg/min/max or a pointer
    // without a static base is written (f64 included, emulated on its
    // bits): every example (throw and counter through the runtime
    // library's 64-bit compare-and-swap and add) and the file tests.
    let written: &[(&str, &[&str])] = &[
        ("boxed.rk", &["unbox"]),
        ("counter.rk", &["count"]),
        ("histogram.rk", &["histogram"]),
        ("lookup.rk", &["lookup"]),
        ("matmul.rk", &["matmul"]),
        ("gelu.rk", &["gelu"]),
        ("grey.rk", &["grey"]),
        ("tokens.rk", &["tokens"]),
        ("nbody.rk", &["nbody"]),
        ("reduce.rk", &["reduce"]),
        ("roundtrip_example_histogram.rk", &["histogram"]),
        ("roundtrip_example_matmul.rk", &["matmul"]),
        ("roundtrip_example_reduce.rk", &["reduce"]),
        ("roundtrip_example_saxpy.rk", &["saxpy"]),
        ("roundtrip_example_scan.rk", &["scan"]),
        ("run_aggregates.rk", &["local_array", "local_struct", "nested", "shared_struct"]),
        ("run_atomics_global.rk", &["atom_add", "atom_minmax_i32", "atom_minmax_u32", "cas_claim"]),
        ("run_atomics_float.rk", &["fatom_global", "fatom_shared"]),
        ("run_atomics_shared.rk", &["shared_count", "shared_ops"]),
        ("run_barrier_shared.rk", &["reverse", "rotate_twice"]),
        ("run_bitcast.rk", &["b32", "b64", "bits_i32", "word_from", "word_trip"]),
        ("run_bool_select.rk", &["bools", "sel", "sel_f64"]),
        ("run_builtins_3d.rk", &["dims", "ids", "linear"]),
        ("run_calls.rk", &["use_clamp", "use_nested", "use_void"]),
        ("run_compare.rk", &["cmp_f32", "cmp_f64", "cmp_i32", "cmp_i64", "cmp_u32", "cmp_u64"]),
        ("run_const_data.rk", &["read_lut", "read_pair", "read_scalar", "read_table"]),
        ("run_convert.rk", &["bool2x", "f2x", "f64x", "i2x", "i32x", "u2x", "u64f"]),
        ("run_div_rem_zero.rk", &["bin_i32"]),
        ("run_faults.rk", &["diverge", "forever", "oob_atomic", "oob_load", "oob_local", "oob_shared", "oob_store"]),
        ("run_float_arith.rk", &["fbin_f32", "fbin_f64", "fmm_f32", "fmm_f64", "isnan_f32", "isnan_f64"]),
        ("run_int_arith_i32.rk", &["bin_i32"]),
        ("run_int_arith_i64.rk", &["bin_i64"]),
        ("run_int_arith_u32.rk", &["bin_u32"]),
        ("run_int_arith_u64.rk", &["bin_u64"]),
        ("run_int_bitwise.rk", &["bw_i32", "bw_i64", "bw_u32", "bw_u64"]),
        ("run_launch_errors.rk", &["k"]),
        ("run_len_params.rk", &["copy_guarded", "unguarded"]),
        ("run_memory_limits.rk", &["fits"]),
        (
            "run_long_loops.rk",
            &[
                "count",
                "continue_loop",
                "count_checked",
                "div_loop",
                "first_at_least",
                "float_atomic",
                "masked_call",
                "masked_fmod",
                "masked_loop",
                "nested",
                "sum_odd",
                "two_loops",
            ],
        ),
        ("run_loops.rk", &["find", "nested", "sum_odd"]),
        ("run_math_exact.rk", &["ex_f32", "ex_f32_folded", "ex_f64", "ex_f64_folded", "fma_f64_folded"]),
        ("run_math_f32.rk", &["bin_f32", "bin_f32_folded", "dom_f32", "dom_f32_folded", "un_f32", "un_f32_folded"]),
        ("run_math_specials.rk", &["nan_f32", "spec_f32"]),
        ("run_memory.rk", &["copy_rev", "grid_1d", "neg_index", "offsets"]),
        (
            "run_races.rk",
            &[
                "add_barrier_load",
                "add_own_then_load",
                "add_then_load",
                "atomics_only",
                "hist_atomic",
                "hist_racy",
                "load_or_add",
                "store_or_add",
                "transpose",
                "transpose_racy",
            ],
        ),
        ("run_wgsl_regressions.rk", &["fuzz", "fuzz_5056", "zero_minus"]),
        (
            "run_wgsl_memory.rk",
            &[
                "across_barrier",
                "atomic_beside_plain",
                "bool_bytes",
                "bool_shared",
                "read_then_write",
                "rounds",
                "shared_only",
            ],
        ),
        ("run_widen_shift.rk", &["widen"]),
        ("run_fdiv_range.rk", &["fdiv"]),
        ("run_neg_loop.rk", &["mul_loop", "neg_loop", "sub_loop"]),
        ("run_fuzz_1106.rk", &["fuzz"]),
        ("run_fuzz_1163.rk", &["fuzz"]),
        ("run_fuzz_3290.rk", &["fuzz"]),
        ("run_fuzz_3564.rk", &["fuzz"]),
        ("run_fuzz_4188.rk", &["fuzz"]),
        ("run_redzones.rk", &["const_next", "local_in_callee", "local_next", "shared_next"]),
        ("run_shifts.rk", &["bin_i32"]),
        ("run_sqrt_f32.rk", &["sqrt_bits"]),
        (
            "run_storage_types.rk",
            &["aggregates", "bytes", "halves", "lut", "oob_byte", "shared_bytes", "signed_bytes", "signed_halves"],
        ),
        ("run_throw.rk", &["throw", "throw_values", "throw_with"]),
        ("run_unary.rk", &["un_f32", "un_f64", "un_i32", "un_i64", "un_u32", "un_u64"]),
        ("saxpy.rk", &["saxpy"]),
        ("scale.rk", &["scale"]),
        ("scan.rk", &["scan"]),
        ("softmax.rk", &["softmax"]),
        ("symbols.rk", &["classify"]),
        ("throw.rk", &["check"]),
        ("words.rk", &["words"]),
    ];
    for (file, kernels) in written {
        for k in *kernels {
            for s in ["table", "bake"] {
                let name = format!("{file} @{k} {s}");
                assert!(valid.contains(&name), "{name} was not written: refused {refused:#?}");
            }
        }
    }
    // What is refused is refused for one of those reasons.
    for r in &refused {
        let known = [
            "(WGSL has only 32-bit atomics)",
            "a 64-bit compare-and-swap",
            "pointer",
            "ptr<",
            "fma on f64 (no exact emulation",
            "the math library computes it in f64",
            "bytes of local memory per thread, the limit is 65536",
            "bytes of shared memory, the limit is 49152",
        ];
        assert!(known.iter().any(|k| r.contains(k)), "refused for another reason: {r}");
    }
    assert_eq!(
        valid.len(),
        2 * written.iter().map(|(_, k)| k.len()).sum::<usize>(),
        "{} valid, {} refused",
        valid.len(),
        refused.len()
    );
}

#[test]
fn patch_is_refused_with_the_reason() {
    let m = relok_ir::VerifiedModule::new(
        relok_ir::parse(&std::fs::read_to_string(repo().join("examples/reloc/symbols.rk")).expect("read"))
            .expect("parses"),
    )
    .expect("verifies");
    let s = Stencil::new(&m, "classify").expect("stencil");
    let e = compile(&s, CodeTarget::Wgsl, Strategy::Patch, CompileOptions::default(), None).expect_err("patch refused");
    assert!(e.to_string().contains("patching is impossible on wgpu"), "{e}");
}

/// Kernel text with values numbered in order: `let_` returns the name of
/// the value it defines.
struct Body {
    text: String,
    next: usize,
}

impl Body {
    fn new(params: usize) -> Body {
        Body { text: String::new(), next: params }
    }
    fn let_(&mut self, ty: &str, op: &str) -> String {
        let v = format!("v{}", self.next);
        self.next += 1;
        self.text.push_str(&format!("    {v}: {ty} = {op}\n"));
        v
    }
    fn line(&mut self, s: &str) {
        self.text.push_str(&format!("    {s}\n"));
    }
    /// Stores `v` to element `i` of buffer `p`.
    fn store(&mut self, p: &str, i: usize, v: &str) {
        let i = self.let_("u32", &format!("const {i}"));
        self.line(&format!("store {p}[{i}], {v}"));
    }
}

/// Every 64-bit operation, conversion and helper, in one kernel (and a
/// device function taking and returning 64-bit values): written under
/// table and bake, optimised or not, and valid; every helper appears.
#[test]
fn every_64_bit_operation_and_helper_validates() {
    // Parameters: scalars, then one buffer per type.
    let tys = ["bool", "i32", "u32", "f32", "i64", "u64", "f64"];
    let n = tys.len();
    let mut b = Body::new(2 * n);
    let (val, buf) = (
        |t: &str| format!("v{}", tys.iter().position(|x| *x == t).expect("type")),
        |t: &str| format!("v{}", n + tys.iter().position(|x| *x == t).expect("type")),
    );
    let mut slot = 0;
    let mut out = |b: &mut Body, t: &str, v: &str| {
        b.store(&buf(t), slot, v);
        slot += 1;
    };
    for t in ["i64", "u64"] {
        let (x, y) = (val(t), b.let_(t, "const 3"));
        for op in ["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"] {
            let r = b.let_(t, &format!("{op} {x}, {y}"));
            out(&mut b, t, &r);
        }
        for op in ["neg", "not", "abs"] {
            let r = b.let_(t, &format!("{op} {x}"));
            out(&mut b, t, &r);
        }
        for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
            let r = b.let_("bool", &format!("{op} {x}, {y}"));
            out(&mut b, "bool", &r);
        }
        let r = b.let_(t, &format!("select {}, {x}, {y}", val("bool")));
        out(&mut b, t, &r);
        // A 64-bit index, a load, atomics on a buffer.
        let p = b.let_(&format!("ptr<global, {t}>"), &format!("offset {}, {x}", buf(t)));
        let r = b.let_(t, &format!("load {p}"));
        out(&mut b, t, &r);
        let r = b.let_(t, &format!("atomic.add {}[{y}], {x}", buf(t)));
        out(&mut b, t, &r);
        let (e, n) = (b.let_(t, "const 4294967301"), b.let_(t, "const 4294967303"));
        let r = b.let_(t, &format!("atomic.cas {}[{y}], {e}, {n}", buf(t)));
        out(&mut b, t, &r);
    }
    for from in tys {
        for to in tys {
            if from != to {
                let r = b.let_(to, &format!("convert {}", val(from)));
                out(&mut b, to, &r);
            }
        }
    }
    for op in ["rem", "min", "max"] {
        let r = b.let_("f32", &format!("{op} {}, {}", val("f32"), val("f32")));
        out(&mut b, "f32", &r);
    }
    // f64 on its bits: every operation, a constant, a load, bitcasts.
    let (x, y) = (val("f64"), b.let_("f64", "const 0.1"));
    for op in ["add", "sub", "mul", "div", "rem", "min", "max"] {
        let r = b.let_("f64", &format!("{op} {x}, {y}"));
        out(&mut b, "f64", &r);
    }
    for op in ["neg", "abs", "sqrt"] {
        let r = b.let_("f64", &format!("{op} {x}"));
        out(&mut b, "f64", &r);
    }
    for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
        let r = b.let_("bool", &format!("{op} {x}, {y}"));
        out(&mut b, "bool", &r);
    }
    let r = b.let_("f64", &format!("select {}, {x}, {y}", val("bool")));
    out(&mut b, "f64", &r);
    let p = b.let_("ptr<global, f64>", &format!("offset {}, {}", buf("f64"), val("u32")));
    let r = b.let_("f64", &format!("load {p}"));
    out(&mut b, "f64", &r);
    for t in ["i64", "u64"] {
        let r = b.let_(t, &format!("bitcast {x}"));
        out(&mut b, t, &r);
        let r = b.let_("f64", &format!("bitcast {}", val(t)));
        out(&mut b, "f64", &r);
    }
    for op in ["eq", "ne", "lt", "ge"] {
        let r = b.let_("bool", &format!("{op} {}, {}", val("f32"), val("f32")));
        out(&mut b, "bool", &r);
    }
    let seed = b.let_("u64", "state.rng_seed");
    let w = b.let_("word", &format!("bitcast {seed}"));
    let r = b.let_("u64", &format!("bitcast {w}"));
    out(&mut b, "u64", &r);
    let r = b.let_("i64", &format!("call @mix({}, {})", val("i64"), val("u64")));
    out(&mut b, "i64", &r);
    let acc = b.let_("ptr<shared, u64>", "addr %acc");
    let r = b.let_("u64", &format!("atomic.add {acc}, {}", val("u64")));
    out(&mut b, "u64", &r);
    let exc = b.let_("ptr<global, u64>", "state.exception");
    let (z, one) = (b.let_("u64", "const 0"), b.let_("u64", "const 1"));
    let r = b.let_("u64", &format!("atomic.cas {exc}, {z}, {one}"));
    out(&mut b, "u64", &r);
    let params: Vec<String> = tys
        .iter()
        .enumerate()
        .map(|(i, t)| format!("v{i}: {t}"))
        .chain(tys.iter().enumerate().map(|(i, t)| format!("v{}: ptr<global, {t}>", i + n)))
        .collect();
    let src = format!(
        "fn @mix(v0: i64, v1: u64) -> i64 {{\n    v2: i64 = bitcast v1\n    v3: i64 = mul v0, v2\n    return v3\n}}\n\nkernel @all64({}) {{\n    shared %acc: u64\n{}    return\n}}\n",
        params.join(", "),
        b.text
    );
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(&src).unwrap_or_else(|e| panic!("{e}\n{src}")))
        .expect("verifies");
    relok_ir::verify(&m).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let stencil = Stencil::new(&m, "all64").expect("stencil");
    let helpers = [
        "relok_isnan",
        "relok_add64",
        "relok_sub64",
        "relok_mul32",
        "relok_mul64",
        "relok_lt_u64",
        "relok_lt_i64",
        "relok_shl64",
        "relok_shr64",
        "relok_sar64",
        "relok_udivmod64",
        "relok_sdivmod64",
        "relok_u64_to_f32",
        "relok_i64_to_f32",
        "relok_f32_to_i32",
        "relok_f32_to_u32",
        "relok_f32_to_u64",
        "relok_f32_to_i64",
        "relok_fmod32",
        "relok_isnan64",
        "relok_eq_f64",
        "relok_lt_f64",
        "relok_min_f64",
        "relok_max_f64",
        "relok_u64_to_f64",
        "relok_i64_to_f64",
        "relok_f32_to_f64",
        "relok_rsr64",
        "relok_f64_to_f32",
        "relok_pack64",
        "relok_unpack64",
        "relok_nan2_64",
        "relok_fadd64",
        "relok_fsub64",
        "relok_mul128",
        "relok_fmul64",
        "relok_fdiv64",
        "relok_fsqrt64",
        "relok_frem64",
        "relok_f64_mag",
        "relok_f64_to_i32",
        "relok_f64_to_u32",
        "relok_f64_to_i64",
        "relok_f64_to_u64",
    ];
    for s in [Strategy::Table, Strategy::Bake] {
        for optimize in [true, false] {
            let words: Option<relok_compiler::lower::WordResolver<'_>> =
                if s == Strategy::Bake { Some(&fake_word) } else { None };
            let a =
                compile(&stencil, CodeTarget::Wgsl, s, CompileOptions { optimize, ..CompileOptions::default() }, words)
                    .unwrap_or_else(|e| panic!("{s} {optimize}: {e}"));
            let text = String::from_utf8(a.code).expect("UTF-8");
            validate(&text).unwrap_or_else(|e| panic!("{s} {optimize}: {e}\n{text}"));
            for h in helpers {
                assert_eq!(text.matches(&format!("fn {h}(")).count(), 1, "{s} {optimize}: {h}");
            }
            assert_eq!(
                text.contains("fn f_mix(v0: vec2<u32>, v1: vec2<u32>) -> vec2<u32>"),
                !optimize,
                "{s} {optimize}"
            );
        }
    }
}

/// What cannot be exact is refused, by name.
#[test]
fn inexact_64_bit_atomics_are_refused_by_name() {
    let cases = [
        (
            "v2: u64 = atomic.cas v0, v1, v1",
            "a 64-bit compare-and-swap whose operands are not constants with equal high halves",
        ),
        (
            "v2: u64 = const 1\n    v3: u64 = const 4294967297\n    v4: u64 = atomic.cas v0, v2, v3",
            "a 64-bit compare-and-swap whose operands are not constants with equal high halves",
        ),
        ("v2: u64 = atomic.xchg v0, v1", "atomic.xchg on u64 (WGSL has only 32-bit atomics)"),
        ("v2: u64 = atomic.min v0, v1", "atomic.min on u64 (WGSL has only 32-bit atomics)"),
        ("v2: u64 = atomic.max v0, v1", "atomic.max on u64 (WGSL has only 32-bit atomics)"),
    ];
    for (body, what) in cases {
        let src = format!("kernel @k(v0: ptr<global, u64>, v1: u64) {{\n    {body}\n    return\n}}\n");
        let m = relok_ir::VerifiedModule::new(relok_ir::parse(&src).unwrap_or_else(|e| panic!("{e}\n{src}")))
            .expect("verifies");
        let stencil = Stencil::new(&m, "k").expect("stencil");
        let e = compile(
            &stencil,
            CodeTarget::Wgsl,
            Strategy::Table,
            CompileOptions { optimize: false, ..CompileOptions::default() },
            None,
        )
        .expect_err(what);
        assert!(e.to_string().contains(what), "{body}: {e}");
    }
}

/// The runtime library's 64-bit functions (linked into the kernel) are
/// written: `relok_rng_next` (u64 xor/add/shr/mul and `state.rng_seed`)
/// and `relok_count` (a 64-bit `atomic.add` on a heap cell).
#[test]
fn runtime_library_rng_and_counter_are_written() {
    let src = "import fn @relok_rng_next(v0: u64) -> u64\nimport fn @relok_count(v0: u64) -> u64\n\nkernel @rng(v0: ptr<global, u64>) {\n    v1: u32 = thread_id.x\n    v2: u64 = convert v1\n    v3: u64 = call @relok_rng_next(v2)\n    store v0[v1], v3\n    v4: u64 = call @relok_count(v3)\n    return\n}\n";
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(src).expect("parses")).expect("verifies");
    let stencil = Stencil::new(&m, "rng").expect("stencil");
    for s in [Strategy::Table, Strategy::Bake] {
        let words: Option<relok_compiler::lower::WordResolver<'_>> =
            if s == Strategy::Bake { Some(&fake_word) } else { None };
        let a = compile(&stencil, CodeTarget::Wgsl, s, CompileOptions::default(), words)
            .unwrap_or_else(|e| panic!("{s}: {e}"));
        let text = String::from_utf8(a.code).expect("UTF-8");
        validate(&text).unwrap_or_else(|e| panic!("{s}: {e}\n{text}"));
        assert!(
            text.contains("vec2<u32>(relok_args[0], relok_args[1])") && text.contains("relok_mul64("),
            "{s}:\n{text}"
        );
    }
}

/// Checked mode's loop budget counts IR iterations: an unrolled loop's back
/// edge adds the copies of the body it runs (16 here, a counting loop), so
/// the budget means the same as on cpu and cuda; unchecked, only the
/// device's limit (back edges) is kept.
#[test]
fn the_checked_loop_budget_counts_the_unrolled_copies() {
    let src = "kernel @spin(v0: ptr<global, u32>) {\n    local %n: u32\n    v1: u32 = const 0\n    v2: u32 = const 1\n    set %n, v1\n    loop {\n        v3: u32 = get %n\n        v4: u32 = add v3, v2\n        set %n, v4\n    }\n    v5: u32 = get %n\n    store v0, v5\n    return\n}\n";
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(src).expect("parses")).expect("verifies");
    let stencil = Stencil::new(&m, "spin").expect("stencil");
    for checked in [true, false] {
        let options = CompileOptions { checked, ..CompileOptions::default() };
        let a = compile(&stencil, CodeTarget::Wgsl, Strategy::Table, options, None).unwrap_or_else(|e| panic!("{e}"));
        let text = String::from_utf8(a.code).expect("UTF-8");
        validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let copies = text.matches("relok_steps += ").count();
        let budget = format!("relok_steps >= {}u", relok_compiler::fault::CHECKED_LOOP_BUDGET);
        if checked {
            let step = text.lines().find(|l| l.contains("relok_steps += ")).expect("a step count");
            let n: usize =
                step.trim().trim_start_matches("relok_steps += ").trim_end_matches("u;").parse().expect("a count");
            let bodies = text.matches("relok_iterations += 1u;").count();
            assert!(n > 1 && copies == bodies && text.contains(&budget), "{n} copies counted:\n{text}");
        } else {
            assert!(copies == 0 && !text.contains("relok_steps"), "{text}");
        }
    }
}

/// Operations whose operands are all constants are written as the IR's
/// result, unoptimised too: as WGSL `const` expressions they would be
/// evaluated when the shader is created, where i32 `MIN / -1`, `MIN % -1`
/// or a u32 overflow are errors, not the IR's values.
#[test]
fn constant_operations_are_written_as_their_ir_values() {
    let cases = [
        ("i32", "0x80000000", "0xffffffff", "div", "(-2147483647i - 1i)"),
        ("i32", "0x80000000", "0xffffffff", "rem", "0i"),
        ("u32", "4294967295", "1", "add", "0u"),
        ("u32", "2147483648", "1", "shl", "0u"),
        ("i32", "7", "0", "div", "0i"),
        ("u64", "18446744073709551615", "2", "mul", "vec2<u32>(4294967294u, 4294967295u)"),
    ];
    for (ty, a, b, op, want) in cases {
        let src = format!(
            "kernel @k(v0: ptr<global, {ty}>) {{\n    v1: {ty} = const {a}\n    v2: {ty} = const {b}\n    v3: {ty} = {op} v1, v2\n    store v0, v3\n    return\n}}\n"
        );
        let m = relok_ir::VerifiedModule::new(relok_ir::parse(&src).unwrap_or_else(|e| panic!("{e}\n{src}")))
            .expect("verifies");
        let stencil = Stencil::new(&m, "k").expect("stencil");
        let a = compile(
            &stencil,
            CodeTarget::Wgsl,
            Strategy::Table,
            CompileOptions { optimize: false, ..CompileOptions::default() },
            None,
        )
        .unwrap_or_else(|e| panic!("{op}: {e}"));
        let text = String::from_utf8(a.code).expect("UTF-8");
        validate(&text).unwrap_or_else(|e| panic!("{ty} {op}: {e}\n{text}"));
        assert!(
            text.contains(&format!("const v3: {} = {want};", if ty == "u64" { "vec2<u32>" } else { ty })),
            "{ty} {op}:\n{text}"
        );
    }
}

/// Thread and block ids are the kernel entry's parameters: a device
/// function that is not inlined cannot read them, and says so.
#[test]
fn ids_in_a_device_function_that_is_not_inlined_are_refused() {
    let src = "fn @tid() -> u32 {\n    v0: u32 = thread_id.x\n    return v0\n}\n\nkernel @k(v0: ptr<global, u32>) {\n    v1: u32 = call @tid()\n    store v0, v1\n    return\n}\n";
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(src).expect("parses")).expect("verifies");
    let stencil = Stencil::new(&m, "k").expect("stencil");
    let e = compile(
        &stencil,
        CodeTarget::Wgsl,
        Strategy::Table,
        CompileOptions { optimize: false, ..CompileOptions::default() },
        None,
    )
    .expect_err("refused");
    assert!(e.to_string().contains("a thread or block id in a device function (inline it)"), "{e}");
    // Inlined (the default), it is written.
    compile(&stencil, CodeTarget::Wgsl, Strategy::Table, CompileOptions::default(), None).expect("inlined");
}

/// The WGSL of kernel `kernel` of `file` (an example or a file test) under
/// `table`, checked mode as `checked` says, validated.
fn wgsl_of(file: &str, kernel: &str, checked: bool) -> String {
    let (_, m) = inputs().into_iter().find(|(f, _)| f == file).unwrap_or_else(|| panic!("{file}"));
    let stencil = Stencil::new(&m, kernel).expect("stencil");
    let options = CompileOptions { checked, ..CompileOptions::default() };
    let a = compile(&stencil, CodeTarget::Wgsl, Strategy::Table, options, None).unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(a.code).expect("UTF-8");
    validate(&text).unwrap_or_else(|e| panic!("{file} @{kernel}: {e}\n{text}"));
    text
}

/// Which memories a kernel's WGSL makes atomic (docs/wgpu.md, "Memory
/// accesses and barriers"), and what each of its barriers becomes, in
/// order (`s`: `storageBarrier()` alone, `w`: `workgroupBarrier()` alone,
/// `sw`: both): atomic words only where an atomic or a sub-word store
/// touches the memory, `storageBarrier()` only where buffer or heap
/// accesses conflict across the barrier, `workgroupBarrier()` where shared
/// ones do or nothing else is needed.
#[test]
fn words_are_atomic_only_under_atomics_and_barriers_order_what_they_must() {
    let cases: &[(&str, &str, &[&str], &[&str])] = &[
        ("run_wgsl_memory.rk", "bool_bytes", &["p0"], &[]),
        ("run_wgsl_memory.rk", "bool_shared", &["sbool_shared_0"], &["w"]),
        ("run_wgsl_memory.rk", "atomic_beside_plain", &["p1"], &[]),
        ("run_wgsl_memory.rk", "across_barrier", &[], &["s"]),
        ("run_wgsl_memory.rk", "read_then_write", &[], &["s"]),
        ("run_wgsl_memory.rk", "rounds", &[], &["s", "s"]),
        ("run_wgsl_memory.rk", "shared_only", &[], &["w"]),
        // A u8 or i16 store is one byte or halfword of a word; loads alone
        // stay plain.
        ("run_storage_types.rk", "bytes", &["p1"], &[]),
        ("run_storage_types.rk", "signed_halves", &["p2"], &[]),
        ("run_storage_types.rk", "shared_bytes", &["sshared_bytes_0"], &["w"]),
        ("saxpy.rk", "saxpy", &[], &[]),
        // The load of x before the first barrier and the store of the sum
        // after the loop may touch one buffer (parameters may alias).
        ("reduce.rk", "reduce", &[], &["sw", "w"]),
        ("scan.rk", "scan", &[], &["sw", "w", "w"]),
        ("softmax.rk", "softmax", &[], &["sw", "w", "w", "sw", "w"]),
        ("matmul.rk", "matmul", &[], &["sw", "w"]),
        ("histogram.rk", "histogram", &["p1", "shistogram_0"], &["w", "sw"]),
        ("counter.rk", "count", &["relok_heap"], &[]),
        ("lookup.rk", "lookup", &[], &[]),
        ("run_barrier_shared.rk", "rotate_twice", &[], &["sw", "sw"]),
    ];
    for &(file, kernel, atomic, fences) in cases {
        for checked in [true, false] {
            let text = wgsl_of(file, kernel, checked);
            let mut arrays: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("array<atomic<u32>") && !l.contains("relok_exception"))
                .filter_map(|l| l.split(':').next()?.split_whitespace().last())
                .collect();
            arrays.sort_unstable();
            assert_eq!(arrays, atomic, "{file} @{kernel} (checked {checked}):\n{text}");
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            let mut got = Vec::new();
            let mut i = 0;
            while i < lines.len() {
                match (lines[i], lines.get(i + 1)) {
                    ("storageBarrier();", Some(&"workgroupBarrier();")) => {
                        got.push("sw");
                        i += 1;
                    }
                    ("storageBarrier();", _) => got.push("s"),
                    ("workgroupBarrier();", _) => got.push("w"),
                    _ => {}
                }
                i += 1;
            }
            assert_eq!(got, fences, "{file} @{kernel} (checked {checked}):\n{text}");
            // No atomic built-in on a plain array: every one names an
            // atomic array or the exception record.
            for l in text.lines().filter(|l| l.contains("atomic") && l.contains("(&")) {
                for call in l.split("(&").skip(1) {
                    let var = call.split('[').next().unwrap_or_default();
                    assert!(
                        var == "relok_exception" || atomic.contains(&var),
                        "{file} @{kernel}: an atomic on {var}: {l}"
                    );
                }
            }
        }
    }
}

/// Committed WGSL of a few kernels (`tests/out/wgsl/`): any change to what
/// the backend writes shows up in review. `BLESS=1` rewrites them.
#[test]
fn expected_wgsl_is_unchanged() {
    let cases = [
        ("saxpy.rk", "saxpy"),
        ("reduce.rk", "reduce"),
        ("histogram.rk", "histogram"),
        ("counter.rk", "count"),
        ("run_sqrt_f32.rk", "sqrt_bits"),
        ("run_throw.rk", "throw_with"),
    ];
    let bless = std::env::var_os("BLESS").is_some();
    let mut changed = Vec::new();
    for (file, kernel) in cases {
        let got = wgsl_of(file, kernel, true);
        let path = repo().join(format!("tests/out/wgsl/{kernel}-table.wgsl"));
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
    assert!(changed.is_empty(), "WGSL changed (review, then run with BLESS=1): {changed:?}");
}

/// As in the PTX (`tests/ptx.rs`): a guard on a length parameter is the
/// checked WGSL's only check of the accesses it proves.
#[test]
fn a_guard_on_a_length_parameter_is_the_accesses_only_check() {
    let checks = |wgsl: &str| wgsl.matches("= relok_bounds(").count();
    assert_eq!(checks(&wgsl_of("run_len_params.rk", "copy_guarded", true)), 0);
    assert_eq!(checks(&wgsl_of("run_len_params.rk", "unguarded", true)), 2, "the load and the store");
}

/// The runtime library's throws are WGSL functions, written once and
/// called at each site (`relok_compiler::wgsl::throws`): a site is a call
/// and a `return`, not the record's writing.
#[test]
fn throws_are_written_once_and_called_at_each_site() {
    let text = wgsl_of("run_throw.rk", "throw_with", true);
    assert_eq!(text.matches("fn relok_throw_with(").count(), 1, "{text}");
    assert_eq!(text.matches("relok_throw_with(v").count(), 1, "{text}");
    assert_eq!(text.matches("atomicAdd(&relok_exception[0], 1u);").count(), 1, "{text}");
    assert!(!text.contains("fn relok_throw("), "only the throws called are written:\n{text}");
    let plain = wgsl_of("run_throw.rk", "throw", true);
    assert_eq!(plain.matches("fn relok_throw(").count(), 1, "{plain}");
    assert!(!plain.contains("atomicAdd(&relok_exception"), "{plain}");
    // Two sites of one kernel: one function, two calls, each ending the thread.
    let two = "import fn @relok_throw(v0: word)\n\nkernel @two(v0: u32) {\n    v1: u32 = const 1\n    v2: bool = eq v0, v1\n    if v2 {\n        v3: word = ref \"one\"\n        call @relok_throw(v3)\n    }\n    v4: u32 = const 2\n    v5: bool = eq v0, v4\n    if v5 {\n        v6: word = ref \"two\"\n        call @relok_throw(v6)\n    }\n    return\n}\n";
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(two).expect("parses")).expect("verifies");
    let stencil = Stencil::new(&m, "two").expect("stencil");
    let a = compile(&stencil, CodeTarget::Wgsl, Strategy::Table, CompileOptions::default(), None).expect("compiles");
    let text = String::from_utf8(a.code).expect("UTF-8");
    validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(text.matches("fn relok_throw(").count(), 1, "{text}");
    assert_eq!(text.matches("relok_throw(v").count(), 2, "{text}");
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let ended = lines.windows(2).filter(|w| w[0].starts_with("relok_throw(v") && w[1] == "return;").count();
    assert_eq!(ended, 2, "each call is followed by the thread's end:\n{text}");
}

#[test]
fn a_kernels_block_shape_is_its_fixed_workgroup_size() {
    // matmul.rk says `block(16, 16, 1)`; reduce.rk launches with any shape.
    let fixed = wgsl_of("matmul.rk", "matmul", false);
    assert!(fixed.contains("@compute @workgroup_size(16, 16, 1)"), "{fixed}");
    let any = wgsl_of("reduce.rk", "reduce", false);
    assert!(any.contains("@workgroup_size(relok_block_x, relok_block_y, relok_block_z)"), "{any}");
}
