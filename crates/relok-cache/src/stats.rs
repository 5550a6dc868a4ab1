//! Counters of one cache tier.

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// What one tier did: in one process ([`crate::Store::stats`]) or summed
/// over every process that used a store ([`crate::Store::lifetime_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TierStats {
    /// Lookups that found a valid entry.
    pub hits: u64,
    /// Lookups that found nothing usable (absent, damaged or foreign).
    pub misses: u64,
    /// Payloads built because this tier missed.
    pub compiles: u64,
    /// Bytes of entries read on hits.
    pub bytes_read: u64,
    /// Bytes of entries written.
    pub bytes_written: u64,
    /// Entries removed to stay under the size cap.
    pub evictions: u64,
    /// Entries found damaged, stale or foreign (each also a miss; the
    /// rebuild replaces it).
    pub corrupt: u64,
    /// Writes that failed (the run went on without storing).
    pub write_errors: u64,
}

const FIELDS: usize = 8;

impl TierStats {
    fn fields(&self) -> [u64; FIELDS] {
        [
            self.hits,
            self.misses,
            self.compiles,
            self.bytes_read,
            self.bytes_written,
            self.evictions,
            self.corrupt,
            self.write_errors,
        ]
    }

    fn from_fields(f: [u64; FIELDS]) -> TierStats {
        let [hits, misses, compiles, bytes_read, bytes_written, evictions, corrupt, write_errors] = f;
        TierStats { hits, misses, compiles, bytes_read, bytes_written, evictions, corrupt, write_errors }
    }

    /// Field-wise sum (saturating).
    pub fn add(&self, other: &TierStats) -> TierStats {
        let (a, b) = (self.fields(), other.fields());
        TierStats::from_fields(std::array::from_fn(|i| a[i].saturating_add(b[i])))
    }

    /// Whether every counter is zero.
    pub fn is_zero(&self) -> bool {
        self.fields().iter().all(|&x| x == 0)
    }

    /// One line of the stats log: `v1` and the counters.
    pub(crate) fn to_line(self) -> String {
        let mut s = String::from("v1");
        for x in self.fields() {
            s.push(' ');
            s.push_str(&x.to_string());
        }
        s.push('\n');
        s
    }

    /// The sum of every well-formed line of a stats log (others are skipped:
    /// a line cut by a crash counts nothing).
    pub(crate) fn sum_lines(text: &str) -> TierStats {
        let mut total = TierStats::default();
        for line in text.lines() {
            let mut it = line.split(' ');
            if it.next() != Some("v1") {
                continue;
            }
            let xs: Vec<u64> = it.map_while(|x| x.parse().ok()).collect();
            if let Ok(f) = <[u64; FIELDS]>::try_from(xs) {
                total = total.add(&TierStats::from_fields(f));
            }
        }
        total
    }
}

/// Atomic counters behind [`TierStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters([AtomicU64; FIELDS]);

#[derive(Clone, Copy)]
pub(crate) enum Counter {
    Hits = 0,
    Misses,
    Compiles,
    BytesRead,
    BytesWritten,
    Evictions,
    Corrupt,
    WriteErrors,
}

impl Counters {
    pub(crate) fn add(&self, c: Counter, n: u64) {
        self.0[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sub(&self, c: Counter, n: u64) {
        // Saturating: a counter never wraps below zero.
        let _ = self.0[c as usize].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(x.saturating_sub(n)));
    }

    pub(crate) fn snapshot(&self) -> TierStats {
        TierStats::from_fields(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_sum_and_skip_damage() {
        let a = TierStats {
            hits: 1,
            misses: 2,
            compiles: 3,
            bytes_read: 4,
            bytes_written: 5,
            evictions: 6,
            corrupt: 7,
            write_errors: 8,
        };
        let text = format!("{}{}v1 1 2\ngarbage\n{}", a.to_line(), a.to_line(), &a.to_line()[..5]);
        assert_eq!(TierStats::sum_lines(&text), a.add(&a));
        assert!(TierStats::default().is_zero());
        assert!(!a.is_zero());
    }
}

/// What the remote tier did for one store: in one process
/// ([`crate::Store::remote_stats`]) or summed over every process that used
/// the store ([`crate::Store::lifetime_remote_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RemoteStats {
    /// Lookups after a local miss that found a valid signed entry (then
    /// written to the local store).
    pub hits: u64,
    /// Lookups that found nothing.
    pub misses: u64,
    /// Values that were there but not valid for this reader: unsigned,
    /// signed by another key, changed, moved from another name, another
    /// build's, truncated, too large (each also a miss; compiled locally).
    pub rejected: u64,
    /// Connection errors and timeouts (after the first the remote is off
    /// for the rest of the process).
    pub errors: u64,
    /// Bytes of values read on hits.
    pub bytes_read: u64,
    /// Bytes of values written (signed entries).
    pub bytes_written: u64,
    /// Entries written.
    pub writes: u64,
    /// Writes not made: the queue was full, the remote was off, or the
    /// process ended before the flush's time limit let them finish.
    pub dropped: u64,
    /// Time spent in remote lookups, microseconds (their latency: divide
    /// by hits + misses + rejected + errors).
    pub get_us: u64,
}

const REMOTE_FIELDS: usize = 9;

impl RemoteStats {
    fn fields(&self) -> [u64; REMOTE_FIELDS] {
        [
            self.hits,
            self.misses,
            self.rejected,
            self.errors,
            self.bytes_read,
            self.bytes_written,
            self.writes,
            self.dropped,
            self.get_us,
        ]
    }

    fn from_fields(f: [u64; REMOTE_FIELDS]) -> RemoteStats {
        let [hits, misses, rejected, errors, bytes_read, bytes_written, writes, dropped, get_us] = f;
        RemoteStats { hits, misses, rejected, errors, bytes_read, bytes_written, writes, dropped, get_us }
    }

    /// Field-wise sum (saturating).
    pub fn add(&self, other: &RemoteStats) -> RemoteStats {
        let (a, b) = (self.fields(), other.fields());
        RemoteStats::from_fields(std::array::from_fn(|i| a[i].saturating_add(b[i])))
    }

    /// Field-wise difference (saturating): what happened since `before`.
    pub fn since(&self, before: &RemoteStats) -> RemoteStats {
        let (a, b) = (self.fields(), before.fields());
        RemoteStats::from_fields(std::array::from_fn(|i| a[i].saturating_sub(b[i])))
    }

    /// Whether every counter is zero.
    pub fn is_zero(&self) -> bool {
        self.fields().iter().all(|&x| x == 0)
    }

    /// Lookups made (hits, misses, rejected and errors).
    pub fn lookups(&self) -> u64 {
        self.hits + self.misses + self.rejected + self.errors
    }

    /// One line of the stats log: `r1` and the counters (readers of the
    /// tier-1 lines skip it).
    pub(crate) fn to_line(self) -> String {
        let mut s = String::from("r1");
        for x in self.fields() {
            s.push(' ');
            s.push_str(&x.to_string());
        }
        s.push('\n');
        s
    }

    /// The sum of every well-formed `r1` line of a stats log.
    pub(crate) fn sum_lines(text: &str) -> RemoteStats {
        let mut total = RemoteStats::default();
        for line in text.lines() {
            let mut it = line.split(' ');
            if it.next() != Some("r1") {
                continue;
            }
            let xs: Vec<u64> = it.map_while(|x| x.parse().ok()).collect();
            if let Ok(f) = <[u64; REMOTE_FIELDS]>::try_from(xs) {
                total = total.add(&RemoteStats::from_fields(f));
            }
        }
        total
    }
}

/// Atomic counters behind [`RemoteStats`].
#[derive(Debug, Default)]
pub(crate) struct RemoteCounters([AtomicU64; REMOTE_FIELDS]);

#[derive(Clone, Copy)]
pub(crate) enum RemoteCounter {
    Hits = 0,
    Misses,
    Rejected,
    Errors,
    BytesRead,
    BytesWritten,
    Writes,
    Dropped,
    GetUs,
}

impl RemoteCounters {
    pub(crate) fn add(&self, c: RemoteCounter, n: u64) {
        self.0[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sub(&self, c: RemoteCounter, n: u64) {
        let _ = self.0[c as usize].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(x.saturating_sub(n)));
    }

    pub(crate) fn snapshot(&self) -> RemoteStats {
        RemoteStats::from_fields(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod remote_tests {
    use super::*;

    #[test]
    fn remote_lines_sum_apart_from_tier_lines() {
        let r = RemoteStats {
            hits: 1,
            misses: 2,
            rejected: 3,
            errors: 4,
            bytes_read: 5,
            bytes_written: 6,
            writes: 7,
            dropped: 8,
            get_us: 9,
        };
        let t = TierStats { hits: 10, ..TierStats::default() };
        let text = format!("{}{}{}r1 1 2\n", r.to_line(), t.to_line(), r.to_line());
        assert_eq!(RemoteStats::sum_lines(&text), r.add(&r));
        assert_eq!(TierStats::sum_lines(&text), t);
        assert_eq!(r.add(&r).since(&r), r);
        assert_eq!(r.lookups(), 10);
    }
}
