//! The race detector of the cpu device: two accesses to the same byte of
//! global or shared memory from different threads of one block between the
//! same pair of barriers, at least one of them a non-atomic write, are a
//! [`FaultKind::DataRace`](crate::FaultKind::DataRace) naming the address, both threads and both
//! accesses.
//!
//! The interpreter runs a block's threads one after another between
//! barriers, so a racy kernel gives one of its possible answers here and
//! another on a GPU; the detector turns that into a fault. Shape: a
//! [`Shadow`] per block phase (the accesses since the block's last
//! barrier), one entry per touched 8-byte chunk (an access is aligned to
//! its size, at most 8 bytes, so it lies in one chunk), each byte of it
//! holding its last writer (and whether that write was atomic) and up to
//! two distinct readers. The shadow is cleared when a block starts and
//! when its threads are released from a barrier. Blocks with one thread are
//! not tracked. Accesses of different blocks are not compared (a block has
//! no barrier with another); local memory is per thread; `const` reads are
//! not tracked.

use crate::error::{Access, FaultKind};
use relok_ir::AddrSpace;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// One byte's accesses in the current phase: thread numbers are linear
/// index + 1, 0 for none.
#[derive(Clone, Copy, Default, Debug)]
struct Byte {
    writer: u32,
    atomic: bool,
    readers: [u32; 2],
}

/// A multiplicative hash of a chunk number (keys are addresses / 8).
#[derive(Default)]
pub(crate) struct ChunkHasher(u64);

impl Hasher for ChunkHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The accesses of one block since its last barrier.
#[derive(Default, Debug)]
pub(crate) struct Shadow {
    chunks: HashMap<u64, [Byte; 8], BuildHasherDefault<ChunkHasher>>,
    /// The block's shape, to name a thread from its number.
    block: [u32; 3],
}

impl Shadow {
    /// Forgets every access: a new block of shape `block` starts, or its
    /// threads passed a barrier.
    pub(crate) fn clear(&mut self, block: [u32; 3]) {
        self.chunks.clear();
        self.block = block;
    }

    fn tid(&self, number: u32) -> [u32; 3] {
        let i = number - 1;
        let [x, y, _] = self.block.map(|d| d.max(1));
        [i % x, (i / x) % y, i / (x * y)]
    }

    /// Records an access of `size` bytes at `addr` (aligned) by thread
    /// `thread` (linear index); a conflicting earlier access is a fault.
    pub(crate) fn access(
        &mut self,
        space: AddrSpace,
        access: Access,
        addr: u64,
        size: u64,
        thread: u32,
    ) -> Result<(), FaultKind> {
        let me = thread + 1;
        let chunk = self.chunks.entry(addr >> 3).or_default();
        let first = (addr & 7) as usize;
        for (k, b) in chunk.iter_mut().enumerate().skip(first).take(size as usize) {
            let other = match access {
                Access::Read => (b.writer != 0 && b.writer != me && !b.atomic).then_some((b.writer, Access::Write)),
                Access::Write => {
                    let reader = b.readers.into_iter().find(|&r| r != 0 && r != me);
                    if b.writer != 0 && b.writer != me {
                        Some((b.writer, if b.atomic { Access::Atomic } else { Access::Write }))
                    } else {
                        reader.map(|r| (r, Access::Read))
                    }
                }
                Access::Atomic => (b.writer != 0 && b.writer != me && !b.atomic).then_some((b.writer, Access::Write)),
            };
            if let Some((number, other_access)) = other {
                let other_thread = self.tid(number);
                return Err(FaultKind::DataRace {
                    space,
                    addr: (addr & !7) + k as u64,
                    other_thread,
                    other_access,
                    access,
                });
            }
            match access {
                Access::Read => {
                    if b.readers[0] == 0 {
                        b.readers[0] = me;
                    } else if b.readers[0] != me && b.readers[1] == 0 {
                        b.readers[1] = me;
                    }
                }
                Access::Write => {
                    b.writer = me;
                    b.atomic = false;
                }
                Access::Atomic => {
                    // A non-atomic write of this thread stays the one that
                    // can race with others' atomics.
                    if b.writer == 0 || b.atomic {
                        b.writer = me;
                        b.atomic = true;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shadow() -> Shadow {
        let mut s = Shadow::default();
        s.clear([4, 2, 1]);
        s
    }

    #[test]
    fn conflicting_pairs_fault_and_name_both_threads() {
        let g = AddrSpace::Global;
        let mut s = shadow();
        s.access(g, Access::Write, 0x100, 4, 0).unwrap();
        let e = s.access(g, Access::Read, 0x102, 2, 5).unwrap_err();
        assert_eq!(
            e,
            FaultKind::DataRace {
                space: g,
                addr: 0x102,
                other_thread: [0, 0, 0],
                other_access: Access::Write,
                access: Access::Read
            }
        );
        let mut s = shadow();
        s.access(g, Access::Read, 0x100, 8, 1).unwrap();
        s.access(g, Access::Read, 0x100, 8, 2).unwrap();
        // Thread 1 writes what thread 2 read.
        let e = s.access(g, Access::Write, 0x104, 4, 1).unwrap_err();
        assert!(
            matches!(
                e,
                FaultKind::DataRace { other_thread: [2, 0, 0], other_access: Access::Read, access: Access::Write, .. }
            ),
            "{e:?}"
        );
        let mut s = shadow();
        s.access(g, Access::Atomic, 0x10, 4, 1).unwrap();
        let e = s.access(g, Access::Write, 0x10, 4, 6).unwrap_err();
        assert!(
            matches!(
                e,
                FaultKind::DataRace {
                    other_thread: [1, 0, 0],
                    other_access: Access::Atomic,
                    access: Access::Write,
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn what_is_not_a_race_passes() {
        let (g, sh) = (AddrSpace::Global, AddrSpace::Shared);
        let mut s = shadow();
        // Atomics among themselves, reads among themselves, one thread
        // with itself, neighbouring bytes, and anything across a barrier.
        for t in 0..8 {
            s.access(g, Access::Atomic, 0x40, 4, t).unwrap();
            s.access(g, Access::Read, 0x80, 8, t).unwrap();
            s.access(sh, Access::Write, 0x200 + u64::from(t), 1, t).unwrap();
            s.access(sh, Access::Read, 0x200 + u64::from(t), 1, t).unwrap();
        }
        s.access(g, Access::Read, 0x40, 4, 3).unwrap();
        s.clear([4, 2, 1]);
        s.access(sh, Access::Write, 0x200, 8, 7).unwrap();
        s.access(g, Access::Write, 0x80, 8, 7).unwrap();
    }
}
