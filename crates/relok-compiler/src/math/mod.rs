//! relok's math library: the math functions that are not exact
//! (`exp`, `sin`, `pow`, … — every [`MathFn`] but those
//! [`MathFn::is_exact`] says), written in the IR itself.
//!
//! Shape:
//! - `algo.rs`: each function's algorithm on `f64`, once, over the
//!   primitive operations of `cx.rs`'s `Cx`: `add sub mul div rem
//!   sqrt abs neg trunc`, compares, selects, `bitcast`, `convert` and
//!   integer arithmetic — no `fma`, nothing a device computes natively, so
//!   every device gets the same bits (`f64` on wgpu through the exact
//!   emulation) — generic over the precision (`algo::Prec`).
//! - [`library`]: the library module, built once: `fn
//!   @relok_math_<name>_f64` per function (the algorithm emitted as IR),
//!   then `fn @relok_math_<name>_f32`: the same algorithm in `f32`
//!   arithmetic (its own constants and series lengths, `algo::F32`), but
//!   for `pow`, which widens its operands to `f64`, calls the `f64`
//!   function and rounds the result once ([`f32_through_f64`]).
//! - [`link_math`]: what compiling a kernel does first (in
//!   [`crate::stencil::Stencil::new`]): every such `Op::Math` becomes a
//!   call of the library function (an `import fn`, then [`crate::link::link`]).
//!   A module without one is returned unchanged.
//! - [`eval_f64`], [`eval_f32`]: the same algorithms evaluated in Rust with
//!   the IR's semantics — what every device computes, bit for bit (the
//!   tests check the cpu device against them, and measure their accuracy).

pub mod accuracy;
mod algo;
mod cx;

use crate::link::{LinkError, link};
use algo::{F32, F64, Prec};
use cx::{Cx, Eval32Cx, EvalCx, IrCx};
use relok_ir::builder::ModuleBuilder;
use relok_ir::{FuncKind, Function, MathFn, Module, Op, Scalar, StmtKind, Type, ValueData};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// The functions the library provides, in library order.
pub const LIBRARY: &[MathFn] = &[
    MathFn::Exp,
    MathFn::Exp2,
    MathFn::Log,
    MathFn::Log2,
    MathFn::Log10,
    MathFn::Sin,
    MathFn::Cos,
    MathFn::Tan,
    MathFn::Sinh,
    MathFn::Cosh,
    MathFn::Tanh,
    MathFn::Asin,
    MathFn::Acos,
    MathFn::Atan,
    MathFn::Atan2,
    MathFn::Pow,
    MathFn::Hypot,
    MathFn::Erf,
];

/// The library function's name: `relok_math_exp_f32`.
pub fn function_name(f: MathFn, ty: Scalar) -> String {
    format!("relok_math_{}_{ty}", f.name())
}

/// `f` of `a` on `f64` over `c` (a library function; the exact ones are
/// not here).
fn apply<C: Cx>(c: &mut C, p: &Prec, f: MathFn, a: &[C::F]) -> Option<C::F> {
    Some(match f {
        MathFn::Exp => algo::exp(c, p, a[0]),
        MathFn::Exp2 => algo::exp2(c, p, a[0]),
        MathFn::Log => algo::log(c, p, a[0]),
        MathFn::Log2 => algo::log2(c, p, a[0]),
        MathFn::Log10 => algo::log10(c, p, a[0]),
        MathFn::Sin => algo::sin_cos(c, p, a[0], false),
        MathFn::Cos => algo::sin_cos(c, p, a[0], true),
        MathFn::Tan => algo::tan(c, p, a[0]),
        MathFn::Sinh => algo::sinh(c, p, a[0]),
        MathFn::Cosh => algo::cosh(c, p, a[0]),
        MathFn::Tanh => algo::tanh(c, p, a[0]),
        MathFn::Asin => algo::asin(c, p, a[0]),
        MathFn::Acos => algo::acos(c, p, a[0]),
        MathFn::Atan => algo::atan(c, p, a[0]),
        MathFn::Atan2 => algo::atan2(c, p, a[0], a[1]),
        MathFn::Pow => algo::pow(c, p, a[0], a[1]),
        MathFn::Hypot => algo::hypot(c, a[0], a[1]),
        MathFn::Erf => algo::erf(c, p, a[0]),
        MathFn::Fma | MathFn::Floor | MathFn::Ceil | MathFn::Trunc | MathFn::Round | MathFn::Copysign => return None,
    })
}

/// What the library function for `f` computes on `f64` operands, bit for
/// bit as every device does; `None` for an exact function or a wrong
/// operand count.
pub fn eval_f64(f: MathFn, args: &[f64]) -> Option<f64> {
    if args.len() != f.arity() {
        return None;
    }
    apply(&mut EvalCx, &F64, f, args)
}

/// Whether the `f32` function is the `f64` one on the widened operands,
/// rounded once (`pow`: in `f32` arithmetic `exp(y log x)` would lose
/// `|y log x|` ulps), rather than its own algorithm in `f32` arithmetic.
pub fn f32_through_f64(f: MathFn) -> bool {
    f == MathFn::Pow
}

/// What the `f32` library function for `f` computes, bit for bit as every
/// device does.
pub fn eval_f32(f: MathFn, args: &[f32]) -> Option<f32> {
    if args.len() != f.arity() {
        return None;
    }
    if f32_through_f64(f) {
        let wide: Vec<f64> = args.iter().map(|&x| f64::from(x)).collect();
        return eval_f64(f, &wide).map(|r| r as f32);
    }
    apply(&mut Eval32Cx, &F32, f, args)
}

fn build_error(e: impl std::fmt::Display) -> LinkError {
    LinkError::Verify(format!("the math library does not build: {e}"))
}

fn build_library() -> Result<Module, LinkError> {
    let mut mb = ModuleBuilder::new();
    let f64t = Type::Scalar(Scalar::F64);
    let f32t = Type::Scalar(Scalar::F32);
    let mut wide = Vec::new();
    for &f in LIBRARY {
        let mut k = mb.device_fn(function_name(f, Scalar::F64), Some(f64t.clone()));
        let params: Vec<_> = (0..f.arity()).map(|_| k.param(Scalar::F64)).collect();
        let r = apply(&mut IrCx { k: &mut k, wide: true }, &F64, f, &params)
            .ok_or_else(|| build_error(format!("{f} is exact")))?;
        k.ret(Some(r));
        let func = k.finish().map_err(build_error)?;
        wide.push(mb.add(func));
    }
    for (&f, &g) in LIBRARY.iter().zip(&wide) {
        let mut k = mb.device_fn(function_name(f, Scalar::F32), Some(f32t.clone()));
        let params: Vec<_> = (0..f.arity()).map(|_| k.param(Scalar::F32)).collect();
        let r = if f32_through_f64(f) {
            let args: Vec<_> = params.iter().map(|&p| k.convert(p, Scalar::F64)).collect();
            let r = k.call(g, args);
            k.convert(r, Scalar::F32)
        } else {
            apply(&mut IrCx { k: &mut k, wide: false }, &F32, f, &params)
                .ok_or_else(|| build_error(format!("{f} is exact")))?
        };
        k.ret(Some(r));
        mb.add(k.finish().map_err(build_error)?);
    }
    let m = mb.build();
    relok_ir::verify(&m).map_err(build_error)?;
    Ok(m)
}

/// The math library module (built once).
pub fn library() -> Result<&'static Module, LinkError> {
    static LIB: OnceLock<Result<Module, LinkError>> = OnceLock::new();
    LIB.get_or_init(build_library).as_ref().map_err(Clone::clone)
}

/// `module` with every library math operation turned into a call of its
/// library function, linked in; `module` itself when it has none.
pub fn link_math(module: &Module) -> Result<Module, LinkError> {
    let mut needed = BTreeSet::new();
    for f in module.funcs.values() {
        relok_ir::walk_stmts(&f.body, &mut |s| {
            if let StmtKind::Let { op: Op::Math(m, _), result } = &s.kind
                && let (false, Some(ty)) = (m.is_exact(), f.scalar_ty(*result))
            {
                needed.insert((LIBRARY.iter().position(|x| x == m), *m, ty));
            }
        });
    }
    if needed.is_empty() {
        return Ok(module.clone());
    }
    let mut m = module.clone();
    let mut imports = Vec::new();
    for &(_, f, ty) in &needed {
        let name = function_name(f, ty);
        let id = match m.func_by_name(&name) {
            Some(id) => id,
            None => {
                let mut g = Function::new(name, FuncKind::Import);
                for _ in 0..f.arity() {
                    let v = g.values.push(ValueData { ty: Type::Scalar(ty) });
                    g.params.push(v);
                }
                g.ret = Some(Type::Scalar(ty));
                m.funcs.push(g)
            }
        };
        imports.push((f, ty, id));
    }
    for f in m.funcs.values_mut() {
        let types: Vec<Option<Scalar>> = f.values.values().map(|d| d.ty.as_scalar()).collect();
        relok_ir::walk_stmts_mut(&mut f.body, &mut |s| {
            if let StmtKind::Let { op, result } = &mut s.kind
                && let Op::Math(mf, args) = op
            {
                let ty = types.get(relok_ir::EntityRef::index(*result)).copied().flatten();
                if let Some(&(_, _, id)) = imports.iter().find(|(g, t, _)| g == mf && Some(*t) == ty) {
                    *op = Op::Call(id, std::mem::take(args));
                }
            }
        });
    }
    link(&m, library()?)
}

/// The first call of an `f64` library function from a function outside the
/// library, as the WGSL backend refuses it: on wgpu every `f64` operation
/// is an emulated helper, and a library function is hundreds of them,
/// which drivers take minutes to compile (lavapipe: 12 s for one `exp`).
/// The `f32` functions compute in `f32` and are not refused (`pow` on
/// `f32`, which calls the `f64` one, is).
pub fn check_wgsl(module: &Module) -> Result<(), crate::wgsl::Error> {
    for f in module.funcs.values().filter(|f| !f.name.starts_with("relok_math_")) {
        let mut found = None;
        relok_ir::walk_stmts(&f.body, &mut |s| {
            if let (StmtKind::Let { op: Op::Call(g, _), result }, None) = (&s.kind, &found) {
                let name = module.funcs.get(*g).map_or("", |g| g.name.as_str());
                let lib = LIBRARY.iter().find(|&&m| {
                    function_name(m, Scalar::F64) == name
                        || (f32_through_f64(m) && function_name(m, Scalar::F32) == name)
                });
                if let Some(m) = lib {
                    let ty = if name.ends_with("_f64") { "f64" } else { "f32" };
                    found = Some((
                        *result,
                        format!(
                            "{m} on {ty} (the math library computes it in f64, hundreds of emulated f64 operations on wgpu)"
                        ),
                    ));
                }
            }
        });
        if let Some((value, what)) = found {
            return Err(crate::wgsl::Error::Unsupported { function: f.name.clone(), value, what });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
