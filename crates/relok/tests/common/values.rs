//! Kernel arguments written as text, as the file tests' `; run:` lines and
//! `relok run --arg` write them — a literal of the parameter's type,
//! `sym:NAME` for a `word`, and for a buffer `[a, b]`, `zeros:N`, `iota:N`
//! or `rand:N[:SEED]` (SplitMix64: floats in [0, 1), integers in
//! [0, 65536), bools fair) — and a kernel run on a [`Context`] with them:
//! every buffer uploaded as a `Buffer` of its element type, the launch on
//! a stream of its own, the synchronisation, every buffer read back.

use relok::{Arg, Buffer, Context, Error, Grid, Kernel, Word};
use relok_ir::{AddrSpace, Function, Scalar, Type, text};

/// An argument, resolved against its parameter's type.
#[derive(Clone, PartialEq, Debug)]
pub enum Value {
    /// A scalar's bits (zero-extended, as in the IR).
    Scalar(Scalar, u64),
    /// A buffer's elements' bits.
    Buffer(Scalar, Vec<u64>),
    /// A symbol given to a `word` parameter, passed as its word.
    Symbol(String),
}

impl Value {
    /// A scalar's bits (0 for the others).
    pub fn scalar(&self) -> u64 {
        match self {
            Value::Scalar(_, bits) => *bits,
            Value::Buffer(..) | Value::Symbol(_) => 0,
        }
    }

    /// A buffer's elements' bits (empty for the others).
    pub fn buffer(&self) -> &[u64] {
        match self {
            Value::Buffer(_, bits) => bits,
            Value::Scalar(..) | Value::Symbol(_) => &[],
        }
    }

    /// A symbol's name (empty for the others).
    pub fn symbol(&self) -> &str {
        match self {
            Value::Symbol(name) => name,
            Value::Scalar(..) | Value::Buffer(..) => "",
        }
    }

    /// As the text format writes it (a buffer as a list, at most `limit`
    /// elements shown).
    pub fn show(&self, limit: usize) -> String {
        match self {
            Value::Scalar(t, bits) => text::format_literal(*t, *bits),
            Value::Symbol(name) => format!("sym:{name}"),
            Value::Buffer(t, bits) => {
                let shown: Vec<String> = bits.iter().take(limit).map(|&b| text::format_literal(*t, b)).collect();
                let more =
                    if bits.len() > limit { format!(", … {} more", bits.len() - limit) } else { String::new() };
                format!("[{}{more}]", shown.join(", "))
            }
        }
    }
}

/// SplitMix64, as `relok run`'s `rand:N:SEED`.
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

fn iota_bits(elem: Scalar, i: u64) -> u64 {
    match elem {
        Scalar::Bool => i & 1,
        Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 | Scalar::I32 | Scalar::U32 => {
            i & (u64::MAX >> (64 - elem.bits()))
        }
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
        _ => (r >> 48) & (u64::MAX >> (64 - elem.bits())),
    }
}

/// Argument `src` for a parameter of type `ty`.
pub fn parse(ty: &Type, src: &str) -> Result<Value, String> {
    let src = src.trim();
    match ty {
        Type::Scalar(Scalar::Word) if src.starts_with("sym:") => Ok(Value::Symbol(src["sym:".len()..].to_owned())),
        Type::Scalar(s) => text::parse_literal(src, *s).map(|bits| Value::Scalar(*s, bits)),
        Type::Ptr(AddrSpace::Global, elem) => match elem.as_ref() {
            Type::Scalar(s) => parse_buffer(src, *s).map(|v| Value::Buffer(*s, v)),
            other => Err(format!("buffers of {other} cannot be written as text")),
        },
        other => Err(format!("parameters of type {other} are not supported")),
    }
}

fn parse_buffer(src: &str, elem: Scalar) -> Result<Vec<u64>, String> {
    if let Some(list) = src.strip_prefix('[') {
        let list = list.strip_suffix(']').ok_or("a list must end with `]`")?;
        return list.split(',').map(|item| text::parse_literal(item.trim(), elem)).collect();
    }
    let parts: Vec<&str> = src.split(':').collect();
    let n: u64 = parts.get(1).and_then(|c| c.parse().ok()).ok_or_else(|| format!("`{src}`: expected FORM:N"))?;
    match (parts[0], parts.get(2)) {
        ("zeros", None) => Ok(vec![0; n as usize]),
        ("iota", None) => Ok((0..n).map(|i| iota_bits(elem, i)).collect()),
        ("rand", seed) => {
            let seed = seed.map_or(Ok(0), |s| s.parse::<u64>().map_err(|_| format!("`{s}` is not a seed")))?;
            let mut rng = SplitMix64(seed);
            Ok((0..n).map(|_| random_bits(elem, rng.next_u64())).collect())
        }
        _ => Err(format!("`{src}`: expected zeros:N, iota:N, rand:N[:SEED] or a list")),
    }
}

/// One argument per parameter of `func`, checking the count.
pub fn parse_all(func: &Function, texts: &[&str]) -> Result<Vec<Value>, String> {
    if texts.len() != func.params.len() {
        return Err(format!("@{} takes {} arguments, {} given", func.name, func.params.len(), texts.len()));
    }
    func.params
        .iter()
        .zip(texts)
        .enumerate()
        .map(|(i, (&p, t))| parse(func.ty(p), t).map_err(|e| format!("argument {} ({p}): {e}", i + 1)))
        .collect()
}

/// A buffer of any element type.
enum Buf {
    U32(Buffer<u32>),
    I32(Buffer<i32>),
    U64(Buffer<u64>),
    I64(Buffer<i64>),
    F32(Buffer<f32>),
    F64(Buffer<f64>),
    U8(Buffer<u8>),
    I8(Buffer<i8>),
    U16(Buffer<u16>),
    I16(Buffer<i16>),
    Bool(Buffer<bool>),
    Word(Buffer<Word>),
}

impl Buf {
    fn upload(ctx: &Context, elem: Scalar, bits: &[u64]) -> Result<Buf, Error> {
        Ok(match elem {
            Scalar::U32 => Buf::U32(ctx.upload(&bits.iter().map(|&b| b as u32).collect::<Vec<_>>())?),
            Scalar::I32 => Buf::I32(ctx.upload(&bits.iter().map(|&b| b as u32 as i32).collect::<Vec<_>>())?),
            Scalar::U64 => Buf::U64(ctx.upload(bits)?),
            Scalar::I64 => Buf::I64(ctx.upload(&bits.iter().map(|&b| b as i64).collect::<Vec<_>>())?),
            Scalar::F32 => Buf::F32(ctx.upload(&bits.iter().map(|&b| f32::from_bits(b as u32)).collect::<Vec<_>>())?),
            Scalar::F64 => Buf::F64(ctx.upload(&bits.iter().map(|&b| f64::from_bits(b)).collect::<Vec<_>>())?),
            Scalar::U8 => Buf::U8(ctx.upload(&bits.iter().map(|&b| b as u8).collect::<Vec<_>>())?),
            Scalar::I8 => Buf::I8(ctx.upload(&bits.iter().map(|&b| b as u8 as i8).collect::<Vec<_>>())?),
            Scalar::U16 => Buf::U16(ctx.upload(&bits.iter().map(|&b| b as u16).collect::<Vec<_>>())?),
            Scalar::I16 => Buf::I16(ctx.upload(&bits.iter().map(|&b| b as u16 as i16).collect::<Vec<_>>())?),
            Scalar::Bool => Buf::Bool(ctx.upload(&bits.iter().map(|&b| b != 0).collect::<Vec<_>>())?),
            Scalar::Word => Buf::Word(ctx.upload(&bits.iter().map(|&b| Word::from_bits(b)).collect::<Vec<_>>())?),
        })
    }

    fn bits(&self) -> Result<Vec<u64>, Error> {
        Ok(match self {
            Buf::U32(b) => b.download()?.into_iter().map(u64::from).collect(),
            Buf::I32(b) => b.download()?.into_iter().map(|x| u64::from(x as u32)).collect(),
            Buf::U64(b) => b.download()?,
            Buf::I64(b) => b.download()?.into_iter().map(|x| x as u64).collect(),
            Buf::F32(b) => b.download()?.into_iter().map(|x| u64::from(x.to_bits())).collect(),
            Buf::F64(b) => b.download()?.into_iter().map(f64::to_bits).collect(),
            Buf::U8(b) => b.download()?.into_iter().map(u64::from).collect(),
            Buf::I8(b) => b.download()?.into_iter().map(|x| u64::from(x as u8)).collect(),
            Buf::U16(b) => b.download()?.into_iter().map(u64::from).collect(),
            Buf::I16(b) => b.download()?.into_iter().map(|x| u64::from(x as u16)).collect(),
            Buf::Bool(b) => b.download()?.into_iter().map(u64::from).collect(),
            Buf::Word(b) => b.download()?.into_iter().map(Word::to_bits).collect(),
        })
    }

    fn arg(&self) -> Arg<'_> {
        match self {
            Buf::U32(b) => b.into(),
            Buf::I32(b) => b.into(),
            Buf::U64(b) => b.into(),
            Buf::I64(b) => b.into(),
            Buf::F32(b) => b.into(),
            Buf::F64(b) => b.into(),
            Buf::U8(b) => b.into(),
            Buf::I8(b) => b.into(),
            Buf::U16(b) => b.into(),
            Buf::I16(b) => b.into(),
            Buf::Bool(b) => b.into(),
            Buf::Word(b) => b.into(),
        }
    }
}

/// A scalar argument of type `ty` with these bits.
fn scalar_arg<'a>(ty: Scalar, bits: u64) -> Arg<'a> {
    match ty {
        Scalar::U32 => (bits as u32).into(),
        Scalar::I32 => (bits as u32 as i32).into(),
        Scalar::U64 => bits.into(),
        Scalar::I64 => (bits as i64).into(),
        Scalar::F32 => f32::from_bits(bits as u32).into(),
        Scalar::F64 => f64::from_bits(bits).into(),
        Scalar::Bool => (bits != 0).into(),
        Scalar::Word => Word::from_bits(bits).into(),
        // No kernel parameter has a storage type (the verifier refuses one).
        Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 => scalar_arg(ty.widened(), bits),
    }
}

/// Launches `kernel` of `ctx` on a new stream with `args` and waits: every
/// argument afterwards (scalars as given, buffers read back), or the
/// error of the launch or of the synchronisation.
pub fn launch(ctx: &Context, kernel: &Kernel, grid: Grid, args: &[Value]) -> Result<Vec<Value>, Error> {
    let mut buffers = Vec::new();
    let mut symbols = Vec::new();
    for a in args {
        match a {
            Value::Buffer(elem, bits) => buffers.push(Buf::upload(ctx, *elem, bits)?),
            Value::Symbol(name) => symbols.push(ctx.symbol(name)),
            Value::Scalar(..) => {}
        }
    }
    let (mut b, mut s) = (buffers.iter(), symbols.iter());
    let launch_args: Vec<Arg> = args
        .iter()
        .map(|a| match a {
            Value::Scalar(ty, bits) => scalar_arg(*ty, *bits),
            Value::Symbol(_) => s.next().expect("one symbol per symbol argument").into(),
            Value::Buffer(..) => b.next().expect("one buffer per buffer argument").arg(),
        })
        .collect();
    let stream = ctx.stream();
    kernel.launch(&stream, grid, launch_args)?;
    stream.synchronize()?;
    let mut b = buffers.iter();
    args.iter()
        .map(|a| match a {
            Value::Buffer(elem, _) => {
                Ok(Value::Buffer(*elem, b.next().expect("one buffer per buffer argument").bits()?))
            }
            other => Ok(other.clone()),
        })
        .collect()
}

/// Loads `kernel` of `program` on `ctx` and [`launch`]es it.
pub fn run(
    ctx: &Context,
    program: &relok::Program,
    kernel: &str,
    grid: Grid,
    args: &[Value],
) -> Result<Vec<Value>, Error> {
    launch(ctx, &ctx.kernel(program, kernel)?, grid, args)
}
