//! `relok`: check, format and run kernels; run the demo.

#![expect(clippy::print_stdout, clippy::print_stderr, reason = "a command-line tool prints")]

use clap::{Parser, Subcommand};
use relok_cli::args::{ArgValue, Elem, format_buffer, parse_args, parse_dims};
use relok_cli::bench::BenchCommand;
use relok_cli::{cachecmd, demo, source};
use relok_compiler::artifact::CodeTarget;
use relok_ir::Strategy;
use relok_runtime::{Device, KernelCache, Session};
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
    /// List the devices `--device` can name on this machine, and which one
    /// `best` picks.
    Devices {
        /// One JSON record per device.
        #[arg(long)]
        json: bool,
    },
    /// Differential testing: random well-typed kernels run on the cpu
    /// device and on every other listed device under each strategy; a
    /// difference is minimised and written as a file test (exit 1).
    Fuzz {
        /// Devices to compare, `cpu` first (the oracle): `cpu,wgpu[,cuda]`.
        #[arg(long, default_value = "cpu,wgpu", value_delimiter = ',')]
        devices: Vec<String>,
        /// Kernels to generate.
        #[arg(long, default_value_t = 100)]
        count: u64,
        /// The first kernel's seed (kernel i has seed + i).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Random steps per kernel.
        #[arg(long, default_value_t = 24)]
        steps: usize,
        /// Where failing cases are written as file tests.
        #[arg(long, default_value = "fuzz-failures")]
        out_dir: PathBuf,
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
        /// `[a, b]`, `zeros:N`, `iota:N`, `rand:N[:SEED]` or `@FILE` (a
        /// `.npy` file, else raw little-endian bytes) for a buffer of at
        /// most 256 MiB.
        #[arg(long = "arg", short = 'a', allow_hyphen_values = true)]
        args: Vec<String>,
        /// Device: `cpu[:N]`, `cuda[:N]`, `wgpu[:N]` (`RELOK_WGPU_ADAPTER`
        /// narrows the adapters by name or backend) or `best`.
        #[arg(long, short, default_value = "cpu")]
        device: String,
        /// Stop the kernel after this many interpreter steps (cpu device).
        #[arg(long)]
        step_budget: Option<u64>,
        /// How host objects' words reach the code: bake, patch or table
        /// (not patch on wgpu).
        #[arg(long, short, default_value = "table", value_parser = parse_strategy)]
        strategy: Strategy,
        /// Print one JSON record instead of text.
        #[arg(long)]
        json: bool,
        /// Print whole buffers (otherwise long ones are elided).
        #[arg(long)]
        full: bool,
        /// After the run, write every buffer argument to DIR as a `.npy`
        /// file named by its parameter (`v2.npy`); DIR is created.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Measure parse + verify per example and the cpu interpreter's
    /// throughput; `bench cache`: the kernel cache against compiling.
    Bench {
        /// Fewer runs and a smaller problem (a smoke test).
        #[arg(long, global = true)]
        quick: bool,
        /// JSON: one record per measurement (`bench cache`: one record).
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        what: Option<BenchCommand>,
    },
    /// Run the example kernels, check them against Rust and time each step.
    Demo {
        /// Device: `best` (the default: a CUDA GPU, else a wgpu GPU, else the
        /// cpu), `cpu[:N]`, `cuda[:N]` or `wgpu[:N]`.
        #[arg(long, short, default_value = "best")]
        device: String,
        /// One JSON record per example.
        #[arg(long)]
        json: bool,
        /// How host objects' words reach the code: bake, patch or table.
        #[arg(long, short, default_value = "table", value_parser = parse_strategy)]
        strategy: Strategy,
        /// Then run the Rust twins of the examples (`#[relok::kernel]`),
        /// each compared with its .rk version.
        #[arg(long)]
        rust: bool,
    },
    /// Inspect and maintain the artifact store (RELOK_CACHE_DIR, else
    /// $XDG_CACHE_HOME/relok or ~/.cache/relok).
    Cache {
        #[command(subcommand)]
        command: CacheCommand,
    },
    /// Compile every kernel of the files into a bundle that an application
    /// ships (load it with `Context::load_static_bundle` or `relok cache import`).
    Precompile {
        /// `.rk` files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The bundle to write.
        #[arg(long, short)]
        out: PathBuf,
        /// Strategies, comma-separated: patch, table (bake cannot be precompiled).
        #[arg(long, short, default_value = "patch,table", value_delimiter = ',', value_parser = parse_strategy)]
        strategy: Vec<Strategy>,
        /// Targets, comma-separated.
        #[arg(long, short, default_value = "cpu", value_delimiter = ',', value_parser = parse_target)]
        target: Vec<CodeTarget>,
        /// Also assemble each PTX artifact with `ptxas` (RELOK_PTXAS or the
        /// PATH) into cubins for these GPUs, comma-separated (`sm_80,sm_90`):
        /// a GPU of one of them then loads machine code from the bundle and
        /// compiles nothing.
        #[arg(long, value_delimiter = ',', value_parser = parse_sm)]
        cubin: Vec<u32>,
    },
    /// Compile one kernel for a target and write its code (PTX, or the
    /// cpu device's lowered IR); `--manifest` prints the frozen manifest.
    Compile {
        /// A `.rk` file.
        file: PathBuf,
        /// The kernel (may be omitted when the file has one kernel).
        #[arg(long, short)]
        kernel: Option<String>,
        /// `ptx` (sm_90), `ptx-smNN`, `wgsl` (table, bake) or `cpu`.
        #[arg(long, short, default_value = "ptx", value_parser = parse_target)]
        target: CodeTarget,
        /// patch or table (bake needs a device's words: use `relok lower`).
        #[arg(long, short, default_value = "table", value_parser = parse_strategy)]
        strategy: Strategy,
        /// Write the code here instead of standard output.
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Print the frozen manifest (to standard error when the code goes
        /// to standard output).
        #[arg(long)]
        manifest: bool,
        /// Compile without checked mode's checks (GPU code: no bounds,
        /// loop or read-only checks; see docs/cuda.md, "Checked mode").
        #[arg(long)]
        unchecked: bool,
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

#[derive(Subcommand, Debug)]
enum CacheCommand {
    /// Counters summed over every process that used the store, and its size.
    Stats {
        /// One JSON record.
        #[arg(long)]
        json: bool,
    },
    /// One line per entry: key, size, last use, kernel.
    List {
        /// One JSON record per entry.
        #[arg(long)]
        json: bool,
    },
    /// Read every entry back as the loader would; exit 1 if any is invalid.
    Verify {
        /// Also recompile each entry from the source it carries and compare
        /// every byte: proves the code is what its key names.
        #[arg(long)]
        rebuild: bool,
    },
    /// Collect now: other builds' folders, stale temporary files, LRU entries over the cap.
    Gc,
    /// Remove every entry.
    Clear,
    /// Copy a bundle's artifacts into the store, each recompiled from its
    /// source and compared byte for byte first (a forged one rejects the
    /// whole bundle, exit 1).
    Import {
        /// A bundle made by `relok precompile`.
        bundle: PathBuf,
        /// Skip the rebuild: import artifacts whose framing and checksum
        /// pass (a bundle from a source trusted as much as the store).
        #[arg(long)]
        trust: bool,
    },
    /// Make a key pair for the remote cache: DIR/relok-remote.key (the
    /// signing key, mode 0600: for writers) and DIR/relok-remote.pub (for
    /// readers).
    Keygen {
        /// The folder (created if missing; existing keys are never replaced).
        dir: PathBuf,
    },
    /// Upload every valid local entry (artifacts and binary archives) to
    /// the remote, signed (RELOK_REMOTE and RELOK_REMOTE_SIGNING_KEY).
    Push,
    /// Fetch from the remote what bundles or kernel files need, into the
    /// local store (RELOK_REMOTE and a key).
    Pull {
        /// `.rk` files: every kernel, for each target and strategy.
        files: Vec<PathBuf>,
        /// Bundles made by `relok precompile`: every artifact they hold.
        #[arg(long)]
        bundle: Vec<PathBuf>,
        /// Strategies, comma-separated (for `.rk` files).
        #[arg(long, short, default_value = "patch,table", value_delimiter = ',', value_parser = parse_strategy)]
        strategy: Vec<Strategy>,
        /// Targets, comma-separated (for `.rk` files).
        #[arg(long, short, default_value = "cpu", value_delimiter = ',', value_parser = parse_target)]
        target: Vec<CodeTarget>,
    },
}

fn parse_target(s: &str) -> Result<CodeTarget, String> {
    CodeTarget::from_name(s).ok_or_else(|| format!("unknown target `{s}` (expected cpu, ptx, ptx-smNN or wgsl)"))
}

/// `sm_90` (or `90`) → 90.
fn parse_sm(s: &str) -> Result<u32, String> {
    s.strip_prefix("sm_")
        .unwrap_or(s)
        .parse::<u32>()
        .ok()
        .filter(|&n| (20..1000).contains(&n))
        .ok_or_else(|| format!("bad GPU `{s}` (expected sm_NN, e.g. sm_90)"))
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

/// The kernel cache the environment asks for; a store that was refused is
/// a warning and the run goes on without it.
fn kernel_cache() -> KernelCache {
    let cache = KernelCache::from_env();
    if let Some(w) = cache.warning() {
        eprintln!("warning: {w}");
    }
    cache
}

fn main() -> ExitCode {
    let started = std::time::Instant::now();
    let level = match std::env::var("RELOK_LOG").as_deref() {
        Ok("error") => tracing::Level::ERROR,
        Ok("info") => tracing::Level::INFO,
        Ok("debug") => tracing::Level::DEBUG,
        Ok("trace") => tracing::Level::TRACE,
        _ => tracing::Level::WARN,
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .without_time()
        .with_target(false)
        .init();
    // `--json` asks for JSON on failure too, usage errors included.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && std::env::args().any(|a| a == "--json") => {
            json_error(&e.render().to_string());
            let _ = e.print();
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    let json = wants_json(&cli.command);
    match run(cli, started) {
        Ok(code) => code,
        Err(message) => {
            if json {
                json_error(&message);
            }
            eprint!("{message}");
            if !message.ends_with('\n') {
                eprintln!();
            }
            ExitCode::FAILURE
        }
    }
}

/// `relok fuzz`: prints one line per mismatch and a summary; exit 1 when
/// a device differed from the cpu device.
fn fuzz_command(
    devices: &[String],
    count: u64,
    seed: u64,
    steps: usize,
    out_dir: &std::path::Path,
) -> Result<ExitCode, String> {
    if devices.first().map(String::as_str) != Some("cpu") {
        return Err("--devices must start with cpu, the oracle (e.g. cpu,wgpu)".to_owned());
    }
    let cpu = Device::open("cpu").map_err(|e| e.to_string())?;
    let others =
        devices[1..].iter().map(|d| Device::open(d).map_err(|e| format!("{d}: {e}"))).collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = others.iter().map(Device::name).collect();
    let mut failed = 0;
    for i in 0..count {
        if i > 0 && i % 50 == 0 {
            // Progress on stderr, so that a campaign stopped by a time
            // limit still says how far it got.
            eprintln!("{i} of {count} kernels run (seeds {seed}..{}), {failed} differed", seed.wrapping_add(i));
        }
        let Some(m) = relok_cli::fuzz::run_case(&cpu, &others, seed.wrapping_add(i), steps) else { continue };
        failed += 1;
        std::fs::create_dir_all(out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        let path = out_dir.join(format!("run_fuzz_{}.rk", m.seed));
        std::fs::write(&path, &m.file_test).map_err(|e| format!("{}: {e}", path.display()))?;
        println!(
            "seed {}: {} differs from cpu after {} steps: {} (written to {})",
            m.seed,
            m.on,
            m.steps,
            m.what,
            path.display()
        );
    }
    println!(
        "{count} kernels (seeds {seed}..{}), {steps} steps each, cpu against {}: {failed} differed",
        seed.wrapping_add(count),
        names.join(", ")
    );
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Whether the command prints JSON records (and so one on failure).
fn wants_json(command: &Command) -> bool {
    match command {
        Command::Devices { json }
        | Command::Run { json, .. }
        | Command::Bench { json, .. }
        | Command::Demo { json, .. } => *json,
        Command::Cache { command: CacheCommand::Stats { json } | CacheCommand::List { json } } => *json,
        _ => false,
    }
}

/// One JSON record on standard output for a failure: `{"error": "..."}`
/// (the text also goes to standard error). A closed pipe is not an error.
fn json_error(message: &str) {
    use std::io::Write;
    let record = serde_json::json!({ "error": message.trim_end() });
    let _ = writeln!(std::io::stdout().lock(), "{record}");
}

/// `Ok(false)` when standard output was closed by its reader (`relok run …
/// | head`): the caller stops writing and exits quietly.
fn quiet_on_closed_pipe(r: std::io::Result<()>) -> Result<bool, String> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(format!("cannot write standard output: {e}")),
    }
}

fn run(cli: Cli, started: std::time::Instant) -> Result<ExitCode, String> {
    match cli.command {
        Command::Devices { json } => {
            let devices = relok_cli::devices::list();
            for d in &devices {
                if json {
                    println!("{}", serde_json::to_string(d).map_err(|e| e.to_string())?);
                } else {
                    println!("{:<8} {}{}", d.spec, d.what, if d.best { "  (best)" } else { "" });
                }
            }
            Ok(ExitCode::SUCCESS)
        }
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
        Command::Compile { file, kernel, target, strategy, out, manifest, unchecked } => {
            if strategy == Strategy::Bake {
                return Err("relok compile: bake needs one process's words; use patch or table (or `relok lower --strategy bake`)".into());
            }
            let src = source::load(&file).map_err(|e| e.0)?;
            let kernel = pick_kernel(&src, kernel)?;
            let stencil = relok_compiler::stencil::Stencil::new(&src.module, &kernel)
                .map_err(|e| format!("{}: @{kernel}: {e}", src.file))?;
            let artifact = relok_compiler::artifact::compile(
                &stencil,
                target,
                strategy,
                relok_compiler::artifact::CompileOptions { checked: !unchecked, ..Default::default() },
                None,
            )
            .map_err(|e| format!("{}: @{kernel}: {e}", src.file))?;
            let mut text = String::new();
            if manifest {
                text.push_str(&format!("; manifest of @{kernel} ({strategy}): {} records\n", artifact.manifest.len()));
                for (rank, r) in artifact.manifest.records().iter().enumerate() {
                    text.push_str(&format!("; [{rank}] {} {} -> {}\n", r.name(), r.site(), r.target()));
                }
            }
            match out {
                Some(path) => {
                    cachecmd::write_atomically(&path, &artifact.code)?;
                    print!("{text}");
                }
                None => {
                    eprint!("{text}");
                    print!("{}", String::from_utf8_lossy(&artifact.code));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Lower { file, kernel, strategy } => {
            let src = source::load(&file).map_err(|e| e.0)?;
            let kernel = pick_kernel(&src, kernel)?;
            let session = Session::new();
            let dev = relok_runtime::cpu::CpuDevice::new(0);
            let lowered = KernelCache::uncached()
                .artifact(&session, &dev, &src.module, &kernel, CodeTarget::Cpu, strategy)
                .and_then(|a| Ok(a.lowered()?))
                .map_err(|e| format!("{}: @{kernel}: {e}", src.file))?;
            print!("{}", relok_ir::print(&lowered.module));
            let manifest = &lowered.manifest;
            println!("\n; manifest of @{kernel} ({strategy}): {} records, frozen", manifest.len());
            for (rank, r) in manifest.records().iter().enumerate() {
                println!("; [{rank}] {} {} -> {}", r.name(), r.site(), r.target());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { file, kernel, grid, block, args, device, step_budget, strategy, json, full, out_dir } => {
            let src = source::load(&file).map_err(|e| e.0)?;
            let kernel = pick_kernel(&src, kernel)?;
            let func = src
                .module
                .func_by_name(&kernel)
                .map(|id| &src.module.funcs[id])
                .filter(|f| f.is_kernel())
                .ok_or_else(|| format!("{}: no kernel named @{kernel}", src.file))?;
            let inputs = parse_args(func, &args)?;
            let mut grid = relok::Grid::new(parse_dims(&grid)?, parse_dims(&block)?);
            if let Some(b) = step_budget {
                grid = grid.with_step_budget(b);
            }
            let ctx =
                relok::Context::builder().device(&device).strategy(strategy).build().map_err(|e| e.to_string())?;
            // A store that was refused is a warning; the run goes on without it.
            if let Some(w) = ctx.cache_warning() {
                eprintln!("warning: {w}");
            }
            let dev_name = ctx.device_name().to_owned();
            let start = std::time::Instant::now();
            // The module is verified already (`source::load`): the facade's
            // program of it, loaded by its artifact key.
            let program = relok::Program::from_module(src.module.clone().into_module()).map_err(|e| e.to_string())?;
            let out = relok_cli::run::run(&ctx, &program, &kernel, grid, &inputs).map_err(|e| e.to_string())?;
            let elapsed = start.elapsed();
            let mut written = Vec::new();
            if let Some(dir) = &out_dir {
                std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                for (&p, a) in func.params.iter().zip(&out.args) {
                    if let ArgValue::Buffer(t, bits) = a {
                        let path = dir.join(format!("{p}.npy"));
                        std::fs::write(&path, relok_cli::args::npy::encode(*t, bits))
                            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                        written.push(path.display().to_string());
                    }
                }
            }
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
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
                    "kernel": kernel, "device": dev_name, "strategy": strategy.name(), "grid": grid.blocks, "block": grid.threads,
                    "args": args, "steps": out.stats.steps, "time_us": elapsed.as_secs_f64() * 1e6,
                    "compile_us": out.compile_us, "cache": ctx.cache_stats(), "out_files": written,
                });
                if !quiet_on_closed_pipe(writeln!(stdout, "{record}"))? {
                    return Ok(ExitCode::SUCCESS);
                }
            } else {
                for (&p, a) in func.params.iter().zip(&out.args) {
                    if let ArgValue::Buffer(t, bits) = a {
                        let text = format_buffer(*t, bits, if full { usize::MAX } else { 32 });
                        if !quiet_on_closed_pipe(writeln!(stdout, "{p} = {text}"))? {
                            return Ok(ExitCode::SUCCESS);
                        }
                    }
                }
                if !quiet_on_closed_pipe(stdout.flush())? {
                    return Ok(ExitCode::SUCCESS);
                }
                let st = ctx.cache_stats();
                let from = if st.compiles > 0 { "compiled" } else { "from the artifact store" };
                eprintln!(
                    "@{kernel} on {dev_name}: {} threads, {} steps, {:.3} ms (kernel {from}: {:.0} µs)",
                    out.stats.threads,
                    out.stats.steps,
                    elapsed.as_secs_f64() * 1e3,
                    out.compile_us
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { quick, json, what } => {
            relok_cli::bench::run(what, quick, json, started)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Fuzz { devices, count, seed, steps, out_dir } => fuzz_command(&devices, count, seed, steps, &out_dir),
        Command::Demo { device, json, strategy, rust } => {
            let dev = Device::open(&device).map_err(|e| e.to_string())?;
            let dev_name = dev.name();
            let cache = kernel_cache();
            let mut ok = demo::run(&dev, &dev_name, strategy, json, &cache);
            if rust {
                drop(dev);
                if !json {
                    println!();
                }
                ok &= relok_cli::rust_twins::run(&device, strategy, json)?;
            }
            Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Cache { command } => cache_command(command),
        Command::Precompile { files, out, strategy, target, cubin } => {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").map_err(|e| e.to_string())?,
            );
            let mut progress = |done: usize, total: usize, label: &str| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(label.to_owned());
            };
            let (bytes, items) = cachecmd::precompile(&files, &target, &strategy, &cubin, &mut progress)?;
            bar.finish_and_clear();
            cachecmd::write_atomically(&out, &bytes)?;
            println!("{}: {} artifacts, {} bytes", out.display(), items.len(), bytes.len());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn cache_command(command: CacheCommand) -> Result<ExitCode, String> {
    if let CacheCommand::Keygen { dir } = &command {
        let (key, public) = relok_cache::remote::keys::keygen(dir).map_err(|e| e.to_string())?;
        println!("signing key  {} (writers: RELOK_REMOTE_SIGNING_KEY; keep it secret)", key.display());
        println!("public key   {} (readers: RELOK_REMOTE_PUBLIC_KEY)", public.display());
        return Ok(ExitCode::SUCCESS);
    }
    let store = cachecmd::open_store()?;
    match command {
        CacheCommand::Stats { json } => {
            let r = cachecmd::stats(&store);
            if json {
                println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
            } else {
                let l = &r.lifetime;
                println!("artifact store  {}", r.dir);
                println!("compiler        {}", r.compiler);
                println!("entries         {} ({} bytes of {} allowed)", r.entries, r.bytes, r.max_bytes);
                println!("hits            {}", l.hits);
                println!("misses          {}", l.misses);
                println!("compiles        {}", l.compiles);
                println!("bytes read      {}", l.bytes_read);
                println!("bytes written   {}", l.bytes_written);
                println!("evictions       {}", l.evictions);
                println!("corrupt         {} (each rebuilt and replaced)", l.corrupt);
                println!("write errors    {}", l.write_errors);
                println!("remote          {}", r.remote_config);
                let rs = &r.remote;
                if !rs.is_zero() {
                    println!(
                        "remote tier     hits {}, misses {}, rejected {}, errors {}; {} bytes read, {} entries ({} bytes) written, {} dropped; mean lookup {:.0} µs",
                        rs.hits,
                        rs.misses,
                        rs.rejected,
                        rs.errors,
                        rs.bytes_read,
                        rs.writes,
                        rs.bytes_written,
                        rs.dropped,
                        rs.get_us as f64 / rs.lookups().max(1) as f64
                    );
                }
                for a in &r.binary {
                    let l = &a.lifetime;
                    // wgpu folders hold one pipeline-cache blob; cuda ones cubins.
                    let (what, made) = if a.name.starts_with("wgpu-") {
                        ("pipeline-cache blobs", "saved")
                    } else {
                        ("cubins", "linked")
                    };
                    println!(
                        "binary archive  {}: {} {what} ({} bytes); hits {}, misses {}, {made} {}, evictions {}, corrupt {}",
                        a.name, a.entries, a.bytes, l.hits, l.misses, l.compiles, l.evictions, l.corrupt
                    );
                    if !a.remote.is_zero() {
                        let rs = &a.remote;
                        println!(
                            "                remote: hits {}, misses {}, rejected {}, errors {}, {} written, {} dropped",
                            rs.hits, rs.misses, rs.rejected, rs.errors, rs.writes, rs.dropped
                        );
                    }
                }
            }
        }
        CacheCommand::List { json } => {
            for e in cachecmd::list(&store) {
                if json {
                    println!("{}", serde_json::to_string(&e).map_err(|e| e.to_string())?);
                } else {
                    println!("{}  {:>8} B  {:>8} s ago  {}", e.key, e.bytes, e.age_s, e.what);
                }
            }
        }
        CacheCommand::Verify { rebuild } => {
            let (n, bad) = cachecmd::verify(&store, rebuild);
            for (key, why) in &bad {
                println!("{key}: {why}");
            }
            println!("{n} entries, {} invalid", bad.len());
            if !bad.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
        }
        // Both fail (exit 1) when they leave something behind, and say what.
        CacheCommand::Gc => return Ok(cachecmd::gc(&store)),
        CacheCommand::Clear => return Ok(cachecmd::clear(&store)),
        CacheCommand::Import { bundle, trust } => {
            let n = cachecmd::import(&store, &bundle, !trust)?;
            println!("{n} artifacts imported into {}", store.dir().display());
        }
        CacheCommand::Keygen { .. } => {}
        CacheCommand::Push => {
            let mut failed = false;
            for (dir, r) in cachecmd::push(&store)? {
                println!("{dir}: {} entries ({} bytes) pushed", r.pushed, r.bytes);
                for s in &r.skipped {
                    eprintln!("not pushed (invalid): {s}");
                    failed = true;
                }
            }
            if failed {
                return Ok(ExitCode::FAILURE);
            }
        }
        CacheCommand::Pull { files, bundle, strategy, target } => {
            if files.is_empty() && bundle.is_empty() {
                return Err("relok cache pull: name kernel files or --bundle FILE".into());
            }
            let (n, r) = cachecmd::pull(store, &bundle, &files, &target, &strategy)?;
            println!(
                "{n} artifacts: {} already local, {} fetched, {} not in the remote, {} rejected, {} errors",
                r.local, r.fetched, r.missing, r.rejected, r.errors
            );
            if r.errors > 0 {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
