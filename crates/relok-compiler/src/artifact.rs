//! Artifacts: a compiled kernel that loads without compiling (docs/design.md §4,
//! §5) — its target code, entry, ABI, frozen manifest, host values, key and
//! the identity of the compiler that made it.
//!
//! [`compile`] turns a [`Stencil`] into an [`Artifact`] (optimise, lower
//! the relocations, generate code). [`Artifact::to_payload`] serialises it
//! with postcard; a cache frames the payload with its own header and
//! checksum (`relok_cache::entry`). [`Artifact::from_payload`] and
//! [`Artifact::check`] are the way back: every field a loader relies on is
//! checked, each mismatch with its own error.
//!
//! Code per target:
//!
//! - [`CodeTarget::Cpu`]: the lowered module in canonical text; the cpu
//!   device interprets it. [`Artifact::lowered`] parses and verifies it.
//! - [`CodeTarget::Ptx`]: PTX text ([`crate::ptx`]); the CUDA driver
//!   compiles it.
//!
//! What an artifact is compiled for — [`CodeTarget`], [`CompileOptions`] —
//! and by whom — [`COMPILER_ID`] — are defined in [`crate::target`] and
//! re-exported here.

pub use crate::target::{COMPILER_ID, CodeTarget, CompileOptions};

use crate::CompileError;
use crate::lower::{HostValue, Lowered, WordResolver, lower};
use crate::passes::optimize_keeping;
use crate::reloc::FrozenManifest;
use crate::state::STATE_LAYOUT_VERSION;
use crate::stencil::Stencil;
use relok_ir::{FuncKind, Stage, Strategy};
use serde::{Deserialize, Serialize};

/// How a kernel is called.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Abi {
    /// The kernel's parameter types, printed.
    pub params: Vec<String>,
    /// Its length parameters ([`relok_ir::LenParam`]): (the length's
    /// parameter index, the pointer's), which a device checks at launch
    /// wherever it checks accesses ([`Artifact::len_params`]).
    pub lens: Vec<(u32, u32)>,
    /// The kernel-state layout version the code was generated for.
    pub state_layout: u32,
    /// The block shape every launch must have
    /// ([`relok_ir::Function::block`]), checked by every device.
    pub block: Option<[u32; 3]>,
}

/// A compiled kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// The key it was compiled under ([`Stencil::key`]).
    pub key: [u8; 32],
    /// [`COMPILER_ID`] of the compiler that made it.
    pub compiler: String,
    /// What `code` is.
    pub target: CodeTarget,
    /// How host objects reach the code.
    #[serde(with = "strategy_name")]
    pub strategy: Strategy,
    /// The kernel's name in `code`.
    pub entry: String,
    /// Parameters and state layout.
    pub abi: Abi,
    /// The relocation records (rank = table index).
    pub manifest: FrozenManifest,
    /// The host values the records name, for the loader to register.
    pub values: Vec<HostValue>,
    /// The target code.
    pub code: Vec<u8>,
    /// `Some(source key)` when this copy is stored under a source key (an
    /// alias, see [`crate::stencil::source_key`]): an entry says which of
    /// the two it is, so a checker can tell an alias from an artifact
    /// under a wrong key.
    pub alias: Option<[u8; 32]>,
    /// What it was compiled from: the stencil's canonical text
    /// ([`Stencil::text`]), from which [`Artifact::rebuild_check`]
    /// recomputes the key and the code.
    pub source: String,
    /// The [`CompileOptions`] it was compiled with
    /// ([`CompileOptions::to_bytes`]).
    pub options: Vec<u8>,
    /// For `bake`: the identity of the device whose words are baked in
    /// (the runtime's device id), set by whoever resolved them; a loader
    /// refuses the artifact on any other device. Never serialised: baked
    /// artifacts are never persisted.
    #[serde(skip)]
    pub baked_for: Option<u64>,
}

/// Why an artifact cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    /// The payload is not a serialised artifact.
    #[error("artifact payload does not decode: {0}")]
    Payload(String),
    /// Made by another compiler build.
    #[error("artifact was made by '{found}', this is '{expected}'")]
    Compiler {
        /// The artifact's compiler.
        found: String,
        /// Ours.
        expected: String,
    },
    /// Compiled under another key.
    #[error("artifact was compiled under another key")]
    Key,
    /// For another target or strategy.
    #[error("artifact is for {found}, expected {expected}")]
    Mismatch {
        /// What it is (`cpu/table`).
        found: String,
        /// What was asked for.
        expected: String,
    },
    /// A host value's bytes do not hash to its key: the entry was changed
    /// after it was written.
    #[error("host value {key} does not hash to its key (corrupt or forged)")]
    Value {
        /// The value's key, in hex.
        key: String,
    },
    /// Recompiling the artifact's source gives other bytes: its code (or
    /// another field) is not what its source compiles to.
    #[error("artifact for @{entry} is not what its source compiles to: its {field} differs (forged or corrupt)")]
    Forged {
        /// The entry.
        entry: String,
        /// The first field that differs (`key`, `code`, `manifest`, …).
        field: &'static str,
    },
    /// The artifact cannot be rebuilt to prove its code (`bake`, never
    /// stored, or options this compiler does not know).
    #[error("artifact for @{entry} cannot be rebuilt: {reason}")]
    NotRebuildable {
        /// The entry.
        entry: String,
        /// Why.
        reason: String,
    },
    /// Another kernel-state layout.
    #[error("artifact uses kernel-state layout {found}, this runtime uses {expected}")]
    StateLayout {
        /// The artifact's.
        found: u32,
        /// [`STATE_LAYOUT_VERSION`].
        expected: u32,
    },
    /// The code does not parse, verify or match the ABI.
    #[error("artifact code for @{entry}: {reason}")]
    Code {
        /// The entry.
        entry: String,
        /// Why.
        reason: String,
    },
}

/// Optimises, lowers and generates code for `stencil`: the artifact for
/// `target` and `strategy`. `words` resolves targets for `bake` (ignored
/// otherwise).
pub fn compile(
    stencil: &Stencil,
    target: CodeTarget,
    strategy: Strategy,
    options: CompileOptions,
    words: Option<WordResolver<'_>>,
) -> Result<Artifact, CompileError> {
    if target == CodeTarget::Wgsl {
        crate::math::check_wgsl(&stencil.module)?;
    }
    let lowered = lower_stencil_for(stencil, target, strategy, options, words)?;
    let kernel = lowered.module.func_by_name(&lowered.kernel).map(|k| &lowered.module.funcs[k]);
    let params = kernel.map(|k| k.params.iter().map(|&p| k.values[p].ty.to_string()).collect()).unwrap_or_default();
    let lens = kernel.map(len_indices).unwrap_or_default();
    let block = kernel.and_then(|k| k.block);
    if target != CodeTarget::Cpu {
        // The cpu device checks the same limits when it loads the code.
        crate::memory_limits::check(&lowered.module)?;
    }
    let code = match target {
        CodeTarget::Cpu => relok_ir::print(&lowered.module).into_bytes(),
        CodeTarget::Ptx { sm } => {
            let ptx = crate::ptx::Options { sm, checked: options.checked, library_throws: options.optimize };
            crate::ptx::write_string(&lowered.module, &ptx)?.into_bytes()
        }
        CodeTarget::Wgsl => crate::wgsl::write_string(
            &lowered.module,
            &crate::wgsl::Options { checked: options.checked, library_throws: options.optimize },
        )?
        .into_bytes(),
    };
    Ok(Artifact {
        key: stencil.key(target, strategy, options),
        compiler: COMPILER_ID.to_owned(),
        target,
        strategy,
        entry: lowered.kernel,
        abi: Abi { params, lens, state_layout: STATE_LAYOUT_VERSION, block },
        manifest: lowered.manifest,
        values: lowered.values,
        code,
        alias: None,
        source: stencil.text.clone(),
        options: options.to_bytes(),
        baked_for: None,
    })
}

/// Optimises and lowers `stencil` (the first half of [`compile`]). A
/// `table` lowering tells which host objects a kernel names before any
/// word is resolved: what `bake` needs first.
pub fn lower_stencil(
    stencil: &Stencil,
    strategy: Strategy,
    options: CompileOptions,
    words: Option<WordResolver<'_>>,
) -> Result<Lowered, CompileError> {
    lower_stencil_for(stencil, CodeTarget::Cpu, strategy, options, words)
}

/// [`lower_stencil`] for `target`: for WGSL and PTX the runtime library's
/// throws stay functions, written once per shader or function
/// ([`crate::wgsl::throws`], the PTX writer's throw tails); the cpu device
/// inlines everything.
fn lower_stencil_for(
    stencil: &Stencil,
    target: CodeTarget,
    strategy: Strategy,
    options: CompileOptions,
    words: Option<WordResolver<'_>>,
) -> Result<Lowered, CompileError> {
    let mut m = stencil.module.clone();
    if options.optimize {
        let keep = if target == CodeTarget::Cpu { Vec::new() } else { crate::link::library_throws(&m) };
        optimize_keeping(&mut m, &keep)?;
    }
    Ok(lower(&m, &stencil.kernel, strategy, words)?)
}

impl Artifact {
    /// This artifact as the alias stored under `source_key`.
    pub fn alias_under(&self, source_key: [u8; 32]) -> Artifact {
        Artifact { alias: Some(source_key), ..self.clone() }
    }

    /// The artifact serialised (postcard).
    pub fn to_payload(&self) -> Result<Vec<u8>, ArtifactError> {
        postcard::to_allocvec(self).map_err(|e| ArtifactError::Payload(e.to_string()))
    }

    /// An artifact from its serialised bytes; trailing bytes are an error.
    pub fn from_payload(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        match postcard::take_from_bytes::<Artifact>(bytes) {
            Ok((a, [])) => Ok(a),
            Ok((_, rest)) => Err(ArtifactError::Payload(format!("{} bytes after the artifact", rest.len()))),
            Err(e) => Err(ArtifactError::Payload(e.to_string())),
        }
    }

    /// Checks that this artifact is the one asked for: our compiler, the
    /// key, target, strategy and state layout.
    pub fn check(&self, key: &[u8; 32], target: CodeTarget, strategy: Strategy) -> Result<(), ArtifactError> {
        if self.compiler != COMPILER_ID {
            return Err(ArtifactError::Compiler { found: self.compiler.clone(), expected: COMPILER_ID.to_owned() });
        }
        if &self.key != key {
            return Err(ArtifactError::Key);
        }
        if (self.target, self.strategy) != (target, strategy) {
            return Err(ArtifactError::Mismatch {
                found: format!("{}/{}", self.target.name(), self.strategy),
                expected: format!("{}/{strategy}", target.name()),
            });
        }
        if self.abi.state_layout != STATE_LAYOUT_VERSION {
            return Err(ArtifactError::StateLayout { found: self.abi.state_layout, expected: STATE_LAYOUT_VERSION });
        }
        if let Some(v) = self.values.iter().find(|v| crate::reloc::ValueKey::of(&v.type_tag, &v.bytes) != v.key) {
            let key = v.key.0.iter().map(|b| format!("{b:02x}")).collect();
            return Err(ArtifactError::Value { key });
        }
        Ok(())
    }

    /// Proves the artifact's code (docs/cache.md, "What is trusted"):
    /// parses its source, recomputes the key from it (the key is a hash of
    /// the source, target, strategy, options and compiler), compiles it
    /// again and compares every field with this artifact, byte for byte
    /// (codegen is byte-stable). A forged code, manifest, value or key
    /// fails with [`ArtifactError::Forged`] naming the first field that
    /// differs. `bake` artifacts hold one device's words and are never
    /// stored: [`ArtifactError::NotRebuildable`].
    pub fn rebuild_check(&self) -> Result<(), ArtifactError> {
        let cannot = |reason: String| ArtifactError::NotRebuildable { entry: self.entry.clone(), reason };
        let forged = |field: &'static str| ArtifactError::Forged { entry: self.entry.clone(), field };
        if self.strategy == Strategy::Bake {
            return Err(cannot("a baked artifact holds one device's words".to_owned()));
        }
        let options = CompileOptions::from_bytes(&self.options)
            .ok_or_else(|| cannot(format!("unknown options {:?}", self.options)))?;
        let module = relok_ir::parse(&self.source).map_err(|_| forged("source"))?;
        let module = relok_ir::VerifiedModule::new(module).map_err(|_| forged("source"))?;
        let stencil = Stencil::new(&module, &self.entry).map_err(|_| forged("source"))?;
        if stencil.text != self.source {
            return Err(forged("source"));
        }
        if stencil.key(self.target, self.strategy, options) != self.key {
            return Err(forged("key"));
        }
        let again = compile(&stencil, self.target, self.strategy, options, None).map_err(|e| cannot(e.to_string()))?;
        let fields: [(&'static str, bool); 8] = [
            ("compiler", again.compiler == self.compiler),
            ("target", again.target == self.target),
            ("entry", again.entry == self.entry),
            ("abi", again.abi == self.abi),
            ("manifest", again.manifest == self.manifest),
            ("values", again.values == self.values),
            ("code", again.code == self.code),
            ("options", again.options == self.options),
        ];
        match fields.iter().find(|(_, same)| !same) {
            Some((field, _)) => Err(forged(field)),
            None => Ok(()),
        }
    }

    /// Checks the code against the rest of the artifact, as a loader must
    /// before trusting it (a store entry or a bundle): for the cpu target
    /// the code parses, verifies, has the ABI's kernel and every record's
    /// site ([`Artifact::lowered`] + manifest validation); for PTX the
    /// entry's exact signature and the patch globals
    /// ([`crate::ptx::check_code`]); for WGSL the entry and the bindings
    /// ([`crate::wgsl::check_code`]). First of all, the target supports
    /// the strategy ([`CodeTarget::strategies`]).
    pub fn validate(&self) -> Result<(), ArtifactError> {
        let bad = |reason: String| ArtifactError::Code { entry: self.entry.clone(), reason };
        if !self.target.supports(self.strategy) {
            return Err(bad(format!("target {} does not support strategy {}", self.target.name(), self.strategy)));
        }
        match self.target {
            CodeTarget::Cpu => {
                let lowered = self.lowered()?;
                if self.strategy != Strategy::Bake {
                    lowered.manifest.validate(&crate::lower::site_table(&lowered)).map_err(|e| bad(e.to_string()))?;
                }
                Ok(())
            }
            CodeTarget::Wgsl | CodeTarget::Ptx { .. } => {
                let code = std::str::from_utf8(&self.code).map_err(|e| bad(e.to_string()))?;
                let params = self.param_types()?;
                self.len_params()?;
                match self.target {
                    CodeTarget::Wgsl => crate::wgsl::check_code(code, &self.entry, &params),
                    _ => {
                        let checked =
                            self.compile_options().ok_or_else(|| bad("unreadable compile options".into()))?.checked;
                        crate::ptx::check_code(
                            code,
                            &self.entry,
                            &params,
                            &self.manifest,
                            self.strategy == Strategy::Patch,
                            checked,
                        )
                    }
                }
                .map_err(bad)
            }
        }
    }

    /// The [`CompileOptions`] it was compiled with, `None` when its
    /// option bytes are not [`CompileOptions::to_bytes`]'s.
    pub fn compile_options(&self) -> Option<CompileOptions> {
        CompileOptions::from_bytes(&self.options)
    }

    /// The kernel's length parameters ([`Abi::lens`]) as (length index,
    /// pointer index) pairs, checked against the parameter types: each
    /// length a `u32`, each pointer a pointer, no parameter twice.
    pub fn len_params(&self) -> Result<Vec<(usize, usize)>, ArtifactError> {
        let params = self.param_types()?;
        let mut seen = std::collections::HashSet::new();
        self.abi
            .lens
            .iter()
            .map(|&(len, of)| {
                let (len, of) = (len as usize, of as usize);
                let ok = matches!(params.get(len), Some(relok_ir::Type::Scalar(relok_ir::Scalar::U32)))
                    && matches!(params.get(of), Some(relok_ir::Type::Ptr(..)))
                    && seen.insert(len)
                    && seen.insert(of);
                ok.then_some((len, of)).ok_or_else(|| ArtifactError::Code {
                    entry: self.entry.clone(),
                    reason: format!("ABI: parameter {len} is no length of parameter {of}"),
                })
            })
            .collect()
    }

    /// The kernel's parameter types, parsed from the ABI.
    pub fn param_types(&self) -> Result<Vec<relok_ir::Type>, ArtifactError> {
        self.abi
            .params
            .iter()
            .map(|p| relok_ir::parse_type(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ArtifactError::Code { entry: self.entry.clone(), reason: format!("ABI: {e}") })
    }

    /// The lowered module of a [`CodeTarget::Cpu`] artifact: its code
    /// parsed and verified, of stage `lowered <strategy>`, with the entry a
    /// kernel of the ABI's parameters.
    pub fn lowered(&self) -> Result<Lowered, ArtifactError> {
        let bad = |reason: String| ArtifactError::Code { entry: self.entry.clone(), reason };
        let text = std::str::from_utf8(&self.code).map_err(|e| bad(e.to_string()))?;
        let module = relok_ir::parse(text).map_err(|e| bad(e.to_string()))?;
        relok_ir::verify(&module).map_err(|e| bad(e.to_string()))?;
        if module.stage != Stage::Lowered(self.strategy) {
            return Err(bad(format!("stage {:?}, expected lowered {}", module.stage, self.strategy)));
        }
        let k = module.func_by_name(&self.entry).map(|k| &module.funcs[k]);
        let params: Option<Vec<String>> = k
            .filter(|k| k.kind == FuncKind::Kernel)
            .map(|k| k.params.iter().map(|&p| k.values[p].ty.to_string()).collect());
        if params.as_ref() != Some(&self.abi.params) || k.map(len_indices).as_ref() != Some(&self.abi.lens) {
            return Err(bad("no kernel of the ABI's parameters".into()));
        }
        Ok(Lowered { module, kernel: self.entry.clone(), manifest: self.manifest.clone(), values: self.values.clone() })
    }
}

/// `k`'s length parameters ([`relok_ir::LenParam`]) as (length index,
/// pointer index) pairs.
pub fn len_indices(k: &relok_ir::Function) -> Vec<(u32, u32)> {
    let index = |v| k.params.iter().position(|&p| p == v).unwrap_or(usize::MAX) as u32;
    k.lens.iter().map(|l| (index(l.len), index(l.of))).collect()
}

/// A [`Strategy`] in serialised form: its name.
mod strategy_name {
    use relok_ir::Strategy;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(s: &Strategy, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(s.name())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Strategy, D::Error> {
        let name = <&str>::deserialize(d)?;
        Strategy::from_name(name).ok_or_else(|| serde::de::Error::custom(format!("unknown strategy {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: &str = "\
kernel @k(v0: ptr<global, word>) {
    v1: word = ref :circle
    store v0, v1
    return
}
";

    fn artifact(strategy: Strategy) -> Artifact {
        let m = relok_ir::VerifiedModule::new(relok_ir::parse(K).unwrap()).expect("verifies");
        let s = Stencil::new(&m, "k").unwrap();
        compile(&s, CodeTarget::Cpu, strategy, CompileOptions::default(), None).unwrap()
    }

    #[test]
    fn payload_round_trip_and_checks() {
        let a = artifact(Strategy::Table);
        let b = Artifact::from_payload(&a.to_payload().unwrap()).unwrap();
        assert_eq!(a, b);
        assert_eq!(b.check(&a.key, CodeTarget::Cpu, Strategy::Table), Ok(()));
        assert_eq!(b.check(&[0; 32], CodeTarget::Cpu, Strategy::Table), Err(ArtifactError::Key));
        assert_eq!(
            b.check(&a.key, CodeTarget::Cpu, Strategy::Patch).unwrap_err().to_string(),
            "artifact is for cpu/table, expected cpu/patch"
        );
        let l = b.lowered().unwrap();
        assert_eq!(l.manifest.len(), 1);
        assert_eq!(b.abi.params, ["ptr<global, word>"]);
        let mut other = b.clone();
        other.compiler = "relok-0.0.0-0".into();
        assert!(matches!(other.check(&a.key, CodeTarget::Cpu, Strategy::Table), Err(ArtifactError::Compiler { .. })));
        let mut bad = b;
        bad.abi.params.clear();
        assert!(bad.lowered().unwrap_err().to_string().contains("no kernel of the ABI's parameters"));
    }

    #[test]
    fn validate_checks_the_code_against_the_abi_and_the_manifest() {
        for s in [Strategy::Patch, Strategy::Table] {
            let m = relok_ir::VerifiedModule::new(relok_ir::parse(K).unwrap()).expect("verifies");
            let st = Stencil::new(&m, "k").unwrap();
            let a = compile(&st, CodeTarget::Ptx { sm: 90 }, s, CompileOptions::default(), None).unwrap();
            assert_eq!(a.validate(), Ok(()), "{s}");
            let mut wrong_abi = a.clone();
            wrong_abi.abi.params = vec!["u32".into()];
            assert!(wrong_abi.validate().unwrap_err().to_string().contains("ABI's parameters"), "{s}");
            let mut other_entry = a.clone();
            other_entry.entry = "nope".into();
            assert!(other_entry.validate().is_err(), "{s}");
            if s == Strategy::Patch {
                let mut no_global = a.clone();
                let name = a.manifest.records()[0].name().to_owned();
                no_global.code = String::from_utf8(a.code.clone()).unwrap().replace(&name, "other").into_bytes();
                assert!(no_global.validate().unwrap_err().to_string().contains("no global for record"), "{s}");
            }
        }
        let cpu = artifact(Strategy::Table);
        assert_eq!(cpu.validate(), Ok(()));
        let mut broken = cpu;
        broken.code = b"kernel @k(".to_vec();
        assert!(broken.validate().is_err());
        // A WGSL artifact claiming `patch` is refused before its code is read.
        let m = relok_ir::VerifiedModule::new(relok_ir::parse(K).unwrap()).expect("verifies");
        let st = Stencil::new(&m, "k").unwrap();
        let mut wgsl = compile(&st, CodeTarget::Wgsl, Strategy::Table, CompileOptions::default(), None).unwrap();
        assert_eq!(wgsl.validate(), Ok(()));
        wgsl.strategy = Strategy::Patch;
        assert!(wgsl.validate().unwrap_err().to_string().contains("target wgsl does not support strategy patch"));
    }

    #[test]
    fn trailing_and_garbage_payloads() {
        let mut p = artifact(Strategy::Patch).to_payload().unwrap();
        p.push(0);
        assert!(Artifact::from_payload(&p).unwrap_err().to_string().contains("1 bytes after"));
        assert!(Artifact::from_payload(&[0xff; 16]).is_err());
    }

    #[test]
    fn compiler_id_has_version_and_hash() {
        assert!(COMPILER_ID.starts_with(concat!("relok-", env!("CARGO_PKG_VERSION"), "-")));
        assert_eq!(COMPILER_ID.rsplit('-').next().map(str::len), Some(16));
    }

    #[test]
    fn a_rebuilt_artifact_proves_its_code_and_a_forged_one_fails() {
        let m =
            relok_ir::VerifiedModule::new(relok_ir::parse(include_str!("../../../examples/reloc/lookup.rk")).unwrap())
                .expect("verifies");
        let s = Stencil::new(&m, "lookup").unwrap();
        for target in [CodeTarget::Cpu, CodeTarget::Wgsl, CodeTarget::Ptx { sm: 90 }] {
            let a = compile(&s, target, Strategy::Table, CompileOptions::default(), None).unwrap();
            assert_eq!(a.rebuild_check(), Ok(()), "{}", target.name());
            // Changed code, a changed value (with its key recomputed so the
            // value check passes), a changed source: each is named.
            let mut code = a.clone();
            let last = code.code.len() - 2;
            code.code[last] ^= 1;
            assert!(
                matches!(code.rebuild_check(), Err(ArtifactError::Forged { field: "code", .. })),
                "{}",
                target.name()
            );
            let mut value = a.clone();
            value.values[0].bytes[0] ^= 1;
            assert!(matches!(value.check(&a.key, target, Strategy::Table), Err(ArtifactError::Value { .. })));
            value.values[0].key = crate::reloc::ValueKey::of(&value.values[0].type_tag, &value.values[0].bytes);
            assert!(matches!(value.rebuild_check(), Err(ArtifactError::Forged { field: "values", .. })));
            let mut source = a.clone();
            source.source = source.source.replace("const 256", "const 255");
            assert!(
                matches!(source.rebuild_check(), Err(ArtifactError::Forged { field: "key", .. })),
                "{:?}",
                source.rebuild_check()
            );
        }
        let baked =
            compile(&s, CodeTarget::Cpu, Strategy::Bake, CompileOptions::default(), Some(&|_| Ok(0x1000))).unwrap();
        assert!(matches!(baked.rebuild_check(), Err(ArtifactError::NotRebuildable { .. })));
    }

    #[test]
    fn options_round_trip_through_their_bytes() {
        for optimize in [false, true] {
            for checked in [false, true] {
                let o = CompileOptions { optimize, checked };
                assert_eq!(CompileOptions::from_bytes(&o.to_bytes()), Some(o));
            }
        }
        assert_eq!(CompileOptions::from_bytes(&[2, 0]), None);
        assert_eq!(CompileOptions::from_bytes(&[1]), None);
    }
}
