//! `relok run`'s data path, as the built binary meets it: buffers from
//! files (`--arg @PATH`, raw bytes or `.npy`), buffers to files
//! (`--out-dir`), the per-buffer limit in bytes, one JSON error record
//! under `--json`, and a reader that closes the pipe early.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn relok(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_relok")).args(args).env("RELOK_CACHE", "off").output().expect("relok runs")
}

fn saxpy() -> String {
    common::repo().join("examples/saxpy.rk").display().to_string()
}

/// A folder of this test's own, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("relok-run-data-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// Writes `bytes` to `name` in the folder; its path as text.
    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("write");
        path.to_str().expect("utf-8 path").to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `.npy` file as `numpy.save` writes it (format 1.0: the header padded
/// with spaces and a newline so the data starts at a multiple of 64).
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let total = (10 + dict.len() + 1).next_multiple_of(64);
    let header = format!("{dict:<width$}\n", width = total - 10 - 1);
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&u16::try_from(header.len()).expect("short header").to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn buffers_come_from_npy_and_raw_files_and_go_to_npy_files() {
    let dir = TempDir::new("io");
    let x = dir.file("x.npy", &npy("<f4", "(4,)", &f32_bytes(&[1.0, 2.0, 3.0, 4.0])));
    // A 2 × 2 C-order array is four elements in order.
    let y = dir.file("y.npy", &npy("<f4", "(2, 2)", &f32_bytes(&[0.0, 1.0, 2.0, 3.0])));
    let out_dir = dir.0.join("out");
    let out_str = out_dir.to_str().expect("utf-8");
    let x_arg = format!("@{x}");
    let y_arg = format!("@{y}");
    let out = relok(&[
        "run",
        &saxpy(),
        "--block",
        "4",
        "--arg",
        "4",
        "--arg",
        "2.0",
        "--arg",
        &x_arg,
        "--arg",
        &y_arg,
        "--out-dir",
        out_str,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("v3 = [2.0, 5.0, 8.0, 11.0]"));
    // Every buffer argument, named by its parameter, as numpy.save writes it.
    let v3 = std::fs::read(out_dir.join("v3.npy")).expect("v3.npy written");
    assert_eq!(v3, npy("<f4", "(4,)", &f32_bytes(&[2.0, 5.0, 8.0, 11.0])));
    let v2 = std::fs::read(out_dir.join("v2.npy")).expect("v2.npy written");
    assert_eq!(v2, npy("<f4", "(4,)", &f32_bytes(&[1.0, 2.0, 3.0, 4.0])));
    assert!(!out_dir.join("v0.npy").exists(), "scalars are not written");
    // A written file reads back as an argument; raw bytes do too.
    let v3_arg = format!("@{}", out_dir.join("v3.npy").display());
    let raw = format!("@{}", dir.file("y.bin", &f32_bytes(&[1.0, 1.0, 1.0, 1.0])));
    let out = relok(&[
        "run",
        &saxpy(),
        "--block",
        "4",
        "--arg",
        "4",
        "--arg",
        "1.0",
        "--arg",
        &v3_arg,
        "--arg",
        &raw,
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON record");
    assert_eq!(record["args"][3], serde_json::json!(["3.0", "6.0", "9.0", "12.0"]), "{record}");
}

#[test]
fn a_file_of_the_wrong_type_or_size_names_the_parameter_and_the_file() {
    let dir = TempDir::new("bad");
    let run = |y: &str| {
        let y = format!("@{y}");
        let out =
            relok(&["run", &saxpy(), "--block", "4", "--arg", "4", "--arg", "2.0", "--arg", "zeros:4", "--arg", &y]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        stderr(&out)
    };
    let f64s = dir.file("f64.npy", &npy("<f8", "(4,)", &[0; 32]));
    let e = run(&f64s);
    assert!(e.contains("argument 4 (v3: ptr<global, f32>)") && e.contains(&f64s), "{e}");
    assert!(e.contains("dtype `<f8` does not match the parameter's element type f32"), "{e}");
    let short = dir.file("short.npy", &npy("<f4", "(4,)", &[0; 12]));
    assert!(run(&short).contains("needs 16 bytes of data, the file has 12"));
    let big_endian = dir.file("be.npy", &npy(">f4", "(4,)", &[0; 16]));
    assert!(run(&big_endian).contains("dtype `>f4`"));
    // Text is not a list: it is read as raw bytes (here refused by size,
    // with the file and the format named).
    let text = dir.file("x.txt", b"1, 2, 3, 4\n");
    let e = run(&text);
    assert!(
        e.contains(&format!("{text}: 11 bytes is not a whole number of f32 elements (4 bytes each, raw little-endian")),
        "{e}"
    );
    let seven = dir.file("seven.bin", &[0; 7]);
    let e = run(&seven);
    assert!(e.contains(&seven) && e.contains("7 bytes is not a whole number of f32 elements"), "{e}");
    let e = run("/nonexistent/relok-input.npy");
    assert!(e.contains("cannot read /nonexistent/relok-input.npy"), "{e}");
    // A scalar cannot come from a file.
    let out = relok(&[
        "run",
        &saxpy(),
        "--arg",
        &format!("@{seven}"),
        "--arg",
        "2.0",
        "--arg",
        "zeros:4",
        "--arg",
        "zeros:4",
    ]);
    assert!(stderr(&out).contains("only a buffer parameter can be read from a file"), "{}", stderr(&out));
}

#[test]
fn the_buffer_limit_is_in_bytes() {
    let dir = TempDir::new("limit");
    let k = dir.file("k.rk", b"kernel @k(v0: ptr<global, u64>, v1: ptr<global, u32>) {\n    return\n}\n");
    // 2^26 u64 elements are 512 MiB: refused before anything is allocated
    // (2^28 elements of any type were accepted before: 2 GiB here).
    let out = relok(&["run", &k, "--arg", "zeros:67108864", "--arg", "zeros:1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("out of range 1..=33554432 (at most 256 MiB of u64 per buffer)"), "{}", stderr(&out));
    // For u32 the same 256 MiB are 2^26 elements.
    let out = relok(&["run", &k, "--arg", "zeros:1", "--arg", "zeros:67108865"]);
    assert!(stderr(&out).contains("1..=67108864"), "{}", stderr(&out));
}

#[test]
fn json_failures_print_one_json_record_and_exit_non_zero() {
    let out = relok(&["run", &saxpy(), "--json", "--arg", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let record: serde_json::Value = serde_json::from_str(&stdout).expect("a JSON record");
    assert!(record["error"].as_str().is_some_and(|e| e.contains("@saxpy takes 4 arguments")), "{record}");
    // A fault, and a usage error that clap reports.
    let out = relok(&[
        "run",
        &saxpy(),
        "--json",
        "--block",
        "8",
        "--arg",
        "8",
        "--arg",
        "2.0",
        "--arg",
        "zeros:4",
        "--arg",
        "zeros:4",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON record");
    assert!(record["error"].as_str().is_some_and(|e| e.contains("thread (4,0,0)")), "{record}");
    let out = relok(&["run", &saxpy(), "--json", "--strategy", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON record");
    assert!(record["error"].as_str().is_some_and(|e| e.contains("unknown strategy `nope`")), "{record}");
    // Without --json, nothing on stdout.
    assert!(relok(&["run", &saxpy(), "--arg", "1"]).stdout.is_empty());
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let dir = TempDir::new("pipe");
    let k = dir.file("k.rk", b"kernel @k(v0: ptr<global, u32>) {\n    return\n}\n");
    // About 2 MB of output: far past a pipe's buffer.
    let mut child = Command::new(env!("CARGO_BIN_EXE_relok"))
        .args(["run", &k, "--arg", "iota:300000", "--full"])
        .env("RELOK_CACHE", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("relok starts");
    let mut first = [0u8; 1];
    child.stdout.take().expect("stdout").read_exact(&mut first).expect("one byte");
    // `head -c1` exits: the pipe's only reader is gone.
    let mut err = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut err).expect("stderr");
    let status = child.wait().expect("relok ends");
    assert_eq!(&first, b"v");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

#[test]
fn out_dir_that_cannot_be_created_is_an_error() {
    let dir = TempDir::new("outdir");
    let file = dir.file("plain", b"");
    let under_a_file = Path::new(&file).join("sub");
    let out = relok(&[
        "run",
        &saxpy(),
        "--block",
        "4",
        "--arg",
        "4",
        "--arg",
        "2.0",
        "--arg",
        "zeros:4",
        "--arg",
        "zeros:4",
        "--out-dir",
        under_a_file.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot create"), "{}", stderr(&out));
}
