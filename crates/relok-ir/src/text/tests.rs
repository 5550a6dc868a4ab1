use super::testgen::{Rng, random_lowered_module, random_module};
use super::{MAX_DEPTH, ParseError, parse, print};
use crate::builder::ModuleBuilder;
use crate::ir::{ConstInit, Module, Op, StmtKind, Value};
use crate::types::{Scalar, Type};
use proptest::prelude::*;

fn ok(src: &str) -> Module {
    match parse(src) {
        Ok(m) => m,
        Err(e) => panic!("parse failed: {e}\n{src}"),
    }
}

/// Parses canonical text and checks it prints back byte for byte.
fn canonical(src: &str) -> Module {
    let m = ok(src);
    assert_eq!(print(&m), src);
    assert_eq!(parse(&print(&m)).as_ref(), Ok(&m));
    m
}

#[track_caller]
fn fails(src: &str, line: u32, col: u32, needle: &str) -> ParseError {
    let e = match parse(src) {
        Ok(m) => panic!("expected an error containing {needle:?}, parsed:\n{}", print(&m)),
        Err(e) => e,
    };
    assert!(e.message.contains(needle), "message {:?} lacks {needle:?}", e.message);
    assert_eq!((e.span.line, e.span.col), (line, col), "wrong position for {e}");
    e
}

const SAXPY: &str = "\
kernel @saxpy(v0: u32, v1: f32, v2: ptr<global, f32>, v3: ptr<global, f32>) {
    v4: u32 = block_id.x
    v5: u32 = block_dim.x
    v6: u32 = thread_id.x
    v7: u32 = mul v4, v5
    v8: u32 = add v7, v6
    v9: bool = lt v8, v0
    if v9 {
        v10: f32 = load v2[v8]
        v11: f32 = load v3[v8]
        v12: f32 = mul v1, v10
        v13: f32 = add v12, v11
        store v3[v8], v13
    }
    return
}
";

/// Every syntax form, in canonical text.
const ALL_FORMS: &str = "\
const @table: [u32; 4] = [1, 2, 3, 4294967295]

const @pair: {f32, [i64; 2], bool} = {-0.0, [-9223372036854775808, 9223372036854775807], true}

fn @clamp(v0: f32, v1: f32) -> f32 {
    v2: f32 = max v0, v1
    return v2
}

fn @log(v0: u32) {
    return
}

kernel @forms(v0: u32, v1: ptr<global, f32>, v2: ptr<global, u64>, v3: ptr<global, {word, [u32; 8]}>) {
    local %acc: f32
    local %buf: [i32; 16]
    shared %tile: [f32; 256]
    shared %flag: u32
    v4: f32 = const 1.5
    v5: f32 = const -inf
    v6: f64 = const nan
    v7: f32 = const 0x7fc00001
    v8: f64 = const 1e-10
    v9: i32 = const -3
    v10: u64 = const 18446744073709551615
    v11: bool = const false
    v12: f32 = neg v4
    v13: f32 = abs v12
    v14: f32 = sqrt v13
    v15: bool = not v11
    v16: f32 = add v4, v5
    v17: f32 = sub v4, v5
    v18: f32 = mul v4, v5
    v19: f32 = div v4, v5
    v20: f32 = rem v4, v5
    v21: f32 = min v4, v5
    v22: f32 = max v4, v5
    v23: u32 = and v0, v0
    v24: u32 = or v0, v0
    v25: u32 = xor v0, v0
    v26: u32 = shl v0, v0
    v27: u32 = shr v0, v0
    v28: bool = eq v4, v5
    v29: bool = ne v4, v5
    v30: bool = lt v4, v5
    v31: bool = le v4, v5
    v32: bool = gt v4, v5
    v33: bool = ge v4, v5
    v34: f32 = select v28, v4, v5
    v35: i64 = convert v9
    v36: u32 = bitcast v4
    v37: f32 = load v1
    v38: f32 = load v1[v0]
    v39: ptr<global, f32> = offset v1, v0
    v40: ptr<global, {word, [u32; 8]}> = offset v3, v9
    v41: ptr<global, [u32; 8]> = field v40, 1
    v42: ptr<global, u32> = elem v41, v0
    v43: ptr<local, f32> = addr %acc
    v44: ptr<local, i32> = addr %buf
    v45: ptr<shared, f32> = addr %tile
    v46: ptr<const, u32> = addr @table
    v47: ptr<const, {f32, [i64; 2], bool}> = addr @pair
    v48: f32 = get %acc
    v49: u32 = thread_id.x
    v50: u32 = block_id.y
    v51: u32 = block_dim.z
    v52: u32 = grid_dim.x
    v53: f32 = call @clamp(v4, v5)
    v54: u64 = atomic.add v2[v0], v10
    v55: u64 = atomic.min v2, v10
    v56: u64 = atomic.max v2[v0], v10
    v57: u64 = atomic.xchg v2[v0], v10
    v58: u64 = atomic.cas v2[v0], v10, v10
    v59: u32 = atomic.cas v42, v0, v0
    v60: ptr<global, word> = field v40, 0
    v61: word = load v60
    v62: u64 = bitcast v61
    store v1, v4
    store v1[v0], v4
    set %acc, v53
    call @log(v0)
    barrier
    if v28 {
        loop {
            if v29 {
                break
            } else {
                continue
            }
        }
    } else {
        v63: f32 = add v4, v4
        store v45[v0], v63
    }
    if v30 {
    }
    loop {
        return
    }
    return
}
";

#[test]
fn saxpy_is_canonical() {
    let m = canonical(SAXPY);
    let f = &m.funcs[m.func_by_name("saxpy").unwrap()];
    assert_eq!(f.params.len(), 4);
    assert_eq!(f.values.len(), 14);
    assert_eq!((f.span.line, f.span.col), (1, 1));
    assert_eq!((f.body[0].span.line, f.body[0].span.col), (2, 5));
    let StmtKind::If { then_body, else_body, .. } = &f.body[6].kind else { panic!("not an if") };
    assert!(else_body.is_empty());
    assert_eq!((then_body[4].span.line, then_body[4].span.col), (13, 9));
}

#[test]
fn every_form_is_canonical() {
    let m = canonical(ALL_FORMS);
    assert!(crate::verify(&m).is_ok(), "{:?}", crate::verify(&m).err().map(|e| e.to_string()));
    assert_eq!(m.consts.len(), 2);
    assert_eq!(m.funcs.len(), 3);
    let c = &m.consts[m.const_by_name("pair").unwrap()];
    assert_eq!((c.span.line, c.span.col), (3, 1));
    assert_eq!(
        c.init,
        ConstInit::Struct(vec![
            ConstInit::Scalar(0x8000_0000),
            ConstInit::Array(vec![ConstInit::Scalar(1 << 63), ConstInit::Scalar(i64::MAX as u64)]),
            ConstInit::Scalar(1),
        ])
    );
    let k = &m.funcs[m.func_by_name("forms").unwrap()];
    assert_eq!(k.vars.len(), 4);
    assert_eq!((k.vars.values().nth(2).unwrap().span.line, k.vars.values().nth(2).unwrap().span.col), (17, 5));
    let bits: Vec<u64> = k.body[..8]
        .iter()
        .map(|s| match s.kind {
            StmtKind::Let { op: Op::Const(b), .. } => b,
            _ => panic!("not a const"),
        })
        .collect();
    assert_eq!(
        bits,
        [
            u64::from(1.5f32.to_bits()),
            u64::from(f32::NEG_INFINITY.to_bits()),
            0x7ff8_0000_0000_0000,
            0x7fc0_0001,
            1e-10f64.to_bits(),
            0xffff_fffd,
            u64::MAX,
            0
        ]
    );
    // Every Op variant and statement kind occurs in ALL_FORMS.
    let mut ops = std::collections::BTreeSet::new();
    let mut stmts = std::collections::BTreeSet::new();
    crate::ir::walk_stmts(&k.body, &mut |s| {
        let d = format!("{:?}", s.kind);
        stmts.insert(d.split(['(', ' ', '{']).next().unwrap_or_default().to_string());
        if let StmtKind::Let { op, .. } = &s.kind {
            let d = format!("{op:?}");
            ops.insert(d.split(['(', ' ', '{']).next().unwrap_or_default().to_string());
        }
    });
    assert_eq!(ops.len(), 18, "{ops:?}");
    assert_eq!(stmts.len(), 10, "{stmts:?}");
}

#[test]
fn names_are_renumbered_in_definition_order() {
    let src = "fn @f(v7: u32, v2: u32) -> u32 {\n  v100: u32 = add v2, v7 ; sum\n\n  v0: u32 = mul v100, v100\n  return v0\n}";
    let m = ok(src);
    let f = &m.funcs.values().next().unwrap();
    assert_eq!(f.params, [Value::from_u32(0), Value::from_u32(1)]);
    assert_eq!(
        print(&m),
        "fn @f(v0: u32, v1: u32) -> u32 {\n    v2: u32 = add v1, v0\n    v3: u32 = mul v2, v2\n    return v3\n}\n"
    );
}

#[test]
fn calls_and_addresses_may_refer_forward() {
    let src = "kernel @k() {\n    v0: f32 = call @later()\n    v1: ptr<const, u32> = addr @c\n    return\n}\n\nfn @later() -> f32 {\n    v0: f32 = const 2.0\n    return v0\n}\n\nconst @c: u32 = 7\n";
    let m = ok(src);
    let k = &m.funcs[m.func_by_name("k").unwrap()];
    let StmtKind::Let { op: Op::Call(g, _), .. } = &k.body[0].kind else { panic!() };
    assert_eq!(*g, m.func_by_name("later").unwrap());
    let StmtKind::Let { op: Op::ConstAddr(c), .. } = &k.body[1].kind else { panic!() };
    assert_eq!(*c, m.const_by_name("c").unwrap());
    // Printed canonically: constants first.
    assert!(print(&m).starts_with("const @c: u32 = 7\n\nkernel @k() {\n"));
}

#[test]
fn return_is_followed_by_a_definition() {
    let m = ok("fn @f(v0: u32) -> u32 {\n    return\n    v1: u32 = add v0, v0\n    return v1\n}\n");
    let f = m.funcs.values().next().unwrap();
    assert_eq!(f.body.len(), 3);
    assert_eq!(f.body[0].kind, StmtKind::Return(None));
}

#[test]
fn comments_and_array_semicolons() {
    let m = ok(
        ";; header\nkernel @k() { ; open\n    local %a: [f32 ; 4] ; four floats\n    shared %b: [[u32;2];3];x\n}\n; trailer",
    );
    let k = m.funcs.values().next().unwrap();
    assert_eq!(k.vars.values().map(|d| d.ty.to_string()).collect::<Vec<_>>(), ["[f32; 4]", "[[u32; 2]; 3]"]);
    assert_eq!(print(&m), "kernel @k() {\n    local %a: [f32; 4]\n    shared %b: [[u32; 2]; 3]\n}\n");
}

#[test]
fn literals_print_by_type() {
    let cases: &[(Scalar, u64, &str)] = &[
        (Scalar::Bool, 1, "true"),
        (Scalar::I32, 0xffff_ffff, "-1"),
        (Scalar::I32, 0x8000_0000, "-2147483648"),
        (Scalar::U32, 0xffff_ffff, "4294967295"),
        (Scalar::I64, 1 << 63, "-9223372036854775808"),
        (Scalar::F32, u64::from((-0.0f32).to_bits()), "-0.0"),
        (Scalar::F32, u64::from(1e-10f32.to_bits()), "1e-10"),
        (Scalar::F32, u64::from(1e20f32.to_bits()), "1e20"),
        (Scalar::F32, u64::from(f32::INFINITY.to_bits()), "inf"),
        (Scalar::F32, 0x7fc0_0000, "nan"),
        (Scalar::F32, 0xffc0_0000, "0xffc00000"),
        (Scalar::F32, 0x7f80_0001, "0x7f800001"),
        (Scalar::F32, 1, "1e-45"),
        (Scalar::F64, 0x7ff8_0000_0000_0000, "nan"),
        (Scalar::F64, 0x7ff8_0000_0000_0001, "0x7ff8000000000001"),
        (Scalar::F64, f64::NEG_INFINITY.to_bits(), "-inf"),
        (Scalar::F64, 0.1f64.to_bits(), "0.1"),
        (Scalar::F64, 1.0f64.to_bits(), "1.0"),
    ];
    for &(s, bits, text) in cases {
        let mut mb = ModuleBuilder::new();
        let mut k = mb.kernel("k");
        k.const_bits(s, bits);
        let f = k.finish().unwrap();
        mb.add(f);
        let m = mb.build();
        let printed = print(&m);
        assert_eq!(printed, format!("kernel @k() {{\n    v0: {s} = const {text}\n}}\n"));
        assert_eq!(parse(&printed), Ok(m));
    }
}

fn const_bits(ty: &str, lit: &str) -> Result<u64, ParseError> {
    let m = parse(&format!("kernel @k() {{\n    v0: {ty} = const {lit}\n}}"))?;
    match &m.funcs.values().next().unwrap().body[0].kind {
        StmtKind::Let { op: Op::Const(b), .. } => Ok(*b),
        _ => unreachable!(),
    }
}

#[test]
fn literals_parse_by_type() {
    assert_eq!(const_bits("u32", "4294967295"), Ok(0xffff_ffff));
    assert_eq!(const_bits("i32", "-2147483648"), Ok(0x8000_0000));
    assert_eq!(const_bits("u64", "0xFFFFFFFFFFFFFFFF"), Ok(u64::MAX));
    assert_eq!(const_bits("bool", "0x1"), Ok(1));
    assert_eq!(const_bits("f32", "1"), Ok(u64::from(1.0f32.to_bits())));
    assert_eq!(const_bits("f32", "16777217"), Ok(u64::from(16_777_216.0f32.to_bits())));
    assert_eq!(const_bits("f32", "1E+3"), Ok(u64::from(1000.0f32.to_bits())));
    assert_eq!(const_bits("f64", "-0.0"), Ok(1 << 63));
    assert_eq!(const_bits("f32", "0x00000001"), Ok(1));
    assert_eq!(const_bits("f64", "1e-400"), Ok(0));
    // Not parse errors: the verifier reports literals of these types.
    assert_eq!(const_bits("word", "5"), Ok(0));
    assert_eq!(const_bits("word", "0xdeadbeef"), Ok(0xdead_beef));
    assert_eq!(const_bits("ptr<global, f32>", "1.5"), Ok(0));
    assert_eq!(const_bits("[u32; 2]", "true"), Ok(0));
}

#[test]
fn bad_literals_are_errors() {
    let at = |ty: &str, lit: &str, needle: &str| {
        let e = const_bits(ty, lit).expect_err(lit);
        assert!(e.message.contains(needle), "{e}");
        // Errors about the token after a `-` point at that token.
        let col = 18 + ty.len() as u32 + u32::from(needle.contains("after `-`"));
        assert_eq!((e.span.line, e.span.col), (2, col), "{e}");
    };
    at("i32", "1.5", "expected an integer literal for i32, found `1.5`");
    at("u32", "-1", "literal `-1` is out of range for u32");
    at("i32", "5000000000", "out of range for i32");
    at("i32", "2147483648", "out of range for i32");
    at("u64", "18446744073709551616", "out of range for u64");
    at("i32", "0x100000000", "does not fit i32");
    at("u64", "0x10000000000000000", "does not fit 64 bits");
    at("bool", "1", "expected `true` or `false` for bool, found `1`");
    at("bool", "0x2", "does not fit bool");
    at("f32", "1e39", "out of range for f32");
    at("f32", "true", "expected a float literal for f32");
    at("f64", "-nan", "expected a number after `-`, found `nan`");
    at("u32", "nan", "expected an integer literal");
    at("i32", "-0x1", "expected a number after `-`");
    at("i32", "x", "expected a literal, found `x`");
}

#[test]
fn error_messages_name_what_was_expected() {
    fails("kernel @k() {\n    v0: u32 = add v9, v9\n}", 2, 19, "undefined value v9");
    fails(
        "kernel @k(v0: u32) {\n    v1: u32 = add v0, v0\n    v1: u32 = add v0, v0\n}",
        3,
        5,
        "value v1 is defined twice (first at 2:5)",
    );
    fails("kernel @k(v0: u32, v0: u32) {\n}", 1, 20, "value v0 is defined twice");
    fails("kernel @k(v0: u32) {\n    v1: u32 = add v0 }", 2, 22, "expected `,` after operand, found `}`");
    fails("kernel @k() {\n    call @nope()\n}", 2, 11, "unknown function @nope");
    fails("kernel @k() {\n    v0: ptr<const, u32> = addr @k\n}", 2, 33, "@k is a function, not a constant");
    fails("const @c: u32 = 1\nkernel @k() {\n    call @c()\n}", 3, 11, "@c is a constant, not a function");
    fails("kernel @k() {\n}\nfn @k() {\n}", 3, 5, "@k is defined twice (first at 1:9)");
    fails("kernel @k() {\n    set %x, v0\n}", 2, 10, "undefined variable %x");
    fails("kernel @k() {\n    barrier\n    local %x: u32\n}", 3, 5, "must come before the first statement");
    fails(
        "kernel @k() {\n    loop {\n        barrier\n",
        4,
        1,
        "expected `}` to close the block opened at 2:10, found end of input",
    );
    fails("kernel @k() {\n    frobnicate\n}", 2, 5, "expected a statement, found `frobnicate`");
    fails("kernel @k() {\n    v0: u32 = frob v1\n}", 2, 15, "unknown operation `frob`");
    fails(
        "kernel @k() {\n    v0: u32 = thread_id.w\n}",
        2,
        25,
        "expected `x`, `y` or `z` after `thread_id.`, found `w`",
    );
    fails(
        "kernel @k(v0: ptr<global, u32>) {\n    v1: u32 = atomic.sub v0, v0\n}",
        2,
        22,
        "unknown atomic operation `atomic.sub`",
    );
    fails("kernel @k() {\n    local %a: [f32; 4294967296]\n}", 2, 21, "an array length 4294967296 does not fit u32");
    fails(
        "kernel @k() {\n    local %a: [f32, 4]\n}",
        2,
        19,
        "expected `;` after the element type of an array, found `,`",
    );
    fails("kernel @k() {\n    local %a: [f32 ;comment\n 4]\n}", 2, 21, "expected an array length, found `comment`");
    fails("kernel @k(v0: u32) #", 1, 20, "unexpected character `#`");
    fails("kernel @k() {\n    v0: u32 = const 12abc\n}", 2, 21, "malformed number `12abc`");
    fails("const @c: [u32; 3] = [1, 2]", 1, 22, "expected 3 elements for [u32; 3], found 2");
    fails("const @c: [u32; 1] = [1, 2]", 1, 26, "too many elements for [u32; 1]");
    fails("const @c: {u32, bool} = {1, 2}", 1, 29, "expected `true` or `false` for bool, found `2`");
    fails("const @c: {u32} = [1]", 1, 19, "expected `{` to start the initializer of {u32}, found `[`");
    fails("const @c: {} = 1", 1, 12, "expected a type, found `}`");
    fails("v0: u32 = const 1", 1, 1, "expected `const`, `kernel` or `fn` to start an item, found `v0`");
    fails("kernel @k() {\n    v0: u32 = field v0, 1\n}", 2, 21, "undefined value v0");
    fails("kernel", 1, 7, "expected `@` before the function's name, found end of input");
    fails("kernel @k(v0: u32) {\n    v1: bool = eq v0, v0,\n}", 2, 25, "expected a statement, found `,`");
    let e = parse("kernel @k() {\n    v0: u32 = add v9, v9\n}").unwrap_err();
    assert_eq!(e.to_string(), "2:19: undefined value v9");
}

#[test]
fn nesting_is_bounded() {
    let deep_blocks = |n: usize| {
        let mut s = String::from("kernel @k() {\n");
        s.push_str(&"loop {\n".repeat(n));
        s.push_str(&"}\n".repeat(n));
        s.push_str("}\n");
        s
    };
    assert!(parse(&deep_blocks(MAX_DEPTH)).is_ok());
    fails(&deep_blocks(MAX_DEPTH + 1), MAX_DEPTH as u32 + 2, 6, "blocks nested deeper than 64 levels");
    let e = parse(&deep_blocks(100_000)).unwrap_err();
    assert!(e.message.contains("nested deeper"), "{e}");

    let deep_type = |n: usize| format!("kernel @k() {{\n    local %a: {}u32{}\n}}", "[".repeat(n), "; 1]".repeat(n));
    assert!(parse(&deep_type(MAX_DEPTH - 1)).is_ok());
    let e = parse(&deep_type(100_000)).unwrap_err();
    assert!(e.message.contains("type nested deeper than 64 levels"), "{e}");
    let e = parse(&format!("kernel @k(v0: {}f32", "ptr<global, ".repeat(100_000))).unwrap_err();
    assert!(e.message.contains("nested deeper"), "{e}");
    let e = parse(&format!("const @c: {}u32}} = 1", "{".repeat(100_000))).unwrap_err();
    assert!(e.message.contains("nested deeper"), "{e}");
}

#[test]
fn empty_and_trivial_inputs() {
    assert_eq!(parse(""), Ok(Module::new()));
    assert_eq!(parse("  ; only a comment\n\n"), Ok(Module::new()));
    assert_eq!(print(&Module::new()), "");
    canonical("kernel @k() {\n}\n");
}

#[test]
fn builder_nesting_at_the_limit_round_trips() {
    fn nest(k: &mut crate::builder::FunctionBuilder<'_>, n: usize) {
        if n > 0 {
            k.loop_(|k| nest(k, n - 1));
        }
    }
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("k");
    nest(&mut k, MAX_DEPTH);
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    assert_eq!(parse(&print(&m)), Ok(m));
}

#[test]
fn aggregate_constants_round_trip() {
    let ty = Type::Struct(vec![Type::array(Scalar::F64.into(), 2), Scalar::Bool.into()]);
    let init = ConstInit::Struct(vec![
        ConstInit::Array(vec![ConstInit::Scalar(f64::NAN.to_bits()), ConstInit::Scalar(0x7ff0_0000_0000_0002)]),
        ConstInit::Scalar(0),
    ]);
    let mut mb = ModuleBuilder::new();
    mb.constant("c", ty, init);
    let m = mb.build();
    assert_eq!(print(&m), "const @c: {[f64; 2], bool} = {[nan, 0x7ff0000000000002], false}\n");
    assert_eq!(parse(&print(&m)), Ok(m));
}

#[test]
fn generated_modules_verify() {
    for seed in 0..300 {
        for m in [random_module(seed), random_lowered_module(seed)] {
            if let Err(e) = crate::verify(&m) {
                panic!("seed {seed}: {e}\n{}", print(&m));
            }
        }
    }
}

#[test]
fn generator_covers_every_form() {
    let mut ops = std::collections::BTreeSet::new();
    let mut stmts = std::collections::BTreeSet::new();
    let mut consts = std::collections::BTreeSet::new();
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..200 {
        for m in [random_module(seed), random_lowered_module(seed)] {
            kinds.insert(format!("{:?}", m.stage));
            for c in m.consts.values() {
                fn leaves(i: &ConstInit, out: &mut std::collections::BTreeSet<String>) {
                    match i {
                        ConstInit::Array(xs) | ConstInit::Struct(xs) => xs.iter().for_each(|x| leaves(x, out)),
                        ConstInit::Ref(r) => {
                            out.insert(format!("{r:?}").split(['(', ' ']).next().unwrap_or_default().to_string());
                        }
                        ConstInit::Scalar(_) => {}
                    }
                }
                leaves(&c.init, &mut consts);
            }
            for f in m.funcs.values() {
                kinds.insert(format!("{:?}", f.kind));
                crate::ir::walk_stmts(&f.body, &mut |s| {
                    let d = format!("{:?}", s.kind);
                    stmts.insert(d.split(['(', ' ', '{']).next().unwrap_or_default().to_string());
                    if let StmtKind::Let { op, .. } = &s.kind {
                        let d = format!("{op:?}");
                        ops.insert(d.split(['(', ' ', '{']).next().unwrap_or_default().to_string());
                    }
                });
            }
        }
    }
    // The 18 of ALL_FORMS plus Ref, WordPtr, State, BakedWord, Patch.
    assert_eq!(ops.len(), 23, "{ops:?}");
    assert_eq!(stmts.len(), 11, "{stmts:?}");
    // Every kind of host reference in constants, every stage and function kind.
    assert_eq!(consts.len(), 4, "{consts:?}");
    assert_eq!(kinds.len(), 7, "{kinds:?}");
}

/// Mutates `text` with one of a few byte- and token-level edits.
fn mutate(text: &str, rng: &mut Rng) -> String {
    const PIECES: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ";",
        ":",
        ",",
        "-",
        "->",
        "@",
        "%",
        ".",
        "0x",
        "v9",
        "v0",
        "1e",
        "9999999999999999999999",
        "\n",
        " ",
        "loop {",
        "if v1 {",
        "ptr<",
        "é",
        "\u{0}",
        "const",
        "return",
        "atomic.",
        "nan",
        "-inf",
        "[u32; 4]",
    ];
    let mut chars: Vec<char> = text.chars().collect();
    let len = chars.len().max(1);
    let pos = rng.below(len + 1).min(chars.len());
    match rng.below(6) {
        0 => {
            let end = (pos + 1 + rng.below(8)).min(chars.len());
            chars.drain(pos..end);
        }
        1 => {
            let piece = PIECES[rng.below(PIECES.len())];
            chars.splice(pos..pos, piece.chars());
        }
        2 => {
            let end = (pos + 1 + rng.below(40)).min(chars.len());
            let dup: Vec<char> = chars[pos..end].to_vec();
            chars.splice(pos..pos, dup);
        }
        3 => {
            let other = rng.below(len).min(chars.len().saturating_sub(1));
            if !chars.is_empty() && pos < chars.len() {
                chars.swap(pos, other);
            }
        }
        4 => {
            // Swap two whitespace-separated tokens.
            let mut words: Vec<&str> = text.split(' ').collect();
            if words.len() > 1 {
                let (a, b) = (rng.below(words.len()), rng.below(words.len()));
                words.swap(a, b);
            }
            return words.join(" ");
        }
        _ => {
            if pos < chars.len() {
                chars[pos] = char::from(rng.below(128) as u8);
            }
        }
    }
    chars.into_iter().collect()
}

/// Parses without panicking; a text that parses must print canonically.
fn check_total(src: &str) {
    if let Ok(m) = parse(src) {
        let printed = print(&m);
        assert_eq!(parse(&printed).as_ref(), Ok(&m), "reparse of:\n{printed}");
        assert_eq!(print(&parse(&printed).unwrap()), printed);
    }
}

#[test]
fn truncation_at_every_char_boundary_never_panics() {
    for (i, _) in ALL_FORMS.char_indices().chain([(ALL_FORMS.len(), ' ')]) {
        check_total(&ALL_FORMS[..i]);
    }
    for text in [print(&random_module(7)), print(&random_lowered_module(8)), HOST_FORMS.to_string()] {
        for (i, _) in text.char_indices() {
            check_total(&text[..i]);
        }
    }
}

#[test]
fn mutations_never_panic() {
    let mut rng = Rng::new(0x5eed);
    let texts = [
        ALL_FORMS.to_string(),
        SAXPY.to_string(),
        HOST_FORMS.to_string(),
        print(&random_module(1)),
        print(&random_module(2)),
        print(&random_lowered_module(4)),
    ];
    for round in 0..3000 {
        let mut t = texts[round % texts.len()].clone();
        for _ in 0..1 + rng.below(4) {
            t = mutate(&t, &mut rng);
        }
        check_total(&t);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn print_parse_round_trips(seed in any::<u64>()) {
        let m = random_module(seed);
        let text = print(&m);
        let parsed = parse(&text);
        prop_assert_eq!(parsed.as_ref(), Ok(&m), "text:\n{}", text);
        prop_assert_eq!(print(&parsed.unwrap()), text);
        let m = random_lowered_module(seed);
        let text = print(&m);
        let parsed = parse(&text);
        prop_assert_eq!(parsed.as_ref(), Ok(&m), "text:\n{}", text);
        prop_assert_eq!(print(&parsed.unwrap()), text);
    }

    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC{0,200}") {
        check_total(&s);
    }

    #[test]
    fn token_soup_never_panics(words in proptest::collection::vec(
        proptest::sample::select(vec![
            "kernel", "fn", "const", "@k", "@c", "(", ")", "{", "}", "[", "]", ";", ":", "=", ",", "->", "-",
            "v0", "v1", "%x", "u32", "f32", "ptr", "<", ">", "global", "local %x: u32", "loop", "if", "else",
            "return", "store", "load", "1", "1.5", "0xff", "nan", "inf", "add", "\n", "true", "call", "addr",
            "ref", ":a.b", "\"s\\n\"", "global", "+", "8", "word", "patch", "a$b", "state", ".rng_seed", "exit",
            "import", "lowered", "bake", "wordptr",
        ]),
        0..60,
    )) {
        check_total(&words.join(" "));
    }
}

#[test]
fn docs_examples_are_canonical() {
    let doc = include_str!("../../../../docs/ir.md");
    let mut blocks = 0;
    for (i, block) in doc.split("```").enumerate() {
        if i % 2 == 0 || block.starts_with("\nmodule") {
            continue;
        }
        let text: String =
            block.trim_start_matches('\n').lines().filter(|l| !l.starts_with(';')).map(|l| format!("{l}\n")).collect();
        let m = canonical(&text);
        assert!(crate::verify(&m).is_ok(), "{text}: {:?}", crate::verify(&m).err().map(|e| e.to_string()));
        blocks += 1;
    }
    assert_eq!(blocks, 7);
}

/// The host-object forms of the source stage, in canonical text.
const HOST_FORMS: &str = "\
const @msg: [u32; 2] = [1, 2]

const @boxed: {word, [word; 2], u32} = {ref :tag.v2, [ref \"a\\\"b\\\\c\\n\\r\\t\\0'é\\u{301}\\u{7f}\", ref global heap + 16], 7}

const @inner: {word, u32} = {ref @msg, 3}

import fn @lib_hash(v0: word, v1: u64) -> u64

import fn @lib_log(v0: word)

kernel @host(v0: ptr<global, u64>) {
    v1: word = ref :foo
    v2: word = ref :a.b_c.9
    v3: word = ref @msg
    v4: word = ref \"division by zero\"
    v5: word = ref global exc
    v6: word = ref global heap + 8
    v7: ptr<global, [u32; 2]> = wordptr v3
    v8: ptr<global, word> = state.reloc_table
    v9: ptr<global, u64> = state.exception
    v10: u64 = state.rng_seed
    v11: u64 = call @lib_hash(v1, v10)
    call @lib_log(v4)
    v12: bool = eq v1, v2
    if v12 {
        exit
    }
    return
}
";

#[test]
fn host_forms_are_canonical() {
    let m = canonical(HOST_FORMS);
    assert!(crate::verify(&m).is_ok(), "{:?}", crate::verify(&m).err().map(|e| e.to_string()));
    use crate::ir::{FuncKind, HostRef, Stage};
    assert_eq!(m.stage, Stage::Source);
    let c = &m.consts[m.const_by_name("boxed").unwrap()];
    let ConstInit::Struct(items) = &c.init else { panic!("not a struct") };
    assert_eq!(items[0], ConstInit::Ref(HostRef::Symbol("tag.v2".into())));
    let ConstInit::Array(words) = &items[1] else { panic!("not an array") };
    assert_eq!(words[0], ConstInit::Ref(HostRef::Str("a\"b\\c\n\r\t\0'é\u{301}\u{7f}".into())));
    assert_eq!(words[1], ConstInit::Ref(HostRef::Global { name: "heap".into(), offset: 16 }));
    let inner = &m.consts[m.const_by_name("inner").unwrap()];
    let msg = m.const_by_name("msg").unwrap();
    assert_eq!(inner.init, ConstInit::Struct(vec![ConstInit::Ref(HostRef::Value(msg)), ConstInit::Scalar(3)]));
    let f = &m.funcs[m.func_by_name("lib_hash").unwrap()];
    assert_eq!(f.kind, FuncKind::Import);
    assert!(f.body.is_empty());
    let k = &m.funcs[m.func_by_name("host").unwrap()];
    let ops: Vec<&Op> =
        k.body.iter().filter_map(|s| if let StmtKind::Let { op, .. } = &s.kind { Some(op) } else { None }).collect();
    assert_eq!(ops[0], &Op::Ref(HostRef::Symbol("foo".into())));
    assert_eq!(ops[2], &Op::Ref(HostRef::Value(msg)));
    assert_eq!(ops[4], &Op::Ref(HostRef::Global { name: "exc".into(), offset: 0 }));
    // Any Rust `{:?}` text of a string parses back to the string.
    for s in ["", "\u{0}\u{1b}\u{200b}\u{feff}\u{10ffff}", "tab\there", "'quote'", "\u{301}x", "日本語 🚀"] {
        let src = format!("kernel @k() {{\n    v0: word = ref {s:?}\n    return\n}}\n");
        let m = canonical(&src);
        let k = m.funcs.values().next().unwrap();
        assert_eq!(k.body[0].kind, StmtKind::Let { result: Value::from_u32(0), op: Op::Ref(HostRef::Str(s.into())) });
    }
}

#[test]
fn lowered_forms_are_canonical() {
    use crate::ir::{Stage, Strategy};
    let bake = "lowered bake\n\nconst @b: {word, u32} = {0x00007f0012345678, 1}\n\nkernel @k() {\n    v0: word = word 0x00007f0000001000\n    v1: ptr<global, u32> = wordptr v0\n    return\n}\n";
    let m = canonical(bake);
    assert_eq!(m.stage, Stage::Lowered(Strategy::Bake));
    assert!(crate::verify(&m).is_ok(), "{:?}", crate::verify(&m).err().map(|e| e.to_string()));
    let patch =
        "lowered patch\n\nkernel @k() {\n    v0: word = patch k$sym$foo_0\n    v1: word = patch __9$$\n    return\n}\n";
    let m = canonical(patch);
    assert_eq!(m.stage, Stage::Lowered(Strategy::Patch));
    let k = m.funcs.values().next().unwrap();
    assert_eq!(k.body[0].kind, StmtKind::Let { result: Value::from_u32(0), op: Op::Patch("k$sym$foo_0".into()) });
    assert!(crate::verify(&m).is_ok(), "{:?}", crate::verify(&m).err().map(|e| e.to_string()));
    let m = canonical("lowered table\n");
    assert_eq!(m.stage, Stage::Lowered(Strategy::Table));
    // `word` also reads decimal.
    let m = ok("lowered bake\nkernel @k() {\n    v0: word = word 18446744073709551615\n    return\n}\n");
    assert_eq!(
        m.funcs.values().next().unwrap().body[0].kind,
        StmtKind::Let { result: Value::from_u32(0), op: Op::BakedWord(u64::MAX) }
    );
}

#[test]
fn host_form_errors() {
    fails("kernel @k() {\n}\nlowered bake\n", 3, 1, "`lowered ...` may only be the first item");
    fails("lowered fast\n", 1, 9, "expected a strategy (`bake`, `patch` or `table`), found `fast`");
    fails("import kernel @k()\n", 1, 8, "expected `fn` after `import`");
    fails("import fn @f() -> u32 {\n}\n", 1, 23, "an `import fn` has no body");
    fails(
        "kernel @k() {\n    v0: word = ref : foo\n}\n",
        2,
        22,
        "expected a symbol name ([A-Za-z0-9_.]+) right after `:`, found `foo`",
    );
    fails(
        "kernel @k() {\n    v0: word = ref foo\n}\n",
        2,
        20,
        "expected `:symbol`, `@constant`, a string or `global name` after `ref`, found `foo`",
    );
    fails("kernel @k() {\n    v0: word = ref @nope\n}\n", 2, 21, "unknown constant @nope");
    fails("kernel @k() {\n    v0: word = ref @k\n}\n", 2, 21, "@k is a function, not a constant");
    fails("const @c: word = ref @zz\n", 1, 23, "unknown constant @zz");
    fails("kernel @k() {\n    v0: word = ref \"abc\n}\n", 2, 20, "string literal not closed on its line");
    fails("kernel @k() {\n    v0: word = ref \"a\\qb\"\n}\n", 2, 22, "unknown escape `\\q`");
    fails("kernel @k() {\n    v0: word = ref \"a\\u{d800}\"\n}\n", 2, 22, "malformed `\\u{...}` escape");
    fails("kernel @k() {\n    v0: word = ref \"a\\u{}\"\n}\n", 2, 22, "malformed `\\u{...}` escape");
    fails("kernel @k() {\n    v0: word = ref global\n}\n", 3, 1, "expected a global's name ([A-Za-z0-9_]+), found `}`");
    fails("kernel @k() {\n    v0: word = ref global g + x\n}\n", 2, 31, "expected a byte offset after `+`, found `x`");
    fails("kernel @k() {\n    v0: word = ref global g + 99999999999999999999\n}\n", 2, 31, "does not fit u64");
    fails(
        "kernel @k() {\n    v0: word = state.heap\n}\n",
        2,
        22,
        "expected `reloc_table`, `exception` or `rng_seed` after `state.`",
    );
    fails("kernel @k() {\n    v0: word = word 0x1ffffffffffffffff\n}\n", 2, 21, "does not fit 64 bits");
    fails("kernel @k() {\n    v0: word = word -1\n}\n", 2, 21, "expected a word (hex or decimal) after `word`");
    fails("kernel @k() {\n    v0: word = patch %x\n}\n", 2, 22, "expected a patch name");
    fails("kernel @k() {\n    v0: word = const $\n}\n", 2, 22, "unexpected character `$`");
}

#[test]
fn types_parse_back_from_their_display() {
    for src in ["u32", "word", "ptr<global, f32>", "ptr<const, {word, u32}>", "[i64; 4]", "{bool, [f64; 2]}"] {
        let ty = crate::parse_type(src).expect(src);
        assert_eq!(ty.to_string(), src);
    }
    assert!(crate::parse_type("ptr<global, f32> x").is_err());
    assert!(crate::parse_type("nope").is_err());
    assert!(crate::parse_type("").is_err());
}

#[test]
fn length_parameters_print_and_parse() {
    let m = canonical(
        "kernel @k(v0: ptr<global, f32>, v1: u32 len(v0), v2: u32, v3: ptr<global, i64>, v4: u32 len(v3)) {\n    return\n}\n",
    );
    let f = &m.funcs[<crate::ir::FuncId as crate::entity::EntityRef>::new(0)];
    let v = <Value as crate::entity::EntityRef>::new;
    assert_eq!(f.len_of(v(1)), Some(v(0)));
    assert_eq!(f.len_of(v(4)), Some(v(3)));
    assert_eq!(f.len_of(v(2)), None);
    fails("kernel @k(v0: u32 len(v1), v1: ptr<global, f32>) {\n    return\n}\n", 1, 23, "names no earlier parameter");
    fails("kernel @k(v0: ptr<global, f32>, v1: u32 len v0) {\n    return\n}\n", 1, 45, "expected `(` after `len`");
}
