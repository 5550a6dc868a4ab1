//! The program of the README's "Use relok from Rust" (kept equal to it by
//! `tests/readme.rs`). `cargo run -p relok --example readme`
#![expect(clippy::print_stdout, reason = "an example prints what it found")]

use relok::{Context, Grid};

/// A host object: the kernel reads it by identity (its path), its bytes
/// delivered at load — editing the table recompiles nothing.
#[relok::host]
static SQUARES: [u32; 16] = [0, 1, 4, 9, 16, 25, 36, 49, 64, 81, 100, 121, 144, 169, 196, 225];

#[relok::kernel]
fn lut_map(x: &[u32], out: &mut [u32]) {
    let i = relok::global_id_x();
    if i < x.len() {
        out[i] = SQUARES[x[i] as usize]; // bounds-checked, like Rust
    }
}

fn main() -> Result<(), relok::Error> {
    let ctx = Context::from_env()?; // RELOK_DEVICE, default `best`
    let input: Vec<u32> = (0..1000).map(|i| i % 16).collect();
    let x = ctx.upload(&input)?; // Buffer<u32>
    let mut out = ctx.zeros::<u32>(input.len())?;
    let stream = ctx.stream();
    lut_map::launch(&stream, Grid::cover(input.len(), 256), &x, &mut out)?; // enqueues
    stream.synchronize()?; // kernel exceptions surface here
    assert_eq!(out.download()?[..4], [0, 1, 4, 9]);

    let bad = ctx.upload(&[3u32, 99])?;
    let mut out = ctx.zeros::<u32>(2)?;
    lut_map::launch(&stream, Grid::cover(2, 256), &bad, &mut out)?;
    let err = stream.synchronize().unwrap_err(); // the Rust message and location
    assert!(err.to_string().ends_with("index out of bounds: the len is 16 but the index is 99"), "{err}");
    println!("on {}: {err}", ctx.device_name());
    Ok(())
}
