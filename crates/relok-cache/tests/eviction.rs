//! Collections: least-recently-used eviction under the cap (a hit is a
//! use), removal of other builds' folders and of old temporary files, and
//! the background collection that a write starts.

use relok_cache::entry::{self, Kind};
use relok_cache::{Key, Lookup, Store, StoreConfig};
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

const IDENTITY: &str = "relok-evict-test";
const PAYLOAD: usize = 1000;
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Keys whose order is not the order they are written in, so that an
/// eviction by key order instead of by age would be caught.
fn key(i: u32) -> Key {
    let mut k = [0u8; 32];
    for (j, b) in k.iter_mut().enumerate() {
        *b = (i.wrapping_mul(37).wrapping_add(11 + j as u32 * 101) % 251) as u8;
    }
    Key(k)
}

fn payload(i: u32) -> Vec<u8> {
    (0..PAYLOAD).map(|j| (i as usize * 7 + j) as u8).collect()
}

/// The size of every entry of these tests on disk.
fn entry_size() -> u64 {
    entry::encode(Kind::Artifact, IDENTITY, key(0), &payload(0)).len() as u64
}

fn config(root: &Path, max_bytes: u64, collect_interval: Duration) -> StoreConfig {
    StoreConfig { max_bytes, collect_interval, ..StoreConfig::artifacts(root, IDENTITY) }
}

fn mtime(p: &Path) -> SystemTime {
    fs::metadata(p).unwrap().modified().unwrap()
}

/// Now, in whole seconds: times set from it read back exactly on any file
/// system.
fn now_secs() -> SystemTime {
    let s = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    SystemTime::UNIX_EPOCH + Duration::from_secs(s)
}

fn set_mtime(p: &Path, t: SystemTime) {
    File::options().write(true).open(p).unwrap().set_modified(t).unwrap();
    assert_eq!(mtime(p), t, "the file system keeps exact modification times");
}

fn total_bytes(s: &Store) -> u64 {
    s.entries().iter().map(|e| e.len).sum()
}

#[test]
fn evicts_least_recently_used_down_to_80_percent_and_refills() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("cache");
    let size = entry_size();
    let cap = 10 * size;
    let n = 30;

    // Written by a store without a cap (its own collection evicts nothing).
    {
        let w = Store::open(config(&root, u64::MAX, DAY)).unwrap();
        for i in 0..n {
            w.put(key(i), &payload(i)).unwrap();
        }
    }
    let s = Store::open(config(&root, cap, DAY)).unwrap();
    assert_eq!(s.entries().len(), n as usize);
    assert!(s.entries().iter().all(|e| e.len == size));

    // Entry i was last used at base + 10 s · i: 0 is the oldest.
    let now = now_secs();
    let base = now - Duration::from_secs(3600);
    for i in 0..n {
        set_mtime(&s.entry_path(key(i)), base + Duration::from_secs(10 * u64::from(i)));
    }
    // The three oldest are used now: an hour old, their times are refreshed.
    let before = now_secs();
    for i in 0..3 {
        assert_eq!(s.get(key(i)), Lookup::Hit(payload(i)));
        let m = mtime(&s.entry_path(key(i)));
        assert!(m >= before, "a hit on an hour-old entry {i} did not refresh its time");
    }
    // A use within the last minute leaves the time as it is.
    let recent = now - Duration::from_secs(30);
    set_mtime(&s.entry_path(key(n - 1)), recent);
    assert_eq!(s.get(key(n - 1)), Lookup::Hit(payload(n - 1)));
    assert_eq!(mtime(&s.entry_path(key(n - 1))), recent, "a hit refreshed a time less than a minute old");
    assert_eq!(s.get(key(1000)), Lookup::Miss);

    let report = s.collect_at(now);
    // 30 entries over a cap of 10: down to 80 % of it, 8 entries.
    assert_eq!(report.evicted, 22, "{report:?}");
    assert_eq!((report.entries, report.bytes), (8, 8 * size), "{report:?}");
    assert!(report.bytes <= cap / 10 * 8);
    assert_eq!(total_bytes(&s), report.bytes);
    assert_eq!((report.temps_removed, report.folders_removed.len()), (0, 0));
    let left: BTreeSet<Key> = s.entries().iter().map(|e| e.key).collect();
    let want: BTreeSet<Key> = [0, 1, 2, 25, 26, 27, 28, 29].into_iter().map(key).collect();
    assert_eq!(left, want, "not the least recently used entries were evicted");
    for i in 3..25 {
        assert!(!s.entry_path(key(i)).exists(), "entry {i} should have been evicted");
    }
    let st = s.stats();
    assert_eq!((st.evictions, st.hits, st.misses), (report.evicted, 4, 1));
    // Under the cap now: a second collection evicts nothing.
    assert_eq!(s.collect_at(now).evicted, 0);
    drop(s);

    // A later run refills it.
    let s = Store::open(config(&root, cap, DAY)).unwrap();
    assert_eq!(s.lifetime_stats().evictions, 22, "the evictions reached the stats log");
    assert_eq!(s.get(key(3)), Lookup::Miss);
    assert_eq!(s.get(key(0)), Lookup::Hit(payload(0)));
    s.put(key(3), &payload(3)).unwrap();
    assert_eq!(s.get(key(3)), Lookup::Hit(payload(3)));
    assert_eq!(s.entries().len(), 9);
    assert_eq!(s.collect_at(SystemTime::now()).evicted, 0, "9 entries are under a cap of 10");
}

#[test]
fn removes_other_builds_folders_and_old_temporary_files_only() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("cache");
    let mut cfg = config(&root, u64::MAX, DAY);
    {
        // The first write's collection runs now, before the scene is set
        // (dropping the store joins it).
        let w = Store::open(cfg.clone()).unwrap();
        w.put(key(1), &payload(1)).unwrap();
        w.put(key(2), &payload(2)).unwrap();
    }
    let s = Store::open(cfg.clone()).unwrap();
    let family = root.join("artifacts");
    let write = |p: &Path| {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, b"x").unwrap();
    };
    // Other builds' folders, with something in them.
    let other = family.join("v1-other-build");
    let old_format = family.join(format!("v0-{IDENTITY}"));
    write(&other.join("ab").join("c".repeat(62)));
    write(&old_format.join("cd").join("e".repeat(62)));
    // Used recently, another build's folder stays; unused for a week, it
    // goes.
    let recent = family.join("v1-recent-build");
    write(&recent.join("stats.log"));
    // Things that are not folders of this family.
    let unrelated = [
        family.join("README.txt"),
        root.join("binary/v1-other-device/ef").join("0".repeat(62)),
        root.join("notes/keep.txt"),
        s.dir().join("notes.txt"),
        s.dir().join("zz/keep"),
        s.dir().join("ab/not-an-entry"),
    ];
    unrelated.iter().for_each(|p| write(p));
    // A link in the family to a folder elsewhere: what it points to stays.
    let outside = t.path().join("outside/precious.txt");
    write(&outside);
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.parent().unwrap(), family.join("v1-link")).unwrap();
    // Temporary files of dead writers, two hours and half an hour old.
    let now = now_secs();
    let stale = s.dir().join("ab/.tmp-stale-1-2-3");
    let young = s.dir().join("ab/.tmp-young-1-2-4");
    write(&stale);
    write(&young);
    set_mtime(&stale, now - Duration::from_secs(2 * 3600));
    set_mtime(&young, now - Duration::from_secs(30 * 60));
    assert_eq!(s.entries().len(), 2, "temporary and unrelated files are not entries");

    let week_ago = now - relok_cache::STALE_FOLDER_AGE - Duration::from_secs(60);
    for f in [&other, &old_format] {
        File::open(f).unwrap().set_modified(week_ago).unwrap();
    }

    // A store whose stale folders are those starting with `v1-`.
    cfg.stale_prefix = "v1-".into();
    let narrow = Store::open(cfg).unwrap();
    let r = narrow.collect_at(now);
    assert_eq!(r.folders_removed, vec!["v1-other-build".to_owned()]);
    assert!(!other.exists() && old_format.exists() && recent.exists());
    assert_eq!((r.temps_removed, r.evicted, r.entries), (1, 0, 2), "{r:?}");
    assert!(!stale.exists(), "a temporary file two hours old was kept");
    assert!(young.exists(), "a temporary file half an hour old was removed");
    drop(narrow);

    // The artifact store's: every other folder of the family.
    let r = s.collect_at(now);
    assert_eq!(r.folders_removed, vec![format!("v0-{IDENTITY}")]);
    assert!(!old_format.exists());
    assert_eq!((r.temps_removed, r.evicted, r.entries), (0, 0, 2), "{r:?}");
    assert!(young.exists(), "a temporary file half an hour old was removed");
    assert!(recent.exists(), "a folder used recently was removed");
    for p in unrelated.iter().chain([&outside]) {
        assert!(p.exists(), "a collection removed {}", p.display());
    }
    assert!(s.dir().exists());
    assert_eq!(s.get(key(1)), Lookup::Hit(payload(1)));

    // 31 minutes on, the young one is past the hour.
    let r = s.collect_at(now + Duration::from_secs(31 * 60));
    assert_eq!((r.temps_removed, r.entries), (1, 2), "{r:?}");
    assert!(!young.exists());
    assert!(outside.exists());
}

#[test]
fn a_write_starts_a_background_collection() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("cache");
    let size = entry_size();
    let cap = 10 * size;
    let s = Store::open(config(&root, cap, Duration::ZERO)).unwrap();
    for i in 0..30 {
        s.put(key(i), &payload(i)).unwrap();
    }
    // Entries written while a collection runs are not seen by it (and the
    // writes skip collecting while it holds the lock): let it finish, then
    // the next write's collection sees them all.
    let lock = s.dir().join("gc.lock");
    let deadline = Instant::now() + Duration::from_secs(10);
    while lock.exists() {
        assert!(Instant::now() < deadline, "a collection held its lock for ten seconds");
        std::thread::sleep(Duration::from_millis(1));
    }
    s.put(key(30), &payload(30)).unwrap();
    // Dropping the store joins its collector.
    drop(s);
    assert!(!lock.exists(), "the collector left its lock behind");

    let s = Store::open(config(&root, cap, DAY)).unwrap();
    let left = s.entries();
    let bytes = total_bytes(&s);
    // Under the cap (a collection that finds the store over it goes down
    // to 80 %; one that finds it under the cap leaves it).
    assert!(bytes <= cap, "{bytes} bytes left, the cap is {cap}");
    assert!(!left.is_empty());
    assert_eq!(s.get(key(30)), Lookup::Hit(payload(30)), "the newest entry was evicted");
    let evicted = s.lifetime_stats().evictions;
    assert_eq!(evicted, 31 - left.len() as u64, "evictions counted: {evicted}, entries left: {}", left.len());
}
