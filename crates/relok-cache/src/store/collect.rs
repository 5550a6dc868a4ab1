//! Collections: other builds' folders and stale temporary files removed,
//! least-recently-used entries evicted down to the cap, under a lock file,
//! at most once per interval.

use super::walk::{Walked, walk};
use super::{GC_LOCK, GC_STAMP, Inner, LOCK_MAX_AGE, STALE_FOLDER_AGE, STATS_LOG, Store, TEMP_MAX_AGE, in_future, os};
use crate::stats::Counter;
use std::fs;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

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

impl Store {
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
    pub(super) fn maybe_collect(&self) {
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

impl Inner {
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
