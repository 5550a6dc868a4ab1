//! relok's compiler: everything between a verified module and a loadable
//! artifact (DESIGN §4).
//!
//! ```text
//! IR ─► verify ─► link runtime library ─► optimise ─► lower relocations
//!    ─► freeze manifest ─► codegen (PTX | WGSL | cpu) ─► Artifact
//! ```
//!
//! Today the crate holds the front of that pipeline: [`prepare`] verifies a
//! module and hands back the proof ([`Prepared`]) that later stages take.
//! Linking, the optimisation passes, relocation lowering and the backends
//! arrive with the relocation and backend issues, each as a module here.

pub mod passes;
pub mod link;
pub mod lower;
pub mod reloc;
pub mod state;
use relok_ir::{Module, ModuleInfo, VerifyErrors};

/// A module that passed verification, with the verifier's analysis.
#[derive(Debug)]
pub struct Prepared {
    /// The module.
    pub module: Module,
    /// What the verifier computed (call order, barrier use, shared sizes).
    pub info: ModuleInfo,
}

/// Why compilation failed.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The module is not valid IR.
    #[error(transparent)]
    Verify(#[from] VerifyErrors),
}

/// Verifies `module`: the first stage of every compilation.
pub fn prepare(module: Module) -> Result<Prepared, CompileError> {
    let info = relok_ir::verify(&module)?;
    Ok(Prepared { module, info })
}
