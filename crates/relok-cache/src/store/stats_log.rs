//! The counters: this process's, and every process's in the stats log
//! (appended on flush, compacted by a collection).

use super::os::{self, Bounded};
use super::walk::Walked;
use super::{Inner, STATS_COMPACT_BYTES, STATS_LOG, STATS_MAX_BYTES, Store, StoreConfig, TEMP_PREFIX, lock};
use crate::stats::{Counter, Counters};
use crate::{RemoteStats, TierStats};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

impl Store {
    /// The remote counters of every process that used this store (their
    /// stats log lines) plus this process's unlogged ones.
    pub fn lifetime_remote_stats(&self) -> RemoteStats {
        let before = self.remote.as_ref().map(|t| *lock(&t.flushed)).unwrap_or_default();
        RemoteStats::sum_lines(&read_stats_log(&self.inner.dir)).add(&self.remote_stats().since(&before))
    }

    /// The remote counters every process logged in the store folder `dir`.
    pub fn survey_remote(dir: &Path) -> RemoteStats {
        RemoteStats::sum_lines(&read_stats_log(dir))
    }

    /// Counts a payload built because this store missed.
    pub fn count_compile(&self) {
        self.inner.counters.add(Counter::Compiles, 1);
    }

    /// This process's counters.
    pub fn stats(&self) -> TierStats {
        self.inner.counters.snapshot()
    }

    /// The counters every process logged in the store folder `dir`, its
    /// entry count and their bytes, without opening it (for reports over
    /// several stores).
    pub fn survey(dir: &Path) -> (u64, u64, TierStats) {
        let logged = read_stats_log(dir);
        let inner = Inner {
            config: StoreConfig::artifacts(dir, ""),
            dir: dir.to_owned(),
            counters: Counters::default(),
            flushed: Mutex::new(TierStats::default()),
        };
        let (mut n, mut bytes) = (0, 0);
        inner.walk(&mut |w| {
            if let Walked::Entry(e) = w {
                n += 1;
                bytes += e.len;
            }
        });
        (n, bytes, TierStats::sum_lines(&logged))
    }

    /// The counters of every process that used this store (their stats log
    /// lines) plus this process's unlogged ones.
    pub fn lifetime_stats(&self) -> TierStats {
        let logged = read_stats_log(&self.inner.dir);
        TierStats::sum_lines(&logged).add(&self.unflushed())
    }

    fn unflushed(&self) -> TierStats {
        let now = self.stats();
        let before = *self.inner.flushed.lock().unwrap_or_else(|e| e.into_inner());
        // Saturating: `reject` takes a hit back, which may have been
        // flushed already.
        TierStats {
            hits: now.hits.saturating_sub(before.hits),
            misses: now.misses.saturating_sub(before.misses),
            compiles: now.compiles.saturating_sub(before.compiles),
            bytes_read: now.bytes_read.saturating_sub(before.bytes_read),
            bytes_written: now.bytes_written.saturating_sub(before.bytes_written),
            evictions: now.evictions.saturating_sub(before.evictions),
            corrupt: now.corrupt.saturating_sub(before.corrupt),
            write_errors: now.write_errors.saturating_sub(before.write_errors),
        }
    }

    /// Appends this process's counters since the last flush to the stats
    /// log (one line, one `write` in append mode). Also done on drop.
    pub fn flush_stats(&self) {
        let delta = self.unflushed();
        let remote_now = self.remote_stats();
        let remote_delta = remote_now.since(&self.remote.as_ref().map(|t| *lock(&t.flushed)).unwrap_or_default());
        if delta.is_zero() && remote_delta.is_zero() {
            return;
        }
        let mut text = if delta.is_zero() { String::new() } else { delta.to_line() };
        if !remote_delta.is_zero() {
            text.push_str(&remote_delta.to_line());
        }
        let path = self.inner.dir.join(STATS_LOG);
        // Not through a link, never blocking on a FIFO, only into a regular
        // file of this user.
        let ok = os::append_file(&path).and_then(|mut f| f.write_all(text.as_bytes())).is_ok();
        if ok {
            *self.inner.flushed.lock().unwrap_or_else(|e| e.into_inner()) = self.stats();
            if let Some(t) = &self.remote {
                *lock(&t.flushed) = remote_now;
            }
        }
    }
}

/// The stats log of the store folder `dir`: at most `STATS_MAX_BYTES`, cut
/// after its last whole line; empty when it is not a regular file of this
/// user (never followed, never a FIFO).
fn read_stats_log(dir: &Path) -> String {
    let buf = match os::read_regular(&dir.join(STATS_LOG), STATS_MAX_BYTES) {
        Ok(Bounded::Whole(_, meta, buf)) if os::foreign_owner(&meta).is_none() => buf,
        Ok(Bounded::TooLong(_)) => {
            // Read again up to the bound; the rest counts nothing.
            match os::read_prefix(&dir.join(STATS_LOG), STATS_MAX_BYTES) {
                Ok(mut buf) => {
                    let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                    buf.truncate(whole);
                    buf
                }
                Err(_) => Vec::new(),
            }
        }
        _ => Vec::new(),
    };
    String::from_utf8_lossy(&buf).into_owned()
}

impl Inner {
    /// Rewrites a long stats log as one line, or replaces a stats log that
    /// is not a regular file of this user. Lines appended between the read
    /// and the rename are lost: the counters are statistics.
    pub(super) fn compact_stats(&self) {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let path = self.dir.join(STATS_LOG);
        let line = match fs::symlink_metadata(&path) {
            Err(_) => return,
            Ok(m) if m.is_file() && os::foreign_owner(&m).is_none() => {
                if m.len() < STATS_COMPACT_BYTES {
                    return;
                }
                let log = read_stats_log(&self.dir);
                let mut line = TierStats::sum_lines(&log).to_line();
                let remote = RemoteStats::sum_lines(&log);
                if !remote.is_zero() {
                    line.push_str(&remote.to_line());
                }
                line
            }
            // A link, a FIFO, another user's file: unlinked by the rename
            // below, never opened.
            Ok(_) => String::new(),
        };
        let tmp =
            self.dir.join(format!("{TEMP_PREFIX}stats-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
        if os::create_private_file(&tmp)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .and_then(|()| fs::rename(&tmp, &path))
            .is_err()
        {
            let _ = fs::remove_file(&tmp);
        }
    }
}
