//! `relok bench`: front-end and interpreter speed.
//!
//! - parse + verify of each example, repeated, reported as the median of
//!   the runs (µs per kernel);
//! - the cpu device's throughput on saxpy over a large buffer (elements per
//!   second, median of the runs).
//!
//! Medians of several runs taken in one process, so that ratios between the
//! lines are meaningful; absolute times depend on the machine.

use relok_runtime::KernelCache;
use crate::args::parse_args;
use crate::examples::EXAMPLES;
use crate::launch::{run_kernel, Target};
use relok_runtime::cpu::{CpuDevice, LaunchConfig};
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

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 }
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
    let module = relok_ir::parse(saxpy.source).map_err(|e| e.to_string())?;
    let func = &module.funcs[module.func_by_name("saxpy").ok_or("no @saxpy")?];
    let texts = [n.to_string(), "2.5".into(), format!("rand:{n}:1"), format!("rand:{n}:2")];
    let args = parse_args(func, &texts)?;
    let config = LaunchConfig { grid: [n.div_ceil(256), 1, 1], block: [256, 1, 1], ..LaunchConfig::default() };
    let session = relok_runtime::Session::new();
    let saxpy_runs = if quick { 3 } else { 9 };
    let mut rates = Vec::with_capacity(saxpy_runs);
    for _ in 0..saxpy_runs {
        // A fresh cache each run: every run compiles, as the name says.
        let cache = KernelCache::uncached();
        let target = Target { device, session: &session, cache: &cache, strategy: relok_ir::Strategy::Table };
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

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(super::median(vec![]).is_nan());
    }
}
