//! The 32-byte key of an entry.

use std::fmt;

/// A cache key: a SHA-256 digest computed by the caller over everything
/// that determines the payload. Its hex form names the entry's file.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Parses 64 hex digits (either case); anything else is `None`.
    pub fn from_hex(s: &str) -> Option<Key> {
        if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Key(out))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_rejects() {
        let k = Key([0xa5; 32]);
        assert_eq!(Key::from_hex(&k.to_hex()), Some(k));
        assert_eq!(k.to_hex().len(), 64);
        assert_eq!(Key::from_hex("a5"), None);
        assert_eq!(Key::from_hex(&"g".repeat(64)), None);
        assert_eq!(Key::from_hex(&"é".repeat(32)), None);
    }
}
