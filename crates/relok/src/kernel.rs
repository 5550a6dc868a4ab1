//! [`Kernel`]: a kernel loaded on a context's device, launched with typed
//! arguments that are checked against its signature before anything
//! reaches the device.
//!
//! Arguments are a tuple (or a `Vec<Arg>`) of, per parameter:
//!
//! | parameter | argument |
//! | --- | --- |
//! | `u32 i32 u64 i64 f32 f64 bool` | a Rust value of that type |
//! | `word` | a [`Symbol`] of the same context, or a [`crate::Word`] (raw bits) |
//! | `ptr<global, T>` / `ptr<const, T>` | `&Buffer<T>`, `&mut Buffer<T>` or a [`crate::BufferSlice`] of the same context |
//!
//! The IR's global pointers are all writable: a kernel may write through
//! any buffer it is given, `&buffer` as well as `&mut buffer`. Pass
//! `&mut` for the buffers a kernel writes, to say so where it is read.
//!
//! A wrong count is [`Error::ArgCount`]; a wrong type, a buffer of another
//! element type or an integer for a `word` is [`Error::ArgType`] naming
//! the parameter; a buffer or symbol of another context is
//! [`Error::WrongContext`].

use crate::buffer::{Buffer, BufferSlice};
use crate::core::{Allocation, LoadedKernel, Pending, Shared, lock};
use crate::error::{Error, Result};
use crate::program::KernelSource;
use crate::stream::Stream;
use crate::{Element, ElementType, Grid, ScalarArg};
use relok_cache::Key;
use relok_ir::{AddrSpace, FuncKind, Scalar, Type};
use relok_runtime::KernelArg;
use std::sync::Arc;

/// A kernel loaded on one context's device with the context's host objects
/// delivered. Cheap to clone; freed (module, table buffer) when the last
/// clone and the last pending launch drop it.
///
/// ```
/// let ctx = relok::Context::cpu();
/// let p = relok::Program::parse("kernel @k(v0: u32, v1: ptr<global, f32>) {\n    return\n}\n")?;
/// let k = ctx.kernel(&p, "k")?;
/// assert_eq!(k.signature(), "@k(v0: u32, v1: ptr<global, f32>)");
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Kernel {
    ctx: Arc<Shared>,
    loaded: Arc<LoadedKernel>,
}

impl Kernel {
    /// Loads kernel `name`: by its source key when the text is known and a
    /// cache holds it (no parsing), else from the verified program through
    /// the artifact key, remembering the source key for the next process.
    pub(crate) fn load(ctx: &Arc<Shared>, from: &(impl KernelSource + ?Sized), name: &str) -> Result<Kernel> {
        let source_key = Kernel::source_key(ctx, from, name);
        match Kernel::by_source(ctx, source_key, name)? {
            Some(k) => Ok(k),
            None => Kernel::compile(ctx, from, name, source_key),
        }
    }

    /// The source key of kernel `name` of `from` on `ctx`, when its text
    /// is known.
    pub(crate) fn source_key(ctx: &Shared, from: &(impl KernelSource + ?Sized), name: &str) -> Option<Key> {
        from.source_text().map(|text| ctx.cache.source_key(text, name, ctx.device.target(), ctx.strategy))
    }

    /// The kernel a tier holds under `source_key` without compiling or
    /// parsing, if any (see [`relok_runtime::Device::load_by_source`]).
    pub(crate) fn by_source(ctx: &Arc<Shared>, source_key: Option<Key>, name: &str) -> Result<Option<Kernel>> {
        let Some(key) = source_key else { return Ok(None) };
        // A kernel found by its source key is of that text and name (an
        // artifact of another kernel under it counts as a miss).
        let Some(inner) = ctx.device.load_by_source(&ctx.session, &ctx.cache, key, name, ctx.strategy)? else {
            return Ok(None);
        };
        let params = inner.params().iter().enumerate().map(|(i, t)| (format!("v{i}"), t.clone())).collect();
        Ok(Some(Kernel::on(ctx, &Arc::new(LoadedKernel { inner, name: name.to_owned(), params }))))
    }

    /// Kernel `name` from the verified program of `from`, through the
    /// artifact key (a cache, else a compile), remembering `source_key`.
    pub(crate) fn compile(
        ctx: &Arc<Shared>,
        from: &(impl KernelSource + ?Sized),
        name: &str,
        source_key: Option<Key>,
    ) -> Result<Kernel> {
        let strategy = ctx.strategy;
        let program = from.verified_program()?;
        let module = program.module();
        let found = module.func_by_name(name).map(|id| &module.funcs[id]);
        if found.is_some_and(|f| f.kind != FuncKind::Kernel) {
            return Err(Error::NotAKernel { name: name.to_owned() });
        }
        let Some(f) = found else {
            let available = program.kernels().into_iter().map(str::to_owned).collect();
            return Err(Error::NoSuchKernel { name: name.to_owned(), available });
        };
        program.host().prepare(ctx)?;
        let params = f.params.iter().filter_map(|&v| f.values.get(v).map(|d| (v.to_string(), d.ty.clone()))).collect();
        let inner = ctx.device.load(&ctx.session, &ctx.cache, program.verified_module(), name, strategy, source_key)?;
        Ok(Kernel::on(ctx, &Arc::new(LoadedKernel { inner, name: name.to_owned(), params })))
    }

    /// `loaded` on `ctx`, the context it was loaded on.
    pub(crate) fn on(ctx: &Arc<Shared>, loaded: &Arc<LoadedKernel>) -> Kernel {
        Kernel { ctx: Arc::clone(ctx), loaded: Arc::clone(loaded) }
    }

    /// The kernel without its context.
    pub(crate) fn loaded(&self) -> &Arc<LoadedKernel> {
        &self.loaded
    }

    /// The kernel's name (without `@`).
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let p = relok::Program::parse("kernel @noop() {\n    return\n}\n")?;
    /// assert_eq!(ctx.kernel(&p, "noop")?.name(), "noop");
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.loaded.name
    }

    /// The kernel's signature in the text format's syntax.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let p = relok::Program::parse("kernel @noop() {\n    return\n}\n")?;
    /// assert_eq!(ctx.kernel(&p, "noop")?.signature(), "@noop()");
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn signature(&self) -> String {
        let params: Vec<String> = self.loaded.params.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        format!("@{}({})", self.loaded.name, params.join(", "))
    }

    /// Registers per thread of the kernel's machine code, where the device
    /// reports them: on cuda the driver's count
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`, what `ptxas -v` prints), which with
    /// the block size bounds how many threads a multiprocessor runs at
    /// once; `None` on the cpu device (an interpreter), on wgpu (no API
    /// reports them) and where the driver cannot say.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let p = relok::Program::parse("kernel @k(v0: ptr<global, u32>) {\n    v1: u32 = thread_id.x\n    store v0[v1], v1\n    return\n}\n")?;
    /// let k = ctx.kernel(&p, "k")?;
    /// assert_eq!(k.registers(), None); // an interpreter has none; on cuda: Some(count)
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn registers(&self) -> Option<u32> {
        self.ctx.device.registers(&self.loaded.inner).ok().flatten()
    }

    /// Checks `args` against the signature (see the module docs) and
    /// enqueues the launch on `stream` without waiting: its failures are
    /// reported at the stream's next synchronisation.
    ///
    /// ```
    /// let ctx = relok::Context::cpu();
    /// let p = relok::Program::parse("kernel @k(v0: u32, v1: ptr<global, u32>) {\n    return\n}\n")?;
    /// let k = ctx.kernel(&p, "k")?;
    /// let (s, b) = (ctx.stream(), ctx.zeros::<u32>(1)?);
    /// k.launch(&s, relok::Grid::new(1, 1), (1u32, &b))?;
    /// assert!(matches!(k.launch(&s, relok::Grid::new(1, 1), (1u32,)), Err(relok::Error::ArgCount { .. })));
    /// assert!(matches!(k.launch(&s, relok::Grid::new(1, 1), (1.0f32, &b)), Err(relok::Error::ArgType { index: 0, .. })));
    /// assert!(matches!(k.launch(&s, relok::Grid::new(0, 1), (1u32, &b)), Err(relok::Error::Geometry { .. })));
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn launch<'a>(&self, stream: &Stream, grid: Grid, args: impl Args<'a>) -> Result<()> {
        let stream_ctx = &stream.inner.ctx;
        if !Arc::ptr_eq(stream_ctx, &self.ctx) {
            return Err(self.foreign("the stream", stream_ctx));
        }
        let args = args.into_args();
        if args.len() != self.loaded.params.len() {
            return Err(Error::ArgCount {
                kernel: self.loaded.name.clone(),
                expected: self.loaded.params.len(),
                found: args.len(),
            });
        }
        let mut values = Vec::with_capacity(args.len());
        let mut buffers = Vec::new();
        for (index, (arg, (param, ty))) in args.into_iter().zip(&self.loaded.params).enumerate() {
            let place = || format!("argument {index} ({param}) of @{}", self.loaded.name);
            values.push(match (ty, arg.0) {
                (Type::Scalar(s), ArgKind::Scalar { ty: t, bits }) if *s == t => KernelArg::Scalar { ty: t, bits },
                (Type::Scalar(Scalar::Word), ArgKind::Symbol { ctx, word, .. }) => {
                    if !Arc::ptr_eq(ctx, &self.ctx) {
                        return Err(self.foreign(&place(), ctx));
                    }
                    KernelArg::word(word)
                }
                (Type::Ptr(AddrSpace::Global | AddrSpace::Const, pointee), ArgKind::Buffer { mem, offset, elem })
                    if elem.is(pointee) =>
                {
                    if !Arc::ptr_eq(&mem.ctx, &self.ctx) {
                        return Err(self.foreign(&place(), &mem.ctx));
                    }
                    buffers.push(Arc::clone(mem));
                    KernelArg::Ptr(mem.ptr.offset(offset?))
                }
                (_, other) => {
                    return Err(Error::ArgType {
                        kernel: self.loaded.name.clone(),
                        index,
                        param: param.clone(),
                        expected: ty.to_string(),
                        found: Arg(other).describe(),
                    });
                }
            });
        }
        let device_stream = stream.inner.stream.as_ref().map_err(|e| Error::StreamUnavailable(e.clone()))?;
        // Held from the enqueue to the push: a synchronisation takes the
        // pending launches either before this one reached the device or
        // with it, never the launch without what it must keep alive.
        let mut pending = lock(&stream.inner.pending);
        // Noted before the enqueue: a download on another thread from then
        // on synchronises this stream, which waits for this lock, so it
        // never reads while this launch may write (a failed enqueue leaves
        // only an extra synchronisation).
        for b in &buffers {
            b.used_by(&stream.inner);
        }
        self.ctx.device.enqueue(device_stream, &self.loaded.inner, &grid.config(), &values, 0)?;
        pending.push(Pending { _kernel: self.loaded.inner.clone(), _buffers: buffers });
        Ok(())
    }

    fn foreign(&self, what: &str, owner: &Shared) -> Error {
        Error::WrongContext { what: what.to_owned(), owner: owner.name.clone(), here: self.ctx.name.clone() }
    }
}

/// A symbol of one context: passed for a `word` parameter as the symbol's
/// word, equal to what the kernel's `ref :name` resolves to.
///
/// ```
/// let ctx = relok::Context::cpu();
/// let foo = ctx.symbol("foo");
/// assert_eq!(foo.name(), "foo");
/// ```
#[derive(Debug, Clone)]
pub struct Symbol {
    ctx: Arc<Shared>,
    name: Arc<str>,
    word: u64,
}

impl Symbol {
    pub(crate) fn new(ctx: &Arc<Shared>, name: &str) -> Symbol {
        let target = ctx.session.symbol(name);
        // A symbol's word is its interned name's address: resolving it
        // touches no device memory and cannot fail.
        let word = ctx.session.resolve(&ctx.device, &target).unwrap_or_default();
        Symbol { ctx: Arc::clone(ctx), name: name.into(), word }
    }

    /// The symbol's name.
    ///
    /// ```
    /// assert_eq!(relok::Context::cpu().symbol("bar").name(), "bar");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One launch argument (see the module docs); made from a value with
/// [`IntoArg`] or [`Arg::from`].
///
/// ```
/// let ctx = relok::Context::cpu();
/// let b = ctx.zeros::<u32>(4)?;
/// let args: Vec<relok::Arg> = vec![4u32.into(), (&b).into()];
/// assert_eq!(args.len(), 2);
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug)]
pub struct Arg<'a>(ArgKind<'a>);

#[derive(Debug)]
enum ArgKind<'a> {
    Scalar { ty: Scalar, bits: u64 },
    Symbol { ctx: &'a Arc<Shared>, word: u64, name: &'a str },
    Buffer { mem: &'a Arc<Allocation>, offset: std::result::Result<u64, Error>, elem: ElementType },
}

impl Arg<'_> {
    /// As [`Error::ArgType`]'s `found` says it: `an f64`, `a u32`,
    /// `a Buffer<i32>`, `the symbol :name`.
    fn describe(&self) -> String {
        match &self.0 {
            ArgKind::Scalar { ty, .. } => {
                let name = ty.to_string();
                let article = if name.starts_with(['i', 'f']) { "an" } else { "a" };
                format!("{article} {name}")
            }
            ArgKind::Symbol { name, .. } => format!("the symbol :{name}"),
            ArgKind::Buffer { elem, .. } => format!("a Buffer<{elem}>"),
        }
    }
}

/// A value that is one launch argument.
///
/// ```
/// use relok::IntoArg;
/// let arg = 3i32.into_arg();
/// # let _ = arg;
/// ```
pub trait IntoArg<'a> {
    /// The argument.
    ///
    /// ```
    /// use relok::IntoArg;
    /// let ctx = relok::Context::cpu();
    /// let (b, s) = (ctx.upload(&[1u32])?, ctx.symbol("s"));
    /// let args = [7u32.into_arg(), (&b).into_arg(), (&s).into_arg()];
    /// assert_eq!(args.len(), 3);
    /// # Ok::<(), relok::Error>(())
    /// ```
    fn into_arg(self) -> Arg<'a>;
}

impl<'a, T: ScalarArg> IntoArg<'a> for T {
    fn into_arg(self) -> Arg<'a> {
        Arg(ArgKind::Scalar { ty: T::SCALAR, bits: self.bits() })
    }
}

impl<'a> IntoArg<'a> for &'a Symbol {
    fn into_arg(self) -> Arg<'a> {
        Arg(ArgKind::Symbol { ctx: &self.ctx, word: self.word, name: &self.name })
    }
}

impl<'a, T: Element> IntoArg<'a> for &'a Buffer<T> {
    fn into_arg(self) -> Arg<'a> {
        Arg(ArgKind::Buffer { mem: &self.mem, offset: Ok(0), elem: T::TYPE })
    }
}

impl<'a, T: Element> IntoArg<'a> for &'a mut Buffer<T> {
    fn into_arg(self) -> Arg<'a> {
        Arg(ArgKind::Buffer { mem: &self.mem, offset: Ok(0), elem: T::TYPE })
    }
}

impl<'a, T: Element> IntoArg<'a> for BufferSlice<'a, T> {
    fn into_arg(self) -> Arg<'a> {
        Arg(ArgKind::Buffer { mem: &self.buffer.mem, offset: self.checked_offset(), elem: T::TYPE })
    }
}

impl<'a> IntoArg<'a> for Arg<'a> {
    fn into_arg(self) -> Arg<'a> {
        self
    }
}

impl<'a, T: ScalarArg> From<T> for Arg<'a> {
    fn from(x: T) -> Arg<'a> {
        x.into_arg()
    }
}

impl<'a> From<&'a Symbol> for Arg<'a> {
    fn from(x: &'a Symbol) -> Arg<'a> {
        x.into_arg()
    }
}

impl<'a, T: Element> From<&'a Buffer<T>> for Arg<'a> {
    fn from(x: &'a Buffer<T>) -> Arg<'a> {
        x.into_arg()
    }
}

impl<'a, T: Element> From<&'a mut Buffer<T>> for Arg<'a> {
    fn from(x: &'a mut Buffer<T>) -> Arg<'a> {
        x.into_arg()
    }
}

impl<'a, T: Element> From<BufferSlice<'a, T>> for Arg<'a> {
    fn from(x: BufferSlice<'a, T>) -> Arg<'a> {
        x.into_arg()
    }
}

/// A launch's arguments: a tuple of up to 12 [`IntoArg`] values, `()`, or
/// a `Vec<Arg>` / `[Arg; N]` built at run time.
///
/// ```
/// use relok::Args;
/// assert_eq!((1u32, 2.0f32).into_args().len(), 2);
/// assert_eq!(().into_args().len(), 0);
/// ```
pub trait Args<'a> {
    /// The arguments, in order.
    ///
    /// ```
    /// use relok::Args;
    /// let ctx = relok::Context::cpu();
    /// let b = ctx.zeros::<f32>(4)?;
    /// assert_eq!((4u32, &b).into_args().len(), 2);
    /// # Ok::<(), relok::Error>(())
    /// ```
    fn into_args(self) -> Vec<Arg<'a>>;
}

impl<'a> Args<'a> for Vec<Arg<'a>> {
    fn into_args(self) -> Vec<Arg<'a>> {
        self
    }
}

impl<'a, const N: usize> Args<'a> for [Arg<'a>; N] {
    fn into_args(self) -> Vec<Arg<'a>> {
        self.into()
    }
}

impl<'a> Args<'a> for () {
    fn into_args(self) -> Vec<Arg<'a>> {
        Vec::new()
    }
}

macro_rules! tuple_args {
    ($($name:ident)+) => {
        impl<'a, $($name: IntoArg<'a>),+> Args<'a> for ($($name,)+) {
            #[expect(non_snake_case, reason = "the type parameters name the tuple's fields")]
            fn into_args(self) -> Vec<Arg<'a>> {
                let ($($name,)+) = self;
                vec![$($name.into_arg()),+]
            }
        }
    };
}

tuple_args!(A);
tuple_args!(A B);
tuple_args!(A B C);
tuple_args!(A B C D);
tuple_args!(A B C D E);
tuple_args!(A B C D E F);
tuple_args!(A B C D E F G);
tuple_args!(A B C D E F G H);
tuple_args!(A B C D E F G H I);
tuple_args!(A B C D E F G H I J);
tuple_args!(A B C D E F G H I J K);
tuple_args!(A B C D E F G H I J K L);
