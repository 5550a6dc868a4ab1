//! The value of a remote entry: a signature block in front of the framed
//! entry that the local store holds (see [`crate::entry`]).
//!
//! ```text
//! offset  size  field
//! 0       8     magic "RELOKSIG"
//! 8       2     signed format version, little-endian (SIGNED_VERSION)
//! 10      8     signer: the first 8 bytes of SHA-256 of the public key (names the key, trusts nothing)
//! 18      64    Ed25519 signature of the message below
//! 82      ..    the framed entry, byte for byte what the local store writes
//! ```
//!
//! The message signed is `"relok-remote-v1"`, the length (8 bytes,
//! little-endian) and bytes of the entry's **name** in the remote (which
//! holds the store's family, folder — compiler build or device and driver
//! — and key), then SHA-256 of the framed entry. A valid entry copied under
//! another name, or any byte of it changed, no longer verifies; a writer's
//! key is the only way to make one that does. [`open`] checks the block
//! with `verify_strict` and stops at the first mismatch with its exact
//! reason; the caller then checks the framed entry as it checks a local
//! one (kind, identity, key, length, checksum).

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The magic number at offset 0.
pub const MAGIC: [u8; 8] = *b"RELOKSIG";
/// The signed format version this build writes and reads.
pub const SIGNED_VERSION: u16 = 1;
/// Bytes before the framed entry.
pub const HEADER: usize = 8 + 2 + 8 + 64;
const DOMAIN: &[u8] = b"relok-remote-v1";

/// Why a remote value is not a valid signed entry for its name. The
/// messages are exact: tests assert them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignedError {
    /// No signature block: not written by relok (or cut short).
    #[error("unsigned: {len} bytes without relok's signature block")]
    Unsigned {
        /// The value's length.
        len: usize,
    },
    /// Another signed format version.
    #[error("signed format version {found}, this build reads version {expected}")]
    Version {
        /// The value's version.
        found: u16,
        /// [`SIGNED_VERSION`].
        expected: u16,
    },
    /// Signed by a key other than the one this reader trusts.
    #[error("signed by another key ({found}), this reader trusts {expected}")]
    OtherKey {
        /// The signer field, hex.
        found: String,
        /// The trusted key's id, hex.
        expected: String,
    },
    /// The signature does not verify: the value was changed, or moved from
    /// another name.
    #[error("bad signature: the entry was changed or copied from another name")]
    BadSignature,
}

/// The 8-byte id of a public key: the first bytes of its SHA-256.
pub fn key_id(key: &VerifyingKey) -> [u8; 8] {
    let d = Sha256::digest(key.as_bytes());
    let mut id = [0; 8];
    id.copy_from_slice(&d[..8]);
    id
}

/// [`key_id`] in hex.
pub fn key_id_hex(key: &VerifyingKey) -> String {
    key_id(key).iter().map(|b| format!("{b:02x}")).collect()
}

fn message(name: &str, entry: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(DOMAIN.len() + 8 + name.len() + 32);
    m.extend_from_slice(DOMAIN);
    m.extend_from_slice(&(name.len() as u64).to_le_bytes());
    m.extend_from_slice(name.as_bytes());
    m.extend_from_slice(&Sha256::digest(entry));
    m
}

/// Signs the framed `entry` to be stored under `name`.
pub fn seal(key: &SigningKey, name: &str, entry: &[u8]) -> Vec<u8> {
    let sig = key.sign(&message(name, entry));
    let mut out = Vec::with_capacity(HEADER + entry.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&SIGNED_VERSION.to_le_bytes());
    out.extend_from_slice(&key_id(&key.verifying_key()));
    out.extend_from_slice(&sig.to_bytes());
    out.extend_from_slice(entry);
    out
}

/// Checks the signature block of `value`, read under `name`, against the
/// trusted `key`; returns the framed entry it covers (still to be checked
/// as an entry).
pub fn open<'a>(key: &VerifyingKey, name: &str, value: &'a [u8]) -> Result<&'a [u8], SignedError> {
    if value.len() < HEADER || value[..8] != MAGIC {
        return Err(SignedError::Unsigned { len: value.len() });
    }
    let version = u16::from_le_bytes([value[8], value[9]]);
    if version != SIGNED_VERSION {
        return Err(SignedError::Version { found: version, expected: SIGNED_VERSION });
    }
    let id = key_id(key);
    if value[10..18] != id {
        let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
        return Err(SignedError::OtherKey { found: hex(&value[10..18]), expected: hex(&id) });
    }
    let mut sig = [0; 64];
    sig.copy_from_slice(&value[18..HEADER]);
    let entry = &value[HEADER..];
    key.verify_strict(&message(name, entry), &Signature::from_bytes(&sig)).map_err(|_| SignedError::BadSignature)?;
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    #[test]
    fn round_trip_and_exact_reasons() {
        let (k, other) = (key(1), key(2));
        let v = seal(&k, "relok:a", b"entry bytes");
        assert_eq!(open(&k.verifying_key(), "relok:a", &v), Ok(&b"entry bytes"[..]));
        assert_eq!(open(&k.verifying_key(), "relok:b", &v), Err(SignedError::BadSignature));
        assert!(matches!(open(&other.verifying_key(), "relok:a", &v), Err(SignedError::OtherKey { .. })));
        assert_eq!(open(&k.verifying_key(), "relok:a", b"entry bytes"), Err(SignedError::Unsigned { len: 11 }));
        let mut old = v.clone();
        old[8] = 0;
        assert_eq!(
            open(&k.verifying_key(), "relok:a", &old).unwrap_err().to_string(),
            "signed format version 0, this build reads version 1"
        );
        assert_eq!(open(&k.verifying_key(), "relok:a", &v[..v.len() - 1]), Err(SignedError::BadSignature));
        // A forged id field does not help: the signature is still checked.
        let mut forged = seal(&other, "relok:a", b"entry bytes");
        forged[10..18].copy_from_slice(&key_id(&k.verifying_key()));
        assert_eq!(open(&k.verifying_key(), "relok:a", &forged), Err(SignedError::BadSignature));
    }

    #[test]
    fn every_bit_flip_is_caught() {
        let k = key(3);
        let v = seal(&k, "n", b"a small entry");
        for i in 0..v.len() {
            for bit in 0..8 {
                let mut bad = v.clone();
                bad[i] ^= 1 << bit;
                assert!(open(&k.verifying_key(), "n", &bad).is_err(), "byte {i} bit {bit}");
            }
        }
    }
}
