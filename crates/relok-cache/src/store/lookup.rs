//! Lookups: an entry read (bounded, never through a link), checked and
//! counted; a rejected entry removed.

use super::os::{self, Bounded};
use super::{EntryInfo, Lookup, MAX_ENTRY_BYTES, Store, TOUCH_AFTER, in_future};
use crate::Key;
use crate::entry::{self, Expect};
use crate::stats::Counter;
use std::fs;
use std::io;
use std::path::Path;
use std::time::SystemTime;

impl Store {
    pub(super) fn expect(&self, key: Key) -> Expect<'_> {
        Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(key) }
    }

    /// Looks `key` up: a valid entry's payload, a miss, or a rejected
    /// entry with its reason (also a miss).
    /// A local miss is then looked up in the remote, if there is one: a
    /// verified remote entry is written to the local store and is a hit
    /// (of the remote; the local store counts the miss).
    pub fn get(&self, key: Key) -> Lookup {
        let found = self.read_entry(key);
        self.count_lookup(key, &found);
        match (&found, &self.remote) {
            (Lookup::Hit(_), _) | (_, None) => found,
            (_, Some(tier)) => self.get_remote(tier, key).unwrap_or(found),
        }
    }

    /// Counts a local lookup.
    pub(super) fn count_lookup(&self, key: Key, found: &Lookup) {
        let c = &self.inner.counters;
        match found {
            Lookup::Hit(_) => c.add(Counter::Hits, 1),
            Lookup::Miss => c.add(Counter::Misses, 1),
            Lookup::Rejected(why) => {
                tracing::warn!("artifact cache entry {key} rejected: {why}; it will be rebuilt");
                c.add(Counter::Misses, 1);
                c.add(Counter::Corrupt, 1);
            }
        }
    }

    /// Whether the framed `bytes` are a valid entry of this store for `key`.
    pub(super) fn check_entry(&self, key: Key, bytes: &[u8]) -> Result<(), String> {
        entry::decode(bytes, &self.expect(key)).map(|_| ()).map_err(|e| e.to_string())
    }

    /// The bound of an entry's size.
    pub(super) fn entry_bound(&self) -> u64 {
        MAX_ENTRY_BYTES.min(self.inner.config.max_bytes)
    }

    pub(super) fn read_entry(&self, key: Key) -> Lookup {
        let path = self.entry_path(key);
        match self.check_shard(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Rejected(e.to_string()),
        }
        let bound = MAX_ENTRY_BYTES.min(self.inner.config.max_bytes);
        let (f, meta, mut buf) = match os::read_regular(&path, bound) {
            Ok(Bounded::Whole(f, meta, buf)) => (f, meta, buf),
            Ok(Bounded::TooLong(len)) => {
                return Lookup::Rejected(format!("{len} bytes is larger than any entry of this store (cap {bound})"));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Rejected(format!("cannot read: {e}")),
        };
        if let Some(why) = os::foreign_owner(&meta) {
            return Lookup::Rejected(why);
        }
        let expect = Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(key) };
        let range = match entry::decode(&buf, &expect) {
            Ok(p) => {
                let start = p.as_ptr() as usize - buf.as_ptr() as usize;
                start..start + p.len()
            }
            Err(e) => return Lookup::Rejected(e.to_string()),
        };
        self.inner.counters.add(Counter::BytesRead, buf.len() as u64);
        let now = SystemTime::now();
        let touch = |m: SystemTime| now.duration_since(m).unwrap_or_default() > TOUCH_AFTER || in_future(m, now);
        if meta.modified().is_ok_and(touch) {
            // The LRU clock; failing to set it only makes eviction less exact.
            let _ = f.set_modified(now);
        }
        buf.truncate(range.end);
        buf.drain(..range.start);
        Lookup::Hit(buf)
    }

    /// Removes `key`'s entry after a hit whose payload the caller could not
    /// use: that lookup counts as a miss and the entry as corrupt.
    /// An entry that came from the remote counts as a remote rejection
    /// instead (the local store counted a miss already).
    pub fn reject(&self, key: Key, why: &str) {
        tracing::warn!("artifact cache entry {key} rejected: {why}; it will be rebuilt");
        if !self.remote.as_ref().is_some_and(|t| t.take_back(key)) {
            self.inner.counters.sub(Counter::Hits, 1);
            self.inner.counters.add(Counter::Misses, 1);
            self.inner.counters.add(Counter::Corrupt, 1);
        }
        let path = self.entry_path(key);
        if self.check_shard(&path).is_ok() && fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            let _ = fs::remove_file(path);
        }
    }

    /// Checks the shard folder of the entry file `path` as the store's own
    /// folders are checked: a directory (not a link) of this user that no
    /// one else can write. `NotFound` when it does not exist.
    fn check_shard(&self, path: &Path) -> io::Result<()> {
        let shard = path.parent().unwrap_or(&self.inner.dir);
        // One `lstat` per lookup: a missing shard is a miss (NotFound), any
        // other shard an insecure one.
        let meta = fs::symlink_metadata(shard)?;
        os::private_dir(shard, &meta).map_err(|e| io::Error::other(format!("{e}; its entries are not used")))
    }

    /// Reads every entry and checks it against its own key: each entry with
    /// `Ok` or the reason it would be rejected.
    pub fn verify(&self) -> Vec<(EntryInfo, Result<(), String>)> {
        let expect =
            |key| Expect { kind: self.inner.config.kind, identity: &self.inner.config.identity, key: Some(key) };
        self.entries()
            .into_iter()
            .map(|info| {
                let bound = MAX_ENTRY_BYTES.min(self.inner.config.max_bytes);
                let r = match os::read_regular(&info.path, bound) {
                    Ok(Bounded::Whole(_, _, b)) => {
                        entry::decode(&b, &expect(info.key)).map(|_| ()).map_err(|e| e.to_string())
                    }
                    Ok(Bounded::TooLong(len)) => {
                        Err(format!("{len} bytes is larger than any entry of this store (cap {bound})"))
                    }
                    Err(e) => Err(format!("cannot read: {e}")),
                };
                (info, r)
            })
            .collect()
    }
}
