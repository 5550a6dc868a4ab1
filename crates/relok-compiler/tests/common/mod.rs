//! What the backend tests share: where the repository is, the inputs every
//! backend is run over and a stand-in resolver for `bake`.

use relok_compiler::reloc::Target;
use relok_ir::VerifiedModule;
use std::path::{Path, PathBuf};

/// The repository root, whose `examples/` and `tests/` the tests read:
/// `RELOK_REPO` when it is set (a test binary run from another checkout),
/// else the checkout the binary was built in.
pub fn repo() -> PathBuf {
    std::env::var_os("RELOK_REPO").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), PathBuf::from)
}

/// Every source module with a name: the examples and the file tests that
/// hold valid IR (their header line dropped).
pub fn inputs() -> Vec<(String, VerifiedModule)> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    for d in ["examples", "examples/reloc", "examples/bench", "tests/filetests"] {
        for e in std::fs::read_dir(repo().join(d)).expect("folder").flatten() {
            if e.path().extension().is_some_and(|x| x == "rk") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        let body = if f.parent().is_some_and(|p| p.ends_with("filetests")) {
            match text.strip_prefix("test run\n").or_else(|| text.strip_prefix("test roundtrip\n")) {
                Some(rest) => rest.to_owned(),
                None => continue,
            }
        } else {
            text
        };
        let m = relok_ir::parse(&body).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let m = VerifiedModule::new(m).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        out.push((f.file_name().expect("name").to_string_lossy().into_owned(), m));
    }
    out
}

/// A stand-in for a session: a distinct, stable word per target.
pub fn fake_word(t: &Target) -> Result<u64, String> {
    let s = format!("{t:?}");
    Ok(s.bytes().fold(0x1000_0000_0000u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))) & !7)
}
