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
//! idle. [`Device::open_in`](crate::Device::open_in) therefore runs
//! [`prepare`] on a second thread beside the driver and waits for both:
//!
//! - the pages of the executable file (or shared library) that holds
//!   relok's code are read, one byte each, so that they are mapped before
//!   the first load needs them (at most [`MAX_PREFAULT`] bytes, Linux
//!   only: the mappings are read from `/proc/self/maps`);
//! - the SHA-256 implementation is chosen once (its CPU feature check).
//!
//! It is done once per process, never for the cpu device (which opens in
//! microseconds: there is nothing to hide it behind), changes nothing
//! observable, and any failure (no `/proc`, an unreadable map) just
//! leaves the work to the first load.

use std::sync::Once;

/// The most bytes of code [`prepare`] touches: a bound on its time for a
/// very large binary (64 MiB is 16 384 pages, a few milliseconds).
pub const MAX_PREFAULT: usize = 64 << 20;

static PREPARED: Once = Once::new();

/// Runs `open` (a GPU driver's start-up) while a second thread does
/// [`prepare`], the first time in this process; later calls just run
/// `open`.
pub fn beside<T>(open: impl FnOnce() -> T) -> T {
    if PREPARED.is_completed() {
        return open();
    }
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new().name("relok-startup".into()).spawn_scoped(s, || {
            PREPARED.call_once(|| {
                prepare();
            })
        });
        let opened = open();
        if let Ok(h) = helper {
            let _ = h.join();
        }
        opened
    })
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
    let mut budget = MAX_PREFAULT;
    let mut pages = 0;
    for (start, end) in ranges {
        let mut at = start;
        while at < end && budget >= PAGE {
            // SAFETY: `at` lies in a readable, executable mapping of the file
            // that holds this very function (it is mapped for the whole
            // process: code is never unmapped while it can run); reading
            // one byte of it has no effect but mapping the page.
            unsafe { std::ptr::read_volatile(at as *const u8) };
            at += PAGE;
            budget -= PAGE;
            pages += 1;
        }
    }
    pages
}

const PAGE: usize = 4096;

/// The readable, executable ranges of `maps` (`/proc/self/maps`' format)
/// that belong to the file mapped at address `inside`.
fn code_ranges(maps: &str, inside: usize) -> Vec<(usize, usize)> {
    let parse = |line: &str| -> Option<(usize, usize, String, String)> {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let perms = fields.next()?.to_owned();
        let path = fields.nth(3).unwrap_or("").to_owned();
        Some((usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?, perms, path))
    };
    let entries: Vec<_> = maps.lines().filter_map(parse).collect();
    let Some(file) = entries.iter().find(|(s, e, _, p)| (*s..*e).contains(&inside) && p.starts_with('/')).map(|e| e.3.clone()) else {
        return Vec::new();
    };
    entries.into_iter().filter(|(s, e, perms, p)| *p == file && perms.starts_with("r-x") && s < e).map(|(s, e, ..)| (s, e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0000000-55d0c0100000 r--p 00000000 08:01 123 /usr/bin/app
55d0c0100000-55d0c0300000 r-xp 00100000 08:01 123 /usr/bin/app
55d0c0300000-55d0c0400000 r--p 00300000 08:01 123 /usr/bin/app
7f0000000000-7f0000100000 r-xp 00000000 08:01 456 /usr/lib/libc.so.6
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
";

    #[test]
    fn only_the_code_of_the_file_that_holds_the_address() {
        assert_eq!(code_ranges(MAPS, 0x55d0c0000010), vec![(0x55d0c0100000, 0x55d0c0300000)]);
        assert_eq!(code_ranges(MAPS, 0x7f0000000100), vec![(0x7f0000000000, 0x7f0000100000)]);
        assert!(code_ranges(MAPS, 0x7ffd00000010).is_empty(), "anonymous mappings are no file");
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
