//! relok's compiler: everything between a verified module and a loadable
//! artifact (docs/design.md §4).
//!
//! ```text
//! IR ─► verify ─► link runtime library ─► optimise ─► lower relocations
//!    ─► freeze manifest ─► codegen (PTX | WGSL | cpu) ─► Artifact
//! ```
//!
//! A module is verified first (`relok_ir::verify`); then
//! [`stencil::Stencil`] cuts one kernel and what it depends on out of it
//! and links the runtime library ([`link`]) — its text is what a cache key
//! hashes, with the [`target`] and options; [`artifact::compile`] optimises
//! ([`passes`]), lowers the relocations ([`lower`], records in [`reloc`],
//! state layout in [`state`]) and generates code ([`ptx`], [`wgsl`]) into
//! an [`artifact::Artifact`]. Checked mode's faults are encoded and decoded
//! in one place, [`fault`].

pub mod artifact;
pub mod fault;
mod finite;
mod in_bounds;
pub mod link;
pub mod lower;
pub mod math;
pub mod memory_limits;
pub mod passes;
pub mod ptx;
pub mod reloc;
pub mod state;
pub mod stencil;
pub mod target;
pub mod wgsl;
use relok_ir::VerifyErrors;

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
    /// The kernel exceeds a memory limit every device enforces.
    #[error(transparent)]
    MemoryLimit(#[from] memory_limits::MemoryLimitError),
}
