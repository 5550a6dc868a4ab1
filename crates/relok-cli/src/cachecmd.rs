//! `relok cache …` and `relok precompile`: the artifact store and bundles
//! from the command line.
//!
//! - `stats`: counters summed over every process that used the store, and
//!   what is in it;
//! - `list`: one line per entry (key, size, last use, kernel, strategy);
//! - `verify`: reads every entry back as the loader would (framing,
//!   artifact, code, host values hashing to their keys) and names each one
//!   that would be rejected; `--rebuild` also recompiles each from the
//!   source it carries and compares every byte (`Artifact::rebuild_check`);
//! - `gc`: a collection now (other builds' folders, stale temporary files,
//!   least-recently-used entries over the cap);
//! - `clear`: removes every entry;
//! - `import BUNDLE`: copies a bundle's artifacts into the store after
//!   rebuilding each and comparing bytes (`--trust` skips the rebuild); a
//!   forged or unreadable artifact rejects the whole bundle;
//! - `precompile FILES… --out BUNDLE`: compiles every kernel of the files
//!   for the chosen targets and strategies into one bundle.

use crate::source;
use relok_cache::entry::{self, Kind};
use relok_cache::{bundle, Key, Store};
use relok_compiler::artifact::{self, Artifact, CodeTarget, CompileOptions, COMPILER_ID};
use relok_compiler::stencil::Stencil;
use relok_ir::Strategy;
use relok_runtime::cache::store_config;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Opens the store the environment names; an error says why there is none.
pub fn open_store() -> Result<Store, String> {
    let root = relok_cache::default_root()
        .ok_or("the artifact cache is off (RELOK_CACHE=off) or no folder can be named (set RELOK_CACHE_DIR)")?;
    Store::open(store_config(&root)?).map_err(|e| e.to_string())
}

/// What `relok cache stats` reports.
#[derive(Debug, Serialize)]
pub struct StoreReport {
    /// The store's folder.
    pub dir: String,
    /// The compiler identity it belongs to.
    pub compiler: String,
    /// Entries in it.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The size cap.
    pub max_bytes: u64,
    /// Counters summed over every process that used it.
    pub lifetime: relok_cache::TierStats,
    /// The binary archives (tier 2) under the same root, one per device and
    /// driver build.
    pub binary: Vec<ArchiveReport>,
}

/// One binary archive in `relok cache stats`.
#[derive(Debug, Serialize)]
pub struct ArchiveReport {
    /// Its folder name (device and driver build).
    pub name: String,
    /// Entries in it.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Counters summed over every process that used it.
    pub lifetime: relok_cache::TierStats,
}

/// `relok cache stats`.
pub fn stats(store: &Store) -> StoreReport {
    let entries = store.entries();
    StoreReport {
        dir: store.dir().display().to_string(),
        compiler: COMPILER_ID.to_owned(),
        entries: entries.len() as u64,
        bytes: entries.iter().map(|e| e.len).sum(),
        max_bytes: store.config().max_bytes,
        lifetime: store.lifetime_stats(),
        binary: archives(&store.config().root),
    }
}

/// One entry as `relok cache list` shows it.
#[derive(Debug, Serialize)]
pub struct Listed {
    /// The key (hex).
    pub key: String,
    /// Bytes on disk.
    pub bytes: u64,
    /// Seconds since its last use.
    pub age_s: u64,
    /// Its kernel, strategy and target, or why it is unreadable.
    pub what: String,
}

/// The artifact in `key`'s entry file, checked as the loader checks it
/// (framing, artifact, code).
fn read_artifact(key: Key, path: &Path) -> Result<Artifact, String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len > 1 << 30 {
        return Err(format!("{len} bytes is larger than any entry"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let expect = entry::Expect { kind: Kind::Artifact, identity: COMPILER_ID, key: Some(key) };
    let payload = entry::decode(&bytes, &expect).map_err(|e| e.to_string())?;
    let a = Artifact::from_payload(payload).map_err(|e| e.to_string())?;
    a.check(&key.0, a.target, a.strategy).map_err(|e| e.to_string())?;
    a.validate().map_err(|e| e.to_string())?;
    Ok(a)
}

/// `relok cache list`.
pub fn list(store: &Store) -> Vec<Listed> {
    let now = SystemTime::now();
    store
        .entries()
        .into_iter()
        .map(|e| Listed {
            key: e.key.to_hex(),
            bytes: e.len,
            age_s: now.duration_since(e.modified).unwrap_or_default().as_secs(),
            what: match read_artifact(e.key, &e.path) {
                Ok(a) => format!("@{} {} {}", a.entry, a.strategy, a.target.name()),
                Err(why) => format!("unreadable: {why}"),
            },
        })
        .collect()
}

/// `relok cache verify`: each entry that would be rejected, with why;
/// with `rebuild`, also each one whose source does not compile to it.
pub fn verify(store: &Store, rebuild: bool) -> (usize, Vec<(String, String)>) {
    let entries = store.entries();
    let bad = entries
        .iter()
        .filter_map(|e| {
            let proved = read_artifact(e.key, &e.path).and_then(|a| if rebuild { a.rebuild_check().map_err(|e| e.to_string()) } else { Ok(()) });
            proved.err().map(|why| (e.key.to_hex(), why))
        })
        .collect();
    (entries.len(), bad)
}

/// `relok cache clear`: removes every entry, prints how many went and each
/// file it could not remove (with why); failure when any stayed.
pub fn clear(store: &Store) -> std::process::ExitCode {
    let r = store.clear();
    println!("{} files removed", r.removed);
    report_left(&r.left)
}

/// `relok cache gc`: a collection now, printed; failure when it could not
/// remove or check something it meant to.
pub fn gc(store: &Store) -> std::process::ExitCode {
    let r = store.collect();
    println!(
        "{} entries ({} bytes) kept, {} evicted, {} stale temporary files and {} old folders removed",
        r.entries,
        r.bytes,
        r.evicted,
        r.temps_removed,
        r.folders_removed.len()
    );
    report_left(&r.left)
}

/// Prints each `path: reason` left behind to stderr; failure if any.
#[expect(clippy::print_stderr, reason = "what a command could not do goes to stderr")]
fn report_left(left: &[String]) -> std::process::ExitCode {
    for l in left {
        eprintln!("not removed: {l}");
    }
    if left.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        eprintln!("{} files or folders could not be removed", left.len());
        std::process::ExitCode::FAILURE
    }
}

/// `relok cache import`: the number of artifacts copied into the store.
/// With `rebuild`, every artifact is first read as the loader would and
/// recompiled from its source ([`Artifact::rebuild_check`]): one that fails
/// rejects the bundle, naming it, and nothing is imported.
pub fn import(store: &Store, bundle_path: &Path, rebuild: bool) -> Result<usize, String> {
    let bytes = std::fs::read(bundle_path).map_err(|e| format!("{}: {e}", bundle_path.display()))?;
    let entries = bundle::decode(&bytes, COMPILER_ID).map_err(|e| format!("{}: {e}", bundle_path.display()))?;
    if rebuild {
        for (key, e) in &entries {
            let expect = entry::Expect { kind: Kind::Artifact, identity: COMPILER_ID, key: Some(*key) };
            let proved = entry::decode(e, &expect).map_err(|e| e.to_string()).and_then(|payload| {
                let a = Artifact::from_payload(payload).map_err(|e| e.to_string())?;
                a.check(&key.0, a.target, a.strategy).map_err(|e| e.to_string())?;
                a.validate().map_err(|e| e.to_string())?;
                a.rebuild_check().map_err(|e| e.to_string())
            });
            if let Err(why) = proved {
                return Err(format!("{}: artifact {key} rejected, nothing imported: {why}", bundle_path.display()));
            }
        }
    }
    for (_, e) in &entries {
        store.put_entry(e).map_err(|e| format!("{}: {e}", bundle_path.display()))?;
    }
    Ok(entries.len())
}

/// One compiled item of a precompile run.
#[derive(Debug)]
pub struct Precompiled {
    /// The file.
    pub file: String,
    /// The kernel.
    pub kernel: String,
    /// The strategy.
    pub strategy: Strategy,
    /// The target.
    pub target: CodeTarget,
    /// The artifact's key.
    pub key: Key,
}

/// `relok precompile`: every kernel of `files` for every target and
/// strategy (but `patch` for WGSL), as a bundle; `progress` is called after each item with
/// (done, total, label).
pub fn precompile(
    files: &[PathBuf],
    targets: &[CodeTarget],
    strategies: &[Strategy],
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<(Vec<u8>, Vec<Precompiled>), String> {
    if let Some(s) = strategies.iter().find(|s| **s == Strategy::Bake) {
        return Err(format!("strategy {s}: baked kernels hold one process's words and cannot be precompiled (use patch or table)"));
    }
    // Each target with the strategies it supports (patching is impossible
    // on wgpu).
    let pairs: Vec<(CodeTarget, Strategy)> =
        targets.iter().flat_map(|&t| strategies.iter().filter(move |&&s| t.supports(s)).map(move |&s| (t, s))).collect();
    if let Some(t) = targets.iter().find(|t| !pairs.iter().any(|(p, _)| p == *t)) {
        return Err(format!("target {}: none of the strategies given can be used (patching is impossible on wgpu; use table)", t.name()));
    }
    let mut sources = Vec::new();
    for f in files {
        sources.push(source::load(f).map_err(|e| e.0)?);
    }
    let total: usize = sources.iter().map(|s| s.module.kernels().count()).sum::<usize>() * pairs.len();
    let mut entries = Vec::new();
    let mut done = Vec::new();
    for src in &sources {
        for (_, k) in src.module.kernels() {
            let stencil = Stencil::new(&src.module, &k.name).map_err(|e| format!("{}: @{}: {e}", src.file, k.name))?;
            for &(target, strategy) in &pairs {
                let options = CompileOptions::default();
                let a = artifact::compile(&stencil, target, strategy, options, None)
                    .map_err(|e| format!("{}: @{}: {e}", src.file, k.name))?;
                let payload = a.to_payload().map_err(|e| e.to_string())?;
                let key = Key(a.key);
                entries.push(entry::encode(Kind::Artifact, COMPILER_ID, key, &payload));
                done.push(Precompiled { file: src.file.clone(), kernel: k.name.clone(), strategy, target, key });
                progress(done.len(), total, &format!("{} @{} {strategy}", src.file, k.name));
            }
        }
    }
    let bundle = bundle::encode(COMPILER_ID, entries.iter().map(Vec::as_slice)).map_err(|e| e.to_string())?;
    Ok((bundle, done))
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", path.display())
        })
}

/// Every binary archive folder under `root/binary`, in name order.
fn archives(root: &Path) -> Vec<ArchiveReport> {
    let Ok(rd) = std::fs::read_dir(root.join("binary")) else { return Vec::new() };
    let mut out: Vec<ArchiveReport> = rd
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| {
            let (entries, bytes, lifetime) = Store::survey(&e.path());
            ArchiveReport { name: e.file_name().to_string_lossy().into_owned(), entries, bytes, lifetime }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
