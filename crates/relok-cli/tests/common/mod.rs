//! What the CLI's test binaries share: where the repository is.

use std::path::{Path, PathBuf};

/// The repository root, whose `examples/` and `tests/` the tests read:
/// `RELOK_REPO` when it is set (a test binary run from another checkout,
/// as scripts/gpu-run.sh runs them on the GPU machine), else the checkout
/// the binary was built in.
pub fn repo() -> PathBuf {
    std::env::var_os("RELOK_REPO").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), PathBuf::from)
}
