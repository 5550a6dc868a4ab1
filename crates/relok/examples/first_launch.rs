//! The first launch of a kernel in a new process, timed from `main`: the
//! child program of `relok bench start` (docs/benchmarks.md), and a small
//! program a user can time on their own machine:
//! `cargo run --release -p relok --example first_launch`.
//!
//! It opens a context on the device `RELOK_DEVICE` names (timed apart: the
//! driver's start-up is not relok's), then loads the kernel of
//! `examples/bench/scale.rk` (`y[i] = x[i] · factor`, the factor a host
//! value delivered at load) from a [`relok::Source`] (parsed only on a
//! cache miss), uploads 4 KiB, launches, waits and reads 4 KiB back,
//! checks the result and prints one JSON line: the context's time, the
//! first launch (everything from `main` but the context), each step, and
//! what served the kernel (compiles, store hits, machine code loaded or
//! compiled). `--bundle FILE` loads a bundle (`relok precompile`) first, as
//! a program that ships its kernels does; the read is part of the figure.
#![expect(clippy::print_stdout, reason = "the one JSON line is this program's output")]

use relok::{Context, Grid, Source};
use std::process::ExitCode;
use std::time::Instant;

static SCALE: Source = Source::new("examples/bench/scale.rk", include_str!("../../../examples/bench/scale.rk"));
const N: usize = 1024;

fn main() -> Result<ExitCode, relok::Error> {
    let started = Instant::now();
    let bundle = std::env::args().skip_while(|a| a != "--bundle").nth(1);
    let ctx = Context::from_env()?;
    let context_us = started.elapsed().as_secs_f64() * 1e6;
    let mut laps: Vec<(&str, f64)> = Vec::new();
    let mut last = Instant::now();
    let mut lap = |name: &'static str| {
        let now = Instant::now();
        laps.push((name, (now - last).as_secs_f64() * 1e6));
        last = now;
    };
    if let Some(path) = &bundle {
        let bytes = std::fs::read(path).map_err(|source| relok::Error::Io { path: path.clone(), source })?;
        ctx.load_bundle(&bytes)?;
        lap("bundle");
    }
    let kernel = ctx.kernel(&SCALE, "scale")?;
    lap("kernel");
    let x: Vec<f32> = (0..N).map(|i| i as f32 + 1.0).collect();
    let dx = ctx.upload(&x)?;
    let mut dy = ctx.zeros::<f32>(N)?;
    lap("upload");
    let stream = ctx.stream();
    kernel.launch(&stream, Grid::cover(N, 256), (N as u32, &dx, &mut dy))?;
    stream.synchronize()?;
    lap("launch");
    let y = dy.download()?;
    lap("download");
    let first_us = started.elapsed().as_secs_f64() * 1e6 - context_us;
    let wrong = y.iter().zip(&x).filter(|&(y, x)| *y != 2.0 * x).count();
    let stats = ctx.cache_stats();
    let code = ctx.code_stats();
    let phases: Vec<String> = laps.iter().map(|(n, us)| format!("[\"{n}\",{us:.1}]")).collect();
    println!(
        "{{\"device\":\"{}\",\"context_us\":{context_us:.1},\"first_us\":{first_us:.1},\"wrong\":{wrong},\"compiles\":{},\"store_hits\":{},\"bundle_hits\":{},\"machine_code\":{{\"archived\":{},\"bundled\":{},\"linked\":{},\"jit\":{}}},\"phases\":[{}]}}",
        ctx.device_name(),
        stats.compiles,
        stats.store.hits,
        stats.bundle.hits,
        code.archived,
        code.bundled,
        code.linked,
        code.jit,
        phases.join(",")
    );
    Ok(if wrong == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
