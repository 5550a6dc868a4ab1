//! An application that ships its kernels: `build.rs` precompiles them with
//! `relok-build` into a bundle that `include_bytes!` puts in this binary,
//! so on a machine with empty caches it compiles nothing (and, on a GPU
//! its bundle has cubins for, JIT-compiles nothing). It runs `scale` on
//! the device `RELOK_DEVICE` names (default: the best one), checks the
//! result against plain Rust and prints what served the kernel as one
//! JSON line.
#![expect(clippy::print_stdout, reason = "the one JSON line is this program's output")]

use relok::{Context, Grid, Source};
use std::process::ExitCode;

static SCALE: Source = Source::new("examples/bench/scale.rk", include_str!("../../../examples/bench/scale.rk"));
static KERNELS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.bundle"));

fn main() -> Result<ExitCode, relok::Error> {
    let ctx = Context::from_env()?;
    ctx.load_static_bundle(KERNELS)?;
    let scale = ctx.kernel(&SCALE, "scale")?;
    let x: Vec<f32> = (0..4096).map(|i| i as f32 * 0.25).collect();
    let dx = ctx.upload(&x)?;
    let mut dy = ctx.zeros::<f32>(x.len())?;
    let stream = ctx.stream();
    scale.launch(&stream, Grid::cover(x.len(), 256), (x.len() as u32, &dx, &mut dy))?;
    stream.synchronize()?;
    let wrong = dy.download()?.iter().zip(&x).filter(|&(y, x)| *y != 2.0 * x).count();
    let (cache, code) = (ctx.cache_stats(), ctx.code_stats());
    println!(
        "{{\"device\":\"{}\",\"wrong\":{wrong},\"compiles\":{},\"bundle_hits\":{},\"bundled\":{},\"linked\":{},\"jit\":{}}}",
        ctx.device_name(),
        cache.compiles,
        cache.bundle.hits,
        code.bundled,
        code.linked,
        code.jit
    );
    Ok(if wrong == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
