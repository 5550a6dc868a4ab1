//! One folder of entries on disk (see the crate docs for the layout and
//! the rules).
//!
//! The store's code is split by concern: `lookup` reads entries,
//! `publish` writes them, `walk` lists them, `collect` evicts and removes
//! what is stale, `stats_log` keeps the counters, `remote_tier` puts a
//! remote behind the store and `os` is what the operating system is asked.

mod collect;
mod lookup;
/// What the operating system is asked, in one place.
mod os;
mod publish;
mod remote_tier;
mod stats_log;
#[cfg(test)]
mod tests;
mod walk;

use crate::entry::{self, Kind};
use crate::remote::Tier;
use crate::stats::Counters;
use crate::{Key, TierStats};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

pub use collect::CollectReport;
pub use remote_tier::{PullReport, PushReport};
pub use walk::ClearReport;

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

/// An opened store. Cheap to share: lookups and writes take `&self`.
#[derive(Debug)]
pub struct Store {
    inner: Arc<Inner>,
    collector: Mutex<Option<JoinHandle<()>>>,
    /// The remote tier behind this store, if one was given (boxed: a
    /// store without one stays small).
    remote: Option<Box<Tier>>,
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

/// Whether `t` is further in the future than the slack allows.
fn in_future(t: SystemTime, now: SystemTime) -> bool {
    t.duration_since(now).is_ok_and(|d| d > FUTURE_SLACK)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
