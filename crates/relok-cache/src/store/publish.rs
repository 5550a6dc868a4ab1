//! Writes: a temporary file created exclusively, written whole and
//! renamed over the entry's path.

use super::{MAX_ENTRY_BYTES, Store, StoreError, TEMP_PREFIX, io_err, os};
use crate::Key;
use crate::entry::{self, EntryError, Expect};
use crate::stats::Counter;
use std::fs;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

impl Store {
    /// Writes `payload` as `key`'s entry, replacing whatever is there, and
    /// may start a collection. A failure is counted and returned; the
    /// caller goes on without the store.
    pub fn put(&self, key: Key, payload: &[u8]) -> Result<(), StoreError> {
        let bytes = entry::encode(self.inner.config.kind, &self.inner.config.identity, key, payload);
        let published = self.publish(key, &bytes);
        if let Some(tier) = &self.remote {
            // Local first, then the remote, off the caller's path.
            tier.put(key, bytes.clone());
        }
        match published {
            Ok(()) => {
                self.inner.counters.add(Counter::BytesWritten, bytes.len() as u64);
                self.maybe_collect();
                Ok(())
            }
            Err(e) => {
                tracing::warn!("could not write cache entry {key}: {e}");
                self.inner.counters.add(Counter::WriteErrors, 1);
                Err(e)
            }
        }
    }

    /// Writes an already framed entry (from a bundle) after checking it.
    pub fn put_entry(&self, bytes: &[u8]) -> Result<Key, EntryError> {
        let h = entry::header(bytes)?;
        let expect = Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(h.key) };
        entry::decode(bytes, &expect)?;
        match self.publish(h.key, bytes) {
            Ok(()) => self.inner.counters.add(Counter::BytesWritten, bytes.len() as u64),
            Err(e) => {
                tracing::warn!("could not write cache entry {}: {e}", h.key);
                self.inner.counters.add(Counter::WriteErrors, 1);
            }
        }
        Ok(h.key)
    }

    /// Temporary file, created exclusively, written whole, renamed over the
    /// entry's path.
    pub(super) fn publish(&self, key: Key, bytes: &[u8]) -> Result<(), StoreError> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let cap = MAX_ENTRY_BYTES.min(self.inner.config.max_bytes);
        if bytes.len() as u64 > cap {
            return Err(StoreError::TooLarge { len: bytes.len() as u64, cap });
        }
        let path = self.entry_path(key);
        let shard = path.parent().unwrap_or(&self.inner.dir);
        os::create_private_dir(shard).map_err(io_err(shard))?;
        os::check_private(shard)?;
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
        let name = format!(
            "{TEMP_PREFIX}{}-{}-{nanos}-{}",
            &key.to_hex()[2..],
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = shard.join(name);
        let written = os::create_private_file(&tmp).and_then(|mut f| f.write_all(bytes));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(StoreError::Io { path: tmp, source: e });
        }
        let mut renamed = fs::rename(&tmp, &path);
        if renamed.is_err() && fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            // A directory where the entry belongs: it is not ours to keep.
            let _ = fs::remove_dir_all(&path);
            renamed = fs::rename(&tmp, &path);
        }
        renamed.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            StoreError::Io { path, source: e }
        })
    }
}
