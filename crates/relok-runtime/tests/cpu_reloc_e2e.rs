//! One source kernel that refers to host objects (a symbol slot, a value
//! dereferenced with `wordptr`, a symbol inside a constant), lowered with
//! each strategy by `relok_compiler::lower`, delivered by a `Session` and run
//! on the cpu device: every strategy gives the same words. And a kernel
//! exception through the runtime library's `@relok_throw`, turned back into
//! its message text by the session.

use relok_compiler::lower::lower;
use relok_compiler::reloc::Target;
use relok_ir::builder::ModuleBuilder;
use relok_ir::{AddrSpace, Axis, ConstInit, HostRef, Module, Op, Scalar, Strategy, Type};
use relok_runtime::cpu::LaunchState;

use relok_runtime::{CpuDevice, DevicePtr, KernelArg, LaunchConfig, LaunchError, Session};

fn gptr(t: impl Into<Type>) -> Type {
    Type::ptr(AddrSpace::Global, t.into())
}

fn word() -> Type {
    Type::Scalar(Scalar::Word)
}

fn download_u64(dev: &CpuDevice, p: DevicePtr, n: usize) -> Vec<u64> {
    let b = dev.read(p, 8 * n as u64).unwrap();
    b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn download_u32(dev: &CpuDevice, p: DevicePtr, n: usize) -> Vec<u32> {
    let b = dev.read(p, 4 * n as u64).unwrap();
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

const TABLE: [u32; 4] = [10, 20, 30, 40];

/// `kernel @k(arg: word, out: ptr<global, word>, out32: ptr<global, u32>)`:
/// out = [ref :foo, @boxed.0]; out32 = [arg == ref :foo, (wordptr ref @tbl)[2], @boxed.1].
fn source() -> Module {
    let mut mb = ModuleBuilder::new();
    let tbl = mb.constant(
        "tbl",
        Type::array(Scalar::U32.into(), 4),
        ConstInit::Array(TABLE.iter().map(|&x| ConstInit::Scalar(x.into())).collect()),
    );
    let boxed = mb.constant(
        "boxed",
        Type::Struct(vec![word(), Scalar::U32.into()]),
        ConstInit::Struct(vec![ConstInit::Ref(HostRef::Symbol("foo".into())), ConstInit::Scalar(7)]),
    );
    let mut k = mb.kernel("k");
    let arg = k.param(word());
    let out = k.param(gptr(word()));
    let out32 = k.param(gptr(Scalar::U32));
    let sym = k.op(Op::Ref(HostRef::Symbol("foo".into())));
    let (i0, i1, i2) = (k.u32(0), k.u32(1), k.u32(2));
    k.store(out, Some(i0), sym);
    let same = k.eq(arg, sym);
    let same = k.convert(same, Scalar::U32);
    k.store(out32, Some(i0), same);
    let t = k.op(Op::Ref(HostRef::Value(tbl)));
    let p = k.op_typed(Op::WordPtr(t), gptr(Scalar::U32));
    let x = k.load(p, Some(i2));
    k.store(out32, Some(i1), x);
    let b = k.const_addr(boxed);
    let tag = k.field(b, 0);
    let tag = k.load(tag, None);
    k.store(out, Some(i1), tag);
    let n = k.field(b, 1);
    let n = k.load(n, None);
    k.store(out32, Some(i2), n);
    let f = k.finish().unwrap();
    mb.add(f);
    mb.build()
}

fn run(strategy: Strategy) {
    let session = Session::new();
    let dev = CpuDevice::new(0);
    let m = source();
    relok_ir::verify(&m).unwrap();
    // Bake resolves during lowering, so the value must be known first.
    let tbl_bytes: Vec<u8> = TABLE.iter().flat_map(|x| x.to_le_bytes()).collect();
    let tbl_target = session.value("[u32; 4]", &tbl_bytes);
    let resolve = |t: &Target| session.resolve(&dev, t).map_err(|e| e.to_string());
    let lowered = lower(&m, "k", strategy, Some(&resolve)).unwrap();
    for v in &lowered.values {
        assert_eq!(Target::Value(v.key), session.value(&v.type_tag, &v.bytes));
    }
    assert!(lowered.values.iter().any(|v| Target::Value(v.key) == tbl_target));

    // The loader's delivery step (bake needs none: its words are in the code).
    let mut state = match strategy {
        Strategy::Bake => LaunchState::default(),
        _ => relok_runtime::cpu::deliver(&session, &dev, &lowered).unwrap().1,
    };
    state.rng_seed = 1;
    let foo_word = session.resolve(&dev, &session.symbol("foo")).unwrap();
    let (out, out32) = (dev.alloc(16).unwrap(), dev.alloc(12).unwrap());
    let loaded = dev.compile(&lowered.module, "k").unwrap();
    let args = [KernelArg::word(foo_word), KernelArg::Ptr(out), KernelArg::Ptr(out32)];
    dev.launch_loaded(&loaded, &LaunchConfig::default(), &args, &state)
        .unwrap_or_else(|e| panic!("{strategy}: {e}\n{}", relok_ir::print(&lowered.module)));
    assert_eq!(download_u64(&dev, out, 2), [foo_word, foo_word], "{strategy}");
    assert_eq!(download_u32(&dev, out32, 3), [1, 30, 7], "{strategy}");
}

#[test]
fn bake_delivers_words() {
    run(Strategy::Bake);
}

#[test]
fn patch_delivers_words() {
    run(Strategy::Patch);
}

#[test]
fn table_delivers_words() {
    run(Strategy::Table);
}

#[test]
fn relok_throw_reports_its_message() {
    let mut mb = ModuleBuilder::new();
    let throw = mb.import_fn("relok_throw", vec![word()], None);
    let mut k = mb.kernel("k");
    let at = k.param(Scalar::U32);
    let i = k.global_id(Axis::X);
    let hit = k.eq(i, at);
    k.if_(hit, |k| {
        let msg = k.op(Op::Ref(HostRef::Str("index out of range".into())));
        k.call_void(throw, vec![msg]);
    });
    let f = k.finish().unwrap();
    mb.add(f);
    let user = mb.build();
    let lib = relok_compiler::link::runtime_library().unwrap();
    let linked = relok_compiler::link::link(&user, &lib).unwrap();

    for strategy in Strategy::ALL {
        let session = Session::new();
        let dev = CpuDevice::new(0);
        session.value("str", b"index out of range");
        let resolve = |t: &Target| session.resolve(&dev, t).map_err(|e| e.to_string());
        let lowered = lower(&linked, "k", strategy, Some(&resolve)).unwrap();
        let state = match strategy {
            Strategy::Bake => LaunchState::default(),
            _ => relok_runtime::cpu::deliver(&session, &dev, &lowered).unwrap().1,
        };
        let err = dev
            .launch_with(&lowered.module, "k", &LaunchConfig::linear(2, 32), &[KernelArg::u32(37)], &state)
            .unwrap_err();
        let LaunchError::Exception { message_word, block, thread, .. } = err else { panic!("{strategy}: {err}") };
        assert_eq!((block, thread), ([1, 0, 0], [5, 0, 0]), "{strategy}");
        assert_eq!(
            session.value_at(&dev, message_word),
            Some(("str".to_owned(), b"index out of range".to_vec())),
            "{strategy}"
        );
        dev.launch_with(&lowered.module, "k", &LaunchConfig::linear(2, 32), &[KernelArg::u32(u32::MAX)], &state)
            .unwrap();
    }
}
