//! Runs every file under `tests/filetests/` at the repository root (see
//! `relok_cli::filetest` for the format), reporting all failures at once.

use relok_runtime::Device;

#[test]
fn filetests() {
    // RELOK_REPO: the repository root, for a test binary run elsewhere
    // (scripts/gpu-run.sh).
    let root = std::env::var_os("RELOK_REPO")
        .map_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), std::path::PathBuf::from);
    let dir = root.join("tests/filetests");
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
        let note = format!("note: {skipped} run lines skipped on {} (`fault:` lines are the cpu device's to check; `strategy=patch` lines cannot run on wgpu)\n", device.name());
        let _ = std::io::Write::write_all(&mut std::io::stderr(), note.as_bytes());
    }
    assert!(failures.is_empty(), "{} of {} file tests failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}
