//! What a new process pays once, taken while a GPU driver starts.
//!
//! The first kernel load of a process runs relok code that nothing has run
//! before: every page of it is a page fault on first execution, and the
//! first SHA-256 asks the CPU which instructions it has. On a warm cache
//! these one-time costs were about half of relok's own share of the first
//! launch (measured: the warm store path of one kernel took ≈110 µs in a
//! new process and ≈50 µs once the code was resident).
//!
//! Opening a GPU takes the driver 100–250 ms (`cuInit` and the context,
//! or a Vulkan instance and device), during which the host's other cores
//! idle. [`Device::open_in`](crate::Device::open_in) therefore starts
//! [`prepare`] on a second thread as the driver starts (and does not wait
//! for it: should it outlast the driver, it overlaps the first load, which
//! it can only make faster):
//!
//! - the pages of the executable file (or shared library) that holds
//!   relok's code are read, one byte each, so that they are mapped before
//!   the first load needs them (at most [`MAX_PREFAULT`] bytes, Linux
//!   only: the mappings are read from `/proc/self/maps`, the file told by
//!   its device and inode). Only that file: it stays mapped while its code
//!   runs, where another library (a Vulkan driver the loader unloads, say)
//!   could vanish under the read;
//! - the SHA-256 implementation is chosen once (its CPU feature check).
//!
//! It is done once per process, never for the cpu device (which opens in
//! microseconds: there is nothing to hide it behind), changes no result
//! (the pages read count in the process's resident memory, as they would
//! once the code ran), and any failure (no `/proc`, an unreadable map, a
//! thread that cannot start) just leaves the work to the first load.

use std::sync::Once;

/// The most bytes of code [`prepare`] touches: a bound on its time for a
/// very large binary (64 MiB is 16 384 pages, a few milliseconds).
pub const MAX_PREFAULT: usize = 64 << 20;

static STARTED: Once = Once::new();

/// Runs `open` (a GPU driver's start-up), the first time in this process
/// after starting [`prepare`] on a thread of its own (not waited for).
///
/// ```
/// assert_eq!(relok_runtime::startup::beside(|| 7), 7);
/// assert_eq!(relok_runtime::startup::beside(|| "again"), "again");
/// ```
pub fn beside<T>(open: impl FnOnce() -> T) -> T {
    STARTED.call_once(|| {
        let _ = std::thread::Builder::new().name("relok-startup".into()).spawn(|| {
            prepare();
        });
    });
    open()
}

/// The one-time work of a process's first kernel load, done ahead: see
/// the module docs. Returns the pages touched.
pub fn prepare() -> usize {
    use sha2::{Digest, Sha256};
    let _ = Sha256::digest(b"relok");
    prefault_own_code()
}

/// Reads one byte of every page of the mapped code of the file that holds
/// this function. Returns the pages touched (0 off Linux or on failure).
fn prefault_own_code() -> usize {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return 0 };
    let here = prefault_own_code as *const () as usize;
    let ranges = code_ranges(&maps, here);
    let mut pages = 0;
    for (start, end) in ranges {
        for at in (start..end).step_by(PAGE).take(MAX_PREFAULT / PAGE - pages) {
            // SAFETY: `at` lies in a readable, executable mapping of the file
            // that holds this very function (it is mapped for the whole
            // process: code is never unmapped while it can run); reading
            // one byte of it has no effect but mapping the page.
            unsafe { std::ptr::read_volatile(at as *const u8) };
            pages += 1;
        }
    }
    pages
}

const PAGE: usize = 4096;

/// The readable, executable ranges of `maps` (`/proc/self/maps`' format:
/// range, permissions, offset, device, inode, path) that belong to the
/// file mapped at address `inside`, told by its device and inode (a path
/// may hold spaces; an anonymous mapping has inode 0 and is no file).
fn code_ranges(maps: &str, inside: usize) -> Vec<(usize, usize)> {
    let parse = |line: &str| -> Option<(usize, usize, bool, (String, u64))> {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let perms = fields.next()?;
        let _offset = fields.next()?;
        let device = fields.next()?.to_owned();
        let inode = fields.next()?.parse::<u64>().ok()?;
        let code = perms.starts_with('r') && perms.get(2..3) == Some("x");
        Some((usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?, code, (device, inode)))
    };
    let entries: Vec<_> = maps.lines().filter_map(parse).collect();
    let Some(file) =
        entries.iter().find(|(s, e, _, (_, inode))| (*s..*e).contains(&inside) && *inode != 0).map(|e| e.3.clone())
    else {
        return Vec::new();
    };
    entries.into_iter().filter(|(s, e, code, id)| *id == file && *code && s < e).map(|(s, e, ..)| (s, e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0000000-55d0c0100000 r--p 00000000 08:01 123 /opt/My App/app
55d0c0100000-55d0c0300000 r-xp 00100000 08:01 123 /opt/My App/app
55d0c0300000-55d0c0400000 r--p 00300000 08:01 123 /opt/My App/app
7f0000000000-7f0000100000 r-xp 00000000 08:01 456 /opt/My Libs/libx.so
7f0000200000-7f0000300000 r-xp 00000000 00:00 0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
";

    #[test]
    fn only_the_code_of_the_file_that_holds_the_address() {
        // The file by device and inode: a path with spaces, and another
        // path that starts the same, are told apart.
        assert_eq!(code_ranges(MAPS, 0x55d0c0000010), vec![(0x55d0c0100000, 0x55d0c0300000)]);
        assert_eq!(code_ranges(MAPS, 0x7f0000000100), vec![(0x7f0000000000, 0x7f0000100000)]);
        assert!(code_ranges(MAPS, 0x7ffd00000010).is_empty(), "anonymous mappings are no file");
        assert!(code_ranges(MAPS, 0x7f0000200010).is_empty(), "anonymous code is no file");
        assert!(code_ranges(MAPS, 0x1000).is_empty());
        assert!(code_ranges("garbage\n\n-", 0x1000).is_empty());
    }

    #[test]
    fn this_process_has_code_to_prefault_on_linux() {
        let pages = prepare();
        if cfg!(target_os = "linux") {
            assert!(pages > 0, "the test binary's code is mapped");
            assert!(pages <= MAX_PREFAULT / PAGE);
        }
    }
}
