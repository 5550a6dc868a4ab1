//! One folder of entries on disk (see the crate docs for the layout and
//! the rules).

use crate::entry::{self, EntryError, Expect, Kind};
use crate::stats::{Counter, Counters};
use crate::{Key, TierStats};
use std::fs::{self, File};
use std::io::{self, Read, Write};
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
/// An entry larger than this is not read (a damaged or hostile file).
const MAX_ENTRY_BYTES: u64 = 1 << 30;
/// The stats log is compacted by a collection once it is this long.
const STATS_COMPACT_BYTES: u64 = 64 << 10;
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
    /// Folders of the family that start with this prefix and are not
    /// `folder` belong to other builds: a collection removes them.
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
}

/// An opened store. Cheap to share: lookups and writes take `&self`.
#[derive(Debug)]
pub struct Store {
    inner: Arc<Inner>,
    collector: Mutex<Option<JoinHandle<()>>>,
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
        os::create_private_dir(&dir).map_err(io_err(&dir))?;
        for p in [config.root.clone(), config.root.join(&config.family), dir.clone()] {
            os::check_private(&p)?;
        }
        let inner = Inner { config, dir, counters: Counters::default(), flushed: Mutex::new(TierStats::default()) };
        Ok(Store { inner: Arc::new(inner), collector: Mutex::new(None) })
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
    pub fn get(&self, key: Key) -> Lookup {
        let c = &self.inner.counters;
        let found = self.read_entry(key);
        match &found {
            Lookup::Hit(_) => c.add(Counter::Hits, 1),
            Lookup::Miss => c.add(Counter::Misses, 1),
            Lookup::Rejected(why) => {
                tracing::warn!("artifact cache entry {key} rejected: {why}; it will be rebuilt");
                c.add(Counter::Misses, 1);
                c.add(Counter::Corrupt, 1);
            }
        }
        found
    }

    fn read_entry(&self, key: Key) -> Lookup {
        let path = self.entry_path(key);
        let mut f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Rejected(format!("cannot open: {e}")),
        };
        let meta = match f.metadata() {
            Ok(m) => m,
            Err(e) => return Lookup::Rejected(format!("cannot stat: {e}")),
        };
        if !meta.is_file() {
            return Lookup::Rejected("not a regular file".into());
        }
        if let Some(why) = os::foreign_owner(&meta) {
            return Lookup::Rejected(why);
        }
        if meta.len() > MAX_ENTRY_BYTES {
            return Lookup::Rejected(format!("{} bytes is larger than any entry", meta.len()));
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        if let Err(e) = f.read_to_end(&mut buf) {
            return Lookup::Rejected(format!("cannot read: {e}"));
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
        if meta.modified().is_ok_and(|m| now.duration_since(m).unwrap_or_default() > TOUCH_AFTER) {
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
        match self.publish(key, &bytes) {
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
        let path = self.entry_path(key);
        let shard = path.parent().unwrap_or(&self.inner.dir);
        os::create_private_dir(shard).map_err(io_err(shard))?;
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
    pub fn reject(&self, key: Key, why: &str) {
        tracing::warn!("artifact cache entry {key} rejected: {why}; it will be rebuilt");
        self.inner.counters.sub(Counter::Hits, 1);
        self.inner.counters.add(Counter::Misses, 1);
        self.inner.counters.add(Counter::Corrupt, 1);
        let _ = fs::remove_file(self.entry_path(key));
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
        let logged = fs::read_to_string(dir.join(STATS_LOG)).unwrap_or_default();
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
        let logged = fs::read_to_string(self.inner.dir.join(STATS_LOG)).unwrap_or_default();
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
        if delta.is_zero() {
            return;
        }
        let path = self.inner.dir.join(STATS_LOG);
        let ok = os::append_file(&path).and_then(|mut f| f.write_all(delta.to_line().as_bytes())).is_ok();
        if ok {
            *self.inner.flushed.lock().unwrap_or_else(|e| e.into_inner()) = self.stats();
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
        let expect = |key| Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(key) };
        self.entries()
            .into_iter()
            .map(|info| {
                let r = fs::read(&info.path)
                    .map_err(|e| e.to_string())
                    .and_then(|b| entry::decode(&b, &expect(info.key)).map(|_| ()).map_err(|e| e.to_string()));
                (info, r)
            })
            .collect()
    }

    /// Removes every entry and temporary file; returns how many files went.
    pub fn clear(&self) -> u64 {
        let mut n = 0;
        self.inner.walk(&mut |e| {
            let path = match e {
                Walked::Entry(info) => info.path,
                Walked::Temp(path, _) => path,
            };
            if fs::remove_file(path).is_ok() {
                n += 1;
            }
        });
        n
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
        let age = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok().and_then(|m| m.elapsed().ok());
        if age(&dir.join(GC_STAMP)).is_some_and(|a| a < interval) {
            return;
        }
        let lock = dir.join(GC_LOCK);
        if os::create_private_file(&lock).is_err() {
            if age(&lock).is_none_or(|a| a <= LOCK_MAX_AGE) {
                return;
            }
            let _ = fs::remove_file(&lock);
            if os::create_private_file(&lock).is_err() {
                return;
            }
        }
        let _ = os::create_private_file(&dir.join(GC_STAMP)).or_else(|_| {
            File::options().write(true).open(dir.join(GC_STAMP)).and_then(|f| f.set_modified(SystemTime::now()).map(|()| f))
        });
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
        self.flush_stats();
    }
}

enum Walked {
    Entry(EntryInfo),
    Temp(PathBuf, SystemTime),
}

impl Inner {
    /// Visits every entry and temporary file (other names are ignored).
    fn walk(&self, f: &mut dyn FnMut(Walked)) {
        let Ok(shards) = fs::read_dir(&self.dir) else { return };
        for shard in shards.flatten() {
            let sname = shard.file_name();
            let Some(sname) = sname.to_str().filter(|s| s.len() == 2 && s.bytes().all(|b| b.is_ascii_hexdigit())) else {
                continue;
            };
            let sname = sname.to_owned();
            let Ok(files) = fs::read_dir(shard.path()) else { continue };
            for file in files.flatten() {
                let name = file.file_name();
                let Some(name) = name.to_str() else { continue };
                let Ok(meta) = file.metadata() else { continue };
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                if name.starts_with(TEMP_PREFIX) {
                    f(Walked::Temp(file.path(), modified));
                } else if let Some(key) = Key::from_hex(&format!("{sname}{name}")).filter(|_| meta.is_file()) {
                    f(Walked::Entry(EntryInfo { key, path: file.path(), len: meta.len(), modified }));
                }
            }
        }
    }

    fn collect_at(&self, now: SystemTime) -> CollectReport {
        let mut report = CollectReport::default();
        let family = self.config.root.join(&self.config.family);
        if let Ok(siblings) = fs::read_dir(&family) {
            for s in siblings.flatten() {
                let name = s.file_name().to_string_lossy().into_owned();
                let ours = s.metadata().is_ok_and(|m| m.is_dir() && os::foreign_owner(&m).is_none());
                let unused = now.duration_since(last_use(&s.path())).unwrap_or_default() > STALE_FOLDER_AGE;
                if ours && unused && name != self.config.folder && name.starts_with(&self.config.stale_prefix)
                    && fs::remove_dir_all(s.path()).is_ok()
                {
                    report.folders_removed.push(name);
                }
            }
        }
        let mut entries = Vec::new();
        self.walk(&mut |w| match w {
            Walked::Temp(path, modified) => {
                if now.duration_since(modified).unwrap_or_default() > TEMP_MAX_AGE && fs::remove_file(path).is_ok() {
                    report.temps_removed += 1;
                }
            }
            Walked::Entry(info) => entries.push(info),
        });
        let mut total: u64 = entries.iter().map(|e| e.len).sum();
        if total > self.config.max_bytes {
            let low_water = self.config.max_bytes / 10 * 8;
            entries.sort_by_key(|e| (e.modified, e.key));
            let mut kept = Vec::new();
            for e in entries {
                if total > low_water && fs::remove_file(&e.path).is_ok() {
                    total -= e.len;
                    report.evicted += 1;
                } else {
                    kept.push(e);
                }
            }
            entries = kept;
        }
        self.counters.add(Counter::Evictions, report.evicted);
        report.entries = entries.len() as u64;
        report.bytes = total;
        self.compact_stats();
        report
    }

    /// Rewrites a long stats log as one line. Lines appended between the
    /// read and the rename are lost: the counters are statistics.
    fn compact_stats(&self) {
        let path = self.dir.join(STATS_LOG);
        if fs::metadata(&path).map_or(true, |m| m.len() < STATS_COMPACT_BYTES) {
            return;
        }
        let Ok(text) = fs::read_to_string(&path) else { return };
        let tmp = self.dir.join(format!("{TEMP_PREFIX}stats-{}", std::process::id()));
        let line = TierStats::sum_lines(&text).to_line();
        if fs::write(&tmp, line).and_then(|()| fs::rename(&tmp, &path)).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }
}

/// When a store folder was last used: the latest modification time of the
/// folder, its stats log (every process that used it appends there) and
/// its collection stamp.
fn last_use(dir: &Path) -> SystemTime {
    [dir.to_owned(), dir.join(STATS_LOG), dir.join(GC_STAMP)]
        .iter()
        .filter_map(|p| fs::metadata(p).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// What the operating system is asked, in one place.
mod os {
    use super::StoreError;
    use std::fs::{self, File, Metadata, OpenOptions};
    use std::io;
    use std::path::Path;

    #[cfg(unix)]
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};

    /// Creates `dir` and its missing parents, each readable by the user only.
    pub(super) fn create_private_dir(dir: &Path) -> io::Result<()> {
        let mut b = fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        b.mode(0o700);
        b.create(dir)
    }

    /// Creates `path` exclusively, readable by the user only.
    pub(super) fn create_private_file(path: &Path) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        o.mode(0o600);
        o.open(path)
    }

    /// Opens `path` for appending, creating it private.
    pub(super) fn append_file(path: &Path) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.append(true).create(true);
        #[cfg(unix)]
        o.mode(0o600);
        o.open(path)
    }

    /// Refuses a folder that is not a directory owned by this user, or that
    /// its group or others can write.
    pub(super) fn check_private(path: &Path) -> Result<(), StoreError> {
        let insecure = |reason: String| StoreError::Insecure { path: path.to_owned(), reason };
        let meta = fs::metadata(path).map_err(|e| insecure(e.to_string()))?;
        if !meta.is_dir() {
            return Err(insecure("not a directory".into()));
        }
        if let Some(why) = foreign_owner(&meta) {
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
        assert_eq!(s.clear(), 1);
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
