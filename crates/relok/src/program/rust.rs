//! The Rust-kernel glue of a [`Program`](super::Program): what a Rust kernel's program
//! reads from the host ([`HostUse`]: `#[relok::host]` statics and
//! `relok::Global`s), delivered on a context whenever one of its kernels
//! is loaded, however it is loaded; and the runtime globals a program
//! declares.

use crate::cells::{HostObject, global_name, is_global_name, same_static};
use crate::core::Shared;
use crate::core::lock;
use crate::error::{Error, Result};
use relok_runtime::DeviceMemory;
use std::sync::Arc;

/// What a Rust kernel reads from the host, kept with its [`Program`](super::Program):
/// whichever way one of its kernels is loaded (its `launch`,
/// `Context::kernel` or `Context::kernels` of its `program()`), the
/// statics' bytes are delivered and the globals declared first
/// ([`HostUse::prepare`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct HostUse {
    /// The `#[relok::host]` statics it reads.
    pub(crate) statics: Vec<&'static dyn HostObject>,
    /// The runtime globals (`relok::Global`) it names, with their sizes.
    pub(crate) globals: Vec<(&'static str, usize)>,
}

impl HostUse {
    /// Delivers the statics' bytes (this process's, whatever a stored
    /// artifact was compiled with) and declares the globals on `ctx`.
    pub(crate) fn prepare(&self, ctx: &Arc<Shared>) -> Result<()> {
        for s in &self.statics {
            deliver(ctx, *s)?;
        }
        for (name, bytes) in &self.globals {
            declare_user_global(ctx, name, *bytes)?;
        }
        Ok(())
    }
}

/// Writes a host static's bytes into its runtime global on `ctx`'s device
/// (each time a context loads a kernel that reads it: the bytes of this
/// process, whatever a stored artifact was compiled with).
fn deliver(ctx: &Arc<Shared>, s: &'static dyn HostObject) -> Result<()> {
    let name = global_name(s.path());
    {
        let mut owners = lock(&ctx.host_statics);
        let owner = *owners.entry(name.clone()).or_insert(s);
        if !same_static(owner, s) {
            return Err(Error::HostStaticConflict {
                identity: s.path().to_owned(),
                first: owner.location().to_owned(),
                second: s.location().to_owned(),
            });
        }
    }
    let bytes = s.bytes();
    declare_global(ctx, &name, bytes.len())?;
    let cell = ctx
        .session
        .global_cell(&ctx.device, &name)
        .map_err(relok_runtime::ProgramError::from)
        .map_err(Error::Compile)?;
    if !bytes.is_empty() {
        ctx.device.write_bytes(cell, bytes)?;
    }
    Ok(())
}

/// [`declare_global`] for a [`crate::Global`] of the program: refused
/// under a name of a cell relok writes itself (a host static's
/// `relok_host_…`, [`global_name`]). The runtime library's
/// `relok_counter` stays shared on purpose.
pub(crate) fn declare_user_global(ctx: &Shared, name: &str, bytes: usize) -> Result<()> {
    if is_global_name(name) {
        return Err(Error::ReservedGlobal { name: name.to_owned() });
    }
    declare_global(ctx, name, bytes)
}

/// Declares the runtime global `name` of `bytes` bytes (at least 8) in
/// `ctx`'s session; declared already (by a kernel that named it, with the
/// runtime's default size, or by the program) is fine.
pub(crate) fn declare_global(ctx: &Shared, name: &str, bytes: usize) -> Result<()> {
    match ctx.session.declare_global(name, (bytes as u64).max(8)) {
        Ok(()) | Err(relok_runtime::SessionError::GlobalSizeConflict { .. }) => Ok(()),
        Err(e) => Err(Error::Compile(e.into())),
    }
}
