//! relok's caches on disk (docs/design.md §5): bytes in, bytes out.
//!
//! This crate knows nothing of kernels. It stores **entries** — a payload
//! under a 32-byte [`Key`], framed by [`entry`] with a magic number, a
//! format version, the kind of payload, the identity of the program that
//! wrote it, the key and a checksum — in a [`Store`]: one file per entry in a
//! folder per format and identity. [`bundle`] packs entries into one file
//! that an application ships and imports. [`remote`] puts a Redis server
//! that machines share behind a store ([`Store::with_remote`]): entries
//! signed with Ed25519, read on a local miss, written in the background.
//!
//! # Layout on disk
//!
//! ```text
//! <root>/                          RELOK_CACHE_DIR, else $XDG_CACHE_HOME/relok, else ~/.cache/relok (0700)
//!   artifacts/                     tier 1: one family of folders
//!     v1-relok-0.1.0-3fa2…/        this format version and compiler identity
//!       3f/                        first two hex digits of the key
//!         a9c4…                    the other 62 hex digits: one entry
//!         .tmp-a9c4…-<pid>-<n>     a write in progress (renamed into place when complete)
//!       .tmp-stats-<pid>-<n>       a compaction of stats.log in progress
//!       gc-stamp, gc.lock          when the last collection ran; who runs one now
//!       stats.log                  one line of counters per process that used the store
//! ```
//!
//! The rules (each tested in `tests/`):
//!
//! - Entry names are hex digests of keys; nothing from the input becomes a
//!   path.
//! - A writer creates a temporary file exclusively (`O_EXCL`), writes the
//!   whole entry and renames it into place: readers see a complete entry or
//!   none.
//! - Opening a store creates its folder and checks that it is private; it
//!   never scans the entries.
//! - Reading checks the header (magic, version, kind, identity, key), the
//!   length and the checksum; any mismatch is a miss reported with its exact
//!   reason, and the caller's rebuild replaces the entry.
//! - The store owns only what it wrote: store folders of its own versioned
//!   pattern, two-hex-digit shards, hex-named entries, `.tmp-*` temporaries
//!   and its stats log, stamp and lock, each only as a regular file (or
//!   folder) of this user. Every folder level, shards included, is checked
//!   (a directory, not a link, this user's, not group- or world-writable);
//!   files are opened with `O_NOFOLLOW | O_NONBLOCK` and checked to be
//!   regular on the open file; the store's own files are created with
//!   `O_CREAT | O_EXCL | O_NOFOLLOW`; reads are bounded before they start.
//! - A date in the future is stale for locks, stamps and temporary files
//!   and "now" for the LRU order.
//! - A hit refreshes the entry's modification time (at most once a minute),
//!   which is the least-recently-used order of eviction. Eviction, removal
//!   of temporary files older than an hour and of what relok wrote in the
//!   folders of other identities in the same family unused for a week run
//!   in a collection that a write starts at most once per interval, on a
//!   background thread, under a lock file.

pub mod bundle;
pub mod entry;
mod key;
pub mod remote;
mod stats;
mod store;

pub use key::Key;
pub use stats::{RemoteStats, TierStats};
pub use store::{
    ClearReport, CollectReport, DEFAULT_MAX_BYTES, EntryInfo, Lookup, PullReport, PushReport, STALE_FOLDER_AGE, Store,
    StoreConfig, StoreError, TEMP_MAX_AGE, default_root, switched_off,
};
