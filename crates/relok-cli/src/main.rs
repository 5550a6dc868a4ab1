//! `relok`: check, format and run kernels; run the demo.

#![expect(clippy::print_stdout, clippy::print_stderr, reason = "a command-line tool prints")]

use clap::{Parser, Subcommand};
use relok_cli::args::{format_buffer, parse_args, parse_dims, ArgValue, Elem};
use relok_cli::{demo, launch, source};
use relok_ir::Strategy;
use relok_runtime::cpu::LaunchConfig;
use relok_runtime::{program, Session};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "relok", version, about = "relok: relocatable, cached GPU kernels")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse and verify a kernel file; exit 1 with the errors if it is invalid.
    Check {
        /// A `.rk` file.
        file: PathBuf,
    },
    /// Print a kernel file in canonical form.
    Fmt {
        /// A `.rk` file.
        file: PathBuf,
        /// Print nothing; exit 1 if the file is not in canonical form.
        #[arg(long)]
        check: bool,
    },
    /// Run one kernel of a file and print its buffer arguments afterwards.
    Run {
        /// A `.rk` file.
        file: PathBuf,
        /// The kernel to launch (may be omitted when the file has one kernel).
        #[arg(long, short)]
        kernel: Option<String>,
        /// Blocks in the grid: `N`, `XxY` or `XxYxZ`.
        #[arg(long, short, default_value = "1")]
        grid: String,
        /// Threads per block: `N`, `XxY` or `XxYxZ`.
        #[arg(long, short, default_value = "1")]
        block: String,
        /// One per kernel parameter, in order: a literal for a scalar;
        /// `[a, b]`, `zeros:N`, `iota:N` or `rand:N[:SEED]` for a buffer.
        #[arg(long = "arg", short = 'a', allow_hyphen_values = true)]
        args: Vec<String>,
        /// Device: `cpu` or `cpu:N`.
        #[arg(long, short, default_value = "cpu")]
        device: String,
        /// Stop the kernel after this many interpreter steps (cpu device).
        #[arg(long)]
        step_budget: Option<u64>,
        /// How host objects' words reach the code: bake, patch or table.
        #[arg(long, short, default_value = "table", value_parser = parse_strategy)]
        strategy: Strategy,
        /// Print one JSON record instead of text.
        #[arg(long)]
        json: bool,
        /// Print whole buffers (otherwise long ones are elided).
        #[arg(long)]
        full: bool,
    },
    /// Measure parse + verify per example and the cpu interpreter's throughput.
    Bench {
        /// Fewer runs and a smaller problem (a smoke test).
        #[arg(long)]
        quick: bool,
        /// One JSON record per measurement.
        #[arg(long)]
        json: bool,
    },
    /// Run the example kernels, check them against Rust and time each step.
    Demo {
        /// Device: `best` (the default), `cpu` or `cpu:N`.
        #[arg(long, short, default_value = "best")]
        device: String,
        /// One JSON record per example.
        #[arg(long)]
        json: bool,
        /// How host objects' words reach the code: bake, patch or table.
        #[arg(long, short, default_value = "table", value_parser = parse_strategy)]
        strategy: Strategy,
    },
    /// Link, optimise and lower one kernel; print the lowered IR and its
    /// frozen manifest (as comments, so the output still parses).
    Lower {
        /// A `.rk` file.
        file: PathBuf,
        /// The kernel (may be omitted when the file has one kernel).
        #[arg(long, short)]
        kernel: Option<String>,
        /// bake (words of this process and the cpu device), patch or table.
        #[arg(long, short, default_value = "table", value_parser = parse_strategy)]
        strategy: Strategy,
    },
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    Strategy::from_name(s).ok_or_else(|| format!("unknown strategy `{s}` (expected bake, patch or table)"))
}

/// The kernel to use: the one named, or the file's only kernel.
fn pick_kernel(src: &source::Source, kernel: Option<String>) -> Result<String, String> {
    if let Some(k) = kernel {
        return Ok(k);
    }
    let names: Vec<&str> = src.module.kernels().map(|(_, f)| f.name.as_str()).collect();
    match names.as_slice() {
        [one] => Ok((*one).to_string()),
        _ => Err(format!("{}: pick a kernel with --kernel (one of: {})", src.file, names.join(", "))),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(message) => {
            eprint!("{message}");
            if !message.ends_with('\n') {
                eprintln!();
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Check { file } => {
            let src = source::load(&file).map_err(|e| e.0)?;
            let kernels = src.module.kernels().count();
            println!("{}: ok ({} functions, {kernels} kernels)", src.file, src.module.funcs.len());
            Ok(ExitCode::SUCCESS)
        }
        Command::Fmt { file, check } => {
            let src = source::load(&file).map_err(|e| e.0)?;
            let canonical = relok_ir::print(&src.module);
            if check {
                if canonical == src.text {
                    return Ok(ExitCode::SUCCESS);
                }
                eprintln!("{}: not in canonical form (run `relok fmt {}`)", src.file, src.file);
                return Ok(ExitCode::FAILURE);
            }
            print!("{canonical}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Lower { file, kernel, strategy } => {
            let src = source::load(&file).map_err(|e| e.0)?;
            let kernel = pick_kernel(&src, kernel)?;
            let session = Session::new();
            let (dev, _) = demo::open_device("cpu")?;
            let compiled = program::compile(&session, &dev, &src.module, &kernel, strategy)
                .map_err(|e| format!("{}: @{kernel}: {e}", src.file))?;
            print!("{}", relok_ir::print(&compiled.lowered.module));
            let manifest = &compiled.lowered.manifest;
            println!("\n; manifest of @{kernel} ({strategy}): {} records, frozen", manifest.len());
            for (rank, r) in manifest.records().iter().enumerate() {
                println!("; [{rank}] {} {} -> {}", r.name(), r.site(), r.target());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { file, kernel, grid, block, args, device, step_budget, strategy, json, full } => {
            let src = source::load(&file).map_err(|e| e.0)?;
            let kernel = pick_kernel(&src, kernel)?;
            let func = src
                .module
                .func_by_name(&kernel)
                .map(|id| &src.module.funcs[id])
                .filter(|f| f.is_kernel())
                .ok_or_else(|| format!("{}: no kernel named @{kernel}", src.file))?;
            let inputs = parse_args(func, &args)?;
            let mut config = LaunchConfig { grid: parse_dims(&grid)?, block: parse_dims(&block)?, ..LaunchConfig::default() };
            if let Some(b) = step_budget {
                config.step_budget = b;
            }
            let (dev, dev_name) = demo::open_device(&device)?;
            let start = std::time::Instant::now();
            let session = Session::new();
            let target = launch::Target { device: &dev, session: &session, strategy };
            let out = launch::run_kernel(&target, &src.module, &kernel, &config, &inputs).map_err(|e| e.to_string())?;
            let elapsed = start.elapsed();
            if json {
                let args: Vec<serde_json::Value> = out
                    .args
                    .iter()
                    .map(|a| match a {
                        ArgValue::Buffer(t, bits) => {
                            serde_json::json!(bits.iter().map(|&b| Elem(*t, b).to_string()).collect::<Vec<_>>())
                        }
                        other => serde_json::json!(other.to_string()),
                    })
                    .collect();
                let record = serde_json::json!({
                    "kernel": kernel, "device": dev_name, "strategy": strategy.name(), "grid": config.grid, "block": config.block,
                    "args": args, "steps": out.stats.steps, "time_us": elapsed.as_secs_f64() * 1e6,
                });
                println!("{record}");
            } else {
                for (&p, a) in func.params.iter().zip(&out.args) {
                    if let ArgValue::Buffer(t, bits) = a {
                        println!("{p} = {}", format_buffer(*t, bits, if full { usize::MAX } else { 32 }));
                    }
                }
                eprintln!(
                    "@{kernel} on {dev_name}: {} threads, {} steps, {:.3} ms",
                    out.stats.threads,
                    out.stats.steps,
                    elapsed.as_secs_f64() * 1e3
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { quick, json } => {
            let (dev, dev_name) = demo::open_device("cpu")?;
            let results = relok_cli::bench::run(&dev, quick)?;
            if !json {
                println!("relok bench on {dev_name} (medians of repeated runs in one process)");
            }
            for m in results {
                if json {
                    println!("{}", serde_json::to_string(&m).map_err(|e| e.to_string())?);
                } else {
                    println!("{:<70} {:>14.1} {} ({} runs)", m.name, m.median, m.unit, m.runs);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { device, json, strategy } => {
            let (dev, dev_name) = demo::open_device(&device)?;
            Ok(if demo::run(&dev, &dev_name, strategy, json) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
    }
}
