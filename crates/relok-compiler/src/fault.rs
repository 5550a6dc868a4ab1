//! Checked mode's faults as GPU code reports them (`CompileOptions::checked`;
//! docs/wgpu.md and docs/cuda.md, "Checked mode"): the one definition of
//! the message words the WGSL and the PTX write into a launch's exception
//! record ([`crate::state::EXCEPTION_LAYOUT`]) and of how a device reads
//! them back ([`decode`]).
//!
//! A fault is recorded the way a kernel's throw is — the record's flag
//! claimed, the message word and the thread's block and thread ids
//! written — but with a message word no host object has (a throw's word is
//! an address or a heap offset, whose high half is far below these marks):
//!
//! | fault | high 32 bits | low 32 bits |
//! |---|---|---|
//! | [`Fault::OutOfBounds`] | [`out_of_bounds_high`]: [`OUT_OF_BOUNDS_MARK`] (bits 16–31), the binding (bits 8–15), the [`Access`] (bits 4–7), the size in bytes (bits 0–3) | the byte offset of the access |
//! | [`Fault::ReadOnly`] | [`READ_ONLY_MESSAGE_HIGH`] | the byte offset of the refused write |
//! | [`Fault::LoopLimit`] | `0xffff_ffff` | `0xffff_fffe`: the word is [`LOOP_LIMIT_MESSAGE`] |
//! | [`Fault::LoopBudget`] | `0xffff_ffff` | `0xffff_fffc`: the word is [`LOOP_BUDGET_MESSAGE`] |
//!
//! What the offsets count from is the target's: for an access out of
//! bounds, the pointer argument the buffer was bound from (or the start of
//! the heap) on WGSL, the pointer argument on PTX, where the binding is the
//! pointer parameter's index (on WGSL it is the buffer's binding,
//! [`crate::wgsl::bindings`]); for a refused write, the heap offset on
//! WGSL and the offset in the host value's copy on PTX. The loop budget is
//! [`CHECKED_LOOP_BUDGET`] on both; the loop limit is the device's own
//! (llvmpipe's, on wgpu).
//!
//! The WGSL writer ([`crate::wgsl::bounds`], [`crate::wgsl::sealed`], the
//! loops' `relok_loop_limit`) and the PTX writer ([`crate::ptx::checked`])
//! encode these words; `relok_runtime` decodes them with [`decode`] for
//! every GPU device.

/// The mark of an out-of-bounds fault: the high 16 bits of the message
/// word's high half ([`out_of_bounds_high`]).
pub const OUT_OF_BOUNDS_MARK: u32 = 0xfffc_0000;

/// The high half of the message word that reports a refused write into a
/// host value; the low half is the byte offset. No host object's word has
/// it (heap offsets are 32-bit).
pub const READ_ONLY_MESSAGE_HIGH: u32 = 0xffff_fffd;

/// The message word that reports a loop ended by the device's limit (a
/// word no host object has: heap offsets and addresses are far below it).
/// The wgpu device turns it into `FaultKind::LoopLimit`.
pub const LOOP_LIMIT_MESSAGE: u64 = u64::MAX - 1;

/// The message word that reports a loop ended by checked mode's budget
/// ([`CHECKED_LOOP_BUDGET`]); a device turns it into
/// `FaultKind::LoopBudgetExceeded`.
pub const LOOP_BUDGET_MESSAGE: u64 = u64::MAX - 3;

/// Checked mode's budget: loop iterations of one invocation, all loops
/// together (an endless loop ends with a fault instead of hanging the
/// device). On WGSL the IR iterations are counted by back edge, each
/// adding the copies of the body it runs, so a loop that leaves in the
/// middle of its copies is counted up to that many high.
pub const CHECKED_LOOP_BUDGET: u32 = 1 << 24;

/// What an access out of bounds was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// A load (code 0).
    Read,
    /// A store (code 1).
    Write,
    /// An atomic (code 2).
    Atomic,
}

impl Access {
    /// The access's 4-bit code in [`out_of_bounds_high`].
    pub const fn code(self) -> u32 {
        match self {
            Access::Read => 0,
            Access::Write => 1,
            Access::Atomic => 2,
        }
    }

    /// The access of a 4-bit code: 0 a read, 1 a write, anything else (2,
    /// and the codes no writer makes) an atomic.
    pub const fn from_code(code: u32) -> Access {
        match code {
            0 => Access::Read,
            1 => Access::Write,
            _ => Access::Atomic,
        }
    }
}

/// The high half of an out-of-bounds fault's message word:
/// [`OUT_OF_BOUNDS_MARK`], the binding (8 bits), the access (4 bits) and
/// the size in bytes (4 bits). The low half is the access's byte offset.
pub const fn out_of_bounds_high(binding: u32, access: Access, size: u32) -> u32 {
    OUT_OF_BOUNDS_MARK | (binding & 0xff) << 8 | (access.code() & 0xf) << 4 | (size & 0xf)
}

/// A fault checked mode recorded, decoded from its message word
/// ([`decode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// An access outside the buffer it went through.
    OutOfBounds {
        /// The buffer: its binding (WGSL) or pointer parameter (PTX).
        binding: u32,
        /// Load, store or atomic.
        access: Access,
        /// The byte offset of the access (its low 32 bits).
        offset: u32,
        /// Bytes accessed (their low 4 bits).
        size: u32,
    },
    /// A write into a host value's copy, refused.
    ReadOnly {
        /// The byte offset of the write.
        offset: u32,
    },
    /// A loop ran past checked mode's budget ([`CHECKED_LOOP_BUDGET`]).
    LoopBudget,
    /// A loop would have run past the device's limit on loop iterations.
    LoopLimit,
}

impl Fault {
    /// The message word GPU code records for this fault (see the module
    /// docs); [`decode`] is its inverse.
    pub const fn message_word(self) -> u64 {
        match self {
            Fault::OutOfBounds { binding, access, offset, size } => {
                (out_of_bounds_high(binding, access, size) as u64) << 32 | offset as u64
            }
            Fault::ReadOnly { offset } => (READ_ONLY_MESSAGE_HIGH as u64) << 32 | offset as u64,
            Fault::LoopBudget => LOOP_BUDGET_MESSAGE,
            Fault::LoopLimit => LOOP_LIMIT_MESSAGE,
        }
    }
}

/// The fault an exception record's message word reports, or `None` when
/// the word is not one of checked mode's (a kernel's throw).
pub const fn decode(message_word: u64) -> Option<Fault> {
    let high = (message_word >> 32) as u32;
    let offset = message_word as u32;
    if high & 0xffff_0000 == OUT_OF_BOUNDS_MARK {
        return Some(Fault::OutOfBounds {
            binding: (high >> 8) & 0xff,
            access: Access::from_code((high >> 4) & 0xf),
            offset,
            size: high & 0xf,
        });
    }
    if high == READ_ONLY_MESSAGE_HIGH {
        return Some(Fault::ReadOnly { offset });
    }
    match message_word {
        LOOP_BUDGET_MESSAGE => Some(Fault::LoopBudget),
        LOOP_LIMIT_MESSAGE => Some(Fault::LoopLimit),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_round_trip_and_stay_apart() {
        let faults = [
            Fault::OutOfBounds { binding: 3, access: Access::Read, offset: 0, size: 4 },
            Fault::OutOfBounds { binding: 4, access: Access::Write, offset: 0x10, size: 8 },
            Fault::OutOfBounds { binding: 31, access: Access::Atomic, offset: u32::MAX, size: 1 },
            Fault::ReadOnly { offset: 0 },
            Fault::ReadOnly { offset: 0xdead_beef },
            Fault::LoopBudget,
            Fault::LoopLimit,
        ];
        for f in faults {
            assert_eq!(decode(f.message_word()), Some(f), "{f:?}");
        }
        // The words the writers made before this module existed.
        assert_eq!(out_of_bounds_high(1, Access::Write, 4), 0xfffc_0114);
        assert_eq!(Fault::ReadOnly { offset: 0x20 }.message_word(), 0xffff_fffd_0000_0020);
        // A throw's word (an address or a heap offset) is no fault.
        for word in [0, 16, 0x7f00_1234_5678, u64::from(u32::MAX), u64::MAX, u64::MAX - 2] {
            assert_eq!(decode(word), None, "{word:#x}");
        }
    }

    #[test]
    fn access_codes_round_trip() {
        for a in [Access::Read, Access::Write, Access::Atomic] {
            assert_eq!(Access::from_code(a.code()), a);
        }
        assert_eq!(Access::from_code(15), Access::Atomic);
    }
}
