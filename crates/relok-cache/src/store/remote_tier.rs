//! The remote behind a store: lookups on a local miss, backfills, `relok
//! cache push` and `pull`.

use super::os::{self, Bounded};
use super::{Lookup, MAX_ENTRY_BYTES, Store};
use crate::entry;
use crate::remote::{Remote, RemoteError, Tier, TierLookup};
use crate::stats::Counter;
use crate::{Key, RemoteStats};
use std::sync::Arc;

/// What [`Store::push`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushReport {
    /// Entries written to the remote.
    pub pushed: u64,
    /// Bytes written (signed values).
    pub bytes: u64,
    /// Local entries not pushed because they are not valid, each as
    /// `key: reason`.
    pub skipped: Vec<String>,
}

/// What [`Store::pull`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullReport {
    /// Keys already in the local store.
    pub local: u64,
    /// Keys fetched from the remote (and written locally).
    pub fetched: u64,
    /// Keys in neither.
    pub missing: u64,
    /// Remote values rejected (see [`RemoteStats::rejected`]).
    pub rejected: u64,
    /// Lookups that failed (the remote is then off).
    pub errors: u64,
}

impl Store {
    /// This store with `remote` behind it: a local miss is looked up there
    /// (a verified entry is written locally), a local write is queued for
    /// it when this process holds the signing key. Its entries are named
    /// `relok:<family>/<folder>/<key hex>` (see [`crate::remote`]).
    pub fn with_remote(mut self, remote: Arc<Remote>) -> Store {
        self.remote = Some(Box::new(Tier::new(remote, &self.inner.config.family, &self.inner.config.folder)));
        self
    }

    /// The remote behind this store, if any.
    pub fn remote(&self) -> Option<&Arc<Remote>> {
        self.remote.as_ref().map(|t| &t.remote)
    }

    /// This process's remote counters for this store (zero without one).
    pub fn remote_stats(&self) -> RemoteStats {
        self.remote.as_ref().map(|t| t.stats()).unwrap_or_default()
    }

    /// Waits for this process's queued remote writes, at most the remote's
    /// flush time limit (as dropping the store does); returns how many are
    /// left.
    pub fn flush_remote(&self) -> usize {
        let Some(tier) = &self.remote else { return 0 };
        let left = tier.remote.flush(tier.remote.flush_timeout());
        if left > 0 {
            tracing::warn!(
                "{left} writes to the remote cache {} not finished within the flush time limit",
                tier.remote.url()
            );
        }
        left
    }

    /// Writes every valid local entry to the remote now, signed (`relok
    /// cache push`). Needs the signing key.
    pub fn push(&self) -> Result<PushReport, RemoteError> {
        let tier = self.remote.as_ref().ok_or(RemoteError::NoKey)?;
        if !tier.remote.is_writer() {
            return Err(RemoteError::ReadOnly);
        }
        let mut report = PushReport::default();
        let bound = MAX_ENTRY_BYTES.min(self.inner.config.max_bytes);
        let mut batch = Vec::new();
        let entries = self.entries();
        for (i, info) in entries.iter().enumerate() {
            match os::read_regular(&info.path, bound) {
                Ok(Bounded::Whole(_, _, bytes)) => match entry::decode(&bytes, &self.expect(info.key)) {
                    Ok(_) => batch.push((tier.name(info.key), bytes)),
                    Err(e) => report.skipped.push(format!("{}: {e}", info.key)),
                },
                Ok(Bounded::TooLong(len)) => {
                    report.skipped.push(format!("{}: {len} bytes, larger than the cap", info.key))
                }
                Err(e) => report.skipped.push(format!("{}: {e}", info.key)),
            }
            if batch.len() == 64 || (i + 1 == entries.len() && !batch.is_empty()) {
                report.bytes += tier.remote.put_now(&batch)?;
                report.pushed += batch.len() as u64;
                tier.counters.add(crate::stats::RemoteCounter::Writes, batch.len() as u64);
                batch.clear();
            }
        }
        tier.counters.add(crate::stats::RemoteCounter::BytesWritten, report.bytes);
        Ok(report)
    }

    /// Looks every key up, fetching from the remote what the local store
    /// lacks (`relok cache pull`): 64 keys per round trip.
    pub fn pull(&self, keys: &[Key]) -> PullReport {
        let mut r = PullReport::default();
        let before = self.remote_stats();
        let mut wanted = Vec::new();
        for &key in keys {
            let found = self.read_entry(key);
            self.count_lookup(key, &found);
            match found {
                Lookup::Hit(_) => r.local += 1,
                Lookup::Miss | Lookup::Rejected(_) => wanted.push(key),
            }
        }
        if let Some(tier) = &self.remote {
            for batch in wanted.chunks(64) {
                let found = tier.get_many(batch, self.entry_bound(), |k, b| self.check_entry(k, b));
                for (&key, f) in batch.iter().zip(found) {
                    if let TierLookup::Entry(bytes) = f {
                        self.backfill(key, &bytes);
                    }
                }
            }
        }
        let d = self.remote_stats().since(&before);
        (r.fetched, r.missing, r.rejected, r.errors) = (d.hits, d.misses, d.rejected, d.errors);
        if self.remote.is_none() {
            r.missing = keys.len() as u64 - r.local;
        }
        r
    }

    /// `key` from the remote, checked as a local entry is, then written
    /// locally (a failed write is counted; the hit stands).
    pub(super) fn get_remote(&self, tier: &Tier, key: Key) -> Option<Lookup> {
        let TierLookup::Entry(bytes) = tier.get(key, self.entry_bound(), |k, b| self.check_entry(k, b)) else {
            return None;
        };
        self.backfill(key, &bytes);
        let payload = entry::decode(&bytes, &self.expect(key)).ok()?;
        Some(Lookup::Hit(payload.to_vec()))
    }

    /// Writes a verified remote entry to the local store.
    fn backfill(&self, key: Key, bytes: &[u8]) {
        match self.publish(key, bytes) {
            Ok(()) => self.inner.counters.add(Counter::BytesWritten, bytes.len() as u64),
            Err(e) => {
                tracing::warn!("could not write cache entry {key} fetched from the remote: {e}");
                self.inner.counters.add(Counter::WriteErrors, 1);
            }
        }
    }
}
