//! The `relok` commands that take the wgpu device, checked on it: `relok
//! bench wgpu`'s report (what served each first launch: compiles, the
//! artifact store, the pipeline-cache archive), `relok bench kernels`
//! (every example kernel and its Rust twin checked, then timed) and a
//! fixed-seed `relok fuzz` campaign against the cpu device (its generator
//! and minimiser are the CLI's, `src/fuzz.rs`).
//!
//! These stayed in the CLI from `tests/wgpu.rs` because they test its
//! commands; the device checks that were there moved to the facade's
//! `crates/relok/tests/wgpu.rs` (through `Context`) and the runtime's
//! `crates/relok-runtime/tests/wgpu_device.rs` (the pipeline-cache
//! archive, the heap).
//!
//! Runs on the first adapter wgpu lists (`RELOK_WGPU_ADAPTER` narrows the
//! list): lavapipe in CI, NVIDIA's Vulkan driver on a GPU machine. Without
//! an adapter every test prints that it was skipped and passes, unless
//! `RELOK_REQUIRE_WGPU` is set.
#![cfg(feature = "wgpu")]

use relok_runtime::wgpu::{WgpuDevice, list_adapters};
use relok_runtime::{CpuDevice, Device};
use std::path::PathBuf;
use std::process::Command;

/// The first adapter as a device (no archive), or `None` after printing
/// why the test is skipped — unless `RELOK_REQUIRE_WGPU` is set (CI sets
/// it: there lavapipe must be found).
fn gpu(test: &str) -> Option<WgpuDevice> {
    if list_adapters().is_empty() {
        let why = "wgpu finds no adapter (install mesa-vulkan-drivers for lavapipe)";
        assert!(std::env::var_os("RELOK_REQUIRE_WGPU").is_none(), "{test}: RELOK_REQUIRE_WGPU is set but {why}");
        let msg = format!("SKIPPED {test}: {why}\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
        return None;
    }
    Some(WgpuDevice::open(0).expect("adapter 0 opens"))
}

#[test]
fn bench_wgpu_reports_what_served_each_first_launch() {
    let Some(d) = gpu("bench wgpu") else { return };
    let (miss, hit) = if d.has_pipeline_cache() { ("miss", "hit") } else { ("off", "off") };
    drop(d);
    // RELOK_BIN: the relok binary, for a test binary run elsewhere.
    let relok = std::env::var_os("RELOK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_relok")), PathBuf::from);
    let out = Command::new(relok).args(["bench", "wgpu", "--quick", "--json"]).output().expect("relok runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON record");
    let starts = r["starts"].as_array().expect("starts");
    let mode = |m: &str| starts.iter().find(|s| s["mode"] == m).unwrap_or_else(|| panic!("mode {m}: {r}"));
    assert_eq!(
        (&mode("cold")["last"]["compiles"], &mode("cold")["last"]["pipeline_cache"]),
        (&1.into(), &miss.into()),
        "{r}"
    );
    assert_eq!(
        (&mode("store")["last"]["compiles"], &mode("store")["last"]["store_hits"]),
        (&0.into(), &1.into()),
        "{r}"
    );
    let archived = &mode("store+archive")["last"];
    assert_eq!((&archived["compiles"], &archived["pipeline_cache"]), (&0.into(), &hit.into()), "{r}");
    assert!(starts.iter().all(|s| s["median_us"].as_f64().is_some_and(|t| t > 0.0)), "{r}");
    assert_eq!(r["launches"].as_array().map(Vec::len), Some(2), "{r}");
}

#[test]
fn bench_kernels_checks_then_times_every_kernel_and_twin_on_wgpu() {
    let Some(d) = gpu("bench kernels") else { return };
    drop(d);
    let relok = std::env::var_os("RELOK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_relok")), PathBuf::from);
    // Small: on lavapipe the Rust twins' pipelines take seconds to create.
    let out = Command::new(relok)
        .args(["bench", "kernels", "--quick", "--devices", "wgpu", "--size", "2048", "--matmul", "32"])
        .args(["--batches", "2", "--facade", "default,unchecked", "--json"])
        .env("RELOK_CACHE", "off")
        .output()
        .expect("relok runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON record per line"))
        .filter(|r: &serde_json::Value| r["backend"] == "wgpu")
        .collect();
    assert_eq!(records.len(), 28, "{stdout}");
    for r in &records {
        assert!(r["error"].is_null() && r["ms"].as_f64().is_some_and(|ms| ms > 0.0), "{r}");
        assert!(r["checked"].as_str().is_some_and(|c| c.contains("plain Rust")), "{r}");
        assert!(r["registers"].is_null(), "{r}");
    }
}

#[test]
fn a_fixed_seed_fuzz_campaign_finds_wgpu_equal_to_the_cpu_device() {
    let Some(d) = gpu("fuzz campaign") else { return };
    // `relok fuzz --devices cpu,wgpu --count 12 --seed 1000`: random
    // kernels (64-bit and f64 arithmetic through the WGSL helpers, loops,
    // shared memory, atomics) under table and bake.
    let cpu = Device::Cpu(CpuDevice::new(0));
    let others = [Device::Wgpu(Box::new(d))];
    let mismatches: Vec<String> = (1000..1012)
        .filter_map(|seed| relok_cli::fuzz::run_case(&cpu, &others, seed, 24))
        .map(|m| format!("seed {} ({} steps) on {}: {}\n{}", m.seed, m.steps, m.on, m.what, m.file_test))
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
