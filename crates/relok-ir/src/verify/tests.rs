use super::*;
use crate::builder::ModuleBuilder;
use crate::ir::{
    AtomicOp, Axis, BinaryOp, CmpOp, ConstDecl, ConstId, ConstInit, FuncKind, Function, Op, Span, Stmt, StmtKind,
    UnaryOp, Value, ValueData, Var, VarDecl, VarKind,
};
use crate::types::{AddrSpace, LayoutError, Scalar, Type};
use crate::typing::TypeError;
use std::collections::HashSet;
use std::mem::discriminant;

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

/// A module with one thing wrong per rule, and a check that the error is
/// the expected one.
struct Case {
    name: &'static str,
    module: Module,
    expect: fn(&K) -> bool,
}

fn case(name: &'static str, module: Module, expect: fn(&K) -> bool) -> Case {
    Case { name, module, expect }
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();

    // ---- phase 1 ----
    out.push(case(
        "dangling value",
        module(vec![kernel(&[t(I32)], 0, vec![let_(0, Op::Unary(UnaryOp::Neg, v(7)))])]),
        |k| *k == K::DanglingValue(v(7)),
    ));
    out.push(case("dangling var", module(vec![kernel(&[t(I32)], 0, vec![let_(0, Op::Get(Var::from_u32(3)))])]), |k| {
        *k == K::DanglingVar(Var::from_u32(3))
    }));
    out.push(case(
        "dangling func",
        module(vec![kernel(&[], 0, vec![st(StmtKind::Call(FuncId::from_u32(9), vec![]))])]),
        |k| *k == K::DanglingFunc(FuncId::from_u32(9)),
    ));
    out.push(case(
        "dangling const",
        module(vec![kernel(
            &[Type::ptr(AddrSpace::Const, t(I32))],
            0,
            vec![let_(0, Op::ConstAddr(ConstId::from_u32(0)))],
        )]),
        |k| *k == K::DanglingConst(ConstId::from_u32(0)),
    ));
    out.push(case(
        "param order",
        {
            let mut f = kernel(&[t(U32), t(U32)], 2, vec![]);
            f.params = vec![v(1), v(0)];
            module(vec![f])
        },
        |k| matches!(k, K::ParamOrder { index: 0, found } if *found == v(1)),
    ));
    out.push(case(
        "redefined",
        module(vec![kernel(&[t(I32), t(I32)], 0, vec![konst(0, 1), konst(1, 2), konst(1, 3)])]),
        |k| *k == K::Redefined(v(1)),
    ));
    out.push(case(
        "out of order",
        module(vec![kernel(&[t(I32), t(I32)], 0, vec![konst(1, 1), konst(0, 2)])]),
        |k| matches!(k, K::OutOfOrder { found, expected } if *found == v(1) && *expected == v(0)),
    ));
    out.push(case("undefined", module(vec![kernel(&[t(I32), t(I32)], 0, vec![konst(0, 1)])]), |k| {
        *k == K::Undefined(v(1))
    }));
    out.push(case(
        "not dominated",
        module(vec![kernel(
            &[t(Bool), t(I32), t(I32)],
            1,
            vec![
                st(StmtKind::If { cond: v(0), then_body: vec![konst(1, 1)], else_body: vec![] }),
                let_(2, Op::Unary(UnaryOp::Neg, v(1))),
            ],
        )]),
        |k| *k == K::NotDominated(v(1)),
    ));

    // ---- phase 2 ----
    out.push(case(
        "type error",
        module(vec![kernel(&[t(I32), t(F32), t(I32)], 2, vec![let_(2, Op::Binary(BinaryOp::Add, v(0), v(1)))])]),
        |k| matches!(k, K::Type(e) if matches!(**e, TypeError::Disagree { .. })),
    ));
    out.push(case(
        "not a value type",
        module(vec![kernel(&[Type::array(t(I32), 4)], 0, vec![konst(0, 1)])]),
        |k| matches!(k, K::NotValueType(ty) if **ty == Type::array(t(I32), 4)),
    ));
    out.push(case(
        "no layout",
        {
            let mut f = kernel(&[], 0, vec![]);
            var(&mut f, "empty", VarKind::Local, Type::array(t(F32), 0));
            module(vec![f])
        },
        |k| matches!(k, K::Layout { source: LayoutError::Empty, .. }),
    ));
    out.push(case(
        "store mismatch",
        module(vec![kernel(
            &[gptr(F32), t(I32)],
            2,
            vec![st(StmtKind::Store { ptr: v(0), index: None, value: v(1) })],
        )]),
        |k| matches!(k, K::Store(e) if matches!(**e, TypeError::Disagree { .. })),
    ));
    out.push(case(
        "store to const",
        {
            let mut m = module(vec![kernel(
                &[Type::ptr(AddrSpace::Const, t(I32)), t(I32)],
                0,
                vec![
                    let_(0, Op::ConstAddr(ConstId::from_u32(0))),
                    konst(1, 5),
                    st(StmtKind::Store { ptr: v(0), index: None, value: v(1) }),
                ],
            )]);
            m.consts.push(ConstDecl {
                name: "c".into(),
                ty: t(I32),
                init: ConstInit::Scalar(1),
                span: Span::default(),
            });
            m
        },
        |k| *k == K::StoreToConst,
    ));
    out.push(case(
        "set shared",
        {
            let mut f = kernel(&[t(U32)], 1, vec![]);
            let x = var(&mut f, "x", VarKind::Shared, t(U32));
            f.body.push(st(StmtKind::Set { var: x, value: v(0) }));
            module(vec![f])
        },
        |k| matches!(k, K::SetTarget { var, shared: true, .. } if var == "x"),
    ));
    out.push(case(
        "set mismatch",
        {
            let mut f = kernel(&[t(U32)], 1, vec![]);
            let x = var(&mut f, "x", VarKind::Local, t(I32));
            f.body.push(st(StmtKind::Set { var: x, value: v(0) }));
            module(vec![f])
        },
        |k| matches!(k, K::SetMismatch { types, .. } if **types == (t(I32), t(U32))),
    ));
    out.push(case(
        "call arity",
        module(vec![
            device("g", None, 1, &[t(U32)], vec![]),
            kernel(&[], 0, vec![st(StmtKind::Call(FuncId::from_u32(0), vec![]))]),
        ]),
        |k| matches!(k, K::Call(e) if matches!(**e, TypeError::Call { .. })),
    ));
    out.push(case(
        "unused result",
        module(vec![
            device("g", Some(t(U32)), 1, &[t(U32)], vec![ret(Some(0))]),
            kernel(&[t(U32)], 1, vec![st(StmtKind::Call(FuncId::from_u32(0), vec![v(0)]))]),
        ]),
        |k| matches!(k, K::UnusedResult { callee, ret } if callee == "g" && **ret == t(U32)),
    ));
    out.push(case(
        "condition not bool",
        module(vec![kernel(&[t(U32)], 1, vec![st(StmtKind::If { cond: v(0), then_body: vec![], else_body: vec![] })])]),
        |k| matches!(k, K::CondNotBool(ty) if **ty == t(U32)),
    ));
    out.push(case("break outside loop", module(vec![kernel(&[], 0, vec![st(StmtKind::Break)])]), |k| {
        *k == K::BreakOutsideLoop
    }));
    out.push(case("continue outside loop", module(vec![kernel(&[], 0, vec![st(StmtKind::Continue)])]), |k| {
        *k == K::ContinueOutsideLoop
    }));
    out.push(case("kernel returns value", module(vec![kernel(&[t(U32)], 1, vec![ret(Some(0))])]), |k| {
        *k == K::KernelReturnsValue
    }));
    out.push(case(
        "return type",
        module(vec![device("g", Some(t(F32)), 1, &[t(U32)], vec![ret(Some(0))])]),
        |k| matches!(k, K::ReturnType { expected: Some(e), found: Some(f) } if **e == t(F32) && **f == t(U32)),
    ));
    out.push(case(
        "missing return",
        module(vec![device(
            "g",
            Some(t(U32)),
            2,
            &[t(Bool), t(U32)],
            vec![st(StmtKind::If { cond: v(0), then_body: vec![ret(Some(1))], else_body: vec![] })],
        )]),
        |k| matches!(k, K::MissingReturn(ty) if **ty == t(U32)),
    ));
    out.push(case(
        "shared in device fn",
        {
            let mut f = device("g", None, 0, &[], vec![]);
            var(&mut f, "tile", VarKind::Shared, Type::array(t(F32), 64));
            module(vec![f])
        },
        |k| matches!(k, K::SharedInDevice(name) if name == "tile"),
    ));
    out.push(case(
        "shared too large",
        {
            let mut f = kernel(&[], 0, vec![]);
            for name in ["a", "b", "c"] {
                var(&mut f, name, VarKind::Shared, Type::array(t(Scalar::F64), 1 << 28));
            }
            module(vec![f])
        },
        |k| *k == K::SharedTooLarge,
    ));
    out.push(case("kernel param", module(vec![kernel(&[Type::ptr(AddrSpace::Shared, t(F32))], 1, vec![])]), |k| {
        matches!(k, K::KernelParam(_))
    }));
    out.push(case(
        "kernel result",
        {
            let mut f = kernel(&[], 0, vec![]);
            f.ret = Some(t(U32));
            module(vec![f])
        },
        |k| matches!(k, K::KernelResult(_)),
    ));
    out.push(case(
        "bad result type",
        module(vec![device("g", Some(Type::Struct(vec![t(U32)])), 0, &[], vec![st(StmtKind::Loop(vec![]))])]),
        |k| matches!(k, K::BadResultType(_)),
    ));

    // ---- module level ----
    out.push(case(
        "bad name",
        module(vec![raw("1st-kernel", FuncKind::Kernel, 0, &[], vec![])]),
        |k| matches!(k, K::BadName { kind: NameKind::Function, name } if name == "1st-kernel"),
    ));
    out.push(case(
        "duplicate name",
        {
            let mut m = module(vec![kernel(&[], 0, vec![])]);
            m.consts.push(ConstDecl {
                name: "k".into(),
                ty: t(U32),
                init: ConstInit::Scalar(0),
                span: Span::default(),
            });
            m
        },
        |k| matches!(k, K::DuplicateName { kind: NameKind::Function, name } if name == "k"),
    ));
    out.push(case(
        "const with a pointer",
        {
            let mut m = Module::new();
            m.consts.push(ConstDecl {
                name: "c".into(),
                ty: gptr(U32),
                init: ConstInit::Scalar(0),
                span: Span::default(),
            });
            m
        },
        |k| matches!(k, K::ConstTypeNotData(_)),
    ));
    out.push(case(
        "const init shape",
        {
            let mut m = Module::new();
            let ty = Type::array(Type::Struct(vec![t(U32), t(F32)]), 2);
            let item = |n| ConstInit::Struct((0..n).map(ConstInit::Scalar).collect());
            let init = ConstInit::Array(vec![item(2), item(1)]);
            m.consts.push(ConstDecl { name: "c".into(), ty, init, span: Span::default() });
            m
        },
        |k| matches!(k, K::ConstInitShape { path, .. } if &**path == "[1]"),
    ));
    out.push(case(
        "const literal",
        {
            let mut m = Module::new();
            let ty = Type::Struct(vec![t(U32), t(Bool)]);
            let init = ConstInit::Struct(vec![ConstInit::Scalar(7), ConstInit::Scalar(2)]);
            m.consts.push(ConstDecl { name: "c".into(), ty, init, span: Span::default() });
            m
        },
        |k| matches!(k, K::ConstLiteral { path, bits: 2, ty: Bool } if &**path == ".1"),
    ));
    out.push(case(
        "recursion",
        module(vec![
            device("a", None, 0, &[], vec![st(StmtKind::Call(FuncId::from_u32(1), vec![]))]),
            device("b", None, 0, &[], vec![st(StmtKind::Call(FuncId::from_u32(0), vec![]))]),
        ]),
        |k| matches!(k, K::Recursion(names) if names == &["a", "b", "a"]),
    ));

    // ---- host objects and lowering ----
    out.push(case(
        "word literal in a source constant",
        text("const @c: {u32, [word; 2]} = {1, [ref :a, 0x5]}\n"),
        |k| matches!(k, K::ConstWordLiteral { path } if &**path == ".1[1]"),
    ));
    out.push(case(
        "ref in a non-word field",
        text("const @c: {u32, word} = {ref :a, ref :b}\n"),
        |k| matches!(k, K::ConstRefNotWord { path, ty } if &**path == ".0" && **ty == t(U32)),
    ));
    out.push(case(
        "word field under table",
        text("lowered table\n\nconst @c: {u32, word} = {1, 0x5}\n"),
        |k| matches!(k, K::ConstWordInTable { path } if &**path == ".1"),
    ));
    out.push(case(
        "ref op after lowering",
        text("lowered bake\n\nkernel @k() {\n    v0: word = ref :a\n    return\n}\n"),
        |k| *k == K::RefAfterLowering { stage: crate::ir::Strategy::Bake, path: None },
    ));
    out.push(case(
        "ref field after lowering",
        text("lowered patch\n\nconst @c: {u32, word} = {1, ref \"x\"}\n"),
        |k| matches!(k, K::RefAfterLowering { stage: crate::ir::Strategy::Patch, path: Some(p) } if &**p == ".1"),
    ));
    out.push(case("word in source code", text("kernel @k() {\n    v0: word = word 0x10\n    return\n}\n"), |k| {
        *k == K::LoweredOnly { op: "word" }
    }));
    out.push(case(
        "patch in bake code",
        text("lowered bake\n\nkernel @k() {\n    v0: word = patch a$b\n    return\n}\n"),
        |k| {
            use crate::ir::Strategy::{Bake, Patch};
            *k == K::WrongStrategy { op: "patch", needs: Patch, stage: Bake }
        },
    ));
    out.push(case(
        "empty symbol name",
        module(vec![kernel(
            &[t(Scalar::Word)],
            0,
            vec![let_(0, Op::Ref(crate::ir::HostRef::Symbol(String::new()))), ret(None)],
        )]),
        |k| matches!(k, K::BadHostName { kind: "symbol", name } if name.is_empty()),
    ));
    out.push(case(
        "ref of a constant holding words, in a constant",
        text("const @a: {word} = {ref :x}\n\nconst @b: [word; 1] = [ref @a]\n"),
        |k| matches!(k, K::RefValueNotData { path, name } if &**path == "[0]" && &**name == "a"),
    ));
    out.push(case("import with a body", module(vec![raw("imp", FuncKind::Import, 0, &[], vec![ret(None)])]), |k| {
        *k == K::ImportWithBody
    }));
    out
}

/// A module parsed from text (which must parse).
fn text(src: &str) -> Module {
    match crate::text::parse(src) {
        Ok(m) => m,
        Err(e) => panic!("{e}\n{src}"),
    }
}

/// How many variants [`VerifyErrorKind`] has; update with the enum.
const VARIANTS: usize = 44;

#[test]
fn every_rule_has_a_case_and_every_variant_is_triggered() {
    let mut seen = HashSet::new();
    for c in cases() {
        let ks = kinds(&c.module);
        assert!(ks.iter().any(c.expect), "case `{}`: expected error not found in {ks:#?}", c.name);
        for k in &ks {
            seen.insert(discriminant(k));
        }
    }
    assert_eq!(seen.len(), VARIANTS, "a variant of VerifyErrorKind has no case");
}

#[test]
fn cases_report_exactly_their_error() {
    // Each case breaks one rule; cascades are a sign of a noisy verifier.
    // Known, intended pairs are listed.
    for c in cases() {
        let ks = kinds(&c.module);
        let allowed = match c.name {
            // The shuffled numbering defines v1 first: its use order is fine.
            "param order" | "redefined" | "out of order" => 2,
            _ => 1,
        };
        assert!(ks.len() <= allowed, "case `{}` reports {ks:#?}", c.name);
    }
}

// ---- collecting many errors ------------------------------------------------

#[test]
fn collects_many_errors_across_functions_and_phases() {
    let mut m = module(vec![
        // phase 1: two problems
        kernel(&[t(I32), t(I32), t(I32)], 0, vec![konst(0, 1), let_(1, Op::Unary(UnaryOp::Neg, v(1)))]),
        // phase 2: three problems
        device("g", Some(t(U32)), 1, &[t(U32)], vec![st(StmtKind::Break), st(StmtKind::Continue)]),
    ]);
    m.consts.push(ConstDecl {
        name: "bad name".into(),
        ty: t(U32),
        init: ConstInit::Scalar(1 << 40),
        span: Span::default(),
    });
    let errs = errors(&m);
    let ks: Vec<_> = errs.iter().map(|e| &e.kind).collect();
    assert_eq!(
        ks,
        [
            &K::BadName { kind: NameKind::Constant, name: "bad name".into() },
            &K::ConstLiteral { path: "".into(), bits: 1 << 40, ty: U32 },
            &K::NotDominated(v(1)),
            &K::Undefined(v(2)),
            &K::BreakOutsideLoop,
            &K::ContinueOutsideLoop,
            &K::MissingReturn(Box::new(t(U32))),
        ]
    );
    assert_eq!(errs[2].func.as_deref(), Some("k"));
    assert_eq!(errs[2].value, Some(v(1)));
    assert_eq!(errs[4].func.as_deref(), Some("g"));
    assert_eq!(errs[0].func.as_deref(), Some("bad name"));
}

#[test]
fn phase_two_is_skipped_for_functions_failing_phase_one() {
    // v1 is dangling AND the if condition is not bool: only the handle is reported.
    let m = module(vec![kernel(
        &[t(U32)],
        1,
        vec![st(StmtKind::If { cond: v(0), then_body: vec![], else_body: vec![] }), ret(Some(1))],
    )]);
    assert_eq!(kinds(&m), [K::DanglingValue(v(1))]);
}

#[test]
fn self_use_and_scoping() {
    // v1 used in its own definition; v2 defined in a loop, used after it;
    // v3 defined in a then-branch, used in the else-branch.
    let m = module(vec![kernel(
        &[t(Bool), t(I32), t(I32), t(I32), t(I32)],
        1,
        vec![
            let_(1, Op::Unary(UnaryOp::Neg, v(1))),
            st(StmtKind::Loop(vec![konst(2, 0), st(StmtKind::Break)])),
            st(StmtKind::If {
                cond: v(0),
                then_body: vec![konst(3, 1)],
                else_body: vec![let_(4, Op::Binary(BinaryOp::Add, v(2), v(3)))],
            }),
        ],
    )]);
    assert_eq!(kinds(&m), [K::NotDominated(v(1)), K::NotDominated(v(2)), K::NotDominated(v(3))]);
}

#[test]
fn recursion_names_every_cycle() {
    let m = module(vec![
        device("a", None, 0, &[], vec![st(StmtKind::Call(FuncId::from_u32(1), vec![]))]),
        device("b", None, 0, &[], vec![st(StmtKind::Call(FuncId::from_u32(0), vec![]))]),
        device("c", None, 0, &[], vec![st(StmtKind::Call(FuncId::from_u32(2), vec![]))]),
    ]);
    let errs = errors(&m);
    let names: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["@a: recursive calls: @a -> @b -> @a", "@c: recursive calls: @c -> @c"]);
}

#[test]
fn calling_a_kernel_or_a_void_fn_for_a_value_is_a_type_error() {
    let m = module(vec![
        kernel(&[], 0, vec![]),
        device("g", None, 0, &[], vec![]),
        device(
            "h",
            None,
            0,
            &[t(U32)],
            vec![let_(0, Op::Call(FuncId::from_u32(1), vec![])), st(StmtKind::Call(FuncId::from_u32(0), vec![]))],
        ),
    ]);
    let ks = kinds(&m);
    assert!(matches!(&ks[0], K::Type(e) if e.to_string().contains("returns no value")), "{ks:#?}");
    assert!(matches!(&ks[1], K::Call(e) if e.to_string().contains("kernels cannot be called")), "{ks:#?}");
}

#[test]
fn store_rules() {
    let mut f = kernel(&[Type::array(t(U32), 2), gptr(U32), t(F32), t(U32)], 0, vec![]);
    // hand-built: v0..v3 are params with odd types (v0 is also flagged as a
    // non-value type), the stores exercise each store rule.
    f.params = vec![v(0), v(1), v(2), v(3)];
    f.body = vec![
        st(StmtKind::Store { ptr: v(3), index: None, value: v(3) }),
        st(StmtKind::Store { ptr: v(1), index: Some(v(2)), value: v(3) }),
        st(StmtKind::Store { ptr: v(1), index: Some(v(3)), value: v(2) }),
    ];
    let ks = kinds(&module(vec![f]));
    assert_eq!(ks.len(), 4, "{ks:#?}");
    assert!(matches!(&ks[0], K::KernelParam(_)));
    for k in &ks[1..] {
        assert!(matches!(k, K::Store(_)), "{k:?}");
    }
    assert!(ks[1].to_string().contains("expects a pointer"), "{}", ks[1]);
    assert!(ks[2].to_string().contains("integer index"), "{}", ks[2]);
    assert!(ks[3].to_string().contains("disagree"), "{}", ks[3]);
}

#[test]
fn device_return_analysis() {
    // An infinite loop returns; if/else returning on both sides returns; a
    // loop with a break in a nested if does not; a break of an inner loop
    // does not count for the outer one.
    let ok = [
        vec![st(StmtKind::Loop(vec![ret(Some(1))]))],
        vec![st(StmtKind::If { cond: v(0), then_body: vec![ret(Some(1))], else_body: vec![ret(Some(1))] })],
        vec![st(StmtKind::Loop(vec![st(StmtKind::Loop(vec![st(StmtKind::Break)])), ret(Some(1))]))],
        vec![ret(Some(1)), st(StmtKind::Barrier)],
    ];
    for body in ok {
        let m = module(vec![device("g", Some(t(U32)), 2, &[t(Bool), t(U32)], body.clone())]);
        assert_eq!(kinds(&m), [], "{body:#?}");
    }
    let bad = [
        vec![],
        vec![st(StmtKind::Loop(vec![st(StmtKind::If {
            cond: v(0),
            then_body: vec![st(StmtKind::Break)],
            else_body: vec![],
        })]))],
        vec![st(StmtKind::If { cond: v(0), then_body: vec![ret(Some(1))], else_body: vec![] })],
    ];
    for body in bad {
        let m = module(vec![device("g", Some(t(U32)), 2, &[t(Bool), t(U32)], body.clone())]);
        assert!(matches!(kinds(&m)[..], [K::MissingReturn(_)]), "{body:#?}");
    }
    // Returns without a value in a function with a result, and vice versa.
    let m = module(vec![
        device("g", Some(t(U32)), 0, &[], vec![ret(None)]),
        device("h", None, 1, &[t(U32)], vec![ret(Some(0))]),
    ]);
    let ks = kinds(&m);
    assert!(
        matches!(
            &ks[..],
            [K::ReturnType { expected: Some(_), found: None }, K::ReturnType { expected: None, found: Some(_) }]
        ),
        "{ks:#?}"
    );
    assert_eq!(ks[0].to_string(), "`return` without a value in a function returning u32");
}

#[test]
fn variables_and_signatures() {
    let mut f = kernel(&[t(Scalar::Word), gptr(F32), t(Bool)], 3, vec![]);
    var(&mut f, "w", VarKind::Local, t(Scalar::Word));
    var(&mut f, "p", VarKind::Local, gptr(F32));
    var(&mut f, "tile", VarKind::Shared, Type::array(t(F32), 256));
    var(&mut f, "flag", VarKind::Shared, t(Bool));
    let m = module(vec![f.clone()]);
    let info = verify(&m).expect("words, pointers and bools are fine");
    assert_eq!(info[FuncId::from_u32(0)].shared_bytes, 1025);

    var(&mut f, "w", VarKind::Local, t(U32));
    var(&mut f, "a b", VarKind::Local, t(U32));
    var(&mut f, "big", VarKind::Local, Type::array(Type::array(t(Scalar::F64), 1 << 20), 1 << 20));
    let dptr = Type::ptr(AddrSpace::Global, Type::Struct(vec![]));
    let g = device("g", Some(dptr.clone()), 1, &[dptr], vec![st(StmtKind::Loop(vec![]))]);
    let ks = kinds(&module(vec![f, g]));
    assert!(
        matches!(
            &ks[..],
            [
                K::DuplicateName { kind: NameKind::Variable, .. },
                K::BadName { kind: NameKind::Variable, .. },
                K::Layout { source: LayoutError::TooLarge, .. },
                K::Layout { source: LayoutError::Empty, .. },
                K::Layout { source: LayoutError::Empty, .. },
            ]
        ),
        "{ks:#?}"
    );
}

#[test]
fn values_of_pointers_to_empty_types_are_rejected() {
    let m = module(vec![kernel(&[Type::ptr(AddrSpace::Global, Type::array(t(U32), 0))], 1, vec![])]);
    assert!(matches!(&kinds(&m)[..], [K::Layout { source: LayoutError::Empty, .. }]));
}

// ---- display, render, size ---------------------------------------------------

#[test]
fn display_and_render() {
    let mut f = kernel(&[t(I32), t(F32), t(I32)], 2, vec![let_(2, Op::Binary(BinaryOp::Add, v(0), v(1)))]);
    f.body[0].span = Span::new(3, 5);
    let mut c = ConstDecl { name: "c".into(), ty: gptr(U32), init: ConstInit::Scalar(0), span: Span::new(1, 1) };
    let mut m = module(vec![f]);
    m.consts.push(c.clone());
    c.name = "d".into();
    c.span = Span::new(2, 0);
    m.consts.push(c);
    let mut m2 = m.clone();
    m2.funcs.push(device("g", None, 0, &[], vec![st(StmtKind::Break)]));
    let e = verify(&m2).unwrap_err();
    assert_eq!(
        e.render("a.rk"),
        "a.rk:1:1: error: @c: constant type ptr<global, u32> contains a pointer; constants are plain data (a `word` field may hold `ref ...`)\n\
         a.rk:2: error: @d: constant type ptr<global, u32> contains a pointer; constants are plain data (a `word` field may hold `ref ...`)\n\
         a.rk:3:5: error: @k: v2: `add` operands disagree: v0 is i32, v1 is f32\n\
         a.rk: error: @g: `break` outside a loop\n"
    );
    assert_eq!(e.len(), 4);
    assert!(e.to_string().starts_with("verification failed with 4 errors\n  @c: "));
    let bare = VerifyError { func: None, value: None, span: Span::default(), kind: K::StoreToConst };
    assert_eq!(bare.to_string(), "store into `const` memory: constants are read-only");
    // The source chain reaches the typing error.
    let err = &e.errors[2];
    let source = std::error::Error::source(err).and_then(std::error::Error::source);
    assert!(source.is_some_and(|s| s.to_string().contains("disagree")));
}

#[test]
fn error_is_small() {
    // 80 and 40 on 64-bit targets: a name (24), a value, a span and the kind,
    // whose payloads are boxed beyond one `String` and a little more.
    let size = size_of::<VerifyError>();
    assert!(size <= 80, "VerifyError grew to {size} bytes: box the big payloads");
    assert!(size_of::<VerifyErrorKind>() <= 40);
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

#[test]
fn built_module_verifies_and_info_is_useful() {
    let m = sample();
    let info = verify(&m).unwrap_or_else(|e| panic!("{}", e.render("sample")));
    let id = |name| m.func_by_name(name).unwrap();
    let (g, clamp, leaf, k, plain) = (id("sync_twice"), id("clamp"), id("leaf"), id("k"), id("plain"));
    assert!(info[g].uses_barrier);
    assert!(!info[clamp].uses_barrier && !info[leaf].uses_barrier);
    assert!(info[k].uses_barrier, "through @sync_twice");
    assert!(!info[plain].uses_barrier);
    assert_eq!(info[k].shared_bytes, 256);
    assert_eq!(info[g].shared_bytes, 0);
    assert_eq!(info[k].callees, [g, leaf]);
    assert_eq!(info.call_order(), [g, clamp, leaf, k, plain]);
    let pos = |f| info.call_order().iter().position(|&x| x == f).unwrap();
    for (f, fi) in m.funcs.keys().zip(info.functions()) {
        for &c in &fi.callees {
            assert!(pos(c) < pos(f));
        }
    }
    assert!(info.function(FuncId::from_u32(99)).is_none());
}

// ---- never panics --------------------------------------------------------------

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn u32(&mut self, n: u32) -> u32 {
        self.below(u64::from(n)) as u32
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 0
    }
}

fn rand_type(r: &mut Rng, depth: u32) -> Type {
    let s = Scalar::ALL[r.below(8) as usize];
    match if depth > 2 { 0 } else { r.below(7) } {
        0..=2 => t(s),
        3 | 4 => Type::ptr(AddrSpace::ALL[r.below(4) as usize], rand_type(r, depth + 1)),
        5 => Type::array(rand_type(r, depth + 1), [0, 1, 4, u32::MAX][r.below(4) as usize]),
        _ => Type::Struct((0..r.below(3)).map(|_| rand_type(r, depth + 1)).collect()),
    }
}

fn rand_op(r: &mut Rng, nv: u32, nvars: u32, nf: u32, nc: u32) -> Op {
    let mut val = || Value::from_u32(r.u32(nv + 2));
    let (a, b, c) = (val(), val(), val());
    let idx = if r.coin() { Some(a) } else { None };
    match r.below(17) {
        0 => Op::Const(r.below(3) << (r.below(2) * 40)),
        1 => Op::Unary(UnaryOp::ALL[r.below(4) as usize], a),
        2 => Op::Binary(BinaryOp::ALL[r.below(12) as usize], a, b),
        3 => Op::Compare(CmpOp::ALL[r.below(6) as usize], a, b),
        4 => Op::Select(a, b, c),
        5 => Op::Convert(a),
        6 => Op::Bitcast(a),
        7 => Op::Load { ptr: b, index: idx },
        8 => Op::Offset { ptr: a, index: b },
        9 => Op::Elem { ptr: a, index: b },
        10 => Op::Field { ptr: a, field: r.u32(3) },
        11 => Op::VarAddr(Var::from_u32(r.u32(nvars + 1))),
        12 => Op::ConstAddr(ConstId::from_u32(r.u32(nc + 1))),
        13 => Op::Get(Var::from_u32(r.u32(nvars + 1))),
        14 => Op::Call(FuncId::from_u32(r.u32(nf + 1)), vec![a, b][..r.below(3) as usize % 3].to_vec()),
        15 => Op::Atomic { op: AtomicOp::ALL[r.below(4) as usize], ptr: b, index: idx, value: c },
        _ => Op::AtomicCas { ptr: b, index: idx, expected: c, new: a },
    }
}

fn rand_block(r: &mut Rng, depth: u32, nv: u32, nvars: u32, nf: u32, nc: u32) -> Vec<Stmt> {
    let len = r.below(if depth > 3 { 2 } else { 5 });
    (0..len)
        .map(|_| {
            let val = |r: &mut Rng| Value::from_u32(r.u32(nv + 2));
            let kind = match r.below(10) {
                0..=3 => StmtKind::Let { result: val(r), op: rand_op(r, nv, nvars, nf, nc) },
                4 => StmtKind::Store { ptr: val(r), index: if r.coin() { Some(val(r)) } else { None }, value: val(r) },
                5 => StmtKind::Set { var: Var::from_u32(r.u32(nvars + 1)), value: val(r) },
                6 => StmtKind::Call(FuncId::from_u32(r.u32(nf + 1)), if r.coin() { vec![] } else { vec![val(r)] }),
                7 => StmtKind::If {
                    cond: val(r),
                    then_body: rand_block(r, depth + 1, nv, nvars, nf, nc),
                    else_body: rand_block(r, depth + 1, nv, nvars, nf, nc),
                },
                8 => StmtKind::Loop(rand_block(r, depth + 1, nv, nvars, nf, nc)),
                _ => [
                    StmtKind::Break,
                    StmtKind::Continue,
                    StmtKind::Barrier,
                    StmtKind::Return(None),
                    StmtKind::Return(Some(val(r))),
                ][r.below(5) as usize]
                    .clone(),
            };
            st(kind)
        })
        .collect()
}

/// Renumbers the `Let`s of `b` canonically from `next`.
fn renumber(b: &mut [Stmt], next: &mut u32) {
    for s in b {
        match &mut s.kind {
            StmtKind::Let { result, .. } => {
                *result = Value::from_u32(*next);
                *next += 1;
            }
            StmtKind::If { then_body, else_body, .. } => {
                renumber(then_body, next);
                renumber(else_body, next);
            }
            StmtKind::Loop(body) => renumber(body, next),
            _ => {}
        }
    }
}

fn rand_module(r: &mut Rng) -> Module {
    let mut m = Module::new();
    let nf = r.u32(4) + 1;
    let nc = r.u32(2);
    for i in 0..nc {
        let ty = rand_type(r, 1);
        let init = if r.coin() {
            ConstInit::Scalar(r.below(4))
        } else {
            ConstInit::Array(vec![ConstInit::Scalar(1); r.below(5) as usize])
        };
        m.consts.push(ConstDecl { name: format!("c{i}"), ty, init, span: Span::default() });
    }
    for i in 0..nf {
        let kind = if r.coin() { FuncKind::Kernel } else { FuncKind::Device };
        let mut f = Function::new(format!("f{}", r.u32(nf + 2) + i * (r.u32(2))), kind);
        let nvars = r.u32(3);
        for j in 0..nvars {
            let vk = if r.coin() { VarKind::Local } else { VarKind::Shared };
            f.vars.push(VarDecl { name: format!("x{j}"), kind: vk, ty: rand_type(r, 0), span: Span::default() });
        }
        let np = r.u32(3);
        let nv = np + r.u32(6);
        f.body = rand_block(r, 0, nv, nvars, nf, nc);
        let mut next = np;
        if r.coin() {
            renumber(&mut f.body, &mut next);
        }
        let nv = if r.coin() { next } else { nv };
        for _ in 0..nv {
            // Mostly plain scalars so that phase 2 sees well-typed code often.
            let ty = if r.below(3) == 0 { rand_type(r, 0) } else { t(Scalar::ALL[r.below(7) as usize + 1]) };
            f.values.push(ValueData { ty });
        }
        f.params = (0..np).map(Value::from_u32).collect();
        if r.below(8) == 0 {
            f.params.reverse();
        }
        if r.coin() {
            f.ret = Some(rand_type(r, 1));
        }
        m.funcs.push(f);
    }
    m
}

#[test]
fn random_modules_never_panic() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    let (mut ok, mut phase2) = (0, 0);
    for _ in 0..20_000 {
        let m = rand_module(&mut r);
        match verify(&m) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(!e.is_empty());
                let _ = e.render("fuzz.rk");
                if e.iter().any(|e| {
                    !matches!(
                        e.kind,
                        K::DanglingValue(_)
                            | K::DanglingVar(_)
                            | K::DanglingFunc(_)
                            | K::DanglingConst(_)
                            | K::ParamOrder { .. }
                            | K::Redefined(_)
                            | K::OutOfOrder { .. }
                            | K::Undefined(_)
                            | K::NotDominated(_)
                    )
                }) {
                    phase2 += 1;
                }
            }
        }
    }
    // The generator reaches past phase 1 reasonably often.
    assert!(phase2 > 1000, "only {phase2} modules reached phase 2 (ok: {ok})");
}

#[test]
fn mutated_valid_module_never_panics() {
    let base = sample();
    let mut r = Rng(42);
    for _ in 0..5_000 {
        let mut m = base.clone();
        let fi = FuncId::from_u32(r.u32(m.funcs.len() as u32));
        let f = &mut m.funcs[fi];
        let nv = f.values.len() as u32;
        match r.below(5) {
            0 => {
                let extra = rand_block(&mut r, 2, nv, f.vars.len() as u32, 5, 1);
                let at = r.below(f.body.len() as u64 + 1) as usize;
                f.body.splice(at..at, extra);
            }
            1 if !f.body.is_empty() => {
                let at = r.below(f.body.len() as u64) as usize;
                f.body.remove(at);
            }
            2 if !f.values.is_empty() => {
                let at = Value::from_u32(r.u32(nv));
                f.values[at].ty = rand_type(&mut r, 0);
            }
            3 if f.body.len() > 1 => {
                let (a, b) = (r.below(f.body.len() as u64) as usize, r.below(f.body.len() as u64) as usize);
                f.body.swap(a, b);
            }
            _ => {
                let vi = Var::from_u32(r.u32(f.vars.len() as u32 + 1));
                if let Some(d) = f.vars.get_mut(vi) {
                    d.ty = rand_type(&mut r, 0);
                    d.kind = if r.coin() { VarKind::Local } else { VarKind::Shared };
                }
            }
        }
        let _ = verify(&m);
    }
}

#[test]
fn deep_nesting_is_fine() {
    let mut body = vec![st(StmtKind::Break)];
    for _ in 0..2_000 {
        body = vec![st(StmtKind::Loop(body))];
    }
    let m = module(vec![kernel(&[], 0, body)]);
    // Run on a thread with a modest stack, as a host application might.
    let r = std::thread::Builder::new().stack_size(8 << 20).spawn(move || verify(&m).is_ok()).unwrap().join();
    assert_eq!(r.ok(), Some(true));
}

// ---- host objects and lowering -----------------------------------------------

#[test]
fn host_object_rules() {
    use crate::ir::HostRef;
    // Every source form verifies; so do lowered bake/patch constants with words.
    for ok in [
        "const @t: [u32; 2] = [1, 2]\n\nconst @b: {word, u32} = {ref @t, 1}\n\nimport fn @lib(v0: word) -> u32\n\nkernel @k() {\n    v0: word = ref :a.b\n    v1: word = ref global g + 8\n    v2: word = ref \"msg\"\n    v3: ptr<global, [u32; 2]> = wordptr v0\n    v4: u64 = state.rng_seed\n    v5: u32 = call @lib(v2)\n    exit\n}\n",
        "lowered bake\n\nconst @b: {word, u32} = {0x1234, 1}\n\nkernel @k() {\n    v0: word = word 0x99\n    return\n}\n",
        "lowered patch\n\nconst @b: {word, u32} = {0, 1}\n\nkernel @k() {\n    v0: word = patch k$0\n    return\n}\n",
        "lowered table\n\nkernel @k() {\n    v0: ptr<global, word> = state.reloc_table\n    v1: u32 = const 0\n    v2: word = load v0[v1]\n    return\n}\n",
    ] {
        assert!(verify(&text(ok)).is_ok(), "{ok}: {:?}", verify(&text(ok)).err().map(|e| e.to_string()));
    }
    // `ref @c` of a constant with words, in code: the typing rule's error.
    let m = text("const @a: {word} = {ref :x}\n\nkernel @k() {\n    v0: word = ref @a\n    return\n}\n");
    let ks = kinds(&m);
    assert!(matches!(ks.as_slice(), [K::Type(e)] if e.to_string().contains("may hold no words or pointers")), "{ks:?}");
    // `word` in `lowered patch`, `patch` in source.
    let m = text("lowered patch\n\nkernel @k() {\n    v0: word = word 0x1\n    return\n}\n");
    assert_eq!(
        kinds(&m),
        [K::WrongStrategy { op: "word", needs: crate::ir::Strategy::Bake, stage: crate::ir::Strategy::Patch }]
    );
    let m = text("kernel @k() {\n    v0: word = patch a\n    return\n}\n");
    assert_eq!(kinds(&m), [K::LoweredOnly { op: "patch" }]);
    assert_eq!(errors(&m)[0].to_string(), "@k: v0: `patch` only appears in lowered code (`lowered patch`)");
    // Names: symbols `[A-Za-z0-9_.]+`, globals `[A-Za-z0-9_]+`, patches `[A-Za-z0-9_$]+`.
    let bad = |r: HostRef| kinds(&module(vec![kernel(&[t(Scalar::Word)], 0, vec![let_(0, Op::Ref(r)), ret(None)])]));
    assert!(matches!(bad(HostRef::Symbol("a b".into())).as_slice(), [K::BadHostName { kind: "symbol", .. }]));
    assert!(matches!(
        bad(HostRef::Global { name: "a.b".into(), offset: 0 }).as_slice(),
        [K::BadHostName { kind: "global", .. }]
    ));
    assert!(matches!(
        bad(HostRef::Global { name: String::new(), offset: 0 }).as_slice(),
        [K::BadHostName { kind: "global", .. }]
    ));
    assert!(bad(HostRef::Str(String::new())).is_empty());
    assert!(bad(HostRef::Value(ConstId::from_u32(3))).iter().any(|k| *k == K::DanglingConst(ConstId::from_u32(3))));
    let mut m = module(vec![kernel(&[t(Scalar::Word)], 0, vec![let_(0, Op::Patch("a-b".into())), ret(None)])]);
    m.stage = crate::ir::Stage::Lowered(crate::ir::Strategy::Patch);
    assert!(matches!(kinds(&m).as_slice(), [K::BadHostName { kind: "patch", .. }]));
    // A bad name inside a constant's `ref`.
    let mut m = Module::new();
    let init = ConstInit::Ref(HostRef::Symbol(String::new()));
    m.consts.push(ConstDecl { name: "c".into(), ty: t(Scalar::Word), init, span: Span::default() });
    assert!(matches!(kinds(&m).as_slice(), [K::BadHostName { kind: "symbol", .. }]));
    // An import with variables has a body too; an import is callable.
    let mut imp = raw("imp", FuncKind::Import, 1, &[t(U32)], vec![]);
    var(&mut imp, "x", VarKind::Local, t(U32));
    assert_eq!(kinds(&module(vec![imp])), [K::ImportWithBody]);
}

#[test]
fn exit_ends_every_path() {
    // `exit` counts as leaving the function for the always-returns analysis,
    // in a device function, nested, or in a kernel.
    for src in [
        "fn @f(v0: bool) -> u32 {\n    if v0 {\n        v1: u32 = const 1\n        return v1\n    } else {\n        exit\n    }\n}\n",
        "fn @f() -> u32 {\n    exit\n}\n",
        "kernel @k() {\n    loop {\n        exit\n    }\n}\n",
    ] {
        assert!(verify(&text(src)).is_ok(), "{src}: {:?}", verify(&text(src)).err().map(|e| e.to_string()));
    }
    let m = text("fn @f(v0: bool) -> u32 {\n    if v0 {\n        exit\n    }\n}\n");
    assert!(matches!(kinds(&m).as_slice(), [K::MissingReturn(_)]));
}
