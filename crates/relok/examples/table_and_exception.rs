//! A kernel that reads a constant table (a host value: relocated, its bytes
//! delivered to the device at load) and throws when it meets a negative
//! input: the exception comes back at the stream's synchronisation with
//! its message, block and thread, and the stream goes on.
//! `cargo run -p relok --example table_and_exception`
#![expect(clippy::print_stdout, reason = "an example prints what it found")]

use relok::{Context, Error, Grid, Program};
use std::process::ExitCode;

const KERNEL: &str = r#"
import fn @relok_throw(v0: word)

const @squares: [i32; 8] = [0, 1, 4, 9, 16, 25, 36, 49]

kernel @square_digits(v0: u32, v1: ptr<global, i32>, v2: ptr<global, i32>) {
    v3: u32 = block_id.x
    v4: u32 = block_dim.x
    v5: u32 = thread_id.x
    v6: u32 = mul v3, v4
    v7: u32 = add v6, v5
    v8: bool = lt v7, v0
    if v8 {
        v9: i32 = load v1[v7]
        v10: i32 = const 0
        v11: bool = lt v9, v10
        if v11 {
            v12: word = ref "negative input"
            call @relok_throw(v12)
            return
        }
        v13: word = ref @squares
        v14: ptr<global, i32> = wordptr v13
        v15: i32 = const 8
        v16: i32 = rem v9, v15
        v17: i32 = load v14[v16]
        store v2[v7], v17
    }
    return
}
"#;

fn main() -> Result<ExitCode, Error> {
    let ctx = Context::from_env()?;
    let kernel = ctx.kernel(&Program::parse_named("square_digits.rk", KERNEL)?, "square_digits")?;
    let stream = ctx.stream();

    let input: Vec<i32> = (0..1000).collect();
    let x = ctx.upload(&input)?;
    let mut out = ctx.zeros::<i32>(input.len())?;
    kernel.launch(&stream, Grid::cover(input.len(), 128), (input.len() as u32, &x, &mut out))?;
    stream.synchronize()?;
    let good = out.download()? == input.iter().map(|v| (v % 8) * (v % 8)).collect::<Vec<_>>();

    let mut bad = input.clone();
    bad[300] = -1;
    let x = ctx.upload(&bad)?;
    kernel.launch(&stream, Grid::cover(bad.len(), 128), (bad.len() as u32, &x, &mut out))?;
    let thrown = match stream.synchronize() {
        Err(Error::Exception { message, block, thread, .. }) => {
            println!("caught at synchronisation: {message} (block {block:?}, thread {thread:?})");
            message == "negative input" && block == [2, 0, 0] && thread == [44, 0, 0]
        }
        other => {
            println!("expected an exception, got {other:?}");
            false
        }
    };
    // The stream is usable after the exception.
    stream.synchronize()?;
    println!("table lookups on {}: {}", ctx.device_name(), if good { "correct" } else { "WRONG" });
    Ok(if good && thrown { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
