//! The remote tier against servers that misbehave, written here on
//! loopback: one that never answers, one that answers a byte every 50 ms,
//! one that announces a 2 GB reply, one that speaks something else, one
//! that is not there. Each lookup ends within the timeout (plus a margin
//! for a loaded machine) with the remote switched off and one error
//! counted; the process's next lookups do not wait again.
//!
//! `hostile_remote_figures` (ignored; run it with `--ignored
//! --nocapture`) measures the worst cases for docs/cache.md.

use ed25519_dalek::SigningKey;
use relok_cache::remote::{Remote, RemoteConfig, RemoteError, wire::WireError};
use relok_cache::{Key, Lookup, Store, StoreConfig};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_millis(250);
/// Slack for a loaded CI machine (two cores shared by several builds).
const MARGIN: Duration = Duration::from_millis(150);

/// How a server misbehaves.
#[derive(Clone, Copy, Debug)]
enum Way {
    /// Accepts, reads, never answers.
    Silent,
    /// Answers a valid-looking bulk string one byte every 50 ms.
    Drip,
    /// Announces a 2 GB bulk string, then sends nothing.
    Huge,
    /// Answers in HTTP.
    Garbage,
    /// Announces a bulk string within the bound and floods bytes as fast
    /// as loopback carries them, never finishing (for the figures).
    Flood,
}

/// A misbehaving server on a free loopback port, stopped on drop.
struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    fn start(way: Way) -> Hostile {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        std::thread::spawn(move || {
            for c in l.incoming() {
                if s2.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(c) = c else { continue };
                let stop = Arc::clone(&s2);
                std::thread::spawn(move || serve(c, way, &stop));
            }
        });
        Hostile { port, stop }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(mut c: TcpStream, way: Way, stop: &AtomicBool) {
    let mut b = [0; 64 << 10];
    c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    // The command first (whatever it is).
    let _ = c.read(&mut b);
    let send = |c: &mut TcpStream, bytes: &[u8]| c.write_all(bytes).is_ok();
    match way {
        Way::Silent | Way::Huge | Way::Garbage => {
            let ok = match way {
                Way::Huge => send(&mut c, b"$2000000000\r\n"),
                Way::Garbage => send(&mut c, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
                _ => true,
            };
            while ok && !stop.load(Ordering::Relaxed) {
                match c.read(&mut b) {
                    Ok(0) => return,
                    _ => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }
        Way::Drip => {
            for &byte in b"$1000\r\n".iter().chain(std::iter::repeat(&b'x')) {
                if stop.load(Ordering::Relaxed) || !send(&mut c, &[byte]) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Way::Flood => {
            if !send(&mut c, format!("${}\r\n", (1u64 << 30) + 82).as_bytes()) {
                return;
            }
            let chunk = vec![b'x'; 1 << 20];
            while !stop.load(Ordering::Relaxed) && send(&mut c, &chunk) {}
        }
    }
}

fn signing() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

fn remote(url: &str, writer: bool) -> Arc<Remote> {
    let k = signing();
    let mut c = RemoteConfig::new(url, k.verifying_key(), writer.then(|| k.clone()));
    c.timeout = TIMEOUT;
    Arc::new(Remote::open(c).unwrap())
}

fn store(dir: &std::path::Path, r: &Arc<Remote>) -> Store {
    Store::open(StoreConfig::artifacts(dir, "relok-test-hostile")).unwrap().with_remote(Arc::clone(r))
}

fn key(n: u8) -> Key {
    Key([n; 32])
}

/// The first lookup's time; asserts the second costs nothing and one
/// error was counted.
fn first_lookup(way: Way, url: &str) -> Duration {
    let t = tempfile::tempdir().unwrap();
    let r = remote(url, false);
    let s = store(t.path(), &r);
    let start = Instant::now();
    assert_eq!(s.get(key(1)), Lookup::Miss, "{way:?}");
    let first = start.elapsed();
    assert!(r.is_off(), "{way:?}: the remote is off after its failure");
    let start = Instant::now();
    for n in 2..20 {
        assert_eq!(s.get(key(n)), Lookup::Miss, "{way:?}");
    }
    let rest = start.elapsed();
    assert!(rest < Duration::from_millis(50), "{way:?}: later lookups waited {rest:?}");
    let st = s.remote_stats();
    assert_eq!((st.hits, st.errors, st.rejected), (0, 1, 0), "{way:?}: {st:?}");
    first
}

#[test]
fn a_silent_server_costs_one_timeout() {
    let h = Hostile::start(Way::Silent);
    let took = first_lookup(Way::Silent, &h.url());
    assert!(took >= TIMEOUT - Duration::from_millis(20) && took < TIMEOUT + MARGIN, "{took:?}");
}

#[test]
fn a_slow_drip_server_is_bounded_by_the_timeout_as_a_whole() {
    let h = Hostile::start(Way::Drip);
    let took = first_lookup(Way::Drip, &h.url());
    assert!(took >= TIMEOUT - Duration::from_millis(20) && took < TIMEOUT + MARGIN, "{took:?}");
}

#[test]
fn a_huge_reply_is_refused_before_it_is_read() {
    let h = Hostile::start(Way::Huge);
    let took = first_lookup(Way::Huge, &h.url());
    assert!(took < Duration::from_millis(100), "refused at its header, without waiting: {took:?}");
    // And said so.
    let e = remote(&h.url(), false).query_text(&["GET", "x"]).unwrap_err();
    assert!(matches!(e, RemoteError::Redis(WireError::TooLarge { len: 2_000_000_000, limit: 1_048_576, .. })), "{e}");
}

#[test]
fn a_garbage_speaking_server_is_refused_at_its_first_byte() {
    let h = Hostile::start(Way::Garbage);
    let took = first_lookup(Way::Garbage, &h.url());
    assert!(took < Duration::from_millis(100), "{took:?}");
    let e = remote(&h.url(), false).query_text(&["PING"]).unwrap_err().to_string();
    assert_eq!(e, format!("{} does not speak Redis: a reply starting with byte 0x48", h.url()));
}

#[test]
fn a_dead_server_costs_one_refused_connection() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let took = first_lookup(Way::Silent, &format!("redis://127.0.0.1:{port}/0"));
    assert!(took < Duration::from_millis(100), "{took:?}");
}

#[test]
fn a_timeout_says_how_long_and_where() {
    let h = Hostile::start(Way::Silent);
    let r = remote(&h.url(), true);
    let e = r.query_text(&["PING"]).unwrap_err().to_string();
    assert_eq!(e, format!("timed out after 250 ms talking to {}", h.url()));
    let e = r.put_now(&[("relok:x".into(), b"entry".to_vec())]).unwrap_err().to_string();
    assert_eq!(e, format!("timed out after 250 ms talking to {}", h.url()));
}

/// A pull's pipeline (64 GETRANGEs in one round trip) is one exchange:
/// one timeout for all of it, then the rest are not looked up.
#[test]
fn a_pull_pays_one_timeout_for_its_pipeline() {
    for way in [Way::Silent, Way::Drip, Way::Huge, Way::Garbage] {
        let h = Hostile::start(way);
        let t = tempfile::tempdir().unwrap();
        let s = store(t.path(), &remote(&h.url(), false));
        let keys: Vec<Key> = (0..200).map(key).collect();
        let start = Instant::now();
        let p = s.pull(&keys);
        let took = start.elapsed();
        assert!(took < TIMEOUT + MARGIN, "{way:?}: {took:?}");
        assert_eq!((p.local, p.fetched, p.errors), (0, 0, 1), "{way:?}: {p:?}");
    }
}

/// A writer against a silent server: its first write times out, the rest
/// are dropped, and the flush at exit does not wait again.
#[test]
fn a_writer_pays_one_timeout_too() {
    let h = Hostile::start(Way::Silent);
    let t = tempfile::tempdir().unwrap();
    let r = remote(&h.url(), true);
    let s = store(t.path(), &r);
    let start = Instant::now();
    for n in 0..20 {
        s.put(key(n), b"payload").unwrap();
    }
    assert_eq!(s.flush_remote(), 0);
    let took = start.elapsed();
    assert!(took < TIMEOUT + MARGIN, "{took:?}");
    let st = s.remote_stats();
    assert_eq!((st.writes, st.errors, st.dropped), (0, 1, 20), "{st:?}");
    assert!(r.is_off());
    let start = Instant::now();
    drop(s);
    assert!(start.elapsed() < Duration::from_millis(50), "{:?}", start.elapsed());
}

/// A lookup that starts while the writer's exchange is in flight ends
/// when the writer's times out (its socket is shut down): the process
/// pays one timeout, not two in a row.
#[test]
fn a_failure_ends_the_exchanges_in_flight() {
    let h = Hostile::start(Way::Silent);
    let t = tempfile::tempdir().unwrap();
    let r = remote(&h.url(), true);
    let s = store(t.path(), &r);
    let start = Instant::now();
    s.put(key(1), b"payload").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(s.get(key(2)), Lookup::Miss);
    let took = start.elapsed();
    assert!(took < TIMEOUT + MARGIN, "the lookup waited past the writer's timeout: {took:?}");
    assert!(r.is_off());
    // The writer's job finishes (and counts its error) after it switched
    // the remote off.
    assert_eq!(s.flush_remote(), 0);
    let st = s.remote_stats();
    assert_eq!((st.errors, st.dropped), (1, 1), "one failure, one error: {st:?}");
}

/// The worst cases, for docs/cache.md: each way 20 times (a new process's
/// first lookup each time), the longest; and the memory a reply costs.
#[test]
#[ignore = "measures figures: run with --ignored --nocapture"]
fn hostile_remote_figures() {
    fn hwm_kib() -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        s.lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead = format!("redis://127.0.0.1:{port}/0");
    for way in [None, Some(Way::Silent), Some(Way::Drip), Some(Way::Garbage), Some(Way::Huge)] {
        let h = way.map(Hostile::start);
        let url = h.as_ref().map(Hostile::url).unwrap_or_else(|| dead.clone());
        let before = hwm_kib();
        let times: Vec<Duration> = (0..20).map(|_| first_lookup(way.unwrap_or(Way::Silent), &url)).collect();
        let worst = times.iter().max().unwrap();
        let grew = hwm_kib().saturating_sub(before);
        let name = way.map(|w| format!("{w:?}")).unwrap_or_else(|| "Dead".into());
        let _ = writeln!(std::io::stderr(), "{name:8} worst first lookup {worst:?}; peak memory grew {grew} KiB");
    }
    // A server that announces a reply within the bound (the default cap,
    // 1 GiB, plus the signature block) and floods bytes for the whole
    // timeout.
    let h = Hostile::start(Way::Flood);
    let before = hwm_kib();
    let took = first_lookup(Way::Flood, &h.url());
    let grew = hwm_kib().saturating_sub(before);
    let _ = writeln!(std::io::stderr(), "Flood    first lookup {took:?}; peak memory grew {grew} KiB");
}
