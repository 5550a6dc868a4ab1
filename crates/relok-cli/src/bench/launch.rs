//! `relok bench launch`: the host time of a launch when nothing waits
//! between launches — `LAUNCHES` launches of an empty kernel enqueued on
//! one stream, the loop timed, then one synchronisation (timed apart) —
//! per device found (cuda, wgpu; the cpu device when there is no GPU):
//!
//! - relok through the facade (`relok::Kernel::launch`: typed arguments
//!   checked, buffers and kernel kept alive for the pending launch);
//! - relok one level down (`relok_runtime::Device::enqueue`);
//! - the floor: on cuda, bare `cuLaunchKernel` on a stream in a loop with
//!   its parameters built once; on wgpu, a hand-written dispatch loop with
//!   the same batching (one bind group, a compute pass per dispatch, a
//!   submit every `LAUNCHES_PER_SUBMIT`);
//! - launches per second on 4 streams through the facade (round-robin,
//!   then every stream synchronised).
//!
//! Medians of `ROUNDS` rounds taken in one process, every peer in the same
//! run; ratios are between lines of one device.

use super::median;
use relok::{Context, Grid, Program};
use relok_ir::Strategy;
use relok_runtime::{Device, KernelCache, LaunchConfig, Session};
use std::time::Instant;

const EMPTY: &str = "kernel @empty() {\n    return\n}\n";

/// One measured line.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    /// The device (`cuda:0 (NVIDIA H200, sm_90)`).
    pub device: String,
    /// What was measured.
    pub what: String,
    /// Median host time per launch, µs (for the 4-stream line: per launch
    /// over all streams).
    pub per_launch_us: f64,
    /// Launches per second (launches over the loop plus the wait).
    pub launches_per_s: f64,
}

/// Every line of the run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// Launches per round.
    pub launches: usize,
    /// Rounds (medians are over these).
    pub rounds: usize,
    /// The lines.
    pub rows: Vec<Row>,
}

/// The devices `relok bench launch` measures: each GPU kind found, else
/// the cpu device.
fn specs() -> Vec<String> {
    let mut out = Vec::new();
    #[cfg(feature = "cuda")]
    if relok_runtime::cuda::device_count() > 0 {
        out.push("cuda:0".to_owned());
    }
    #[cfg(feature = "wgpu")]
    if !relok_runtime::wgpu::list_adapters().is_empty() {
        out.push("wgpu:0".to_owned());
    }
    if out.is_empty() {
        out.push("cpu:0".to_owned());
    }
    out
}

/// Runs the benchmark (`quick`: fewer launches and rounds).
pub fn run(quick: bool) -> Result<Report, String> {
    let (launches, rounds) = if quick { (2_000, 3) } else { (100_000, 7) };
    let mut rows = Vec::new();
    for spec in specs() {
        rows.extend(device_rows(&spec, launches, rounds)?);
    }
    Ok(Report { launches, rounds, rows })
}

/// Prints the report as text.
pub fn print(r: &Report) {
    println!(
        "relok bench launch: {} launches of an empty kernel per round, medians of {} rounds",
        r.launches, r.rounds
    );
    println!("host time per launch with no wait between launches; launches/s include the final wait\n");
    let mut device = "";
    for row in &r.rows {
        if row.device != device {
            device = &row.device;
            println!("{device}\n  {:<50} {:>10} {:>14}", "", "µs/launch", "launches/s");
        }
        println!("  {:<50} {:>10.3} {:>14.0}", row.what, row.per_launch_us, row.launches_per_s);
    }
}

fn row(device: &str, what: &str, launches: usize, laps: &[(f64, f64)]) -> Row {
    Row {
        device: device.to_owned(),
        what: what.to_owned(),
        per_launch_us: median(laps.iter().map(|(l, _)| l / launches as f64).collect()),
        launches_per_s: median(laps.iter().map(|(l, w)| launches as f64 / ((l + w) * 1e-6)).collect()),
    }
}

fn device_rows(spec: &str, launches: usize, rounds: usize) -> Result<Vec<Row>, String> {
    let program = Program::parse(EMPTY).map_err(|e| e.to_string())?;
    let ctx = Context::builder().device(spec).no_cache().build().map_err(|e| e.to_string())?;
    let name = ctx.device_name().to_owned();
    let kernel = ctx.kernel(&program, "empty").map_err(|e| e.to_string())?;
    let grid = Grid::new(1, 1);
    let mut rows = Vec::new();

    // Through the facade, one stream.
    let stream = ctx.stream();
    let facade = laps(rounds, || {
        let t = Instant::now();
        for _ in 0..launches {
            kernel.launch(&stream, grid, ()).map_err(|e| e.to_string())?;
        }
        let l = t.elapsed().as_secs_f64() * 1e6;
        stream.synchronize().map_err(|e| e.to_string())?;
        Ok((l, t.elapsed().as_secs_f64() * 1e6 - l))
    })?;
    rows.push(row(&name, "relok::Kernel::launch, 1 stream", launches, &facade));

    // One level down, and the floor.
    let device = Device::open(spec).map_err(|e| e.to_string())?;
    let session = Session::new();
    let k = device
        .load(&session, &KernelCache::uncached(), program.verified_module(), "empty", Strategy::Table, None)
        .map_err(|e| e.to_string())?;
    let s = device.stream().map_err(|e| e.to_string())?;
    let config = LaunchConfig::linear(1, 1);
    let runtime = laps(rounds, || {
        let t = Instant::now();
        for _ in 0..launches {
            device.enqueue(&s, &k, &config, &[], 0).map_err(|e| e.to_string())?;
        }
        let l = t.elapsed().as_secs_f64() * 1e6;
        device.synchronize(&session, &s).map_err(|e| e.to_string())?;
        Ok((l, t.elapsed().as_secs_f64() * 1e6 - l))
    })?;
    rows.push(row(&name, "relok_runtime::Device::enqueue, 1 stream", launches, &runtime));
    if let Some(floor) = floor(&device, &k, &config, launches, rounds)? {
        rows.push(row(&name, floor.0, launches, &floor.1));
    }

    // Four streams through the facade.
    let streams: Vec<_> = (0..4).map(|_| ctx.stream()).collect();
    let four = laps(rounds, || {
        let t = Instant::now();
        for i in 0..launches {
            kernel.launch(&streams[i % 4], grid, ()).map_err(|e| e.to_string())?;
        }
        let l = t.elapsed().as_secs_f64() * 1e6;
        for s in &streams {
            s.synchronize().map_err(|e| e.to_string())?;
        }
        Ok((l, t.elapsed().as_secs_f64() * 1e6 - l))
    })?;
    rows.push(row(&name, "relok::Kernel::launch, 4 streams", launches, &four));
    Ok(rows)
}

type Laps = Vec<(f64, f64)>;

/// `rounds` of `f` (after one to warm up): (loop µs, wait µs) each.
fn laps(rounds: usize, mut f: impl FnMut() -> Result<(f64, f64), String>) -> Result<Laps, String> {
    f()?;
    (0..rounds).map(|_| f()).collect()
}

/// The bare launch loop of this device, if it has one.
fn floor(
    device: &Device,
    kernel: &relok_runtime::Kernel,
    config: &LaunchConfig,
    launches: usize,
    rounds: usize,
) -> Result<Option<(&'static str, Laps)>, String> {
    match (device, kernel) {
        #[cfg(feature = "cuda")]
        (Device::Cuda(d), relok_runtime::Kernel::Cuda(k)) => {
            let l = laps(rounds, || {
                relok_runtime::cuda::timing::time_bare_async_launches(d, k, config, &[], launches)
                    .map_err(|e| e.to_string())
            })?;
            Ok(Some(("bare cuLaunchKernel (cudarc), 1 stream", l)))
        }
        #[cfg(feature = "wgpu")]
        (Device::Wgpu(d), relok_runtime::Kernel::Wgpu(k)) => {
            let l = laps(rounds, || {
                relok_runtime::wgpu::timing::time_bare_dispatches(d, k, config, launches).map_err(|e| e.to_string())
            })?;
            Ok(Some(("hand-written wgpu dispatch loop, same batching", l)))
        }
        _ => {
            let _ = (config, launches, rounds);
            Ok(None)
        }
    }
}
