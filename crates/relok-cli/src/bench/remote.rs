//! `relok bench remote` ([`run`]): the remote tier against compiling, with
//! a real Redis (a `redis-server` it starts on a free loopback port, or
//! `--url`):
//!
//! - **cold compile**: a new process with an empty local cache and no
//!   remote compiles 64 kernels (the examples, each renamed per copy so
//!   that every one has its own key);
//! - **remote, loopback**: a new process with an empty local cache loads
//!   the same 64 kernels from a warm remote (one GETRANGE each, signature
//!   and entry checks, written locally), checked to compile none;
//! - **remote, 1 ms round trip**: the same through a delaying proxy on
//!   loopback that holds every chunk 0.5 ms each way;
//! - **pulled first**: the same at 1 ms, the process first pulling the 64
//!   artifacts in one round trip (`Store::pull`, as `relok cache pull`);
//! - **16 processes at once**, each loading the 64 kernels from the
//!   remote: the wall time of the fleet, Redis's commands per second over
//!   it, and their rejects and errors (zero).
//!
//! Each process is the `relok` binary (hidden `bench remote-child`), which
//! times its 64 loads inside and reports its counters; the parent also
//! takes each child's wall time. Medians of several runs.

use super::median;
use crate::examples::EXAMPLES;
use relok_cache::RemoteStats;
use relok_ir::Strategy;
use relok_runtime::{Device, KernelCache, Session};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Kernels each process loads.
pub const KERNELS: usize = 64;
/// Processes of the fleet run.
pub const FLEET: usize = 16;

/// What one child did.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ChildReport {
    /// Time of the 64 loads (`KernelCache::from_env` and `compile` each),
    /// ms.
    pub load_ms: f64,
    /// Kernels compiled.
    pub compiles: u64,
    /// The remote tier's counters (artifacts).
    pub remote: RemoteStats,
    /// The remote tier's counters behind the device's binary archive.
    pub archive: RemoteStats,
}

/// One way of getting the 64 kernels into a new process: medians.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// What was measured.
    pub what: String,
    /// The 64 loads inside the process, ms.
    pub load_ms: f64,
    /// The whole process, ms.
    pub wall_ms: f64,
    /// Mean remote lookup, µs (0 without a remote).
    pub lookup_us: f64,
    /// Machine code (cubins, pipeline-cache blobs) the device's archive
    /// took from the remote, in the last run.
    pub machine_code_hits: u64,
}

/// `relok bench remote`'s report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RemoteReport {
    /// The device the children load on.
    pub device: String,
    /// Kernels per process.
    pub kernels: usize,
    /// Runs per row.
    pub runs: usize,
    /// Cold compile, loopback remote, remote at a 1 ms round trip.
    pub rows: Vec<Row>,
    /// Cold compile over loopback remote (loads inside the process).
    pub compile_over_loopback: f64,
    /// Cold compile over the remote at 1 ms.
    pub compile_over_delayed: f64,
    /// Cold compile over the remote at 1 ms, pulled first.
    pub compile_over_pulled: f64,
    /// Processes loading at once.
    pub fleet_processes: usize,
    /// Their wall time (first start to last exit), median ms.
    pub fleet_wall_ms: f64,
    /// Each process's loads, median ms.
    pub fleet_load_ms: f64,
    /// Redis commands per second over the fleet's wall time (median).
    pub fleet_ops_per_s: f64,
    /// Rejected values over every fleet process (must be 0).
    pub fleet_rejected: u64,
    /// Remote errors over every fleet process (must be 0).
    pub fleet_errors: u64,
    /// Kernels compiled by the fleet (must be 0).
    pub fleet_compiles: u64,
}

/// The 64 kernels: the examples round-robin, copy `i` renamed
/// `<kernel>_r<i>`, so each has a key of its own.
fn kernels() -> Result<Vec<(relok_ir::VerifiedModule, String)>, String> {
    (0..KERNELS)
        .map(|i| {
            let ex = &EXAMPLES[i % EXAMPLES.len()];
            let name = format!("{}_r{i}", ex.kernel);
            let text = ex.source.replace(&format!("kernel @{}(", ex.kernel), &format!("kernel @{name}("));
            let m = relok_ir::parse(&text).map_err(|e| format!("{}: {e}", ex.file))?;
            let m = relok_ir::VerifiedModule::new(m).map_err(|e| format!("{}: {e}", ex.file))?;
            Ok((m, name))
        })
        .collect()
}

/// The child (`relok bench remote-child`): loads the 64 kernels on
/// `device` (`cpu`, `cuda`, `wgpu`: opened first, not timed) with the
/// cache the environment names; on a GPU the device's binary archive
/// (and its remote) gives or takes the machine code.
///
/// With `pull`, the 64 artifacts are first pulled into the local store in
/// one round trip (`Store::pull`, as `relok cache pull` does), inside the
/// timed part.
pub fn child(device: &str, pull: bool) -> Result<ChildReport, String> {
    let modules = kernels()?;
    let device = Device::open(device).map_err(|e| e.to_string())?;
    let session = Session::new();
    let target = device.target();
    let t = Instant::now();
    let cache = KernelCache::from_env();
    if let (true, Some(store)) = (pull, cache.store()) {
        let keys = modules
            .iter()
            .map(|(m, k)| {
                let stencil = relok_compiler::stencil::Stencil::new(m, k).map_err(|e| format!("@{k}: {e}"))?;
                Ok(relok_cache::Key(stencil.key(
                    target,
                    Strategy::Table,
                    relok_compiler::artifact::CompileOptions::default(),
                )))
            })
            .collect::<Result<Vec<_>, String>>()?;
        store.pull(&keys);
    }
    for (m, k) in &modules {
        device.load(&session, &cache, m, k, Strategy::Table, None).map_err(|e| format!("@{k}: {e}"))?;
    }
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    if let Some(s) = cache.store() {
        s.flush_remote();
    }
    if let Some(s) = device.archive() {
        s.flush_remote();
    }
    let st = cache.stats();
    let archive = device.archive().map(relok_cache::Store::remote_stats).unwrap_or_default();
    Ok(ChildReport { load_ms, compiles: st.compiles, remote: st.remote, archive })
}

/// A `redis-server` on a free loopback port in a temporary folder, killed
/// on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &Path) -> Result<Server, String> {
        let port =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server (install it, or pass --url): {e}"))?;
        let s = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("redis-server did not start".into())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP proxy on loopback to `upstream` that holds every chunk `one_way`
/// in each direction (a round trip of twice that); stops on drop.
struct DelayProxy {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl DelayProxy {
    fn start(upstream: SocketAddr, one_way: Duration) -> Result<DelayProxy, String> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let halt = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        if let Ok(server) = TcpStream::connect(upstream) {
                            let _ = (client.set_nodelay(true), server.set_nodelay(true));
                            if let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) {
                                std::thread::spawn(move || pump(client, server, one_way));
                                std::thread::spawn(move || pump(s2, c2, one_way));
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Ok(DelayProxy { addr, stop })
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Copies `from` to `to`, each chunk delivered `delay` after it arrived
/// (chunks in flight overlap, as on a link), until either side closes.
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        for (due, bytes) in rx {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.join();
}

/// Starts a child over a fresh local cache under `dir` with `url` (none:
/// no remote) and the key in `env`.
fn spawn_child(
    relok: &Path,
    device: &str,
    dir: &Path,
    url: Option<&str>,
    key: (&str, &Path),
    pull: bool,
) -> Result<Child, String> {
    let cache = dir.join(format!("cache-{}", next_id()));
    let mut c = Command::new(relok);
    c.args(["bench", "remote-child", "--device", device]);
    if pull {
        c.arg("--pull");
    }
    c.env("RELOK_CACHE_DIR", &cache).env_remove("RELOK_CACHE").env_remove("RELOK_REMOTE_SIGNING_KEY");
    c.env_remove("RELOK_REMOTE_PUBLIC_KEY")
        .env(key.0, key.1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A cold compile on cuda includes the driver's PTX-to-cubin link: its
    // own JIT cache would make the second cold process a hit.
    c.env("CUDA_CACHE_DISABLE", "1");
    match url {
        Some(u) => c.env("RELOK_REMOTE", u),
        None => c.env_remove("RELOK_REMOTE"),
    };
    c.spawn().map_err(|e| format!("cannot start the bench child: {e}"))
}

fn next_id() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Waits for a child and reads its report.
fn finish(child: Child) -> Result<ChildReport, String> {
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("bench child failed ({}):\n{stdout}{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let line =
        stdout.lines().rev().find(|l| l.starts_with('{')).ok_or(format!("bench child printed no report:\n{stdout}"))?;
    serde_json::from_str(line).map_err(|e| format!("bench child report: {e}: {line}"))
}

/// One child, timed.
fn timed_child(
    relok: &Path,
    device: &str,
    dir: &Path,
    url: Option<&str>,
    key: (&str, &Path),
    pull: bool,
) -> Result<(ChildReport, f64), String> {
    let t = Instant::now();
    let r = finish(spawn_child(relok, device, dir, url, key, pull)?)?;
    Ok((r, t.elapsed().as_secs_f64() * 1e3))
}

/// Redis's `total_commands_processed`.
fn commands(remote: &relok_cache::remote::Remote) -> Result<u64, String> {
    let info = remote.query_text(&["INFO", "stats"]).map_err(|e| e.to_string())?;
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| "INFO stats has no total_commands_processed".to_owned())
}

/// Runs `relok bench remote` with the `relok` binary `relok`; `url` names a
/// Redis to use instead of starting one (its data is overwritten under
/// relok's names).
pub fn run(relok: &Path, device: &str, quick: bool, url: Option<String>) -> Result<RemoteReport, String> {
    let runs = if quick { 3 } else { 11 };
    let fleet_runs = if quick { 1 } else { 5 };
    let tmp = tempdir()?;
    let dir = tmp.0.clone();
    let (_server, url) = match url {
        Some(u) => (None, u),
        None => {
            let s = Server::start(&dir)?;
            let u = format!("redis://127.0.0.1:{}/0", s.port);
            (Some(s), u)
        }
    };
    let (key, public) = relok_cache::remote::keys::keygen(&dir.join("keys")).map_err(|e| e.to_string())?;
    let writer = ("RELOK_REMOTE_SIGNING_KEY", key.as_path());
    let reader = ("RELOK_REMOTE_PUBLIC_KEY", public.as_path());
    // Fill the remote: one writer compiles and writes the 64 kernels.
    let (fill, _) = timed_child(relok, device, &dir, Some(&url), writer, false)?;
    if fill.remote.writes != KERNELS as u64 {
        return Err(format!("filling the remote wrote {} of {KERNELS} kernels: {:?}", fill.remote.writes, fill.remote));
    }
    let admin = relok_cache::remote::Remote::open(relok_cache::remote::RemoteConfig::new(
        &url,
        relok_cache::remote::keys::read_public_key(&public).map_err(|e| e.to_string())?,
        None,
    ))
    .map_err(|e| e.to_string())?;
    let port_addr: SocketAddr = {
        let hostport = url
            .trim_start_matches("redis://")
            .split('/')
            .next()
            .unwrap_or_default()
            .rsplit('@')
            .next()
            .unwrap_or_default();
        hostport.parse().map_err(|e| format!("{url}: a bench proxy needs host:port as an IP address: {e}"))?
    };
    let proxy = DelayProxy::start(port_addr, Duration::from_micros(500))?;
    let delayed_url = format!("redis://{}/0", proxy.addr);
    let mut rows = Vec::new();
    let cases = [
        ("cold compile, no remote", None, false),
        ("remote, loopback", Some(url.as_str()), false),
        ("remote, 1 ms round trip", Some(delayed_url.as_str()), false),
        ("pulled first, 1 ms", Some(delayed_url.as_str()), true),
    ];
    for (what, u, pull) in cases {
        let (mut loads, mut walls, mut lookups, mut code) = (Vec::new(), Vec::new(), Vec::new(), 0);
        for _ in 0..runs {
            let (r, wall) = timed_child(relok, device, &dir, u, reader, pull)?;
            let expect_compiles = if u.is_none() { KERNELS as u64 } else { 0 };
            if r.compiles != expect_compiles || r.remote.rejected != 0 || r.remote.errors != 0 {
                return Err(format!("{what}: {} compiles, remote {:?}", r.compiles, r.remote));
            }
            loads.push(r.load_ms);
            walls.push(wall);
            lookups.push(r.remote.get_us as f64 / r.remote.lookups().max(1) as f64);
            code = r.archive.hits;
        }
        rows.push(Row {
            what: what.into(),
            load_ms: median(loads),
            wall_ms: median(walls),
            lookup_us: median(lookups),
            machine_code_hits: code,
        });
    }
    drop(proxy);
    let (mut fleet_walls, mut fleet_loads, mut ops) = (Vec::new(), Vec::new(), Vec::new());
    let (mut rejected, mut errors, mut compiles) = (0, 0, 0);
    for _ in 0..fleet_runs {
        let before = commands(&admin)?;
        let t = Instant::now();
        let children = (0..FLEET)
            .map(|_| spawn_child(relok, device, &dir, Some(&url), reader, false))
            .collect::<Result<Vec<_>, _>>()?;
        let reports = children.into_iter().map(finish).collect::<Result<Vec<_>, _>>()?;
        let wall = t.elapsed().as_secs_f64();
        let after = commands(&admin)?;
        fleet_walls.push(wall * 1e3);
        // The two INFO calls are commands too.
        ops.push((after.saturating_sub(before + 1)) as f64 / wall);
        for r in &reports {
            fleet_loads.push(r.load_ms);
            rejected += r.remote.rejected;
            errors += r.remote.errors;
            compiles += r.compiles;
        }
    }
    let ratio = |i: usize| rows[0].load_ms / rows[i].load_ms;
    Ok(RemoteReport {
        device: device.to_owned(),
        kernels: KERNELS,
        runs,
        compile_over_loopback: ratio(1),
        compile_over_delayed: ratio(2),
        compile_over_pulled: ratio(3),
        rows,
        fleet_processes: FLEET,
        fleet_wall_ms: median(fleet_walls),
        fleet_load_ms: median(fleet_loads),
        fleet_ops_per_s: median(ops),
        fleet_rejected: rejected,
        fleet_errors: errors,
        fleet_compiles: compiles,
    })
}

/// A private temporary folder, removed on drop.
struct TempDir(PathBuf);

fn tempdir() -> Result<TempDir, String> {
    let p = std::env::temp_dir().join(format!("relok-bench-remote-{}-{}", std::process::id(), next_id()));
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(TempDir(p))
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Prints the report as text.
pub fn print(r: &RemoteReport) {
    println!(
        "relok bench remote on {}: {} kernels per new process, medians of {} runs (local cache empty each time)",
        r.device, r.kernels, r.runs
    );
    for row in &r.rows {
        println!(
            "  {:<26} loads {:>8.1} ms   process {:>8.1} ms   lookup {:>7.0} µs   machine code from the remote: {}",
            row.what, row.load_ms, row.wall_ms, row.lookup_us, row.machine_code_hits
        );
    }
    println!(
        "  compile / remote: {:.1}x on loopback, {:.1}x at a 1 ms round trip, {:.1}x pulled first",
        r.compile_over_loopback, r.compile_over_delayed, r.compile_over_pulled
    );
    println!(
        "  {} processes at once: {:.0} ms wall, {:.1} ms of loads each, {:.0} Redis commands/s; rejected {}, errors {}, compiles {}",
        r.fleet_processes,
        r.fleet_wall_ms,
        r.fleet_load_ms,
        r.fleet_ops_per_s,
        r.fleet_rejected,
        r.fleet_errors,
        r.fleet_compiles
    );
}
