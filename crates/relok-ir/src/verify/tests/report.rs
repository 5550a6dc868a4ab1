//! What verification reports: the errors' display, rendering and size,
//! and the `ModuleInfo` of a valid module.

use super::*;

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
