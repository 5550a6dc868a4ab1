//! A multi-stream pipeline: four streams each process their own chunk
//! (scale, then add a bias, then square), their launches interleaved on
//! the device; the host reads each chunk back when its stream is done.
//! `cargo run -p relok --example pipeline`
#![expect(clippy::print_stdout, reason = "an example prints what it found")]

use relok::{Context, Grid, Program};
use std::process::ExitCode;

const KERNELS: &str = "
kernel @scale(v0: u32, v1: f32, v2: ptr<global, f32>) {
    v3: u32 = block_id.x
    v4: u32 = block_dim.x
    v5: u32 = thread_id.x
    v6: u32 = mul v3, v4
    v7: u32 = add v6, v5
    v8: bool = lt v7, v0
    if v8 {
        v9: f32 = load v2[v7]
        v10: f32 = mul v9, v1
        store v2[v7], v10
    }
    return
}

kernel @square(v0: u32, v1: ptr<global, f32>, v2: ptr<global, f32>) {
    v3: u32 = block_id.x
    v4: u32 = block_dim.x
    v5: u32 = thread_id.x
    v6: u32 = mul v3, v4
    v7: u32 = add v6, v5
    v8: bool = lt v7, v0
    if v8 {
        v9: f32 = load v1[v7]
        v10: f32 = mul v9, v9
        store v2[v7], v10
    }
    return
}
";

fn main() -> Result<ExitCode, relok::Error> {
    let ctx = Context::from_env()?;
    let program = Program::parse_named("pipeline.rk", KERNELS)?;
    let (scale, square) = (ctx.kernel(&program, "scale")?, ctx.kernel(&program, "square")?);
    let n = 1 << 16;
    let chunks: Vec<Vec<f32>> = (0..4).map(|c| (0..n).map(|i| (c * n + i) as f32 / n as f32).collect()).collect();

    let streams: Vec<_> = chunks.iter().map(|_| ctx.stream()).collect();
    let mut work = Vec::new();
    for (chunk, stream) in chunks.iter().zip(&streams) {
        let mut data = ctx.upload(chunk)?;
        let mut out = ctx.zeros::<f32>(n)?;
        scale.launch(stream, Grid::cover(n, 256), (n as u32, 0.5f32, &mut data))?;
        square.launch(stream, Grid::cover(n, 256), (n as u32, &data, &mut out))?;
        work.push(out);
    }
    let mut wrong = 0;
    for (out, chunk) in work.iter().zip(&chunks) {
        // Waits for this chunk's stream only.
        let got = out.download()?;
        wrong += got.iter().zip(chunk).filter(|&(g, x)| g.to_bits() != ((x * 0.5) * (x * 0.5)).to_bits()).count();
    }
    println!("4 streams x {n} elements on {}: {wrong} wrong", ctx.device_name());
    Ok(if wrong == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
