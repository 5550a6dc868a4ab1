//! `relok run` through the facade: a kernel of a verified module loaded on
//! a [`relok::Context`] (the cache tiers, else a compile, with this
//! process's host objects delivered), each buffer argument uploaded as a
//! [`relok::Buffer`] of its element type, each symbol made with
//! [`relok::Context::symbol`], one launch ([`relok::Kernel::launch`] with a
//! `Vec<relok::Arg>`), the stream synchronised, every buffer read back.
//!
//! What `relok run` prints all comes from the facade: the device's name,
//! the cache's counters ([`relok::Context::cache_stats`]) and its warning
//! ([`relok::Context::cache_warning`]), the threads launched and, on the
//! cpu device, the interpreter's steps
//! ([`relok::Stream::synchronize_stats`]); `--step-budget` is
//! [`relok::Grid::with_step_budget`]. `relok demo`, the file tests, `relok
//! fuzz` and the benches still run through the runtime (`crate::launch`).

use crate::args::ArgValue;
use relok::{Arg, Buffer, Context, Error, Grid, LaunchStats, Program, Scalar, Word};
use std::time::Instant;

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// Every argument after the run: scalars as given, buffers read back.
    pub args: Vec<ArgValue>,
    /// Threads launched and, on the cpu device, instructions executed.
    pub stats: LaunchStats,
    /// Microseconds to get the compiled kernel (compile or cache) and load
    /// it (deliver its words).
    pub compile_us: f64,
}

/// A buffer of one of the element types a kernel parameter may point to.
#[derive(Debug)]
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
    /// A buffer of `elem` holding these elements' bits.
    fn upload(ctx: &Context, elem: Scalar, bits: &[u64]) -> Result<Buf, Error> {
        fn each<T>(bits: &[u64], f: impl Fn(u64) -> T) -> Vec<T> {
            bits.iter().map(|&b| f(b)).collect()
        }
        Ok(match elem {
            Scalar::U32 => Buf::U32(ctx.upload(&each(bits, |b| b as u32))?),
            Scalar::I32 => Buf::I32(ctx.upload(&each(bits, |b| b as u32 as i32))?),
            Scalar::U64 => Buf::U64(ctx.upload(bits)?),
            Scalar::I64 => Buf::I64(ctx.upload(&each(bits, |b| b as i64))?),
            Scalar::F32 => Buf::F32(ctx.upload(&each(bits, |b| f32::from_bits(b as u32)))?),
            Scalar::F64 => Buf::F64(ctx.upload(&each(bits, f64::from_bits))?),
            Scalar::U8 => Buf::U8(ctx.upload(&each(bits, |b| b as u8))?),
            Scalar::I8 => Buf::I8(ctx.upload(&each(bits, |b| b as u8 as i8))?),
            Scalar::U16 => Buf::U16(ctx.upload(&each(bits, |b| b as u16))?),
            Scalar::I16 => Buf::I16(ctx.upload(&each(bits, |b| b as u16 as i16))?),
            Scalar::Bool => Buf::Bool(ctx.upload(&each(bits, |b| b != 0))?),
            Scalar::Word => Buf::Word(ctx.upload(&each(bits, Word::from_bits))?),
        })
    }

    /// The elements' bits, zero-extended as [`ArgValue`] holds them.
    fn bits(&self) -> Result<Vec<u64>, Error> {
        fn each<T>(v: Vec<T>, f: impl Fn(T) -> u64) -> Vec<u64> {
            v.into_iter().map(f).collect()
        }
        Ok(match self {
            Buf::U32(b) => each(b.download()?, u64::from),
            Buf::I32(b) => each(b.download()?, |x| u64::from(x as u32)),
            Buf::U64(b) => b.download()?,
            Buf::I64(b) => each(b.download()?, |x| x as u64),
            Buf::F32(b) => each(b.download()?, |x| u64::from(x.to_bits())),
            Buf::F64(b) => each(b.download()?, f64::to_bits),
            Buf::U8(b) => each(b.download()?, u64::from),
            Buf::I8(b) => each(b.download()?, |x| u64::from(x as u8)),
            Buf::U16(b) => each(b.download()?, u64::from),
            Buf::I16(b) => each(b.download()?, |x| u64::from(x as u16)),
            Buf::Bool(b) => each(b.download()?, u64::from),
            Buf::Word(b) => each(b.download()?, Word::to_bits),
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

/// The scalar argument of type `ty` with these bits (a `word` given as
/// bits, `0x…`, is a [`Word`]).
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
        // No kernel parameter has a storage type (the verifier refuses
        // one): as its widened type, which the launch then refuses by name.
        Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 => scalar_arg(ty.widened(), bits),
    }
}

/// Loads `kernel` of `program` on `ctx` (timed: `compile_us`), uploads the
/// arguments, launches once on a new stream, waits, and reads every buffer
/// back. The buffers are freed when the run returns.
pub fn run(ctx: &Context, program: &Program, kernel: &str, grid: Grid, args: &[ArgValue]) -> Result<RunOutput, Error> {
    let start = Instant::now();
    let kernel = ctx.kernel(program, kernel)?;
    let compile_us = start.elapsed().as_secs_f64() * 1e6;
    let mut buffers = Vec::new();
    let mut symbols = Vec::new();
    for a in args {
        match a {
            ArgValue::Buffer(elem, bits) => buffers.push(Buf::upload(ctx, *elem, bits)?),
            ArgValue::Symbol(name) => symbols.push(ctx.symbol(name)),
            ArgValue::Scalar(..) => {}
        }
    }
    let (mut b, mut s) = (buffers.iter(), symbols.iter());
    let launch_args: Vec<Arg> = args
        .iter()
        .map(|a| match a {
            ArgValue::Scalar(ty, bits) => scalar_arg(*ty, *bits),
            ArgValue::Symbol(_) => s.next().expect("one symbol per symbol argument").into(),
            ArgValue::Buffer(..) => b.next().expect("one buffer per buffer argument").arg(),
        })
        .collect();
    let stream = ctx.stream();
    kernel.launch(&stream, grid, launch_args)?;
    let stats = stream.synchronize_stats()?;
    let mut b = buffers.iter();
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        out.push(match a {
            ArgValue::Buffer(elem, _) => {
                ArgValue::Buffer(*elem, b.next().expect("one buffer per buffer argument").bits()?)
            }
            other => other.clone(),
        });
    }
    Ok(RunOutput { args: out, stats, compile_us })
}
