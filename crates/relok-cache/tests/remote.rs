//! The remote tier against real `redis-server` processes: a writer's
//! entries read by a reader with only the public key, every poisoned value
//! rejected, the failure policy (never started, killed, slow, restarted),
//! the flush at drop, and a reader that never writes.

mod redis_server;

use ed25519_dalek::SigningKey;
use redis_server::RedisServer;
use relok_cache::entry::{self, Kind};
use relok_cache::remote::{Remote, RemoteConfig, signed};
use relok_cache::{Key, Lookup, RemoteStats, Store, StoreConfig};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ID: &str = "relok-test-build-1";

fn signing(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

fn remote(url: &str, key: &SigningKey, writer: bool) -> Arc<Remote> {
    let signer = writer.then(|| key.clone());
    Arc::new(Remote::open(RemoteConfig::new(url, key.verifying_key(), signer)).expect("remote"))
}

fn store(dir: &Path, id: &str, remote: &Arc<Remote>) -> Store {
    Store::open(StoreConfig::artifacts(dir, id)).expect("store").with_remote(Arc::clone(remote))
}

fn key(n: u8) -> Key {
    Key([n; 32])
}

#[test]
fn a_reader_gets_what_a_writer_put_and_never_writes() {
    let Some(server) = RedisServer::start("a_reader_gets_what_a_writer_put_and_never_writes") else { return };
    let t = tempfile::tempdir().unwrap();
    let k = signing(1);
    let w = store(&t.path().join("writer"), ID, &remote(&server.url(), &k, true));
    for n in 0..10 {
        w.put(key(n), format!("payload {n}").as_bytes()).unwrap();
    }
    drop(w); // flushes the queue
    let names = server.keys();
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(names[0].starts_with(&format!("relok:artifacts/v1-{ID}/")), "{names:?}");

    let reader_dir = t.path().join("reader");
    let r = store(&reader_dir, ID, &remote(&server.url(), &k, false));
    for n in 0..10 {
        assert_eq!(r.get(key(n)), Lookup::Hit(format!("payload {n}").into_bytes()));
    }
    let st = r.remote_stats();
    assert_eq!((st.hits, st.misses, st.rejected, st.errors), (10, 0, 0, 0));
    assert!(st.bytes_read > 0);
    // Backfilled: a second reader process finds them locally.
    drop(r);
    let again = Store::open(StoreConfig::artifacts(&reader_dir, ID)).unwrap();
    assert_eq!(again.get(key(3)), Lookup::Hit(b"payload 3".to_vec()));
    // Its lifetime counters include the remote's.
    assert_eq!(again.lifetime_remote_stats().hits, 10);

    // A miss everywhere, compiled and written by the reader: local only.
    let r = store(&reader_dir, ID, &remote(&server.url(), &k, false));
    assert_eq!(r.get(key(99)), Lookup::Miss);
    r.put(key(99), b"local").unwrap();
    drop(r);
    assert_eq!(server.keys(), names, "a reader added or changed names on the server");
    assert_eq!(server.cli(&["DBSIZE"]).trim(), "10");
}

/// Each poisoned value is rejected (a miss, counted) and a writer that
/// compiles replaces it.
#[test]
fn poisoned_values_are_rejected() {
    let Some(server) = RedisServer::start("poisoned_values_are_rejected") else { return };
    let t = tempfile::tempdir().unwrap();
    let (k, other) = (signing(1), signing(2));
    let w = store(&t.path().join("w"), ID, &remote(&server.url(), &k, true));
    w.put(key(1), b"the real payload").unwrap();
    w.put(key(2), b"another payload").unwrap();
    drop(w);
    let name = |n: u8| format!("relok:artifacts/v1-{ID}/{}", key(n));
    let good = server.get_raw(&name(1));
    assert!(good.starts_with(b"RELOKSIG"), "{} bytes", good.len());
    let framed = &good[signed::HEADER..];

    let mut flipped = good.clone();
    let mid = flipped.len() - 20;
    flipped[mid] ^= 0x01;
    let other_build =
        signed::seal(&k, &name(1), &entry::encode(Kind::Artifact, "relok-other-build", key(1), b"the real payload"));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("unsigned (the framed entry alone)", framed.to_vec()),
        ("garbage", b"hello".to_vec()),
        ("signed by another key", signed::seal(&other, &name(1), framed)),
        ("moved from another name", server.get_raw(&name(2))),
        ("another compiler build", other_build),
        ("truncated", good[..good.len() - 7].to_vec()),
        ("one byte flipped", flipped),
    ];
    for (what, value) in cases {
        server.set_raw(&name(1), &value);
        let dir = tempfile::tempdir().unwrap();
        let r = store(dir.path(), ID, &remote(&server.url(), &k, false));
        assert_eq!(r.get(key(1)), Lookup::Miss, "{what}");
        let st = r.remote_stats();
        assert_eq!((st.hits, st.rejected, st.errors), (0, 1, 0), "{what}");
        assert!(r.entries().is_empty(), "{what}: nothing reached the local store");
        // A writer that compiles replaces it; then readers hit again.
        let w = store(&dir.path().join("w"), ID, &remote(&server.url(), &k, true));
        assert_eq!(w.get(key(1)), Lookup::Miss, "{what}");
        w.put(key(1), b"the real payload").unwrap();
        drop(w);
        assert_eq!(server.get_raw(&name(1)), good, "{what}: the writer's value is byte-identical");
    }
    // Not a string at all.
    server.cli(&["DEL", &name(1)]);
    server.cli(&["LPUSH", &name(1), "x"]);
    let dir = tempfile::tempdir().unwrap();
    let r = store(dir.path(), ID, &remote(&server.url(), &k, false));
    assert_eq!(r.get(key(1)), Lookup::Miss);
    assert_eq!(r.remote_stats().rejected, 1);
    assert!(!r.remote().unwrap().is_off(), "a bad value is not a failure of the remote");
    assert_eq!(r.get(key(2)), Lookup::Hit(b"another payload".to_vec()));
}

/// Machine code is named by device and driver build: another build's
/// archive never sees it.
#[test]
fn binary_entries_are_per_device_and_driver() {
    let Some(server) = RedisServer::start("binary_entries_are_per_device_and_driver") else { return };
    let t = tempfile::tempdir().unwrap();
    let k = signing(1);
    let rem = remote(&server.url(), &k, true);
    let open = |dir: &str, build: &str| {
        Store::open(StoreConfig::binary(t.path().join(dir), "gpu-a-sm90", build)).unwrap().with_remote(Arc::clone(&rem))
    };
    let w = open("one", "driver580-1");
    w.put(key(7), b"cubin").unwrap();
    drop(w);
    assert_eq!(server.keys(), vec![format!("relok:binary/gpu-a-sm90-driver580-1/{}", key(7))]);
    assert_eq!(open("two", "driver580-1").get(key(7)), Lookup::Hit(b"cubin".to_vec()));
    let other = open("three", "driver580-2");
    assert_eq!(other.get(key(7)), Lookup::Miss);
    assert_eq!(other.remote_stats().misses, 1);
}

fn assert_one_error(st: RemoteStats, what: &str) {
    assert_eq!((st.hits, st.errors), (0, 1), "{what}: {st:?}");
}

#[test]
fn a_remote_never_started_costs_one_failed_connect() {
    let Some(_server) = RedisServer::start("a_remote_never_started_costs_one_failed_connect") else { return };
    let port = redis_server::free_port();
    let t = tempfile::tempdir().unwrap();
    let k = signing(1);
    let s = store(t.path(), ID, &remote(&format!("redis://127.0.0.1:{port}/0"), &k, true));
    let start = Instant::now();
    for n in 0..50 {
        assert_eq!(s.get(key(n)), Lookup::Miss);
        s.put(key(n), b"x").unwrap();
    }
    assert!(start.elapsed() < Duration::from_millis(500), "{:?}", start.elapsed());
    assert_one_error(s.remote_stats(), "never started");
    assert!(s.remote().unwrap().is_off());
    assert_eq!(s.remote_stats().dropped, 50);
    assert_eq!(s.get(key(1)), Lookup::Hit(b"x".to_vec()), "the local tier goes on");
}

#[test]
fn a_slow_remote_is_bounded_by_the_timeout() {
    let Some(server) = RedisServer::start("a_slow_remote_is_bounded_by_the_timeout") else { return };
    let t = tempfile::tempdir().unwrap();
    let k = signing(1);
    let mut config = RemoteConfig::new(&server.url(), k.verifying_key(), None);
    config.timeout = Duration::from_millis(200);
    let rem = Arc::new(Remote::open(config).unwrap());
    let s = store(t.path(), ID, &rem);
    assert_eq!(s.get(key(1)), Lookup::Miss, "connected");
    let sleeper = server.sleep_in_background(2);
    let start = Instant::now();
    for n in 2..20 {
        assert_eq!(s.get(key(n)), Lookup::Miss);
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(150) && took < Duration::from_millis(900), "{took:?}");
    assert_eq!(s.remote_stats().errors, 1);
    assert_eq!(s.remote_stats().misses, 1);
    assert!(rem.is_off());
    sleeper.join().unwrap();
    let start = Instant::now();
    for n in 20..40 {
        assert_eq!(s.get(key(n)), Lookup::Miss);
    }
    assert!(start.elapsed() < Duration::from_millis(100), "an off remote costs nothing: {:?}", start.elapsed());
    assert_eq!(s.remote_stats().errors, 1);
}

#[test]
fn a_killed_remote_is_off_and_a_restarted_one_serves_a_new_process() {
    let Some(mut server) = RedisServer::start("a_killed_remote_is_off_and_a_restarted_one_serves_a_new_process") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let k = signing(1);
    let w = store(&t.path().join("w"), ID, &remote(&server.url(), &k, true));
    w.put(key(1), b"one").unwrap();
    drop(w);
    let s = store(&t.path().join("r"), ID, &remote(&server.url(), &k, true));
    assert_eq!(s.get(key(1)), Lookup::Hit(b"one".to_vec()));
    server.kill();
    let start = Instant::now();
    assert_eq!(s.get(key(2)), Lookup::Miss);
    assert_eq!(s.get(key(3)), Lookup::Miss);
    s.put(key(2), b"two").unwrap();
    assert!(start.elapsed() < Duration::from_millis(600), "{:?}", start.elapsed());
    assert_eq!(s.get(key(2)), Lookup::Hit(b"two".to_vec()), "the local tier goes on");
    let st = s.remote_stats();
    assert_eq!((st.hits, st.errors, st.dropped), (1, 1, 1), "{st:?}");
    drop(s);
    server.restart();
    // The data died with the server (nothing saved); a new process writes
    // and reads again.
    let s = store(&t.path().join("again"), ID, &remote(&server.url(), &k, true));
    assert_eq!(s.get(key(1)), Lookup::Miss);
    s.put(key(1), b"one").unwrap();
    drop(s);
    let s = store(&t.path().join("again2"), ID, &remote(&server.url(), &k, false));
    assert_eq!(s.get(key(1)), Lookup::Hit(b"one".to_vec()));
    assert_eq!(s.remote_stats().errors, 0);
}

#[test]
fn push_and_pull() {
    let Some(server) = RedisServer::start("push_and_pull") else { return };
    let t = tempfile::tempdir().unwrap();
    let k = signing(1);
    let local = Store::open(StoreConfig::artifacts(t.path().join("a"), ID)).unwrap();
    for n in 0..100 {
        local.put(key(n), &[n; 100]).unwrap();
    }
    drop(local);
    let reader = store(&t.path().join("a"), ID, &remote(&server.url(), &k, false));
    assert!(reader.push().unwrap_err().to_string().contains("no signing key"));
    let writer = store(&t.path().join("a"), ID, &remote(&server.url(), &k, true));
    let r = writer.push().unwrap();
    assert_eq!((r.pushed, r.skipped.len()), (100, 0));
    assert_eq!(server.cli(&["DBSIZE"]).trim(), "100");
    // Among them, a list and an unsigned value under relok's names: each
    // is that name's rejection, not the pipeline's (the pull goes on).
    let name = |n: u8| format!("relok:artifacts/v1-{ID}/{}", key(n));
    server.cli(&["LPUSH", &name(105), "x"]);
    server.set_raw(&name(106), b"unsigned");
    let fresh = store(&t.path().join("b"), ID, &remote(&server.url(), &k, false));
    let keys: Vec<Key> = (0..110).map(key).collect();
    let p = fresh.pull(&keys);
    assert_eq!((p.local, p.fetched, p.missing, p.rejected, p.errors), (0, 100, 8, 2, 0));
    assert!(!fresh.remote().unwrap().is_off());
    assert_eq!(fresh.get(key(42)), Lookup::Hit(vec![42; 100]));
    let p = fresh.pull(&keys);
    assert_eq!((p.local, p.fetched, p.missing, p.rejected), (100, 0, 8, 2));
}

/// With a Redis user that may only read, even a process holding the
/// signing key adds nothing: the server refuses, the remote goes off.
#[test]
fn a_read_only_redis_user_cannot_write_even_with_the_key() {
    let Some(server) = RedisServer::start("a_read_only_redis_user_cannot_write_even_with_the_key") else { return };
    assert_eq!(
        server.cli(&["ACL", "SETUSER", "reader", "on", ">rpw", "~relok:*", "+getrange", "+ping", "+select"]).trim(),
        "OK"
    );
    let url = format!("redis://reader:rpw@127.0.0.1:{}/0", server.port());
    let t = tempfile::tempdir().unwrap();
    let k = signing(1);
    let s = store(t.path(), ID, &remote(&url, &k, true));
    assert_eq!(s.get(key(1)), Lookup::Miss, "the reader user reads");
    assert_eq!(s.remote_stats().misses, 1);
    s.put(key(1), b"x").unwrap();
    assert_eq!(s.flush_remote(), 0);
    let st = s.remote_stats();
    assert_eq!((st.writes, st.errors, st.dropped), (0, 1, 1), "{st:?}");
    assert!(s.remote().unwrap().is_off());
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}

/// An entry at the reader's cap is read (its value is the entry and the
/// 82-byte signature block: a GETRANGE bounded by the cap alone cut it);
/// one above the cap is rejected unread.
#[test]
fn an_entry_at_the_cap_is_read_and_one_above_rejected() {
    let Some(server) = RedisServer::start("an_entry_at_the_cap_is_read_and_one_above_rejected") else { return };
    let t = tempfile::tempdir().unwrap();
    let k = signing(1);
    let cap = 4096u64;
    let framed = |n: usize| entry::encode(Kind::Artifact, ID, key(0), &vec![0; n]).len() as u64;
    let at_cap = (0..cap as usize).rev().find(|&n| framed(n) <= cap).unwrap();
    assert_eq!(framed(at_cap), cap);
    let w = store(&t.path().join("w"), ID, &remote(&server.url(), &k, true));
    w.put(key(1), &vec![1; at_cap]).unwrap();
    w.put(key(2), &vec![2; at_cap + 1]).unwrap();
    drop(w);
    let config = StoreConfig { max_bytes: cap, ..StoreConfig::artifacts(t.path().join("r"), ID) };
    let r = Store::open(config).unwrap().with_remote(remote(&server.url(), &k, false));
    assert!(r.get(key(1)) == Lookup::Hit(vec![1; at_cap]), "the entry at the cap was not read");
    assert_eq!(r.get(key(2)), Lookup::Miss);
    let st = r.remote_stats();
    assert_eq!((st.hits, st.rejected, st.errors), (1, 1, 0), "{st:?}");
}
