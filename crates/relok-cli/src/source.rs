//! Loading kernel text: read, parse, verify, with errors rendered against
//! the file.

use crate::diag;
use relok_ir::VerifiedModule;
use std::path::Path;

/// A parsed and verified module with the text it came from.
#[derive(Debug)]
pub struct Source {
    /// The file name as given.
    pub file: String,
    /// Its text.
    pub text: String,
    /// The verified module.
    pub module: VerifiedModule,
}

/// A load failure, already rendered for the terminal.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(pub String);

/// Reads `path`, parses and verifies it.
pub fn load(path: &Path) -> Result<Source, LoadError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| LoadError(format!("{file}: error: cannot read: {e}\n")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        LoadError(format!("{file}: error: not UTF-8 text (invalid byte at offset {})\n", e.utf8_error().valid_up_to()))
    })?;
    from_text(file, text)
}

/// Parses and verifies `text`, naming it `file` in errors.
pub fn from_text(file: String, text: String) -> Result<Source, LoadError> {
    let module = relok_ir::parse(&text).map_err(|e| LoadError(diag::render_parse(&file, &text, &e)))?;
    let module = VerifiedModule::new(module).map_err(|e| LoadError(diag::render_verify(&file, &text, &e)))?;
    Ok(Source { file, text, module })
}
