//! The program of the README's "Use relok from Rust" (kept equal to it by
//! `tests/readme.rs`). `cargo run -p relok --example readme`
#![expect(clippy::print_stdout, reason = "an example prints what it found")]

use relok::{Context, Grid, Program};

const SAXPY: &str = r#"
kernel @saxpy(v0: u32, v1: f32, v2: ptr<global, f32>, v3: ptr<global, f32>) {
    v4: u32 = block_id.x
    v5: u32 = block_dim.x
    v6: u32 = thread_id.x
    v7: u32 = mul v4, v5
    v8: u32 = add v7, v6
    v9: bool = lt v8, v0
    if v9 {
        v10: f32 = load v2[v8]
        v11: f32 = load v3[v8]
        v12: f32 = mul v1, v10
        v13: f32 = add v12, v11
        store v3[v8], v13
    }
    return
}
"#;

fn main() -> Result<(), relok::Error> {
    let ctx = Context::from_env()?;                      // RELOK_DEVICE, default `best`
    let saxpy = ctx.kernel(&Program::parse(SAXPY)?, "saxpy")?;
    let x = ctx.upload(&[1.0f32, 2.0, 3.0, 4.0])?;      // Buffer<f32>
    let mut y = ctx.upload(&[10.0f32; 4])?;
    let stream = ctx.stream();
    saxpy.launch(&stream, Grid::cover(4, 256), (4u32, 2.0f32, &x, &mut y))?;   // enqueues
    stream.synchronize()?;                               // kernel exceptions surface here
    assert_eq!(y.download()?, [12.0, 14.0, 16.0, 18.0]);
    println!("on {}: {:?}", ctx.device_name(), y.download()?);
    Ok(())
}
