//! What a compilation is for and who compiles it: the code target
//! ([`CodeTarget`]) and the strategies each supports
//! ([`CodeTarget::strategies`]), the options that change the generated code
//! ([`CompileOptions`]) and this compiler's identity ([`COMPILER_ID`]).
//!
//! These are the inputs both a cache key ([`crate::stencil::KeyInputs`])
//! and an artifact ([`crate::artifact::Artifact`]) name; they live here so
//! neither of those modules needs the other for them. `artifact`
//! re-exports them (`relok_compiler::artifact::{CodeTarget, …}`).
//!
//! [`COMPILER_ID`] is `relok-<version>-<codegen hash>`, the hash set by
//! `build.rs` over the sources that decide the output: any change to them
//! is a new identity, hence new keys and a new store folder.

use relok_ir::Strategy;
use serde::{Deserialize, Serialize};

/// This compiler's identity: version and codegen hash.
pub const COMPILER_ID: &str = concat!("relok-", env!("CARGO_PKG_VERSION"), "-", env!("RELOK_CODEGEN_HASH"));

/// What code an artifact carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CodeTarget {
    /// Lowered IR text, run by the cpu device.
    Cpu,
    /// PTX text for one compute capability (`sm` = major × 10 + minor).
    Ptx {
        /// The compute capability, e.g. 90 for the H200.
        sm: u32,
    },
    /// WGSL for wgpu (table and bake only).
    Wgsl,
}

impl CodeTarget {
    /// The target's name: `cpu`, `ptx-sm90`.
    pub fn name(self) -> String {
        match self {
            CodeTarget::Cpu => "cpu".to_owned(),
            CodeTarget::Ptx { sm } => format!("ptx-sm{sm}"),
            CodeTarget::Wgsl => "wgsl".to_owned(),
        }
    }

    /// The target named `name`: `cpu`, `ptx` (sm_90) or `ptx-smNN`.
    pub fn from_name(name: &str) -> Option<CodeTarget> {
        match name {
            "cpu" => Some(CodeTarget::Cpu),
            "ptx" => Some(CodeTarget::Ptx { sm: 90 }),
            "wgsl" => Some(CodeTarget::Wgsl),
            _ => {
                let sm: u32 = name.strip_prefix("ptx-sm")?.parse().ok()?;
                (50..=200).contains(&sm).then_some(CodeTarget::Ptx { sm })
            }
        }
    }

    /// The strategies code for this target can be compiled and loaded
    /// with, in [`Strategy::ALL`] order: every one but `patch` on WGSL (a
    /// loader cannot write a WGSL module's globals), all of them elsewhere.
    pub const fn strategies(self) -> &'static [Strategy] {
        match self {
            CodeTarget::Wgsl => &[Strategy::Bake, Strategy::Table],
            CodeTarget::Cpu | CodeTarget::Ptx { .. } => &Strategy::ALL,
        }
    }

    /// Whether this target supports `strategy` (see
    /// [`CodeTarget::strategies`]).
    pub fn supports(self, strategy: Strategy) -> bool {
        self.strategies().contains(&strategy)
    }
}

/// Options that change the generated code (all part of the key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// Run the optimiser (inline, fold, CSE, DCE) before lowering.
    pub optimize: bool,
    /// Checked mode (on by default): GPU code bounds-checks accesses to
    /// buffer parameters (and, on WGSL, the heap), bounds loop iterations
    /// and refuses writes into host values, reporting each as the cpu
    /// device's fault (docs/wgpu.md and docs/cuda.md, "Checked mode", list
    /// what each target checks). The cpu device always checks.
    pub checked: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { optimize: true, checked: true }
    }
}

impl CompileOptions {
    /// The options from [`CompileOptions::to_bytes`]'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<CompileOptions> {
        let flag = |b: u8| (b <= 1).then_some(b == 1);
        match *bytes {
            [optimize, checked] => Some(CompileOptions { optimize: flag(optimize)?, checked: flag(checked)? }),
            _ => None,
        }
    }

    /// The options as key bytes.
    pub fn to_bytes(self) -> Vec<u8> {
        vec![u8::from(self.optimize), u8::from(self.checked)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [CodeTarget::Cpu, CodeTarget::Ptx { sm: 90 }, CodeTarget::Ptx { sm: 75 }, CodeTarget::Wgsl] {
            assert_eq!(CodeTarget::from_name(&t.name()), Some(t));
        }
        assert_eq!(CodeTarget::from_name("ptx"), Some(CodeTarget::Ptx { sm: 90 }));
        assert_eq!(CodeTarget::from_name("ptx-sm20"), None);
    }

    #[test]
    fn wgsl_supports_every_strategy_but_patch() {
        assert_eq!(CodeTarget::Wgsl.strategies(), [Strategy::Bake, Strategy::Table]);
        assert!(!CodeTarget::Wgsl.supports(Strategy::Patch));
        for t in [CodeTarget::Cpu, CodeTarget::Ptx { sm: 90 }] {
            assert_eq!(t.strategies(), Strategy::ALL);
        }
        // Listed in Strategy::ALL order.
        for t in [CodeTarget::Cpu, CodeTarget::Ptx { sm: 90 }, CodeTarget::Wgsl] {
            let order: Vec<_> = Strategy::ALL.into_iter().filter(|&s| t.supports(s)).collect();
            assert_eq!(t.strategies(), order.as_slice());
        }
    }
}
