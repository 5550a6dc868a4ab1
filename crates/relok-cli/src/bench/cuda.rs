//! `relok bench cuda`: the warm-start figures of docs/design.md §7 on a GPU, in one
//! run (see docs/benchmarks.md for results).
//!
//! - **First launch in a new process**, per example, each a child process
//!   (`relok bench cuda-child`) timed from its own start to the end of the
//!   first launch, minus CUDA context creation (reported apart):
//!   `cold` (empty artifact store and binary archive), `store` (warm
//!   artifact store, no archive: the driver JIT-compiles the PTX) and
//!   `store+archive` (warm store and archive: a cubin is loaded). Each with
//!   the driver's own JIT cache disabled (`CUDA_CACHE_DISABLE=1`); `cold`
//!   and `store` also with it enabled on an empty / warm cache folder.
//! - **Per-launch host overhead**: a one-block kernel launched and waited
//!   for through relok (bake, patch, table) against the bare
//!   `cuLaunchKernel` + `cuCtxSynchronize` of the same function. relok's
//!   includes reading the kernel's exception record (a copy from device
//!   memory, then the wait: docs/cuda.md), which the bare launch skips.
//! - **Run-time cost of a relocation per element**: `examples/bench/scale.rk`
//!   over 1 GiB in + 1 GiB out, GPU time by events, table and patch against
//!   bake.

use super::{ChildExample, Laps, median, run_child, temp_path};
use crate::launch::{Prepared, Target, prepare};
use relok_ir::Strategy;
use relok_runtime::cuda::{CudaDevice, timing};
use relok_runtime::{Device, DeviceMemory, KernelCache, Session};
use relok_runtime::{KernelArg, LaunchConfig};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The memory-bound kernel of the relocation-cost measurement.
pub const SCALE: &str = include_str!("../../../../examples/bench/scale.rk");

/// What one child process measured.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct ChildReport {
    /// Context creation (`CudaDevice::open`), µs.
    pub context_us: f64,
    /// From process start to the end of the first launch, minus context
    /// creation, µs.
    pub first_launch_us: f64,
    /// relok compiles.
    pub compiles: u64,
    /// Artifact-store hits.
    pub store_hits: u64,
    /// Cubins from the binary archive.
    pub archive_hits: u64,
    /// PTX linked into cubins.
    pub linked: u64,
    /// PTX handed to the driver's JIT.
    pub ptx_jit: u64,
    /// Where the time went, in order: (step, µs).
    pub phases: Vec<(String, f64)>,
}

/// The child's part: one example's first launch.
pub fn child(started: Instant, example: &str, store: &Path, archive: bool) -> Result<ChildReport, String> {
    let mut laps = Laps::new(started);
    let t = Instant::now();
    let mut dev = CudaDevice::open(0).map_err(|e| e.to_string())?;
    let context_us = t.elapsed().as_secs_f64() * 1e6;
    laps.lap("context (excluded)");
    if archive {
        let config = dev.archive_config(store);
        dev.set_archive(Some(relok_cache::Store::open(config).map_err(|e| e.to_string())?));
    }
    let device = Device::Cuda(dev);
    let cache = KernelCache::open(store).map_err(|e| e.to_string())?;
    let session = Session::new();
    laps.lap("open archive + store");
    let ex = ChildExample::parse(example)?;
    laps.lap("parse the kernel text and inputs");
    let target = Target { device: &device, session: &session, cache: &cache, strategy: Strategy::Table };
    let Device::Cuda(dev) = &device else { return Err("not a cuda device".into()) };
    let artifact = cache
        .artifact(&session, dev, &ex.module, ex.ex.kernel, dev.target(), Strategy::Table)
        .map_err(|e| e.to_string())?;
    laps.lap("artifact (stencil, key, store read, decode)");
    let k = relok_runtime::Backend::load(dev, &session, &relok_runtime::LoadRequest::new(&artifact))
        .map_err(|e| e.to_string())?;
    laps.lap("load (words, module, table, record)");
    ex.launch(&target, &Prepared::Cuda(k))?;
    laps.lap("inputs, launch, wait, outputs");
    let first_launch_us = started.elapsed().as_secs_f64() * 1e6 - context_us;
    let (st, loads) = (cache.stats(), dev.load_stats());
    Ok(ChildReport {
        context_us,
        first_launch_us,
        compiles: st.compiles,
        store_hits: st.store.hits,
        archive_hits: loads.archive_hits,
        linked: loads.linked,
        ptx_jit: loads.ptx_jit,
        phases: laps.into_phases(),
    })
}

/// One mode of the first-launch measurement for one example.
#[derive(Debug, Serialize)]
pub struct StartRow {
    /// The example.
    pub example: String,
    /// `cold`, `store`, `store+archive`, with the driver JIT cache state.
    pub mode: String,
    /// Median first launch (process start → launch done, minus context), µs.
    pub median_us: f64,
    /// Median context creation, µs.
    pub context_us: f64,
    /// The last child's counters (what served the kernel).
    pub last: ChildReport,
}

/// Per-launch host time of one strategy against the bare launch.
#[derive(Debug, Serialize)]
pub struct LaunchRow {
    /// The strategy.
    pub strategy: String,
    /// Median relok launch + wait, µs.
    pub relok_us: f64,
    /// Median bare cuLaunchKernel + cuCtxSynchronize, µs.
    pub raw_us: f64,
}

/// GPU time of the memory-bound kernel under one strategy.
#[derive(Debug, Serialize)]
pub struct BandwidthRow {
    /// The strategy.
    pub strategy: String,
    /// Median GPU time, ms.
    pub median_ms: f64,
    /// Bytes moved (read + written) per second, GB/s.
    pub gb_per_s: f64,
}

/// Everything `relok bench cuda` measured.
#[derive(Debug, Serialize)]
pub struct CudaBench {
    /// The GPU.
    pub device: String,
    /// The driver's CUDA version.
    pub driver: i32,
    /// Child runs per row.
    pub runs: usize,
    /// First launches.
    pub starts: Vec<StartRow>,
    /// Per-launch overhead.
    pub launches: Vec<LaunchRow>,
    /// Relocation cost per element.
    pub bandwidth: Vec<BandwidthRow>,
    /// Elements of the bandwidth kernel.
    pub elements: u64,
}

fn temp(name: &str) -> PathBuf {
    temp_path("cuda", name)
}

/// Runs the whole benchmark; `relok` is the binary to start children from.
pub fn run(relok: &Path, quick: bool) -> Result<CudaBench, String> {
    let dev = CudaDevice::open(0).map_err(|e| e.to_string())?;
    let (device, driver) = (format!("{} (sm_{})", dev.name(), dev.sm()), dev.driver_version());
    drop(dev);
    let runs = if quick { 2 } else { 7 };
    let examples: &[&str] = if quick { &["saxpy"] } else { &["saxpy", "reduce", "lookup", "throw"] };
    let child = |example: &str,
                 store: &Path,
                 archive: bool,
                 env: &[(&str, &Path)],
                 jit_off: bool|
     -> Result<ChildReport, String> {
        let mut env: Vec<(&str, &std::ffi::OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        if jit_off {
            env.push(("CUDA_CACHE_DISABLE", "1".as_ref()));
        }
        run_child(relok, "cuda-child", example, store, archive, &env)
    };
    let mut starts = Vec::new();
    for &ex in examples {
        let warm = temp(&format!("{ex}-warm"));
        let jit_warm = temp(&format!("{ex}-jit"));
        // Fill the store, the archive and a driver JIT cache once.
        child(ex, &warm, true, &[("CUDA_CACHE_PATH", &jit_warm)], false)?;
        child(ex, &warm, false, &[("CUDA_CACHE_PATH", &jit_warm)], false)?;
        type Mode<'a> = (&'a str, bool, bool, bool, Option<&'a Path>);
        // (name, cold?, archive?, driver JIT cache off?, JIT cache folder)
        let modes: [Mode<'_>; 5] = [
            ("cold, driver JIT cache off", true, true, true, None),
            ("cold, driver JIT cache empty", true, true, false, None),
            ("store, driver JIT cache off", false, false, true, None),
            ("store, driver JIT cache warm", false, false, false, Some(&jit_warm)),
            ("store+archive, driver JIT cache off", false, true, true, None),
        ];
        for (name, cold, archive, jit_off, jit_dir) in modes {
            let (mut times, mut ctx, mut last) = (Vec::new(), Vec::new(), None);
            for i in 0..runs {
                let fresh = temp(&format!("{ex}-cold-{i}"));
                let jit_fresh = temp(&format!("{ex}-jitcold-{i}"));
                let store = if cold { &fresh } else { &warm };
                let jit = jit_dir.unwrap_or(&jit_fresh);
                let r = child(ex, store, archive, &[("CUDA_CACHE_PATH", jit)], jit_off)?;
                times.push(r.first_launch_us);
                ctx.push(r.context_us);
                last = Some(r);
                let _ = std::fs::remove_dir_all(&fresh);
                let _ = std::fs::remove_dir_all(&jit_fresh);
            }
            let last = last.ok_or("no runs")?;
            starts.push(StartRow {
                example: ex.into(),
                mode: name.into(),
                median_us: median(times),
                context_us: median(ctx),
                last,
            });
        }
        let _ = std::fs::remove_dir_all(&warm);
        let _ = std::fs::remove_dir_all(&jit_warm);
    }
    let launches = launch_overhead(if quick { 200 } else { 5000 })?;
    let elements: u64 = if quick { 1 << 20 } else { 1 << 28 };
    let bandwidth = relocation_cost(elements, if quick { 3 } else { 30 })?;
    Ok(CudaBench { device, driver, runs, starts, launches, bandwidth, elements })
}

/// Prints the report as text.
pub fn print(r: &CudaBench) {
    println!(
        "relok bench cuda on {}, driver CUDA {}; medians of {} child processes per row",
        r.device, r.driver, r.runs
    );
    println!("\nfirst launch in a new process, µs from process start to the launch's end, context creation excluded:");
    println!("{:<8} {:<38} {:>10} {:>10}  served by", "example", "mode", "first", "context");
    for row in &r.starts {
        let l = &row.last;
        println!(
            "{:<8} {:<38} {:>10.0} {:>10.0}  compiles {} store {} archive {} linked {} jit {}",
            row.example,
            row.mode,
            row.median_us,
            row.context_us,
            l.compiles,
            l.store_hits,
            l.archive_hits,
            l.linked,
            l.ptx_jit
        );
    }
    println!("\nper-launch host time (launch + wait, one block), µs:");
    for row in &r.launches {
        println!(
            "{:<8} relok {:>8.2}  bare {:>8.2}  overhead {:>6.2}",
            row.strategy,
            row.relok_us,
            row.raw_us,
            row.relok_us - row.raw_us
        );
    }
    println!("\nrelocated value read per element, {} elements (GPU time by events):", r.elements);
    let bake = r.bandwidth.iter().find(|b| b.strategy == "bake").map_or(0.0, |b| b.median_ms);
    for row in &r.bandwidth {
        println!(
            "{:<8} {:>8.3} ms {:>8.0} GB/s  {:+.2} % vs bake",
            row.strategy,
            row.median_ms,
            row.gb_per_s,
            (row.median_ms / bake - 1.0) * 100.0
        );
    }
}

/// The loaded kernel of `src` under `strategy` on `device`.
fn loaded(
    device: &Device,
    session: &Session,
    cache: &KernelCache,
    src: &str,
    kernel: &str,
    strategy: Strategy,
) -> Result<std::sync::Arc<relok_runtime::cuda::CudaKernel>, String> {
    let m =
        relok_ir::VerifiedModule::new(relok_ir::parse(src).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let target = Target { device, session, cache, strategy };
    match prepare(&target, &m, kernel).map_err(|e| e.to_string())? {
        Prepared::Cuda(k) => Ok(k),
        _ => Err("not a cuda kernel".into()),
    }
}

fn launch_overhead(iters: usize) -> Result<Vec<LaunchRow>, String> {
    let device = Device::Cuda(CudaDevice::open(0).map_err(|e| e.to_string())?);
    let Device::Cuda(dev) = &device else { return Err("not cuda".into()) };
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let x = device.alloc_zeroed(4 * 32).map_err(|e| e.to_string())?;
    let y = device.alloc_zeroed(4 * 32).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for strategy in Strategy::ALL {
        let k = loaded(&device, &session, &cache, SCALE, "scale", strategy)?;
        let args = [KernelArg::u32(32), KernelArg::Ptr(x), KernelArg::Ptr(y)];
        let config = LaunchConfig::linear(1, 32);
        // Warm up, then alternate so both see the same machine state.
        for _ in 0..100 {
            dev.launch(&k, &config, &args, 0).map_err(|e| e.to_string())?;
        }
        let (mut ours, mut raw) = (Vec::new(), Vec::new());
        for _ in 0..iters / 100 {
            for _ in 0..100 {
                let t = Instant::now();
                dev.launch(&k, &config, &args, 0).map_err(|e| e.to_string())?;
                ours.push(t.elapsed().as_secs_f64() * 1e6);
            }
            raw.extend(timing::time_raw_launches(dev, &k, &config, &args, 100).map_err(|e| e.to_string())?);
        }
        rows.push(LaunchRow { strategy: strategy.name().into(), relok_us: median(ours), raw_us: median(raw) });
    }
    Ok(rows)
}

fn relocation_cost(n: u64, iters: usize) -> Result<Vec<BandwidthRow>, String> {
    let device = Device::Cuda(CudaDevice::open(0).map_err(|e| e.to_string())?);
    let Device::Cuda(dev) = &device else { return Err("not cuda".into()) };
    let (session, cache) = (Session::new(), KernelCache::uncached());
    let bytes = n * 4;
    let x = device.alloc_zeroed(bytes).map_err(|e| e.to_string())?;
    let y = device.alloc_zeroed(bytes).map_err(|e| e.to_string())?;
    // Not zeros (METHOD.md): a pattern of small floats.
    let host: Vec<u8> = (0..n).flat_map(|i| (1.0f32 + (i % 1000) as f32 * 0.001).to_le_bytes()).collect();
    device.write_bytes(x, &host).map_err(|e| e.to_string())?;
    let config = LaunchConfig::linear(u32::try_from(n.div_ceil(256)).map_err(|e| e.to_string())?, 256);
    let args = [KernelArg::u32(u32::try_from(n).map_err(|e| e.to_string())?), KernelArg::Ptr(x), KernelArg::Ptr(y)];
    let mut rows = Vec::new();
    let kernels: Vec<_> = [Strategy::Bake, Strategy::Patch, Strategy::Table]
        .into_iter()
        .map(|s| loaded(&device, &session, &cache, SCALE, "scale", s).map(|k| (s, k)))
        .collect::<Result<_, _>>()?;
    // Interleaved rounds, so drift hits every strategy alike.
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); kernels.len()];
    timing::time_launches(dev, &kernels[0].1, &config, &args, 3).map_err(|e| e.to_string())?;
    for _ in 0..iters {
        for (i, (_, k)) in kernels.iter().enumerate() {
            times[i].extend(timing::time_launches(dev, k, &config, &args, 1).map_err(|e| e.to_string())?);
        }
    }
    // The result must be right: y = 2x.
    let sample = device.read_bytes(y, 16).map_err(|e| e.to_string())?;
    let first = f32::from_le_bytes(sample[..4].try_into().map_err(|_| "4 bytes")?);
    if first != 2.0 {
        return Err(format!("scale kernel computed {first}, expected 2"));
    }
    for ((s, _), t) in kernels.iter().zip(times) {
        let ms = median(t);
        rows.push(BandwidthRow {
            strategy: s.name().into(),
            median_ms: ms,
            gb_per_s: (2 * bytes) as f64 / (ms * 1e-3) / 1e9,
        });
    }
    Ok(rows)
}
