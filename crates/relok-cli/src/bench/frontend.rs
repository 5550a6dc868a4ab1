//! `relok bench`: front-end and interpreter speed.
//!
//! - parse + verify of each example, repeated, reported as the median of
//!   the runs (µs per kernel);
//! - the cpu device's throughput on saxpy over a large buffer (elements per
//!   second, median of the runs).
//!
//! Medians of several runs taken in one process, so that ratios between the
//! lines are meaningful; absolute times depend on the machine.

use super::median;
use crate::args::parse_args;
use crate::examples::EXAMPLES;
use crate::launch::{Target, run_kernel};
use relok_ir::Strategy;
use relok_runtime::{CpuDevice, LaunchConfig};
use relok_runtime::{Device, KernelCache, Session};
use std::time::Instant;

/// One measured line.
#[derive(Debug, serde::Serialize)]
pub struct Measurement {
    /// What was measured.
    pub name: String,
    /// Median over the runs.
    pub median: f64,
    /// Unit of `median`.
    pub unit: &'static str,
    /// How many runs.
    pub runs: usize,
}

/// Runs the benchmarks; `quick` uses fewer runs and a smaller saxpy.
pub fn run(device: &CpuDevice, quick: bool) -> Result<Vec<Measurement>, String> {
    let runs = if quick { 5 } else { 51 };
    let mut out = Vec::new();
    for ex in EXAMPLES {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            let m = relok_ir::parse(ex.source).map_err(|e| e.to_string())?;
            relok_ir::verify(&m).map_err(|e| e.to_string())?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        out.push(Measurement { name: format!("parse+verify {}", ex.name), median: median(times), unit: "µs", runs });
    }
    let n: u32 = if quick { 1 << 14 } else { 1 << 20 };
    let saxpy = &EXAMPLES[0];
    let module = relok_ir::VerifiedModule::new(relok_ir::parse(saxpy.source).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let func = &module.funcs[module.func_by_name("saxpy").ok_or("no @saxpy")?];
    let texts = [n.to_string(), "2.5".into(), format!("rand:{n}:1"), format!("rand:{n}:2")];
    let args = parse_args(func, &texts)?;
    let config = LaunchConfig { grid: [n.div_ceil(256), 1, 1], block: [256, 1, 1], ..LaunchConfig::default() };
    let session = Session::new();
    let saxpy_runs = if quick { 3 } else { 9 };
    let cpu = Device::Cpu(CpuDevice::new(device.ordinal()));
    let mut rates = Vec::with_capacity(saxpy_runs);
    for _ in 0..saxpy_runs {
        // A fresh cache each run: every run compiles, as the name says.
        let cache = KernelCache::uncached();
        let target = Target { device: &cpu, session: &session, cache: &cache, strategy: Strategy::Table };
        let t = Instant::now();
        run_kernel(&target, &module, "saxpy", &config, &args).map_err(|e| e.to_string())?;
        rates.push(f64::from(n) / t.elapsed().as_secs_f64());
    }
    out.push(Measurement {
        name: format!("cpu interpreter saxpy, {n} elements (incl. compile, upload and read-back)"),
        median: median(rates),
        unit: "elements/s",
        runs: saxpy_runs,
    });
    Ok(out)
}

/// Prints the measurements as text; `device` names the cpu device they ran on.
pub fn print(device: &str, results: &[Measurement]) {
    println!("relok bench on {device} (medians of repeated runs in one process)");
    for m in results {
        println!("{:<70} {:>14.1} {} ({} runs)", m.name, m.median, m.unit, m.runs);
    }
}
