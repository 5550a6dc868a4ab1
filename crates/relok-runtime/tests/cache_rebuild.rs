//! A store entry whose frame and checksum are good but whose artifact
//! cannot be used — its code is not the code its ABI and manifest describe
//! (PTX, WGSL: found as the kernel cache validates it), its code does not
//! parse (cpu: found as the cpu device loads it) — is a miss: the kernel is
//! compiled again, the entry replaced, and the next process hits. For every
//! target and every strategy the store keeps, by artifact key and by
//! source key.

use relok_cache::{Key, Lookup};
use relok_compiler::artifact::{Artifact, CodeTarget};
use relok_ir::{Strategy, VerifiedModule};
use relok_runtime::{CpuDevice, KernelCache, Session};

const SAXPY: &str = include_str!("../../../examples/saxpy.rk");

struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("relok-rebuild-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn saxpy() -> VerifiedModule {
    VerifiedModule::new(relok_ir::parse(SAXPY).expect("parses")).expect("verifies")
}

/// The artifact of saxpy through `cache` — for the cpu target the way
/// every device takes it, loaded (`relok_runtime::load`); for the GPU
/// targets, whose devices this machine may lack, as the cache gives it.
fn artifact(cache: &KernelCache, module: &VerifiedModule, target: CodeTarget, strategy: Strategy) -> Artifact {
    let (session, device) = (Session::new(), CpuDevice::new(0));
    if target == CodeTarget::Cpu {
        relok_runtime::load::by_module(&device, &session, cache, module, "saxpy", strategy, None).expect("loads");
    }
    Artifact::clone(&cache.artifact(&session, &device, module, "saxpy", target, strategy).expect("compiles"))
}

#[test]
fn a_checksummed_entry_with_unusable_code_is_a_miss_and_a_rebuild_on_every_target() {
    let module = saxpy();
    for target in [CodeTarget::Cpu, CodeTarget::Ptx { sm: 90 }, CodeTarget::Wgsl] {
        for &strategy in target.strategies().iter().filter(|s| **s != Strategy::Bake) {
            let dir = TempDir::new("entry");
            let good = artifact(&KernelCache::open(&dir.0).expect("store"), &module, target, strategy);
            // The same artifact with code that is not this kernel's code,
            // framed and checksummed by the store as any entry.
            let damaged = Artifact { code: b"kernel @saxpy( this is not code".to_vec(), ..good.clone() };
            let store = relok_cache::Store::open(relok_runtime::stores::artifact_config(&dir.0).expect("config"))
                .expect("store");
            store.put(Key(good.key), &damaged.to_payload().expect("payload")).expect("put");
            drop(store);

            let cache = KernelCache::open(&dir.0).expect("store");
            let rebuilt = artifact(&cache, &module, target, strategy);
            let what = format!("{}/{strategy}", target.name());
            assert_eq!(rebuilt, good, "{what}: the rebuild is the kernel's artifact");
            let stats = cache.stats();
            assert_eq!((stats.compiles, stats.store.corrupt, stats.store.hits), (1, 1, 0), "{what}: {stats:?}");

            // The entry was replaced: the next process hits it.
            let cache = KernelCache::open(&dir.0).expect("store");
            assert_eq!(artifact(&cache, &module, target, strategy), good, "{what}");
            let stats = cache.stats();
            assert_eq!((stats.compiles, stats.store.hits), (0, 1), "{what}: {stats:?}");
            let store = cache.store().expect("store");
            assert!(matches!(store.get(Key(good.key)), Lookup::Hit(_)), "{what}");
        }
    }
}

#[test]
fn a_cpu_entry_under_its_source_key_that_does_not_load_is_a_miss() {
    let module = saxpy();
    let dir = TempDir::new("source");
    let (session, device) = (Session::new(), CpuDevice::new(0));
    let cache = KernelCache::open(&dir.0).expect("store");
    let source = cache.source_key(SAXPY, "saxpy", CodeTarget::Cpu, Strategy::Table);
    relok_runtime::load::by_module(&device, &session, &cache, &module, "saxpy", Strategy::Table, Some(source))
        .expect("loads");
    let good = artifact(&cache, &module, CodeTarget::Cpu, Strategy::Table);
    // The alias entry under the source key, damaged but framed and
    // checksummed by the store.
    let damaged = Artifact { code: b"kernel @saxpy( this is not code".to_vec(), ..good.alias_under(source.0) };
    cache.store().expect("store").put(source, &damaged.to_payload().expect("payload")).expect("put");
    drop(cache);

    let cache = KernelCache::open(&dir.0).expect("store");
    let found = relok_runtime::load::by_source(&device, &session, &cache, source, "saxpy", Strategy::Table);
    assert!(matches!(found, Ok(None)), "a miss, not an error: {found:?}");
    let stats = cache.stats();
    assert_eq!((stats.store.corrupt, stats.store.hits), (1, 0), "{stats:?}");
    assert!(matches!(cache.store().expect("store").get(source), Lookup::Miss), "the alias entry is removed");
    // The caller compiles (here: the artifact's own entry is good) and the
    // alias is written again.
    relok_runtime::load::by_module(&device, &session, &cache, &module, "saxpy", Strategy::Table, Some(source))
        .expect("loads");
    let cache = KernelCache::open(&dir.0).expect("store");
    let again = relok_runtime::load::by_source(&device, &session, &cache, source, "saxpy", Strategy::Table);
    assert!(matches!(again, Ok(Some(_))), "{again:?}");
}
