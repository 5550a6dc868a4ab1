//! The math library's accuracy measured on a device: every library function
//! on `f32` and `f64` runs over `relok_compiler::math::accuracy::sample`
//! (specials, subnormals, huge and tiny operands, the functions' edges) on
//! the device `RELOK_TEST_DEVICE` names (default `cpu`; `wgpu`, `cuda` on a
//! GPU) and on the wgpu device where one is (lavapipe in CI), and must
//!
//! - compute exactly the bits of the library's Rust mirror (`eval_f32`,
//!   `eval_f64`): the same on every device;
//! - stay within the bound docs/ir.md's accuracy table promises, against
//!   the reference (`accuracy::reference`).
//!
//! `tanh`, which kernels call in their inner loops (GELU), is measured
//! twice: over the sample like the others, and over a dense sweep of
//! 2^20 operands per type with its hard cases (`accuracy::tanh_sweep`:
//! zeros, subnormals, the reduction's switch points, the clamp, huge
//! arguments, infinities, NaN).
//!
//! The measured table is written to stderr (past libtest's capture), one
//! line per function and type, for docs/ir.md. What the device refuses
//! (the `f64` functions and `pow` on wgpu) is listed as refused, and must
//! be refused by name, not fail otherwise.

use relok_cli::args::ArgValue;
use relok_cli::launch::{Target, run_kernel};
use relok_compiler::math::accuracy::{bound, max_error, max_error_flushing_subnormals, sample, tanh_sweep};
use relok_compiler::math::{LIBRARY, eval_f32, eval_f64};
use relok_ir::{MathFn, Scalar, Strategy};
use relok_runtime::LaunchConfig;
use relok_runtime::{Device, KernelCache, Session};

/// Operands per function and type.
const N: usize = 4096;
/// Operands of `tanh`'s dense sweep per type (and its hard cases).
const SWEEP: usize = 1 << 20;
const BLOCK: u32 = 256;
/// What a WGSL driver's `f32` division (2.5 ulp allowed) may add to a
/// function that divides, in ulps (docs/ir.md's wgpu column).
const WGPU_DIVISION_SLACK: f64 = 1.0;

/// `out[i] = f(a0[i], a1[i], ...)` for `i < n`.
fn kernel_text(f: MathFn, ty: Scalar) -> String {
    let k = f.arity();
    let params: Vec<String> = (0..k).map(|j| format!("v{}: ptr<global, {ty}>", j + 1)).collect();
    let out = k + 1;
    let mut t = format!("kernel @m(v0: u32, {}, v{out}: ptr<global, {ty}>) {{\n", params.join(", "));
    let b = out + 1;
    t += &format!(
        "    v{b}: u32 = block_id.x\n    v{}: u32 = block_dim.x\n    v{}: u32 = mul v{b}, v{}\n",
        b + 1,
        b + 2,
        b + 1
    );
    t += &format!("    v{}: u32 = thread_id.x\n    v{}: u32 = add v{}, v{}\n", b + 3, b + 4, b + 2, b + 3);
    let i = b + 4;
    t += &format!("    v{}: bool = lt v{i}, v0\n    if v{} {{\n", i + 1, i + 1);
    let mut v = i + 2;
    let mut loaded = Vec::new();
    for j in 0..k {
        t += &format!("        v{v}: {ty} = load v{}[v{i}]\n", j + 1);
        loaded.push(format!("v{v}"));
        v += 1;
    }
    t += &format!(
        "        v{v}: {ty} = {f} {}\n        store v{out}[v{i}], v{v}\n    }}\n    return\n}}\n",
        loaded.join(", ")
    );
    t
}

fn bits(x: f64, ty: Scalar) -> u64 {
    if ty == Scalar::F32 { u64::from((x as f32).to_bits()) } else { x.to_bits() }
}

fn value(b: u64, ty: Scalar) -> f64 {
    if ty == Scalar::F32 { f64::from(f32::from_bits(b as u32)) } else { f64::from_bits(b) }
}

fn mirror(f: MathFn, ty: Scalar, a: &[f64]) -> f64 {
    if ty == Scalar::F32 {
        let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
        f64::from(eval_f32(f, &a32).expect("a library function"))
    } else {
        eval_f64(f, a).expect("a library function")
    }
}

#[test]
fn every_function_is_the_library_and_within_its_bound_on_the_device() {
    let spec = std::env::var("RELOK_TEST_DEVICE").unwrap_or_else(|_| "cpu".into());
    measure(&Device::open(&spec).unwrap_or_else(|e| panic!("{e}")));
}

/// The wgpu device too where it is (lavapipe in CI, where
/// `RELOK_REQUIRE_WGPU=1` makes its absence a failure).
#[test]
fn every_function_is_within_its_bound_on_wgpu() {
    if std::env::var("RELOK_TEST_DEVICE").is_ok_and(|d| d.starts_with("wgpu")) {
        return; // measured by the test above
    }
    match Device::open("wgpu") {
        Ok(device) => measure(&device),
        Err(e) if std::env::var_os("RELOK_REQUIRE_WGPU").is_some() => panic!("RELOK_REQUIRE_WGPU is set: {e}"),
        Err(e) => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("SKIPPED math accuracy on wgpu: {e}\n").as_bytes(),
            );
        }
    }
}

/// Measures every library function on `device` (see the module docs).
fn measure(device: &Device) {
    let session = Session::new();
    let target = Target { device, session: &session, cache: &KernelCache::uncached(), strategy: Strategy::Table };
    let mut table = format!("math accuracy on {} ({N} operands per row): function type max-ulp bound\n", device.name());
    let mut failures = Vec::new();
    for ty in [Scalar::F32, Scalar::F64] {
        for &f in LIBRARY {
            let args = sample(f, ty, N);
            row(&target, f, ty, &args, "", &mut table, &mut failures);
        }
    }
    for ty in [Scalar::F32, Scalar::F64] {
        let args: Vec<Vec<f64>> = tanh_sweep(ty, SWEEP).into_iter().map(|x| vec![x]).collect();
        let label = format!(" over the dense sweep ({} operands)", args.len());
        row(&target, MathFn::Tanh, ty, &args, &label, &mut table, &mut failures);
    }
    let _ = std::io::Write::write_all(&mut std::io::stderr(), table.as_bytes());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs `f` on `ty` over `args_f` on the target's device and checks the
/// results: one line of `table` (`label` after the function's name), and
/// what fails in `failures`.
fn row(
    target: &Target,
    f: MathFn,
    ty: Scalar,
    args_f: &[Vec<f64>],
    label: &str,
    table: &mut String,
    failures: &mut Vec<String>,
) {
    let n = args_f.len();
    let text = kernel_text(f, ty);
    let module = relok_ir::parse(&text).unwrap_or_else(|e| panic!("{f} {ty}: {e}\n{text}"));
    let module = relok_ir::VerifiedModule::new(module).unwrap_or_else(|e| panic!("{f} {ty}: {e}\n{text}"));
    let mut args = vec![ArgValue::Scalar(Scalar::U32, n as u64)];
    for j in 0..f.arity() {
        args.push(ArgValue::Buffer(ty, args_f.iter().map(|a| bits(a[j], ty)).collect()));
    }
    args.push(ArgValue::Buffer(ty, vec![0; n]));
    let config = LaunchConfig {
        grid: [n.div_ceil(BLOCK as usize) as u32, 1, 1],
        block: [BLOCK, 1, 1],
        ..LaunchConfig::default()
    };
    let out = match run_kernel(target, &module, "m", &config, &args) {
        Ok(out) => out,
        Err(e) if e.to_string().contains("is not supported by the WGSL backend") => {
            *table += &format!("{f} {ty}{label}: refused ({e})\n");
            return;
        }
        Err(e) => {
            failures.push(format!("{f} {ty}{label}: {e}"));
            return;
        }
    };
    let Some(ArgValue::Buffer(_, got)) = out.args.last() else { panic!("{f} {ty}: no output buffer") };
    let got: Vec<f64> = got.iter().map(|&b| value(b, ty)).collect();
    // The same bits as the library's mirror (NaNs as NaNs) — required
    // where the device's `f32` division is correctly rounded (cpu, CUDA);
    // on wgpu (WGSL allows 2.5 ulp for `/`) counted and bounded.
    let differ = args_f
        .iter()
        .zip(&got)
        .filter(|&(a, &g)| {
            let m = mirror(f, ty, a);
            bits(g, ty) != bits(m, ty) && !(g.is_nan() && m.is_nan())
        })
        .count();
    let wgpu = target.device.name().starts_with("wgpu");
    if differ > 0 && !(wgpu && ty == Scalar::F32) {
        failures.push(format!("{f} {ty}{label}: {differ} results differ from the library's bits"));
    }
    let allowed = bound(f, ty) + if wgpu { WGPU_DIVISION_SLACK } else { 0.0 };
    // WGSL lets a driver flush f32 subnormal operands and results to zero
    // (NVIDIA's Vulkan driver does): measured as such on wgpu (docs/ir.md).
    let (e, at) =
        if wgpu { max_error_flushing_subnormals(f, ty, args_f, &got) } else { max_error(f, ty, args_f, &got) };
    *table +=
        &format!("{f} {ty}{label}: {e:.2} {allowed} ({differ} differ from the library's bits; worst at {at:?})\n");
    if e.is_nan() || e > allowed {
        failures.push(format!("{f} {ty}{label}: {e} ulp > the bound {allowed} at {at:?}"));
    }
}
