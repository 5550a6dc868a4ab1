//! [`Program`]: kernel IR a context can load kernels from — parsed from
//! the text format (`.rk`) and verified once, with errors that name the
//! file, line and column. [`Source`]: kernel text known when the program
//! is built, parsed only when a kernel of it must be compiled.
//!
//! Both keep their text, so a context looks a kernel up by its *source
//! key* (a hash of the text and the kernel's name) before it computes the
//! artifact's key from the IR: with a warm cache, loading a kernel from a
//! `Source` never parses, verifies or links anything (see the runtime's
//! `cache` module on the two levels of keys).

pub(crate) mod rust;

use crate::error::{Error, Result};
use relok_ir::{FuncKind, Module, VerifiedModule};
use std::sync::{Arc, OnceLock};

/// A verified module of kernels and device functions.
///
/// Build it from text ([`Program::parse`], [`Program::from_file`]) or from
/// IR made with `relok_ir`'s builder ([`Program::from_module`]); load its
/// kernels with [`crate::Context::kernel`]. Verification runs once, here.
///
/// ```
/// let program = relok::Program::parse(
///     "kernel @fill(v0: ptr<global, u32>) {\n    v1: u32 = thread_id.x\n    store v0[v1], v1\n    return\n}\n",
/// )?;
/// assert_eq!(program.kernels(), ["fill"]);
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Program {
    module: VerifiedModule,
    file: String,
    /// The text it was parsed from (none for a module built in memory).
    text: Option<Arc<str>>,
    /// What a Rust kernel's program reads from the host (none for a
    /// parsed one): delivered whenever one of its kernels is loaded.
    host: rust::HostUse,
}

impl Program {
    /// Parses and verifies kernel text (errors name the file `<text>`).
    ///
    /// ```
    /// let err = relok::Program::parse("kernel @k(v0: u32) {\n    v1: f32 = add v0, v0\n    return\n}\n").unwrap_err();
    /// assert!(matches!(err, relok::Error::Verify { .. }));
    /// assert!(err.to_string().starts_with("<text>:2:5: error:"), "{err}");
    /// ```
    pub fn parse(text: &str) -> Result<Program> {
        Program::parse_named("<text>", text)
    }

    /// Parses and verifies kernel text, naming it `file` in errors.
    ///
    /// ```
    /// let err = relok::Program::parse_named("app.rk", "kernel @k( {").unwrap_err();
    /// assert!(matches!(err, relok::Error::Parse { ref file, line: 1, .. } if file == "app.rk"), "{err}");
    /// ```
    pub fn parse_named(file: &str, text: &str) -> Result<Program> {
        let module = relok_ir::parse(text).map_err(|e| Error::Parse {
            file: file.to_owned(),
            line: e.span.line,
            col: e.span.col,
            message: e.message,
        })?;
        Ok(Program { text: Some(Arc::from(text)), ..Program::verified(module, file)? })
    }

    /// Reads, parses and verifies a `.rk` file.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("relok-doc-{}.rk", std::process::id()));
    /// std::fs::write(&path, "kernel @k() {\n    return\n}\n").unwrap();
    /// let program = relok::Program::from_file(&path)?;
    /// assert_eq!(program.kernels(), ["k"]);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Program> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: name.clone(), source })?;
        Program::parse_named(&name, &text)
    }

    /// Verifies a module built in memory (errors name the file `<module>`).
    ///
    /// ```
    /// let m = relok_ir::parse("kernel @k() {\n    return\n}\n").unwrap();
    /// assert_eq!(relok::Program::from_module(m)?.kernels(), ["k"]);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn from_module(module: Module) -> Result<Program> {
        Program::verified(module, "<module>")
    }

    fn verified(module: Module, file: &str) -> Result<Program> {
        let module = VerifiedModule::new(module).map_err(|errors| Error::Verify {
            file: file.to_owned(),
            rendered: errors.render(file),
            errors,
        })?;
        Ok(Program { module, file: file.to_owned(), text: None, host: rust::HostUse::default() })
    }

    /// The verified module with the verifier's facts: the proof the
    /// compiler takes (`relok_compiler::stencil::Stencil::new`), for a
    /// program that drives the lower crates itself.
    ///
    /// ```
    /// let p = relok::Program::parse("kernel @k() {\n    return\n}\n")?;
    /// assert_eq!(p.verified_module().info().functions().len(), 1);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn verified_module(&self) -> &VerifiedModule {
        &self.module
    }

    /// A Rust kernel's program, with what it reads from the host.
    pub(crate) fn with_host(self, host: rust::HostUse) -> Program {
        Program { host, ..self }
    }

    /// What its kernels read from the host (see [`Program::with_host`]).
    pub(crate) fn host(&self) -> &rust::HostUse {
        &self.host
    }

    /// The names of the program's kernels, in order.
    ///
    /// ```
    /// let p = relok::Program::parse("kernel @a() {\n    return\n}\nkernel @b() {\n    return\n}\n")?;
    /// assert_eq!(p.kernels(), ["a", "b"]);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn kernels(&self) -> Vec<&str> {
        self.module.funcs.iter().filter(|(_, f)| f.kind == FuncKind::Kernel).map(|(_, f)| f.name.as_str()).collect()
    }

    /// The verified module.
    ///
    /// ```
    /// let p = relok::Program::parse("kernel @k() {\n    return\n}\n")?;
    /// assert_eq!(p.module().funcs.len(), 1);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn module(&self) -> &Module {
        self.module.module()
    }

    /// The program in the text format (`.rk`): what a Rust kernel's
    /// macro built, for reading or for `relok lower` / `relok compile`.
    ///
    /// ```
    /// #[relok::kernel]
    /// fn fill(x: &mut [u32]) {
    ///     let i = relok::global_id_x();
    ///     if i < x.len() {
    ///         x[i] = 7;
    ///     }
    /// }
    ///
    /// fn main() -> Result<(), relok::Error> {
    ///     let text = fill::program()?.to_text();
    ///     assert!(text.contains("kernel @fill(v0: ptr<global, u32>, v1: u32 len(v0))"), "{text}");
    ///     assert_eq!(relok::Program::parse(&text)?.module(), fill::program()?.module());
    ///     Ok(())
    /// }
    /// ```
    pub fn to_text(&self) -> String {
        relok_ir::print(&self.module)
    }

    /// The file name errors use.
    ///
    /// ```
    /// assert_eq!(relok::Program::parse("")?.file(), "<text>");
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The text it was parsed from (none for [`Program::from_module`]).
    pub(crate) fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// Kernel text known when the program is built, typically
/// `include_str!` of a `.rk` file in a `static`: a context loads its
/// kernels by their source key first and parses and verifies the text only
/// when a kernel must be compiled — a warm start, or a program shipping a
/// bundle (`relok precompile`), never touches the compiler. Errors in the
/// text therefore surface from [`crate::Context::kernel`] (or at once from
/// [`Source::program`]), naming the file, line and column.
///
/// ```
/// static FILL: relok::Source = relok::Source::new(
///     "fill.rk",
///     "kernel @fill(v0: ptr<global, u32>) {\n    v1: u32 = thread_id.x\n    store v0[v1], v1\n    return\n}\n",
/// );
/// let ctx = relok::Context::cpu();
/// let fill = ctx.kernel(&FILL, "fill")?;
/// let mut out = ctx.zeros::<u32>(4)?;
/// let s = ctx.stream();
/// fill.launch(&s, relok::Grid::new(1, 4), (&mut out,))?;
/// s.synchronize()?;
/// assert_eq!(out.download()?, [0, 1, 2, 3]);
///
/// static BAD: relok::Source = relok::Source::new("bad.rk", "kernel @k( {");
/// let err = ctx.kernel(&BAD, "k").unwrap_err();
/// assert!(matches!(err, relok::Error::Parse { ref file, line: 1, .. } if file == "bad.rk"), "{err}");
/// # Ok::<(), relok::Error>(())
/// ```
#[derive(Debug)]
pub struct Source {
    file: &'static str,
    text: &'static str,
    program: OnceLock<Program>,
}

impl Source {
    /// The text `text`, named `file` in errors. Nothing is checked yet: a
    /// `const fn`, for a `static` (typically of `include_str!`).
    ///
    /// ```
    /// static NOOP: relok::Source = relok::Source::new("noop.rk", "kernel @noop() {\n    return\n}\n");
    /// assert_eq!(relok::Context::cpu().kernel(&NOOP, "noop")?.name(), "noop");
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub const fn new(file: &'static str, text: &'static str) -> Source {
        Source { file, text, program: OnceLock::new() }
    }

    /// The text parsed and verified (once; later calls return the same
    /// program).
    ///
    /// ```
    /// static K: relok::Source = relok::Source::new("k.rk", "kernel @k() {\n    return\n}\n");
    /// assert_eq!(K.program()?.kernels(), ["k"]);
    /// # Ok::<(), relok::Error>(())
    /// ```
    pub fn program(&self) -> Result<&Program> {
        if let Some(p) = self.program.get() {
            return Ok(p);
        }
        let parsed = Program::parse_named(self.file, self.text)?;
        Ok(self.program.get_or_init(|| parsed))
    }

    /// The file name errors use.
    ///
    /// ```
    /// assert_eq!(relok::Source::new("k.rk", "").file(), "k.rk");
    /// ```
    pub fn file(&self) -> &str {
        self.file
    }
}

/// Where [`crate::Context::kernel`] takes kernels from: a [`Program`] or a
/// [`Source`] (or a reference, `Box` or `Arc` of one). Sealed.
///
/// ```
/// fn load(ctx: &relok::Context, from: &impl relok::KernelSource) -> relok::Result<relok::Kernel> {
///     ctx.kernel(from, "k")
/// }
/// let ctx = relok::Context::cpu();
/// let program = std::sync::Arc::new(relok::Program::parse("kernel @k() {\n    return\n}\n")?);
/// static K: relok::Source = relok::Source::new("k.rk", "kernel @k() {\n    return\n}\n");
/// assert_eq!(load(&ctx, &program)?.name(), load(&ctx, &K)?.name());
/// # Ok::<(), relok::Error>(())
/// ```
pub trait KernelSource: sealed::Sealed {
    /// The text, when known (for the source key).
    #[doc(hidden)]
    fn source_text(&self) -> Option<&str>;
    /// The verified program (parsed now for a [`Source`]).
    #[doc(hidden)]
    fn verified_program(&self) -> Result<&Program>;
}

impl KernelSource for Program {
    fn source_text(&self) -> Option<&str> {
        self.text()
    }
    fn verified_program(&self) -> Result<&Program> {
        Ok(self)
    }
}

impl KernelSource for Source {
    fn source_text(&self) -> Option<&str> {
        Some(self.text)
    }
    fn verified_program(&self) -> Result<&Program> {
        self.program()
    }
}

macro_rules! forward_kernel_source {
    ($($wrapper:ty),*) => {$(
        impl<T: KernelSource + ?Sized> KernelSource for $wrapper {
            fn source_text(&self) -> Option<&str> {
                (**self).source_text()
            }
            fn verified_program(&self) -> Result<&Program> {
                (**self).verified_program()
            }
        }
    )*};
}

forward_kernel_source!(&T, Box<T>, Arc<T>);

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Program {}
    impl Sealed for super::Source {}
    impl<T: Sealed + ?Sized> Sealed for &T {}
    impl<T: Sealed + ?Sized> Sealed for Box<T> {}
    impl<T: Sealed + ?Sized> Sealed for std::sync::Arc<T> {}
}
