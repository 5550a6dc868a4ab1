//! The kernel state and exception record layouts (docs/design.md §3, §4): the ONE
//! place that says where each field lives.
//!
//! Every kernel receives a [`KernelState`] as an implicit first parameter;
//! `state.reloc_table`, `state.exception` and `state.rng_seed` in the IR read
//! its fields. Backends address the fields through [`STATE_LAYOUT`]; hosts
//! fill it through the `#[repr(C)]` mirror [`KernelState`] (the tests check
//! that both agree). The exception record ([`ExceptionRecord`]) is written
//! by the runtime library's `@relok_throw` through `state.exception`, a
//! `ptr<global, u64>`, word by word: see [`EXCEPTION_LAYOUT`] for the word
//! indices.
//!
//! Changing either layout changes [`STATE_LAYOUT_VERSION`], which keys every
//! cached artifact.

use relok_ir::StateField;

/// Version of [`STATE_LAYOUT`] and [`EXCEPTION_LAYOUT`]; bump on any change.
pub const STATE_LAYOUT_VERSION: u32 = 2;

/// Host mirror of the kernel state: the implicit first kernel parameter.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelState {
    /// Device address of the relocation table (`table` strategy); 0 when the
    /// kernel has no records.
    pub reloc_table: u64,
    /// Device address of the launch's [`ExceptionRecord`].
    pub exception: u64,
    /// The launch's random seed.
    pub rng_seed: u64,
}

/// Byte offset and size of one field.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldLayout {
    /// Byte offset from the start of the structure.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// Layout of [`KernelState`] as devices see it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct StateLayout {
    /// `state.reloc_table`: `ptr<global, word>`.
    pub reloc_table: FieldLayout,
    /// `state.exception`: `ptr<global, u64>`.
    pub exception: FieldLayout,
    /// `state.rng_seed`: `u64`.
    pub rng_seed: FieldLayout,
    /// Total size in bytes.
    pub size: u32,
    /// Alignment in bytes.
    pub align: u32,
}

impl StateLayout {
    /// The layout of `field`.
    pub const fn field(&self, field: StateField) -> FieldLayout {
        match field {
            StateField::RelocTable => self.reloc_table,
            StateField::Exception => self.exception,
            StateField::RngSeed => self.rng_seed,
        }
    }
}

/// The kernel state's layout.
pub const STATE_LAYOUT: StateLayout = StateLayout {
    reloc_table: FieldLayout { offset: 0, size: 8 },
    exception: FieldLayout { offset: 8, size: 8 },
    rng_seed: FieldLayout { offset: 16, size: 8 },
    size: 24,
    align: 8,
};

/// Host mirror of the exception record a launch's `state.exception` points
/// at. All zero before a launch; `flag` is set once a thread threw (the
/// first one wins: it claims the flag with a compare-and-swap from 0 to
/// [`ExceptionLayout::THREW`]; `@relok_throw_with` then adds 1 once its
/// values are written).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExceptionRecord {
    /// 0: no exception; [`ExceptionLayout::THREW`]: a thread threw a
    /// message (`@relok_throw`, or a checked-mode fault);
    /// [`ExceptionLayout::THREW_WITH_VALUES`]: a thread threw a message and
    /// two values (`@relok_throw_with`), in `values`.
    pub flag: u64,
    /// The word of the message (a `str` host value).
    pub message: u64,
    /// Block id x, y, z of the thread that threw.
    pub block: [u64; 3],
    /// Thread id x, y, z of the thread that threw.
    pub thread: [u64; 3],
    /// The two values `@relok_throw_with` threw with the message (zero
    /// for `@relok_throw`): the host writes them in place of the message's
    /// `{0}` and `{1}`.
    pub values: [u64; 2],
}

/// Layout of [`ExceptionRecord`]. Every field is made of `u64` words; the
/// `*_word` indices are what the runtime library stores at through
/// `state.exception` (a `ptr<global, u64>`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExceptionLayout {
    /// The flag (one word).
    pub flag: FieldLayout,
    /// The message word (one word).
    pub message: FieldLayout,
    /// Block ids x, y, z (three words).
    pub block: FieldLayout,
    /// Thread ids x, y, z (three words).
    pub thread: FieldLayout,
    /// The values thrown with the message (two words).
    pub values: FieldLayout,
    /// Total size in bytes.
    pub size: u32,
    /// Alignment in bytes.
    pub align: u32,
}

impl ExceptionLayout {
    /// Word index of the flag.
    pub const FLAG_WORD: u32 = 0;
    /// Word index of the message.
    pub const MESSAGE_WORD: u32 = 1;
    /// Word index of block id x (y and z follow).
    pub const BLOCK_WORD: u32 = 2;
    /// Word index of thread id x (y and z follow).
    pub const THREAD_WORD: u32 = 5;
    /// Word index of the first value thrown with the message (the second
    /// follows).
    pub const VALUES_WORD: u32 = 8;
    /// Number of words.
    pub const WORDS: u32 = 10;
    /// The flag of a record holding a message (`@relok_throw`, a fault).
    pub const THREW: u64 = 1;
    /// The flag of a record holding a message and two values
    /// (`@relok_throw_with`).
    pub const THREW_WITH_VALUES: u64 = 2;
}

/// The exception record's layout.
pub const EXCEPTION_LAYOUT: ExceptionLayout = ExceptionLayout {
    flag: FieldLayout { offset: 0, size: 8 },
    message: FieldLayout { offset: 8, size: 8 },
    block: FieldLayout { offset: 16, size: 24 },
    thread: FieldLayout { offset: 40, size: 24 },
    values: FieldLayout { offset: 64, size: 16 },
    size: 80,
    align: 8,
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn state_layout_matches_host_struct() {
        let l = STATE_LAYOUT;
        assert_eq!(l.reloc_table.offset as usize, offset_of!(KernelState, reloc_table));
        assert_eq!(l.exception.offset as usize, offset_of!(KernelState, exception));
        assert_eq!(l.rng_seed.offset as usize, offset_of!(KernelState, rng_seed));
        for f in StateField::ALL {
            let fl = l.field(f);
            let ty_size = f.ty().size().unwrap();
            assert_eq!(fl.size, ty_size, "{f:?}");
            assert!(fl.offset + fl.size <= l.size);
        }
        assert_eq!(l.size as usize, size_of::<KernelState>());
        assert_eq!(l.align as usize, align_of::<KernelState>());
        // Fields are listed in layout order.
        let offsets: Vec<u32> = StateField::ALL.iter().map(|&f| l.field(f).offset).collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn exception_layout_matches_host_struct() {
        let l = EXCEPTION_LAYOUT;
        assert_eq!(l.flag.offset as usize, offset_of!(ExceptionRecord, flag));
        assert_eq!(l.message.offset as usize, offset_of!(ExceptionRecord, message));
        assert_eq!(l.block.offset as usize, offset_of!(ExceptionRecord, block));
        assert_eq!(l.thread.offset as usize, offset_of!(ExceptionRecord, thread));
        assert_eq!(l.values.offset as usize, offset_of!(ExceptionRecord, values));
        assert_eq!(l.values.size as usize, size_of::<[u64; 2]>());
        assert_eq!(l.block.size as usize, size_of::<[u64; 3]>());
        assert_eq!(l.thread.size as usize, size_of::<[u64; 3]>());
        assert_eq!(l.size as usize, size_of::<ExceptionRecord>());
        assert_eq!(l.align as usize, align_of::<ExceptionRecord>());
        assert_eq!(ExceptionLayout::FLAG_WORD * 8, l.flag.offset);
        assert_eq!(ExceptionLayout::MESSAGE_WORD * 8, l.message.offset);
        assert_eq!(ExceptionLayout::BLOCK_WORD * 8, l.block.offset);
        assert_eq!(ExceptionLayout::THREAD_WORD * 8, l.thread.offset);
        assert_eq!(ExceptionLayout::VALUES_WORD * 8, l.values.offset);
        assert_eq!(ExceptionLayout::WORDS * 8, l.size);
    }
}
