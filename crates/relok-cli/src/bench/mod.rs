//! `relok bench`: what relok's pieces cost, measured by the command-line
//! tool (see docs/benchmarks.md for results). One submodule per bench, each
//! opening with what it measures:
//!
//! - `frontend` (`relok bench`): parse + verify per example and the cpu
//!   interpreter's throughput;
//! - `cache` (`relok bench cache`): the kernel cache's tiers against
//!   compiling, in this process and in a new one, and the store at scale;
//! - `launch` (`relok bench launch`): the host time of a launch when
//!   nothing waits between launches, against a bare launch loop;
//! - `cuda` (`relok bench cuda`): first launch in a new process, per-launch
//!   host overhead and the run-time cost of a relocation, on a GPU;
//! - `wgpu` (`relok bench wgpu`): first launch in a new process and the
//!   host time of a launch, with a wgpu adapter;
//! - `start` (`relok bench start`): the first launch of a program written
//!   against the `relok` facade, on every device, cold, warm and shipped,
//!   and the whole process, beside CuPy and Triton;
//! - `remote` (`relok bench remote`): a new process loading 64 kernels
//!   from a warm Redis (loopback, 1 ms round trip) against compiling
//!   them, and 16 such processes at once;
//! - `kernels` (`relok bench kernels`): how fast the example kernels and
//!   their Rust twins run through the facade on every GPU found, against
//!   the same algorithm in CUDA C, the vendor libraries and the copy
//!   ceiling, each result checked before it is timed.
//!
//! This file holds the clap subcommands ([`BenchCommand`]), the one entry
//! point ([`run`]: runs a bench and prints its report as text or JSON) and
//! what the benches share: `median`, `utc_date`, `nvidia_driver`, `repo`,
//! and for the children that time a
//! first launch in a new process, `Laps`, `ChildExample`, `temp_path`
//! and `run_child`.

pub mod cache;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod frontend;
pub mod kernels;
pub mod launch;
pub mod remote;
pub mod start;
#[cfg(feature = "wgpu")]
pub mod wgpu;

use relok_runtime::cpu::CpuDevice;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
#[cfg(any(feature = "cuda", feature = "wgpu"))]
use {
    crate::args::parse_args,
    crate::examples::{EXAMPLES, Example},
    crate::launch::Target,
    relok_runtime::LaunchConfig,
    std::fs,
};

/// What `relok bench` measures; without one, [`frontend`].
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Host time per launch with no wait between launches (100 000 launches
    /// of an empty kernel): relok against a bare launch loop on each GPU
    /// found (the cpu device without one), and launches per second on 4
    /// streams.
    Launch,
    /// The first launch of a facade program in a new process (the
    /// `first_launch` example as a child): cold, warm and shipped, on each
    /// device, the whole process against a bare driver start, and CuPy and
    /// Triton in the same run (with --peers).
    Start {
        /// Devices, comma-separated (default: cuda and wgpu where present,
        /// else cpu).
        #[arg(long, value_delimiter = ',')]
        devices: Vec<String>,
        /// A bundle with the kernel and cubins for this GPU (`relok
        /// precompile examples/bench/scale.rk --target ptx-sm90 --strategy
        /// table --cubin sm_90 -o FILE`): adds the shipped mode on cuda.
        #[arg(long)]
        bundle: Option<PathBuf>,
        /// Also run CuPy and Triton (scripts/bench_peers.py).
        #[arg(long)]
        peers: bool,
        /// The application rows: this many distinct kernels loaded before
        /// the first result (0: none).
        #[arg(long, default_value_t = 64)]
        app_kernels: usize,
        /// Threads for the application's parallel cold row.
        #[arg(long, default_value_t = 8)]
        app_threads: usize,
        /// A bundle of the application's kernels with cubins (`first_launch
        /// --kernels 64 --write-kernels DIR`, then `relok precompile
        /// DIR/*.rk --target ptx-sm90 --strategy table --cubin sm_90`): adds
        /// its shipped row on cuda.
        #[arg(long)]
        app_bundle: Option<PathBuf>,
    },
    /// How fast the example kernels run: each `.rk` and its Rust twin
    /// through the facade (its defaults, checked, unchecked) on every GPU
    /// found, against the same algorithm in CUDA C (NVRTC through CuPy),
    /// cuBLAS, CuPy, torch and the copy ceiling (scripts/bench_kernels.py,
    /// when python3 imports CuPy); each result checked before it is timed.
    Kernels {
        /// Devices, comma-separated (default: every GPU found: cuda, and
        /// wgpu on a hardware adapter; cpu only when named).
        #[arg(long, value_delimiter = ',')]
        devices: Vec<String>,
        /// Kernels, comma-separated (default: saxpy, gelu, reduce, softmax,
        /// scan, histogram, matmul).
        #[arg(long, value_delimiter = ',')]
        kernels: Vec<String>,
        /// The facade's options to run them under, comma-separated, each a
        /// context of its own: `default` (the builder's), `checked`,
        /// `unchecked` (checked mode on, off; default: all three).
        #[arg(long, value_delimiter = ',')]
        facade: Vec<String>,
        /// Elements of the 1-D kernels, a multiple of 256; softmax takes
        /// them as rows of 256 (default 2^28, --quick 2^16; on wgpu at most
        /// 65 535 × 256).
        #[arg(long)]
        size: Option<usize>,
        /// The side of matmul's square matrices (default 4096, --quick 256).
        #[arg(long)]
        matmul: Option<usize>,
        /// Timed batches per measurement (default 25, --quick 3).
        #[arg(long)]
        batches: Option<usize>,
    },
    /// Cold compile against a warm load from the artifact store, in this
    /// process and in a new one, per example; store open and lookups with
    /// many entries.
    Cache,
    /// A new process loading 64 kernels from a warm remote cache (Redis on
    /// loopback, and at a 1 ms round trip) against compiling them, and 16
    /// such processes at once.
    Remote {
        /// The device the processes load on: `cpu`, `cuda`, `wgpu` (on a
        /// GPU the machine code also comes from the remote).
        #[arg(long, short, default_value = "cpu")]
        device: String,
        /// A Redis to use (`redis://host:port/db`; entries under relok's
        /// names are overwritten); default: start `redis-server` on a free
        /// loopback port.
        #[arg(long)]
        url: Option<String>,
    },
    /// The child process of `bench remote`: loads its 64 kernels with the
    /// cache the environment names and prints one JSON record.
    #[command(hide = true)]
    RemoteChild {
        /// The device.
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Pull the 64 artifacts first, in one round trip.
        #[arg(long)]
        pull: bool,
    },
    /// The child process of `bench cache`: loads every example from the
    /// store under ROOT and prints one JSON record.
    #[command(hide = true)]
    CacheChild {
        /// The store's root, filled by the parent.
        #[arg(long)]
        store: PathBuf,
    },
    /// On a GPU: first launch in a new process (cold, warm artifact store,
    /// warm store + cubin archive), per-launch host overhead against a bare
    /// launch, and the run-time cost of table and patch against bake.
    #[cfg(feature = "cuda")]
    Cuda,
    /// The child process of `bench cuda`: one example's first launch.
    #[cfg(feature = "cuda")]
    #[command(hide = true)]
    CudaChild {
        /// The example.
        #[arg(long)]
        example: String,
        /// The cache root (artifact store and binary archive).
        #[arg(long)]
        store: PathBuf,
        /// Use the binary archive.
        #[arg(long)]
        archive: bool,
    },
    /// With a wgpu adapter: first launch in a new process (cold, warm
    /// artifact store, warm store + pipeline-cache archive) and the host
    /// time of a launch.
    #[cfg(feature = "wgpu")]
    Wgpu,
    /// The child process of `bench wgpu`: one example's first launch.
    #[cfg(feature = "wgpu")]
    #[command(hide = true)]
    WgpuChild {
        /// The example.
        #[arg(long)]
        example: String,
        /// The cache root (artifact store and pipeline-cache archive).
        #[arg(long)]
        store: PathBuf,
        /// Use the pipeline-cache archive.
        #[arg(long)]
        archive: bool,
    },
}

/// Runs `relok bench [WHAT]` and prints its report: text, or with `json`
/// JSON (one record; one per measurement for [`frontend`]). `quick`: fewer
/// runs and smaller problems. `started` is when the process started: the
/// first-launch children time from it.
#[cfg_attr(
    not(any(feature = "cuda", feature = "wgpu")),
    expect(unused_variables, reason = "only the GPU benches' children time from the process start")
)]
pub fn run(what: Option<BenchCommand>, quick: bool, json: bool, started: Instant) -> Result<(), String> {
    // The cpu benches run on the cpu device, made only for them.
    let cpu = || (CpuDevice::new(0), "cpu:0");
    match what {
        None => {
            let (dev, dev_name) = cpu();
            let results = frontend::run(&dev, quick)?;
            if json {
                results.iter().try_for_each(print_json)
            } else {
                frontend::print(dev_name, &results);
                Ok(())
            }
        }
        Some(BenchCommand::Cache) => {
            let (dev, dev_name) = cpu();
            let exe = relok_binary()?;
            let spawn = |root: &Path| {
                let mut c = std::process::Command::new(&exe);
                c.args(["bench", "cache-child", "--store"]).arg(root);
                c
            };
            report(&cache::run(&dev, quick, &spawn)?, json, |r| cache::print(dev_name, r))
        }
        Some(BenchCommand::Kernels { devices, kernels, facade, size, matmul, batches }) => {
            let r = kernels::run(&kernels::Options::new(devices, kernels, facade, size, matmul, batches, quick)?)?;
            kernels::print(&r, json)?;
            match r.failures().count() {
                0 => Ok(()),
                n => Err(format!("{n} measurements failed (see their errors above)")),
            }
        }
        Some(BenchCommand::CacheChild { store }) => print_json(&cache::child(&cpu().0, &store)?),
        Some(BenchCommand::Launch) => report(&launch::run(quick)?, json, launch::print),
        Some(BenchCommand::Start { mut devices, bundle, peers, app_kernels, app_threads, app_bundle }) => {
            if devices.is_empty() {
                devices = default_devices();
            }
            let app = start::App { kernels: app_kernels, threads: app_threads.max(1), bundle: app_bundle };
            start::print(&start::run(&devices, bundle.as_deref(), &app, quick, peers)?, json)
        }
        Some(BenchCommand::Remote { device, url }) => {
            report(&remote::run(&relok_binary()?, &device, quick, url)?, json, remote::print)
        }
        Some(BenchCommand::RemoteChild { device, pull }) => print_json(&remote::child(&device, pull)?),
        #[cfg(feature = "cuda")]
        Some(BenchCommand::Cuda) => report(&cuda::run(&relok_binary()?, quick)?, json, cuda::print),
        #[cfg(feature = "cuda")]
        Some(BenchCommand::CudaChild { example, store, archive }) => {
            print_json(&cuda::child(started, &example, &store, archive)?)
        }
        #[cfg(feature = "wgpu")]
        Some(BenchCommand::Wgpu) => report(&wgpu::run(&relok_binary()?, quick)?, json, wgpu::print),
        #[cfg(feature = "wgpu")]
        Some(BenchCommand::WgpuChild { example, store, archive }) => {
            print_json(&wgpu::child(started, &example, &store, archive)?)
        }
    }
}

/// cuda and wgpu where present, else cpu.
fn default_devices() -> Vec<String> {
    let mut found = gpu_devices();
    if found.is_empty() {
        found.push("cpu".to_owned());
    }
    found
}

/// The GPUs found: `cuda` with a CUDA GPU, `wgpu` with a hardware adapter
/// (not a software rasteriser such as lavapipe).
fn gpu_devices() -> Vec<String> {
    #[cfg_attr(
        not(any(feature = "cuda", feature = "wgpu")),
        expect(unused_mut, reason = "only the GPU features find devices")
    )]
    let mut found = Vec::new();
    #[cfg(feature = "cuda")]
    if relok_runtime::cuda::device_count() > 0 {
        found.push("cuda".to_owned());
    }
    #[cfg(feature = "wgpu")]
    if relok_runtime::wgpu::list_adapters().iter().any(|a| a.hardware) {
        found.push("wgpu".to_owned());
    }
    found
}

/// The `relok` binary, which the benches start their children from.
fn relok_binary() -> Result<PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("cannot find the relok binary: {e}"))
}

/// Prints `r` as one JSON record, or with `text` as text.
fn report<R: serde::Serialize>(r: &R, json: bool, text: impl FnOnce(&R)) -> Result<(), String> {
    if json {
        return print_json(r);
    }
    text(r);
    Ok(())
}

/// Prints `r` as one JSON record on one line.
fn print_json(r: &impl serde::Serialize) -> Result<(), String> {
    println!("{}", serde_json::to_string(r).map_err(|e| e.to_string())?);
    Ok(())
}

/// `t` as an ISO 8601 UTC time to the second.
pub(crate) fn utc_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
    // `civil_from_days`, for days ≥ 0).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rest / 3_600, rest / 60 % 60, rest % 60)
}

/// The first GPU's name and driver version from `nvidia-smi`, if it runs.
pub(crate) fn nvidia_driver() -> Option<String> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=name,driver_version", "--format=csv,noheader"])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    out.status.success().then(|| text.lines().next().map(|l| l.trim().to_owned())).flatten().filter(|l| !l.is_empty())
}

/// The repository the benches' scripts and sources are read from:
/// `RELOK_REPO`, else the working folder.
pub(crate) fn repo() -> PathBuf {
    std::env::var_os("RELOK_REPO").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

/// The median (NaN of none); every benchmark reports medians.
pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 }
}

// ---------------------------------------------------------------------------
// What the children that time a first launch in a new process share
// (`bench cuda`, `bench wgpu`).
// ---------------------------------------------------------------------------

/// The steps of a first-launch child, each with its µs, the first from the
/// process start (`started`) to now.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) struct Laps {
    phases: Vec<(String, f64)>,
    t: Instant,
}

#[cfg(any(feature = "cuda", feature = "wgpu"))]
impl Laps {
    pub(crate) fn new(started: Instant) -> Laps {
        Laps {
            phases: vec![("process start to the bench".to_owned(), started.elapsed().as_secs_f64() * 1e6)],
            t: Instant::now(),
        }
    }

    /// Ends step `name` (begun at the previous lap).
    pub(crate) fn lap(&mut self, name: &str) {
        self.phases.push((name.to_owned(), self.t.elapsed().as_secs_f64() * 1e6));
        self.t = Instant::now();
    }

    pub(crate) fn into_phases(self) -> Vec<(String, f64)> {
        self.phases
    }
}

/// The example a first-launch child runs: its module and parsed inputs.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) struct ChildExample {
    pub(crate) ex: &'static Example,
    pub(crate) module: relok_ir::VerifiedModule,
    inputs: Vec<crate::args::ArgValue>,
}

#[cfg(any(feature = "cuda", feature = "wgpu"))]
impl ChildExample {
    /// Example `name`, parsed.
    pub(crate) fn parse(name: &str) -> Result<ChildExample, String> {
        let ex = EXAMPLES.iter().find(|e| e.name == name).ok_or(format!("no example {name}"))?;
        let module = relok_ir::parse(ex.source).map_err(|e| e.to_string())?;
        let module = relok_ir::VerifiedModule::new(module).map_err(|e| e.to_string())?;
        let f = &module.funcs[module.func_by_name(ex.kernel).ok_or("no kernel")?];
        let inputs = parse_args(f, ex.args)?;
        Ok(ChildExample { ex, module, inputs })
    }

    /// Uploads the inputs, launches `prepared` once with the example's
    /// geometry and reads the outputs back; an exception is an error unless
    /// the example throws one.
    pub(crate) fn launch(&self, target: &Target<'_>, prepared: &crate::launch::Prepared) -> Result<(), String> {
        let config = LaunchConfig { grid: self.ex.grid, block: self.ex.block, ..LaunchConfig::default() };
        let mut buffers = Vec::new();
        match crate::launch::run_prepared(target, prepared, &config, &self.inputs, &mut buffers) {
            Err(e) if self.ex.exception.is_none() => Err(e.to_string()),
            _ => Ok(()),
        }
    }
}

/// A path under the temporary folder for `bench`'s `name`, emptied.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn temp_path(bench: &str, name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("relok-bench-{bench}-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&p);
    p
}

/// Runs `relok bench SUB --example E --store S [--archive]` with `env` and
/// reads its one JSON record.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn run_child<T: serde::de::DeserializeOwned>(
    relok: &Path,
    sub: &str,
    example: &str,
    store: &Path,
    archive: bool,
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<T, String> {
    let mut c = std::process::Command::new(relok);
    c.args(["bench", sub, "--example", example, "--store"]).arg(store);
    if archive {
        c.arg("--archive");
    }
    c.envs(env.iter().copied());
    let out = c.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("child failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("child output: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_iso_8601() {
        let at = |s: u64| utc_date(UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_796_141_422), "2026-12-01T16:10:22Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(vec![]).is_nan());
    }
}
