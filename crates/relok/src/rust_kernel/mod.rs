//! What the code `#[relok::kernel]`, `#[relok::device]` and
//! `#[relok::host]` generate calls (`relok::__kernel`, hidden: not an API
//! to write by hand; docs/kernels.md describes the macros).
//!
//! Shape:
//! - a kernel's Rust body becomes a Rust function over *staged* values:
//!   [`Val<T>`] (an SSA value of the IR whose Rust type is `T`),
//!   [`Var<T>`] (a `let mut`: a `local` of the IR), [`Slice<T>`] (a
//!   `&[T]` or `&mut [T]` parameter: pointer + `u32` length),
//!   [`SharedArray<T>`], [`HostArray<T>`]. Running it drives relok-ir's
//!   builder through a [`Cx`]: rustc type-checks the kernel (a `u32` added
//!   to an `f32` is a Rust type error at the user's span) and the IR is
//!   built with the same types;
//! - a kernel's `for` runs over a staged iterator (`iter.rs`: ranges,
//!   slices, `enumerate`, `zip`, one IR `loop` each, and loop labels' exit
//!   flags); the integer and float methods the IR has no operation for are
//!   composed from those it has (`methods.rs`); 2-D arrays, their rows
//!   and sub-slices are in `places.rs`;
//! - structs (`#[derive(relok::Struct)]`) and tuples are several IR
//!   values, one per field (`structs.rs`: [`KernelValue`], [`Stored`],
//!   [`DevStruct`]), and a struct's device methods are found by rustc
//!   through [`Method`]; an `Option` is a flag and a value ([`Opt`],
//!   `option.rs`);
//! - `u8 i8 u16 i16` are computed on as 32-bit values kept in their range
//!   ([`DevScalar::MEM`] is their storage type in memory; `Cx::wrap`);
//! - [`ModuleCx`] holds the module being built: the runtime imports, the
//!   device functions already
//!   defined (each once, by name) and the host statics the kernel names;
//!   a function that calls one not defined yet (a method) is staged again
//!   once it is;
//! - [`KernelDef`] is one kernel's `static`: its IR is built and verified
//!   once per process ([`std::sync::OnceLock`]); each context loads it
//!   once (a map from the definition's address to the loaded kernel), so
//!   a warm launch neither rebuilds nor re-hashes the IR. The map holds
//!   the kernel without its context: a kernel holds its context, which
//!   would then hold itself and never drop;
//! - [`HostStatic`] is a `#[relok::host] static`: the kernel reads it
//!   through the runtime global named by its path (`ref global`), whose
//!   bytes each context writes before loading a kernel that names it —
//!   the key holds the path, never the bytes;
//! - a failing bounds check calls the runtime library's
//!   `@relok_throw_with(message, len, index)`: the message is a `str` host
//!   value holding `{0}` and `{1}`, which the host fills with the length
//!   and the index the exception record carries (the first failing
//!   thread's).

pub(crate) mod build;
pub(crate) mod host;
mod iter;
mod methods;
mod option;
mod places;
mod staged;
mod structs;

pub use crate::cells::{HostObject, device_name, global_name, mangle_path};
pub use crate::element::sealed::Sealed;
pub use build::{Cx, ModuleCx, push};
pub use bytemuck;
pub use host::{HostData, HostStatic};
pub use iter::*;
pub use option::*;
pub use places::*;
pub use relok_ir::{Scalar, Type};
pub use staged::*;
pub use structs::*;

use crate::core::lock;
use crate::error::{Error, Result};
use crate::kernel::{Arg, Kernel};
use crate::program::Program;
use crate::program::rust::HostUse;
use crate::stream::Stream;
use crate::{Buffer, Element, Grid};
use std::sync::{Arc, Mutex, OnceLock};

/// The element types a generic kernel's type parameter ranges over
/// (`u32 i32 u64 i64 f32 f64`): `relok::Number`. A kernel writes its
/// constants `T::ZERO`, `T::ONE` ([`Num`]'s) and `T::default()`.
///
/// ```
/// #[relok::kernel]
/// fn double<T: relok::Number>(x: &mut [T]) {
///     let i = relok::global_id_x();
///     if i < x.len() {
///         x[i] = x[i] + x[i];
///     }
/// }
///
/// fn main() -> Result<(), relok::Error> {
///     let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
///     let mut x = ctx.upload(&[1.5f64, 2.0])?;
///     let s = ctx.stream();
///     double::launch(&s, relok::Grid::cover(2, 64), &mut x)?;   // the f64 instance
///     s.synchronize()?;
///     assert_eq!(x.download()?, [3.0, 4.0]);
///     Ok(())
/// }
/// ```
pub trait Elem: DevScalar + Num + Element + for<'a> LaunchArg<'a> {}
impl<T: DevScalar + Num + Element + for<'a> LaunchArg<'a>> Elem for T {}

/// The IR name of a generic kernel's instance: the kernel's name and each
/// type's and constant's, `_`-joined, in `[A-Za-z0-9_]`.
pub fn instance_name(kernel: &str, parts: &[String]) -> String {
    let mut name = kernel.to_owned();
    for p in parts {
        name.push_str("__");
        name.extend(p.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }));
    }
    name
}

/// A generic kernel's instances: one [`KernelDef`] per instantiation (by
/// the `TypeId` of a key type the macro makes from the parameters), made
/// on first use and kept for the process.
#[derive(Debug)]
pub struct Instances {
    kernel: &'static str,
    defs: Mutex<Vec<(std::any::TypeId, &'static KernelDef)>>,
}

impl Instances {
    /// No instances yet.
    pub const fn new(kernel: &'static str) -> Instances {
        Instances { kernel, defs: Mutex::new(Vec::new()) }
    }

    /// The instance `key`, built by `build`.
    pub fn get(&self, key: std::any::TypeId, build: fn(&mut ModuleCx)) -> &'static KernelDef {
        let mut defs = lock(&self.defs);
        if let Some((_, d)) = defs.iter().find(|(k, _)| *k == key) {
            return d;
        }
        // One leak per instance a program launches: a definition lives
        // as long as the process, as a static one does.
        let def: &'static KernelDef = Box::leak(Box::new(KernelDef::instance(self.kernel, build)));
        defs.push((key, def));
        def
    }
}

/// What building a kernel gave: its verified program (with the host
/// statics and runtime globals it reads) and its name.
#[derive(Debug)]
struct Built {
    program: Program,
    /// The kernel's IR name (an instance's carries its types).
    kernel: String,
}

/// One `#[relok::kernel]` (see the module docs).
#[derive(Debug)]
pub struct KernelDef {
    name: &'static str,
    build: fn(&mut ModuleCx),
    built: OnceLock<std::result::Result<Built, String>>,
}

impl KernelDef {
    /// The kernel `name` built by `build`.
    pub const fn new(name: &'static str, build: fn(&mut ModuleCx)) -> KernelDef {
        KernelDef { name, build, built: OnceLock::new() }
    }

    /// An instance of a generic kernel: its IR name is the one the build
    /// gives its kernel (the module's only one).
    fn instance(kernel: &'static str, build: fn(&mut ModuleCx)) -> KernelDef {
        KernelDef { name: kernel, build, built: OnceLock::new() }
    }

    fn built(&self) -> Result<&Built> {
        let built = self.built.get_or_init(|| {
            let mut m = ModuleCx::new();
            (self.build)(&mut m);
            if !m.errors.is_empty() {
                return Err(m.errors.join("; "));
            }
            let host = HostUse { statics: m.statics, globals: m.globals };
            let module = m.mb.build();
            let kernel = module.kernels().next().map(|(_, f)| f.name.clone()).unwrap_or_default();
            Program::from_module(module)
                .map(|program| Built { program: program.with_host(host), kernel })
                .map_err(|e| e.to_string())
        });
        built.as_ref().map_err(|reason| Error::KernelBuild { kernel: self.name.to_owned(), reason: reason.clone() })
    }

    /// The kernel's verified IR (built on first use).
    pub fn program(&self) -> Result<&Program> {
        self.built().map(|b| &b.program)
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The kernel loaded on the stream's context (once per context; a
    /// warm call is a map lookup and two reference counts).
    pub fn kernel(&'static self, stream: &Stream) -> Result<Kernel> {
        let ctx = &stream.inner.ctx;
        let key = std::ptr::from_ref(self) as usize;
        if let Some(k) = lock(&ctx.rust_kernels).get(&key) {
            return Ok(Kernel::on(ctx, k));
        }
        let built = self.built()?;
        let k = Kernel::load(ctx, &built.program, &built.kernel)?;
        lock(&ctx.rust_kernels).insert(key, Arc::clone(k.loaded()));
        Ok(k)
    }

    /// Loads (once per context) and launches with `args` in the IR's order.
    pub fn launch(&'static self, stream: &Stream, grid: Grid, args: Vec<Arg<'_>>) -> Result<()> {
        self.kernel(stream)?.launch(stream, grid, args)
    }
}

/// One launch argument of a generated `launch`: scalars as themselves,
/// buffers as the buffer and its `u32` length.
pub trait LaunchArg<'a> {
    /// Appends the IR arguments of parameter `param` of the Rust kernel
    /// `kernel` (the names an argument refused here is reported with).
    fn push(self, out: &mut Vec<Arg<'a>>, kernel: &'static str, param: &'static str) -> Result<()>;
}

macro_rules! scalar_launch_arg {
    ($($t:ty),*) => {$(
        impl<'a> LaunchArg<'a> for $t {
            fn push(self, out: &mut Vec<Arg<'a>>, _: &'static str, _: &'static str) -> Result<()> {
                out.push(self.into());
                Ok(())
            }
        }
    )*};
}
scalar_launch_arg!(bool, i32, u32, i64, u64, f32, f64);

/// A small integer parameter is the IR's 32-bit parameter it widens to
/// (no kernel parameter has a storage type): passed widened.
macro_rules! small_launch_arg {
    ($($t:ty => $wide:ty),*) => {$(
        impl<'a> LaunchArg<'a> for $t {
            fn push(self, out: &mut Vec<Arg<'a>>, _: &'static str, _: &'static str) -> Result<()> {
                out.push(<$wide>::from(self).into());
                Ok(())
            }
        }
    )*};
}
small_launch_arg!(u8 => u32, i8 => i32, u16 => u32, i16 => i32);

impl<'a> LaunchArg<'a> for usize {
    fn push(self, out: &mut Vec<Arg<'a>>, kernel: &'static str, param: &'static str) -> Result<()> {
        let v = u32::try_from(self).map_err(|_| Error::UsizeOutOfRange {
            kernel: kernel.to_owned(),
            param: param.to_owned(),
            value: self,
        })?;
        out.push(v.into());
        Ok(())
    }
}

impl<'a> LaunchArg<'a> for &'a crate::Symbol {
    fn push(self, out: &mut Vec<Arg<'a>>, _: &'static str, _: &'static str) -> Result<()> {
        out.push(self.into());
        Ok(())
    }
}

fn buffer_len<T: Element>(b: &Buffer<T>) -> Result<u32> {
    u32::try_from(b.len()).map_err(|_| Error::TooLarge { len: b.len(), elem_bytes: size_of::<T>() })
}

impl<'a, T: Element> LaunchArg<'a> for &'a Buffer<T> {
    fn push(self, out: &mut Vec<Arg<'a>>, _: &'static str, _: &'static str) -> Result<()> {
        let len = buffer_len(self)?;
        out.push(self.into());
        out.push(len.into());
        Ok(())
    }
}

impl<'a, T: Element> LaunchArg<'a> for &'a mut Buffer<T> {
    fn push(self, out: &mut Vec<Arg<'a>>, _: &'static str, _: &'static str) -> Result<()> {
        let len = buffer_len(self)?;
        out.push(self.into());
        out.push(len.into());
        Ok(())
    }
}
