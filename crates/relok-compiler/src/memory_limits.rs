//! The memory limits every device enforces before any driver sees a kernel
//! (docs/design.md §6): a function's `local` variables kept in memory at
//! most [`LOCAL_LIMIT`] bytes per thread, a kernel's `shared` variables at
//! most [`SHARED_LIMIT`] bytes per block.
//!
//! The cpu device refuses such a kernel when it loads it (its own layout,
//! the same limits and messages); [`check`] is what the GPU targets run
//! before writing PTX or WGSL, so a kernel refused on one device is refused
//! on all of them with the same words (a driver never compiles a
//! many-megabyte local array: lavapipe took 5 GB of host memory for 8 MB).
//!
//! A variable is "in memory" when it is an aggregate or its address is
//! taken (`addr %x`); scalar locals whose address is never taken are
//! registers and count for nothing, as on the cpu device. Sizes are summed
//! in declaration order with each variable aligned to its type.

use relok_ir::{EntityRef, FuncKind, Module, Op, StmtKind, VarKind};

/// Shared memory a kernel may declare, per block (bytes).
pub const SHARED_LIMIT: u64 = 48 * 1024;
/// Local memory one function's frame may take, per thread (bytes).
pub const LOCAL_LIMIT: u64 = 64 * 1024;

/// A kernel over a memory limit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemoryLimitError {
    /// A function's `local` variables exceed the per-thread limit.
    #[error("@{func} needs {bytes} bytes of local memory per thread, the limit is {limit}")]
    Local {
        /// The function.
        func: String,
        /// Bytes needed (`u64::MAX` when a size overflows).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// A kernel's `shared` variables exceed the per-block limit.
    #[error("kernel @{kernel} needs {bytes} bytes of shared memory, the limit is {limit}")]
    Shared {
        /// The kernel.
        kernel: String,
        /// Bytes needed (`u64::MAX` when a size overflows).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
}

/// Checks every function of `module` against the limits.
pub fn check(module: &Module) -> Result<(), MemoryLimitError> {
    for f in module.funcs.values() {
        let mut addressed = vec![false; f.vars.len()];
        relok_ir::walk_stmts(&f.body, &mut |s| {
            if let StmtKind::Let { op: Op::VarAddr(v), .. } = &s.kind {
                addressed[v.index()] = true;
            }
        });
        let (mut local, mut shared) = (0u64, 0u64);
        for (v, d) in f.vars.iter() {
            let in_memory = !d.ty.is_value_type() || addressed[v.index()];
            let add = |sum: u64| {
                d.ty.size().ok().map(|size| sum.next_multiple_of(u64::from(d.ty.align().max(1))) + u64::from(size))
            };
            match d.kind {
                VarKind::Local if in_memory => {
                    local = add(local).unwrap_or(u64::MAX);
                    if local > LOCAL_LIMIT {
                        return Err(MemoryLimitError::Local { func: f.name.clone(), bytes: local, limit: LOCAL_LIMIT });
                    }
                }
                VarKind::Shared if f.kind == FuncKind::Kernel => {
                    shared = add(shared).unwrap_or(u64::MAX);
                    if shared > SHARED_LIMIT {
                        return Err(MemoryLimitError::Shared {
                            kernel: f.name.clone(),
                            bytes: shared,
                            limit: SHARED_LIMIT,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}
