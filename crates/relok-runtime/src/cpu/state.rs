//! What a launch delivers besides its arguments (docs/design.md §3): the kernel
//! state block, the exception record, patch cells and patched constant
//! words.
//!
//! # Kernel state
//!
//! Every launch writes a kernel state block into device memory (one block
//! per device, reused by every launch): three little-endian `u64` fields at
//! the byte offsets of `relok_compiler::state::STATE_LAYOUT` — `reloc_table` (the table buffer's
//! address, 0 when there is none), `exception` (the address of the exception
//! record) and `rng_seed`. `state.FIELD` is a bounds-checked `u64` load from
//! that block.
//!
//! # Exception record
//!
//! Ten `u64`s, zeroed before every launch: `[flag, message word, block x,
//! y, z, thread x, y, z, value 0, value 1]`
//! (`relok_compiler::state::EXCEPTION_LAYOUT`). The runtime library's
//! throw sequence claims the record with `atomic.cas exc[0], 0, 1`, writes
//! the message word and its ids (`@relok_throw_with` also its two values,
//! then adds 1 to the flag: 2), then `exit`s. After the launch (also one that
//! ended with a fault) a nonzero flag turns into
//! [`LaunchError::Exception`](super::LaunchError::Exception).

use super::DevicePtr;
use relok_compiler::state::{ExceptionLayout, KernelState, STATE_LAYOUT};
use relok_ir::StateField;
use std::collections::BTreeMap;

/// The byte offset of `field` in the kernel state block
/// ([`relok_compiler::state::STATE_LAYOUT`], the one definition every
/// backend shares).
pub(crate) const fn field_offset(field: StateField) -> u32 {
    STATE_LAYOUT.field(field).offset
}

/// Bytes of the kernel state block.
pub(crate) const STATE_SIZE: u64 = STATE_LAYOUT.size as u64;

/// `u64`s in the exception record
/// ([`relok_compiler::state::EXCEPTION_LAYOUT`]; decoded by
/// [`Thrown::from_record`](crate::Thrown::from_record)).
pub const EXC_WORDS: usize = ExceptionLayout::WORDS as usize;

/// The kernel state block's bytes for one launch.
pub(crate) fn state_bytes(s: &KernelState) -> Vec<u8> {
    let mut b = vec![0u8; STATE_SIZE as usize];
    for (field, v) in [
        (StateField::RelocTable, s.reloc_table),
        (StateField::Exception, s.exception),
        (StateField::RngSeed, s.rng_seed),
    ] {
        let o = field_offset(field) as usize;
        b[o..o + 8].copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// The words of the patch strategy's cells, by relocation-record name: what
/// `patch NAME` reads. The loader fills it from the session's words for the
/// device (docs/design.md §3, `patch`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchCells(BTreeMap<String, u64>);

impl PatchCells {
    /// No cells.
    pub fn new() -> PatchCells {
        PatchCells::default()
    }
    /// Writes `word` into cell `name`; returns the word it held.
    pub fn set(&mut self, name: impl Into<String>, word: u64) -> Option<u64> {
        self.0.insert(name.into(), word)
    }
    /// The word in cell `name`.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.get(name).copied()
    }
    /// Number of cells written.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether no cell was written.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The cells, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(k, &v)| (k.as_str(), v))
    }
}

impl<S: Into<String>> FromIterator<(S, u64)> for PatchCells {
    fn from_iter<I: IntoIterator<Item = (S, u64)>>(iter: I) -> PatchCells {
        PatchCells(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl<S: Into<String>> Extend<(S, u64)> for PatchCells {
    fn extend<I: IntoIterator<Item = (S, u64)>>(&mut self, iter: I) {
        self.0.extend(iter.into_iter().map(|(k, v)| (k.into(), v)));
    }
}

/// What a launch delivers besides its arguments (docs/design.md §3).
/// `LaunchState::default()`: no table, seed 0, no patch cells, no patched
/// constants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchState {
    /// `state.reloc_table`: the table buffer (a device allocation the caller
    /// made and filled, one word per record in rank order); `None` reads as
    /// null (0).
    pub reloc_table: Option<DevicePtr>,
    /// `state.rng_seed`.
    pub rng_seed: u64,
    /// What `patch NAME` reads. Every cell the kernel names must be written,
    /// else the launch fails with
    /// [`LaunchError::MissingPatchCell`](super::LaunchError::MissingPatchCell).
    pub patch_cells: PatchCells,
    /// Interior sites of the patch strategy: `(constant name, byte offset,
    /// word)`, written into this launch's copy of the module's constants
    /// (the offset must be a multiple of 8 and the word lie inside the
    /// constant).
    pub const_patches: Vec<(String, u32, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_bytes_follow_the_shared_layout() {
        let b = state_bytes(&KernelState { reloc_table: 1, exception: 2, rng_seed: 3 });
        assert_eq!(b.len(), 24);
        for (f, v) in StateField::ALL.into_iter().zip([1u8, 2, 3]) {
            assert_eq!(b[field_offset(f) as usize], v, "{f:?}");
        }
        assert_eq!(EXC_WORDS, 10);
    }
}
