//! `kill -9` in the middle of writes, many times over: no partially
//! written entry is ever read as valid, and what a killed writer leaves
//! behind (temporary files) is never listed as an entry and is removed by a
//! collection once it is old.
//!
//! The test binary re-runs itself: [`writer_child`] is a no-op unless
//! `RELOK_CRASH_CHILD_DIR` is set, in which case it writes entries of a few
//! hundred KB over a small key set forever (so renames replace existing
//! entries and writes are in flight when the kill lands).

use relok_cache::entry::{self, Kind};
use relok_cache::{Key, Lookup, Store, StoreConfig};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const CHILD_ENV: &str = "RELOK_CRASH_CHILD_DIR";
const IDENTITY: &str = "relok-crash-test";
const READY: &str = "RELOK-CRASH-CHILD-READY";
/// Keys in the set the child writes.
const KEYS: u32 = 6;
/// Writer threads in the child.
const WRITERS: usize = 2;
const MIN_TRIALS: u32 = 40;
const MAX_TRIALS: u32 = 150;
/// Trials that must have killed a write in flight (a temporary file left
/// behind) before the test stops early.
const WANT_INTERRUPTED: u32 = 3;

fn key(i: u32) -> Key {
    // A sha-like spread of bytes, a deterministic function of `i`.
    let mut k = [0u8; 32];
    let mut x = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd1b5_4a32_d192_ed03;
    for b in &mut k {
        x ^= x >> 29;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        *b = (x >> 56) as u8;
    }
    Key(k)
}

/// A few hundred KB whose content depends on the key; sizes differ between
/// keys, so a torn write could not pass as another key's payload either.
fn payload(k: Key) -> Vec<u8> {
    let len = 200_000 + usize::from(k.0[0]) * 1000 + usize::from(k.0[1]);
    (0..len).map(|j| k.0[j % 32] ^ (j / 32) as u8).collect()
}

fn config(root: &Path) -> StoreConfig {
    StoreConfig::artifacts(root, IDENTITY)
}

/// The child: writes forever when asked to, else does nothing.
#[test]
fn writer_child() {
    let Some(root) = std::env::var_os(CHILD_ENV) else { return };
    let store = Store::open(config(Path::new(&root))).expect("child opens the store");
    let keys: Vec<Key> = (0..KEYS).map(key).collect();
    let payloads: Vec<Vec<u8>> = keys.iter().map(|&k| payload(k)).collect();
    // Start at a different key each run so every key gets replaced.
    let start = std::process::id() as usize;
    let mut out = std::io::stdout();
    writeln!(out, "{READY}").and_then(|()| out.flush()).expect("child reports ready");
    // Two writers (sometimes on the same key at once): more of the time
    // has a write in flight, so more kills land inside one.
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (store, keys, payloads) = (&store, &keys, &payloads);
            s.spawn(move || {
                for i in start + w.. {
                    let j = i % keys.len();
                    store.put(keys[j], &payloads[j]).expect("child writes an entry");
                }
            });
        }
    });
}

/// Every `.tmp-` file under the store's folder.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for shard in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !shard.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            if f.file_name().to_string_lossy().starts_with(".tmp-") {
                out.push(f.path());
            }
        }
    }
    out
}

#[test]
fn kill_during_writes_never_exposes_a_partial_entry() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("cache");
    let keys: Vec<Key> = (0..KEYS).map(key).collect();
    let expected: Vec<Vec<u8>> = keys.iter().map(|&k| payload(k)).collect();
    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    // A small LCG: random-ish delays without a dependency, reproducible.
    let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
    let shortest =
        keys.iter().map(|&k| entry::encode(Kind::Artifact, IDENTITY, k, &payload(k)).len() as u64).min().unwrap();
    let (mut trials, mut interrupted, mut hits, mut torn) = (0u32, 0u32, 0u64, 0u64);
    while trials < MIN_TRIALS || (interrupted < WANT_INTERRUPTED && trials < MAX_TRIALS) {
        trials += 1;
        let mut child = Command::new(&exe)
            .args(["--exact", "writer_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the writer");
        // Wait until the child has opened the store and starts writing, so
        // that the kill lands among writes rather than in process start-up.
        // (The harness prints `test writer_child ... ` first, on the same line.)
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let ready = BufReader::new(stdout).lines().map_while(Result::ok).any(|l| l.ends_with(READY));
            let _ = tx.send(ready);
        });
        let ready = rx.recv_timeout(Duration::from_secs(20)).unwrap_or(false);
        if !ready {
            let _ = child.kill();
            let _ = child.wait();
            panic!("trial {trials}: the writer never became ready");
        }
        reader.join().unwrap();
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let delay = Duration::from_millis(5 + (rng >> 33) % 56);
        std::thread::sleep(delay);
        child.kill().expect("SIGKILL the writer");
        let status = child.wait().unwrap();
        assert!(!status.success(), "trial {trials}: the writer exited by itself: {status}");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(9), "trial {trials}: the writer was not killed by SIGKILL: {status}");
        }

        let store = Store::open(config(&root)).unwrap();
        let temps = temp_files(store.dir());
        if !temps.is_empty() {
            interrupted += 1;
        }
        // A temporary file shorter than any complete entry: a torn write
        // really was on disk next to the entries read below.
        torn += temps.iter().filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < shortest)).count() as u64;
        // Listing: only entries of the key set, never a temporary file.
        let listed = store.entries();
        for e in &listed {
            let name = e.path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                !name.starts_with(".tmp-"),
                "trial {trials}: entries() listed a temporary file {}",
                e.path.display()
            );
            assert!(keys.contains(&e.key), "trial {trials}: unknown entry {:?}", e.key);
            assert_eq!(e.path, store.entry_path(e.key));
        }
        let listed_keys: BTreeSet<Key> = listed.iter().map(|e| e.key).collect();
        // Reading: every key is a miss (never written yet) or exactly its payload.
        for (k, want) in keys.iter().zip(&expected) {
            match store.get(*k) {
                Lookup::Hit(got) => {
                    assert!(
                        got == *want,
                        "trial {trials}: key {k:?} read back {} bytes that are not its payload",
                        got.len()
                    );
                    assert!(listed_keys.contains(k), "trial {trials}: a hit on {k:?} that entries() did not list");
                    hits += 1;
                }
                Lookup::Miss => assert!(!listed_keys.contains(k), "trial {trials}: listed entry {k:?} reads as a miss"),
                // A rename publishes complete files only: a killed writer
                // can leave a temporary file, never a torn entry.
                Lookup::Rejected(why) => panic!("trial {trials}: entry {k:?} rejected after a kill: {why}"),
            }
        }
        assert!(store.verify().iter().all(|(_, r)| r.is_ok()), "trial {trials}: verify() found a damaged entry");
        // Temporary files of dead writers: kept while young, removed once old.
        let now = SystemTime::now();
        let young = store.collect_at(now);
        assert_eq!((young.temps_removed, young.evicted), (0, 0), "trial {trials}: a fresh temporary file was removed");
        assert_eq!(temp_files(store.dir()).len(), temps.len());
        let old = store.collect_at(now + Duration::from_secs(2 * 3600));
        assert_eq!(old.temps_removed, temps.len() as u64, "trial {trials}");
        assert_eq!(old.evicted, 0);
        assert!(
            temp_files(store.dir()).is_empty(),
            "trial {trials}: temporary files survived a collection two hours on"
        );
        assert_eq!(store.entries().len(), listed.len(), "trial {trials}: a collection removed entries");
        assert_eq!(store.stats().corrupt, 0);
    }
    assert!(hits > 0, "no entry was ever completely written: the kills came too early to test anything");
    assert!(
        interrupted > 0,
        "in {trials} trials no kill landed while a write was in flight (no temporary file was ever left)"
    );
    let mut out = std::io::stderr();
    let _ = writeln!(
        out,
        "crash: {trials} trials, {interrupted} killed a write in flight ({torn} torn temporary files), {hits} hits verified, {:.1?}",
        started.elapsed()
    );
}
