//! Relocation lowering on small builder-made kernels, under every strategy.

use relok_compiler::lower::{LowerError, Lowered, lower, site_table};
use relok_compiler::reloc::{Record, Site, Target, ValueKey, record_name, record_name_interior};
use relok_ir::builder::ModuleBuilder;
use relok_ir::{
    AddrSpace, ConstInit, FuncKind, HostRef, Module, Op, Scalar, Stage, StateField, StmtKind, Strategy, Type,
    walk_stmts,
};

fn word() -> Type {
    Type::Scalar(Scalar::Word)
}
fn gptr(s: Scalar) -> Type {
    Type::ptr(AddrSpace::Global, Type::Scalar(s))
}

/// A resolver for one fake device: distinct identities give distinct words.
fn resolve(t: &Target) -> Result<u64, String> {
    Ok(match t {
        Target::Symbol(s) if s == "foo" => 0x1000,
        Target::Symbol(s) if s == "bar" => 0x2000,
        Target::Symbol(s) => return Err(format!("unknown symbol {s}")),
        Target::Value(k) => 0x3_0000 + u64::from(k.0[0]),
        Target::Global { offset, .. } => 0x4_0000 + offset,
    })
}

/// Verifies a lowered module, and checks that its text parses back to it.
fn check_verifies(m: &Module) {
    if let Err(errors) = relok_ir::verify(m) {
        panic!("lowered module does not verify: {errors}\n{}", relok_ir::print(m));
    }
    assert_eq!(relok_ir::parse(&relok_ir::print(m)).as_ref(), Ok(m), "lowered text does not round-trip");
}

/// `kernel @k(v0: word, v1: ptr<global, u32>)`: 1 if v0 is :foo, 2 if :bar.
fn symbol_kernel() -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("k");
    let arg = k.param(word());
    let out = k.param(gptr(Scalar::U32));
    let foo_word = k.op(Op::Ref(HostRef::Symbol("foo".into())));
    let is_foo = k.eq(arg, foo_word);
    k.if_else(
        is_foo,
        |k| {
            let one = k.u32(1);
            k.store(out, None, one);
        },
        |k| {
            let bar = k.op(Op::Ref(HostRef::Symbol("bar".into())));
            let is_bar = k.eq(arg, bar);
            k.if_(is_bar, |k| {
                let two = k.u32(2);
                k.store(out, None, two);
            });
        },
    );
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    relok_ir::verify(&m).unwrap();
    m
}

/// Reads `ref @table` through `wordptr`, and writes the word of
/// `global relok_counter + 8` to `out[1]`.
fn table_kernel() -> Module {
    let mut mb = ModuleBuilder::new();
    let table = mb.constant(
        "table",
        Type::array(Scalar::U32.into(), 4),
        ConstInit::Array((0..4).map(|i| ConstInit::Scalar(10 + i)).collect()),
    );
    let mut k = mb.kernel("k");
    let out = k.param(gptr(Scalar::U64));
    let i = k.param(Scalar::U32);
    let w = k.op(Op::Ref(HostRef::Value(table)));
    let p = k.op_typed(Op::WordPtr(w), gptr(Scalar::U32));
    let x = k.load(p, Some(i));
    let x = k.convert(x, Scalar::U64);
    k.store(out, None, x);
    let g = k.op(Op::Ref(HostRef::Global { name: "relok_counter".into(), offset: 8 }));
    let g = k.bitcast(g, Scalar::U64);
    let one = k.u32(1);
    k.store(out, Some(one), g);
    let f = k.finish().unwrap();
    mb.add(f);
    let m = mb.build();
    relok_ir::verify(&m).unwrap();
    m
}

/// `const @boxed: {u32, word} = {7, ref :foo}` read via addr/field/load.
fn box_kernel() -> Module {
    let mut mb = ModuleBuilder::new();
    let boxed = mb.constant(
        "boxed",
        Type::Struct(vec![Scalar::U32.into(), word()]),
        ConstInit::Struct(vec![ConstInit::Scalar(7), ConstInit::Ref(HostRef::Symbol("foo".into()))]),
    );
    let mut k = mb.kernel("k");
    let out = k.param(gptr(Scalar::U64));
    let p = k.const_addr(boxed);
    let f1 = k.field(p, 1);
    let w = k.load(f1, None);
    let w = k.bitcast(w, Scalar::U64);
    k.store(out, None, w);
    let f0 = k.field(p, 0);
    let n = k.load(f0, None);
    let n = k.convert(n, Scalar::U64);
    let one = k.u32(1);
    k.store(out, Some(one), n);
    let f = k.finish().unwrap();
    mb.add(f);
    mb.build()
}

fn plain_kernel() -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("plain");
    let out = k.param(gptr(Scalar::U32));
    let x = k.u32(5);
    k.store(out, None, x);
    let f = k.finish().unwrap();
    mb.add(f);
    mb.build()
}

fn lower_all(m: &Module, kernel: &str, s: Strategy) -> Lowered {
    let l = lower(m, kernel, s, Some(&resolve)).unwrap_or_else(|e| panic!("{s}: {e}"));
    assert_eq!(l.module.stage, Stage::Lowered(s));
    check_verifies(&l.module);
    // Deterministic.
    let again = lower(m, kernel, s, Some(&resolve)).unwrap();
    assert_eq!(relok_ir::print(&l.module), relok_ir::print(&again.module));
    assert_eq!(l.manifest.records(), again.manifest.records());
    assert_eq!(l.values, again.values);
    // No reference survives.
    for f in l.module.funcs.values() {
        walk_stmts(&f.body, &mut |s| assert!(!matches!(&s.kind, StmtKind::Let { op: Op::Ref(_), .. })));
    }
    l
}

fn ops(l: &Lowered) -> Vec<Op> {
    let k = &l.module.funcs[l.module.func_by_name(&l.kernel).unwrap()];
    let mut out = Vec::new();
    walk_stmts(&k.body, &mut |s| {
        if let StmtKind::Let { op, .. } = &s.kind {
            out.push(op.clone());
        }
    });
    out
}

/// The records of the table loads, in code order.
fn table_loads(l: &Lowered) -> Vec<Record> {
    let k = &l.module.funcs[l.module.func_by_name(&l.kernel).unwrap()];
    let mut table = vec![false; k.values.len()];
    let mut consts = vec![None; k.values.len()];
    let mut out = Vec::new();
    walk_stmts(&k.body, &mut |s| {
        let StmtKind::Let { result, op } = &s.kind else { return };
        match op {
            Op::State(StateField::RelocTable) => table[result.as_u32() as usize] = true,
            Op::Const(b) => consts[result.as_u32() as usize] = Some(*b),
            Op::Load { ptr, index: Some(i) } if table[ptr.as_u32() as usize] => {
                let rank = consts[i.as_u32() as usize].expect("table index is a constant") as usize;
                out.push(l.manifest.records()[rank].clone());
            }
            _ => {}
        }
    });
    out
}

fn sym(s: &str) -> Target {
    Target::Symbol(s.into())
}

#[test]
fn symbol_compare_every_strategy() {
    let m = symbol_kernel();
    let foo = record_name("k", &sym("foo"));
    let bar = record_name("k", &sym("bar"));
    for s in Strategy::ALL {
        let l = lower_all(&m, "k", s);
        let names: Vec<&str> = l.manifest.records().iter().map(Record::name).collect();
        assert_eq!(names, [bar.as_str(), foo.as_str()], "sorted by name");
        assert!(l.manifest.records().iter().all(|r| r.site() == Site::Slot));
        assert!(l.values.is_empty());
        match s {
            Strategy::Bake => {
                let words: Vec<u64> =
                    ops(&l).iter().filter_map(|o| if let Op::BakedWord(w) = o { Some(*w) } else { None }).collect();
                assert_eq!(words, [0x1000, 0x2000]);
                assert!(site_table(&l).slots.is_empty());
            }
            Strategy::Patch => {
                let names: Vec<String> =
                    ops(&l).iter().filter_map(|o| if let Op::Patch(n) = o { Some(n.clone()) } else { None }).collect();
                assert_eq!(names, [foo.clone(), bar.clone()]);
                assert_eq!(site_table(&l).slots.len(), 2);
            }
            Strategy::Table => {
                let loads = table_loads(&l);
                assert_eq!(loads.iter().map(|r| r.target().clone()).collect::<Vec<_>>(), [sym("foo"), sym("bar")]);
                let text = relok_ir::print(&l.module);
                assert!(text.starts_with("lowered table\n"), "{text}");
                // foo has rank 1, bar rank 0.
                assert!(
                    text.contains(
                        "v2: ptr<global, word> = state.reloc_table\n    v3: u32 = const 1\n    v4: word = load v2[v3]"
                    ),
                    "{text}"
                );
            }
        }
    }
}

#[test]
fn value_and_global_every_strategy() {
    let m = table_kernel();
    let bytes: Vec<u8> = [10u32, 11, 12, 13].iter().flat_map(|x| x.to_le_bytes()).collect();
    let key = ValueKey::of("[u32; 4]", &bytes);
    let glob = Target::Global { name: "relok_counter".into(), offset: 8 };
    for s in Strategy::ALL {
        let l = lower_all(&m, "k", s);
        let targets: Vec<Target> = l.manifest.records().iter().map(|r| r.target().clone()).collect();
        assert_eq!(targets, [glob.clone(), Target::Value(key)], "glob sorts before val");
        assert_eq!(l.values.len(), 1);
        assert_eq!(l.values[0].key, key);
        assert_eq!(l.values[0].type_tag, "[u32; 4]");
        assert_eq!(l.values[0].bytes, bytes);
        // The value's constant is not addressed: it is not in the output.
        assert!(l.module.consts.is_empty());
        match s {
            Strategy::Bake => {
                let words: Vec<u64> =
                    ops(&l).iter().filter_map(|o| if let Op::BakedWord(w) = o { Some(*w) } else { None }).collect();
                assert_eq!(words, [resolve(&Target::Value(key)).unwrap(), 0x4_0008]);
            }
            Strategy::Patch => {
                assert!(ops(&l).contains(&Op::Patch(record_name("k", &Target::Value(key)))));
                assert!(ops(&l).contains(&Op::Patch(record_name("k", &glob))));
            }
            Strategy::Table => {
                let loads: Vec<Target> = table_loads(&l).iter().map(|r| r.target().clone()).collect();
                assert_eq!(loads, [Target::Value(key), glob.clone()]);
            }
        }
    }
}

#[test]
fn boxed_constant_every_strategy() {
    let m = box_kernel();
    let agg = record_name_interior("k", "boxed");
    for s in Strategy::ALL {
        let l = lower_all(&m, "k", s);
        let recs = l.manifest.records();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].name(), agg);
        assert_eq!(recs[0].site(), Site::Interior { offset: 8 });
        assert_eq!(recs[0].target(), &sym("foo"));
        assert_eq!(l.module.consts.len(), 1);
        let c = l.module.consts.values().next().unwrap();
        let word_leaf = |c: &relok_ir::ConstDecl| match &c.init {
            ConstInit::Struct(items) => items[1].clone(),
            other => panic!("{other:?}"),
        };
        match s {
            Strategy::Bake => {
                assert_eq!(c.name, "boxed");
                assert_eq!(word_leaf(c), ConstInit::Scalar(0x1000));
            }
            Strategy::Patch => {
                assert_eq!(c.name, agg, "renamed to its record name");
                assert_eq!(word_leaf(c), ConstInit::Scalar(0));
                assert_eq!(site_table(&l).aggregates.get(&agg), Some(&16));
            }
            Strategy::Table => {
                assert_eq!(word_leaf(c), ConstInit::Scalar(0));
                assert_eq!(c.ty, Type::Struct(vec![Scalar::U32.into(), Scalar::U64.into()]), "no words in constants");
                let k = &l.module.funcs[l.module.func_by_name("k").unwrap()];
                let copy = k.var_by_name("relok_copy_boxed").expect("local copy");
                assert_eq!(k.vars[copy].ty, m.consts.values().next().unwrap().ty);
                assert_eq!(table_loads(&l), recs);
                // Every pointer into the box is local now; the only `addr @boxed` is the copy's source.
                let mut const_addrs = 0;
                let mut var_addrs = 0;
                walk_stmts(&k.body, &mut |s| {
                    if let StmtKind::Let { result, op } = &s.kind {
                        match op {
                            Op::ConstAddr(_) => const_addrs += 1,
                            Op::VarAddr(_) => var_addrs += 1,
                            Op::Field { .. } => {}
                            _ => return,
                        }
                        let _ = result;
                    }
                });
                assert_eq!(const_addrs, 1);
                assert_eq!(var_addrs, 2, "the copy's destination and the kernel's own");
                let text = relok_ir::print(&l.module);
                assert!(text.contains("local %relok_copy_boxed: {u32, word}"), "{text}");
                assert!(!text.contains("ptr<const, word>"), "{text}");
                assert!(text.contains("ptr<local, word> = field"), "{text}");
            }
        }
    }
}

#[test]
fn relocation_free_kernel() {
    let m = plain_kernel();
    for s in Strategy::ALL {
        let l = lower_all(&m, "plain", s);
        assert!(l.manifest.is_empty());
        assert!(l.values.is_empty());
        assert!(!ops(&l).contains(&Op::State(StateField::RelocTable)));
        assert_eq!(relok_ir::print(&l.module), format!("lowered {s}\n\n{}", relok_ir::print(&m)));
    }
}

#[test]
fn bake_needs_a_resolver_and_reports_its_errors() {
    let m = symbol_kernel();
    assert!(matches!(lower(&m, "k", Strategy::Bake, None), Err(LowerError::MissingResolver)));
    let failing = |t: &Target| -> Result<u64, String> { Err(format!("nope {t}")) };
    let e = lower(&m, "k", Strategy::Bake, Some(&failing)).unwrap_err();
    assert!(matches!(e, LowerError::Resolve { .. }), "{e}");
}

#[test]
fn refs_in_device_functions_must_be_inlined() {
    let mut mb = ModuleBuilder::new();
    let mut f = mb.device_fn("tag", Some(word()));
    let w = f.op(Op::Ref(HostRef::Symbol("foo".into())));
    f.ret(Some(w));
    let func = f.finish().unwrap();
    let tag = mb.add(func);
    let mut k = mb.kernel("k");
    let out = k.param(gptr(Scalar::U64));
    let w = k.call(tag, vec![]);
    let w = k.bitcast(w, Scalar::U64);
    k.store(out, None, w);
    let kf = k.finish().unwrap();
    mb.add(kf);
    let m = mb.build();
    let e = lower(&m, "k", Strategy::Table, None).unwrap_err();
    assert!(matches!(&e, LowerError::RefInDeviceFunction { function, .. } if function == "tag"), "{e}");
    assert!(e.to_string().contains("@tag"));
}

#[test]
fn callees_without_refs_come_along_and_others_stay_behind() {
    let mut mb = ModuleBuilder::new();
    let mut f = mb.device_fn("twice", Some(Scalar::U32.into()));
    let x = f.param(Scalar::U32);
    let y = f.add(x, x);
    f.ret(Some(y));
    let func = f.finish().unwrap();
    let twice = mb.add(func);
    let mut f = mb.device_fn("unused", None);
    f.ret(None);
    let func = f.finish().unwrap();
    mb.add(func);
    let mut k = mb.kernel("k");
    let out = k.param(gptr(Scalar::U32));
    let s = k.op(Op::Ref(HostRef::Str("boom".into())));
    let s = k.bitcast(s, Scalar::U64);
    let s = k.convert(s, Scalar::U32);
    let v = k.call(twice, vec![s]);
    k.store(out, None, v);
    let kf = k.finish().unwrap();
    mb.add(kf);
    let m = mb.build();
    for s in Strategy::ALL {
        let l = lower_all(&m, "k", s);
        let names: Vec<&str> = l.module.funcs.values().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["twice", "k"]);
        assert_eq!(l.module.funcs.values().next().unwrap().kind, FuncKind::Device);
        assert_eq!(l.values.len(), 1);
        assert_eq!(l.values[0].type_tag, "str");
        assert_eq!(l.values[0].bytes, b"boom");
        assert_eq!(l.manifest.records()[0].target(), &Target::Value(ValueKey::of("str", b"boom")));
    }
}

#[test]
fn not_a_kernel_and_not_source() {
    let m = symbol_kernel();
    assert!(matches!(lower(&m, "nope", Strategy::Patch, None), Err(LowerError::NoSuchKernel(_))));
    let l = lower(&m, "k", Strategy::Patch, None).unwrap();
    assert!(matches!(lower(&l.module, "k", Strategy::Patch, None), Err(LowerError::NotSource(Strategy::Patch))));
}
