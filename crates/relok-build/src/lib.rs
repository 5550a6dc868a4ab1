//! relok's build-time compiler: precompiles a crate's kernels into a
//! bundle from `build.rs`, so the program ships its kernels — and, with
//! `ptxas` at build time, their machine code — inside its binary and
//! starts on an empty cache without compiling anything.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), relok_build::BuildError> {
//!     relok_build::Precompile::new()
//!         .file("kernels/scale.rk")
//!         .target(relok_build::CodeTarget::Cpu)
//!         .target(relok_build::CodeTarget::Ptx { sm: 90 })
//!         .cubin(90)                       // needs ptxas (RELOK_PTXAS or the PATH)
//!         .write_to_out_dir("kernels.bundle")?;
//!     Ok(())
//! }
//! ```
//!
//! ```ignore
//! // src/main.rs
//! static SCALE: relok::Source = relok::Source::new("kernels/scale.rk", include_str!("../kernels/scale.rk"));
//! let ctx = relok::Context::best()?;
//! ctx.load_static_bundle(include_bytes!(concat!(env!("OUT_DIR"), "/kernels.bundle")))?;   // used where it lies: no copy
//! let scale = ctx.kernel(&SCALE, "scale")?;   // found by its source key: nothing parsed or compiled
//! ```
//!
//! A bundle holds, per kernel, target and strategy, the artifact under its
//! key and under its *source key* (the hash of the file's text and the
//! kernel's name, what `relok::Source` looks up without parsing), and with
//! [`Precompile::cubin`] the cubins of every PTX artifact for those GPUs.
//! It depends only on the compiler (no device, no driver), so it is light
//! as a build dependency; `relok precompile` is the same on the command
//! line. Bundles are byte-stable: the same sources give the same bytes.

use relok_cache::entry::{self, Kind};
use relok_cache::{Key, bundle};
use relok_compiler::artifact::{self, COMPILER_ID};
use relok_compiler::stencil::{Stencil, source_key};
use relok_ir::VerifiedModule;
use std::path::{Path, PathBuf};

pub use relok_compiler::artifact::{CodeTarget, CompileOptions};
pub use relok_ir::Strategy;

/// Why a bundle could not be made; every variant names the file (and the
/// kernel, line and column where there are some).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A kernel file could not be read (or is not UTF-8).
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A kernel file does not parse.
    #[error("{file}:{line}:{col}: error: {message}")]
    Parse {
        /// The file.
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        col: u32,
        /// What is wrong.
        message: String,
    },
    /// A kernel file does not verify.
    #[error("{rendered}")]
    Verify {
        /// The file.
        file: String,
        /// The verifier's findings rendered against the file.
        rendered: String,
    },
    /// A kernel does not compile for a target.
    #[error("{file}: @{kernel}: {target}: {message}")]
    Compile {
        /// The file.
        file: String,
        /// The kernel.
        kernel: String,
        /// The target.
        target: String,
        /// The compiler's error.
        message: String,
    },
    /// A request that cannot be served: `bake` (its words are one
    /// process's), a target none of whose strategies applies, cubins
    /// without a PTX target.
    #[error("{0}")]
    Request(String),
    /// `ptxas` is missing or failed.
    #[error("{file}: @{kernel}: {message}")]
    Ptxas {
        /// The file.
        file: String,
        /// The kernel.
        kernel: String,
        /// What happened.
        message: String,
    },
    /// Writing the bundle failed.
    #[error("{path}: cannot write: {source}")]
    Write {
        /// Where.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// A kernel file, parsed and verified, with its text (for source keys).
#[derive(Debug)]
pub struct Source {
    /// The name errors and reports use.
    pub file: String,
    /// The text.
    pub text: String,
    /// The verified module.
    pub module: VerifiedModule,
}

impl Source {
    /// Parses and verifies `text`, naming it `file` in errors.
    pub fn parse(file: impl Into<String>, text: impl Into<String>) -> Result<Source, BuildError> {
        let (file, text) = (file.into(), text.into());
        let module = relok_ir::parse(&text).map_err(|e| BuildError::Parse {
            file: file.clone(),
            line: e.span.line,
            col: e.span.col,
            message: e.message,
        })?;
        let module = VerifiedModule::new(module)
            .map_err(|errors| BuildError::Verify { rendered: errors.render(&file), file: file.clone() })?;
        Ok(Source { file, text, module })
    }

    /// Reads, parses and verifies a file.
    pub fn read(path: &Path) -> Result<Source, BuildError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| BuildError::Read { file: file.clone(), source })?;
        Source::parse(file, text)
    }
}

/// One compiled item of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Precompiled {
    /// The file.
    pub file: String,
    /// The kernel.
    pub kernel: String,
    /// The strategy.
    pub strategy: Strategy,
    /// The target.
    pub target: CodeTarget,
    /// The artifact's key.
    pub key: Key,
    /// GPUs (compute capability × 10) whose cubin the bundle carries.
    pub cubins: Vec<u32>,
}

/// What goes into a bundle: files, targets, strategies, cubins (see the
/// crate docs). Defaults: no files, target `cpu`, strategy `table`.
#[derive(Debug, Clone)]
pub struct Precompile {
    files: Vec<PathBuf>,
    targets: Vec<CodeTarget>,
    strategies: Vec<Strategy>,
    cubins: Vec<u32>,
}

impl Default for Precompile {
    fn default() -> Precompile {
        Precompile::new()
    }
}

impl Precompile {
    /// Nothing yet; target `cpu`, strategy `table` unless others are added.
    pub fn new() -> Precompile {
        Precompile { files: Vec::new(), targets: Vec::new(), strategies: Vec::new(), cubins: Vec::new() }
    }

    /// Adds a kernel file (`.rk`).
    pub fn file(mut self, path: impl Into<PathBuf>) -> Precompile {
        self.files.push(path.into());
        self
    }

    /// Adds a code target (`CodeTarget::Cpu`, `Ptx { sm }`, `Wgsl`).
    pub fn target(mut self, target: CodeTarget) -> Precompile {
        self.targets.push(target);
        self
    }

    /// Adds a strategy (`patch` or `table`; `bake` cannot be precompiled).
    pub fn strategy(mut self, strategy: Strategy) -> Precompile {
        self.strategies.push(strategy);
        self
    }

    /// Also assembles every PTX artifact for `sm_<sm>` (90 for sm_90) with
    /// `ptxas` (`RELOK_PTXAS`, else the PATH).
    pub fn cubin(mut self, sm: u32) -> Precompile {
        self.cubins.push(sm);
        self
    }

    /// The bundle's bytes and what it holds.
    pub fn build(&self) -> Result<(Vec<u8>, Vec<Precompiled>), BuildError> {
        let sources = self.files.iter().map(|f| Source::read(f)).collect::<Result<Vec<_>, _>>()?;
        let targets = if self.targets.is_empty() { vec![CodeTarget::Cpu] } else { self.targets.clone() };
        let strategies = if self.strategies.is_empty() { vec![Strategy::Table] } else { self.strategies.clone() };
        bundle_of(&sources, &targets, &strategies, &self.cubins, &mut |_, _, _| {})
    }

    /// For `build.rs`: builds the bundle, writes it to `$OUT_DIR/name` and
    /// tells cargo to rebuild when a kernel file (or `RELOK_PTXAS`)
    /// changes. Returns the path.
    pub fn write_to_out_dir(&self, name: &str) -> Result<PathBuf, BuildError> {
        let out = std::env::var_os("OUT_DIR").ok_or_else(|| {
            BuildError::Request("OUT_DIR is not set: call write_to_out_dir from a build script".into())
        })?;
        let (bytes, _) = self.build()?;
        let path = Path::new(&out).join(name);
        std::fs::write(&path, bytes)
            .map_err(|source| BuildError::Write { path: path.display().to_string(), source })?;
        let mut lines = String::new();
        for f in &self.files {
            lines.push_str(&format!("cargo::rerun-if-changed={}\n", f.display()));
        }
        lines.push_str("cargo::rerun-if-env-changed=RELOK_PTXAS\ncargo::rerun-if-env-changed=PATH\n");
        // A build script talks to cargo on its standard output.
        let _ = std::io::Write::write_all(&mut std::io::stdout(), lines.as_bytes());
        Ok(path)
    }
}

/// Compiles every kernel of `sources` for every target and strategy (but
/// the pairs a target does not support: `patch` on WGSL) into a bundle:
/// each artifact under its key and its source key, and with `cubins` the
/// cubins of each PTX artifact for each of those GPUs its PTX can target.
/// `progress` is called after each item with (done, total, label).
pub fn bundle_of(
    sources: &[Source],
    targets: &[CodeTarget],
    strategies: &[Strategy],
    cubins: &[u32],
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<(Vec<u8>, Vec<Precompiled>), BuildError> {
    // Every cubin asked for must come from some PTX target: PTX for sm_NN
    // assembles for sm_NN and later, never earlier.
    if let Some(sm) =
        cubins.iter().find(|&&sm| !targets.iter().any(|t| matches!(t, CodeTarget::Ptx { sm: p } if *p <= sm)))
    {
        return Err(BuildError::Request(format!(
            "cubin sm_{sm} needs a PTX target for sm_{sm} or earlier (e.g. ptx-sm{sm}); PTX assembles only for its own GPU and later ones"
        )));
    }
    if let Some(s) = strategies.iter().find(|s| **s == Strategy::Bake) {
        return Err(BuildError::Request(format!(
            "strategy {s}: baked kernels hold one process's words and cannot be precompiled (use patch or table)"
        )));
    }
    let pairs: Vec<(CodeTarget, Strategy)> = targets
        .iter()
        .flat_map(|&t| strategies.iter().filter(move |&&s| t.supports(s)).map(move |&s| (t, s)))
        .collect();
    if let Some(t) = targets.iter().find(|t| !pairs.iter().any(|(p, _)| p == *t)) {
        return Err(BuildError::Request(format!(
            "target {}: none of the strategies given can be used (patching is impossible on wgpu; use table)",
            t.name()
        )));
    }
    let total: usize = sources.iter().map(|s| s.module.kernels().count()).sum::<usize>() * pairs.len();
    let options = CompileOptions::default();
    let (mut entries, mut done) = (Vec::new(), Vec::new());
    for src in sources {
        for (_, k) in src.module.kernels() {
            let failed = |target: CodeTarget, message: String| BuildError::Compile {
                file: src.file.clone(),
                kernel: k.name.clone(),
                target: target.name(),
                message,
            };
            let stencil = Stencil::new(&src.module, &k.name).map_err(|e| BuildError::Compile {
                file: src.file.clone(),
                kernel: k.name.clone(),
                target: "any".into(),
                message: e.to_string(),
            })?;
            for &(target, strategy) in &pairs {
                let a = artifact::compile(&stencil, target, strategy, options, None)
                    .map_err(|e| failed(target, e.to_string()))?;
                let payload = a.to_payload().map_err(|e| failed(target, e.to_string()))?;
                entries.push(entry::encode(Kind::Artifact, COMPILER_ID, Key(a.key), &payload));
                // The same artifact under the text's source key, marked as
                // its alias.
                let alias = source_key(&src.text, &k.name, target, strategy, options);
                let alias_payload = a.alias_under(alias).to_payload().map_err(|e| failed(target, e.to_string()))?;
                entries.push(entry::encode(Kind::Artifact, COMPILER_ID, Key(alias), &alias_payload));
                let mut made = Vec::new();
                if let CodeTarget::Ptx { sm: ptx_sm } = target {
                    for &sm in cubins.iter().filter(|&&sm| sm >= ptx_sm) {
                        let cubin = assemble(&a.code, sm).map_err(|message| BuildError::Ptxas {
                            file: src.file.clone(),
                            kernel: k.name.clone(),
                            message,
                        })?;
                        let key = Key(relok_compiler::ptx::cubin_key(&a.code, &a.entry, sm));
                        entries.push(entry::encode(Kind::Binary, COMPILER_ID, key, &cubin));
                        made.push(sm);
                    }
                }
                done.push(Precompiled {
                    file: src.file.clone(),
                    kernel: k.name.clone(),
                    strategy,
                    target,
                    key: Key(a.key),
                    cubins: made,
                });
                progress(done.len(), total, &format!("{} @{} {strategy}", src.file, k.name));
            }
        }
    }
    let bytes = bundle::encode(COMPILER_ID, entries.iter().map(Vec::as_slice))
        .map_err(|e| BuildError::Request(format!("bundle: {e}")))?;
    Ok((bytes, done))
}

/// `ptxas` as `RELOK_PTXAS` names it, else the first on the PATH; `None`
/// without one (cubins cannot be made; a build script may then leave them
/// out, as `crates/relok-example-shipped/build.rs` does).
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RELOK_PTXAS") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("ptxas")).find(|p| p.is_file())
}

/// Assembles PTX into a cubin for `sm_<sm>` with `ptxas`.
pub fn assemble(ptx: &[u8], sm: u32) -> Result<Vec<u8>, String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let ptxas = find_ptxas().ok_or(
        "ptxas not found: set RELOK_PTXAS or put it on the PATH (it comes with CUDA, or pip's nvidia-cuda-nvcc)",
    )?;
    let dir =
        std::env::temp_dir().join(format!("relok-ptxas-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    // A folder left by a crashed process of the same id is ours to reuse.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (input, output) = (dir.join("kernel.ptx"), dir.join("kernel.cubin"));
    let result = (|| {
        std::fs::write(&input, ptx).map_err(|e| format!("{}: {e}", input.display()))?;
        let out = std::process::Command::new(&ptxas)
            .arg(format!("-arch=sm_{sm}"))
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .output()
            .map_err(|e| format!("{}: {e}", ptxas.display()))?;
        if !out.status.success() {
            return Err(format!("ptxas -arch=sm_{sm} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        std::fs::read(&output).map_err(|e| format!("{}: {e}", output.display()))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCALE: &str = include_str!("../../../examples/bench/scale.rk");

    #[test]
    fn a_bundle_holds_each_artifact_under_both_keys_and_is_byte_stable() {
        let src = Source::parse("scale.rk", SCALE).unwrap();
        let (bytes, items) = bundle_of(
            &[src],
            &[CodeTarget::Cpu, CodeTarget::Wgsl],
            &[Strategy::Patch, Strategy::Table],
            &[],
            &mut |_, _, _| {},
        )
        .unwrap();
        assert_eq!(items.len(), 3, "patch is skipped for WGSL");
        let entries = bundle::decode(&bytes, COMPILER_ID).unwrap();
        assert_eq!(entries.len(), 6);
        for i in &items {
            assert!(entries.iter().any(|e| e.key == i.key));
            let alias = Key(source_key(SCALE, "scale", i.target, i.strategy, CompileOptions::default()));
            assert!(entries.iter().any(|e| e.key == alias));
        }
        let again = bundle_of(
            &[Source::parse("scale.rk", SCALE).unwrap()],
            &[CodeTarget::Cpu, CodeTarget::Wgsl],
            &[Strategy::Patch, Strategy::Table],
            &[],
            &mut |_, _, _| {},
        )
        .unwrap();
        assert_eq!(again.0, bytes);
    }

    #[test]
    fn bad_requests_and_bad_files_name_the_place() {
        let src = || Source::parse("scale.rk", SCALE).unwrap();
        let err = bundle_of(&[src()], &[CodeTarget::Cpu], &[Strategy::Bake], &[], &mut |_, _, _| {}).unwrap_err();
        assert!(err.to_string().contains("cannot be precompiled"), "{err}");
        let err = bundle_of(&[src()], &[CodeTarget::Cpu], &[Strategy::Table], &[90], &mut |_, _, _| {}).unwrap_err();
        assert!(err.to_string().contains("needs a PTX target"), "{err}");
        let err = bundle_of(&[src()], &[CodeTarget::Ptx { sm: 90 }], &[Strategy::Table], &[80], &mut |_, _, _| {})
            .unwrap_err();
        assert!(err.to_string().starts_with("cubin sm_80 needs a PTX target for sm_80 or earlier"), "{err}");
        let err = bundle_of(&[src()], &[CodeTarget::Wgsl], &[Strategy::Patch], &[], &mut |_, _, _| {}).unwrap_err();
        assert!(err.to_string().contains("patching is impossible"), "{err}");
        let err = Source::parse("bad.rk", "kernel @k( {").unwrap_err();
        assert!(matches!(err, BuildError::Parse { line: 1, .. }) && err.to_string().starts_with("bad.rk:1:"), "{err}");
        let err =
            Source::parse("bad.rk", "kernel @k(v0: u32) {\n    v1: f32 = add v0, v0\n    return\n}\n").unwrap_err();
        assert!(err.to_string().starts_with("bad.rk:2:5: error:"), "{err}");
        let err = Precompile::new().file("/nonexistent/k.rk").build().unwrap_err();
        assert!(
            matches!(err, BuildError::Read { .. }) && err.to_string().starts_with("/nonexistent/k.rk: cannot read"),
            "{err}"
        );
        let err = Precompile::new()
            .file(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/scale.rk"))
            .write_to_out_dir("x.bundle");
        assert!(std::env::var_os("OUT_DIR").is_some() || matches!(err, Err(BuildError::Request(_))));
    }
}
