//! The framing of one cache entry: a self-describing header, the payload
//! and a checksum.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "RELOKENT"
//! 8       2     format version, little-endian (FORMAT_VERSION)
//! 10      1     kind of payload (Kind)
//! 11      1     n = length of the identity
//! 12      n     identity of the writer (UTF-8): the compiler build, or a device and driver
//! 12+n    32    key
//! 44+n    8     payload length, little-endian
//! 52+n    len   payload
//! end-32  32    SHA-256 of every byte before it
//! ```
//!
//! [`decode`] checks the fields in that order and stops at the first
//! mismatch with its exact reason, so an entry of an older format or another
//! compiler is reported as such even though its checksum would fail too. It
//! never allocates: the payload it returns borrows the input, and a length
//! field is only compared with the bytes that are there.

use crate::Key;
use sha2::{Digest, Sha256};

/// The magic number at offset 0.
pub const MAGIC: [u8; 8] = *b"RELOKENT";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// The longest identity an entry can carry.
pub const MAX_IDENTITY: usize = 255;
const FIXED: usize = 8 + 2 + 1 + 1 + 32 + 8;
const CHECKSUM: usize = 32;

/// What an entry's payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// A compiled kernel (tier 1): target code, manifest, ABI.
    Artifact = 1,
    /// Machine code for one device (tier 2).
    Binary = 2,
}

impl Kind {
    pub(crate) fn from_byte(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Artifact),
            2 => Some(Kind::Binary),
            _ => None,
        }
    }
}

/// Why bytes are not the entry that was expected. The messages are exact:
/// tests assert them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// Fewer bytes than the smallest header and checksum.
    #[error("entry is {len} bytes, too short for a header")]
    Truncated {
        /// The length seen.
        len: usize,
    },
    /// The first eight bytes are not [`MAGIC`].
    #[error("not a relok entry (bad magic number)")]
    Magic,
    /// Another format version.
    #[error("format version {found}, this build reads version {expected}")]
    Version {
        /// The entry's version.
        found: u16,
        /// [`FORMAT_VERSION`].
        expected: u16,
    },
    /// Another kind of payload.
    #[error("payload kind {found}, expected {expected}")]
    Kind {
        /// The entry's kind byte.
        found: u8,
        /// The kind asked for.
        expected: u8,
    },
    /// Written by another compiler build (or for another device).
    #[error("written by '{found}', this is '{expected}'")]
    Identity {
        /// The entry's identity (lossy UTF-8).
        found: String,
        /// The identity asked for.
        expected: String,
    },
    /// The entry holds another key: it was copied or renamed.
    #[error("holds key {found}, expected {expected}")]
    Key {
        /// The entry's key.
        found: Key,
        /// The key asked for.
        expected: Key,
    },
    /// The length field disagrees with the bytes present.
    #[error("payload length field says {declared} bytes, {actual} are present")]
    Length {
        /// The length field.
        declared: u64,
        /// Bytes between the header and the checksum.
        actual: u64,
    },
    /// The checksum does not match: the bytes were damaged.
    #[error("checksum mismatch: the entry is damaged")]
    Checksum,
}

/// Who wrote an entry and what it holds: what a reader expects.
#[derive(Clone, Copy, Debug)]
pub struct Expect<'a> {
    /// The kind of payload.
    pub kind: Kind,
    /// The writer's identity.
    pub identity: &'a str,
    /// The key; `None` accepts any (a bundle, whose keys come from entries).
    pub key: Option<Key>,
}

/// The header fields of an entry whose header parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// The format version.
    pub version: u16,
    /// The kind byte.
    pub kind: u8,
    /// The identity bytes.
    pub identity: &'a [u8],
    /// The key.
    pub key: Key,
    /// The payload length field.
    pub payload_len: u64,
    /// Where the payload starts.
    pub payload_at: usize,
}

/// Frames `payload` as an entry of `kind` under `key`, written by
/// `identity` (truncated to [`MAX_IDENTITY`] bytes).
pub fn encode(kind: Kind, identity: &str, key: Key, payload: &[u8]) -> Vec<u8> {
    encode_version(FORMAT_VERSION, kind, identity, key, payload)
}

/// [`encode`] with an explicit format version: for tests of older formats.
#[doc(hidden)]
pub fn encode_version(version: u16, kind: Kind, identity: &str, key: Key, payload: &[u8]) -> Vec<u8> {
    let id = &identity.as_bytes()[..identity.len().min(MAX_IDENTITY)];
    let mut out = Vec::with_capacity(FIXED + id.len() + payload.len() + CHECKSUM);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.push(kind as u8);
    out.push(id.len() as u8);
    out.extend_from_slice(id);
    out.extend_from_slice(&key.0);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    out
}

/// Whether `bytes`, framed as an entry, fail their own checksum (its last
/// 32 bytes): damaged, whatever else their fields say.
pub fn damaged(bytes: &[u8]) -> bool {
    let Some(body) = bytes.len().checked_sub(CHECKSUM) else { return true };
    Sha256::digest(&bytes[..body]).as_slice() != &bytes[body..]
}

/// Parses the header of `bytes` without checking it against anything but
/// its own structure (magic, lengths).
pub fn header(bytes: &[u8]) -> Result<Header<'_>, EntryError> {
    if bytes.len() < FIXED + CHECKSUM {
        return Err(EntryError::Truncated { len: bytes.len() });
    }
    if bytes[..8] != MAGIC {
        return Err(EntryError::Magic);
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    let kind = bytes[10];
    let n = usize::from(bytes[11]);
    if bytes.len() < FIXED + n + CHECKSUM {
        return Err(EntryError::Truncated { len: bytes.len() });
    }
    let identity = &bytes[12..12 + n];
    let mut key = [0u8; 32];
    key.copy_from_slice(&bytes[12 + n..44 + n]);
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[44 + n..52 + n]);
    Ok(Header { version, kind, identity, key: Key(key), payload_len: u64::from_le_bytes(len), payload_at: 52 + n })
}

/// Checks `bytes` against `expect` and returns the payload (see the module
/// docs for the order of the checks).
pub fn decode<'a>(bytes: &'a [u8], expect: &Expect<'_>) -> Result<&'a [u8], EntryError> {
    let h = header(bytes)?;
    if h.version != FORMAT_VERSION {
        return Err(EntryError::Version { found: h.version, expected: FORMAT_VERSION });
    }
    if Kind::from_byte(h.kind) != Some(expect.kind) {
        return Err(EntryError::Kind { found: h.kind, expected: expect.kind as u8 });
    }
    if h.identity != expect.identity.as_bytes() {
        return Err(EntryError::Identity {
            found: String::from_utf8_lossy(h.identity).into_owned(),
            expected: expect.identity.to_owned(),
        });
    }
    if let Some(k) = expect.key
        && k != h.key
    {
        return Err(EntryError::Key { found: h.key, expected: k });
    }
    let actual = (bytes.len() - h.payload_at - CHECKSUM) as u64;
    if h.payload_len != actual {
        return Err(EntryError::Length { declared: h.payload_len, actual });
    }
    let body = bytes.len() - CHECKSUM;
    if Sha256::digest(&bytes[..body]).as_slice() != &bytes[body..] {
        return Err(EntryError::Checksum);
    }
    Ok(&bytes[h.payload_at..body])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "relok-test-1";

    fn expect(key: Key) -> Expect<'static> {
        Expect { kind: Kind::Artifact, identity: ID, key: Some(key) }
    }

    #[test]
    fn round_trip() {
        let k = Key([7; 32]);
        let e = encode(Kind::Artifact, ID, k, b"payload");
        assert_eq!(decode(&e, &expect(k)), Ok(&b"payload"[..]));
        let empty = encode(Kind::Artifact, ID, k, b"");
        assert_eq!(decode(&empty, &expect(k)), Ok(&b""[..]));
    }

    #[test]
    fn exact_reasons() {
        let k = Key([7; 32]);
        let e = encode(Kind::Artifact, ID, k, b"payload");
        assert_eq!(decode(&e[..10], &expect(k)).unwrap_err().to_string(), "entry is 10 bytes, too short for a header");
        let mut bad = e.clone();
        bad[0] ^= 1;
        assert_eq!(decode(&bad, &expect(k)).unwrap_err().to_string(), "not a relok entry (bad magic number)");
        let old = encode_version(0, Kind::Artifact, ID, k, b"payload");
        assert_eq!(decode(&old, &expect(k)).unwrap_err().to_string(), "format version 0, this build reads version 1");
        let bin = encode(Kind::Binary, ID, k, b"payload");
        assert_eq!(decode(&bin, &expect(k)).unwrap_err().to_string(), "payload kind 2, expected 1");
        let other = encode(Kind::Artifact, "relok-other", k, b"payload");
        assert_eq!(
            decode(&other, &expect(k)).unwrap_err().to_string(),
            "written by 'relok-other', this is 'relok-test-1'"
        );
        let k2 = Key([8; 32]);
        assert_eq!(decode(&e, &expect(k2)).unwrap_err(), EntryError::Key { found: k, expected: k2 });
        let mut short = e.clone();
        short.remove(short.len() - 33);
        assert_eq!(decode(&short, &expect(k)).unwrap_err(), EntryError::Length { declared: 7, actual: 6 });
        let mut flipped = e.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x80;
        assert_eq!(decode(&flipped, &expect(k)).unwrap_err(), EntryError::Checksum);
    }

    #[test]
    fn every_bit_flip_is_caught() {
        let k = Key([3; 32]);
        let e = encode(Kind::Artifact, ID, k, b"a small payload");
        for i in 0..e.len() {
            for bit in 0..8 {
                let mut bad = e.clone();
                bad[i] ^= 1 << bit;
                assert!(decode(&bad, &expect(k)).is_err(), "byte {i} bit {bit}");
            }
        }
    }
}
