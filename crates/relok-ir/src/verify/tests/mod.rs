//! The verifier's tests, by what they test: `cases` (one broken module per
//! rule), `rules` (rules in combination, and those a single case cannot
//! show), `report` (what the errors and `ModuleInfo` say) and `fuzz` (no
//! input panics). The helpers that build modules are here.

mod cases;
mod fuzz;
mod report;
mod rules;

use super::*;
use crate::builder::ModuleBuilder;
use crate::ir::{
    AtomicOp, Axis, BinaryOp, CmpOp, ConstDecl, ConstId, ConstInit, FuncKind, Function, Op, Span, Stmt, StmtKind,
    UnaryOp, Value, ValueData, Var, VarDecl, VarKind,
};
use crate::types::{AddrSpace, LayoutError, Scalar, Type};
use crate::typing::TypeError;

use Scalar::{Bool, F32, I32, U32};
use VerifyErrorKind as K;

// ---- helpers -------------------------------------------------------------

fn v(i: u32) -> Value {
    Value::from_u32(i)
}
fn t(s: Scalar) -> Type {
    Type::Scalar(s)
}
fn gptr(s: Scalar) -> Type {
    Type::ptr(AddrSpace::Global, t(s))
}
fn st(kind: StmtKind) -> Stmt {
    Stmt::new(kind)
}
fn let_(r: u32, op: Op) -> Stmt {
    st(StmtKind::Let { result: v(r), op })
}
fn konst(r: u32, bits: u64) -> Stmt {
    let_(r, Op::Const(bits))
}
fn ret(x: Option<u32>) -> Stmt {
    st(StmtKind::Return(x.map(v)))
}

/// A function whose values have types `tys`, the first `nparams` of them
/// parameters.
fn raw(name: &str, kind: FuncKind, nparams: u32, tys: &[Type], body: Vec<Stmt>) -> Function {
    let mut f = Function::new(name, kind);
    for ty in tys {
        f.values.push(ValueData { ty: ty.clone() });
    }
    f.params = (0..nparams).map(v).collect();
    f.body = body;
    f
}
fn kernel(tys: &[Type], nparams: u32, body: Vec<Stmt>) -> Function {
    raw("k", FuncKind::Kernel, nparams, tys, body)
}
fn device(name: &str, ret: Option<Type>, nparams: u32, tys: &[Type], body: Vec<Stmt>) -> Function {
    let mut f = raw(name, FuncKind::Device, nparams, tys, body);
    f.ret = ret;
    f
}
fn var(f: &mut Function, name: &str, kind: VarKind, ty: Type) -> Var {
    f.vars.push(VarDecl { name: name.into(), kind, ty, span: Span::default() })
}
fn module(funcs: Vec<Function>) -> Module {
    let mut m = Module::new();
    for f in funcs {
        m.funcs.push(f);
    }
    m
}
fn errors(m: &Module) -> Vec<VerifyError> {
    match verify(m) {
        Ok(_) => Vec::new(),
        Err(e) => e.errors,
    }
}
fn kinds(m: &Module) -> Vec<K> {
    errors(m).into_iter().map(|e| e.kind).collect()
}

/// A module parsed from text (which must parse).
fn text(src: &str) -> Module {
    match crate::text::parse(src) {
        Ok(m) => m,
        Err(e) => panic!("{e}\n{src}"),
    }
}

// ---- valid modules and ModuleInfo --------------------------------------------

fn sample() -> Module {
    let mut mb = ModuleBuilder::new();
    let table = mb.constant(
        "table",
        Type::array(t(F32), 3),
        ConstInit::Array(vec![
            ConstInit::Scalar(0),
            ConstInit::Scalar(1.0f32.to_bits().into()),
            ConstInit::Scalar(2.0f32.to_bits().into()),
        ]),
    );
    // fn @sync_twice() { barrier; barrier }
    let mut g = mb.device_fn("sync_twice", None);
    g.barrier();
    g.barrier();
    let g = g.finish().unwrap();
    let g = mb.add(g);
    // fn @clamp(x: i32) -> i32: a loop that always returns
    let mut c = mb.device_fn("clamp", Some(t(I32)));
    let x = c.param(I32);
    c.loop_(|c| {
        let zero = c.i32(0);
        let neg = c.lt(x, zero);
        c.if_else(neg, |c| c.ret(Some(zero)), |c| c.ret(Some(x)));
    });
    let c = c.finish().unwrap();
    let clamp = mb.add(c);
    // fn @leaf(x: i32) -> i32 { return clamp(x) }
    let mut l = mb.device_fn("leaf", Some(t(I32)));
    let x = l.param(I32);
    let y = l.call(clamp, vec![x]);
    l.ret(Some(y));
    let l = l.finish().unwrap();
    let leaf = mb.add(l);
    // kernel @k(n: u32, out: ptr<global, f32>)
    let mut k = mb.kernel("k");
    let n = k.param(U32);
    let out = k.param(gptr(F32));
    let tile = k.shared("tile", Type::array(t(F32), 64));
    let i_var = k.local("i", U32);
    let acc = k.local("acc", F32);
    let tid = k.builtin(crate::ir::Builtin::ThreadId(Axis::X));
    let base = k.addr(tile);
    let zero = k.f32(0.0);
    k.store(base, Some(tid), zero);
    k.call_void(g, vec![]);
    k.set(acc, zero);
    let start = k.u32(0);
    k.for_range(i_var, start, n, |k, i| {
        let tab = k.const_addr(table);
        let three = k.u32(3);
        let j = k.rem(i, three);
        let x = k.load(tab, Some(j));
        let a = k.get(acc);
        let s = k.add(a, x);
        k.set(acc, s);
    });
    let a = k.get(acc);
    let gid = k.global_id(Axis::X);
    let ok = k.lt(gid, n);
    k.if_(ok, |k| k.store(out, Some(gid), a));
    let m1 = k.i32(-1);
    let _ = k.call(leaf, vec![m1]);
    let k = k.finish().unwrap();
    mb.add(k);
    // kernel @plain(): no barrier anywhere
    let mut p = mb.kernel("plain");
    p.ret(None);
    let p = p.finish().unwrap();
    mb.add(p);
    mb.build()
}
