//! Runs every Rust twin of the example kernels (examples/twins/kernels.rs)
//! next to its `.rk` version on the device `RELOK_DEVICE` names, compares
//! the results, and compares the Rust twins' results with the cpu
//! device's (the oracle); exits 1 when one differs.

#[path = "twins/kernels.rs"]
mod kernels;
#[path = "twins/run.rs"]
mod run;

fn main() -> Result<(), relok::Error> {
    let ctx = relok::Context::from_env()?;
    let cpu = relok::Context::builder().device("cpu").build()?;
    let oracle = run::all(&cpu)?;
    let mut failed = false;
    let wgpu = ctx.device_kind() == relok::DeviceKind::Wgpu;
    for outcome in run::all(&ctx)? {
        let cpu = oracle.iter().find(|o| o.name == outcome.name);
        let same_as_cpu = cpu.is_some_and(|o| outcome.same_as(o, wgpu));
        #[expect(clippy::print_stdout, reason = "an example prints its result")]
        {
            println!(
                "{:<10} {:>4} lines of Rust, {:>4} lines of .rk: {}, {}",
                outcome.name,
                outcome.rust_lines,
                outcome.rk_lines,
                if outcome.equal { "equal to the .rk" } else { "DIFFERENT from the .rk" },
                if same_as_cpu { "equal to the cpu device" } else { "DIFFERENT from the cpu device" },
            );
            if let (false, Some(cpu)) = (same_as_cpu, cpu) {
                println!("           {}", outcome.difference(cpu));
            }
        }
        failed |= !outcome.equal || !same_as_cpu;
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
