//! Shipped kernels and the warm path (issue: warm first launch): a program
//! that loads its kernels from a `relok::Source` finds them by their source
//! key (no parsing) in a bundle made by `relok precompile` or in the store
//! a previous process filled; the source key and the artifact key name the
//! same artifact for every example; a bundle's machine code is used only by
//! the GPU it was made for, and damaged or foreign machine code is a miss,
//! never a wrong kernel.
//!
//! The cuda part runs where a CUDA GPU is present (`RELOK_REQUIRE_CUDA=1`
//! makes its absence a failure) with cubin bundles from
//! `RELOK_TEST_BUNDLES` (made by `scripts/gpu-build.sh`) or, when `ptxas`
//! is found, made here.

mod common;

use common::repo;
use relok::{Context, Grid, Source};
use relok_cache::entry::{self, Expect, Kind};
use relok_cache::{Key, bundle};
use relok_cli::cachecmd::precompile;
use relok_compiler::artifact::{self, Artifact, COMPILER_ID, CodeTarget, CompileOptions};
use relok_compiler::state::STATE_LAYOUT_VERSION;
use relok_compiler::stencil::{KeyInputs, SourceKeyInputs, Stencil, source_key};
use relok_ir::Strategy;
#[cfg(feature = "cuda")]
use std::path::Path;
use std::path::PathBuf;

static SCALE: Source = Source::new("examples/bench/scale.rk", include_str!("../../../examples/bench/scale.rk"));

#[cfg(feature = "cuda")]
fn note(msg: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("note: {msg}\n").as_bytes());
}

/// A folder removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!("relok-shipped-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs scale (y = 2x) once on `ctx`; panics on a wrong result.
fn run_scale(ctx: &Context) {
    let kernel = ctx.kernel(&SCALE, "scale").expect("scale loads");
    let x: Vec<f32> = (0..1000).map(|i| i as f32 - 17.0).collect();
    let dx = ctx.upload(&x).expect("upload");
    let mut dy = ctx.zeros::<f32>(x.len()).expect("zeros");
    let s = ctx.stream();
    kernel.launch(&s, Grid::cover(x.len(), 128), (x.len() as u32, &dx, &mut dy)).expect("launch");
    s.synchronize().expect("synchronize");
    let y = dy.download().expect("download");
    assert!(y.iter().zip(&x).all(|(y, x)| *y == 2.0 * x), "scale computed a wrong result on {}", ctx.device_name());
}

fn scale_bundle(target: CodeTarget, cubins: &[u32]) -> Vec<u8> {
    precompile(&[repo().join("examples/bench/scale.rk")], &[target], &[Strategy::Table], cubins, &mut |_, _, _| {})
        .expect("precompiles")
        .0
}

#[test]
fn source_keys_and_artifact_keys_name_the_same_artifact_for_every_example() {
    let mut files = Vec::new();
    for d in ["examples", "examples/reloc", "examples/bench"] {
        for e in std::fs::read_dir(repo().join(d)).expect("examples").flatten() {
            if e.path().extension().is_some_and(|x| x == "rk") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    let targets = [CodeTarget::Cpu, CodeTarget::Ptx { sm: 90 }, CodeTarget::Wgsl];
    let strategies = [Strategy::Patch, Strategy::Table];
    let (bytes, items) = precompile(&files, &targets, &strategies, &[], &mut |_, _, _| {}).expect("precompiles");
    let entries = bundle::decode(&bytes, COMPILER_ID).expect("decodes");
    let payload = |key: Key| {
        let e = entries.iter().find(|e| e.key == key && e.kind == Kind::Artifact).expect("entry present");
        entry::decode(e.bytes, &Expect { kind: Kind::Artifact, identity: COMPILER_ID, key: Some(key) })
            .expect("entry decodes")
            .to_vec()
    };
    let options = CompileOptions::default();
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("reads");
        let module = relok_ir::VerifiedModule::new(relok_ir::parse(&text).expect("parses")).expect("verifies");
        for (_, k) in module.kernels() {
            let stencil = Stencil::new(&module, &k.name).expect("stencil");
            for t in targets {
                for s in strategies.into_iter().filter(|&s| t.supports(s)) {
                    let by_ir = stencil.key(t, s, options);
                    let by_source = source_key(&text, &k.name, t, s, options);
                    assert_ne!(by_ir, by_source, "the two levels never share keys");
                    let via_alias = Artifact::from_payload(&payload(Key(by_source))).expect("alias decodes");
                    assert_eq!(
                        via_alias.key,
                        by_ir,
                        "{}: @{} {} {s}: the source key names another artifact",
                        f.display(),
                        k.name,
                        t.name()
                    );
                    assert_eq!(via_alias.alias, Some(by_source), "an alias says it is one");
                    assert_eq!(
                        Artifact { alias: None, ..via_alias },
                        artifact::compile(&stencil, t, s, options, None).expect("compiles")
                    );
                    // Another compiler build changes both levels.
                    let other = "relok-other-build";
                    let ir = KeyInputs {
                        compiler: other,
                        state_layout: STATE_LAYOUT_VERSION,
                        target: t,
                        strategy: s,
                        options,
                        ir: &stencil.text,
                    };
                    let src = SourceKeyInputs {
                        compiler: other,
                        state_layout: STATE_LAYOUT_VERSION,
                        target: t,
                        strategy: s,
                        options,
                        kernel: &k.name,
                        text: &text,
                    };
                    assert_ne!(ir.key(), by_ir);
                    assert_ne!(src.key(), by_source);
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, items.len());
    assert!(checked >= 30, "{checked} kernels checked");
}

#[test]
fn a_shipped_program_on_empty_caches_compiles_nothing() {
    let dir = TempDir::new("shipped");
    let ctx = Context::builder().device("cpu").cache_dir(&dir.0).build().expect("context");
    assert_eq!(
        ctx.load_bundle(&scale_bundle(CodeTarget::Cpu, &[])).expect("bundle loads"),
        2,
        "the artifact and its source alias"
    );
    run_scale(&ctx);
    let st = ctx.cache_stats();
    assert_eq!((st.compiles, st.bundle.hits, st.store.hits), (0, 1, 0), "{st:?}");
}

#[test]
fn a_static_bundle_serves_kernels_and_damage_is_refused() {
    // As `include_bytes!` gives it: bytes that live as long as the program.
    let bundle: &'static [u8] = Vec::leak(scale_bundle(CodeTarget::Cpu, &[]));
    let dir = TempDir::new("static");
    let ctx = Context::builder().device("cpu").cache_dir(&dir.0).build().expect("context");
    assert_eq!(ctx.load_static_bundle(bundle).expect("bundle loads"), 2);
    run_scale(&ctx);
    let st = ctx.cache_stats();
    assert_eq!((st.compiles, st.bundle.hits, st.store.hits), (0, 1, 0), "{st:?}");
    // The same checks as a copied bundle's: a damaged one is refused as a
    // whole, an intact one after it still serves.
    let mut bad = bundle.to_vec();
    let mid = bad.len() / 2;
    bad[mid] ^= 1;
    let bad: &'static [u8] = Vec::leak(bad);
    let ctx = Context::builder().device("cpu").cache_dir(&dir.0).build().expect("context");
    assert!(matches!(ctx.load_static_bundle(bad), Err(relok::Error::Bundle(_))));
    assert!(matches!(ctx.load_static_bundle(&bundle[..bundle.len() - 1]), Err(relok::Error::Bundle(_))));
    assert_eq!(ctx.load_static_bundle(bundle).expect("bundle loads"), 2);
}

#[test]
fn a_second_process_finds_a_source_by_its_key() {
    let dir = TempDir::new("warm");
    let first = Context::builder().device("cpu").cache_dir(&dir.0).build().expect("context");
    run_scale(&first);
    assert_eq!(first.cache_stats().compiles, 1);
    // A new context has a new kernel cache: what it finds comes from the
    // store, by the source key (one hit, no compile).
    let second = Context::builder().device("cpu").cache_dir(&dir.0).build().expect("context");
    run_scale(&second);
    let st = second.cache_stats();
    assert_eq!((st.compiles, st.store.hits, st.store.misses), (0, 1, 0), "{st:?}");
    // A text that differs by one byte is another source: compiled.
    static EDITED: Source = Source::new("scale.rk", concat!(include_str!("../../../examples/bench/scale.rk"), "\n"));
    let k = second.kernel(&EDITED, "scale").expect("loads");
    assert_eq!(k.name(), "scale");
    assert_eq!(
        (second.cache_stats().compiles, second.cache_stats().store.misses),
        (0, 1),
        "the edited text is a new source of the same artifact"
    );
    // `relok cache verify` takes the aliases for what they are.
    drop((first, second));
    let store =
        relok_cache::Store::open(relok_runtime::stores::artifact_config(&dir.0).expect("config")).expect("store");
    let (entries, bad) = relok_cli::cachecmd::verify(&store, true);
    assert_eq!((entries, bad), (3, vec![]), "the artifact and two aliases, all valid");
    // An artifact (not an alias) under another key is reported, as is an
    // alias moved under another key.
    let listed = store.entries();
    let payload_of = |key: Key| match store.get(key) {
        relok_cache::Lookup::Hit(p) => p,
        other => panic!("{other:?}"),
    };
    for (i, e) in listed.iter().enumerate() {
        let moved = Key([0xA0 + i as u8; 32]);
        store.put(moved, &payload_of(e.key)).expect("put");
        let (_, bad) = relok_cli::cachecmd::verify(&store, true);
        assert!(bad.iter().any(|(k, _)| *k == moved.to_hex()), "entry {i} moved under another key passed verify");
        std::fs::remove_file(store.entry_path(moved)).expect("removed");
    }
}

#[test]
fn a_damaged_bundle_is_refused_as_a_whole() {
    let art = entry::encode(Kind::Artifact, COMPILER_ID, Key([1; 32]), b"artifact");
    let bin = entry::encode(Kind::Binary, COMPILER_ID, Key([2; 32]), b"\x7fELF not really a cubin");
    let good = bundle::encode(COMPILER_ID, [art.as_slice(), bin.as_slice()]).expect("encodes");
    assert_eq!(bundle::decode(&good, COMPILER_ID).expect("decodes").len(), 2);
    let ctx = Context::cpu();
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x10;
        assert!(ctx.load_bundle(&bad).is_err(), "byte {i} flipped was accepted");
    }
    for n in [0, 10, good.len() / 2, good.len() - 1] {
        assert!(ctx.load_bundle(&good[..n]).is_err(), "truncated to {n} bytes was accepted");
    }
}

#[cfg(feature = "cuda")]
/// A cubin bundle of `name` (`scale-sm90`): from `RELOK_TEST_BUNDLES`, else
/// made with ptxas when one is found.
fn cubin_bundle(file: &str, sm: u32, cubin_sm: u32) -> Option<Vec<u8>> {
    let name = format!("{}-sm{cubin_sm}.bundle", Path::new(file).file_stem()?.to_str()?);
    if let Some(dir) = std::env::var_os("RELOK_TEST_BUNDLES") {
        return std::fs::read(Path::new(&dir).join(&name)).ok();
    }
    relok_build::find_ptxas()?;
    let target = CodeTarget::Ptx { sm: sm.min(90) };
    precompile(&[repo().join(file)], &[target], &[Strategy::Table], &[cubin_sm], &mut |_, _, _| {}).ok().map(|b| b.0)
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_uses_bundled_cubins_only_for_its_own_gpu() {
    let required = std::env::var_os("RELOK_REQUIRE_CUDA").is_some_and(|v| v == "1");
    let ctx = match Context::open("cuda") {
        Ok(c) => c,
        Err(e) if required => panic!("RELOK_REQUIRE_CUDA=1 but cuda does not open: {e}"),
        Err(e) => return note(&format!("SKIPPED cuda_uses_bundled_cubins_only_for_its_own_gpu: {e}")),
    };
    drop(ctx);
    let name = Context::open("cuda").expect("cuda").device_name().to_owned();
    let sm: u32 =
        name.rsplit("sm_").next().and_then(|s| s.trim_end_matches(')').parse().ok()).expect("sm in the device name");
    let Some(own) = cubin_bundle("examples/bench/scale.rk", sm, sm) else {
        assert!(!required, "RELOK_REQUIRE_CUDA=1 but no cubin bundle (RELOK_TEST_BUNDLES) and no ptxas");
        return note("SKIPPED cuda_uses_bundled_cubins_only_for_its_own_gpu: no cubin bundles and no ptxas");
    };
    // This GPU's valid cubin filed under another GPU's key (checksums
    // recomputed): a lookup that ignored the compute capability would use
    // it; it must not.
    let own_entries = bundle::decode(&own, COMPILER_ID).expect("decodes");
    let artifact = own_entries
        .iter()
        .filter(|e| e.kind == Kind::Artifact)
        .map(|e| {
            Artifact::from_payload(
                entry::decode(e.bytes, &Expect { kind: Kind::Artifact, identity: COMPILER_ID, key: None })
                    .expect("decodes"),
            )
            .expect("artifact")
        })
        .find(|a| a.alias.is_none())
        .expect("the artifact");
    let rekeyed: Vec<Vec<u8>> = own_entries
        .iter()
        .map(|e| match e.kind {
            Kind::Binary => {
                let cubin = entry::decode(e.bytes, &Expect { kind: Kind::Binary, identity: COMPILER_ID, key: None })
                    .expect("decodes");
                let key = Key(relok_compiler::ptx::cubin_key(&artifact.code, &artifact.entry, sm + 10));
                entry::encode(Kind::Binary, COMPILER_ID, key, cubin)
            }
            Kind::Artifact => e.bytes.to_vec(),
        })
        .collect();
    let other = bundle::encode(COMPILER_ID, rekeyed.iter().map(Vec::as_slice)).expect("encodes");
    let fresh = |label: &str| {
        let dir = TempDir::new(label);
        let ctx = Context::builder().device("cuda").cache_dir(&dir.0).build().expect("cuda context");
        (dir, ctx)
    };
    // Its own GPU's cubin: nothing compiled, nothing JIT-compiled.
    let (d, ctx) = fresh("own");
    ctx.load_bundle(&own).expect("bundle loads");
    run_scale(&ctx);
    let code = ctx.code_stats();
    assert_eq!((ctx.cache_stats().compiles, code.bundled, code.linked, code.jit), (0, 1, 0, 0), "{code:?}");
    // Nothing written on a shipped program's first launch: no cubin, no
    // load record (the bundle serves the next process from memory too).
    assert!(archive_entries(&d.0).is_empty(), "the archive was written");
    // Another GPU's cubin is never looked at: the PTX is compiled, correctly.
    let (_d, ctx) = fresh("other");
    ctx.load_bundle(&other).expect("bundle loads");
    run_scale(&ctx);
    let code = ctx.code_stats();
    assert_eq!((code.bundled, code.archived, code.linked + code.jit), (0, 0, 1), "{code:?}");
    // Another kernel's cubin under scale's key (checksums recomputed, as a
    // forger would): the driver finds no @scale in it; refused, compiled.
    let saxpy = cubin_bundle("examples/saxpy.rk", sm, sm).expect("saxpy bundle");
    let saxpy_cubin = bundle::decode(&saxpy, COMPILER_ID)
        .expect("decodes")
        .into_iter()
        .find(|e| e.kind == Kind::Binary)
        .expect("a cubin")
        .bytes
        .to_vec();
    let saxpy_cubin = entry::decode(&saxpy_cubin, &Expect { kind: Kind::Binary, identity: COMPILER_ID, key: None })
        .expect("decodes")
        .to_vec();
    let forged_entries: Vec<Vec<u8>> = bundle::decode(&own, COMPILER_ID)
        .expect("decodes")
        .iter()
        .map(|e| match e.kind {
            Kind::Binary => entry::encode(Kind::Binary, COMPILER_ID, e.key, &saxpy_cubin),
            Kind::Artifact => e.bytes.to_vec(),
        })
        .collect();
    let forged = bundle::encode(COMPILER_ID, forged_entries.iter().map(Vec::as_slice)).expect("encodes");
    let (_d, ctx) = fresh("forged");
    ctx.load_bundle(&forged).expect("bundle loads");
    run_scale(&ctx);
    let code = ctx.code_stats();
    // The binary archive is under the builder's folder (a fresh one): the
    // cubin linked in the case above is not found.
    assert_eq!((code.bundled, code.archived, code.linked + code.jit), (0, 0, 1), "{code:?}");
}

#[cfg(feature = "cuda")]
/// Whether a cuda context opens; if not, says that `test` is skipped
/// (`RELOK_REQUIRE_CUDA=1` makes it a failure).
fn cuda_opens(test: &str) -> bool {
    match Context::open("cuda") {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var_os("RELOK_REQUIRE_CUDA").is_none_or(|v| v != "1"),
                "RELOK_REQUIRE_CUDA=1 but cuda does not open: {e}"
            );
            note(&format!("SKIPPED {test}: {e}"));
            false
        }
    }
}

#[cfg(feature = "cuda")]
/// The binary archive's entries under cache root `root` for GPU 0:
/// (entry file, payload), cubins and load records.
fn archive_entries(root: &Path) -> Vec<(PathBuf, Key, Vec<u8>)> {
    let d = relok_runtime::cuda::CudaDevice::open(0).expect("GPU 0");
    let store = relok_cache::Store::open(d.archive_config(root)).expect("archive");
    let identity = store.config().identity.clone();
    store
        .entries()
        .into_iter()
        .map(|e| {
            let bytes = std::fs::read(&e.path).expect("read");
            let payload = entry::decode(&bytes, &Expect { kind: Kind::Binary, identity: &identity, key: Some(e.key) })
                .expect("valid entry")
                .to_vec();
            (e.path, e.key, payload)
        })
        .collect()
}

#[cfg(feature = "cuda")]
/// A load record's fields (`relok_runtime::cuda`: postcard, in this order).
type Record = ([u8; 32], Artifact, Vec<u8>);

#[cfg(feature = "cuda")]
/// Writes `record` as the archive entry `key` at `path`, framed as the
/// archive frames it (checksums recomputed, as a forger would).
fn forge_record(root: &Path, path: &Path, key: Key, record: &Record) {
    let d = relok_runtime::cuda::CudaDevice::open(0).expect("GPU 0");
    let identity = d.archive_config(root).identity;
    let payload = postcard::to_allocvec(record).expect("encodes");
    std::fs::write(path, entry::encode(Kind::Binary, &identity, key, &payload)).expect("write");
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_loads_a_warm_kernel_from_one_load_record() {
    if !cuda_opens("cuda_loads_a_warm_kernel_from_one_load_record") {
        return;
    }
    let dir = TempDir::new("record");
    let open = || Context::builder().device("cuda").cache_dir(&dir.0).build().expect("cuda context");
    // Cold: compiled and linked; the cubin and the load record archived.
    let ctx = open();
    run_scale(&ctx);
    assert_eq!((ctx.cache_stats().compiles, ctx.code_stats().linked, ctx.code_stats().records), (1, 1, 0));
    drop(ctx);
    let entries = archive_entries(&dir.0);
    assert_eq!(entries.len(), 2, "the cubin and the load record");
    let (record_path, record_key, record_payload) =
        entries.iter().find(|e| !e.2.starts_with(b"\x7fELF")).cloned().expect("the record");
    let record: Record = postcard::from_bytes(&record_payload).expect("a record decodes");
    assert_eq!(record.1.entry, "scale");
    assert!(record.2.starts_with(b"\x7fELF") && record.1.code.is_empty(), "the cubin, not the PTX");
    // Warm: one read of the record; the kernel cache is not asked.
    let warm = |label: &str| {
        let ctx = open();
        let held = ctx.kernel(&SCALE, "scale").expect("scale loads");
        // Asked again in the same process while loaded: no read.
        run_scale(&ctx);
        drop(held);
        let (st, code) = (ctx.cache_stats(), ctx.code_stats());
        (
            label.to_owned(),
            st.compiles,
            st.store.hits + st.store.misses,
            code.records,
            code.archived,
            code.linked + code.jit,
        )
    };
    assert_eq!(warm("warm"), ("warm".into(), 0, 0, 1, 1, 0));
    // A damaged record is a miss: the long way (store, archived cubin),
    // and the record is written again.
    let mut damaged = std::fs::read(&record_path).expect("read");
    let at = damaged.len() - 40;
    damaged[at] ^= 0x01;
    std::fs::write(&record_path, &damaged).expect("write");
    assert_eq!(warm("damaged"), ("damaged".into(), 0, 1, 0, 1, 0));
    assert_eq!(warm("rewritten"), ("rewritten".into(), 0, 0, 1, 1, 0));
    // Forged records, framed as the archive frames them: of another source
    // key; of another kernel; with the cubin of scale compiled unchecked
    // (same entry, other parameters: the driver's report differs).
    let unchecked_cubin = {
        let other = TempDir::new("record-unchecked");
        let mut d = relok_runtime::cuda::CudaDevice::open(0).expect("GPU 0");
        d.set_archive(Some(relok_cache::Store::open(d.archive_config(&other.0)).expect("archive")));
        let module = relok_ir::parse(include_str!("../../../examples/bench/scale.rk")).expect("parses");
        let module = relok_ir::VerifiedModule::new(module).expect("verifies");
        let stencil = Stencil::new(&module, "scale").expect("stencil");
        let options = CompileOptions { checked: false, ..CompileOptions::default() };
        let a = artifact::compile(&stencil, d.target(), Strategy::Table, options, None).expect("compiles");
        relok_runtime::Backend::load(&d, &relok_runtime::Session::new(), &relok_runtime::LoadRequest::new(&a))
            .expect("loads unchecked");
        drop(d);
        archive_entries(&other.0).into_iter().map(|e| e.2).find(|p| p.starts_with(b"\x7fELF")).expect("its cubin")
    };
    let mut renamed = record.clone();
    renamed.1.entry = "scale2".into();
    let forgeries: [(&str, Record); 3] = [
        ("another source", ([9; 32], record.1.clone(), record.2.clone())),
        ("another kernel", renamed),
        ("an unchecked cubin", (record.0, record.1.clone(), unchecked_cubin)),
    ];
    for (label, forged) in forgeries {
        forge_record(&dir.0, &record_path, record_key, &forged);
        let (_, compiles, store, records, archived, compiled) = warm(label);
        assert_eq!(
            (compiles, store, records, archived, compiled),
            (0, 1, 0, 1, 0),
            "{label}: refused, loaded the long way"
        );
    }
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_load_records_serve_patch_and_table_never_bake() {
    if !cuda_opens("cuda_load_records_serve_patch_and_table_never_bake") {
        return;
    }
    for (strategy, records) in [(Strategy::Patch, 1), (Strategy::Table, 1), (Strategy::Bake, 0)] {
        let dir = TempDir::new("record-strategy");
        let open =
            || Context::builder().device("cuda").strategy(strategy).cache_dir(&dir.0).build().expect("cuda context");
        run_scale(&open());
        // The second process: from the record (patch writes the module's
        // globals, table uploads its table); bake's words are one
        // process's, never stored: compiled again, its cubin archived.
        let ctx = open();
        run_scale(&ctx);
        let code = ctx.code_stats();
        assert_eq!((code.records, code.jit), (records, 0), "{strategy}: {code:?}");
        assert_eq!(ctx.cache_stats().compiles, 1 - records, "{strategy}");
    }
}
