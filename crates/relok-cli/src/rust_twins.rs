//! `relok demo --rust`: the Rust twins of the example kernels
//! (`crates/relok/examples/twins/`, `#[relok::kernel]`), each run through
//! the facade next to its `.rk` version on the same device and strategy,
//! the results compared.

#[path = "../../relok/examples/twins/kernels.rs"]
mod kernels;
#[path = "../../relok/examples/twins/run.rs"]
mod run;

use relok_ir::Strategy;

/// Runs every twin on `device` under `strategy`, printing one line (or
/// JSON record) each; whether all equal their `.rk` versions.
pub fn run(device: &str, strategy: Strategy, json: bool) -> Result<bool, String> {
    let ctx = relok::Context::builder().device(device).strategy(strategy).build().map_err(|e| e.to_string())?;
    let outcomes = run::all(&ctx).map_err(|e| e.to_string())?;
    let name = ctx.device_name();
    if !json {
        println!("Rust twins on {name}, strategy {strategy}: each against its .rk version\n");
    }
    for o in &outcomes {
        if json {
            let record = serde_json::json!({
                "rust_twin": o.name, "device": name, "strategy": strategy.name(),
                "equal_to_rk": o.equal, "rust_lines": o.rust_lines, "rk_lines": o.rk_lines,
                "result": o.result,
            });
            println!("{record}");
        } else {
            let verdict = if o.equal { "ok: equal to the .rk version" } else { "DIFFERENT from the .rk version" };
            println!("{:<10} {verdict}  ({} lines of Rust, {} of .rk)", o.name, o.rust_lines, o.rk_lines);
        }
    }
    Ok(outcomes.iter().all(|o| o.equal))
}
