//! [`Program`]: kernel IR a context can load kernels from — parsed from
//! the text format (`.rk`) and verified once, with errors that name the
//! file, line and column.

use crate::error::{Error, Result};
use relok_ir::{FuncKind, Module};

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
    module: Module,
    file: String,
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
        Program::verified(module, file)
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
        relok_ir::verify(&module).map_err(|errors| Error::Verify { file: file.to_owned(), rendered: errors.render(file), errors })?;
        Ok(Program { module, file: file.to_owned() })
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
        &self.module
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
    ///     assert!(text.contains("kernel @fill(v0: ptr<global, u32>, v1: u32)"), "{text}");
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
}
