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
//!   rebuilding each and comparing bytes (`--trust` skips the rebuild and
//!   also takes the bundle's source-key aliases, which cannot be proved
//!   without the source); a forged or unreadable artifact rejects the
//!   whole bundle;
//! - `keygen DIR`: a key pair for the remote tier;
//! - `push`: every valid local entry (artifacts and binary archives) to
//!   the remote, signed;
//! - `pull`: fetches from the remote what bundles or kernel files need;
//! - `precompile FILES… --out BUNDLE`: compiles every kernel of the files
//!   for the chosen targets and strategies into one bundle.

use crate::source;
use relok_cache::entry::{self, Kind};
use relok_cache::remote::{Remote, RemoteConfig};
use relok_cache::{Key, PullReport, PushReport, RemoteStats, Store, StoreConfig, bundle};
use relok_compiler::artifact::{Artifact, COMPILER_ID, CodeTarget, CompileOptions};
use relok_compiler::stencil::Stencil;
use relok_ir::Strategy;
use relok_runtime::stores::artifact_config;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Opens the store the environment names; an error says why there is none.
pub fn open_store() -> Result<Store, String> {
    let root = relok_cache::default_root()
        .ok_or("the artifact cache is off (RELOK_CACHE=off) or no folder can be named (set RELOK_CACHE_DIR)")?;
    Store::open(artifact_config(&root)?).map_err(|e| e.to_string())
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
    /// The remote tier's counters for it, summed over every process.
    pub remote: RemoteStats,
    /// The remote the environment names (`RELOK_REMOTE`, without its
    /// password) and this process's access, or why there is none.
    pub remote_config: String,
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
    /// The remote tier's counters for it, summed over every process.
    pub remote: RemoteStats,
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
        remote: store.lifetime_remote_stats(),
        remote_config: match open_remote() {
            Ok(r) => format!(
                "{} ({}, key {})",
                r.url(),
                if r.is_writer() { "reads and writes" } else { "reads only" },
                r.key_id()
            ),
            Err(why) => why,
        },
        binary: archives(&store.config().root),
    }
}

/// The remote the environment names, or why there is none.
pub fn open_remote() -> Result<Arc<Remote>, String> {
    match RemoteConfig::from_env() {
        Ok(Some(c)) => Remote::open(c).map(Arc::new).map_err(|e| format!("remote cache off: {e}")),
        Ok(None) => Err("no remote cache (RELOK_REMOTE is not set)".into()),
        Err(e) => Err(format!("remote cache off: {e}")),
    }
}

/// `relok cache push`: every valid entry of the artifact store and of each
/// binary archive under its root, signed, to the remote. Per store: its
/// folder and what was pushed.
pub fn push(store: &Store) -> Result<Vec<(String, PushReport)>, String> {
    let remote = open_remote()?;
    let root = &store.config().root;
    let mut stores = vec![Store::open(store.config().clone()).map_err(|e| e.to_string())?];
    for name in archive_names(root) {
        let config = StoreConfig {
            root: root.clone(),
            family: "binary".into(),
            folder: name.clone(),
            stale_prefix: name.clone(),
            identity: name,
            kind: Kind::Binary,
            max_bytes: relok_cache::DEFAULT_MAX_BYTES,
            collect_interval: std::time::Duration::from_secs(3600),
        };
        stores.push(Store::open(config).map_err(|e| e.to_string())?);
    }
    let mut out = Vec::new();
    for s in stores {
        let s = s.with_remote(Arc::clone(&remote));
        let r = s.push().map_err(|e| e.to_string())?;
        out.push((s.dir().display().to_string(), r));
    }
    Ok(out)
}

/// `relok cache pull`: the artifacts that `bundles` hold and that every
/// kernel of `files` compiles to for each target and strategy, fetched
/// from the remote into the store when it lacks them.
pub fn pull(
    store: Store,
    bundles: &[PathBuf],
    files: &[PathBuf],
    targets: &[CodeTarget],
    strategies: &[Strategy],
) -> Result<(usize, PullReport), String> {
    let remote = open_remote()?;
    let mut keys = Vec::new();
    for b in bundles {
        let bytes = std::fs::read(b).map_err(|e| format!("{}: {e}", b.display()))?;
        let entries = bundle::decode(&bytes, COMPILER_ID).map_err(|e| format!("{}: {e}", b.display()))?;
        keys.extend(entries.iter().filter(|e| e.kind == Kind::Artifact).map(|e| e.key));
    }
    for f in files {
        let src = source::load(f).map_err(|e| e.0)?;
        for (_, k) in src.module.kernels() {
            let stencil = Stencil::new(&src.module, &k.name).map_err(|e| format!("{}: @{}: {e}", src.file, k.name))?;
            for &t in targets {
                for &s in strategies.iter().filter(|&&s| t.supports(s) && s != Strategy::Bake) {
                    // The artifact and its alias under the file's source key.
                    keys.push(Key(stencil.key(t, s, CompileOptions::default())));
                    keys.push(Key(relok_compiler::stencil::source_key(
                        &src.text,
                        &k.name,
                        t,
                        s,
                        CompileOptions::default(),
                    )));
                }
            }
        }
    }
    keys.sort();
    keys.dedup();
    let store = store.with_remote(remote);
    Ok((keys.len(), store.pull(&keys)))
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
    // An entry is the artifact under its own key, or its alias under a
    // source key (docs/cache.md), which says so.
    let own = if a.alias == Some(key.0) { a.key } else { key.0 };
    a.check(&own, a.target, a.strategy).map_err(|e| e.to_string())?;
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
            let proved = read_artifact(e.key, &e.path)
                .and_then(|a| if rebuild { a.rebuild_check().map_err(|e| e.to_string()) } else { Ok(()) });
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

/// `relok cache import`: the number of entries copied into the store (a
/// bundle's machine code is for the devices that load the bundle, not for
/// the artifact store). With `rebuild`, every artifact is first read as
/// the loader would and recompiled from its source
/// ([`Artifact::rebuild_check`]): one that fails rejects the bundle,
/// naming it, and nothing is imported; source-key aliases are left out
/// (nothing ties one to its source text here; the store makes its own on
/// first use).
pub fn import(store: &Store, bundle_path: &Path, rebuild: bool) -> Result<usize, String> {
    let bytes = std::fs::read(bundle_path).map_err(|e| format!("{}: {e}", bundle_path.display()))?;
    let entries = bundle::decode(&bytes, COMPILER_ID).map_err(|e| format!("{}: {e}", bundle_path.display()))?;
    let mut chosen = Vec::new();
    for e in entries.iter().filter(|e| e.kind == Kind::Artifact) {
        let key = e.key;
        let expect = entry::Expect { kind: Kind::Artifact, identity: COMPILER_ID, key: Some(key) };
        let read = entry::decode(e.bytes, &expect)
            .map_err(|e| e.to_string())
            .and_then(|payload| Artifact::from_payload(payload).map_err(|e| e.to_string()));
        let alias = read.as_ref().is_ok_and(|a| a.alias == Some(key.0));
        if rebuild {
            if alias {
                continue;
            }
            let proved = read.and_then(|a| {
                a.check(&key.0, a.target, a.strategy).map_err(|e| e.to_string())?;
                a.validate().map_err(|e| e.to_string())?;
                a.rebuild_check().map_err(|e| e.to_string())
            });
            if let Err(why) = proved {
                return Err(format!("{}: artifact {key} rejected, nothing imported: {why}", bundle_path.display()));
            }
        }
        chosen.push(e.bytes);
    }
    for e in &chosen {
        store.put_entry(e).map_err(|e| format!("{}: {e}", bundle_path.display()))?;
    }
    Ok(chosen.len())
}

pub use relok_build::Precompiled;

/// `relok precompile`: every kernel of `files` for every target and
/// strategy into a bundle, with cubins for `cubins` (compute capabilities
/// × 10) — `relok_build::bundle_of` over the files loaded here (errors
/// rendered against the file). `progress` is called after each item with
/// (done, total, label).
pub fn precompile(
    files: &[PathBuf],
    targets: &[CodeTarget],
    strategies: &[Strategy],
    cubins: &[u32],
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<(Vec<u8>, Vec<Precompiled>), String> {
    let mut sources = Vec::new();
    for f in files {
        let s = source::load(f).map_err(|e| e.0)?;
        sources.push(relok_build::Source { file: s.file, text: s.text, module: s.module });
    }
    relok_build::bundle_of(&sources, targets, strategies, cubins, progress).map_err(|e| e.to_string())
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// Every binary archive folder under `root/binary`, in name order.
fn archives(root: &Path) -> Vec<ArchiveReport> {
    archive_names(root)
        .into_iter()
        .map(|name| {
            let dir = root.join("binary").join(&name);
            let (entries, bytes, lifetime) = Store::survey(&dir);
            ArchiveReport { name, entries, bytes, lifetime, remote: Store::survey_remote(&dir) }
        })
        .collect()
}

/// The folder names of `root/binary` (folders only, never followed), in
/// order.
fn archive_names(root: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(root.join("binary")) else { return Vec::new() };
    let mut out: Vec<String> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    out.sort();
    out
}
