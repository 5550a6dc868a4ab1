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
//! a program that ships its kernels does (read, then kept for the whole
//! run and loaded with `load_static_bundle`, as an embedded one is); the
//! read is part of the figure.
//!
//! `--kernels N` (N > 1) makes it an application that loads N distinct
//! kernels before its first result: `scale_0 … scale_{N-1}`, each
//! `scale.rk` with its own factor (a host value of its own), each launched
//! once into its own output after all are loaded; `--threads T` loads
//! them from T threads of its own (cold compiles run in parallel);
//! `--batch` loads them with one `Context::kernels` call (relok loads the
//! cached ones at once and compiles the rest in parallel, a thread per
//! core); `--write-kernels DIR` writes their sources as
//! `DIR/scale_<i>.rk` (for `relok precompile`) and exits.
#![expect(clippy::print_stdout, reason = "the one JSON line is this program's output")]

use relok::{Context, Grid, Source};
use std::process::ExitCode;
use std::time::Instant;

const SCALE_TEXT: &str = include_str!("../../../examples/bench/scale.rk");
const N: usize = 1024;

/// The value after `flag` on the command line.
fn arg(flag: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != flag).nth(1)
}

/// Kernel `i` of `count`: scale.rk itself for one kernel, else its copy
/// named `scale_<i>` with factor `i + 2`. Returns (file, text, name,
/// factor).
fn kernel_source(i: usize, count: usize) -> (String, String, String, f32) {
    if count == 1 {
        return ("examples/bench/scale.rk".into(), SCALE_TEXT.into(), "scale".into(), 2.0);
    }
    let factor = (i + 2) as f32;
    let text = SCALE_TEXT
        .replace("const @factor: f32 = 2.0", &format!("const @factor: f32 = {factor:.1}"))
        .replace("kernel @scale(", &format!("kernel @scale_{i}("));
    (format!("scale_{i}.rk"), text, format!("scale_{i}"), factor)
}

fn main() -> Result<ExitCode, relok::Error> {
    let started = Instant::now();
    let count: usize = arg("--kernels").and_then(|n| n.parse().ok()).unwrap_or(1).max(1);
    let threads: usize = arg("--threads").and_then(|n| n.parse().ok()).unwrap_or(1).clamp(1, count);
    if let Some(dir) = arg("--write-kernels") {
        for i in 0..count {
            let (file, text, _, _) = kernel_source(i, count);
            let path = std::path::Path::new(&dir).join(file);
            std::fs::write(&path, text)
                .map_err(|source| relok::Error::Io { path: path.display().to_string(), source })?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    // The sources live as long as the program, as `static`s would.
    let sources: Vec<(Source, String, f32)> = (0..count)
        .map(|i| {
            let (file, text, name, factor) = kernel_source(i, count);
            (Source::new(Box::leak(file.into_boxed_str()), Box::leak(text.into_boxed_str())), name, factor)
        })
        .collect();
    let bundle = arg("--bundle");
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
        ctx.load_static_bundle(Vec::leak(bytes))?;
        lap("bundle");
    }
    let batch = std::env::args().any(|a| a == "--batch");
    let kernels: Vec<relok::Kernel> = if batch {
        let wanted: Vec<(&Source, &str)> = sources.iter().map(|(s, name, _)| (s, name.as_str())).collect();
        ctx.kernels(&wanted)?
    } else if threads == 1 {
        sources.iter().map(|(s, name, _)| ctx.kernel(s, name)).collect::<Result<_, _>>()?
    } else {
        let per = count.div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = sources
                .chunks(per)
                .map(|chunk| {
                    let ctx = &ctx;
                    scope.spawn(move || {
                        chunk.iter().map(|(s, name, _)| ctx.kernel(s, name)).collect::<Result<Vec<_>, _>>()
                    })
                })
                .collect();
            let mut all = Vec::with_capacity(count);
            for h in handles {
                all.extend(h.join().expect("a loading thread panicked")?);
            }
            Ok::<_, relok::Error>(all)
        })?
    };
    lap("kernel");
    let x: Vec<f32> = (0..N).map(|i| i as f32 + 1.0).collect();
    let dx = ctx.upload(&x)?;
    let mut outs = (0..count).map(|_| ctx.zeros::<f32>(N)).collect::<Result<Vec<_>, _>>()?;
    lap("upload");
    let stream = ctx.stream();
    for (kernel, out) in kernels.iter().zip(&mut outs) {
        kernel.launch(&stream, Grid::cover(N, 256), (N as u32, &dx, out))?;
    }
    stream.synchronize()?;
    lap("launch");
    let mut wrong = 0;
    for (out, (_, _, factor)) in outs.iter().zip(&sources) {
        wrong += out.download()?.iter().zip(&x).filter(|&(y, x)| *y != factor * x).count();
    }
    lap("download");
    let first_us = started.elapsed().as_secs_f64() * 1e6 - context_us;
    // The wall clock when the result is on the host, for a parent that
    // times the process from its exec (`relok bench start`).
    let result_at_unix_ns =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let stats = ctx.cache_stats();
    let code = ctx.code_stats();
    let phases: Vec<String> = laps.iter().map(|(n, us)| format!("[\"{n}\",{us:.1}]")).collect();
    println!(
        "{{\"device\":\"{}\",\"context_us\":{context_us:.1},\"first_us\":{first_us:.1},\"result_at_unix_ns\":{result_at_unix_ns},\"wrong\":{wrong},\"compiles\":{},\"store_hits\":{},\"bundle_hits\":{},\"machine_code\":{{\"archived\":{},\"records\":{},\"bundled\":{},\"linked\":{},\"jit\":{}}},\"phases\":[{}]}}",
        ctx.device_name(),
        stats.compiles,
        stats.store.hits,
        stats.bundle.hits,
        code.archived,
        code.records,
        code.bundled,
        code.linked,
        code.jit,
        phases.join(",")
    );
    Ok(if wrong == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
