//! relok's compiler: everything between a verified module and a loadable
//! artifact (DESIGN §4).
//!
//! ```text
//! IR ─► verify ─► link runtime library ─► optimise ─► lower relocations
//!    ─► freeze manifest ─► codegen (PTX | WGSL | cpu) ─► Artifact
//! ```
//!
//! [`prepare`] verifies a module and hands back the proof ([`Prepared`]);
//! [`stencil::Stencil`] cuts one kernel and what it depends on out of a
//! module and links the runtime library ([`link`]) — its text is what a
//! cache key hashes; [`artifact::compile`] optimises ([`passes`]), lowers
//! the relocations ([`lower`], records in [`reloc`], state layout in
//! [`state`]) and generates code into an [`artifact::Artifact`].

pub mod artifact;
pub mod passes;
pub mod ptx;
pub mod link;
pub mod lower;
pub mod reloc;
pub mod state;
pub mod stencil;
pub mod wgsl;
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
    /// The module has no function of that name.
    #[error("no kernel @{0} in the module")]
    UnknownKernel(String),
    /// The function is not a kernel.
    #[error("@{name} is {what}, not a kernel")]
    NotAKernel {
        /// The function.
        name: String,
        /// What it is (`a device function`, `an imported function`).
        what: &'static str,
    },
    /// Linking the runtime library failed.
    #[error("linking: {0}")]
    Link(#[from] link::LinkError),
    /// The optimiser rejected the module.
    #[error("optimising: {0}")]
    Optimise(#[from] passes::PassError),
    /// Relocation lowering failed.
    #[error("lowering: {0}")]
    Lower(#[from] lower::LowerError),
    /// PTX generation failed.
    #[error("PTX: {0}")]
    Ptx(#[from] ptx::Error),
    /// WGSL generation failed.
    #[error("WGSL: {0}")]
    Wgsl(#[from] wgsl::Error),
}

/// Verifies `module`: the first stage of every compilation.
pub fn prepare(module: Module) -> Result<Prepared, CompileError> {
    let info = relok_ir::verify(&module)?;
    Ok(Prepared { module, info })
}
