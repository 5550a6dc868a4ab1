//! One folder of entries on disk (see the crate docs for the layout and
//! the rules).

use crate::entry::{self, EntryError, Expect, Kind};
use crate::remote::{Remote, RemoteError, Tier, TierLookup};
use crate::stats::{Counter, Counters};
use crate::{Key, RemoteStats, TierStats};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// The default size cap of a store: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// Temporary files older than this are left by killed writers: removed.
pub const TEMP_MAX_AGE: Duration = Duration::from_secs(3600);
/// A hit refreshes an entry's modification time when it is older than this.
const TOUCH_AFTER: Duration = Duration::from_secs(60);
/// Another build's folder is removed once unused for this long, so that
/// two builds used alternately (two checkouts, an upgrade and a rollback)
/// keep their caches.
pub const STALE_FOLDER_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// A collection lock older than this belongs to a dead collector.
const LOCK_MAX_AGE: Duration = Duration::from_secs(600);
/// An entry larger than this (or than the store's cap) is not read (a
/// damaged or hostile file).
const MAX_ENTRY_BYTES: u64 = 1 << 30;
/// The stats log is compacted by a collection once it is this long.
const STATS_COMPACT_BYTES: u64 = 64 << 10;
/// At most this much of the stats log is read; the rest counts nothing.
const STATS_MAX_BYTES: u64 = 1 << 20;
/// A modification time further ahead of the clock than this is in the
/// future: stale for locks, stamps and temporary files, "now" for the LRU
/// order (and reset to now by the next collection or hit). The slack
/// covers clocks of machines sharing a network file system.
const FUTURE_SLACK: Duration = Duration::from_secs(60);
const STATS_LOG: &str = "stats.log";
const GC_STAMP: &str = "gc-stamp";
const GC_LOCK: &str = "gc.lock";
const TEMP_PREFIX: &str = ".tmp-";

/// Where a store lives and how it behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// The cache root (created private to the user).
    pub root: PathBuf,
    /// The family folder under the root (`artifacts`, `binary`).
    pub family: String,
    /// This store's folder in the family: format version and identity.
    pub folder: String,
    /// Folders of the family that start with this prefix, continue with at
    /// least one byte of `[A-Za-z0-9._-]` and are not `folder` belong to
    /// other builds: a collection removes what relok wrote in them. An
    /// empty prefix (the artifact store's) means relok's versioned pattern,
    /// `v<digits>-<name>`; no other folder of the family is touched.
    pub stale_prefix: String,
    /// The identity written into and expected from every entry.
    pub identity: String,
    /// The kind of every entry.
    pub kind: Kind,
    /// The size cap in bytes; a collection evicts least-recently-used
    /// entries down to 80 % of it.
    pub max_bytes: u64,
    /// A write starts a collection when the last one is older than this.
    pub collect_interval: Duration,
}

impl StoreConfig {
    /// The tier-1 artifact store of a compiler build: folder
    /// `artifacts/v<format>-<identity>`; every other folder of the family
    /// is stale.
    pub fn artifacts(root: impl Into<PathBuf>, identity: &str) -> StoreConfig {
        StoreConfig {
            root: root.into(),
            family: "artifacts".into(),
            folder: format!("v{}-{}", entry::FORMAT_VERSION, folder_name(identity)),
            stale_prefix: String::new(),
            identity: identity.to_owned(),
            kind: Kind::Artifact,
            max_bytes: DEFAULT_MAX_BYTES,
            collect_interval: Duration::from_secs(3600),
        }
    }

    /// A tier-2 binary archive (machine code for one device): folder
    /// `binary/<device>-<build>` where `build` names the driver or
    /// toolchain build; the folders of other builds for the same device
    /// (`binary/<device>-*`) are stale. The identity is the folder name.
    pub fn binary(root: impl Into<PathBuf>, device: &str, build: &str) -> StoreConfig {
        let folder = folder_name(&format!("{device}-{build}"));
        StoreConfig {
            root: root.into(),
            family: "binary".into(),
            stale_prefix: folder_name(&format!("{device}-")),
            identity: folder.clone(),
            folder,
            kind: Kind::Binary,
            max_bytes: DEFAULT_MAX_BYTES,
            collect_interval: Duration::from_secs(3600),
        }
    }

    /// This store's folder.
    pub fn dir(&self) -> PathBuf {
        self.root.join(&self.family).join(&self.folder)
    }

    /// Whether `name`, a folder of the family, is another build's store
    /// folder by its name (see `stale_prefix`): a name relok could have
    /// made, never one it did not.
    pub fn is_stale_folder_name(&self, name: &str) -> bool {
        let Some(rest) = name.strip_prefix(self.stale_prefix.as_str()) else { return false };
        let safe = |s: &str| {
            !s.is_empty()
                && s.len() <= 120
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
        };
        let versioned = |s: &str| {
            s.strip_prefix('v')
                .and_then(|s| s.split_once('-'))
                .is_some_and(|(v, id)| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) && safe(id))
        };
        name != self.folder && safe(rest) && (!self.stale_prefix.is_empty() || versioned(name))
    }
}

/// `s` with every byte outside `[A-Za-z0-9._-]` replaced by `_`, at most
/// 100 bytes: a folder name that no identity can turn into a path.
fn folder_name(s: &str) -> String {
    s.bytes()
        .take(100)
        .map(|b| if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' { b as char } else { '_' })
        .collect()
}

/// The cache root from the environment: `RELOK_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/relok`, else `$HOME/.cache/relok`. `None` when the
/// cache is switched off (`RELOK_CACHE=off`, `0` or `false`) or no folder
/// can be named.
pub fn default_root() -> Option<PathBuf> {
    if switched_off("RELOK_CACHE") {
        return None;
    }
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    nonempty("RELOK_CACHE_DIR")
        .or_else(|| nonempty("XDG_CACHE_HOME").map(|p| p.join("relok")))
        .or_else(|| nonempty("HOME").map(|p| p.join(".cache").join("relok")))
}

/// Whether the environment variable `var` switches something off (`off`,
/// `0`, `false` or `no`, any case).
pub fn switched_off(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "off" | "0" | "false" | "no"))
}

/// Why a store could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A folder of the store is not private to this user.
    #[error("cache folder {path} is not safe to use: {reason}")]
    Insecure {
        /// The folder.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An entry larger than the store's cap (or than any entry): never
    /// written, since it would never be read.
    #[error("an entry of {len} bytes is larger than the store's cap of {cap} bytes")]
    TooLarge {
        /// The entry's length.
        len: u64,
        /// The bound.
        cap: u64,
    },
    /// The file system refused.
    #[error("cache folder {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.to_owned(), source }
}

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A valid entry: its payload.
    Hit(Vec<u8>),
    /// No entry.
    Miss,
    /// An entry that is not valid for this key, with the reason; a miss
    /// whose rebuild replaces it.
    Rejected(String),
}

/// One entry on disk, as listed.
#[derive(Clone, Debug)]
pub struct EntryInfo {
    /// Its key.
    pub key: Key,
    /// Its file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub len: u64,
    /// Its last use (modification time).
    pub modified: SystemTime,
}

/// What a collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectReport {
    /// Entries left.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Entries evicted (least recently used first).
    pub evicted: u64,
    /// Temporary files of dead writers removed.
    pub temps_removed: u64,
    /// Folders of other builds removed.
    pub folders_removed: Vec<String>,
    /// What the collection meant to remove or check and could not, each
    /// as `path: reason` (a folder it cannot write, a shard it refuses).
    pub left: Vec<String>,
}

/// What [`Store::clear`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClearReport {
    /// Files removed.
    pub removed: u64,
    /// What it could not remove, each as `path: reason` (a folder it
    /// cannot write, a shard it refuses, a link or FIFO under an entry's
    /// name, which it never touches).
    pub left: Vec<String>,
}

/// The number of files removed (so that `"{} files removed"` reads right);
/// [`ClearReport::left`] says what stayed.
impl std::fmt::Display for ClearReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.removed)
    }
}

/// An opened store. Cheap to share: lookups and writes take `&self`.
#[derive(Debug)]
pub struct Store {
    inner: Arc<Inner>,
    collector: Mutex<Option<JoinHandle<()>>>,
    /// The remote tier behind this store, if one was given (boxed: a
    /// store without one stays small).
    remote: Option<Box<Tier>>,
}

/// What [`Store::push`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushReport {
    /// Entries written to the remote.
    pub pushed: u64,
    /// Bytes written (signed values).
    pub bytes: u64,
    /// Local entries not pushed because they are not valid, each as
    /// `key: reason`.
    pub skipped: Vec<String>,
}

/// What [`Store::pull`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullReport {
    /// Keys already in the local store.
    pub local: u64,
    /// Keys fetched from the remote (and written locally).
    pub fetched: u64,
    /// Keys in neither.
    pub missing: u64,
    /// Remote values rejected (see [`RemoteStats::rejected`]).
    pub rejected: u64,
    /// Lookups that failed (the remote is then off).
    pub errors: u64,
}

#[derive(Debug)]
struct Inner {
    config: StoreConfig,
    dir: PathBuf,
    counters: Counters,
    /// What was last appended to the stats log.
    flushed: Mutex<TierStats>,
}

impl Store {
    /// Opens (creating it private to the user) the store of `config`. Never
    /// scans the entries. A folder of the store that is not a directory
    /// owned by this user, or that others can write, is refused.
    pub fn open(config: StoreConfig) -> Result<Store, StoreError> {
        let dir = config.dir();
        // Level by level, each checked before the next is made in it: a
        // folder is never created through a link.
        for p in [config.root.clone(), config.root.join(&config.family), dir.clone()] {
            os::create_private_dir(&p).map_err(io_err(&p))?;
            os::check_private(&p)?;
        }
        let inner = Inner { config, dir, counters: Counters::default(), flushed: Mutex::new(TierStats::default()) };
        Ok(Store { inner: Arc::new(inner), collector: Mutex::new(None), remote: None })
    }

    /// This store with `remote` behind it: a local miss is looked up there
    /// (a verified entry is written locally), a local write is queued for
    /// it when this process holds the signing key. Its entries are named
    /// `relok:<family>/<folder>/<key hex>` (see [`crate::remote`]).
    pub fn with_remote(mut self, remote: Arc<Remote>) -> Store {
        self.remote = Some(Box::new(Tier::new(remote, &self.inner.config.family, &self.inner.config.folder)));
        self
    }

    /// The remote behind this store, if any.
    pub fn remote(&self) -> Option<&Arc<Remote>> {
        self.remote.as_ref().map(|t| &t.remote)
    }

    /// This process's remote counters for this store (zero without one).
    pub fn remote_stats(&self) -> RemoteStats {
        self.remote.as_ref().map(|t| t.stats()).unwrap_or_default()
    }

    /// The remote counters of every process that used this store (their
    /// stats log lines) plus this process's unlogged ones.
    pub fn lifetime_remote_stats(&self) -> RemoteStats {
        let before = self.remote.as_ref().map(|t| *lock(&t.flushed)).unwrap_or_default();
        RemoteStats::sum_lines(&read_stats_log(&self.inner.dir)).add(&self.remote_stats().since(&before))
    }

    /// Waits for this process's queued remote writes, at most the remote's
    /// flush time limit (as dropping the store does); returns how many are
    /// left.
    pub fn flush_remote(&self) -> usize {
        let Some(tier) = &self.remote else { return 0 };
        let left = tier.remote.flush(tier.remote.flush_timeout());
        if left > 0 {
            tracing::warn!(
                "{left} writes to the remote cache {} not finished within the flush time limit",
                tier.remote.url()
            );
        }
        left
    }

    /// The remote counters every process logged in the store folder `dir`.
    pub fn survey_remote(dir: &Path) -> RemoteStats {
        RemoteStats::sum_lines(&read_stats_log(dir))
    }

    /// Writes every valid local entry to the remote now, signed (`relok
    /// cache push`). Needs the signing key.
    pub fn push(&self) -> Result<PushReport, RemoteError> {
        let tier = self.remote.as_ref().ok_or(RemoteError::NoKey)?;
        if !tier.remote.is_writer() {
            return Err(RemoteError::ReadOnly);
        }
        let mut report = PushReport::default();
        let bound = MAX_ENTRY_BYTES.min(self.inner.config.max_bytes);
        let mut batch = Vec::new();
        let entries = self.entries();
        for (i, info) in entries.iter().enumerate() {
            match os::read_regular(&info.path, bound) {
                Ok(Bounded::Whole(_, _, bytes)) => match entry::decode(&bytes, &self.expect(info.key)) {
                    Ok(_) => batch.push((tier.name(info.key), bytes)),
                    Err(e) => report.skipped.push(format!("{}: {e}", info.key)),
                },
                Ok(Bounded::TooLong(len)) => {
                    report.skipped.push(format!("{}: {len} bytes, larger than the cap", info.key))
                }
                Err(e) => report.skipped.push(format!("{}: {e}", info.key)),
            }
            if batch.len() == 64 || (i + 1 == entries.len() && !batch.is_empty()) {
                report.bytes += tier.remote.put_now(&batch)?;
                report.pushed += batch.len() as u64;
                tier.counters.add(crate::stats::RemoteCounter::Writes, batch.len() as u64);
                batch.clear();
            }
        }
        tier.counters.add(crate::stats::RemoteCounter::BytesWritten, report.bytes);
        Ok(report)
    }

    /// Looks every key up, fetching from the remote what the local store
    /// lacks (`relok cache pull`): 64 keys per round trip.
    pub fn pull(&self, keys: &[Key]) -> PullReport {
        let mut r = PullReport::default();
        let before = self.remote_stats();
        let mut wanted = Vec::new();
        for &key in keys {
            let found = self.read_entry(key);
            self.count_lookup(key, &found);
            match found {
                Lookup::Hit(_) => r.local += 1,
                Lookup::Miss | Lookup::Rejected(_) => wanted.push(key),
            }
        }
        if let Some(tier) = &self.remote {
            for batch in wanted.chunks(64) {
                let found = tier.get_many(batch, self.entry_bound(), |k, b| self.check_entry(k, b));
                for (&key, f) in batch.iter().zip(found) {
                    if let TierLookup::Entry(bytes) = f {
                        self.backfill(key, &bytes);
                    }
                }
            }
        }
        let d = self.remote_stats().since(&before);
        (r.fetched, r.missing, r.rejected, r.errors) = (d.hits, d.misses, d.rejected, d.errors);
        if self.remote.is_none() {
            r.missing = keys.len() as u64 - r.local;
        }
        r
    }

    fn expect(&self, key: Key) -> Expect<'_> {
        Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(key) }
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// This store's folder.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The file of `key`'s entry: `<dir>/<2 hex>/<62 hex>`.
    pub fn entry_path(&self, key: Key) -> PathBuf {
        let hex = key.to_hex();
        self.inner.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// Looks `key` up: a valid entry's payload, a miss, or a rejected
    /// entry with its reason (also a miss).
    /// A local miss is then looked up in the remote, if there is one: a
    /// verified remote entry is written to the local store and is a hit
    /// (of the remote; the local store counts the miss).
    pub fn get(&self, key: Key) -> Lookup {
        let found = self.read_entry(key);
        self.count_lookup(key, &found);
        match (&found, &self.remote) {
            (Lookup::Hit(_), _) | (_, None) => found,
            (_, Some(tier)) => self.get_remote(tier, key).unwrap_or(found),
        }
    }

    /// Counts a local lookup.
    fn count_lookup(&self, key: Key, found: &Lookup) {
        let c = &self.inner.counters;
        match found {
            Lookup::Hit(_) => c.add(Counter::Hits, 1),
            Lookup::Miss => c.add(Counter::Misses, 1),
            Lookup::Rejected(why) => {
                tracing::warn!("artifact cache entry {key} rejected: {why}; it will be rebuilt");
                c.add(Counter::Misses, 1);
                c.add(Counter::Corrupt, 1);
            }
        }
    }

    /// Whether the framed `bytes` are a valid entry of this store for `key`.
    fn check_entry(&self, key: Key, bytes: &[u8]) -> Result<(), String> {
        entry::decode(bytes, &self.expect(key)).map(|_| ()).map_err(|e| e.to_string())
    }

    /// The bound of an entry's size.
    fn entry_bound(&self) -> u64 {
        MAX_ENTRY_BYTES.min(self.inner.config.max_bytes)
    }

    /// `key` from the remote, checked as a local entry is, then written
    /// locally (a failed write is counted; the hit stands).
    fn get_remote(&self, tier: &Tier, key: Key) -> Option<Lookup> {
        let TierLookup::Entry(bytes) = tier.get(key, self.entry_bound(), |k, b| self.check_entry(k, b)) else {
            return None;
        };
        self.backfill(key, &bytes);
        let payload = entry::decode(&bytes, &self.expect(key)).ok()?;
        Some(Lookup::Hit(payload.to_vec()))
    }

    /// Writes a verified remote entry to the local store.
    fn backfill(&self, key: Key, bytes: &[u8]) {
        match self.publish(key, bytes) {
            Ok(()) => self.inner.counters.add(Counter::BytesWritten, bytes.len() as u64),
            Err(e) => {
                tracing::warn!("could not write cache entry {key} fetched from the remote: {e}");
                self.inner.counters.add(Counter::WriteErrors, 1);
            }
        }
    }

    fn read_entry(&self, key: Key) -> Lookup {
        let path = self.entry_path(key);
        match self.check_shard(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Rejected(e.to_string()),
        }
        let bound = MAX_ENTRY_BYTES.min(self.inner.config.max_bytes);
        let (f, meta, mut buf) = match os::read_regular(&path, bound) {
            Ok(Bounded::Whole(f, meta, buf)) => (f, meta, buf),
            Ok(Bounded::TooLong(len)) => {
                return Lookup::Rejected(format!("{len} bytes is larger than any entry of this store (cap {bound})"));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Rejected(format!("cannot read: {e}")),
        };
        if let Some(why) = os::foreign_owner(&meta) {
            return Lookup::Rejected(why);
        }
        let expect = Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(key) };
        let range = match entry::decode(&buf, &expect) {
            Ok(p) => {
                let start = p.as_ptr() as usize - buf.as_ptr() as usize;
                start..start + p.len()
            }
            Err(e) => return Lookup::Rejected(e.to_string()),
        };
        self.inner.counters.add(Counter::BytesRead, buf.len() as u64);
        let now = SystemTime::now();
        let touch = |m: SystemTime| now.duration_since(m).unwrap_or_default() > TOUCH_AFTER || in_future(m, now);
        if meta.modified().is_ok_and(touch) {
            // The LRU clock; failing to set it only makes eviction less exact.
            let _ = f.set_modified(now);
        }
        buf.truncate(range.end);
        buf.drain(..range.start);
        Lookup::Hit(buf)
    }

    /// Writes `payload` as `key`'s entry, replacing whatever is there, and
    /// may start a collection. A failure is counted and returned; the
    /// caller goes on without the store.
    pub fn put(&self, key: Key, payload: &[u8]) -> Result<(), StoreError> {
        let bytes = entry::encode(self.inner.config.kind, &self.inner.config.identity, key, payload);
        let published = self.publish(key, &bytes);
        if let Some(tier) = &self.remote {
            // Local first, then the remote, off the caller's path.
            tier.put(key, bytes.clone());
        }
        match published {
            Ok(()) => {
                self.inner.counters.add(Counter::BytesWritten, bytes.len() as u64);
                self.maybe_collect();
                Ok(())
            }
            Err(e) => {
                tracing::warn!("could not write cache entry {key}: {e}");
                self.inner.counters.add(Counter::WriteErrors, 1);
                Err(e)
            }
        }
    }

    /// Writes an already framed entry (from a bundle) after checking it.
    pub fn put_entry(&self, bytes: &[u8]) -> Result<Key, EntryError> {
        let h = entry::header(bytes)?;
        let expect = Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(h.key) };
        entry::decode(bytes, &expect)?;
        match self.publish(h.key, bytes) {
            Ok(()) => self.inner.counters.add(Counter::BytesWritten, bytes.len() as u64),
            Err(e) => {
                tracing::warn!("could not write cache entry {}: {e}", h.key);
                self.inner.counters.add(Counter::WriteErrors, 1);
            }
        }
        Ok(h.key)
    }

    /// Temporary file, created exclusively, written whole, renamed over the
    /// entry's path.
    fn publish(&self, key: Key, bytes: &[u8]) -> Result<(), StoreError> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let cap = MAX_ENTRY_BYTES.min(self.inner.config.max_bytes);
        if bytes.len() as u64 > cap {
            return Err(StoreError::TooLarge { len: bytes.len() as u64, cap });
        }
        let path = self.entry_path(key);
        let shard = path.parent().unwrap_or(&self.inner.dir);
        os::create_private_dir(shard).map_err(io_err(shard))?;
        os::check_private(shard)?;
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
        let name = format!(
            "{TEMP_PREFIX}{}-{}-{nanos}-{}",
            &key.to_hex()[2..],
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = shard.join(name);
        let written = os::create_private_file(&tmp).and_then(|mut f| f.write_all(bytes));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(StoreError::Io { path: tmp, source: e });
        }
        let mut renamed = fs::rename(&tmp, &path);
        if renamed.is_err() && fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            // A directory where the entry belongs: it is not ours to keep.
            let _ = fs::remove_dir_all(&path);
            renamed = fs::rename(&tmp, &path);
        }
        renamed.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            StoreError::Io { path, source: e }
        })
    }

    /// Removes `key`'s entry after a hit whose payload the caller could not
    /// use: that lookup counts as a miss and the entry as corrupt.
    /// An entry that came from the remote counts as a remote rejection
    /// instead (the local store counted a miss already).
    pub fn reject(&self, key: Key, why: &str) {
        tracing::warn!("artifact cache entry {key} rejected: {why}; it will be rebuilt");
        if !self.remote.as_ref().is_some_and(|t| t.take_back(key)) {
            self.inner.counters.sub(Counter::Hits, 1);
            self.inner.counters.add(Counter::Misses, 1);
            self.inner.counters.add(Counter::Corrupt, 1);
        }
        let path = self.entry_path(key);
        if self.check_shard(&path).is_ok() && fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            let _ = fs::remove_file(path);
        }
    }

    /// Checks the shard folder of the entry file `path` as the store's own
    /// folders are checked: a directory (not a link) of this user that no
    /// one else can write. `NotFound` when it does not exist.
    fn check_shard(&self, path: &Path) -> io::Result<()> {
        let shard = path.parent().unwrap_or(&self.inner.dir);
        // One `lstat` per lookup: a missing shard is a miss (NotFound), any
        // other shard an insecure one.
        let meta = fs::symlink_metadata(shard)?;
        os::private_dir(shard, &meta).map_err(|e| io::Error::other(format!("{e}; its entries are not used")))
    }

    /// Counts a payload built because this store missed.
    pub fn count_compile(&self) {
        self.inner.counters.add(Counter::Compiles, 1);
    }

    /// This process's counters.
    pub fn stats(&self) -> TierStats {
        self.inner.counters.snapshot()
    }

    /// The counters every process logged in the store folder `dir`, its
    /// entry count and their bytes, without opening it (for reports over
    /// several stores).
    pub fn survey(dir: &Path) -> (u64, u64, TierStats) {
        let logged = read_stats_log(dir);
        let inner = Inner {
            config: StoreConfig::artifacts(dir, ""),
            dir: dir.to_owned(),
            counters: Counters::default(),
            flushed: Mutex::new(TierStats::default()),
        };
        let (mut n, mut bytes) = (0, 0);
        inner.walk(&mut |w| {
            if let Walked::Entry(e) = w {
                n += 1;
                bytes += e.len;
            }
        });
        (n, bytes, TierStats::sum_lines(&logged))
    }

    /// The counters of every process that used this store (their stats log
    /// lines) plus this process's unlogged ones.
    pub fn lifetime_stats(&self) -> TierStats {
        let logged = read_stats_log(&self.inner.dir);
        TierStats::sum_lines(&logged).add(&self.unflushed())
    }

    fn unflushed(&self) -> TierStats {
        let now = self.stats();
        let before = *self.inner.flushed.lock().unwrap_or_else(|e| e.into_inner());
        // Saturating: `reject` takes a hit back, which may have been
        // flushed already.
        TierStats {
            hits: now.hits.saturating_sub(before.hits),
            misses: now.misses.saturating_sub(before.misses),
            compiles: now.compiles.saturating_sub(before.compiles),
            bytes_read: now.bytes_read.saturating_sub(before.bytes_read),
            bytes_written: now.bytes_written.saturating_sub(before.bytes_written),
            evictions: now.evictions.saturating_sub(before.evictions),
            corrupt: now.corrupt.saturating_sub(before.corrupt),
            write_errors: now.write_errors.saturating_sub(before.write_errors),
        }
    }

    /// Appends this process's counters since the last flush to the stats
    /// log (one line, one `write` in append mode). Also done on drop.
    pub fn flush_stats(&self) {
        let delta = self.unflushed();
        let remote_now = self.remote_stats();
        let remote_delta = remote_now.since(&self.remote.as_ref().map(|t| *lock(&t.flushed)).unwrap_or_default());
        if delta.is_zero() && remote_delta.is_zero() {
            return;
        }
        let mut text = if delta.is_zero() { String::new() } else { delta.to_line() };
        if !remote_delta.is_zero() {
            text.push_str(&remote_delta.to_line());
        }
        let path = self.inner.dir.join(STATS_LOG);
        // Not through a link, never blocking on a FIFO, only into a regular
        // file of this user.
        let ok = os::append_file(&path).and_then(|mut f| f.write_all(text.as_bytes())).is_ok();
        if ok {
            *self.inner.flushed.lock().unwrap_or_else(|e| e.into_inner()) = self.stats();
            if let Some(t) = &self.remote {
                *lock(&t.flushed) = remote_now;
            }
        }
    }

    /// Every entry file of the store (temporary files excluded), in key
    /// order.
    pub fn entries(&self) -> Vec<EntryInfo> {
        let mut out = Vec::new();
        self.inner.walk(&mut |e| {
            if let Walked::Entry(info) = e {
                out.push(info);
            }
        });
        out.sort_by_key(|e| e.key);
        out
    }

    /// Reads every entry and checks it against its own key: each entry with
    /// `Ok` or the reason it would be rejected.
    pub fn verify(&self) -> Vec<(EntryInfo, Result<(), String>)> {
        let expect =
            |key| Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(key) };
        self.entries()
            .into_iter()
            .map(|info| {
                let bound = MAX_ENTRY_BYTES.min(self.inner.config.max_bytes);
                let r = match os::read_regular(&info.path, bound) {
                    Ok(Bounded::Whole(_, _, b)) => {
                        entry::decode(&b, &expect(info.key)).map(|_| ()).map_err(|e| e.to_string())
                    }
                    Ok(Bounded::TooLong(len)) => {
                        Err(format!("{len} bytes is larger than any entry of this store (cap {bound})"))
                    }
                    Err(e) => Err(format!("cannot read: {e}")),
                };
                (info, r)
            })
            .collect()
    }

    /// Removes every entry and temporary file (regular files of this user
    /// under relok's names, in shards that pass the folder checks); says
    /// how many went and what stayed.
    pub fn clear(&self) -> ClearReport {
        let mut r = ClearReport::default();
        self.inner.walk(&mut |e| {
            let path = match e {
                Walked::Entry(info) => info.path,
                Walked::Temp(path, _) => path,
                Walked::Left(path, why) => return r.left.push(format!("{}: {why}", path.display())),
            };
            match fs::remove_file(&path) {
                Ok(()) => r.removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => r.left.push(format!("{}: {e}", path.display())),
            }
        });
        r
    }

    /// Collects now: removes other builds' folders and stale temporary
    /// files, then evicts least-recently-used entries while the store is
    /// over its cap.
    pub fn collect(&self) -> CollectReport {
        self.inner.collect_at(SystemTime::now())
    }

    /// [`Store::collect`] with a given clock, for tests.
    #[doc(hidden)]
    pub fn collect_at(&self, now: SystemTime) -> CollectReport {
        self.inner.collect_at(now)
    }

    /// Starts a collection on a background thread if the last one is older
    /// than the interval and no other process runs one (`gc.lock`, created
    /// exclusively; a lock older than ten minutes is taken over).
    fn maybe_collect(&self) {
        let dir = &self.inner.dir;
        let interval = self.inner.config.collect_interval;
        let now = SystemTime::now();
        // Ages from the folder entry alone (lstat): neither file is ever
        // opened for reading. A date in the future is stale.
        let age = |p: &Path| {
            let m = fs::symlink_metadata(p).ok().filter(|m| m.is_file())?.modified().ok()?;
            (!in_future(m, now)).then(|| now.duration_since(m).unwrap_or_default())
        };
        if age(&dir.join(GC_STAMP)).is_some_and(|a| a < interval) {
            return;
        }
        let lock = dir.join(GC_LOCK);
        if os::create_private_file(&lock).is_err() {
            if age(&lock).is_some_and(|a| a <= LOCK_MAX_AGE) {
                return;
            }
            let _ = fs::remove_file(&lock);
            if os::create_private_file(&lock).is_err() {
                return;
            }
        }
        // A new stamp, created exclusively: whatever had its name (a link,
        // a FIFO) is unlinked, never opened.
        let stamp = dir.join(GC_STAMP);
        let _ = fs::remove_file(&stamp);
        let _ = os::create_private_file(&stamp);
        let inner = Arc::clone(&self.inner);
        let mut slot = self.collector.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = slot.take() {
            let _ = h.join();
        }
        let spawned = std::thread::Builder::new().name("relok-cache-collect".into()).spawn(move || {
            inner.collect_at(SystemTime::now());
            let _ = fs::remove_file(inner.dir.join(GC_LOCK));
        });
        match spawned {
            Ok(h) => *slot = Some(h),
            Err(_) => {
                let _ = fs::remove_file(lock);
            }
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(h) = self.collector.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
        self.flush_remote();
        self.flush_stats();
    }
}

enum Walked {
    /// A regular file of this user named as an entry.
    Entry(EntryInfo),
    /// A regular file of this user named as a temporary file, in a shard or
    /// in the store's folder (the stats log's).
    Temp(PathBuf, SystemTime),
    /// Something under relok's names that is not its to touch (a link, a
    /// FIFO, a folder, another user's file, a shard that fails the folder
    /// checks), with why.
    Left(PathBuf, String),
}

/// Whether `t` is further in the future than the slack allows.
fn in_future(t: SystemTime, now: SystemTime) -> bool {
    t.duration_since(now).is_ok_and(|d| d > FUTURE_SLACK)
}

/// What a name in a folder of the store is, by its folder entry alone
/// (lstat: nothing is followed or opened).
fn classify(path: PathBuf, meta: &fs::Metadata) -> Result<(PathBuf, SystemTime), Walked> {
    if !meta.is_file() {
        let what = if meta.is_symlink() {
            "a symbolic link"
        } else if meta.is_dir() {
            "a folder"
        } else {
            "not a regular file"
        };
        return Err(Walked::Left(path, format!("{what}, not relok's to touch")));
    }
    if let Some(why) = os::foreign_owner(meta) {
        return Err(Walked::Left(path, why));
    }
    Ok((path, meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
}

/// Visits every entry and temporary file of the store folder `dir`
/// (other names are ignored). Shards are checked like the store's own
/// folders; one that fails is reported, never entered.
fn walk(dir: &Path, f: &mut dyn FnMut(Walked)) {
    let Ok(shards) = fs::read_dir(dir) else { return };
    for shard in shards.flatten() {
        let sname = shard.file_name();
        let Some(sname) = sname.to_str() else { continue };
        let Ok(meta) = shard.metadata() else { continue };
        if sname.starts_with(TEMP_PREFIX) {
            match classify(shard.path(), &meta) {
                Ok((path, modified)) => f(Walked::Temp(path, modified)),
                Err(left) => f(left),
            }
            continue;
        }
        if !(sname.len() == 2 && sname.bytes().all(|b| b.is_ascii_hexdigit())) {
            continue;
        }
        let sname = sname.to_owned();
        if let Err(e) = os::check_private(&shard.path()) {
            f(Walked::Left(shard.path(), format!("not used: {e}")));
            continue;
        }
        let files = match fs::read_dir(shard.path()) {
            Ok(files) => files,
            Err(e) => {
                f(Walked::Left(shard.path(), e.to_string()));
                continue;
            }
        };
        for file in files.flatten() {
            let name = file.file_name();
            let Some(name) = name.to_str() else { continue };
            let temp = name.starts_with(TEMP_PREFIX);
            let key = Key::from_hex(&format!("{sname}{name}"));
            if !temp && key.is_none() {
                continue;
            }
            let Ok(meta) = file.metadata() else { continue };
            match (classify(file.path(), &meta), key) {
                (Err(left), _) => f(left),
                (Ok((path, modified)), _) if temp => f(Walked::Temp(path, modified)),
                (Ok((path, modified)), Some(key)) => {
                    f(Walked::Entry(EntryInfo { key, path, len: meta.len(), modified }))
                }
                (Ok(_), None) => {}
            }
        }
    }
}

/// The stats log of the store folder `dir`: at most `STATS_MAX_BYTES`, cut
/// after its last whole line; empty when it is not a regular file of this
/// user (never followed, never a FIFO).
fn read_stats_log(dir: &Path) -> String {
    let buf = match os::read_regular(&dir.join(STATS_LOG), STATS_MAX_BYTES) {
        Ok(Bounded::Whole(_, meta, buf)) if os::foreign_owner(&meta).is_none() => buf,
        Ok(Bounded::TooLong(_)) => {
            // Read again up to the bound; the rest counts nothing.
            match os::read_prefix(&dir.join(STATS_LOG), STATS_MAX_BYTES) {
                Ok(mut buf) => {
                    let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                    buf.truncate(whole);
                    buf
                }
                Err(_) => Vec::new(),
            }
        }
        _ => Vec::new(),
    };
    String::from_utf8_lossy(&buf).into_owned()
}

impl Inner {
    /// Visits every entry and temporary file (other names are ignored).
    fn walk(&self, f: &mut dyn FnMut(Walked)) {
        walk(&self.dir, f);
    }

    fn collect_at(&self, now: SystemTime) -> CollectReport {
        let mut report = CollectReport::default();
        let family = self.config.root.join(&self.config.family);
        if let Ok(siblings) = fs::read_dir(&family) {
            for s in siblings.flatten() {
                let Some(name) = s.file_name().to_str().map(str::to_owned) else { continue };
                if !self.config.is_stale_folder_name(&name) {
                    continue;
                }
                // lstat: a link under a store's name is not followed.
                let ours = s.metadata().is_ok_and(|m| m.is_dir() && os::foreign_owner(&m).is_none());
                let unused = now.duration_since(last_use(&s.path())).unwrap_or_default() > STALE_FOLDER_AGE;
                if ours && unused && remove_store_folder(&s.path(), &mut report.left) {
                    report.folders_removed.push(name);
                }
            }
        }
        let mut entries = Vec::new();
        self.walk(&mut |w| match w {
            Walked::Temp(path, modified) => {
                let stale = now.duration_since(modified).unwrap_or_default() > TEMP_MAX_AGE || in_future(modified, now);
                if stale {
                    match fs::remove_file(&path) {
                        Ok(()) => report.temps_removed += 1,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => report.left.push(format!("{}: {e}", path.display())),
                    }
                }
            }
            Walked::Entry(mut info) => {
                if in_future(info.modified, now) {
                    // Dated ahead: last used now, and from now on it ages.
                    if let Ok(Some(f)) = os::open_regular(&info.path).map(|(f, m)| m.is_file().then_some(f)) {
                        let _ = f.set_modified(now);
                    }
                }
                info.modified = info.modified.min(now);
                entries.push(info);
            }
            Walked::Left(path, why) => {
                if why.starts_with("not used") || !why.contains("not relok's") {
                    report.left.push(format!("{}: {why}", path.display()));
                }
            }
        });
        let mut total: u64 = entries.iter().map(|e| e.len).sum();
        if total > self.config.max_bytes {
            let low_water = self.config.max_bytes / 10 * 8;
            entries.sort_by_key(|e| (e.modified, e.key));
            let mut kept = Vec::new();
            for e in entries {
                if total > low_water {
                    match fs::remove_file(&e.path) {
                        Ok(()) => {
                            total -= e.len;
                            report.evicted += 1;
                            continue;
                        }
                        Err(err) => report.left.push(format!("{}: {err}", e.path.display())),
                    }
                }
                kept.push(e);
            }
            entries = kept;
        }
        self.counters.add(Counter::Evictions, report.evicted);
        report.entries = entries.len() as u64;
        report.bytes = total;
        self.compact_stats();
        report
    }

    /// Rewrites a long stats log as one line, or replaces a stats log that
    /// is not a regular file of this user. Lines appended between the read
    /// and the rename are lost: the counters are statistics.
    fn compact_stats(&self) {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let path = self.dir.join(STATS_LOG);
        let line = match fs::symlink_metadata(&path) {
            Err(_) => return,
            Ok(m) if m.is_file() && os::foreign_owner(&m).is_none() => {
                if m.len() < STATS_COMPACT_BYTES {
                    return;
                }
                let log = read_stats_log(&self.dir);
                let mut line = TierStats::sum_lines(&log).to_line();
                let remote = RemoteStats::sum_lines(&log);
                if !remote.is_zero() {
                    line.push_str(&remote.to_line());
                }
                line
            }
            // A link, a FIFO, another user's file: unlinked by the rename
            // below, never opened.
            Ok(_) => String::new(),
        };
        let tmp =
            self.dir.join(format!("{TEMP_PREFIX}stats-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
        if os::create_private_file(&tmp)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .and_then(|()| fs::rename(&tmp, &path))
            .is_err()
        {
            let _ = fs::remove_file(&tmp);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes another build's store folder `dir`: only what relok wrote in
/// it (regular files of this user named as entries or temporary files in
/// shards, and its stats log, stamp and lock), then the shards and the
/// folder if nothing else is left in them. Whether the folder went; what
/// could not be removed is added to `left` (a folder holding something
/// else stays, silently: it is not relok's).
fn remove_store_folder(dir: &Path, left: &mut Vec<String>) -> bool {
    let remove = |path: &Path, left: &mut Vec<String>| match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => left.push(format!("{}: {e}", path.display())),
    };
    walk(dir, &mut |w| match w {
        Walked::Entry(info) => remove(&info.path, left),
        Walked::Temp(path, _) => remove(&path, left),
        Walked::Left(..) => {}
    });
    for name in [STATS_LOG, GC_STAMP, GC_LOCK] {
        let path = dir.join(name);
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && os::foreign_owner(&m).is_none()) {
            remove(&path, left);
        }
    }
    // The shards, now empty unless something else is in them (then the
    // rmdir fails and the shard and the folder stay).
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name();
            let is_shard = n.to_str().is_some_and(|n| n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit()));
            if is_shard && e.metadata().is_ok_and(|m| m.is_dir()) {
                let _ = fs::remove_dir(e.path());
            }
        }
    }
    match fs::remove_dir(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => false,
        Err(e) => {
            left.push(format!("{}: {e}", dir.display()));
            false
        }
    }
}

/// When a store folder was last used: the latest modification time of the
/// folder, its stats log (every process that used it appends there) and
/// its collection stamp, read from their folder entries (never followed).
fn last_use(dir: &Path) -> SystemTime {
    [dir.to_owned(), dir.join(STATS_LOG), dir.join(GC_STAMP)]
        .iter()
        .filter_map(|p| fs::symlink_metadata(p).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// What a bounded read found.
enum Bounded {
    /// The open file, its metadata (fstat) and every byte of it.
    Whole(File, fs::Metadata, Vec<u8>),
    /// A file longer than the bound (its length): not read.
    TooLong(u64),
}

/// What the operating system is asked, in one place.
mod os {
    use super::{Bounded, StoreError};
    use std::fs::{self, File, Metadata, OpenOptions};
    use std::io::{self, Read};
    use std::path::Path;

    #[cfg(unix)]
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};

    /// `O_NOFOLLOW`: the last component of a path is never a link.
    #[cfg(unix)]
    fn nofollow() -> i32 {
        rustix::fs::OFlags::NOFOLLOW.bits() as i32
    }

    /// `O_NOFOLLOW | O_NONBLOCK`: never a link, and opening a FIFO or a
    /// device returns at once instead of waiting for a peer.
    #[cfg(unix)]
    fn nofollow_nonblock() -> i32 {
        (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32
    }

    /// An error that names a link (`ELOOP` from `O_NOFOLLOW`) as such.
    fn named(e: io::Error) -> io::Error {
        #[cfg(unix)]
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            return io::Error::new(io::ErrorKind::InvalidData, "a symbolic link, never followed");
        }
        e
    }

    /// Creates `dir` and its missing parents, each readable by the user only.
    pub(super) fn create_private_dir(dir: &Path) -> io::Result<()> {
        let mut b = fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        b.mode(0o700);
        b.create(dir)
    }

    /// Creates `path` exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`),
    /// readable by the user only: never through a link, never an existing
    /// file.
    pub(super) fn create_private_file(path: &Path) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        o.mode(0o600).custom_flags(nofollow());
        o.open(path)
    }

    /// Opens `path` for appending, creating it private: never through a
    /// link, never blocking on a FIFO, and only a regular file of this user
    /// is returned.
    pub(super) fn append_file(path: &Path) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.append(true).create(true);
        #[cfg(unix)]
        o.mode(0o600).custom_flags(nofollow_nonblock());
        let f = o.open(path).map_err(named)?;
        let meta = f.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file"));
        }
        if let Some(why) = foreign_owner(&meta) {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
        }
        Ok(f)
    }

    /// Opens `path` for reading without following a link or blocking on a
    /// FIFO, and checks on the open file (fstat) that it is a regular file.
    pub(super) fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
        let mut o = OpenOptions::new();
        o.read(true);
        #[cfg(unix)]
        o.custom_flags(nofollow_nonblock());
        let f = o.open(path).map_err(named)?;
        let meta = f.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file"));
        }
        Ok((f, meta))
    }

    /// [`open_regular`], then every byte when the file is at most `bound`
    /// bytes long (also if it grows while read: at most `bound + 1` bytes
    /// are read).
    pub(super) fn read_regular(path: &Path, bound: u64) -> io::Result<Bounded> {
        let (f, meta) = open_regular(path)?;
        if meta.len() > bound {
            return Ok(Bounded::TooLong(meta.len()));
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        (&f).take(bound.saturating_add(1)).read_to_end(&mut buf)?;
        if buf.len() as u64 > bound {
            return Ok(Bounded::TooLong(buf.len() as u64));
        }
        Ok(Bounded::Whole(f, meta, buf))
    }

    /// The first `bound` bytes of the regular file `path` (of this user).
    pub(super) fn read_prefix(path: &Path, bound: u64) -> io::Result<Vec<u8>> {
        let (f, meta) = open_regular(path)?;
        if let Some(why) = foreign_owner(&meta) {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
        }
        let mut buf = Vec::new();
        (&f).take(bound).read_to_end(&mut buf)?;
        Ok(buf)
    }

    /// Refuses a folder that is not a directory owned by this user, or that
    /// its group or others can write. A link is refused, never followed.
    pub(super) fn check_private(path: &Path) -> Result<(), StoreError> {
        let meta = fs::symlink_metadata(path)
            .map_err(|e| StoreError::Insecure { path: path.to_owned(), reason: e.to_string() })?;
        private_dir(path, &meta)
    }

    /// [`check_private`] on the `lstat` of `path`, `meta`.
    pub(super) fn private_dir(path: &Path, meta: &Metadata) -> Result<(), StoreError> {
        let insecure = |reason: String| StoreError::Insecure { path: path.to_owned(), reason };
        if meta.is_symlink() {
            return Err(insecure("a symbolic link (never followed)".into()));
        }
        if !meta.is_dir() {
            return Err(insecure("not a directory".into()));
        }
        if let Some(why) = foreign_owner(meta) {
            return Err(insecure(why));
        }
        #[cfg(unix)]
        if meta.permissions().mode() & 0o022 != 0 {
            return Err(insecure(format!(
                "mode {:o} lets other users write it (run `chmod go-w {}`)",
                meta.permissions().mode() & 0o777,
                path.display()
            )));
        }
        Ok(())
    }

    /// Why a file is not this user's, if it is not.
    pub(super) fn foreign_owner(meta: &Metadata) -> Option<String> {
        #[cfg(unix)]
        {
            let me = rustix::process::geteuid().as_raw();
            if meta.uid() != me {
                return Some(format!("owned by user {} (this is user {me})", meta.uid()));
            }
        }
        #[cfg(not(unix))]
        let _ = meta;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> StoreConfig {
        StoreConfig::artifacts(dir, "relok-test-1")
    }

    #[test]
    fn folder_names_are_safe() {
        assert_eq!(folder_name("relok-0.1.0-abc"), "relok-0.1.0-abc");
        assert_eq!(folder_name("../../etc/passwd"), ".._.._etc_passwd");
        assert_eq!(folder_name(&"x".repeat(300)).len(), 100);
    }

    #[test]
    fn put_get_and_paths() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::open(config(&t.path().join("c"))).unwrap();
        let k = Key([0xab; 32]);
        assert_eq!(s.get(k), Lookup::Miss);
        s.put(k, b"hello").unwrap();
        assert_eq!(s.get(k), Lookup::Hit(b"hello".to_vec()));
        let p = s.entry_path(k);
        assert!(p.starts_with(t.path().join("c/artifacts/v1-relok-test-1/ab")));
        assert_eq!(p.file_name().unwrap().len(), 62);
        let st = s.stats();
        assert_eq!((st.hits, st.misses, st.corrupt), (1, 1, 0));
        assert_eq!(st.bytes_read, st.bytes_written);
        assert_eq!(s.entries().len(), 1);
        assert!(s.verify().iter().all(|(_, r)| r.is_ok()));
        assert_eq!(s.clear(), ClearReport { removed: 1, left: Vec::new() });
        assert_eq!(s.get(k), Lookup::Miss);
    }

    #[cfg(unix)]
    #[test]
    fn created_private_and_refuses_open_folders() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("c");
        let s = Store::open(config(&root)).unwrap();
        for p in [root.clone(), root.join("artifacts"), s.dir().to_owned()] {
            assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o700, "{}", p.display());
        }
        drop(s);
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        let err = Store::open(config(&root)).unwrap_err().to_string();
        assert!(err.contains("lets other users write it"), "{err}");
        let file = t.path().join("file");
        fs::write(&file, b"x").unwrap();
        assert!(Store::open(config(&file)).is_err());
    }

    #[test]
    fn a_rejected_hit_after_a_flush_never_wraps_the_counters() {
        let t = tempfile::tempdir().unwrap();
        let k = Key([2; 32]);
        let s = Store::open(config(t.path())).unwrap();
        s.put(k, b"x").unwrap();
        assert!(matches!(s.get(k), Lookup::Hit(_)));
        s.flush_stats();
        s.reject(k, "test");
        drop(s);
        let s = Store::open(config(t.path())).unwrap();
        let life = s.lifetime_stats();
        assert_eq!((life.hits, life.misses, life.corrupt), (1, 1, 1));
    }

    #[test]
    fn stats_log_sums_processes() {
        let t = tempfile::tempdir().unwrap();
        let k = Key([1; 32]);
        for _ in 0..3 {
            let s = Store::open(config(t.path())).unwrap();
            s.get(k);
            s.put(k, b"x").unwrap();
        }
        let s = Store::open(config(t.path())).unwrap();
        let life = s.lifetime_stats();
        assert_eq!((life.misses, life.hits, life.bytes_written > 0), (1, 2, true));
        s.get(k);
        assert_eq!(s.lifetime_stats().hits, 3);
    }
}
