//! The file tests' `; run:` lines (`tests/filetests/run_*.rk`) through the
//! facade on the cpu device, the oracle: every line of every file, faults
//! included, under bake, patch and table, with buffers of every element
//! type (`bool` and `word` too). The runner is the one `tests/wgpu.rs`
//! runs the same lines with on the wgpu device (`tests/common/filetest.rs`);
//! the CLI's runner checks them through the runtime
//! (`crates/relok-cli/tests/filetests.rs`).

mod common;

use common::filetest::run_file;
use common::repo;
use std::path::PathBuf;

#[test]
fn every_run_line_passes_on_the_cpu_device_under_every_strategy() {
    let cpu = common::cpu_contexts();
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/filetests"))
        .expect("tests/filetests")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("run_")))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{} run files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read");
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        match run_file(&name, &text, &cpu) {
            Ok(skipped) => assert_eq!(skipped, 0, "{name}: the cpu device skips no line"),
            Err(errs) => failures.extend(errs),
        }
    }
    assert!(failures.is_empty(), "{} failures on the cpu device:\n{}", failures.len(), failures.join("\n"));
}
