//! The remote cache tier through the `relok` binary, with real
//! `redis-server` processes (started on free loopback ports in temporary
//! folders, stopped at the end; skipped with a message without
//! redis-server unless `RELOK_REQUIRE_REDIS=1`):
//!
//! - eight hosts (processes with their own `HOME`) and one Redis: host 1
//!   compiles the examples and writes them; hosts 2–8 start cold and
//!   compile nothing, with results equal to host 1's — on the cpu device,
//!   on wgpu (lavapipe here) against the cpu device's results, and on cuda
//!   (two nodes sharing machine code) where there is a GPU;
//! - poisoning: every value replaced (unsigned, another key, moved,
//!   another build, truncated, a flipped byte) → each rejected, compiled
//!   locally, correct, and the reader writes nothing back;
//! - faults: a remote never started, slow (`DEBUG SLEEP`), killed during a
//!   run, restarted;
//! - the server checks that readers never write (its SET count).

mod common;
#[path = "../../relok-cache/tests/redis_server/mod.rs"]
mod redis_server;

use common::repo;
use redis_server::RedisServer;
use relok_cache::Key;
use relok_cache::entry::{self, Kind};
use relok_cache::remote::{keys, signed};
use relok_cli::examples::{EXAMPLES, Tolerance};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The `relok` binary (`RELOK_BIN` for a test binary run elsewhere, as on
/// the GPU machine).
fn relok_bin() -> PathBuf {
    std::env::var_os("RELOK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_relok")), PathBuf::from)
}

/// A Redis, a key pair, and a folder of hosts.
struct Fleet {
    server: RedisServer,
    dir: tempfile::TempDir,
}

/// What one host is allowed.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Writer,
    Reader,
}

impl Fleet {
    fn start(test: &str) -> Option<Fleet> {
        let server = RedisServer::start(test)?;
        let dir = tempfile::tempdir().expect("tempdir");
        let out =
            Command::new(relok_bin()).args(["cache", "keygen"]).arg(dir.path().join("keys")).output().expect("relok");
        assert!(out.status.success(), "keygen: {}", String::from_utf8_lossy(&out.stderr));
        Some(Fleet { server, dir })
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("keys").join(keys::SIGNING_KEY_FILE)
    }

    /// `relok ARGS` as host `host` (its own HOME, so its own cache) with
    /// the remote at `url`.
    fn command(&self, host: &str, role: Role, url: &str, args: &[&str]) -> Command {
        let home = self.dir.path().join(host);
        std::fs::create_dir_all(&home).expect("home");
        let mut c = Command::new(relok_bin());
        for v in [
            "RELOK_CACHE",
            "RELOK_CACHE_DIR",
            "XDG_CACHE_HOME",
            "RELOK_BINARY_CACHE",
            "RELOK_REMOTE_SIGNING_KEY",
            "RELOK_REMOTE_PUBLIC_KEY",
        ] {
            c.env_remove(v);
        }
        c.args(args).env("HOME", &home).env("RELOK_REMOTE", url).env("RELOK_REMOTE_TIMEOUT_MS", "250");
        let keys = self.dir.path().join("keys");
        match role {
            Role::Writer => c.env("RELOK_REMOTE_SIGNING_KEY", keys.join(keys::SIGNING_KEY_FILE)),
            Role::Reader => c.env("RELOK_REMOTE_PUBLIC_KEY", keys.join(keys::PUBLIC_KEY_FILE)),
        };
        c
    }

    /// `relok demo --json` on `device` as `host`.
    fn demo(&self, host: &str, role: Role, device: &str) -> Demo {
        self.demo_at(host, role, device, &self.server.url())
    }

    fn demo_at(&self, host: &str, role: Role, device: &str, url: &str) -> Demo {
        let start = Instant::now();
        let out = self.command(host, role, url, &["demo", "--json", "--device", device]).output().expect("relok demo");
        Demo::parse(host, &out, start.elapsed())
    }

    /// The server's count of SET commands (writes).
    fn sets(&self) -> u64 {
        let info = self.server.cli(&["INFO", "commandstats"]);
        info.lines()
            .find_map(|l| l.strip_prefix("cmdstat_set:calls="))
            .and_then(|l| l.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// The names of artifact entries on the server.
    fn artifact_names(&self) -> Vec<String> {
        self.server.keys().into_iter().filter(|k| k.starts_with("relok:artifacts/")).collect()
    }
}

/// What `relok demo --json` printed.
#[derive(Debug)]
struct Demo {
    /// Each example's name and result.
    results: Vec<(String, Value)>,
    summary: Value,
    took: Duration,
}

impl Demo {
    fn parse(host: &str, out: &Output, took: Duration) -> Demo {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{host}: relok demo failed\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        let mut results = Vec::new();
        let mut summary = Value::Null;
        for line in stdout.lines() {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{host}: {e}: {line}"));
            if let Some(s) = v.get("summary") {
                summary = s.clone();
            } else {
                assert_eq!(v["matches_reference"], Value::Bool(true), "{host}: {line}");
                // The math examples are compared with their Rust reference
                // within a tolerance (above), not bit for bit: a WGSL
                // driver may flush subnormals and ignore a zero's sign.
                let name = v["example"].as_str().expect("name").to_owned();
                let exact = EXAMPLES.iter().any(|e| e.name == name && e.tolerance == Tolerance::EXACT);
                results.push((name, if exact { v["result"].clone() } else { Value::from("within its tolerance") }));
            }
        }
        assert!(!results.is_empty() && summary.is_object(), "{host}: {stdout}");
        Demo { results, summary, took }
    }

    fn n(&self, field: &str) -> u64 {
        self.summary[field].as_u64().unwrap_or_else(|| panic!("summary.{field}: {}", self.summary))
    }

    fn remote(&self, field: &str) -> u64 {
        self.summary["remote"][field].as_u64().unwrap_or_else(|| panic!("summary.remote.{field}: {}", self.summary))
    }
}

/// Host 1 writes, hosts 2–8 read at once; every reader compiles nothing
/// and equals `reference`. Returns host 1's demo.
fn eight_hosts(fleet: &Fleet, device: &str, reference: &Demo) -> Demo {
    let first = fleet.demo("host1", Role::Writer, device);
    let compiled = first.n("compiled");
    assert!(compiled > 0, "host 1 starts cold: {}", first.summary);
    assert_eq!(first.remote("writes"), compiled, "host 1 wrote what it compiled: {}", first.summary);
    assert_eq!(first.results, reference.results, "{device} on host 1 equals the reference");
    let names = fleet.artifact_names();
    assert_eq!(names.len() as u64, compiled, "{names:?}");
    let sets = fleet.sets();
    let readers: Vec<_> = (2..=8)
        .map(|h| {
            let host = format!("host{h}");
            let child = fleet
                .command(&host, Role::Reader, &fleet.server.url(), &["demo", "--json", "--device", device])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("relok demo");
            (host, child, Instant::now())
        })
        .collect();
    for (host, child, start) in readers {
        let out = child.wait_with_output().expect("wait");
        let d = Demo::parse(&host, &out, start.elapsed());
        assert_eq!(d.n("compiled"), 0, "{host} compiled: {}", d.summary);
        assert_eq!(d.n("from_remote"), compiled, "{host}: {}", d.summary);
        assert_eq!(
            (d.remote("hits"), d.remote("rejected"), d.remote("errors"), d.remote("writes")),
            (compiled, 0, 0, 0),
            "{host}: {}",
            d.summary
        );
        assert_eq!(d.results, reference.results, "{host} on {device} equals the reference");
    }
    assert_eq!(fleet.sets(), sets, "a reader wrote to the server");
    assert_eq!(fleet.artifact_names(), names);
    first
}

#[test]
fn eight_hosts_on_the_cpu_device() {
    let Some(fleet) = Fleet::start("eight_hosts_on_the_cpu_device") else { return };
    let reference = fleet.demo_at("reference", Role::Reader, "cpu", "");
    eight_hosts(&fleet, "cpu", &reference);
}

/// Whether `relok devices` lists a device of `kind`; otherwise the test
/// skips, or fails under `require`.
fn has_device(test: &str, kind: &str, require: &str) -> bool {
    let out = Command::new(relok_bin()).args(["devices", "--json"]).output().expect("relok devices");
    let found = String::from_utf8_lossy(&out.stdout).lines().any(|l| l.contains(&format!("\"{kind}:")));
    if !found {
        assert!(std::env::var_os(require).is_none(), "{test}: {require} is set but there is no {kind} device");
        let _ =
            std::io::Write::write_all(&mut std::io::stderr(), format!("SKIPPED {test}: no {kind} device\n").as_bytes());
    }
    found
}

#[test]
fn eight_hosts_on_wgpu_equal_the_cpu_device() {
    if !has_device("eight_hosts_on_wgpu_equal_the_cpu_device", "wgpu", "RELOK_REQUIRE_WGPU") {
        return;
    }
    let Some(fleet) = Fleet::start("eight_hosts_on_wgpu_equal_the_cpu_device") else { return };
    let cpu = fleet.demo_at("cpu", Role::Reader, "cpu", "");
    eight_hosts(&fleet, "wgpu", &cpu);
    // The pipeline-cache blob (machine code of this adapter and driver)
    // went up at host 1's exit and seeds a new host.
    let blobs: Vec<String> = fleet.server.keys().into_iter().filter(|k| k.starts_with("relok:binary/wgpu-")).collect();
    if !blobs.is_empty() {
        let d = fleet.demo("host9", Role::Reader, "wgpu");
        assert_eq!(d.summary["archive_remote"]["hits"], 1, "{}", d.summary);
    }
}

/// Two nodes on the H200 (or any CUDA GPU): the second loads every cubin
/// from the remote.
#[test]
fn two_cuda_nodes_share_machine_code() {
    if !has_device("two_cuda_nodes_share_machine_code", "cuda", "RELOK_REQUIRE_CUDA") {
        return;
    }
    let Some(fleet) = Fleet::start("two_cuda_nodes_share_machine_code") else { return };
    let cpu = fleet.demo_at("cpu", Role::Reader, "cpu", "");
    let first = fleet.demo("node1", Role::Writer, "cuda");
    assert_eq!(first.results, cpu.results);
    let cubins = fleet.server.keys().into_iter().filter(|k| k.starts_with("relok:binary/")).count() as u64;
    assert!(cubins > 0, "node 1 wrote its cubins");
    let second = fleet.demo("node2", Role::Reader, "cuda");
    assert_eq!(second.n("compiled"), 0, "{}", second.summary);
    assert_eq!(second.summary["archive_remote"]["hits"], cubins, "{}", second.summary);
    assert_eq!(second.results, cpu.results);
}

/// Replaces every artifact value on the server by `poison(name, value)`.
fn poison_all(fleet: &Fleet, poison: &dyn Fn(&str, &[u8]) -> Vec<u8>) {
    for name in fleet.artifact_names() {
        let v = fleet.server.get_raw(&name);
        fleet.server.set_raw(&name, &poison(&name, &v));
    }
}

#[test]
fn poisoned_entries_are_rejected_and_compiled_locally() {
    let Some(fleet) = Fleet::start("poisoned_entries_are_rejected_and_compiled_locally") else { return };
    let first = fleet.demo("host1", Role::Writer, "cpu");
    let n = first.n("compiled");
    let names = fleet.artifact_names();
    let good: Vec<Vec<u8>> = names.iter().map(|k| fleet.server.get_raw(k)).collect();
    let restore = || names.iter().zip(&good).for_each(|(k, v)| fleet.server.set_raw(k, v));
    let signing = keys::read_signing_key(&fleet.key()).expect("key");
    let (other, _) = keys::keygen(&fleet.dir.path().join("other"))
        .map(|(k, p)| (keys::read_signing_key(&k).expect("key"), p))
        .expect("keygen");
    let framed = |v: &[u8]| v[signed::HEADER..].to_vec();
    let key_of = |name: &str| Key::from_hex(name.rsplit('/').next().expect("hex")).expect("key");
    let by_name: std::collections::HashMap<String, Vec<u8>> = names.iter().cloned().zip(good.iter().cloned()).collect();
    let order = names.clone();
    type Poison = Box<dyn Fn(&str, &[u8]) -> Vec<u8>>;
    let cases: Vec<(&str, Poison)> = vec![
        ("unsigned", Box::new(move |_: &str, v: &[u8]| framed(v))),
        ("signed by another key", Box::new(move |name: &str, v: &[u8]| signed::seal(&other, name, &framed(v)))),
        (
            "moved from another name",
            Box::new(move |name: &str, _: &[u8]| {
                let i = order.iter().position(|k| k == name).expect("name");
                by_name[&order[(i + 1) % order.len()]].clone()
            }),
        ),
        (
            "another compiler build",
            Box::new(move |name: &str, v: &[u8]| {
                let e = framed(v);
                let h = entry::header(&e).expect("header");
                let payload = &e[h.payload_at..e.len() - 32];
                signed::seal(
                    &signing,
                    name,
                    &entry::encode(Kind::Artifact, "relok-0.0.0-another-build", key_of(name), payload),
                )
            }),
        ),
        ("truncated", Box::new(|_: &str, v: &[u8]| v[..v.len() - 10].to_vec())),
        (
            "a flipped byte",
            Box::new(|_: &str, v: &[u8]| {
                let mut v = v.to_vec();
                let i = v.len() / 2;
                v[i] ^= 0x10;
                v
            }),
        ),
    ];
    assert!(n >= 2, "moving needs two entries");
    for (i, (what, poison)) in cases.iter().enumerate() {
        poison_all(&fleet, poison.as_ref());
        let poisoned: Vec<Vec<u8>> = fleet.artifact_names().iter().map(|k| fleet.server.get_raw(k)).collect();
        let sets = fleet.sets();
        let d = fleet.demo(&format!("reader{i}"), Role::Reader, "cpu");
        assert_eq!((d.n("compiled"), d.remote("rejected"), d.remote("hits")), (n, n, 0), "{what}: {}", d.summary);
        assert_eq!(d.results, first.results, "{what}");
        assert_eq!(fleet.sets(), sets, "{what}: the reader wrote");
        let now: Vec<Vec<u8>> = fleet.artifact_names().iter().map(|k| fleet.server.get_raw(k)).collect();
        assert_eq!(now, poisoned, "{what}: the server's values changed");
        restore();
    }
    // A writer replaces poisoned values with good ones.
    poison_all(&fleet, &|_, v| v[..v.len() - 1].to_vec());
    let w = fleet.demo("writer2", Role::Writer, "cpu");
    assert_eq!((w.remote("rejected"), w.remote("writes")), (n, n), "{}", w.summary);
    let now: Vec<Vec<u8>> = fleet.artifact_names().iter().map(|k| fleet.server.get_raw(k)).collect();
    assert_eq!(now, good, "the writer's values are byte-identical to host 1's");
}

#[test]
fn a_remote_never_started_or_slow_costs_one_timeout() {
    let Some(fleet) = Fleet::start("a_remote_never_started_or_slow_costs_one_timeout") else { return };
    let reference = fleet.demo("host1", Role::Writer, "cpu");
    let n = reference.n("compiled");
    // Never started: nothing listens on the port.
    let nowhere = format!("redis://127.0.0.1:{}/0", redis_server::free_port());
    let d = fleet.demo_at("never", Role::Writer, "cpu", &nowhere);
    assert_eq!(
        (d.n("compiled"), d.remote("errors"), d.remote("writes"), d.remote("dropped")),
        (n, 1, 0, n),
        "{}",
        d.summary
    );
    assert!(d.remote("get_us") < 250_000, "{}", d.summary);
    assert_eq!(d.results, reference.results);
    // Slow: the server sleeps 5 s; the first lookup times out after 250 ms.
    let sleeper = fleet.server.sleep_in_background(5);
    let d = fleet.demo("slow", Role::Reader, "cpu");
    assert_eq!((d.n("compiled"), d.remote("errors"), d.remote("hits")), (n, 1, 0), "{}", d.summary);
    let spent = d.remote("get_us");
    assert!((200_000..1_000_000).contains(&spent), "remote lookups took {spent} µs: {}", d.summary);
    assert!(d.took < Duration::from_millis(4500), "the run waited for the server: {:?}", d.took);
    assert_eq!(d.results, reference.results);
    sleeper.join().expect("sleeper");
}

#[test]
fn a_remote_killed_during_a_run_and_restarted() {
    let Some(mut fleet) = Fleet::start("a_remote_killed_during_a_run_and_restarted") else { return };
    let reference = fleet.demo("host1", Role::Writer, "cpu");
    let n = reference.n("compiled");
    let child = fleet
        .command("killed", Role::Reader, &fleet.server.url(), &["demo", "--json", "--device", "cpu"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("relok demo");
    std::thread::sleep(Duration::from_millis(40));
    fleet.server.kill();
    let d = Demo::parse("killed", &child.wait_with_output().expect("wait"), Duration::ZERO);
    // Wherever the kill fell, the run completed: each kernel from the
    // remote or compiled, at most one error, the same results.
    assert_eq!(d.n("compiled") + d.n("from_remote"), n, "{}", d.summary);
    assert!(d.remote("errors") <= 1, "{}", d.summary);
    assert_eq!(d.results, reference.results);
    // Down at start: one error, everything compiled.
    let d = fleet.demo("down", Role::Reader, "cpu");
    assert_eq!((d.n("compiled"), d.remote("errors")), (n, 1), "{}", d.summary);
    // Restarted (empty: nothing is saved): a new process uses it again.
    fleet.server.restart();
    let w = fleet.demo("after", Role::Writer, "cpu");
    assert_eq!((w.n("compiled"), w.remote("errors"), w.remote("writes")), (n, 0, n), "{}", w.summary);
    let r = fleet.demo("after-reader", Role::Reader, "cpu");
    assert_eq!((r.n("compiled"), r.n("from_remote")), (0, n), "{}", r.summary);
    assert_eq!(r.results, reference.results);
}

#[test]
fn push_pull_and_stats_from_the_command_line() {
    let Some(fleet) = Fleet::start("push_pull_and_stats_from_the_command_line") else { return };
    let url = fleet.server.url();
    // Compile without a remote, then push what the store holds.
    let local = fleet.demo_at("builder", Role::Writer, "cpu", "");
    let n = local.n("compiled");
    let reader_push = fleet.command("builder", Role::Reader, &url, &["cache", "push"]).output().expect("push");
    assert!(!reader_push.status.success(), "a reader cannot push");
    assert!(
        String::from_utf8_lossy(&reader_push.stderr).contains("no signing key"),
        "{}",
        String::from_utf8_lossy(&reader_push.stderr)
    );
    assert_eq!(fleet.server.cli(&["DBSIZE"]).trim(), "0");
    let push = fleet.command("builder", Role::Writer, &url, &["cache", "push"]).output().expect("push");
    assert!(push.status.success(), "{}", String::from_utf8_lossy(&push.stderr));
    assert_eq!(fleet.artifact_names().len() as u64, n);
    // Pull what the examples need into a fresh host; then it compiles
    // nothing even without the remote.
    let repo = repo();
    let mut files: Vec<String> = EXAMPLES.iter().map(|e| repo.join(e.file).display().to_string()).collect();
    files.dedup();
    let mut args = vec!["cache", "pull", "--strategy", "table"];
    args.extend(files.iter().map(String::as_str));
    let pull = fleet.command("fresh", Role::Reader, &url, &args).output().expect("pull");
    let text = String::from_utf8_lossy(&pull.stdout);
    assert!(pull.status.success(), "{text}{}", String::from_utf8_lossy(&pull.stderr));
    assert!(text.contains(&format!("{n} fetched")), "{text}");
    let d = fleet.demo_at("fresh", Role::Reader, "cpu", "");
    assert_eq!((d.n("compiled"), d.n("artifact_store")), (0, n), "{}", d.summary);
    let stats = fleet.command("fresh", Role::Reader, &url, &["cache", "stats", "--json"]).output().expect("stats");
    let s: Value = serde_json::from_slice(&stats.stdout).expect("json");
    assert_eq!(s["remote"]["hits"], n, "{s}");
    assert!(s["remote_config"].as_str().is_some_and(|c| c.contains("reads only")), "{s}");
}
