//! y = a·x + y on the device `RELOK_DEVICE` names (default: the best one
//! found), checked against plain Rust. `cargo run -p relok --example saxpy`
#![expect(clippy::print_stdout, reason = "an example prints what it found")]

use relok::{Context, Grid, Program};
use std::process::ExitCode;

const SAXPY: &str = include_str!("../../../examples/saxpy.rk");

fn main() -> Result<ExitCode, relok::Error> {
    let ctx = Context::from_env()?;
    let saxpy = ctx.kernel(&Program::parse_named("examples/saxpy.rk", SAXPY)?, "saxpy")?;

    let n = 1 << 20;
    let a = 2.5f32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let y: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();
    let dx = ctx.upload(&x)?;
    let mut dy = ctx.upload(&y)?;

    let stream = ctx.stream();
    saxpy.launch(&stream, Grid::cover(n, 256), (n as u32, a, &dx, &mut dy))?;
    stream.synchronize()?;
    let got = dy.download()?;

    let wrong = got.iter().zip(x.iter().zip(&y)).filter(|&(g, (x, y))| g.to_bits() != (a * x + y).to_bits()).count();
    println!("saxpy of {n} elements on {}: {wrong} wrong", ctx.device_name());
    Ok(if wrong == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
