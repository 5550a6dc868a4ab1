//! Relocation records and the manifest (docs/design.md §1–§3).
//!
//! A kernel may refer to host objects whose *word* (a 64-bit value) is only
//! valid in one process, on one device. relok never lets such a word into the
//! code it persists: every reference stays symbolic as a **relocation
//! record** — *this site in the code holds the word of this target* — until
//! the loader delivers the real word (docs/design.md §3: bake, patch or table).
//!
//! This module holds the data and the rules; lowering lives elsewhere.
//!
//! # Records
//!
//! - [`Target`] — whose word the site holds, by **stable identity** (the same
//!   in every process):
//!   - [`Target::Symbol`]: an interned symbol, by name;
//!   - [`Target::Value`]: a host value, by [`ValueKey`] = SHA-256 of its type
//!     tag and bytes (length-prefixed, so `("ab", "c")` ≠ `("a", "bc")`);
//!   - [`Target::Global`]: a runtime global (exception buffer, RNG state, …)
//!     by name, plus a byte offset into it.
//! - [`Site`] — where the word goes: a [`Site::Slot`] (a word-sized cell that
//!   code loads) or a [`Site::Interior`] word at a byte offset inside a
//!   constant aggregate (e.g. the tag word of a boxed constant). Interior
//!   offsets are multiples of 8.
//! - [`Record`] — `(name, offset, target, site)`. The pair `(name, offset)` is
//!   the record's identity: one record per word. `offset` is 0 for a slot and
//!   the interior offset otherwise (it is derived from the site, so the two
//!   cannot disagree). For a slot, `name` is the slot's name; for an interior
//!   site, it is the aggregate's name.
//!
//! # Names
//!
//! Names are deterministic, namespaced by the kernel, never a counter or an
//! address, and use only `[A-Za-z0-9_$]` (every backend accepts them) — see
//! [`record_name`] and [`record_name_interior`]:
//!
//! ```text
//! relok$<kernel>$sym$<symbol>          relok$saxpy$sym$foo
//! relok$<kernel>$val$<16 hex of key>   relok$k$val$3f1c0a9e5b7d2c41
//! relok$<kernel>$glob$<global>$<off>   relok$k$glob$exc_buf$8
//! relok$<kernel>$agg$<aggregate>       relok$k$agg$boxed_tag
//! ```
//!
//! User-supplied parts are escaped injectively byte by byte: `[A-Za-z0-9_]`
//! stays, `$` becomes `$$`, any other byte becomes `$` + two lowercase hex
//! digits. Distinct (kernel, target) pairs therefore never share a name
//! (values up to their 64-bit key prefix; a prefix collision would surface as
//! a [`ManifestError::Conflict`], never as a silent merge).
//!
//! # The manifest
//!
//! A [`Manifest`] is a module's records, always sorted by `(name, offset)`
//! with at most one record per pair. Adding an agreeing duplicate is a no-op;
//! a conflicting one is an error naming both. Manifests are merged when
//! modules are linked (the runtime library has its own records) and pruned
//! when an optimisation kills a site. After lowering the manifest is
//! [`frozen`](Manifest::freeze): a [`FrozenManifest`] holds the same
//! sorted records but has no method that changes them; its rank of a record
//! is its `table`-strategy slot index, and [`FrozenManifest::validate`]
//! checks it against the sites the lowered code actually contains
//! ([`SiteTable`]).
//! A frozen manifest is (de)serialisable with serde; deserialising re-checks
//! every invariant through [`FrozenManifest::from_records`].
//!
//! Iteration order is always the sorted order; nothing here iterates a hash
//! map, so everything derived from a manifest is byte-stable (docs/design.md §4).

mod manifest;
mod name;

pub use manifest::{FrozenManifest, Manifest, SiteTable};
pub use name::{record_name, record_name_interior};

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

/// Stable identity of a host value: SHA-256 over its type tag and bytes.
///
/// Equal keys ⇔ equal (type tag, bytes), so one device copy serves every use.
/// `Display` (and the serialised form) is 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ValueKey(pub [u8; 32]);

impl ValueKey {
    /// Domain separator: changing the hashing scheme must change every key.
    const DOMAIN: &'static [u8] = b"relok.value.v1\0";

    /// The key of a value whose type is `type_tag` and whose contents are
    /// `bytes`. Both parts are length-prefixed, so no two distinct pairs hash
    /// the same input.
    pub fn of(type_tag: &str, bytes: &[u8]) -> Self {
        let mut h = Sha256::new();
        h.update(Self::DOMAIN);
        h.update((type_tag.len() as u64).to_le_bytes());
        h.update(type_tag.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
        ValueKey(h.finalize().into())
    }

    /// The key's 64 hex digits.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Parses 64 hex digits (either case).
    pub fn from_hex(s: &str) -> Option<Self> {
        let s = s.as_bytes();
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.chunks_exact(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(ValueKey(out))
    }
}

impl fmt::Display for ValueKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ValueKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ValueKey({self})")
    }
}

impl Serialize for ValueKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for ValueKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ValueKey::from_hex(&s).ok_or_else(|| serde::de::Error::custom("a value key is 64 hex digits"))
    }
}

/// Whose word a record's site holds, by stable identity (docs/design.md §1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Target {
    /// An interned symbol, by name. Its word is identity only: never
    /// dereferenced on the device.
    Symbol(String),
    /// A host value, by the hash of its type tag and bytes. Its word is the
    /// device address of its one copy on that device.
    Value(ValueKey),
    /// A runtime global (exception buffer, RNG state, heap, …) and a byte
    /// offset into it.
    Global {
        /// The global's name.
        name: String,
        /// Byte offset into the global.
        offset: u64,
    },
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Symbol(name) => write!(f, "symbol {name:?}"),
            Target::Value(key) => write!(f, "value {key}"),
            Target::Global { name, offset } => write!(f, "global {name:?}+{offset}"),
        }
    }
}

/// Where a record's word goes in the code (docs/design.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Site {
    /// A word-sized cell that code loads.
    Slot,
    /// A word inside a constant aggregate, at a byte offset (a multiple of 8).
    Interior {
        /// Byte offset of the word inside the aggregate.
        offset: u32,
    },
}

impl Site {
    /// The offset part of a record's identity: 0 for a slot.
    pub fn offset(self) -> u32 {
        match self {
            Site::Slot => 0,
            Site::Interior { offset } => offset,
        }
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Site::Slot => f.write_str("slot"),
            Site::Interior { offset } => write!(f, "interior word at +{offset}"),
        }
    }
}

/// One relocation record: *this site in the code holds the word of this
/// target*.
///
/// Invariants (checked by [`Record::check`] whenever a record enters a
/// manifest, not at construction): the name is non-empty, uses only
/// `[A-Za-z0-9_$]` and does not start with a digit; an interior offset is a
/// multiple of 8.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Record {
    name: String,
    target: Target,
    site: Site,
}

impl Record {
    /// A record for the slot `name`.
    pub fn slot(name: impl Into<String>, target: Target) -> Self {
        Record { name: name.into(), target, site: Site::Slot }
    }

    /// A record for the word at `offset` inside the aggregate `aggregate`.
    pub fn interior(aggregate: impl Into<String>, offset: u32, target: Target) -> Self {
        Record { name: aggregate.into(), target, site: Site::Interior { offset } }
    }

    /// The slot's name, or the aggregate's name for an interior site.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// 0 for a slot, the byte offset for an interior site.
    pub fn offset(&self) -> u32 {
        self.site.offset()
    }

    /// The record's identity: `(name, offset)`.
    pub fn key(&self) -> (&str, u32) {
        (&self.name, self.offset())
    }

    /// Whose word the site holds.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Where the word goes.
    pub fn site(&self) -> Site {
        self.site
    }

    /// Checks the record's own invariants (name charset, alignment).
    pub fn check(&self) -> Result<(), ManifestError> {
        if let Some(reason) = name::name_problem(&self.name) {
            return Err(ManifestError::BadName { name: self.name.clone(), reason });
        }
        match self.site {
            Site::Interior { offset } if offset % 8 != 0 => {
                Err(ManifestError::Misaligned { name: self.name.clone(), offset })
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}) holds the word of {}", self.name, self.site, self.target)
    }
}

/// Why a manifest operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// Two records claim the same word (same name and offset) with different
    /// targets or sites.
    #[error(
        "conflicting relocation records for {name}+{offset}: already have `{existing}`, \
         cannot also add `{incoming}`",
        name = existing.name(),
        offset = existing.offset()
    )]
    Conflict {
        /// The record already in the manifest.
        existing: Box<Record>,
        /// The record that disagrees with it.
        incoming: Box<Record>,
    },
    /// A record names a site that the lowered code does not contain.
    #[error("record {name} names a site that the code does not contain")]
    MissingSite {
        /// The record's name.
        name: String,
    },
    /// An interior record's word does not fit inside its aggregate.
    #[error(
        "record {name}+{offset} does not fit: its aggregate is {size} bytes, \
         the word needs bytes {offset}..{end}",
        end = u64::from(*offset) + 8
    )]
    OffsetOutOfRange {
        /// The aggregate's name.
        name: String,
        /// The interior offset.
        offset: u32,
        /// The aggregate's size in bytes.
        size: u32,
    },
    /// An interior offset is not a multiple of 8.
    #[error("record {name}+{offset}: interior offsets must be multiples of 8")]
    Misaligned {
        /// The aggregate's name.
        name: String,
        /// The offending offset.
        offset: u32,
    },
    /// A record's name is not one every backend accepts.
    #[error("bad record name {name:?}: {reason}")]
    BadName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Records handed to [`FrozenManifest::from_records`] are not strictly
    /// increasing by `(name, offset)`.
    #[error(
        "record #{index} ({name}+{offset}) does not come strictly after the one before it \
         ({prev_name}+{prev_offset}): a frozen manifest is sorted by (name, offset), one record each",
        name = record.name(),
        offset = record.offset(),
        prev_name = previous.name(),
        prev_offset = previous.offset()
    )]
    Unsorted {
        /// Position of the offending record.
        index: usize,
        /// The offending record.
        record: Box<Record>,
        /// The record before it.
        previous: Box<Record>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_key_is_length_prefixed_and_stable() {
        assert_ne!(ValueKey::of("ab", b"c"), ValueKey::of("a", b"bc"));
        assert_ne!(ValueKey::of("u8", b""), ValueKey::of("u8", b"\0"));
        assert_eq!(ValueKey::of("str", b"hi"), ValueKey::of("str", b"hi"));
        let k = ValueKey::of("str", b"hi");
        let hex = k.to_string();
        assert_eq!(hex.len(), 64);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(ValueKey::from_hex(&hex), Some(k));
        assert_eq!(ValueKey::from_hex(&hex.to_uppercase()), Some(k));
        assert_eq!(ValueKey::from_hex(&hex[1..]), None);
        assert_eq!(ValueKey::from_hex(&format!("g{}", &hex[1..])), None);
    }

    #[test]
    fn record_check() {
        let t = Target::Symbol("foo".into());
        assert!(Record::slot("relok$k$sym$foo", t.clone()).check().is_ok());
        assert!(Record::interior("relok$k$agg$a", 16, t.clone()).check().is_ok());
        assert!(matches!(
            Record::interior("relok$k$agg$a", 4, t.clone()).check(),
            Err(ManifestError::Misaligned { offset: 4, .. })
        ));
        for bad in ["", "a-b", "é", "9abc", "a b"] {
            assert!(matches!(Record::slot(bad, t.clone()).check(), Err(ManifestError::BadName { .. })), "{bad:?}");
        }
    }

    #[test]
    fn error_stays_small() {
        let size = size_of::<ManifestError>();
        assert!(size <= 48, "ManifestError grew to {size} bytes");
    }
}
