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
        let a = TierStats { hits: 1, misses: 2, compiles: 3, bytes_read: 4, bytes_written: 5, evictions: 6, corrupt: 7, write_errors: 8 };
        let text = format!("{}{}v1 1 2\ngarbage\n{}", a.to_line(), a.to_line(), &a.to_line()[..5]);
        assert_eq!(TierStats::sum_lines(&text), a.add(&a));
        assert!(TierStats::default().is_zero());
        assert!(!a.is_zero());
    }
}
