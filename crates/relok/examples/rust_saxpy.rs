//! saxpy as a Rust kernel: `y[i] = a * x[i] + y[i]`.

#[relok::kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = relok::global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

fn main() -> Result<(), relok::Error> {
    let ctx = relok::Context::from_env()?;
    let n = 1000;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = ctx.upload(&xs)?;
    let mut y = ctx.upload(&vec![1.0f32; n])?;
    let s = ctx.stream();
    saxpy::launch(&s, relok::Grid::cover(n, 256), 2.0, &x, &mut y)?;
    s.synchronize()?;
    let got = y.download()?;
    let want: Vec<f32> = xs.iter().map(|x| 2.0 * x + 1.0).collect();
    #[expect(clippy::print_stdout, reason = "an example prints its result")]
    {
        println!("saxpy on {}: {}", ctx.device_name(), if got == want { "ok" } else { "WRONG" });
    }
    if got != want {
        std::process::exit(1);
    }
    Ok(())
}
