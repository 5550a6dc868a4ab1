//! The cpu device's side of relocation delivery (docs/design.md §3): baked words,
//! patch cells and patched constants, `wordptr`, the kernel state
//! (`reloc_table`, `rng_seed`, `exception`), kernel exceptions and `exit`.

use relok_ir::builder::{FunctionBuilder, ModuleBuilder};
use relok_ir::{
    AddrSpace, Axis, Builtin, ConstInit, Function, HostRef, Module, Op, Scalar, Stage, StateField, Strategy, Type,
};
use relok_runtime::cpu::{LaunchState, PatchCells};
use relok_runtime::{CpuDevice, DevicePtr, FaultKind, KernelArg, LaunchConfig, LaunchError};

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

fn upload_u64(dev: &CpuDevice, xs: &[u64]) -> DevicePtr {
    let p = dev.alloc(8 * xs.len() as u64).unwrap();
    dev.write(p, &xs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    p
}

fn finish(k: FunctionBuilder<'_>) -> Function {
    k.finish().unwrap()
}

fn lowered(mb: ModuleBuilder, s: Strategy) -> Module {
    let mut m = mb.build();
    m.stage = Stage::Lowered(s);
    m
}

/// `m`, after checking that the verifier accepts it.
fn verified(m: Module) -> Module {
    if let Err(e) = relok_ir::verify(&m) {
        panic!("{e}\n{}", relok_ir::print(&m));
    }
    m
}

/// `kernel @k(out: ptr<global, word>)` storing `words(k)` to `out[0..]`.
fn store_words(strategy: Strategy, words: impl FnOnce(&mut FunctionBuilder<'_>) -> Vec<relok_ir::Value>) -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("k");
    let out = k.param(gptr(word()));
    for (i, w) in words(&mut k).into_iter().enumerate() {
        let i = k.u32(i as u32);
        k.store(out, Some(i), w);
    }
    let f = finish(k);
    mb.add(f);
    lowered(mb, strategy)
}

#[test]
fn baked_word_is_the_immediate() {
    let dev = CpuDevice::new(0);
    let m = verified(store_words(Strategy::Bake, |k| {
        vec![k.op(Op::BakedWord(0x1234_5678_9abc_def0)), k.op(Op::BakedWord(7))]
    }));
    let out = dev.alloc(16).unwrap();
    dev.launch(&m, "k", &LaunchConfig::default(), &[KernelArg::Ptr(out)]).unwrap();
    assert_eq!(download_u64(&dev, out, 2), [0x1234_5678_9abc_def0, 7]);

    // `word` belongs to `lowered bake` only.
    let mut src = m.clone();
    src.stage = Stage::Source;
    let err = dev.launch(&src, "k", &LaunchConfig::default(), &[KernelArg::Ptr(out)]).unwrap_err();
    assert!(matches!(&err, LaunchError::InvalidModule { reason, .. } if reason.contains("`word`")), "{err}");
}

#[test]
fn patch_reads_the_cells_and_a_missing_cell_is_an_error() {
    let dev = CpuDevice::new(0);
    let m = verified(store_words(Strategy::Patch, |k| {
        vec![
            k.op(Op::Patch("relok$k$sym$foo".into())),
            k.op(Op::Patch("relok$k$sym$bar".into())),
            k.op(Op::Patch("relok$k$sym$foo".into())),
        ]
    }));
    let loaded = dev.compile(&m, "k").unwrap();
    assert_eq!(loaded.patch_cells().collect::<Vec<_>>(), ["relok$k$sym$foo", "relok$k$sym$bar"]);
    let out = dev.alloc(24).unwrap();
    let mut state = LaunchState {
        patch_cells: PatchCells::from_iter([("relok$k$sym$foo", 0xf00), ("relok$k$sym$bar", 0xba5)]),
        ..LaunchState::default()
    };
    state.patch_cells.set("unused", 1);
    dev.launch_loaded(&loaded, &LaunchConfig::default(), &[KernelArg::Ptr(out)], &state).unwrap();
    assert_eq!(download_u64(&dev, out, 3), [0xf00, 0xba5, 0xf00]);

    let state = LaunchState { patch_cells: PatchCells::from_iter([("relok$k$sym$bar", 1)]), ..LaunchState::default() };
    let err = dev.launch_with(&m, "k", &LaunchConfig::default(), &[KernelArg::Ptr(out)], &state).unwrap_err();
    assert_eq!(err, LaunchError::MissingPatchCell { kernel: "k".into(), name: "relok$k$sym$foo".into() });
    assert_eq!(err.to_string(), "kernel @k: patch cell relok$k$sym$foo was never written");

    // `patch` belongs to `lowered patch` only.
    let mut bake = m.clone();
    bake.stage = Stage::Lowered(Strategy::Bake);
    assert!(matches!(dev.compile(&bake, "k"), Err(LaunchError::InvalidModule { .. })));
}

#[test]
fn ref_never_reaches_the_device() {
    let dev = CpuDevice::new(0);
    let m = store_words(Strategy::Bake, |k| vec![k.op(Op::Ref(HostRef::Symbol("foo".into())))]);
    let err = dev.compile(&m, "k").unwrap_err();
    assert!(
        matches!(&err, LaunchError::InvalidModule { reason, .. } if reason.contains("lower the module first")),
        "{err}"
    );

    let mut mb = ModuleBuilder::new();
    mb.constant(
        "boxed",
        Type::Struct(vec![word(), Scalar::U32.into()]),
        ConstInit::Struct(vec![ConstInit::Ref(HostRef::Symbol("foo".into())), ConstInit::Scalar(1)]),
    );
    let k = mb.kernel("k");
    let f = finish(k);
    mb.add(f);
    let err = dev.compile(&mb.build(), "k").unwrap_err();
    assert!(
        matches!(&err, LaunchError::InvalidModule { reason, .. } if reason.contains("lower the module first")),
        "{err}"
    );
}

/// `kernel @k(out: ptr<global, u32>)`: `out[i] = (wordptr W)[i]` for the
/// global id `i`, where `W` is a baked word or the kernel's word argument.
fn value_table_kernel(baked: Option<u64>) -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("k");
    let w = match baked {
        Some(_) => None,
        None => Some(k.param(word())),
    };
    let out = k.param(gptr(Scalar::U32));
    let w = w.unwrap_or_else(|| k.op(Op::BakedWord(baked.unwrap_or(0))));
    let table = k.op_typed(Op::WordPtr(w), gptr(Scalar::U32));
    let i = k.global_id(Axis::X);
    let x = k.load(table, Some(i));
    k.store(out, Some(i), x);
    let f = finish(k);
    mb.add(f);
    lowered(mb, Strategy::Bake)
}

#[test]
fn wordptr_dereferences_a_value_on_the_device() {
    let dev = CpuDevice::new(0);
    let values: Vec<u32> = (0..256).map(|i| i * i + 3).collect();
    let table = dev.alloc(4 * 256).unwrap();
    dev.write(table, &values.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let cfg = LaunchConfig::linear(2, 128);

    let out = dev.alloc(4 * 256).unwrap();
    dev.launch(&verified(value_table_kernel(Some(table.0))), "k", &cfg, &[KernelArg::Ptr(out)]).unwrap();
    assert_eq!(download_u32(&dev, out, 256), values);

    let out = dev.alloc(4 * 256).unwrap();
    let m = verified(value_table_kernel(None));
    dev.launch(&m, "k", &cfg, &[KernelArg::word(table.0), KernelArg::Ptr(out)]).unwrap();
    assert_eq!(download_u32(&dev, out, 256), values);

    // A word of another device (or a stale one) points nowhere here.
    let other = CpuDevice::new(1);
    let out2 = other.alloc(4 * 256).unwrap();
    let err = other.launch(&m, "k", &cfg, &[KernelArg::word(table.0), KernelArg::Ptr(out2)]).unwrap_err();
    assert!(
        matches!(err, LaunchError::Fault { kind: FaultKind::OutOfBounds { space: AddrSpace::Global, .. }, .. }),
        "{err}"
    );
}

/// `kernel @k(out: ptr<global, word>, seed_out: ptr<global, u64>)`: copies
/// `state.reloc_table[0..n]` to `out` and `state.rng_seed` to `seed_out[0]`.
fn state_kernel(n: u32) -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("k");
    let out = k.param(gptr(word()));
    let seed_out = k.param(gptr(Scalar::U64));
    let seed = k.op(Op::State(StateField::RngSeed));
    let zero = k.u32(0);
    k.store(seed_out, Some(zero), seed);
    let table = k.op(Op::State(StateField::RelocTable));
    for i in 0..n {
        let i = k.u32(i);
        let w = k.load(table, Some(i));
        k.store(out, Some(i), w);
    }
    let f = finish(k);
    mb.add(f);
    lowered(mb, Strategy::Table)
}

#[test]
fn state_delivers_the_table_and_the_seed() {
    let dev = CpuDevice::new(0);
    let words = [0x1111, 0x2222_0000_0000, 0xdead_beef, u64::MAX];
    let table = upload_u64(&dev, &words);
    let (out, seed_out) = (dev.alloc(32).unwrap(), dev.alloc(8).unwrap());
    let args = [KernelArg::Ptr(out), KernelArg::Ptr(seed_out)];
    let loaded = dev.compile(&verified(state_kernel(4)), "k").unwrap();
    let state = LaunchState { reloc_table: Some(table), rng_seed: 0x5eed, ..LaunchState::default() };
    dev.launch_loaded(&loaded, &LaunchConfig::default(), &args, &state).unwrap();
    assert_eq!(download_u64(&dev, out, 4), words);
    assert_eq!(download_u64(&dev, seed_out, 1), [0x5eed]);

    // One compiled kernel, another launch: another seed.
    dev.launch_loaded(&loaded, &LaunchConfig::default(), &args, &LaunchState { rng_seed: 9, ..state }).unwrap();
    assert_eq!(download_u64(&dev, seed_out, 1), [9]);

    // Table loads are ordinary bounds-checked loads.
    let short = upload_u64(&dev, &words[..3]);
    let state = LaunchState { reloc_table: Some(short), ..LaunchState::default() };
    let err = dev.launch_loaded(&loaded, &LaunchConfig::default(), &args, &state).unwrap_err();
    assert!(
        matches!(err, LaunchError::Fault { kind: FaultKind::OutOfBounds { addr, .. }, .. } if addr == short.0 + 24),
        "{err}"
    );

    // No table: `state.reloc_table` is null.
    let err = dev.launch_loaded(&loaded, &LaunchConfig::default(), &args, &LaunchState::default()).unwrap_err();
    assert!(matches!(err, LaunchError::Fault { kind: FaultKind::OutOfBounds { addr: 0, .. }, .. }), "{err}");
}

/// The runtime library's throw sequence as a device function
/// `@throw(msg: word)`: claim the record, write the message word and the
/// ids, `exit`.
fn add_throw(mb: &mut ModuleBuilder) -> relok_ir::FuncId {
    let mut t = mb.device_fn("throw", None);
    let msg = t.param(word());
    let exc = t.op(Op::State(StateField::Exception));
    let (zero, one) = (t.u64(0), t.u64(1));
    let i0 = t.u32(0);
    let old = t.atomic_cas(exc, Some(i0), zero, one);
    let first = t.eq(old, zero);
    t.if_(first, |t| {
        let m = t.bitcast(msg, Scalar::U64);
        let i1 = t.u32(1);
        t.store(exc, Some(i1), m);
        let ids = [
            Builtin::BlockId(Axis::X),
            Builtin::BlockId(Axis::Y),
            Builtin::BlockId(Axis::Z),
            Builtin::ThreadId(Axis::X),
            Builtin::ThreadId(Axis::Y),
            Builtin::ThreadId(Axis::Z),
        ];
        for (slot, b) in ids.into_iter().enumerate() {
            let v = t.builtin(b);
            let v = t.convert(v, Scalar::U64);
            let at = t.u32(2 + slot as u32);
            t.store(exc, Some(at), v);
        }
    });
    t.exit();
    let f = t.finish().unwrap();
    mb.add(f)
}

const MESSAGE: u64 = 0x7f00_dead_0040;

/// `kernel @k(at: u32, fault_at: u32, out: ptr<global, u32>)`: the thread
/// with global id `at` throws, the one with `fault_at` stores out of bounds;
/// every thread then stores 1 to `out[global id]`.
fn throwing_module() -> Module {
    let mut mb = ModuleBuilder::new();
    let throw = add_throw(&mut mb);
    let mut k = mb.kernel("k");
    let at = k.param(Scalar::U32);
    let fault_at = k.param(Scalar::U32);
    let out = k.param(gptr(Scalar::U32));
    let i = k.global_id(Axis::X);
    let hit = k.eq(i, at);
    k.if_(hit, |k| {
        let msg = k.op(Op::BakedWord(MESSAGE));
        k.call_void(throw, vec![msg]);
    });
    let bad = k.eq(i, fault_at);
    k.if_(bad, |k| {
        let far = k.u32(1 << 30);
        let one = k.u32(1);
        k.store(out, Some(far), one);
    });
    let one = k.u32(1);
    k.store(out, Some(i), one);
    let f = finish(k);
    mb.add(f);
    lowered(mb, Strategy::Bake)
}

#[test]
fn an_exception_names_its_message_word_block_and_thread() {
    let dev = CpuDevice::new(0);
    let m = verified(throwing_module());
    let cfg = LaunchConfig::linear(2, 8);
    let out = dev.alloc(4 * 16).unwrap();
    let err =
        dev.launch(&m, "k", &cfg, &[KernelArg::u32(8 + 3), KernelArg::u32(u32::MAX), KernelArg::Ptr(out)]).unwrap_err();
    assert_eq!(
        err,
        LaunchError::Exception {
            kernel: "k".into(),
            message_word: MESSAGE,
            block: [1, 0, 0],
            thread: [3, 0, 0],
            values: None
        }
    );
    assert_eq!(err.to_string(), "kernel @k, block (1,0,0), thread (3,0,0): exception (message word 0x7f00dead0040)");
    // `exit` in @throw ended the thread only: everyone else stored.
    let got = download_u32(&dev, out, 16);
    assert_eq!(got, (0..16).map(|i| u32::from(i != 11)).collect::<Vec<_>>());

    // The device stays usable and the record is cleared for the next launch.
    dev.launch(&m, "k", &cfg, &[KernelArg::u32(u32::MAX), KernelArg::u32(u32::MAX), KernelArg::Ptr(out)]).unwrap();
    assert_eq!(download_u32(&dev, out, 16), vec![1; 16]);

    // An exception is reported even when a later thread faults.
    let err = dev.launch(&m, "k", &cfg, &[KernelArg::u32(2), KernelArg::u32(9), KernelArg::Ptr(out)]).unwrap_err();
    assert_eq!(
        err,
        LaunchError::Exception {
            kernel: "k".into(),
            message_word: MESSAGE,
            block: [0, 0, 0],
            thread: [2, 0, 0],
            values: None
        }
    );
    // Without one, the fault is.
    let err =
        dev.launch(&m, "k", &cfg, &[KernelArg::u32(u32::MAX), KernelArg::u32(9), KernelArg::Ptr(out)]).unwrap_err();
    assert!(matches!(err, LaunchError::Fault { block: [1, 0, 0], thread: [1, 0, 0], .. }), "{err}");
}

#[test]
fn exit_in_a_device_function_ends_the_thread() {
    let mut mb = ModuleBuilder::new();
    let mut stop = mb.device_fn("stop", Some(Scalar::U32.into()));
    stop.exit();
    let zero = stop.u32(0);
    stop.ret(Some(zero));
    let f = stop.finish().unwrap();
    let stop = mb.add(f);
    let mut k = mb.kernel("k");
    let out = k.param(gptr(Scalar::U32));
    let i = k.global_id(Axis::X);
    let one = k.u32(1);
    k.store(out, Some(i), one);
    let two = k.u32(2);
    let odd = k.rem(i, two);
    let odd = k.eq(odd, one);
    k.if_(odd, |k| {
        let r = k.call(stop, vec![]);
        k.store(out, Some(i), r);
    });
    k.store(out, Some(i), two);
    let f = finish(k);
    mb.add(f);
    let m = verified(mb.build());

    let dev = CpuDevice::new(0);
    let out = dev.alloc(4 * 64).unwrap();
    let stats = dev.launch(&m, "k", &LaunchConfig::linear(2, 32), &[KernelArg::Ptr(out)]).unwrap();
    assert_eq!(stats.threads, 64);
    assert_eq!(download_u32(&dev, out, 64), (0..64).map(|i| if i % 2 == 1 { 1 } else { 2 }).collect::<Vec<_>>());
}

/// `kernel @k()`: threads below `n` exit, then every thread meets a barrier.
fn exit_then_barrier() -> Module {
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("k");
    let n = k.param(Scalar::U32);
    let t = k.builtin(Builtin::ThreadId(Axis::X));
    let early = k.lt(t, n);
    k.if_(early, |k| k.exit());
    k.barrier();
    let f = finish(k);
    mb.add(f);
    mb.build()
}

#[test]
fn exit_before_a_barrier_counts_as_finished() {
    let dev = CpuDevice::new(0);
    let m = verified(exit_then_barrier());
    let cfg = LaunchConfig::linear(1, 4);
    let err = dev.launch(&m, "k", &cfg, &[KernelArg::u32(2)]).unwrap_err();
    assert!(
        matches!(err, LaunchError::Fault { kind: FaultKind::BarrierDivergence { waiting: [2, 0, 0] }, .. }),
        "{err}"
    );
    // All exit, or none: fine.
    dev.launch(&m, "k", &cfg, &[KernelArg::u32(4)]).unwrap();
    dev.launch(&m, "k", &cfg, &[KernelArg::u32(0)]).unwrap();
}

#[test]
fn const_patches_write_words_into_constants() {
    let mut mb = ModuleBuilder::new();
    let boxed = mb.constant(
        "boxed",
        Type::Struct(vec![Scalar::U32.into(), word(), Scalar::U32.into()]),
        ConstInit::Struct(vec![ConstInit::Scalar(5), ConstInit::Scalar(0), ConstInit::Scalar(7)]),
    );
    let mut k = mb.kernel("k");
    let out = k.param(gptr(word()));
    let out32 = k.param(gptr(Scalar::U32));
    let p = k.const_addr(boxed);
    let tag = k.field(p, 1);
    let tag = k.load(tag, None);
    let zero = k.u32(0);
    k.store(out, Some(zero), tag);
    for (slot, field) in [(0u32, 0u32), (1, 2)] {
        let f = k.field(p, field);
        let x = k.load(f, None);
        let at = k.u32(slot);
        k.store(out32, Some(at), x);
    }
    let f = finish(k);
    mb.add(f);
    let m = verified(lowered(mb, Strategy::Patch));

    let dev = CpuDevice::new(0);
    let (out, out32) = (dev.alloc(8).unwrap(), dev.alloc(8).unwrap());
    let args = [KernelArg::Ptr(out), KernelArg::Ptr(out32)];
    let loaded = dev.compile(&m, "k").unwrap();
    assert_eq!(loaded.constants().collect::<Vec<_>>(), [("boxed", 24)]);
    let state = LaunchState { const_patches: vec![("boxed".into(), 8, 0xabcd_0000_1234)], ..LaunchState::default() };
    dev.launch_loaded(&loaded, &LaunchConfig::default(), &args, &state).unwrap();
    assert_eq!(download_u64(&dev, out, 1), [0xabcd_0000_1234]);
    assert_eq!(download_u32(&dev, out32, 2), [5, 7]);

    // The patch belongs to that launch; the loaded kernel is unchanged.
    dev.launch_loaded(&loaded, &LaunchConfig::default(), &args, &LaunchState::default()).unwrap();
    assert_eq!(download_u64(&dev, out, 1), [0]);

    for (name, offset, why) in [("nope", 8, "no such constant"), ("boxed", 20, "past"), ("boxed", 4, "aligned")] {
        let state = LaunchState { const_patches: vec![(name.into(), offset, 1)], ..LaunchState::default() };
        let err = dev.launch_loaded(&loaded, &LaunchConfig::default(), &args, &state).unwrap_err();
        assert!(
            matches!(&err, LaunchError::BadConstPatch { constant, reason, .. } if constant == name && reason.contains(why)),
            "{err}"
        );
    }
}

#[test]
fn the_exception_record_is_device_memory_the_host_cannot_free() {
    // `kernel @k(out: ptr<global, ptr<global, u64>>)`: out[0] = state.exception.
    let mut mb = ModuleBuilder::new();
    let mut k = mb.kernel("k");
    let out = k.param(gptr(gptr(Scalar::U64)));
    let exc = k.op(Op::State(StateField::Exception));
    k.store(out, None, exc);
    let f = finish(k);
    mb.add(f);
    let m = verified(mb.build());

    let dev = CpuDevice::new(0);
    let out = dev.alloc(8).unwrap();
    dev.launch(&m, "k", &LaunchConfig::default(), &[KernelArg::Ptr(out)]).unwrap();
    let exc = DevicePtr(download_u64(&dev, out, 1)[0]);
    // Zeroed before every launch, 8 words, and not the host's to free.
    assert_eq!(download_u64(&dev, exc, 8), [0; 8]);
    assert!(matches!(dev.free(exc), Err(relok_runtime::DeviceError::InvalidFree { .. })));
    // The next launch reuses it.
    let out2 = dev.alloc(8).unwrap();
    dev.launch(&m, "k", &LaunchConfig::default(), &[KernelArg::Ptr(out2)]).unwrap();
    assert_eq!(download_u64(&dev, out2, 1), [exc.0]);
}

#[test]
fn an_unlinked_import_is_an_invalid_module() {
    let mut mb = ModuleBuilder::new();
    let throw = mb.import_fn("relok_throw", vec![word()], None);
    let mut k = mb.kernel("k");
    let w = k.op(Op::BakedWord(1));
    k.call_void(throw, vec![w]);
    let f = finish(k);
    mb.add(f);
    let m = lowered(mb, Strategy::Bake);
    let err = CpuDevice::new(0).compile(&m, "k").unwrap_err();
    assert!(matches!(&err, LaunchError::InvalidModule { reason, .. } if reason.contains("link")), "{err}");
}
