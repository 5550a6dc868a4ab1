//! `relok demo`: runs every example on a device, checks each result against
//! its Rust reference, and shows what each computed and how long each step
//! took. With `--json`, one record per example on its own line, so runs on
//! two devices can be compared mechanically.
//!
//! Kernels come through the kernel cache: a second run in a new process
//! finds them in the artifact store and compiles nothing; each example says
//! where its kernel came from and the last line counts the compiles.

use crate::args::{ArgValue, format_buffer, parse_args};
use crate::examples::{EXAMPLES, Example};
use crate::launch::{RunError, Target};
use relok_ir::Strategy;
use relok_runtime::ProgramError;
use relok_runtime::{CacheStats, KernelCache, Session};

use relok_runtime::LaunchConfig;
use relok_runtime::{Device, DeviceMemory};
use std::time::Instant;

/// What one example did.
#[derive(Debug)]
pub struct Outcome {
    /// The example.
    pub example: &'static Example,
    /// Its arguments after the launch.
    pub args: Vec<ArgValue>,
    /// Whether they equal the reference.
    pub matches: bool,
    /// Steps and their times in microseconds, in order.
    pub times_us: Vec<(&'static str, f64)>,
    /// The exception the launch ended with, if any.
    pub exception: Option<String>,
    /// Where the compiled kernel came from: `compiled`, `remote`,
    /// `artifact store`, `bundle` or `memory`.
    pub source: &'static str,
}

/// Which tier served a compile, from the cache's counters before and after.
pub fn served_by(before: &CacheStats, after: &CacheStats) -> &'static str {
    if after.compiles > before.compiles {
        "compiled"
    } else if after.remote.hits > before.remote.hits {
        "remote"
    } else if after.store.hits > before.store.hits {
        "artifact store"
    } else if after.bundle.hits > before.bundle.hits {
        "bundle"
    } else {
        "memory"
    }
}

/// Runs one example; an error is already rendered.
pub fn run_example(target: &Target<'_>, example: &'static Example) -> Result<Outcome, String> {
    let mut times_us = Vec::new();
    let mut lap = {
        let mut t = Instant::now();
        move |name: &'static str, times: &mut Vec<(&'static str, f64)>| {
            times.push((name, t.elapsed().as_secs_f64() * 1e6));
            t = Instant::now();
        }
    };
    let module = relok_ir::parse(example.source).map_err(|e| format!("{}: {e}", example.file))?;
    lap("parse", &mut times_us);
    let module = relok_ir::VerifiedModule::new(module)
        .map_err(|e| crate::diag::render_verify(example.file, example.source, &e))?;
    lap("verify", &mut times_us);
    let kernel = module
        .func_by_name(example.kernel)
        .map(|id| &module.funcs[id])
        .ok_or_else(|| format!("{}: no kernel @{}", example.file, example.kernel))?;
    let inputs = parse_args(kernel, example.args)?;
    lap("inputs", &mut times_us);
    let config = LaunchConfig { grid: example.grid, block: example.block, ..LaunchConfig::default() };
    let before = target.cache.stats();
    let prepared = crate::launch::prepare(target, &module, example.kernel)
        .map_err(|e| format!("{}: @{}: {e}", example.file, example.kernel))?;
    let source = served_by(&before, &target.cache.stats());
    lap("compile+load", &mut times_us);
    let mut buffers = Vec::new();
    let outcome = crate::launch::run_prepared(target, &prepared, &config, &inputs, &mut buffers);
    for b in buffers {
        let _ = target.device.free_bytes(b);
    }
    lap("launch", &mut times_us);
    let out = match (outcome, example.exception) {
        (Err(RunError::Program(e @ ProgramError::Exception { .. })), Some(want)) => {
            let text = e.to_string();
            let matches = matches!(&e, ProgramError::Exception { message, .. } if message == want);
            return Ok(Outcome { example, args: inputs, matches, times_us, exception: Some(text), source });
        }
        (Ok(_), Some(want)) => return Err(format!("{}: expected the exception `{want}`", example.file)),
        (Err(e), _) => return Err(e.to_string()),
        (Ok(out), None) => out,
    };
    let expected = (example.reference)(&inputs);
    lap("reference", &mut times_us);
    let matches = example.tolerance.accepts(&out.args, &expected);
    Ok(Outcome { example, matches, args: out.args, times_us, exception: None, source })
}

/// Runs the demo, printing as it goes; returns whether every example matched.
pub fn run(device: &Device, device_name: &str, strategy: Strategy, json: bool, cache: &KernelCache) -> bool {
    let mut all_ok = true;
    let mut sources: Vec<&'static str> = Vec::new();
    let session = Session::new();
    let target = Target { device, session: &session, cache, strategy };
    if !json {
        println!(
            "relok demo on {device_name}, strategy {strategy}: {} examples, each checked against a Rust reference\n",
            EXAMPLES.len()
        );
    }
    for example in EXAMPLES {
        match run_example(&target, example) {
            Ok(o) => {
                all_ok &= o.matches;
                sources.push(o.source);
                if json {
                    println!("{}", to_json(&o, device_name, strategy));
                } else {
                    print_outcome(&o);
                }
            }
            Err(e) => {
                all_ok = false;
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"example": example.name, "device": device_name, "strategy": strategy.name(), "error": e})
                    );
                } else {
                    println!("{:<10} FAILED\n{e}", example.name);
                }
            }
        }
    }
    let n = |what: &str| sources.iter().filter(|s| **s == what).count();
    // The summary counts the remote writes of this run: wait for them (at
    // most the remote's flush time limit).
    if let Some(s) = cache.store() {
        s.flush_remote();
    }
    let store = match cache.store() {
        Some(s) => format!("artifact store {}", s.dir().display()),
        None => cache.warning().unwrap_or("no artifact store (RELOK_CACHE=off)").to_owned(),
    };
    if json {
        let summary = serde_json::json!({
            "compiled": n("compiled"), "artifact_store": n("artifact store"), "from_remote": n("remote"), "store": store,
            "remote": cache.stats().remote, "archive_remote": device.archive().map(relok_cache::Store::remote_stats),
        });
        println!("{}", serde_json::json!({ "summary": summary }));
    } else {
        println!(
            "kernels: {} compiled, {} from the artifact store, {} from the remote, {} from memory or bundles ({store})",
            n("compiled"),
            n("artifact store"),
            n("remote"),
            n("memory") + n("bundle")
        );
    }
    all_ok
}

fn print_outcome(o: &Outcome) {
    let ex = o.example;
    let verdict = if o.matches { "ok: matches the Rust reference" } else { "MISMATCH with the Rust reference" };
    println!("{:<10} {}  grid {:?} block {:?}  {verdict}", ex.name, ex.file, ex.grid, ex.block);
    match (&o.exception, &o.args[ex.output]) {
        (Some(e), _) => println!("           raised: {e}"),
        (None, ArgValue::Buffer(elem, bits)) => println!("           result: {}", format_buffer(*elem, bits, 8)),
        (None, _) => {}
    }
    let steps: Vec<String> = o.times_us.iter().map(|(name, us)| format!("{name} {us:.0} µs")).collect();
    println!("           time:   {}  (kernel: {})\n", steps.join(", "), o.source);
}

/// The record `--json` prints for one example.
pub fn to_json(o: &Outcome, device_name: &str, strategy: Strategy) -> serde_json::Value {
    let result = match (&o.exception, &o.args[o.example.output]) {
        (Some(e), _) => vec![e.clone()],
        (None, ArgValue::Buffer(elem, bits)) => {
            bits.iter().map(|&b| crate::args::Elem(*elem, b).to_string()).collect::<Vec<_>>()
        }
        (None, _) => Vec::new(),
    };
    let times: serde_json::Map<String, serde_json::Value> =
        o.times_us.iter().map(|(k, v)| ((*k).to_string(), serde_json::json!((v * 10.0).round() / 10.0))).collect();
    serde_json::json!({
        "example": o.example.name,
        "device": device_name,
        "strategy": strategy.name(),
        "kernel": o.example.kernel,
        "grid": o.example.grid,
        "block": o.example.block,
        "matches_reference": o.matches,
        "result": result,
        "times_us": times,
        "kernel_from": o.source,
    })
}
