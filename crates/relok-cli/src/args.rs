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
//!     integers uniform in [0, 2^16), bools fair;
//!   - `@PATH`: the elements in a file: a `.npy` file (NumPy's format, its
//!     dtype and byte order checked against the element type, any C-order
//!     shape, see [`npy`]) or, under any other name, raw little-endian
//!     bytes of the element type (bool: one byte, 0 or 1).
//!
//! A buffer holds at most [`MAX_BUFFER_BYTES`] bytes of its element type,
//! whatever form gives it.
//!
//! Buffers are uploaded before the launch and read back after it, so every
//! buffer argument is also an output (`relok run --out-dir` writes each as a
//! `.npy` file with [`npy::encode`]).

use relok_ir::{AddrSpace, Function, Scalar, Type, text};
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

/// The largest buffer an argument may ask for, in bytes of its element
/// type on the device (256 MiB): 2^25 elements of a 64-bit type, 2^26 of a
/// 32-bit one. The host holds each element in a `u64` besides.
pub const MAX_BUFFER_BYTES: u64 = 256 << 20;

/// The largest element count a buffer of `elem` may have.
pub const fn max_elements(elem: Scalar) -> u64 {
    MAX_BUFFER_BYTES / elem.size() as u64
}

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
        Type::Scalar(_) if src.starts_with('@') => {
            Err(err(format!("`{src}`: only a buffer parameter can be read from a file")))
        }
        Type::Scalar(s) => text::parse_literal(src, *s).map(|bits| ArgValue::Scalar(*s, bits)).map_err(err),
        Type::Ptr(AddrSpace::Global, elem) => match elem.as_ref() {
            Type::Scalar(s) if src.starts_with('@') => {
                read_buffer_file(std::path::Path::new(&src[1..]), *s).map(|v| ArgValue::Buffer(*s, v)).map_err(err)
            }
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
        .map(|(i, (&p, t))| {
            // The parameter's name goes into the message with its type.
            parse_arg(i + 1, func.ty(p), t.as_ref())
                .map_err(|e| ArgError { param_ty: format!("{p}: {}", e.param_ty), ..e })
        })
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
    check_count(n, elem)?;
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

/// A buffer's element count must be in 1..=[`max_elements`].
fn check_count(n: u64, elem: Scalar) -> Result<(), String> {
    let max = max_elements(elem);
    if n == 0 || n > max {
        return Err(format!(
            "element count {n} is out of range 1..={max} (at most {} MiB of {elem} per buffer)",
            MAX_BUFFER_BYTES >> 20
        ));
    }
    Ok(())
}

/// Reads a buffer of `elem` from `path` (`@PATH`): a `.npy` file, or raw
/// little-endian bytes under any other name. Reads at most a little more
/// than [`MAX_BUFFER_BYTES`], whatever the file's size.
pub fn read_buffer_file(path: &std::path::Path, elem: Scalar) -> Result<Vec<u64>, String> {
    use std::io::Read;
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    // A header is at most 64 KiB (v1) or what v2 asks, bounded here too.
    let cap = MAX_BUFFER_BYTES + npy::MAX_HEADER;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(format!("{shown}: larger than a buffer may be ({} MiB)", MAX_BUFFER_BYTES >> 20));
    }
    let is_npy = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
    let data = if is_npy {
        npy::decode(&bytes, elem).map_err(|e| format!("{shown}: {e}"))?
    } else {
        let size = elem.size() as usize;
        if bytes.len() % size != 0 {
            return Err(format!(
                "{shown}: {} bytes is not a whole number of {elem} elements ({size} bytes each, raw little-endian; a `.npy` file must be named *.npy)",
                bytes.len()
            ));
        }
        check_count((bytes.len() / size) as u64, elem).map_err(|e| format!("{shown}: {e}"))?;
        &bytes[..]
    };
    let bits = from_bytes(elem, data);
    if elem == Scalar::Bool
        && let Some(i) = bits.iter().position(|&b| b > 1)
    {
        return Err(format!("{shown}: element {i} is {} (a bool is one byte, 0 or 1)", bits[i]));
    }
    Ok(bits)
}

/// NumPy's `.npy` format, versions 1.0 to 3.0, read for buffers of any
/// C-order shape (flattened) and written with one dimension
/// (<https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html>):
/// the magic `\x93NUMPY`, a major and a minor version byte, the header's
/// length (u16 little-endian in 1.0, u32 in 2.0 and 3.0), then the header,
/// a Python dict literal `{'descr': '<f4', 'fortran_order': False,
/// 'shape': (3,), }` padded with spaces to a multiple of 64 bytes and
/// ended by `\n`, then the elements.
pub mod npy {
    use relok_ir::Scalar;

    const MAGIC: &[u8] = b"\x93NUMPY";

    /// The longest header read (format 1.0 allows 65 535 bytes).
    pub const MAX_HEADER: u64 = 1 << 16;

    /// The dtype of `elem`, as `descr` writes it (`word`: an unsigned 64-bit integer).
    pub const fn descr(elem: Scalar) -> &'static str {
        match elem {
            Scalar::Bool => "|b1",
            Scalar::U8 => "|u1",
            Scalar::I8 => "|i1",
            Scalar::U16 => "<u2",
            Scalar::I16 => "<i2",
            Scalar::I32 => "<i4",
            Scalar::U32 => "<u4",
            Scalar::F32 => "<f4",
            Scalar::I64 => "<i8",
            Scalar::U64 | Scalar::Word => "<u8",
            Scalar::F64 => "<f8",
        }
    }

    /// The element bytes of `file`, checked: the format's magic, version
    /// and header, a dtype equal to `elem`'s, C order (or one dimension),
    /// and exactly as many bytes as the shape says.
    pub fn decode(file: &[u8], elem: Scalar) -> Result<&[u8], String> {
        let rest = file.strip_prefix(MAGIC).ok_or("not a .npy file (no \\x93NUMPY magic)")?;
        let truncated = || "truncated .npy header".to_owned();
        let (&[major, _minor], rest) = rest.split_first_chunk::<2>().ok_or_else(truncated)?;
        let (len, rest) = match major {
            1 => {
                let (l, r) = rest.split_first_chunk::<2>().ok_or_else(truncated)?;
                (usize::from(u16::from_le_bytes(*l)), r)
            }
            2 | 3 => {
                let (l, r) = rest.split_first_chunk::<4>().ok_or_else(truncated)?;
                (u32::from_le_bytes(*l) as usize, r)
            }
            v => return Err(format!(".npy format version {v} is not supported (1, 2 or 3)")),
        };
        if len as u64 > MAX_HEADER || len > rest.len() {
            return Err(format!("a .npy header of {len} bytes is too long or truncated"));
        }
        let header = std::str::from_utf8(&rest[..len]).map_err(|_| "the .npy header is not text")?;
        let data = &rest[len..];
        let dtype = field(header, "descr")?.trim_matches(|c| c == '\'' || c == '"');
        // `=` is the writer's native order and `<b1` a bool's: numpy writes
        // `<` and `|b1`, others may not.
        let normal = dtype.replacen('=', "<", 1).replacen("<b1", "|b1", 1);
        if normal != descr(elem) {
            return Err(format!(
                "dtype `{dtype}` does not match the parameter's element type {elem} (expected `{}`)",
                descr(elem)
            ));
        }
        let fortran = field(header, "fortran_order")?;
        let shape = field(header, "shape")?;
        let dims: Vec<u64> = shape
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| d.trim_end_matches('L').parse::<u64>().map_err(|_| format!("bad shape {shape}")))
            .collect::<Result<_, _>>()?;
        if fortran == "True" && dims.iter().filter(|&&d| d != 1).count() > 1 {
            return Err(format!("shape {shape} is in Fortran order (save a C-order array: numpy.ascontiguousarray)"));
        }
        let count =
            dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).ok_or(format!("shape {shape} is too large"))?;
        super::check_count(count, elem).map_err(|e| format!("shape {shape}: {e}"))?;
        let want = count * u64::from(elem.size());
        if data.len() as u64 != want {
            return Err(format!("shape {shape} of {elem} needs {want} bytes of data, the file has {}", data.len()));
        }
        Ok(data)
    }

    /// The text of `key`'s value in the header's dict: a parenthesised
    /// tuple whole, anything else up to the next `,` or `}`.
    fn field<'h>(header: &'h str, key: &str) -> Result<&'h str, String> {
        let at = [format!("'{key}'"), format!("\"{key}\"")]
            .iter()
            .find_map(|k| header.find(k.as_str()))
            .ok_or(format!("the .npy header has no `{key}`"))?;
        let after = header[at + key.len() + 2..].trim_start();
        let value = after.strip_prefix(':').ok_or(format!("bad .npy header after `{key}`"))?.trim_start();
        let end = if value.starts_with('(') {
            value.find(')').map(|i| i + 1).ok_or(format!("bad .npy header: `{key}` has no `)`"))?
        } else {
            value.find([',', '}']).unwrap_or(value.len())
        };
        Ok(value[..end].trim())
    }

    /// A `.npy` file (format 1.0) of one dimension holding `bits` as `elem`.
    pub fn encode(elem: Scalar, bits: &[u64]) -> Vec<u8> {
        let dict = format!("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", descr(elem), bits.len());
        // Magic, version, length, dict and `\n` padded to 64 bytes.
        let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
        let header = format!("{dict}{}\n", " ".repeat(unpadded.next_multiple_of(64) - unpadded));
        let mut out = Vec::with_capacity(unpadded + bits.len() * elem.size() as usize + 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&super::to_bytes(elem, bits));
        out
    }
}

fn iota_bits(elem: Scalar, i: u64) -> u64 {
    match elem {
        Scalar::Bool => i & 1,
        Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 | Scalar::I32 | Scalar::U32 => i & mask(elem),
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
        _ => (r >> 48) & mask(elem),
    }
}

/// The bits an integer element of `elem` holds (all 64 for the widest).
fn mask(elem: Scalar) -> u64 {
    u64::MAX >> (64 - elem.bits())
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
        assert_eq!(
            parse_arg(1, &Scalar::F32.into(), "2.5"),
            Ok(ArgValue::Scalar(Scalar::F32, u64::from(2.5f32.to_bits())))
        );
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
        // The limit is in bytes: 2^26 u32 elements, 2^25 u64 ones.
        assert!(parse_arg(1, &buf(Scalar::U32), "zeros:67108865").is_err());
        assert!(parse_arg(1, &buf(Scalar::U64), "zeros:33554433").unwrap_err().message.contains("256 MiB of u64"));
        for bad in
            ["zeros", "zeros:0", "zeros:x", "iota:99999999999", "[]", "[1, 2", "blah:3", "rand:2:1:1", "zeros:2:1"]
        {
            assert!(parse_arg(1, &buf(Scalar::U32), bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn bytes_round_trip() {
        let bits = vec![1, 0xffff_ffff, 7];
        assert_eq!(from_bytes(Scalar::U32, &to_bytes(Scalar::U32, &bits)), bits);
    }

    #[test]
    fn npy_round_trips_and_checks_dtype_shape_and_length() {
        for (elem, bits) in [
            (Scalar::F32, vec![u64::from(1.5f32.to_bits()), u64::from((-2.0f32).to_bits())]),
            (Scalar::U64, vec![u64::MAX, 0, 7]),
            (Scalar::Bool, vec![1, 0, 1]),
            (Scalar::I32, vec![0xffff_ffff]),
        ] {
            let file = npy::encode(elem, &bits);
            // numpy's rule: the data starts at a multiple of 64 bytes.
            assert_eq!((file.len() - bits.len() * elem.size() as usize) % 64, 0, "{elem}");
            assert_eq!(from_bytes(elem, npy::decode(&file, elem).expect("decodes")), bits, "{elem}");
        }
        let f32s = npy::encode(Scalar::F32, &[0, 0]);
        let e = npy::decode(&f32s, Scalar::F64).unwrap_err();
        assert!(e.contains("dtype `<f4` does not match the parameter's element type f64 (expected `<f8`)"), "{e}");
        assert!(
            npy::decode(&f32s[..f32s.len() - 1], Scalar::F32)
                .unwrap_err()
                .contains("needs 8 bytes of data, the file has 7")
        );
        assert!(npy::decode(b"P6\n", Scalar::F32).unwrap_err().contains("not a .npy file"));
        // What numpy.save writes for a (2, 3) C-order and a Fortran-order u4 array.
        let header = |dict: &str| {
            let mut f = b"\x93NUMPY\x01\x00".to_vec();
            let h = format!("{dict:<117}\n");
            f.extend_from_slice(&(h.len() as u16).to_le_bytes());
            f.extend_from_slice(h.as_bytes());
            f.extend_from_slice(&[0; 24]);
            f
        };
        let c = header("{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }");
        assert_eq!(npy::decode(&c, Scalar::U32).map(<[u8]>::len), Ok(24));
        let f = header("{'descr': '<u4', 'fortran_order': True, 'shape': (2, 3), }");
        assert!(npy::decode(&f, Scalar::U32).unwrap_err().contains("Fortran order"));
        let big = header("{'descr': '>u4', 'fortran_order': False, 'shape': (6,), }");
        assert!(npy::decode(&big, Scalar::U32).unwrap_err().contains("dtype `>u4`"));
    }

    #[test]
    fn raw_files_are_little_endian_elements_and_bools_are_0_or_1() {
        let dir = std::env::temp_dir().join(format!("relok-args-raw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("b.bin");
        std::fs::write(&path, [1, 0, 0, 0, 2, 0, 0, 0]).expect("write");
        assert_eq!(read_buffer_file(&path, Scalar::U32), Ok(vec![1, 2]));
        assert_eq!(read_buffer_file(&path, Scalar::U64), Ok(vec![0x2_0000_0001]));
        let e = read_buffer_file(&path, Scalar::Bool).unwrap_err();
        assert!(e.ends_with("b.bin: element 4 is 2 (a bool is one byte, 0 or 1)"), "{e}");
        std::fs::write(&path, []).expect("write");
        assert!(read_buffer_file(&path, Scalar::U32).unwrap_err().contains("element count 0 is out of range"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn long_buffers_are_elided() {
        let s = format_buffer(Scalar::U32, &(0..100).collect::<Vec<_>>(), 4);
        assert_eq!(s, "[0, 1, … 96 more …, 98, 99]");
    }
}
