//! The WGSL backend (issue 6): a lowered module (`lowered table`
//! or `lowered bake`) to WGSL for wgpu, laid out as docs/wgpu.md describes.
//!
//! Shape as every backend: [`Options`], [`Error`], [`write_string`], and a
//! [`writer::Writer`]. The bindings and the arguments buffer the code and
//! the device share are described once, in [`bindings`].
//!
//! # What this part covers
//!
//! `bool`, `i32`, `u32`, `f32` values; `word`, `i64` and `u64` as
//! `vec2<u32>` (low, high), with the IR's exact semantics (wrapping
//! arithmetic, `mul` from 16-bit partial products, `div`/`rem` by long
//! division with the rules for zero and `MIN / -1`, shifts modulo 64,
//! signed or unsigned compares, conversions between every pair of
//! `bool`/`i32`/`u32`/`f32`/`i64`/`u64`/`f64` as Rust's `as`); f32 `rem`
//! as an exact `fmod`; `f64` as its bits in a `vec2<u32>`, every operation
//! emulated exactly as IEEE binary64 computes it on x86-64 (the cpu
//! device): `add`/`sub`/`mul`/`div`/`sqrt` correctly rounded to nearest
//! even with subnormals, `rem` an exact `fmod`, `min`/`max` as Rust's,
//! IEEE compares, NaN results as SSE gives them (the first NaN operand
//! quieted, the default NaN for an invalid operation); pointers with a statically known base — a buffer
//! parameter, the per-device heap (`wordptr`), the relocation table, the
//! exception record (`state.exception`), a `shared` or `local` variable, a
//! module constant — and a run-time byte offset; loads and stores of those
//! scalars, plain but where the memory has atomic words (a buffer, the
//! heap or a `shared` variable that an atomic or a sub-word store touches:
//! sub-word stores are atomic and/or there; docs/wgpu.md, "Memory accesses
//! and barriers"), 64-bit ones as two words;
//! `state.rng_seed` (slots 0–1 of `relok_args`, [`bindings::SEED_SLOT`]); atomics on `u32`/`i32`;
//! structured control flow; builtins; barriers (`storageBarrier()`,
//! `workgroupBarrier()` or both, as the accesses around them need); f32
//! `sqrt` correctly rounded (`relok_fsqrt32`); device functions without
//! pointer parameters.
//!
//! The longer operations are WGSL helper functions (`relok_mul64`,
//! `relok_udivmod64`, …), emitted once per module when used, in a fixed
//! order. Float tests for NaN, float → int and int → float conversions and
//! `fmod` work on the bits: a Vulkan driver may assume no NaNs, and WGSL
//! leaves the rounding of an inexact int → float conversion open.
//!
//! 64-bit atomics (WGSL has only 32-bit ones):
//! - `atomic.add`: an `atomicAdd` of the low words, the carry from the old
//!   low word, an `atomicAdd` of high + carry to the high word. The memory
//!   ends exact; the returned old value is (old low, old high), whose high
//!   half may miss a carry (or high part) another thread adds in between.
//! - `atomic.cas`: only when `expected` and `new` are `const` values of the
//!   function with equal high halves: the high word is loaded first (if it
//!   differs the swap fails and returns (low, high) as loaded), then a
//!   32-bit compare-exchange on the low word (`atomicMax(1)` for a swap
//!   from 0 to 1, which needs no loop). Exact while nothing changes
//!   the high word meanwhile — true of the exception flag that
//!   `relok_throw` claims (0 → 1, then 1 → 2 by an add with values: its
//!   high word stays 0).
//!
//! Refused with [`Error::Unsupported`], naming the function and the value:
//! a 64-bit `atomic.cas` whose operands are not such constants, 64-bit
//! `atomic.xchg`/`min`/`max` (a compare-exchange on one half cannot make
//! them atomic), a pointer without a static base, and the `patch` strategy
//! (a loader cannot write a WGSL module's globals: not among
//! [`CodeTarget::strategies`] of [`CodeTarget::Wgsl`]).
//!
//! The number of bindings is not refused here: no count is refused by every
//! adapter, so the wgpu device checks it against its adapter's limit when
//! it loads the kernel ([`limits`], [`Error::TooManyStorageBuffers`]).
//!
//! Byte-stable: names come from value, variable and constant numbers.

pub mod bindings;
pub mod bounds;
mod helpers;
pub mod limits;
pub mod sealed;
pub(crate) mod throws;
pub(crate) mod unroll;
pub use unroll::LOOP_BUDGET_OVERRIDE;
pub mod writer;

use crate::target::CodeTarget;
use relok_ir::{Module, Stage, Value};

/// What to generate for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Options {
    /// Checked mode: bounds-check buffer and heap accesses ([`bounds`]).
    pub checked: bool,
    /// The module's device functions `@relok_throw` and
    /// `@relok_throw_with` are the runtime library's, kept from inlining
    /// by the optimiser: each is written once, as a WGSL function
    /// (`wgsl::throws`).
    pub library_throws: bool,
}

/// Why a module cannot be written as WGSL.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The module has not been lowered.
    #[error("the WGSL backend takes a lowered module (stage {0:?})")]
    NotLowered(Stage),
    /// `patch` cannot work on wgpu (the one strategy
    /// [`CodeTarget::strategies`] leaves out for WGSL).
    #[error("patching is impossible on wgpu: the loader cannot write a module's globals; use table or bake")]
    Patch,
    /// An operation this backend cannot express (yet).
    #[error("@{function}: {value}: {what} is not supported by the WGSL backend")]
    Unsupported {
        /// The function.
        function: String,
        /// The value it defines (or the first operand of a statement).
        value: Value,
        /// What.
        what: String,
    },
    /// A kernel binds more storage buffers than a target allows per shader
    /// stage ([`limits::check_storage_buffers`]; raised by the wgpu device
    /// against its adapter, never by [`write_string`]).
    #[error("@{function} binds {} storage buffers (relok's {} and {buffers} buffer parameters), more than the {limit} per shader stage of {limit_of}; pack arrays into fewer buffer parameters (docs/wgpu.md, \"Metal and DX12\")", limits::storage_buffers(*buffers), limits::FIXED_STORAGE_BUFFERS)]
    TooManyStorageBuffers {
        /// The kernel.
        function: String,
        /// Its buffer parameters.
        buffers: usize,
        /// Storage buffers per shader stage allowed.
        limit: u32,
        /// Whose limit that is.
        limit_of: String,
    },
}

/// The name of kernel `@kernel`'s compute entry point in the WGSL:
/// `k_kernel`. WGSL reserves many words an IR name may be (`loop`,
/// `throw`, `var`, `select`, …), as device functions are `f_name`.
///
/// ```
/// assert_eq!(relok_compiler::wgsl::entry_point("throw"), "k_throw");
/// ```
pub fn entry_point(kernel: &str) -> String {
    format!("k_{kernel}")
}

/// The WGSL text of `module` (verified, lowered with `table` or `bake`).
pub fn write_string(module: &Module, options: &Options) -> Result<String, Error> {
    match module.stage {
        Stage::Lowered(s) if !CodeTarget::Wgsl.supports(s) => Err(Error::Patch),
        Stage::Lowered(_) => {
            let mut w = writer::Writer::new(module, options);
            w.write()?;
            Ok(w.finish())
        }
        Stage::Source => Err(Error::NotLowered(module.stage)),
    }
}

/// Checks that WGSL `code` (from an artifact) declares compute entry
/// `entry` and exactly the bindings the kernel parameters `params` need
/// ([`bindings::bindings`]: 0–3, then one per buffer parameter, each as the
/// writer declares it, with plain or atomic words), so a launch binds what
/// the code reads. The text itself is validated by wgpu when the device
/// loads it.
pub fn check_code(code: &str, entry: &str, params: &[relok_ir::Type]) -> Result<(), String> {
    let buffers = params.iter().filter(|t| matches!(t, relok_ir::Type::Ptr(..))).count();
    let prefix = format!("@group({}) @binding(", bindings::GROUP);
    let mut declared: Vec<(u32, &str)> = code
        .lines()
        .filter_map(|l| Some((l, l.strip_prefix(&prefix)?)))
        .map(|(l, rest)| {
            rest.split(')')
                .next()
                .and_then(|n| n.parse().ok())
                .map(|n| (n, l))
                .ok_or_else(|| format!("a malformed binding: {rest}"))
        })
        .collect::<Result<_, _>>()?;
    declared.sort_unstable();
    let expected = bindings::bindings(buffers);
    let count = bindings::binding_count(buffers);
    if !declared.iter().map(|&(n, _)| n).eq(expected.iter().map(|b| b.binding)) {
        let found: Vec<u32> = declared.iter().map(|&(n, _)| n).collect();
        return Err(format!("bindings {found:?}, expected 0..{count} for {buffers} buffer parameters"));
    }
    if let Some((b, (_, line))) = expected.iter().zip(&declared).find(|(b, (_, line))| !b.accepts(line)) {
        return Err(format!("binding {} is declared `{line}`, expected `{}`", b.binding, b.declaration()));
    }
    let mut lines = code.lines();
    let declared = lines.by_ref().any(|l| l.starts_with("@compute"))
        && lines.next().is_some_and(|l| l.starts_with(&format!("fn {}(", entry_point(entry))));
    if !declared {
        return Err(format!("no compute entry point `{entry}`"));
    }
    Ok(())
}

/// The WGSL, in a function body, that records a fault in the exception
/// record when this thread is the first: it claims the flag 0 → 1 with
/// `atomicMax` (no loop, which llvmpipe would count: docs/wgpu.md, "Long
/// loops"; a weak compare-exchange could also fail spuriously and lose the
/// fault), then writes the message word's halves `low` and `high` and the
/// ids of block `b` and thread `t`.
pub(crate) fn record_fault(low: &str, high: &str) -> String {
    record_fault_then(low, high, "")
}

/// [`record_fault`], then the lines `then` (indented two levels) by the
/// thread that claimed the record.
pub(crate) fn record_fault_then(low: &str, high: &str, then: &str) -> String {
    let l = crate::state::EXCEPTION_LAYOUT;
    let (msg, block, thread) = (l.message.offset / 4, l.block.offset / 4, l.thread.offset / 4);
    let mut s = "    if (atomicMax(&relok_exception[0], 1u) == 0u) {\n".to_owned();
    s.push_str(&format!(
        "        atomicStore(&relok_exception[{msg}], {low});\n        atomicStore(&relok_exception[{}], {high});\n",
        msg + 1
    ));
    for (k, c) in ["x", "y", "z"].into_iter().enumerate() {
        let k = k as u32;
        s.push_str(&format!("        atomicStore(&relok_exception[{}], b.{c});\n", block + 2 * k));
        s.push_str(&format!("        atomicStore(&relok_exception[{}], t.{c});\n", thread + 2 * k));
    }
    s.push_str(then);
    s.push_str("    }\n");
    s
}
