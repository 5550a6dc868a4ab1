//! Record names: deterministic, kernel-namespaced, `[A-Za-z0-9_$]` only.
//!
//! Layout: `relok$` E(kernel) `$` tag `$` payload, where E escapes a string
//! byte by byte — `[A-Za-z0-9_]` stays, `$` → `$$`, any other byte → `$hh`
//! (two lowercase hex digits). Inside E(…) every `$` is followed by `$` or
//! by two hex digits, and every tag (`sym`, `val`, `glob`, `agg`) starts
//! with two characters that are not both hex digits, so a left-to-right
//! reader always knows where E(kernel) ends; the payload is the rest
//! (for `glob`, the global's offset follows the *last* `$`, since a decimal
//! number contains none). Hence distinct (kernel, target) pairs give
//! distinct names; the tests check it by decoding every name back.

use super::{Target, ValueKey};

/// Hex digits of a [`ValueKey`] kept in a value record's name (64 bits).
pub const VALUE_NAME_HEX_DIGITS: usize = 16;

const PREFIX: &str = "relok$";

/// The name of the slot that holds `target`'s word in `kernel`.
///
/// ```
/// use relok_compiler::reloc::{record_name, Target};
/// assert_eq!(record_name("saxpy", &Target::Symbol("foo".into())), "relok$saxpy$sym$foo");
/// let g = Target::Global { name: "exc_buf".into(), offset: 8 };
/// assert_eq!(record_name("k", &g), "relok$k$glob$exc_buf$8");
/// assert_eq!(record_name("k", &Target::Symbol("a$b".into())), "relok$k$sym$a$$b");
/// ```
pub fn record_name(kernel: &str, target: &Target) -> String {
    let mut out = head(kernel);
    match target {
        Target::Symbol(name) => {
            out.push_str("$sym$");
            escape_into(&mut out, name);
        }
        Target::Value(key) => {
            out.push_str("$val$");
            out.push_str(&short_hex(key));
        }
        Target::Global { name, offset } => {
            out.push_str("$glob$");
            escape_into(&mut out, name);
            out.push('$');
            out.push_str(&offset.to_string());
        }
    }
    out
}

/// The name under which `kernel`'s interior records inside the constant
/// aggregate `aggregate` are kept (each record adds its own offset).
///
/// ```
/// use relok_compiler::reloc::record_name_interior;
/// assert_eq!(record_name_interior("k", "boxed tag"), "relok$k$agg$boxed$20tag");
/// ```
pub fn record_name_interior(kernel: &str, aggregate: &str) -> String {
    let mut out = head(kernel);
    out.push_str("$agg$");
    escape_into(&mut out, aggregate);
    out
}

fn head(kernel: &str) -> String {
    let mut out = String::with_capacity(PREFIX.len() + kernel.len() + 24);
    out.push_str(PREFIX);
    escape_into(&mut out, kernel);
    out
}

fn short_hex(key: &ValueKey) -> String {
    let mut hex = key.to_hex();
    hex.truncate(VALUE_NAME_HEX_DIGITS);
    hex
}

fn escape_into(out: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' {
            out.push(b as char);
        } else if b == b'$' {
            out.push_str("$$");
        } else {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push('$');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
}

/// Why `name` is not a valid record name, if it is not.
pub(super) fn name_problem(name: &str) -> Option<&'static str> {
    let Some(first) = name.bytes().next() else {
        return Some("a name must not be empty");
    };
    if first.is_ascii_digit() {
        return Some("a name must not start with a digit");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$') {
        return Some("names may only use [A-Za-z0-9_$]");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a name decodes to: the kernel and the target's identity.
    #[derive(Debug, PartialEq, Eq)]
    enum Decoded {
        Sym(Vec<u8>),
        Val(String),
        Glob(Vec<u8>, u64),
        Agg(Vec<u8>),
    }

    /// Reads one escaped component from the front of `s`, stopping at the
    /// first `$` that is not an escape. Returns the bytes and the rest.
    fn unescape_prefix(s: &[u8]) -> (Vec<u8>, &[u8]) {
        let hex = |b: u8| (b as char).to_digit(16).filter(|_| !b.is_ascii_uppercase());
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            if s[i] != b'$' {
                out.push(s[i]);
                i += 1;
            } else if s.get(i + 1) == Some(&b'$') {
                out.push(b'$');
                i += 2;
            } else if let (Some(h), Some(l)) = (s.get(i + 1).and_then(|&b| hex(b)), s.get(i + 2).and_then(|&b| hex(b)))
            {
                out.push((h * 16 + l) as u8);
                i += 3;
            } else {
                break;
            }
        }
        (out, &s[i..])
    }

    fn unescape_all(s: &[u8]) -> Option<Vec<u8>> {
        let (v, rest) = unescape_prefix(s);
        rest.is_empty().then_some(v)
    }

    fn decode(name: &str) -> Option<(Vec<u8>, Decoded)> {
        let s = name.as_bytes().strip_prefix(PREFIX.as_bytes())?;
        let (kernel, rest) = unescape_prefix(s);
        let rest = rest.strip_prefix(b"$")?;
        let d = if let Some(p) = rest.strip_prefix(b"sym$") {
            Decoded::Sym(unescape_all(p)?)
        } else if let Some(p) = rest.strip_prefix(b"val$") {
            Decoded::Val(String::from_utf8(p.to_vec()).ok()?)
        } else if let Some(p) = rest.strip_prefix(b"agg$") {
            Decoded::Agg(unescape_all(p)?)
        } else if let Some(p) = rest.strip_prefix(b"glob$") {
            let cut = p.iter().rposition(|&b| b == b'$')?;
            let off = std::str::from_utf8(&p[cut + 1..]).ok()?.parse().ok()?;
            Decoded::Glob(unescape_all(&p[..cut])?, off)
        } else {
            return None;
        };
        Some((kernel, d))
    }

    fn expected(target: &Target) -> Decoded {
        match target {
            Target::Symbol(s) => Decoded::Sym(s.as_bytes().to_vec()),
            Target::Value(k) => Decoded::Val(k.to_hex()[..VALUE_NAME_HEX_DIGITS].to_string()),
            Target::Global { name, offset } => Decoded::Glob(name.as_bytes().to_vec(), *offset),
        }
    }

    fn in_charset(name: &str) -> bool {
        name_problem(name).is_none()
    }

    const TRICKY: &[&str] = &[
        "",
        "$",
        "$$",
        "$$$",
        "_",
        "__",
        "a$b",
        "a$$b",
        "a_b",
        "sym",
        "$sym",
        "sym$",
        "$sym$x",
        "glob",
        "$glob$x$8",
        "val",
        "agg",
        "$24",
        "$2",
        "24",
        "8",
        "$8",
        "a$24",
        "é",
        "日本",
        "a b",
        "a-b",
        "\0",
        "\u{7f}",
        "x$ab",
        "ab",
        "$ag",
        "ff",
        "$ff",
        "A",
        "a",
        "$41",
    ];

    fn targets() -> Vec<Target> {
        let mut out = Vec::new();
        for s in TRICKY {
            out.push(Target::Symbol(s.to_string()));
            for off in [0, 8, 12, 24, 80] {
                out.push(Target::Global { name: s.to_string(), offset: off });
            }
            out.push(Target::Value(ValueKey::of(s, b"")));
        }
        out
    }

    #[test]
    fn examples() {
        assert_eq!(record_name("saxpy", &Target::Symbol("foo".into())), "relok$saxpy$sym$foo");
        let g = Target::Global { name: "exc_buf".into(), offset: 8 };
        assert_eq!(record_name("k", &g), "relok$k$glob$exc_buf$8");
        let key = ValueKey::of("str", b"boom");
        assert_eq!(record_name("k", &Target::Value(key)), format!("relok$k$val${}", &key.to_hex()[..16]));
        assert_eq!(record_name("k", &Target::Symbol("é".into())), "relok$k$sym$$c3$a9");
        assert_eq!(record_name("", &Target::Symbol(String::new())), "relok$$sym$");
        assert_eq!(record_name_interior("k", "t$1"), "relok$k$agg$t$$1");
    }

    /// Every pair of tricky (kernel, target) inputs gives a distinct,
    /// in-charset name that decodes back to that pair.
    #[test]
    fn tricky_names_are_injective_and_in_charset() {
        let mut seen = std::collections::BTreeMap::new();
        for kernel in TRICKY {
            for target in targets() {
                let name = record_name(kernel, &target);
                assert!(in_charset(&name), "{name:?}");
                assert_eq!(decode(&name), Some((kernel.as_bytes().to_vec(), expected(&target))), "{name}");
                if let Some(prev) = seen.insert(name.clone(), (kernel, target.clone())) {
                    panic!("{name} from both {prev:?} and {:?}", (kernel, target));
                }
            }
            for agg in TRICKY {
                let name = record_name_interior(kernel, agg);
                assert!(in_charset(&name), "{name:?}");
                let agg_bytes = agg.as_bytes().to_vec();
                assert_eq!(decode(&name), Some((kernel.as_bytes().to_vec(), Decoded::Agg(agg_bytes))));
                assert!(seen.insert(name.clone(), (kernel, Target::Symbol(String::new()))).is_none());
            }
        }
    }

    fn any_text() -> impl Strategy<Value = String> {
        // Biased towards the characters that matter to the escaping.
        prop_oneof!["[a-f0-9$_]{0,8}", "[a-zA-Z0-9_$ é\\-\u{0}]{0,8}", any::<String>(),]
    }

    fn any_target() -> impl Strategy<Value = Target> {
        prop_oneof![
            any_text().prop_map(Target::Symbol),
            (any_text(), any::<u64>()).prop_map(|(name, offset)| Target::Global { name, offset }),
            any::<[u8; 32]>().prop_map(|k| Target::Value(ValueKey(k))),
        ]
    }

    proptest! {
        #[test]
        fn names_decode_back(kernel in any_text(), target in any_target()) {
            let name = record_name(&kernel, &target);
            prop_assert!(in_charset(&name), "{:?}", name);
            prop_assert_eq!(decode(&name), Some((kernel.into_bytes(), expected(&target))));
        }

        #[test]
        fn distinct_inputs_distinct_names(
            k1 in any_text(), t1 in any_target(), k2 in any_text(), t2 in any_target()
        ) {
            let same_input = k1 == k2 && expected(&t1) == expected(&t2);
            prop_assert_eq!(record_name(&k1, &t1) == record_name(&k2, &t2), same_input);
        }

        #[test]
        fn interior_names_decode_back(kernel in any_text(), agg in any_text()) {
            let name = record_name_interior(&kernel, &agg);
            prop_assert!(in_charset(&name), "{:?}", name);
            prop_assert_eq!(decode(&name), Some((kernel.into_bytes(), Decoded::Agg(agg.into_bytes()))));
        }
    }
}
