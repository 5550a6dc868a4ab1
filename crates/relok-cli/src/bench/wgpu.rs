//! `relok bench wgpu`: what a new process pays for its first launch on the
//! wgpu device, and the host time of a launch (see docs/benchmarks.md).
//!
//! - **First launch in a new process**, per example, each a child process
//!   (`relok bench wgpu-child`) timed from its own start to the end of the
//!   first launch, minus opening the device (instance, adapter, device;
//!   reported apart): `cold` (empty artifact store and pipeline-cache
//!   archive), `store` (warm artifact store, an empty pipeline cache: the
//!   driver compiles the pipeline) and `store+archive` (warm store and
//!   pipeline cache). The drivers' own shader caches on disk are switched
//!   off in every child (`MESA_SHADER_CACHE_DISABLE`,
//!   `__GL_SHADER_DISK_CACHE`), so the archive is the only warm path.
//! - **Per-launch host time**: a one-block kernel launched and waited for
//!   through relok under table and bake (arguments written, bind group,
//!   dispatch, exception record read back).

use super::{ChildExample, Laps, median, run_child, temp_path};
use crate::examples::EXAMPLES;
use crate::launch::{Prepared, Target, prepare};
use relok_ir::Strategy;
use relok_runtime::wgpu::{PipelineCacheState, WgpuDevice};
use relok_runtime::{Device, DeviceMemory, KernelCache, Session};
use relok_runtime::{KernelArg, LaunchConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What one child process measured.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChildReport {
    /// Opening the device (instance, adapter, device, pipeline cache), µs.
    pub open_us: f64,
    /// From process start to the end of the first launch, minus opening
    /// the device, µs.
    pub first_launch_us: f64,
    /// relok compiles.
    pub compiles: u64,
    /// Artifact-store hits.
    pub store_hits: u64,
    /// The pipeline-cache archive at open.
    pub pipeline_cache: PipelineCacheState,
    /// Where the time went, in order: (step, µs).
    pub phases: Vec<(String, f64)>,
}

/// The child's part: one example's first launch (table), with the cache
/// root `store` and, with `archive`, its pipeline-cache archive.
pub fn child(started: Instant, example: &str, store: &Path, archive: bool) -> Result<ChildReport, String> {
    let mut laps = Laps::new(started);
    let t = Instant::now();
    let dev = WgpuDevice::open_in(0, archive.then(|| store.to_owned())).map_err(|e| e.to_string())?;
    let open_us = t.elapsed().as_secs_f64() * 1e6;
    laps.lap("open the device (excluded)");
    let device = Device::Wgpu(Box::new(dev));
    let cache = KernelCache::open(store).map_err(|e| e.to_string())?;
    let session = Session::new();
    laps.lap("open the store");
    let ex = ChildExample::parse(example)?;
    laps.lap("parse the kernel text and inputs");
    let Device::Wgpu(dev) = &device else { return Err("not a wgpu device".into()) };
    let artifact = cache
        .artifact(&session, dev.as_ref(), &ex.module, ex.ex.kernel, dev.target(), Strategy::Table)
        .map_err(|e| e.to_string())?;
    laps.lap("artifact (stencil, key, store read, decode)");
    let k = relok_runtime::Backend::load(dev.as_ref(), &session, &relok_runtime::LoadRequest::new(&artifact))
        .map_err(|e| e.to_string())?;
    laps.lap("load (words, shader module, table)");
    let target = Target { device: &device, session: &session, cache: &cache, strategy: Strategy::Table };
    ex.launch(&target, &Prepared::Wgpu(k))?;
    laps.lap("inputs, pipeline, launch, wait, outputs");
    let first_launch_us = started.elapsed().as_secs_f64() * 1e6 - open_us;
    let st = cache.stats();
    Ok(ChildReport {
        open_us,
        first_launch_us,
        compiles: st.compiles,
        store_hits: st.store.hits,
        pipeline_cache: dev.load_stats().pipeline_cache,
        phases: laps.into_phases(),
    })
}

/// One mode of the first-launch measurement for one example.
#[derive(Debug, Serialize)]
pub struct StartRow {
    /// The example.
    pub example: String,
    /// `cold`, `store`, `store+archive`.
    pub mode: String,
    /// Median first launch (process start → launch done, minus opening the
    /// device), µs.
    pub median_us: f64,
    /// Median device open, µs.
    pub open_us: f64,
    /// The last child's report (what served the kernel, the phases).
    pub last: ChildReport,
}

/// Per-launch host time under one strategy.
#[derive(Debug, Serialize)]
pub struct LaunchRow {
    /// The strategy.
    pub strategy: String,
    /// Median launch + wait, µs.
    pub median_us: f64,
}

/// Everything `relok bench wgpu` measured.
#[derive(Debug, Serialize)]
pub struct WgpuBench {
    /// The adapter.
    pub device: String,
    /// Its driver.
    pub driver: String,
    /// Child runs per row.
    pub runs: usize,
    /// First launches.
    pub starts: Vec<StartRow>,
    /// Per-launch host time.
    pub launches: Vec<LaunchRow>,
}

fn temp(name: &str) -> PathBuf {
    temp_path("wgpu", name)
}

/// Runs the whole benchmark; `relok` is the binary to start children from.
pub fn run(relok: &Path, quick: bool) -> Result<WgpuBench, String> {
    let dev = WgpuDevice::open(0).map_err(|e| e.to_string())?;
    let (device, driver) = (
        format!("{} ({})", dev.info().name, dev.info().backend.to_str()),
        format!("{} {}", dev.info().driver, dev.info().driver_info),
    );
    drop(dev);
    let runs = if quick { 2 } else { 7 };
    let examples: &[&str] = if quick { &["saxpy"] } else { &["saxpy", "reduce", "matmul", "lookup", "throw"] };
    // The drivers' own disk caches would hide what the archive does.
    let env: [(&str, &std::ffi::OsStr); 2] =
        [("MESA_SHADER_CACHE_DISABLE", "true".as_ref()), ("__GL_SHADER_DISK_CACHE", "0".as_ref())];
    let child = |example: &str, store: &Path, archive: bool| -> Result<ChildReport, String> {
        run_child(relok, "wgpu-child", example, store, archive, &env)
    };
    let mut starts = Vec::new();
    for &ex in examples {
        let warm = temp(&format!("{ex}-warm"));
        // Fill the store and the archive once.
        child(ex, &warm, true)?;
        // (name, cold?, archive?)
        for (name, cold, archive) in [("cold", true, true), ("store", false, false), ("store+archive", false, true)] {
            let (mut times, mut opens, mut last) = (Vec::new(), Vec::new(), None);
            for i in 0..runs {
                let fresh = temp(&format!("{ex}-cold-{i}"));
                let r = child(ex, if cold { &fresh } else { &warm }, archive)?;
                times.push(r.first_launch_us);
                opens.push(r.open_us);
                last = Some(r);
                let _ = std::fs::remove_dir_all(&fresh);
            }
            let last = last.ok_or("no runs")?;
            starts.push(StartRow {
                example: ex.into(),
                mode: name.into(),
                median_us: median(times),
                open_us: median(opens),
                last,
            });
        }
        let _ = std::fs::remove_dir_all(&warm);
    }
    let launches = launch_time(if quick { 50 } else { 2000 })?;
    Ok(WgpuBench { device, driver, runs, starts, launches })
}

/// Prints the report as text.
pub fn print(r: &WgpuBench) {
    println!("relok bench wgpu on {}, driver {}; medians of {} child processes per row", r.device, r.driver, r.runs);
    println!("\nfirst launch in a new process, µs from process start to the launch's end, device open excluded:");
    println!("{:<8} {:<14} {:>10} {:>10}  served by", "example", "mode", "first", "open");
    for row in &r.starts {
        let l = &row.last;
        println!(
            "{:<8} {:<14} {:>10.0} {:>10.0}  compiles {} store {} pipeline cache {:?}",
            row.example, row.mode, row.median_us, row.open_us, l.compiles, l.store_hits, l.pipeline_cache
        );
    }
    println!("\nper-launch host time (launch + wait, one block of saxpy), µs:");
    for row in &r.launches {
        println!("{:<8} {:>8.1}", row.strategy, row.median_us);
    }
}

/// Median host time of `iters` launches of saxpy over one block, per
/// strategy, its buffers uploaded once.
fn launch_time(iters: usize) -> Result<Vec<LaunchRow>, String> {
    let device = Device::Wgpu(Box::new(WgpuDevice::open(0).map_err(|e| e.to_string())?));
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let saxpy = EXAMPLES.iter().find(|e| e.name == "saxpy").ok_or("no saxpy")?;
    let m = relok_ir::VerifiedModule::new(relok_ir::parse(saxpy.source).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let x = device.alloc_zeroed(4 * 32).map_err(|e| e.to_string())?;
    let y = device.alloc_zeroed(4 * 32).map_err(|e| e.to_string())?;
    let args = [
        KernelArg::Scalar { ty: relok_ir::Scalar::U32, bits: 32 },
        KernelArg::Scalar { ty: relok_ir::Scalar::F32, bits: u64::from(2.0f32.to_bits()) },
        KernelArg::Ptr(x),
        KernelArg::Ptr(y),
    ];
    let config = LaunchConfig::linear(1, 32);
    let mut rows = Vec::new();
    for strategy in [Strategy::Table, Strategy::Bake] {
        let target = Target { device: &device, session: &session, cache: &cache, strategy };
        let prepared = prepare(&target, &m, saxpy.kernel).map_err(|e| e.to_string())?;
        // The first launch makes the pipeline.
        crate::launch::launch(&target, &prepared, &config, &args).map_err(|e| e.to_string())?;
        let mut times = Vec::with_capacity(iters);
        for _ in 0..iters {
            let t = Instant::now();
            crate::launch::launch(&target, &prepared, &config, &args).map_err(|e| e.to_string())?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        rows.push(LaunchRow { strategy: strategy.name().into(), median_us: median(times) });
    }
    Ok(rows)
}
