//! `relok demo --rust`: the Rust twins of the example kernels
//! (`crates/relok/examples/twins/`, `#[relok::kernel]`), each run through
//! the facade next to its `.rk` version on the same device and strategy,
//! the results compared. `relok bench kernels` times the same twins.

#[path = "../../relok/examples/twins/kernels.rs"]
pub(crate) mod kernels;
#[path = "../../relok/examples/twins/run.rs"]
pub(crate) mod run;

use relok_ir::Strategy;

/// Runs every twin on `device` under `strategy`, printing one line (or
/// JSON record) each; whether all equal their `.rk` versions.
pub fn run(device: &str, strategy: Strategy, json: bool) -> Result<bool, String> {
    let ctx = relok::Context::builder().device(device).strategy(strategy).build().map_err(|e| e.to_string())?;
    let outcomes = run::all(&ctx).map_err(|e| e.to_string())?;
    // The cpu device is the oracle of the others.
    let cpu = relok::Context::builder().device("cpu").strategy(strategy).build().map_err(|e| e.to_string())?;
    let oracle = run::all(&cpu).map_err(|e| e.to_string())?;
    let wgpu = ctx.device_kind() == relok::DeviceKind::Wgpu;
    let same_as_cpu = |o: &run::Outcome| oracle.iter().any(|c| c.name == o.name && o.same_as(c, wgpu));
    let name = ctx.device_name();
    if !json {
        println!("Rust twins on {name}, strategy {strategy}: each against its .rk version\n");
    }
    for o in &outcomes {
        if json {
            let record = serde_json::json!({
                "rust_twin": o.name, "device": name, "strategy": strategy.name(),
                "equal_to_rk": o.equal, "equal_to_cpu": same_as_cpu(o), "rust_lines": o.rust_lines, "rk_lines": o.rk_lines,
                "result": o.result,
            });
            println!("{record}");
        } else {
            let verdict = match (o.equal, same_as_cpu(o)) {
                (true, true) => "ok: equal to the .rk version and to the cpu device".to_owned(),
                (false, _) => "DIFFERENT from the .rk version".to_owned(),
                (true, false) => {
                    let cpu = oracle.iter().find(|c| c.name == o.name);
                    format!("DIFFERENT from the cpu device {}", cpu.map(|c| o.difference(c)).unwrap_or_default())
                }
            };
            println!("{:<10} {verdict}  ({} lines of Rust, {} of .rk)", o.name, o.rust_lines, o.rk_lines);
        }
    }
    Ok(outcomes.iter().all(|o| o.equal && same_as_cpu(o)))
}
