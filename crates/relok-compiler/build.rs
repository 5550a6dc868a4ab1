//! Sets `RELOK_CODEGEN_HASH`: a digest of the sources that decide what the
//! compiler emits (this crate's and relok-ir's `src/`), so that the
//! compiler identity — and with it every cache key and store folder —
//! changes whenever codegen may have changed.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut h = Sha256::new();
    for (name, dir) in [("compiler", here.join("src")), ("ir", here.join("../relok-ir/src"))] {
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut fs = Vec::new();
        files(&dir, &mut fs);
        fs.sort();
        for f in fs {
            let rel = f.strip_prefix(&dir).unwrap_or(&f).to_string_lossy().replace('\\', "/");
            let bytes = std::fs::read(&f).unwrap_or_default();
            h.update(name.as_bytes());
            h.update((rel.len() as u64).to_le_bytes());
            h.update(rel.as_bytes());
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(&bytes);
        }
    }
    let digest = h.finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=RELOK_CODEGEN_HASH={hex}");
}
