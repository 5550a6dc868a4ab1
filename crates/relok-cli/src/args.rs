//! Kernel arguments given as text: by `relok run --arg`, by `; run:` lines of
//! the file tests, and by the examples.
//!
//! An argument is read against the kernel parameter it is for:
//! - a scalar parameter takes a literal of its type, written as in the text
//!   format: `1024`, `-3`, `2.5`, `true`, `nan`, `0x3f800000` (raw bits);
//! - a `word` parameter takes `sym:NAME`, a symbol (a boxed argument: it is
//!   passed as the symbol's word on the device, so `eq v0, ref :NAME` holds
//!   in the kernel), or raw bits `0x…`;
//! - a buffer parameter (`ptr<global, T>`) takes
//!   - `[a, b, c]`: these elements;
//!   - `zeros:N`: N zeros;
//!   - `iota:N`: 0, 1, 2, …, N-1;
//!   - `rand:N` or `rand:N:SEED`: N pseudo-random elements from a fixed
//!     generator (SplitMix64, seed 0 by default): floats uniform in [0, 1),
//!     integers uniform in [0, 2^16), bools fair.
//!
//! Buffers are uploaded before the launch and read back after it, so every
//! buffer argument is also an output.

use relok_ir::{text, AddrSpace, Function, Scalar, Type};
use std::fmt;

/// An argument, resolved against its parameter's type but not yet on a device.
#[derive(Clone, PartialEq, Debug)]
pub enum ArgValue {
    /// A scalar's bits (zero-extended, as in the IR).
    Scalar(Scalar, u64),
    /// A buffer's elements' bits.
    Buffer(Scalar, Vec<u64>),
    /// A symbol given to a `word` parameter (`sym:NAME`), passed as its word.
    Symbol(String),
}

impl fmt::Display for ArgValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgValue::Scalar(t, b) => Elem(*t, *b).fmt(f),
            ArgValue::Buffer(t, bits) => f.write_str(&format_buffer(*t, bits, usize::MAX)),
            ArgValue::Symbol(name) => write!(f, "sym:{name}"),
        }
    }
}

/// What is wrong with an argument.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("argument {index} ({param_ty}): {message}")]
pub struct ArgError {
    /// 1-based position.
    pub index: usize,
    /// The parameter's type.
    pub param_ty: String,
    /// What is wrong.
    pub message: String,
}

/// The largest buffer an argument may ask for, in elements.
pub const MAX_ELEMENTS: u64 = 1 << 28;

/// Parses argument number `index` (1-based) for a parameter of type `ty`.
pub fn parse_arg(index: usize, ty: &Type, src: &str) -> Result<ArgValue, ArgError> {
    let err = |message: String| ArgError { index, param_ty: ty.to_string(), message };
    let src = src.trim();
    match ty {
        Type::Scalar(Scalar::Word) if src.starts_with("sym:") => {
            let name = &src["sym:".len()..];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                return Err(err(format!("`{name}` is not a symbol name ([A-Za-z0-9_.]+)")));
            }
            Ok(ArgValue::Symbol(name.to_owned()))
        }
        Type::Scalar(s) => text::parse_literal(src, *s).map(|bits| ArgValue::Scalar(*s, bits)).map_err(err),
        Type::Ptr(AddrSpace::Global, elem) => match elem.as_ref() {
            Type::Scalar(s) => parse_buffer(src, *s).map(|v| ArgValue::Buffer(*s, v)).map_err(err),
            other => Err(err(format!("buffers of {other} cannot be given on the command line"))),
        },
        other => Err(err(format!("kernel parameters of type {other} are not supported"))),
    }
}

/// Parses one argument per parameter of `func`, checking the count.
pub fn parse_args<S: AsRef<str>>(func: &Function, texts: &[S]) -> Result<Vec<ArgValue>, String> {
    if texts.len() != func.params.len() {
        let types: Vec<String> = func.params.iter().map(|&p| func.ty(p).to_string()).collect();
        return Err(format!(
            "@{} takes {} arguments ({}), {} given",
            func.name,
            func.params.len(),
            types.join(", "),
            texts.len()
        ));
    }
    func.params
        .iter()
        .zip(texts)
        .enumerate()
        .map(|(i, (&p, t))| parse_arg(i + 1, func.ty(p), t.as_ref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("@{}: {e}", func.name))
}

/// Launch dimensions: `N`, `XxY` or `XxYxZ`.
pub fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split('x').collect();
    if parts.len() > 3 {
        return Err(format!("bad dimensions `{s}` (expected N, XxY or XxYxZ)"));
    }
    let mut dims = [1u32; 3];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = p.trim().parse().map_err(|_| format!("bad dimensions `{s}`: `{p}` is not a count"))?;
    }
    Ok(dims)
}

fn parse_buffer(src: &str, elem: Scalar) -> Result<Vec<u64>, String> {
    if let Some(list) = src.strip_prefix('[') {
        let list = list.strip_suffix(']').ok_or("a list must end with `]`")?;
        if list.trim().is_empty() {
            return Err("a buffer needs at least one element".into());
        }
        return list.split(',').map(|item| text::parse_literal(item.trim(), elem)).collect();
    }
    let mut parts = src.split(':');
    let kind = parts.next().unwrap_or_default();
    let count = parts.next().ok_or_else(|| format!("expected `{kind}:N`, e.g. `zeros:1024`, or a list `[1, 2]`"))?;
    let n: u64 = count.parse().map_err(|_| format!("`{count}` is not an element count"))?;
    if n == 0 || n > MAX_ELEMENTS {
        return Err(format!("element count {n} is out of range 1..={MAX_ELEMENTS}"));
    }
    let seed = match (kind, parts.next()) {
        ("rand", Some(s)) => s.parse::<u64>().map_err(|_| format!("`{s}` is not a seed"))?,
        (_, None) => 0,
        (_, Some(extra)) => return Err(format!("unexpected `:{extra}`")),
    };
    if parts.next().is_some() {
        return Err("too many `:` parts".into());
    }
    match kind {
        "zeros" => Ok(vec![0; n as usize]),
        "iota" => Ok((0..n).map(|i| iota_bits(elem, i)).collect()),
        "rand" => {
            let mut rng = SplitMix64(seed);
            Ok((0..n).map(|_| random_bits(elem, rng.next_u64())).collect())
        }
        other => Err(format!("unknown buffer form `{other}` (expected zeros, iota, rand or a list)")),
    }
}

fn iota_bits(elem: Scalar, i: u64) -> u64 {
    match elem {
        Scalar::Bool => i & 1,
        Scalar::I32 | Scalar::U32 => i & 0xffff_ffff,
        Scalar::F32 => u64::from((i as f32).to_bits()),
        Scalar::F64 => (i as f64).to_bits(),
        Scalar::I64 | Scalar::U64 | Scalar::Word => i,
    }
}

fn random_bits(elem: Scalar, r: u64) -> u64 {
    match elem {
        Scalar::Bool => r >> 63,
        Scalar::F32 => u64::from(((r >> 40) as f32 / (1u64 << 24) as f32).to_bits()),
        Scalar::F64 => ((r >> 11) as f64 / (1u64 << 53) as f64).to_bits(),
        _ => r >> 48,
    }
}

/// SplitMix64: a tiny, fixed generator, so `rand:N:SEED` means the same
/// numbers in every version of relok.
#[derive(Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Encodes elements as little-endian bytes in the IR's memory layout.
pub fn to_bytes(elem: Scalar, bits: &[u64]) -> Vec<u8> {
    let size = elem.size() as usize;
    bits.iter().flat_map(|b| b.to_le_bytes().into_iter().take(size)).collect()
}

/// Decodes little-endian elements.
pub fn from_bytes(elem: Scalar, bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(elem.size() as usize)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// One element, printed as a literal of its type.
#[derive(Debug)]
pub struct Elem(pub Scalar, pub u64);

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&text::format_literal(self.0, self.1))
    }
}

/// A buffer printed as a list, eliding the middle past `limit` elements.
pub fn format_buffer(elem: Scalar, bits: &[u64], limit: usize) -> String {
    let mut out = String::from("[");
    let shown: Vec<usize> = if bits.len() <= limit {
        (0..bits.len()).collect()
    } else {
        (0..limit / 2).chain(bits.len() - limit / 2..bits.len()).collect()
    };
    for (n, &i) in shown.iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        if bits.len() > limit && n == limit / 2 {
            out.push_str(&format!("… {} more …, ", bits.len() - limit));
        }
        out.push_str(&Elem(elem, bits[i]).to_string());
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(ty: Scalar) -> Type {
        Type::ptr(AddrSpace::Global, ty.into())
    }

    #[test]
    fn scalars_follow_the_parameter_type() {
        assert_eq!(parse_arg(1, &Scalar::I32.into(), "-3"), Ok(ArgValue::Scalar(Scalar::I32, 0xffff_fffd)));
        assert_eq!(parse_arg(1, &Scalar::F32.into(), "2.5"), Ok(ArgValue::Scalar(Scalar::F32, u64::from(2.5f32.to_bits()))));
        assert!(parse_arg(2, &Scalar::U32.into(), "-1").unwrap_err().to_string().starts_with("argument 2 (u32)"));
    }

    #[test]
    fn buffer_forms() {
        assert_eq!(parse_arg(1, &buf(Scalar::U32), "iota:3"), Ok(ArgValue::Buffer(Scalar::U32, vec![0, 1, 2])));
        assert_eq!(parse_arg(1, &buf(Scalar::U32), "zeros:2"), Ok(ArgValue::Buffer(Scalar::U32, vec![0, 0])));
        assert_eq!(parse_arg(1, &buf(Scalar::I32), "[1, -1]"), Ok(ArgValue::Buffer(Scalar::I32, vec![1, 0xffff_ffff])));
        let a = parse_arg(1, &buf(Scalar::F32), "rand:4:7").unwrap();
        assert_eq!(a, parse_arg(1, &buf(Scalar::F32), "rand:4:7").unwrap());
        assert_ne!(a, parse_arg(1, &buf(Scalar::F32), "rand:4:8").unwrap());
        for bad in ["zeros", "zeros:0", "zeros:x", "iota:99999999999", "[]", "[1, 2", "blah:3", "rand:2:1:1", "zeros:2:1"] {
            assert!(parse_arg(1, &buf(Scalar::U32), bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn bytes_round_trip() {
        let bits = vec![1, 0xffff_ffff, 7];
        assert_eq!(from_bytes(Scalar::U32, &to_bytes(Scalar::U32, &bits)), bits);
    }

    #[test]
    fn long_buffers_are_elided() {
        let s = format_buffer(Scalar::U32, &(0..100).collect::<Vec<_>>(), 4);
        assert_eq!(s, "[0, 1, … 96 more …, 98, 99]");
    }
}
