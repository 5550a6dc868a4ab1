//! The PTX backend (docs/design.md §3, §6): a lowered module (stage `lowered
//! bake|patch|table`) to PTX ISA 8.0 text for one compute capability.
//!
//! Shape as every backend: [`Options`], [`Error`], [`write_string`], and a
//! [`writer::Writer`] with `write_stmt` / `write_op`.
//!
//! # The ABI
//!
//! - Every kernel is a `.visible .entry` whose first parameter is the
//!   kernel state by value: `.param .align 8 .b8 relok_state[24]`, laid out
//!   by [`crate::state::STATE_LAYOUT`]. Its fields are read once at entry.
//! - The kernel's own parameters follow as `p0, p1, …`: `.u32` for `i32`,
//!   `u32` and `bool` (0 or 1), `.u64` for `i64`, `u64`, `word` and every
//!   pointer, `.f32`, `.f64`. In checked mode one hidden `.u64`
//!   `relok_len<i>` per pointer parameter `i` follows, then the seal
//!   table's address, `.u64 relok_seals` ([`checked`]).
//! - Device functions are `.func`s taking the three state fields as their
//!   first three `.b64` parameters (in checked mode a fourth, `st3`: the
//!   seal table), then their own (`bool` as `.b32`).
//!
//! # Memory
//!
//! Pointers are 64-bit addresses in the window of their address space:
//! `global` (device allocations; also every module constant, see below),
//! `shared` (variables of the kernel, `.shared`), `local` (variables whose
//! address is taken or that are aggregates, `.local`), `const` (module
//! constants). Loads and stores use the space's instruction (`ld.global`,
//! `ld.shared`, `ld.local`, `ld.global.nc` for constants). Scalar `local`
//! variables whose address is never taken live in registers.
//!
//! Module constants are initialised `.global` arrays of bytes (IR layout,
//! little-endian), so the loader can write the words of their interior
//! relocation sites. (A module with a `.global` takes the driver longer to
//! load: 90–150 µs against 40–50 µs on an H200 for a small kernel.) Their PTX names are `c_<name>`, except the constants
//! that the `patch` lowering named after a record (`relok$…`), which keep
//! that name and are `.visible`.
//!
//! # Relocations
//!
//! - bake: `word 0x…` is an immediate;
//! - patch: one `.visible .global .align 8 .u64 NAME` per `patch NAME` (in
//!   name order); the loader writes each with `cuModuleGetGlobal` + a copy;
//! - table: `state.reloc_table` is the state field; `load t[i]` reads it.
//!
//! # Semantics
//!
//! The IR's semantics (`relok_ir::eval`) are kept (where the IR leaves a
//! choice, PTX may choose otherwise than the host: the zero `min`/`max`
//! returns for `-0.0` and `+0.0`, the payloads of NaNs made by arithmetic):
//! float `add`,
//! `sub`, `mul` round to nearest with `.rn` (never contracted into FMA);
//! integer `x / 0 == 0`, `x % 0 == x`, `MIN / -1 == MIN`, `MIN % -1 == 0`
//! by selects around the division; shift amounts are taken modulo the
//! width; float to integer conversions round toward zero and saturate
//! (`cvt.rzi`, with NaN selected to 0); float `rem` is C's `fmod`, exact,
//! by binary long division on the magnitudes (see `Writer::fmod`).
//!
//! # Checked mode
//!
//! With [`Options::checked`] (on by default through
//! `CompileOptions::checked`) the PTX checks what the cpu device checks:
//! see [`checked`].
//!
//! # Throws
//!
//! With [`Options::library_throws`] (set when the module was optimised
//! with the runtime library's throws kept, as `crate::artifact` does) a
//! function's calls of `@relok_throw` / `@relok_throw_with` branch to one
//! *throw tail* per throw, written after the function's body: the
//! arguments are moved into the tail's registers at the call, and the tail
//! records the exception as the library's text does (claim the flag 0 → 1,
//! the message word, the block and thread ids read from their special
//! registers there, the two values and the flag to 2) and exits. The
//! throws' own `.func`s are not written. A throw site on the fast path is
//! then a compare and a branch not taken, and nothing of the record stays
//! live through the function.
//!
//! The output is byte-stable: registers are named after value and
//! variable numbers, labels count per function, items follow module order.

pub mod checked;
pub mod writer;

pub use writer::{entry_param_sizes, entry_signature};

use crate::reloc::{FrozenManifest, Site};
use relok_ir::{Module, Stage, Type, Value};

/// What to generate for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Compute capability × 10 (`90` for sm_90, the H100/H200).
    pub sm: u32,
    /// Checked mode ([`checked`]): bounds-checked buffer accesses, a loop
    /// budget, refused writes into host values. Off, the PTX is what it
    /// was before checked mode existed, byte for byte.
    pub checked: bool,
    /// The runtime library's throws (`@relok_throw`, `@relok_throw_with`),
    /// kept from inlining by the optimiser, are written once per function
    /// as a *throw tail* after its body: a call of one is its arguments
    /// moved into the tail's registers and a branch there. Inlined, each
    /// throw site held the record's writing, whose block and thread ids
    /// (the kernel's own values) stayed live through the kernel: the
    /// tiled matmul's Rust twin took 34 registers against 31 without them
    /// and lost a quarter of its occupancy. Off, a call of one is a call.
    /// A function of one of those names is taken to be the library's:
    /// set it only for a module optimised with the library's throws kept
    /// (`crate::artifact` does), where no other function is left.
    pub library_throws: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { sm: 90, checked: false, library_throws: false }
    }
}

/// PTX ISA version written in the header.
pub const PTX_VERSION: &str = "8.0";

/// Why a module cannot be written as PTX.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The module has not been lowered.
    #[error("the PTX backend takes a lowered module (stage {0:?})")]
    NotLowered(Stage),
    /// An operation PTX cannot express exactly.
    #[error("@{function}: {value}: {what} is not supported by the PTX backend")]
    Unsupported {
        /// The function.
        function: String,
        /// The value it defines (or the first operand of a statement).
        value: Value,
        /// What.
        what: String,
    },
    /// A type without a layout or a value of aggregate type.
    #[error("@{function}: {what}")]
    Type {
        /// The function (or constant).
        function: String,
        /// What is wrong.
        what: String,
    },
}

/// The PTX text of `module` (verified, lowered).
pub fn write_string(module: &Module, options: &Options) -> Result<String, Error> {
    if !matches!(module.stage, Stage::Lowered(_)) {
        return Err(Error::NotLowered(module.stage));
    }
    let mut w = writer::Writer::new(module, options);
    w.write()?;
    Ok(w.finish())
}

/// Checks that PTX `code` is the code of kernel `entry` with parameters
/// `params` under `manifest` — what a loader needs before handing untrusted
/// PTX (from a store or a bundle) to the driver: the entry's exact
/// signature (so the launch's parameter buffer matches; in checked mode
/// with the hidden buffer lengths and seal table, [`checked`]) and for
/// `patch` every record's global (a slot's `.u64` cell, an interior
/// site's constant).
pub fn check_code(
    code: &str,
    entry: &str,
    params: &[Type],
    manifest: &FrozenManifest,
    patch: bool,
    checked: bool,
) -> Result<(), String> {
    let sig = entry_signature(entry, params, checked)?;
    if code.matches(&sig).count() != 1 {
        return Err(format!("the PTX does not declare @{entry} with the ABI's parameters"));
    }
    if patch {
        for r in manifest.records() {
            let decl = match r.site() {
                Site::Slot => format!(".visible .global .align 8 .u64 {};", r.name()),
                Site::Interior { .. } => format!(" .b8 {}[", r.name()),
            };
            if !code.contains(&decl) {
                return Err(format!("the PTX has no global for record {}", r.name()));
            }
        }
    }
    Ok(())
}

/// The key of the machine code (a cubin) that `ptx` with entry `entry`
/// assembles to for compute capability `sm` (× 10, 90 for sm_90): SHA-256
/// of a version tag, the PTX bytes, the entry name, the JIT options (none
/// today) and the compute capability. A device's binary archive and a
/// bundle's machine code are both keyed by it, so a cubin is only ever
/// looked up for the GPU it was made for.
pub fn cubin_key(ptx: &[u8], entry: &str, sm: u32) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let sm = sm.to_le_bytes();
    for field in [&b"relok-cubin-v2"[..], ptx, entry.as_bytes(), b"jit-options:", &sm] {
        h.update((field.len() as u64).to_le_bytes());
        h.update(field);
    }
    h.finalize().into()
}
