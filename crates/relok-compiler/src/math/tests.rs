//! The library's algorithms (as every device computes them) against the
//! reference, per function and type, within docs/ir.md's bounds; the
//! library builds and verifies; linking rewrites only library functions.

use super::accuracy::{bound, flush_subnormal, max_error, max_error_flushing_subnormals, sample};
use super::{LIBRARY, eval_f32, eval_f64, library, link_math};
use relok_ir::{MathFn, Scalar};

fn measure(f: MathFn, ty: Scalar, n: usize) -> (f64, Vec<f64>) {
    let args = sample(f, ty, n);
    let got: Vec<f64> = args
        .iter()
        .map(|a| {
            if ty == Scalar::F32 {
                let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
                f64::from(eval_f32(f, &a32).expect("a library function"))
            } else {
                eval_f64(f, a).expect("a library function")
            }
        })
        .collect();
    max_error(f, ty, &args, &got)
}

/// A device that flushes f32 subnormals (operands read as zero, results
/// written as zero), as WGSL allows: out of bound as measured exactly, in
/// bound as measured for such a device; a wrong normal result still counts.
#[test]
fn a_device_flushing_subnormals_is_measured_within_the_bound_and_nothing_else_is_forgiven() {
    let ty = Scalar::F32;
    for &f in LIBRARY {
        if matches!(f, MathFn::Pow) {
            continue; // refused on wgpu
        }
        let args = sample(f, ty, 4096);
        let got: Vec<f64> = args
            .iter()
            .map(|a| {
                let a32: Vec<f32> = a.iter().map(|&x| flush_subnormal(x, ty) as f32).collect();
                flush_subnormal(f64::from(eval_f32(f, &a32).expect("a library function")), ty)
            })
            .collect();
        let (e, at) = max_error_flushing_subnormals(f, ty, &args, &got);
        assert!(e <= bound(f, ty), "{f}: {e} ulp at {at:?}");
        if f == MathFn::Exp {
            assert!(max_error(f, ty, &args, &got).0 > 1e3, "exp's flushed subnormal results count exactly");
            let mut wrong = got.clone();
            let i = got.iter().position(|&g| (1.0..1e30).contains(&g)).expect("a normal result");
            wrong[i] = f64::from(f32::from_bits((got[i] as f32).to_bits() + 4));
            assert!(
                max_error_flushing_subnormals(f, ty, &args, &wrong).0 >= 3.0,
                "a wrong normal result is not forgiven"
            );
        }
    }
}

#[test]
fn every_function_is_within_its_bound() {
    let mut report = String::new();
    let mut bad = Vec::new();
    for &f in LIBRARY {
        for ty in [Scalar::F32, Scalar::F64] {
            let (e, at) = measure(f, ty, 20_000);
            report.push_str(&format!("{f} {ty}: {e:.3} ulp at {at:?}\n"));
            if e.is_nan() || e > bound(f, ty) {
                bad.push(format!("{f} {ty}: {e} ulp > {} at {at:?}", bound(f, ty)));
            }
        }
    }
    // The measured table (docs/ir.md), on stderr past libtest's capture.
    if std::env::var_os("RELOK_MATH_REPORT").is_some() {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), report.as_bytes());
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_library_builds_and_links_only_what_is_used() {
    let lib = library().expect("the math library builds");
    assert_eq!(lib.funcs.len(), 2 * LIBRARY.len());
    let m = relok_ir::parse(
        "kernel @k(v0: f32, v1: ptr<global, f32>) {\n    v2: f32 = exp v0\n    v3: f32 = floor v2\n    store v1, v3\n    return\n}\n",
    )
    .expect("parses");
    let linked = link_math(&m).expect("links");
    relok_ir::verify(&linked).expect("verifies");
    let names: Vec<&str> = linked.funcs.values().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["k", "relok_math_exp_f32"]);
    let text = relok_ir::print(&linked);
    assert!(text.contains("call @relok_math_exp_f32(v0)") && text.contains("floor v2"), "{text}");
    // Without a library function, the module is unchanged.
    let plain = relok_ir::parse(
        "kernel @k(v0: f32, v1: ptr<global, f32>) {\n    v2: f32 = round v0\n    store v1, v2\n    return\n}\n",
    )
    .expect("parses");
    assert_eq!(link_math(&plain).expect("links"), plain);
}

#[test]
fn special_values() {
    let f = |g, a: &[f64]| eval_f64(g, a).expect("library");
    assert_eq!(f(MathFn::Exp, &[0.0]), 1.0);
    assert_eq!(f(MathFn::Exp2, &[10.0]), 1024.0);
    assert_eq!(f(MathFn::Exp2, &[-1074.0]), f64::from_bits(1));
    assert_eq!(f(MathFn::Log2, &[0.125]), -3.0);
    assert_eq!(f(MathFn::Log, &[1.0]), 0.0);
    assert_eq!(f(MathFn::Log, &[0.0]), f64::NEG_INFINITY);
    assert!(f(MathFn::Log, &[-1.0]).is_nan());
    assert_eq!(f(MathFn::Sin, &[-0.0]).to_bits(), (-0.0f64).to_bits());
    assert_eq!(f(MathFn::Tanh, &[f64::INFINITY]), 1.0);
    assert_eq!(f(MathFn::Cos, &[-0.0]), 1.0);
    assert_eq!(eval_f32(MathFn::Cos, &[0.0]), Some(1.0));
    assert_eq!(eval_f32(MathFn::Exp, &[f32::NEG_INFINITY]), Some(0.0));
    assert_eq!(eval_f32(MathFn::Exp, &[-104.0]), Some(0.0));
    assert_eq!(f(MathFn::Atan2, &[0.0, -0.0]), std::f64::consts::PI);
    assert_eq!(f(MathFn::Atan2, &[-0.0, 1.0]).to_bits(), (-0.0f64).to_bits());
    assert_eq!(f(MathFn::Pow, &[f64::NAN, 0.0]), 1.0);
    assert_eq!(f(MathFn::Pow, &[-2.0, 3.0]), -8.0);
    assert!(f(MathFn::Pow, &[-2.0, 0.5]).is_nan());
    assert_eq!(f(MathFn::Pow, &[-0.0, -3.0]), f64::NEG_INFINITY);
    assert_eq!(f(MathFn::Hypot, &[f64::INFINITY, f64::NAN]), f64::INFINITY);
    assert_eq!(f(MathFn::Erf, &[f64::NEG_INFINITY]), -1.0);
    assert!(eval_f32(MathFn::Exp, &[89.0]).expect("library").is_infinite());
    assert_eq!(eval_f32(MathFn::Exp2, &[-149.0]), Some(f32::from_bits(1)));
    assert_eq!(eval_f32(MathFn::Log2, &[0.125]), Some(-3.0));
    assert_eq!(eval_f32(MathFn::Sin, &[-0.0]).map(f32::to_bits), Some(0x8000_0000));
    assert_eq!(eval_f32(MathFn::Pow, &[-2.0, 3.0]), Some(-8.0));
    // Huge trigonometric arguments stay in range (outside the bound).
    let s = f(MathFn::Sin, &[1e300]);
    assert!((-1.0..=1.0).contains(&s), "{s}");
}
