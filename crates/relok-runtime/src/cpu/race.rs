//! The race detector of the cpu device: two accesses to the same byte of
//! global or shared memory from different threads of one block between the
//! same pair of barriers are a
//! [`FaultKind::DataRace`](crate::FaultKind::DataRace) naming the address,
//! both threads and both accesses, unless both are reads or both are
//! atomics. So a plain store races every other thread's access, and a
//! plain load races another thread's store and another thread's atomic (an
//! atomic is a read-modify-write: a plain load beside it may see the value
//! before or after, in an order the GPU does not fix). Atomics among
//! themselves, loads among themselves, and one thread's accesses among
//! themselves (program order) never race; a barrier orders every access
//! before it before every access after it, for plain and atomic accesses
//! alike (e.g. atomics into a bin, a barrier, then plain loads of the bin).
//!
//! The interpreter runs a block's threads one after another between
//! barriers, so a racy kernel gives one of its possible answers here and
//! another on a GPU; the detector turns that into a fault. Shape: a
//! [`Shadow`] per block phase (the accesses since the block's last
//! barrier), one entry per touched 8-byte chunk (an access is aligned to
//! its size, at most 8 bytes, so it lies in one chunk), each byte of it
//! holding its plain writer and up to two distinct readers and two
//! distinct atomic threads. Two suffice: an access conflicts with an
//! earlier kind of access when some *other* thread made it, and of two
//! distinct threads at least one is not this one. A plain writer is one
//! thread: a second thread's access to the byte would already have
//! faulted. The shadow is cleared when a block starts and
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
    /// The thread that stored to it with a plain store.
    writer: u32,
    /// Up to two distinct threads that loaded it with a plain load.
    readers: [u32; 2],
    /// Up to two distinct threads that updated it with an atomic.
    atomics: [u32; 2],
}

/// A thread of `seen` other than `me`.
fn other(seen: [u32; 2], me: u32) -> Option<u32> {
    seen.into_iter().find(|&t| t != 0 && t != me)
}

/// Adds `me` to `seen` unless it holds `me` or two threads already.
fn note(seen: &mut [u32; 2], me: u32) {
    if seen[0] == 0 {
        seen[0] = me;
    } else if seen[0] != me && seen[1] == 0 {
        seen[1] = me;
    }
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
            let writer = (b.writer != 0 && b.writer != me).then_some(b.writer);
            let write = writer.map(|t| (t, Access::Write));
            let read = || other(b.readers, me).map(|t| (t, Access::Read));
            let atomic = || other(b.atomics, me).map(|t| (t, Access::Atomic));
            let conflict = match access {
                Access::Read => write.or_else(atomic),
                Access::Write => write.or_else(atomic).or_else(read),
                Access::Atomic => write.or_else(read),
            };
            if let Some((number, other_access)) = conflict {
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
                Access::Read => note(&mut b.readers, me),
                Access::Write => b.writer = me,
                Access::Atomic => note(&mut b.atomics, me),
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
        // One thread's atomic and its own load, store and atomic again.
        s.access(g, Access::Atomic, 0x300, 4, 2).unwrap();
        s.access(g, Access::Read, 0x300, 4, 2).unwrap();
        s.access(g, Access::Write, 0x300, 4, 2).unwrap();
        s.access(g, Access::Atomic, 0x300, 4, 2).unwrap();
        s.clear([4, 2, 1]);
        s.access(g, Access::Read, 0x40, 4, 3).unwrap();
        s.access(sh, Access::Write, 0x200, 8, 7).unwrap();
        s.access(g, Access::Write, 0x80, 8, 7).unwrap();
        // Loads, then a barrier, then another thread's atomics.
        s.clear([4, 2, 1]);
        s.access(g, Access::Atomic, 0x80, 8, 0).unwrap();
        s.access(g, Access::Atomic, 0x40, 4, 0).unwrap();
    }

    #[test]
    fn a_load_and_another_threads_atomic_race_in_either_order() {
        let g = AddrSpace::Global;
        let race = |other_thread, other_access, access| FaultKind::DataRace {
            space: g,
            addr: 0x40,
            other_thread,
            other_access,
            access,
        };
        // The atomic first: the load sees it.
        let mut s = shadow();
        s.access(g, Access::Atomic, 0x40, 4, 1).unwrap();
        let e = s.access(g, Access::Read, 0x40, 4, 4).unwrap_err();
        assert_eq!(e, race([1, 0, 0], Access::Atomic, Access::Read));
        // The load first: the atomic sees it.
        let mut s = shadow();
        s.access(g, Access::Read, 0x40, 4, 4).unwrap();
        let e = s.access(g, Access::Atomic, 0x40, 4, 1).unwrap_err();
        assert_eq!(e, race([0, 1, 0], Access::Read, Access::Atomic));
        // Every thread adds, the last one also loads: it races with the
        // others' atomics, not with its own.
        let mut s = shadow();
        for t in 0..8 {
            s.access(g, Access::Atomic, 0x40, 4, t).unwrap();
        }
        let e = s.access(g, Access::Read, 0x40, 4, 7).unwrap_err();
        assert_eq!(e, race([0, 0, 0], Access::Atomic, Access::Read));
        // A load of the thread that added last and first (the reader and
        // the adder are the same thread: not a race), then another adder.
        let mut s = shadow();
        s.access(g, Access::Atomic, 0x40, 4, 3).unwrap();
        s.access(g, Access::Read, 0x40, 4, 3).unwrap();
        let e = s.access(g, Access::Atomic, 0x40, 4, 6).unwrap_err();
        assert_eq!(e, race([3, 0, 0], Access::Read, Access::Atomic));
        // A store after another thread's atomic, and an atomic after
        // another thread's store.
        let mut s = shadow();
        s.access(g, Access::Atomic, 0x40, 4, 2).unwrap();
        let e = s.access(g, Access::Write, 0x40, 4, 5).unwrap_err();
        assert_eq!(e, race([2, 0, 0], Access::Atomic, Access::Write));
        let mut s = shadow();
        s.access(g, Access::Write, 0x40, 4, 5).unwrap();
        let e = s.access(g, Access::Atomic, 0x40, 4, 2).unwrap_err();
        assert_eq!(e, race([1, 1, 0], Access::Write, Access::Atomic));
    }
}
