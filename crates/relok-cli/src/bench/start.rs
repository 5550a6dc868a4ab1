//! `relok bench start`: the first launch of a kernel in a new process, as a
//! user's program meets it, on every device found, beside CuPy and Triton
//! in the same run (docs/benchmarks.md holds results).
//!
//! Every figure is a child process of the facade's `first_launch` example
//! (`crates/relok/examples/first_launch.rs`): a program that opens a
//! context, parses a kernel, loads it, uploads 4 KiB, launches, waits and
//! reads 4 KiB back, and prints what it timed: the context (the driver's
//! start-up: `cuInit` and the primary context on cuda, the instance,
//! adapter and device on wgpu) and the **first launch**: everything from
//! `main` but the context. Per device, medians of `runs` children:
//!
//! - `cold`: empty caches (relok's store and archives, and the CUDA
//!   driver's own JIT cache switched off with `CUDA_CACHE_DISABLE=1`);
//! - `warm`: the store and the machine-code archive filled by an earlier
//!   process (driver JIT cache still off: nothing is hidden there);
//! - `warm, eager module loading` (cuda): `CUDA_MODULE_LOADING=EAGER`;
//! - `shipped` (cuda, with `--bundle`): empty caches, the kernels and
//!   their cubins from a bundle made by
//!   `relok precompile … --target ptx-sm90 --cubin sm_90`;
//! - the application (`--app-kernels N`, default 64): N distinct kernels
//!   loaded before the first result, cold with one thread, with
//!   `--app-threads` threads of the child's own and with one
//!   `Context::kernels` call (`--batch`: relok's threads, one per core),
//!   warm (one by one, and with `Context::kernels`), and (cuda,
//!   `--app-bundle`) shipped;
//! - `whole process`: exec to exit of a warm child, timed by this process,
//!   beside `bare_context` (`crates/relok-runtime/examples`), a program
//!   that only initialises the driver and creates the context; and split
//!   at the child's result (the wall clock it reports when its result is
//!   on the host; `bare_context`'s is its context): exec to result minus
//!   the context the child measured (what the program does besides the
//!   driver's start-up), and result to exit (the teardown, mostly the
//!   driver's, whose spread between processes is larger than relok).
//!   The child's context includes relok's opening of the device, which
//!   the `relok_open` example times apart, in one process after the
//!   driver's context (printed below the table): what relok adds to the
//!   whole process is its exec-to-result figure minus `bare_context`'s,
//!   plus that opening.
//!
//! The peers: `scripts/bench_peers.py` (CuPy `RawKernel`, Triton `@jit`,
//! cold and warm caches, the same kernel, timed from after their context
//! to the end of the first launch, inputs uploaded before the clock
//! starts), when `python3` can import them; otherwise skipped, saying so.

use super::{median, nvidia_driver, print_json, repo, utc_date};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What one `first_launch` child printed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Child {
    /// The device's name.
    pub device: String,
    /// Context creation, µs.
    pub context_us: f64,
    /// The first launch from `main`, context excluded, µs.
    pub first_us: f64,
    /// Elements that differed from the expected result (0).
    pub wrong: u64,
    /// relok compiles.
    pub compiles: u64,
    /// Artifact-store hits.
    pub store_hits: u64,
    /// Bundle hits.
    pub bundle_hits: u64,
    /// How the machine code was obtained.
    pub machine_code: MachineCode,
    /// Each step, µs.
    pub phases: Vec<(String, f64)>,
}

/// `relok::CodeStats` as the child prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MachineCode {
    /// From the binary archive.
    pub archived: u64,
    /// Of those, from a load record (artifact and cubin in one entry).
    #[serde(default)]
    pub records: u64,
    /// From a bundle.
    pub bundled: u64,
    /// Linked by relok.
    pub linked: u64,
    /// Left to the driver's JIT.
    pub jit: u64,
}

/// One mode on one device.
#[derive(Debug, Serialize)]
pub struct Row {
    /// `cuda`, `wgpu`, `cpu`.
    pub device: String,
    /// The mode (see the module docs).
    pub mode: String,
    /// Median first launch, µs.
    pub first_us: f64,
    /// Median context creation, µs.
    pub context_us: f64,
    /// Median of each step, µs.
    pub phases: Vec<(String, f64)>,
    /// The last child's record (what served the kernel).
    pub last: Child,
}

/// Exec to exit, timed by the parent.
#[derive(Debug, Serialize)]
pub struct Whole {
    /// What ran.
    pub program: String,
    /// Median, µs.
    pub median_us: f64,
    /// Median of exec to exit minus the context creation the child
    /// reported, µs: what the program adds to the driver's start-up, far
    /// less noisy than the whole (the context varies by ±10 ms).
    pub minus_context_us: f64,
    /// Median of exec to the child's result minus its context, µs: what
    /// the program does besides the driver's start-up before its result
    /// (the teardown left out).
    pub to_result_minus_context_us: f64,
    /// Median of the child's result to its exit, µs: the teardown.
    pub result_to_exit_us: f64,
}

/// A peer's figure.
#[derive(Debug, Serialize, Deserialize)]
pub struct Peer {
    /// The tool.
    pub tool: String,
    /// `cold` or `warm`.
    pub cache: String,
    /// Median first launch, ms.
    pub first_ms: f64,
    /// Median context creation, ms.
    pub context_ms: f64,
}

/// Everything `relok bench start` measured.
#[derive(Debug, Serialize)]
pub struct StartBench {
    /// When the run started, UTC (`2026-12-01T16:25:00Z`).
    pub date_utc: String,
    /// The NVIDIA driver, as `nvidia-smi` names the GPU and its driver
    /// (`NVIDIA H200, 580.159.04`), when the run has cuda and it answers.
    pub driver: Option<String>,
    /// Children per row.
    pub runs: usize,
    /// First launches.
    pub rows: Vec<Row>,
    /// Whole processes.
    pub whole: Vec<Whole>,
    /// relok's opening of the cuda device beyond the driver's context
    /// (the `relok_open` example, median µs), inside every cuda child's
    /// context figure; none without cuda among the devices, or when the
    /// example is missing or fails (see `relok_open_skipped`).
    pub relok_open_us: Option<f64>,
    /// Why that figure is missing on a run with cuda, when it is.
    pub relok_open_skipped: Option<String>,
    /// CuPy and Triton, when found.
    pub peers: Vec<Peer>,
    /// Why the peers are missing, when they are.
    pub peers_skipped: Option<String>,
}

/// The `first_launch` example (and `bare_context`, `relok_open`) beside
/// the relok binary or in cargo's `examples/` folder under it.
fn find_child(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join(name), dir.join(format!("example-{name}")), dir.join("examples").join(name)]
        .into_iter()
        .find(|p| p.is_file())
}

/// Runs one child with `env` and `args`; its record.
fn run_child(
    exe: &Path,
    env: &[(&str, &str)],
    cache: &Path,
    bundle: Option<&Path>,
    args: &[String],
) -> Result<Child, String> {
    let mut c = Command::new(exe);
    c.env("RELOK_CACHE_DIR", cache).env("CUDA_CACHE_DISABLE", "1").envs(env.iter().copied()).args(args);
    if let Some(b) = bundle {
        c.arg("--bundle").arg(b);
    }
    let out = c.output().map_err(|e| format!("{}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}{}",
            exe.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let child: Child = serde_json::from_slice(&out.stdout).map_err(|e| format!("child output: {e}"))?;
    if child.wrong != 0 {
        return Err(format!("{}: {} wrong results", child.device, child.wrong));
    }
    Ok(child)
}

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("relok-bench-start-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// How a row's children run.
struct Mode<'a> {
    env: &'a [(&'a str, &'a str)],
    /// The warm cache folder; `None`: a fresh one per child (cold).
    cache: Option<&'a Path>,
    bundle: Option<&'a Path>,
    args: &'a [String],
}

/// Medians of `runs` children.
fn row(exe: &Path, device: &str, mode: &str, runs: usize, m: &Mode<'_>) -> Result<Row, String> {
    let mut children = Vec::new();
    for i in 0..runs {
        let fresh = temp(&format!("{device}-cold-{i}"));
        let child = run_child(exe, m.env, m.cache.unwrap_or(&fresh), m.bundle, m.args);
        let _ = std::fs::remove_dir_all(&fresh);
        children.push(child?);
    }
    let last = children.last().cloned().ok_or("no runs")?;
    let phases = last
        .phases
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            (name.clone(), median(children.iter().filter_map(|c| c.phases.get(i).map(|p| p.1)).collect()))
        })
        .collect();
    Ok(Row {
        device: device.into(),
        mode: mode.into(),
        first_us: median(children.iter().map(|c| c.first_us).collect()),
        context_us: median(children.iter().map(|c| c.context_us).collect()),
        phases,
        last,
    })
}

/// A shipped row must have been served by its bundle alone: no compile,
/// no machine code compiled (a bundle for another GPU or another relok
/// would otherwise print a figure for something else).
fn shipped(row: Row) -> Result<Row, String> {
    let (l, c) = (&row.last, &row.last.machine_code);
    if l.compiles != 0 || c.linked + c.jit != 0 || c.bundled == 0 {
        return Err(format!("the '{}' row was not served by its bundle alone: {l:?}", row.mode));
    }
    Ok(row)
}

/// Exec to exit of `exe` (which prints `{"context_us": …,
/// "result_at_unix_ns": …}`) with `env`, `runs` times: the medians of the
/// whole, of the whole minus the context, and of the two parts split at
/// the child's result, µs.
fn whole(program: String, exe: &Path, env: &[(&str, &str)], cache: &Path, runs: usize) -> Result<Whole, String> {
    #[derive(Deserialize)]
    struct Context {
        context_us: f64,
        result_at_unix_ns: u128,
    }
    let (mut times, mut minus, mut to_result, mut to_exit) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        // The wall clock beside the monotonic one: the child's result is
        // stamped with the wall clock, the only one two processes share.
        let spawned_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let t = Instant::now();
        let out = Command::new(exe)
            .env("RELOK_CACHE_DIR", cache)
            .env("CUDA_CACHE_DISABLE", "1")
            .envs(env.iter().copied())
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        let us = t.elapsed().as_secs_f64() * 1e6;
        if !out.status.success() {
            return Err(format!("{} failed: {}", exe.display(), String::from_utf8_lossy(&out.stderr)));
        }
        let ctx: Context = serde_json::from_slice(&out.stdout).map_err(|e| format!("{} output: {e}", exe.display()))?;
        let result_us = ctx.result_at_unix_ns.saturating_sub(spawned_ns) as f64 / 1e3;
        times.push(us);
        minus.push(us - ctx.context_us);
        to_result.push(result_us - ctx.context_us);
        to_exit.push(us - result_us);
    }
    Ok(Whole {
        program,
        median_us: median(times),
        minus_context_us: median(minus),
        to_result_minus_context_us: median(to_result),
        result_to_exit_us: median(to_exit),
    })
}

/// The median of `runs` processes of `relok_open`: relok's opening of the
/// cuda device after the driver's context, in µs.
fn relok_open(exe: &Path, runs: usize) -> Result<f64, String> {
    #[derive(Deserialize)]
    struct Opened {
        relok_open_us: f64,
    }
    let mut times = Vec::new();
    for _ in 0..runs {
        let out = Command::new(exe).output().map_err(|e| format!("{}: {e}", exe.display()))?;
        if !out.status.success() {
            return Err(format!("{} failed: {}", exe.display(), String::from_utf8_lossy(&out.stderr).trim()));
        }
        let opened: Opened =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("{} output: {e}", exe.display()))?;
        times.push(opened.relok_open_us);
    }
    Ok(median(times))
}

/// The peers' figures from `scripts/bench_peers.py --json`, or why not.
fn peers(runs: usize, kernels: usize) -> Result<Vec<Peer>, String> {
    let script = repo().join("scripts/bench_peers.py");
    if !script.is_file() {
        return Err(format!("{} not found (run from the repository or set RELOK_REPO)", script.display()));
    }
    let out = Command::new("python3")
        .arg(&script)
        .arg("--json")
        .env("RUNS", runs.to_string())
        .env("APP_KERNELS", kernels.to_string())
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("bench_peers.py failed: {}", err.lines().last().unwrap_or("")));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().ok_or("bench_peers.py printed nothing")?;
    serde_json::from_str(last).map_err(|e| format!("bench_peers.py output: {e}"))
}

/// The application's part: `kernels` distinct kernels loaded before the
/// first result (see the `first_launch` example's `--kernels`).
#[derive(Debug, Clone)]
pub struct App {
    /// How many kernels (0: no application rows).
    pub kernels: usize,
    /// Threads for the parallel cold row.
    pub threads: usize,
    /// A bundle of the application's kernels (with cubins) for the
    /// shipped row on cuda.
    pub bundle: Option<PathBuf>,
}

/// Runs the whole benchmark on `devices` (`cuda`, `wgpu`, `cpu`); `bundle`
/// enables the shipped mode on cuda; `app` adds the application rows.
pub fn run(
    devices: &[String],
    bundle: Option<&Path>,
    app: &App,
    quick: bool,
    with_peers: bool,
) -> Result<StartBench, String> {
    let exe = find_child("first_launch")
        .ok_or("the first_launch example was not found beside relok (cargo build --release -p relok --examples)")?;
    let runs = if quick { 3 } else { 11 };
    let date_utc = utc_date(SystemTime::now());
    let driver = devices.iter().any(|d| d == "cuda").then(nvidia_driver).flatten();
    let mut rows = Vec::new();
    let mut wholes = Vec::new();
    let (mut relok_open_us, mut relok_open_skipped) = (None, None);
    for device in devices {
        let dev_env = [("RELOK_DEVICE", device.as_str())];
        let warm = temp(&format!("{device}-warm"));
        let none: &[String] = &[];
        let mode = |cache, bundle, args| Mode { env: &dev_env, cache, bundle, args };
        // Fill the store and the archive.
        run_child(&exe, &dev_env, &warm, None, none)?;
        rows.push(row(&exe, device, "cold", runs, &mode(None, None, none))?);
        rows.push(row(&exe, device, "warm", runs, &mode(Some(&warm), None, none))?);
        if device == "cuda" {
            let eager = [dev_env[0], ("CUDA_MODULE_LOADING", "EAGER")];
            rows.push(row(
                &exe,
                device,
                "warm, eager module loading",
                runs,
                &Mode { env: &eager, cache: Some(&warm), bundle: None, args: none },
            )?);
            if let Some(b) = bundle {
                rows.push(shipped(row(
                    &exe,
                    device,
                    "shipped (bundle with cubins, empty caches)",
                    runs,
                    &mode(None, Some(b), none),
                )?)?);
            }
        }
        if app.kernels > 1 {
            let n = app.kernels;
            let serial = ["--kernels".to_owned(), n.to_string()];
            let parallel = ["--kernels".to_owned(), n.to_string(), "--threads".to_owned(), app.threads.to_string()];
            let app_runs = runs.min(5);
            let app_warm = temp(&format!("{device}-app-warm"));
            run_child(&exe, &dev_env, &app_warm, None, &serial)?;
            rows.push(row(
                &exe,
                device,
                &format!("{n} kernels, cold, 1 thread"),
                app_runs,
                &mode(None, None, &serial),
            )?);
            rows.push(row(
                &exe,
                device,
                &format!("{n} kernels, cold, {} threads", app.threads),
                app_runs,
                &mode(None, None, &parallel),
            )?);
            let batch = ["--kernels".to_owned(), n.to_string(), "--batch".to_owned()];
            let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
            rows.push(row(
                &exe,
                device,
                &format!("{n} kernels, cold, Context::kernels ({cores} cores)"),
                app_runs,
                &mode(None, None, &batch),
            )?);
            rows.push(row(
                &exe,
                device,
                &format!("{n} kernels, warm"),
                app_runs,
                &mode(Some(&app_warm), None, &serial),
            )?);
            rows.push(row(
                &exe,
                device,
                &format!("{n} kernels, warm, Context::kernels"),
                app_runs,
                &mode(Some(&app_warm), None, &batch),
            )?);
            if let (Some(b), true) = (&app.bundle, device == "cuda") {
                rows.push(shipped(row(
                    &exe,
                    device,
                    &format!("{n} kernels, shipped (bundle with cubins)"),
                    app_runs,
                    &mode(None, Some(b), &serial),
                )?)?);
            }
            let _ = std::fs::remove_dir_all(&app_warm);
        }
        wholes.push(whole(format!("first_launch on {device}, warm"), &exe, &dev_env, &warm, runs)?);
        if let (true, Some(bare)) = (device == "cuda", find_child("bare_context")) {
            wholes.push(whole("bare_context: cuInit + primary context".into(), &bare, &[], &warm, runs)?);
        }
        if device == "cuda" {
            match find_child("relok_open")
                .ok_or_else(|| "the relok_open example is not beside relok".to_owned())
                .and_then(|open| relok_open(&open, runs))
            {
                Ok(us) => relok_open_us = Some(us),
                Err(why) => relok_open_skipped = Some(why),
            }
        }
        let _ = std::fs::remove_dir_all(&warm);
    }
    let (peers, peers_skipped) = if with_peers {
        match peers(if quick { 3 } else { 7 }, app.kernels) {
            Ok(p) => (p, None),
            Err(why) => (Vec::new(), Some(why)),
        }
    } else {
        (Vec::new(), Some("not asked for (--peers)".into()))
    };
    Ok(StartBench {
        date_utc,
        driver,
        runs,
        rows,
        whole: wholes,
        relok_open_us,
        relok_open_skipped,
        peers,
        peers_skipped,
    })
}

/// Prints the report as text (or JSON).
pub fn print(r: &StartBench, json: bool) -> Result<(), String> {
    if json {
        return print_json(r);
    }
    // Each row against CuPy's warm figure for as many kernels.
    let cupy_warm = |mode: &str| {
        let app = mode.split_once(" kernels").map(|(n, _)| format!(", {n} kernels"));
        r.peers
            .iter()
            .find(|p| {
                p.cache == "warm"
                    && p.tool.starts_with("CuPy")
                    && app.as_deref().map_or(!p.tool.contains(" kernels"), |s| p.tool.ends_with(s))
            })
            .map(|p| p.first_ms * 1e3)
    };
    println!(
        "relok bench start: first launch in a new process, µs from main, context excluded; medians of {} children",
        r.runs
    );
    println!("{}{}", r.date_utc, r.driver.as_ref().map_or(String::new(), |d| format!(", {d}")));
    println!("{:<6} {:<52} {:>10} {:>11} {:>9}  served by", "device", "mode", "first", "context", "vs CuPy");
    for row in &r.rows {
        let l = &row.last;
        let ratio = cupy_warm(&row.mode).map_or("-".to_owned(), |c| format!("{:.2}×", row.first_us / c));
        println!(
            "{:<6} {:<52} {:>10.1} {:>11.0} {:>9}  compiles {} store {} bundle {} | code: archived {} (records {}) bundled {} linked {} jit {}",
            row.device,
            row.mode,
            row.first_us,
            row.context_us,
            ratio,
            l.compiles,
            l.store_hits,
            l.bundle_hits,
            l.machine_code.archived,
            l.machine_code.records,
            l.machine_code.bundled,
            l.machine_code.linked,
            l.machine_code.jit
        );
        let steps: Vec<String> = row.phases.iter().map(|(n, us)| format!("{n} {us:.1}")).collect();
        println!("{:<6} {:<52} steps: {}", "", "", steps.join(", "));
    }
    println!(
        "\nwhole process, µs: exec to exit | minus the context the child reported | exec to result minus the context | result to exit:"
    );
    for w in &r.whole {
        println!(
            "  {:<48} {:>10.0} {:>10.0} {:>10.0} {:>10.0}",
            w.program, w.median_us, w.minus_context_us, w.to_result_minus_context_us, w.result_to_exit_us
        );
    }
    if let Some(us) = r.relok_open_us {
        println!(
            "  relok's opening of the cuda device beyond the driver's context: {us:.0} µs (relok_open; inside the relok child's context above)"
        );
    }
    if let Some(why) = &r.relok_open_skipped {
        println!("  relok's opening of the cuda device SKIPPED: {why}");
    }
    match &r.peers_skipped {
        Some(why) => println!("\npeers SKIPPED: {why}"),
        None => {
            println!("\npeers (timed from after their context to the first launch's end, inputs uploaded before), ms:");
            for p in &r.peers {
                println!("  {:<28} {:<5} first {:>9.3}  context {:>8.1}", p.tool, p.cache, p.first_ms, p.context_ms);
            }
        }
    }
    Ok(())
}
