//! The relocation model end to end on the cpu device, every test under
//! every strategy (bake, patch, table): examples/reloc/*.rk compiled,
//! loaded through a Session and launched.

use relok_compiler::artifact::{Artifact, CodeTarget};
use relok_compiler::reloc::{Record, Target};
use relok_ir::{Strategy, VerifiedModule};
use relok_runtime::backend::with_message;
use relok_runtime::{Backend, CpuDevice, CpuKernel, DevicePtr, KernelArg, KernelCache, LaunchConfig, LoadRequest};
use relok_runtime::{ProgramError, Session};
use std::sync::Arc;

const SYMBOLS: &str = include_str!("../../../examples/reloc/symbols.rk");
const LOOKUP: &str = include_str!("../../../examples/reloc/lookup.rk");
const COUNTER: &str = include_str!("../../../examples/reloc/counter.rk");
const BOXED: &str = include_str!("../../../examples/reloc/boxed.rk");
const THROW: &str = include_str!("../../../examples/reloc/throw.rk");

fn parse(src: &str) -> VerifiedModule {
    VerifiedModule::new(relok_ir::parse(src).expect("example parses")).expect("example verifies")
}

fn buffer(device: &CpuDevice, bytes: &[u8]) -> DevicePtr {
    let p = device.alloc(bytes.len() as u64).expect("alloc");
    device.write(p, bytes).expect("write");
    p
}

fn read_u32s(device: &CpuDevice, p: DevicePtr, n: usize) -> Vec<u32> {
    let bytes = device.read(p, (n * 4) as u64).expect("read");
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()
}

fn read_u64s(device: &CpuDevice, p: DevicePtr, n: usize) -> Vec<u64> {
    let bytes = device.read(p, (n * 8) as u64).expect("read");
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

/// Compiles `kernel` of `m` for the cpu device with `strategy`, with no
/// cache (`bake`: with the words of `device`).
fn compile(
    session: &Session,
    device: &CpuDevice,
    m: &VerifiedModule,
    kernel: &str,
    strategy: Strategy,
) -> Arc<Artifact> {
    KernelCache::uncached().artifact(session, device, m, kernel, CodeTarget::Cpu, strategy).expect("compiles")
}

/// Loads `artifact` on `device` with the session's words delivered.
fn load(session: &Session, device: &CpuDevice, artifact: &Artifact) -> Result<Arc<CpuKernel>, ProgramError> {
    device.load(session, &LoadRequest::new(artifact))
}

/// Launches a loaded kernel on a new stream and waits for it; an
/// exception comes back with its message text.
fn launch(
    session: &Session,
    device: &CpuDevice,
    kernel: &Arc<CpuKernel>,
    config: &LaunchConfig,
    args: &[KernelArg],
) -> Result<(), ProgramError> {
    let stream = device.new_stream()?;
    device.enqueue(&stream, kernel, config, args, 0)?;
    device.synchronize(&stream).map(|_| ()).map_err(|e| with_message(session, device, e))
}

/// Compiles, loads and launches `kernel` once.
fn run(
    session: &Session,
    device: &CpuDevice,
    m: &VerifiedModule,
    kernel: &str,
    strategy: Strategy,
    config: &LaunchConfig,
    args: &[KernelArg],
) -> Result<(), ProgramError> {
    let loaded = load(session, device, &compile(session, device, m, kernel, strategy))?;
    launch(session, device, &loaded, config, args)
}

fn symbol_word(session: &Session, device: &CpuDevice, name: &str) -> KernelArg {
    let w = session.resolve(device, &session.symbol(name)).expect("symbol resolves");
    KernelArg::Scalar { ty: relok_ir::Scalar::Word, bits: w }
}

#[test]
fn relocation_free_kernels_have_an_empty_manifest_and_no_table() {
    let m = parse(include_str!("../../../examples/saxpy.rk"));
    let (session, device) = (Session::new(), CpuDevice::new(0));
    for s in Strategy::ALL {
        let compiled = compile(&session, &device, &m, "saxpy", s);
        assert!(compiled.manifest.is_empty(), "{s}");
        let loaded = load(&session, &device, &compiled).expect("loads");
        assert_eq!(loaded.state().reloc_table, None, "{s}");
        assert!(loaded.state().patch_cells.iter().next().is_none(), "{s}");
    }
}

#[test]
fn symbol_argument_against_symbol_literals() {
    let m = parse(SYMBOLS);
    let (session, device) = (Session::new(), CpuDevice::new(0));
    for s in Strategy::ALL {
        for (arg, want) in [("foo", 1i32), ("bar", 2), ("baz", -1), ("", -1)] {
            let out = buffer(&device, &[0; 4]);
            let args = [symbol_word(&session, &device, arg), KernelArg::Ptr(out)];
            run(&session, &device, &m, "classify", s, &LaunchConfig::default(), &args).expect("runs");
            assert_eq!(read_u32s(&device, out, 1)[0] as i32, want, "{s}: :{arg}");
        }
        // The comparison survived optimisation: both refs are records.
        let compiled = compile(&session, &device, &m, "classify", s);
        assert_eq!(compiled.manifest.len(), 2, "{s}");
    }
}

#[test]
fn a_value_table_is_read_through_its_word() {
    let m = parse(LOOKUP);
    let table: Vec<u32> = (0..256u32).map(|i| (i * i * 7 + 3) % 1000).collect();
    let (session, device) = (Session::new(), CpuDevice::new(0));
    let n = 1000u32;
    let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    for s in Strategy::ALL {
        let x = buffer(&device, &input.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        let out = buffer(&device, &vec![0; n as usize * 4]);
        let config = LaunchConfig { grid: [4, 1, 1], block: [256, 1, 1], ..LaunchConfig::default() };
        run(&session, &device, &m, "lookup", s, &config, &[KernelArg::u32(n), KernelArg::Ptr(x), KernelArg::Ptr(out)])
            .expect("runs");
        let want: Vec<u32> = input.iter().map(|&v| table[(v % 256) as usize]).collect();
        assert_eq!(read_u32s(&device, out, n as usize), want, "{s}");
    }
}

/// A kernel writing the words of a runtime global, a symbol, a value and a
/// string.
const WORDS: &str = include_str!("../../../examples/reloc/words.rk");

#[test]
fn words_written_by_the_kernel_equal_the_sessions_and_the_table_is_in_manifest_order() {
    let m = parse(WORDS);
    let (session, device) = (Session::new(), CpuDevice::new(0));
    for s in Strategy::ALL {
        let out = buffer(&device, &[0; 32]);
        let compiled = compile(&session, &device, &m, "words", s);
        let loaded = load(&session, &device, &compiled).expect("loads");
        launch(&session, &device, &loaded, &LaunchConfig::default(), &[KernelArg::Ptr(out)]).expect("runs");
        let got = read_u64s(&device, out, 4);
        let t_bytes: Vec<u8> = [7u32, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
        let expected = [
            session.resolve(&device, &Target::Global { name: "relok_counter".into(), offset: 8 }).expect("global"),
            session.resolve(&device, &session.symbol("alpha")).expect("symbol"),
            session.resolve(&device, &session.value("[u32; 2]", &t_bytes)).expect("value"),
            session.resolve(&device, &session.value("str", b"hello")).expect("string"),
        ];
        assert_eq!(got, expected, "{s}");
        // The canary for a misindexed table: the whole table equals the
        // resolved words in manifest order.
        if s == Strategy::Table {
            let table = loaded.state().reloc_table.expect("table");
            let manifest = &compiled.manifest;
            let resolved: Vec<u64> = manifest
                .records()
                .iter()
                .map(|r: &Record| session.resolve(&device, r.target()).expect("resolves"))
                .collect();
            assert_eq!(read_u64s(&device, table, manifest.len()), resolved);
        }
    }
}

#[test]
fn a_boxed_constant_with_a_symbol_tag() {
    let m = parse(BOXED);
    let (session, device) = (Session::new(), CpuDevice::new(0));
    for s in Strategy::ALL {
        for (tag, want) in [("circle", 42u32), ("square", 0)] {
            let out = buffer(&device, &[0xff; 4]);
            let args = [symbol_word(&session, &device, tag), KernelArg::Ptr(out)];
            run(&session, &device, &m, "unbox", s, &LaunchConfig::default(), &args).expect("runs");
            assert_eq!(read_u32s(&device, out, 1)[0], want, "{s}: :{tag}");
        }
        let compiled = compile(&session, &device, &m, "unbox", s);
        let interior =
            compiled.manifest.records().iter().filter(|r| r.offset() == 0 && r.name().contains("agg")).count();
        assert_eq!(interior, 1, "{s}: one interior record for the box's tag");
    }
}

#[test]
fn devices_are_isolated() {
    let m = parse(COUNTER);
    let session = Session::new();
    let (a, b) = (CpuDevice::new(0), CpuDevice::new(1));
    for s in Strategy::ALL {
        let session = Session::new();
        let out_a = buffer(&a, &[0; 64 * 8]);
        let config = LaunchConfig { grid: [2, 1, 1], block: [32, 1, 1], ..LaunchConfig::default() };
        run(&session, &a, &m, "count", s, &config, &[KernelArg::Ptr(out_a)]).expect("runs on a");
        // Every thread got a distinct old value 0..64 on a.
        let mut olds = read_u64s(&a, out_a, 64);
        olds.sort_unstable();
        assert_eq!(olds, (0..64).collect::<Vec<u64>>(), "{s}");
        let cell = |d: &CpuDevice| session.global_cell(d, "relok_counter").expect("cell");
        assert_eq!(read_u64s(&a, cell(&a), 1)[0], 64, "{s}");
        assert_eq!(read_u64s(&b, cell(&b), 1)[0], 0, "{s}: b's counter is untouched");
        assert_ne!(cell(&a).0, cell(&b).0);
    }
    // Separate tables with different words for the same kernel.
    let compiled = compile(&session, &a, &parse(WORDS), "words", Strategy::Table);
    let la = load(&session, &a, &compiled).expect("loads on a");
    let lb = load(&session, &b, &compiled).expect("loads on b");
    assert_ne!(la.state().reloc_table, lb.state().reloc_table);
    assert_ne!(la.words, lb.words);
}

#[test]
fn a_baked_kernel_is_wrong_on_another_device_and_patch_and_table_are_right() {
    let m = parse(LOOKUP);
    let session = Session::new();
    let (a, b) = (CpuDevice::new(0), CpuDevice::new(1));
    let baked = compile(&session, &a, &m, "lookup", Strategy::Bake);
    // The loader refuses, and running it anyway shows why: the baked word is
    // a's address of the table, which does not exist on b.
    assert!(matches!(load(&session, &b, &baked), Err(ProgramError::BakedElsewhere { .. })));
    let x = buffer(&b, &[5, 0, 0, 0]);
    let out = buffer(&b, &[0; 4]);
    let args = [KernelArg::u32(1), KernelArg::Ptr(x), KernelArg::Ptr(out)];
    let forced = b.launch_loaded(
        &b.compile(&baked.lowered().expect("lowered").module, "lookup").expect("compiles on b"),
        &LaunchConfig::default(),
        &args,
        &relok_runtime::LaunchState::default(),
    );
    let err = forced.expect_err("a stale address faults");
    assert!(err.to_string().contains("out-of-bounds"), "{err}");
    for s in [Strategy::Patch, Strategy::Table] {
        let compiled = compile(&session, &a, &m, "lookup", s);
        let loaded = load(&session, &b, &compiled).expect("loads on b");
        launch(&session, &b, &loaded, &LaunchConfig::default(), &args).expect("runs on b");
        assert_eq!(read_u32s(&b, out, 1)[0], 178, "{s}: table[5] = (5 * 5 * 7 + 3) % 1000");
    }
}

#[test]
fn exceptions_carry_text_block_and_thread_and_the_device_stays_usable() {
    let m = parse(THROW);
    let (session, device) = (Session::new(), CpuDevice::new(0));
    for s in Strategy::ALL {
        let mut input = vec![1i32; 100];
        input[37] = -5; // block 1, thread 5 with 32-thread blocks
        let x = buffer(&device, &input.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        let config = LaunchConfig { grid: [4, 1, 1], block: [32, 1, 1], ..LaunchConfig::default() };
        let args = [KernelArg::u32(100), KernelArg::Ptr(x)];
        match run(&session, &device, &m, "check", s, &config, &args) {
            Err(ProgramError::Exception { message, block, thread, .. }) => {
                assert_eq!(message, "negative input", "{s}");
                assert_eq!((block, thread), ([1, 0, 0], [5, 0, 0]), "{s}");
            }
            other => panic!("{s}: expected an exception, got {other:?}"),
        }
        let ok = buffer(&device, &[1; 400]);
        run(&session, &device, &m, "check", s, &config, &[KernelArg::u32(100), KernelArg::Ptr(ok)])
            .expect("the device is usable after an exception");
    }
}

#[test]
fn a_manifest_naming_a_missing_site_is_rejected_at_load() {
    let m = parse(SYMBOLS);
    let (session, device) = (Session::new(), CpuDevice::new(0));
    for s in [Strategy::Patch, Strategy::Table] {
        let mut compiled = Artifact::clone(&compile(&session, &device, &m, "classify", s));
        let mut records = compiled.manifest.records().to_vec();
        records.push(Record::slot("relok$classify$sym$zzz_missing", Target::Symbol("zzz_missing".into())));
        compiled.manifest = relok_compiler::reloc::FrozenManifest::from_records(records).expect("sorted");
        let err = load(&session, &device, &compiled).expect_err("missing site");
        assert!(err.to_string().contains("relok$classify$sym$zzz_missing"), "{s}: {err}");
    }
}

#[test]
fn records_shared_by_the_runtime_library_and_the_kernel_are_merged_once() {
    // The kernel names the counter itself and through @relok_count, which
    // the linker pulls in from the runtime library.
    let src = "import fn @relok_count(v0: u64) -> u64

kernel @k(v0: ptr<global, word>) {
    v1: u64 = const 1
    v2: u64 = call @relok_count(v1)
    v3: word = ref global relok_counter
    v4: u32 = const 0
    store v0[v4], v3
    return
}
";
    let m = parse(src);
    let (session, device) = (Session::new(), CpuDevice::new(0));
    for s in Strategy::ALL {
        let compiled = compile(&session, &device, &m, "k", s);
        let names: Vec<&str> = compiled.manifest.records().iter().map(|r| r.name()).collect();
        assert_eq!(names, ["relok$k$glob$relok_counter$0"], "{s}");
        let out = buffer(&device, &[0; 8]);
        let loaded = load(&session, &device, &compiled).expect("loads");
        launch(&session, &device, &loaded, &LaunchConfig::default(), &[KernelArg::Ptr(out)]).expect("runs");
        let cell = session.global_cell(&device, "relok_counter").expect("cell");
        assert_eq!(read_u64s(&device, out, 1)[0], cell.0, "{s}");
    }
    assert_eq!(read_u64s(&device, session.global_cell(&device, "relok_counter").expect("cell"), 1)[0], 3);
}
