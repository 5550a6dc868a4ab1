//! Rules in combination, and rules that a single case cannot show.

use super::*;

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

#[test]
fn length_parameters_are_a_kernels_u32s_counting_one_buffer_each() {
    let ok = text("kernel @k(v0: ptr<global, f32>, v1: u32 len(v0)) {\n    return\n}\n");
    assert!(kinds(&ok).is_empty());
    for (src, needle) in [
        ("kernel @k(v0: ptr<global, f32>, v1: i32 len(v0)) {\n    return\n}\n", "is i32, not u32"),
        ("kernel @k(v0: u32, v1: u32 len(v0)) {\n    return\n}\n", "not a ptr<global, T>"),
        ("kernel @k(v0: ptr<global, f32>, v1: u32 len(v0), v2: u32 len(v0)) {\n    return\n}\n", "in two lengths"),
        ("fn @f(v0: ptr<global, f32>, v1: u32 len(v0)) {\n    return\n}\n", "only a kernel's parameters"),
    ] {
        let e = errors(&text(src));
        assert_eq!(e.len(), 1, "{src}: {e:?}");
        assert!(e[0].to_string().contains(needle), "{src}: {}", e[0]);
        assert!(matches!(e[0].kind, K::BadLenParam(_)), "{src}");
    }
    // What the text format cannot write, the builder can: a length of a
    // later parameter, and lengths listed out of their parameters' order.
    let two =
        "kernel @k(v0: ptr<global, f32>, v1: u32 len(v0), v2: ptr<global, f32>, v3: u32 len(v2)) {\n    return\n}\n";
    let (mut later, mut unordered) = (text(two), text(two));
    let f = later.funcs.values_mut().next().unwrap();
    f.lens[0].of = f.params[2];
    f.lens.truncate(1);
    let f = unordered.funcs.values_mut().next().unwrap();
    f.lens.swap(0, 1);
    for (m, needle) in [(later, "not an earlier parameter"), (unordered, "listed after")] {
        let e = errors(&m);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].to_string().contains(needle), "{}", e[0]);
    }
}

#[test]
fn a_block_shape_is_a_kernels_and_one_every_device_launches() {
    let ok = text("kernel @k(v0: u32) block(16, 16, 1) {\n    return\n}\n");
    assert!(kinds(&ok).is_empty());
    assert_eq!(ok.funcs.values().next().unwrap().block, Some([16, 16, 1]));
    assert!(crate::print(&ok).contains("kernel @k(v0: u32) block(16, 16, 1) {"), "{}", crate::print(&ok));
    for (src, needle) in [
        ("kernel @k() block(0, 1, 1) {\n    return\n}\n", "zero dimension"),
        ("kernel @k() block(1, 1, 65) {\n    return\n}\n", "exceeds (1024, 1024, 64)"),
        ("kernel @k() block(64, 32, 1) {\n    return\n}\n", "2048 threads"),
        ("fn @f() block(16, 1, 1) {\n    return\n}\n", "only kernels"),
    ] {
        let e = errors(&text(src));
        assert_eq!(e.len(), 1, "{src}: {e:?}");
        assert!(e[0].to_string().contains(needle), "{src}: {}", e[0]);
        assert!(matches!(e[0].kind, K::BadBlock(_)), "{src}");
    }
}
