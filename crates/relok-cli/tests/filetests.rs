//! Runs every file under `tests/filetests/` at the repository root (see
//! `relok_cli::filetest` for the format), reporting all failures at once.

mod common;

use common::repo;
use relok_cli::filetest::{FAULT_LINES, PATCH_ONLY_LINES, expected_skips};
use relok_runtime::Device;

#[test]
fn filetests() {
    let dir = repo().join("tests/filetests");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/filetests exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rk"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "expected at least 40 file tests, found {}", files.len());
    // RELOK_TEST_DEVICE=cuda runs every `; run:` line on a GPU instead.
    let spec = std::env::var("RELOK_TEST_DEVICE").unwrap_or_else(|_| "cpu".into());
    let device = Device::open(&spec).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    let mut skipped = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable file");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match relok_cli::filetest::run_file(&name, &text, &device) {
            Ok(n) => skipped += n,
            Err(errs) => failures.extend(errs),
        }
    }
    if skipped > 0 {
        let note = format!(
            "note: {skipped} run lines skipped on {} (`fault:` lines are the cpu device's to check; `strategy=patch` lines cannot run on wgpu)\n",
            device.name()
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr(), note.as_bytes());
    }
    assert!(failures.is_empty(), "{} of {} file tests failed:\n{}", failures.len(), files.len(), failures.join("\n"));
    // A run that skipped more (or fewer) lines than documented fails.
    assert_eq!(skipped, expected_skips(&device), "run lines skipped on {}", device.name());
}

#[test]
fn the_documented_skips_are_the_files_lines() {
    // FAULT_LINES and PATCH_ONLY_LINES are pinned by hand; they must also
    // be what the files hold, so a changed file changes the count knowingly.
    let root = repo().join("tests/filetests");
    let (mut faults, mut patch_only) = (0, 0);
    for entry in std::fs::read_dir(root).expect("tests/filetests") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
        for run in text.lines().filter_map(|l| l.trim().strip_prefix("; run:")) {
            let (call, expect) = run.split_once("=>").expect("a run line has `=>`");
            if expect.trim().starts_with("fault:") {
                faults += 1;
            } else if call.split_whitespace().any(|o| o == "strategy=patch") {
                patch_only += 1;
            }
        }
    }
    assert_eq!((faults, patch_only), (FAULT_LINES, PATCH_ONLY_LINES));
}
