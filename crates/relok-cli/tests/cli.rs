//! The `relok` binary as a user meets it: exit codes and messages.

mod common;

use std::process::Command;

/// `relok` with the artifact cache off (the store has its own tests).
fn relok(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_relok")).args(args).env("RELOK_CACHE", "off").output().expect("relok runs")
}

/// `path` in the repository, as an argument.
fn repo_file(path: &str) -> String {
    common::repo().join(path).display().to_string()
}

/// A file in a folder of its own, removed with the folder when dropped.
struct TempFile(std::path::PathBuf);

impl std::ops::Deref for TempFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn temp_file(name: &str, text: &str) -> TempFile {
    let dir = std::env::temp_dir().join(format!("relok-cli-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write temp file");
    TempFile(path)
}

#[test]
fn version_names_the_tool() {
    let out = relok(&["--version"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("relok "));
}

#[test]
fn demo_runs_every_example_and_they_match() {
    let out = relok(&["demo", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "demo failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let mut records: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON record per line")).collect();
    let summary = records.pop().expect("a summary record");
    assert_eq!(summary["summary"]["compiled"], 11, "{summary}");
    assert_eq!(records.len(), 11);
    for r in &records {
        assert_eq!(r["kernel_from"], "compiled", "{r}");
        assert_eq!(r["matches_reference"], true, "{r}");
        assert_eq!(r["device"], "cpu:0");
        assert_eq!(r["strategy"], "table");
        assert!(!r["result"].as_array().expect("result list").is_empty());
    }
}

#[test]
fn check_accepts_examples_and_rejects_bad_files_with_a_location() {
    assert!(relok(&["check", &repo_file("examples/saxpy.rk")]).status.success());
    let bad = temp_file("bad.rk", "kernel @k(v0: u32) {\n    v1: f32 = add v0, v0\n    return\n}\n");
    let out = relok(&["check", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.rk:2:5: error:"), "{stderr}");
    let missing = relok(&["check", "/nonexistent/file.rk"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read"));
}

#[test]
fn run_prints_buffers_and_reports_faults() {
    let saxpy = repo_file("examples/saxpy.rk");
    let out = relok(&[
        "run",
        &saxpy,
        "--block",
        "4",
        "--arg",
        "4",
        "--arg",
        "2.0",
        "--arg",
        "[1.0, 2.0, 3.0, 4.0]",
        "--arg",
        "iota:4",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("v3 = [2.0, 5.0, 8.0, 11.0]"), "{stdout}");
    // n larger than the buffers: the kernel reads out of bounds.
    let out =
        relok(&["run", &saxpy, "--block", "8", "--arg", "8", "--arg", "2.0", "--arg", "zeros:4", "--arg", "zeros:4"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("@saxpy") && stderr.contains("thread (4,0,0)"), "{stderr}");
    // A wrong number of arguments is named.
    let out = relok(&["run", &saxpy, "--arg", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("takes 4 arguments"));
}

#[test]
fn fmt_check_detects_non_canonical_text() {
    let messy = temp_file("messy.rk", "kernel @k(v7: u32) {\n  return\n}\n");
    let out = relok(&["fmt", messy.to_str().expect("utf-8 path")]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "kernel @k(v0: u32) {\n    return\n}\n");
    let out = relok(&["fmt", "--check", messy.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn lower_prints_parseable_ir_and_the_manifest_identically_in_two_processes() {
    let file = repo_file("examples/reloc/boxed.rk");
    for strategy in ["patch", "table"] {
        let a = relok(&["lower", &file, "--strategy", strategy]);
        let b = relok(&["lower", &file, "--strategy", strategy]);
        assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
        // Byte-stable across processes (other addresses, other words).
        assert_eq!(a.stdout, b.stdout, "{strategy}");
        let text = String::from_utf8_lossy(&a.stdout);
        assert!(text.starts_with(&format!("lowered {strategy}\n")), "{text}");
        assert!(text.contains("; [0] relok$unbox$"), "{text}");
        let module = relok_ir::parse(&text).expect("lowered output parses");
        relok_ir::verify(&module).expect("lowered output verifies");
    }
    // Baked words are this process's: two processes print different words.
    let a = relok(&["lower", &repo_file("examples/reloc/lookup.rk"), "--strategy", "bake"]);
    let b = relok(&["lower", &repo_file("examples/reloc/lookup.rk"), "--strategy", "bake"]);
    assert!(String::from_utf8_lossy(&a.stdout).contains("= word 0x"));
    assert_ne!(a.stdout, b.stdout);
}

#[test]
fn run_takes_symbol_arguments_and_reports_exceptions() {
    let symbols = repo_file("examples/reloc/symbols.rk");
    for (arg, want) in [("sym:foo", "[1]"), ("sym:bar", "[2]"), ("sym:other", "[-1]")] {
        for strategy in ["bake", "patch", "table"] {
            let out = relok(&["run", &symbols, "--strategy", strategy, "--arg", arg, "--arg", "zeros:1"]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("v1 = {want}")), "{arg} {strategy}");
        }
    }
    let out =
        relok(&["run", &repo_file("examples/reloc/throw.rk"), "--block", "4", "--arg", "4", "--arg", "[1, 2, -3, 4]"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("thread (2,0,0): exception: negative input"), "{stderr}");
}

#[test]
fn compile_writes_ptx_and_the_manifest_and_refuses_bake() {
    let boxed = repo_file("examples/reloc/boxed.rk");
    let out = relok(&["compile", &boxed, "--target", "ptx", "--strategy", "patch", "--manifest"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ptx = String::from_utf8_lossy(&out.stdout);
    assert!(
        ptx.contains(".version 8.0") && ptx.contains(".target sm_90") && ptx.contains(".visible .entry unbox("),
        "{ptx}"
    );
    let manifest = String::from_utf8_lossy(&out.stderr);
    assert!(manifest.contains("; [0] relok$unbox$agg$box interior word at +0"), "{manifest}");
    // The same bytes in another process, and to a file with -o.
    let again = relok(&["compile", &boxed, "--target", "ptx", "--strategy", "patch"]);
    assert_eq!(out.stdout, again.stdout);
    let dest = temp_file("unbox.ptx", "");
    let to_file = relok(&["compile", &boxed, "--target", "ptx-sm80", "-o", dest.to_str().expect("utf-8")]);
    assert!(to_file.status.success());
    assert!(std::fs::read_to_string(&*dest).expect("written").contains(".target sm_80"));
    let bake = relok(&["compile", &boxed, "--strategy", "bake"]);
    assert_eq!(bake.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bake.stderr).contains("use patch or table"));
    let wgsl = relok(&["compile", &boxed, "--target", "wgsl", "--strategy", "table"]);
    assert!(String::from_utf8_lossy(&wgsl.stdout).contains("@compute @workgroup_size(relok_block_x"));
    let wgsl_patch = relok(&["compile", &boxed, "--target", "wgsl", "--strategy", "patch"]);
    assert!(String::from_utf8_lossy(&wgsl_patch.stderr).contains("patching is impossible on wgpu"));
    let bad_target = relok(&["compile", &boxed, "--target", "spirv"]);
    assert!(!bad_target.status.success());
    assert!(String::from_utf8_lossy(&bad_target.stderr).contains("expected cpu, ptx, ptx-smNN or wgsl"));
}

#[test]
fn devices_lists_the_cpu_and_every_adapter_and_marks_one_best() {
    let out = relok(&["devices", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON record a line"))
        .collect();
    assert_eq!(rows.first().map(|r| r["spec"].clone()), Some("cpu:0".into()), "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r["best"] == true).count(), 1, "{rows:?}");
    #[cfg(feature = "wgpu")]
    let wgpu_gpu = {
        let adapters = relok_runtime::wgpu::list_adapters();
        for a in &adapters {
            assert!(rows.iter().any(|r| r["spec"] == format!("wgpu:{}", a.ordinal)), "{rows:?}");
        }
        adapters.iter().any(|a| a.hardware)
    };
    #[cfg(not(feature = "wgpu"))]
    let wgpu_gpu = false;
    #[cfg(feature = "cuda")]
    let cuda_gpu = relok_runtime::cuda::device_count() > 0;
    #[cfg(not(feature = "cuda"))]
    let cuda_gpu = false;
    // Without a CUDA GPU or a wgpu GPU, `best` is the cpu, as `relok demo` says.
    if !cuda_gpu && !wgpu_gpu {
        assert_eq!(rows[0]["best"], true, "{rows:?}");
    }
}

#[test]
fn demo_rust_runs_every_rust_twin_equal_to_its_rk_version() {
    let out = relok(&["demo", "--device", "cpu", "--json", "--rust"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "demo failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let twins: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("one JSON record per line"))
        .filter(|r| r.get("rust_twin").is_some())
        .collect();
    let names: Vec<&str> = twins.iter().filter_map(|r| r["rust_twin"].as_str()).collect();
    assert_eq!(
        names,
        [
            "saxpy",
            "reduce",
            "histogram",
            "matmul",
            "scan",
            "lookup",
            "classify",
            "count",
            "softmax",
            "gelu",
            "check",
            "grey",
            "tokens",
            "nbody"
        ]
    );
    for r in &twins {
        assert_eq!(r["equal_to_rk"], true, "{r}");
        assert_eq!(r["equal_to_cpu"], true, "{r}");
        assert!(r["rust_lines"].as_u64() < r["rk_lines"].as_u64(), "{r}");
    }
}

#[test]
fn bench_kernels_checks_then_times_every_kernel_and_twin_on_cpu() {
    let out = Command::new(env!("CARGO_BIN_EXE_relok"))
        .args(["bench", "kernels", "--quick", "--devices", "cpu", "--size", "1024", "--matmul", "32", "--batches", "2"])
        .args(["--facade", "default,unchecked", "--json"])
        .env("RELOK_CACHE", "off")
        .env("RELOK_REPO", common::repo())
        .output()
        .expect("relok runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON record per line")).collect();
    let cpu: Vec<&serde_json::Value> = lines.iter().filter(|r| r["backend"] == "cpu").collect();
    let kernels = ["saxpy", "gelu", "reduce", "softmax", "scan", "histogram", "matmul"];
    // Per context (default, then unchecked), per kernel: the .rk, its twin.
    let expected: Vec<(&str, String)> = ["default", "unchecked"]
        .iter()
        .flat_map(|f| {
            kernels.iter().flat_map(move |k| [(*k, format!(".rk, facade {f}")), (*k, format!("Rust twin, facade {f}"))])
        })
        .collect();
    assert_eq!(cpu.len(), expected.len(), "{stdout}");
    for (r, (kernel, variant)) in cpu.iter().zip(&expected) {
        assert_eq!(
            (&r["kernel"], &r["variant"], &r["device"]),
            (&(*kernel).into(), &variant.as_str().into(), &"cpu:0".into())
        );
        let size = match *kernel {
            "softmax" => "4x256",
            "matmul" => "32^3",
            _ => "1024",
        };
        assert_eq!(r["size"], size, "{r}");
        assert!(r["error"].is_null() && r["ms"].as_f64().is_some_and(|ms| ms > 0.0), "{r}");
        let rate = if *kernel == "matmul" { "gflop_s" } else { "gb_s" };
        assert!(r[rate].as_f64().is_some_and(|v| v > 0.0), "{r}");
        assert!(r["checked"].as_str().is_some_and(|c| c.contains("plain Rust")), "{r}");
        assert_eq!(
            (&r["batches"], &r["registers"], &r["ratio"]),
            (&2.into(), &serde_json::Value::Null, &serde_json::Value::Null)
        );
        assert!(r["date"].as_str().is_some_and(|d| d.ends_with('Z')), "{r}");
    }
    // The CUDA C twins ran (CuPy here) or say why not.
    let c_twins = lines.iter().filter(|r| r["variant"] == "CUDA C (NVRTC)").count();
    let skipped = lines.iter().filter(|r| r["skipped"].is_string() && r["why"].is_string()).count();
    assert!(c_twins == kernels.len() || skipped > 0, "{stdout}");
}

#[test]
fn bench_kernels_refuses_bad_sizes_and_names() {
    for args in [&["--size", "1000"][..], &["--matmul", "0"], &["--kernels", "fft"], &["--facade", "fast"]] {
        let out = relok(&[&["bench", "kernels", "--devices", "cpu"][..], args].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(args[1]), "{args:?}: {err}");
    }
}
