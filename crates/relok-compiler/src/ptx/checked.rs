//! Checked mode on the PTX target ([`super::Options::checked`], docs/cuda.md
//! "Checked mode"): the PTX checks what the cpu device checks and records
//! a fault in the launch's exception record the way the WGSL does, with the
//! same message words ([`crate::fault`]), so every GPU device decodes them
//! in one place ([`crate::fault::decode`], in `relok_runtime`'s backend):
//!
//! - **Buffer accesses.** A kernel takes, after its own parameters, one
//!   hidden `.param .u64 relok_len<i>` per pointer parameter `i`: the bytes
//!   from the pointer to the end of the allocation it points into (0 when
//!   it points into none), filled by the cuda device at each launch. Every
//!   load, store and atomic through a pointer derived from parameter `i`
//!   (by `offset`, `elem`, `field` or a `select` of two such pointers)
//!   first checks that its bytes lie in `p_i .. p_i + len_i`; one that
//!   does not records [`crate::fault::out_of_bounds_high`] (binding = the
//!   parameter's index, access, size) over the byte offset from `p_i` (its
//!   low 32 bits) and ends the thread (`exit`, as a throw does): the access
//!   is not made. An access that passed proves the later accesses of the
//!   same element and size in its block (and the blocks nested in it),
//!   which are not checked again. Accesses through other global pointers
//!   (a device function's pointer parameter, a pointer loaded from memory)
//!   are not checked.
//! - **Loops.** Every function counts the loop iterations it runs (all
//!   its loops together, per thread and call); an iteration past
//!   [`crate::fault::CHECKED_LOOP_BUDGET`] records
//!   [`crate::fault::LOOP_BUDGET_MESSAGE`] and ends the thread (`exit`).
//! - **Host values are read-only.** Every store and atomic through a
//!   pointer made by `wordptr` first looks its bytes up in the device's seal
//!   table (inline: nothing sealed is one compare on the fast path, the scan
//!   is out of line); a write that touches a sealed
//!   range (a host value's copy) records
//!   [`crate::fault::READ_ONLY_MESSAGE_HIGH`] over the byte offset
//!   in the copy, and the thread ends. The seal table
//!   reaches the code as one more hidden kernel parameter,
//!   `.param .u64` [`SEALS_PARAM`] (after the lengths), which a checked
//!   function keeps in `%st3` and passes to the device functions it calls
//!   (their fourth state parameter, `st3`): the address of a block whose
//!   word 0 is the address of the entries, word 1 their number; entry `k`
//!   is two words, the first byte and the end of one sealed range. 0 means
//!   nothing is sealed. (Not a module global: a module with a `.global`
//!   took the driver 90–150 µs to load on an H200 against 40–50 µs
//!   without, a third of a warm first launch.)
//!
//! A fault is recorded inline, by the code `record_fault` writes, out of line
//! after the function's body (the check's fast path is a compare and a
//! branch not taken): it claims the record's flag like `relok_throw` and
//! writes the message word and the thread's block and thread ids; later
//! claims fail. No `call`: when the driver links the PTX (as the cuda
//! device does, for the cubin it archives), a call becomes a standard-ABI
//! call whose saved registers the whole function pays for (on the H200,
//! 2026-12-01, saxpy took 38 registers linked against 24 loaded).

use crate::state::{EXCEPTION_LAYOUT, ExceptionLayout};

/// The hidden kernel parameter holding the seal table's address.
pub const SEALS_PARAM: &str = "relok_seals";

/// The name of the hidden length parameter of pointer parameter `i`.
pub fn len_param(i: usize) -> String {
    format!("relok_len{i}")
}

/// The registers and label [`record_fault`] uses (a function's own).
pub(crate) struct FaultRegs {
    /// `.b64`: the flag's old value.
    pub(crate) old: String,
    /// `.pred`: whether another fault claimed the record first.
    pub(crate) claimed: String,
    /// `.b32`: a block or thread index.
    pub(crate) id: String,
    /// The label after the record.
    pub(crate) done: String,
}

/// The lines (instructions tab-indented, the label not) that record a
/// fault with message word `msg` in the exception record at `exc`: claim
/// the record's flag as `relok_throw` does (a later claim fails and writes
/// nothing), then write the message word and the thread's block and thread
/// ids; with `values` (`@relok_throw_with`'s two, `.b64` registers) those
/// too, then the flag moves on to [`ExceptionLayout::THREW_WITH_VALUES`].
pub(crate) fn record_fault(exc: &str, msg: &str, values: &[String], r: &FaultRegs) -> Vec<String> {
    let l = EXCEPTION_LAYOUT;
    let (old, claimed, id, done) = (&r.old, &r.claimed, &r.id, &r.done);
    let mut lines = vec![
        format!("\tatom.global.cas.b64 {old}, [{exc}+{}], 0, 1;", l.flag.offset),
        format!("\tsetp.ne.u64 {claimed}, {old}, 0;"),
        format!("\t@{claimed} bra {done};"),
        format!("\tst.global.u64 [{exc}+{}], {msg};", l.message.offset),
    ];
    for (k, axis) in ["x", "y", "z"].into_iter().enumerate() {
        for (sreg, base) in [("ctaid", ExceptionLayout::BLOCK_WORD), ("tid", ExceptionLayout::THREAD_WORD)] {
            // The word's halves apart: the high one is 0 (fewer registers
            // on the fault's path than a 64-bit store of the widened id).
            let at = 8 * (base as usize + k);
            lines.push(format!("\tmov.u32 {id}, %{sreg}.{axis};"));
            lines.push(format!("\tst.global.v2.u32 [{exc}+{at}], {{{id}, 0}};"));
        }
    }
    if !values.is_empty() {
        for (k, v) in values.iter().enumerate() {
            lines.push(format!("\tst.global.u64 [{exc}+{}], {v};", l.values.offset as usize + 8 * k));
        }
        let more = ExceptionLayout::THREW_WITH_VALUES - ExceptionLayout::THREW;
        lines.push(format!("\tatom.global.add.u64 {old}, [{exc}+{}], {more};", l.flag.offset));
    }
    lines.push(format!("{done}:"));
    lines
}
