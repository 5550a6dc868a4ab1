//! Runs every Rust twin of the example kernels (examples/twins/kernels.rs)
//! next to its `.rk` version on the device `RELOK_DEVICE` names and
//! compares the results; exits 1 when one differs.

#[path = "twins/kernels.rs"]
mod kernels;
#[path = "twins/run.rs"]
mod run;

fn main() -> Result<(), relok::Error> {
    let ctx = relok::Context::from_env()?;
    let mut failed = false;
    for outcome in run::all(&ctx)? {
        #[expect(clippy::print_stdout, reason = "an example prints its result")]
        {
            println!("{:<10} {:>4} lines of Rust, {:>4} lines of .rk: {}", outcome.name, outcome.rust_lines, outcome.rk_lines, if outcome.equal { "equal" } else { "DIFFERENT" });
        }
        failed |= !outcome.equal;
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
