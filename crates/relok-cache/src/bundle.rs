//! Bundles: a set of entries in one file, for an application to ship and
//! import (ahead-of-time "precompilation"): artifacts (portable: target
//! code, manifest, ABI) and, from format version 2, machine code for
//! particular devices (cubins), so that a shipped program on a machine
//! with empty caches neither compiles nor JIT-compiles.
//!
//! ```text
//! 0       8     magic "RELOKBDL"
//! 8       2     format version, little-endian (FORMAT_VERSION)
//! 10      1     n = length of the identity
//! 11      n     compiler identity (every entry carries the same)
//! 11+n    4     count of entries, little-endian
//! …             per entry: its length (4 bytes, little-endian) and the entry
//!               framed by [`crate::entry`] (kind `Artifact` or `Binary`),
//!               in (kind, key) order
//! end-32  32    the bundle's checksum (below)
//! ```
//!
//! Every entry carries its own checksum (a SHA-256 of its bytes), so that
//! each is valid on its own, in a bundle or copied into a store. The
//! bundle's checksum (version 3) is a SHA-256 of the header (the bytes
//! before the first entry) and, per entry, its length field and its own
//! checksum: it covers every byte, and reading a bundle hashes each byte
//! once. Versions 1 and 2 (still read) took a SHA-256 of every byte before
//! it, which made reading hash every entry twice.
//!
//! A bundle is byte-stable: the same entries give the same bytes whatever
//! order they were added in. Reading checks the bundle's header, then its
//! checksum, then every entry (framing, its own checksum); an entry whose
//! own checksum fails is reported as damage ([`BundleError::Checksum`]),
//! whichever of its fields the damage reached. The count is never used to
//! allocate.

use crate::Key;
use crate::entry::{self, EntryError, Expect, Kind, MAX_IDENTITY};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The magic number at offset 0.
pub const MAGIC: [u8; 8] = *b"RELOKBDL";
/// The bundle format version this build writes. It reads this one,
/// version 2 (the checksum of every byte) and version 1 (artifacts only).
pub const FORMAT_VERSION: u16 = 3;
/// The first version whose checksum chains the entries' own ([`checksum`]).
const CHAINED: u16 = 3;

/// Why bytes are not a usable bundle.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// Too short, or an entry runs past the end.
    #[error("bundle is truncated")]
    Truncated,
    /// Not a bundle.
    #[error("not a relok bundle (bad magic number)")]
    Magic,
    /// Another bundle format version.
    #[error("bundle format version {found}, this build reads version {expected}")]
    Version {
        /// The bundle's version.
        found: u16,
        /// [`FORMAT_VERSION`].
        expected: u16,
    },
    /// Built by another compiler: none of its entries could ever be used.
    #[error("bundle was built by '{found}', this is '{expected}': rebuild it with this relok (`relok precompile`)")]
    Identity {
        /// The bundle's identity.
        found: String,
        /// Ours.
        expected: String,
    },
    /// The checksum does not match.
    #[error("bundle checksum mismatch: the file is damaged")]
    Checksum,
    /// Bytes after the last entry.
    #[error("bundle has {0} bytes after its last entry")]
    Trailing(usize),
    /// Entries out of (kind, key) order, or one twice: not written by
    /// [`encode`].
    #[error("bundle entry {index} is out of order or repeated")]
    Order {
        /// Its position.
        index: usize,
    },
    /// An entry is invalid.
    #[error("bundle entry {index}: {source}")]
    Entry {
        /// Its position.
        index: usize,
        /// Why.
        source: EntryError,
    },
}

/// One entry of a decoded bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BundleEntry<'a> {
    /// What the payload is.
    pub kind: Kind,
    /// Its key.
    pub key: Key,
    /// The framed entry (checked; [`crate::entry::decode`] gives the payload).
    pub bytes: &'a [u8],
    /// Its payload (checked as [`crate::entry::decode`] checks it).
    pub payload: &'a [u8],
}

/// Packs framed entries (artifacts and machine code) written by `identity`
/// into a bundle, in (kind, key) order (one entry per kind and key).
pub fn encode<'a>(identity: &str, entries: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<u8>, EntryError> {
    let mut by_key = BTreeMap::new();
    for e in entries {
        let kind = entry_kind(e)?;
        entry::decode(e, &Expect { kind, identity, key: None })?;
        by_key.insert((kind as u8, entry::header(e)?.key), e);
    }
    let id = &identity.as_bytes()[..identity.len().min(MAX_IDENTITY)];
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(id.len() as u8);
    out.extend_from_slice(id);
    out.extend_from_slice(&(by_key.len() as u32).to_le_bytes());
    let mut sum = Checksum::new(&out);
    for e in by_key.values() {
        let len = (e.len() as u32).to_le_bytes();
        out.extend_from_slice(&len);
        out.extend_from_slice(e);
        sum.entry(len, e);
    }
    out.extend_from_slice(&sum.finish());
    Ok(out)
}

/// The bundle checksum of format version 3: a SHA-256 of the header and,
/// per entry, its length field and the entry's own checksum (its last 32
/// bytes), so that the entries' bytes are hashed once, by their own
/// checksums.
#[derive(Debug)]
pub struct Checksum(Sha256);

impl Checksum {
    /// Starts with the header: every byte before the first entry.
    pub fn new(header: &[u8]) -> Checksum {
        Checksum(Sha256::new_with_prefix(header))
    }

    /// Adds an entry: its length field and its framed bytes, of which only
    /// the last 32 (its own checksum, or all of a shorter one) are hashed.
    pub fn entry(&mut self, len: [u8; 4], framed: &[u8]) {
        self.0.update(len);
        self.0.update(&framed[framed.len().saturating_sub(32)..]);
    }

    /// The checksum.
    pub fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

/// The kind an entry's header names, if it is one of ours (an unknown kind
/// byte is reported against the first kind).
fn entry_kind(e: &[u8]) -> Result<Kind, EntryError> {
    let found = entry::header(e)?.kind;
    Kind::from_byte(found).ok_or(EntryError::Kind { found, expected: Kind::Artifact as u8 })
}

/// The entries of a bundle written by `identity`, each checked, in
/// (kind, key) order. A version-1 bundle holds artifacts only.
pub fn decode<'a>(bytes: &'a [u8], identity: &str) -> Result<Vec<BundleEntry<'a>>, BundleError> {
    let mut r = Reader(bytes);
    if bytes.len() < 11 + 4 + 32 {
        return Err(BundleError::Truncated);
    }
    if r.take(8)? != MAGIC {
        return Err(BundleError::Magic);
    }
    let version = u16::from_le_bytes(r.array()?);
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(BundleError::Version { found: version, expected: FORMAT_VERSION });
    }
    let n = usize::from(r.take(1)?[0]);
    let id = r.take(n)?;
    if id != identity.as_bytes() {
        return Err(BundleError::Identity {
            found: String::from_utf8_lossy(id).into_owned(),
            expected: identity.to_owned(),
        });
    }
    let body = bytes.len() - 32;
    let Some(rest) = r.0.len().checked_sub(32).map(|n| &r.0[..n]) else {
        return Err(BundleError::Truncated);
    };
    // The bundle's checksum before any entry is looked into, so that damage
    // anywhere reads as damage. Version 3's walks the length fields (each
    // entry's own checksum is checked with the entry, below).
    if version < CHAINED && Sha256::digest(&bytes[..body]).as_slice() != &bytes[body..] {
        return Err(BundleError::Checksum);
    }
    if version >= CHAINED {
        let mut w = Reader(rest);
        let count = u32::from_le_bytes(w.array()?);
        let mut sum = Checksum::new(&bytes[..11 + n + 4]);
        for _ in 0..count {
            let len = w.array()?;
            sum.entry(len, w.take(u32::from_le_bytes(len) as usize)?);
        }
        if !w.0.is_empty() {
            return Err(BundleError::Trailing(w.0.len()));
        }
        if sum.finish() != bytes[body..] {
            return Err(BundleError::Checksum);
        }
    }
    let mut r = Reader(rest);
    let count = u32::from_le_bytes(r.array()?);
    let mut out = Vec::new();
    for index in 0..count as usize {
        let len = u32::from_le_bytes(r.array()?) as usize;
        let e = r.take(len)?;
        // Behind a matching bundle checksum, an entry whose own checksum
        // fails was damaged (whatever field the damage reached); one whose
        // checksum holds is reported for what it is.
        let entry_err =
            |source| if entry::damaged(e) { BundleError::Checksum } else { BundleError::Entry { index, source } };
        let kind = match entry_kind(e).map_err(entry_err)? {
            Kind::Binary if version == 1 => {
                return Err(entry_err(EntryError::Kind { found: Kind::Binary as u8, expected: Kind::Artifact as u8 }));
            }
            kind => kind,
        };
        let payload = entry::decode(e, &Expect { kind, identity, key: None }).map_err(entry_err)?;
        let key = entry::header(e).map_err(entry_err)?.key;
        if out.last().is_some_and(|p: &BundleEntry<'_>| (p.kind as u8, p.key) >= (kind as u8, key)) {
            return Err(BundleError::Order { index });
        }
        out.push(BundleEntry { kind, key, bytes: e, payload });
    }
    if !r.0.is_empty() {
        return Err(BundleError::Trailing(r.0.len()));
    }
    Ok(out)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BundleError> {
        if n > self.0.len() {
            return Err(BundleError::Truncated);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], BundleError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "relok-test-1";

    fn e(k: u8, payload: &[u8]) -> Vec<u8> {
        entry::encode(Kind::Artifact, ID, Key([k; 32]), payload)
    }

    #[test]
    fn round_trip_in_key_order_and_stable() {
        let (a, b) = (e(2, b"two"), e(1, b"one"));
        let x = encode(ID, [a.as_slice(), b.as_slice()]).unwrap();
        let y = encode(ID, [b.as_slice(), a.as_slice(), b.as_slice()]).unwrap();
        assert_eq!(x, y);
        let got = decode(&x, ID).unwrap();
        let art = |key: u8, bytes: &'static [u8]| (Kind::Artifact, Key([key; 32]), bytes);
        let got: Vec<_> = got.iter().map(|e| (e.kind, e.key, e.bytes.to_vec())).collect();
        let want: Vec<_> =
            [art(1, b""), art(2, b"")].iter().zip([&b, &a]).map(|(w, e)| (w.0, w.1, e.clone())).collect();
        assert_eq!(got, want);
        assert_eq!(decode(&encode(ID, []).unwrap(), ID).unwrap(), vec![]);
    }

    #[test]
    fn damage_is_reported() {
        let a = e(1, b"one");
        let x = encode(ID, [a.as_slice()]).unwrap();
        assert_eq!(decode(&x[..20], ID), Err(BundleError::Truncated));
        assert!(matches!(decode(&x, "relok-other"), Err(BundleError::Identity { .. })));
        let mut bad = x.clone();
        bad[0] = b'X';
        assert_eq!(decode(&bad, ID), Err(BundleError::Magic));
        for i in 11..x.len() {
            let mut bad = x.clone();
            bad[i] ^= 4;
            assert!(decode(&bad, ID).is_err(), "byte {i}");
        }
        // Past the header, damage reads as damage: never as an entry of
        // another build, kind or key.
        let two = encode(ID, [a.as_slice(), e(2, b"two").as_slice()]).unwrap();
        for i in 11 + ID.len() + 4..two.len() {
            for bit in 0..8 {
                let mut bad = two.clone();
                bad[i] ^= 1 << bit;
                let r = decode(&bad, ID);
                assert!(
                    matches!(r, Err(BundleError::Checksum | BundleError::Truncated | BundleError::Trailing(_))),
                    "byte {i} bit {bit}: {r:?}"
                );
            }
        }
        let other = entry::encode(Kind::Artifact, "relok-other", Key([1; 32]), b"x");
        assert!(encode(ID, [other.as_slice()]).is_err());
    }

    /// A bundle of `entries` in the order given (as `encode` would frame
    /// them, unsorted), of format `version` with its checksum.
    fn raw_version(version: u16, entries: &[&[u8]]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        out.push(ID.len() as u8);
        out.extend_from_slice(ID.as_bytes());
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        let mut chained = Checksum::new(&out);
        for e in entries {
            let len = (e.len() as u32).to_le_bytes();
            out.extend_from_slice(&len);
            out.extend_from_slice(e);
            chained.entry(len, e);
        }
        let sum: [u8; 32] = if version >= CHAINED { chained.finish() } else { Sha256::digest(&out).into() };
        out.extend_from_slice(&sum);
        out
    }

    fn raw(entries: &[&[u8]]) -> Vec<u8> {
        raw_version(FORMAT_VERSION, entries)
    }

    #[test]
    fn older_bundles_with_a_checksum_of_every_byte_are_still_read() {
        let (a, b) = (e(1, b"one"), e(2, b"two"));
        let bin = entry::encode(Kind::Binary, ID, Key([3; 32]), b"cubin");
        let v2 = raw_version(2, &[&a, &b, &bin]);
        let got = decode(&v2, ID).unwrap();
        assert_eq!(got.iter().map(|e| e.key).collect::<Vec<_>>(), [Key([1; 32]), Key([2; 32]), Key([3; 32])]);
        // Each version is checked by its own rule: the chained checksum
        // under version 2, or the whole one under 3, is refused.
        let mut swapped = raw(&[&a, &b, &bin]);
        swapped[8..10].copy_from_slice(&2u16.to_le_bytes());
        assert_eq!(decode(&swapped, ID), Err(BundleError::Checksum));
        let mut swapped = v2.clone();
        swapped[8..10].copy_from_slice(&3u16.to_le_bytes());
        assert_eq!(decode(&swapped, ID), Err(BundleError::Checksum));
        let mut v4 = v2;
        v4[8..10].copy_from_slice(&4u16.to_le_bytes());
        assert_eq!(decode(&v4, ID), Err(BundleError::Version { found: 4, expected: FORMAT_VERSION }));
    }

    #[test]
    fn the_bundle_checksum_covers_each_entry_through_its_own() {
        // An entry replaced by another valid entry of the same length (its
        // own checksum right): only the bundle's checksum can see it.
        let (a, b) = (e(1, b"one"), e(2, b"two"));
        let good = encode(ID, [a.as_slice(), b.as_slice()]).unwrap();
        assert_eq!(good, raw(&[&a, &b]));
        let other = e(1, b"One");
        let at = good.windows(a.len()).position(|w| w == a.as_slice()).unwrap();
        let mut bad = good.clone();
        bad[at..at + a.len()].copy_from_slice(&other);
        assert_eq!(decode(&bad, ID), Err(BundleError::Checksum));
        // Resealed, it is a bundle of other entries, each valid.
        let resealed = raw(&[&other, &b]);
        assert_eq!(decode(&resealed, ID).unwrap()[0].payload, b"One");
    }

    #[test]
    fn entries_out_of_order_or_repeated_are_refused() {
        let (a, b) = (e(1, b"one"), e(2, b"two"));
        assert_eq!(raw(&[&a, &b]), encode(ID, [b.as_slice(), a.as_slice()]).unwrap());
        assert!(decode(&raw(&[&a, &b]), ID).is_ok());
        assert_eq!(decode(&raw(&[&b, &a]), ID), Err(BundleError::Order { index: 1 }));
        assert_eq!(decode(&raw(&[&a, &a]), ID), Err(BundleError::Order { index: 1 }));
    }

    #[test]
    fn machine_code_travels_beside_artifacts_from_version_2_on() {
        let art = e(7, b"artifact");
        let bin = entry::encode(Kind::Binary, ID, Key([7; 32]), b"cubin");
        let x = encode(ID, [bin.as_slice(), art.as_slice()]).unwrap();
        let got = decode(&x, ID).unwrap();
        assert_eq!(got.iter().map(|e| e.kind).collect::<Vec<_>>(), [Kind::Artifact, Kind::Binary]);
        assert_eq!(
            entry::decode(got[1].bytes, &Expect { kind: Kind::Binary, identity: ID, key: Some(Key([7; 32])) }).unwrap(),
            b"cubin"
        );
        // The same entries as a version-1 bundle (its checksum of every
        // byte): machine code is refused there.
        let v1 = raw_version(1, &[&art, &bin]);
        assert!(matches!(decode(&v1, ID), Err(BundleError::Entry { index: 1, .. })));
        assert_eq!(decode(&raw_version(2, &[&art, &bin]), ID).unwrap(), got);
    }
}
