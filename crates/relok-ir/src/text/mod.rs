//! The text format (`.rk`): a printer and a parser that agree exactly.
//!
//! `parse(print(m)) == m` for every module `m` whose values are numbered in
//! definition order (the builder's and the parser's numbering), and
//! `print(parse(t)) == t` for every canonical text `t` (what `relok fmt`
//! writes). The grammar is in `docs/ir.md`.

use crate::ir::{Module, Span};

/// A parse failure at a position in the text.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{span}: {message}")]
pub struct ParseError {
    /// Where.
    pub span: Span,
    /// What is wrong, in words.
    pub message: String,
}

/// Prints `module` in canonical text.
pub fn print(module: &Module) -> String {
    let _ = module;
    String::new()
}

/// Parses a module from text.
pub fn parse(src: &str) -> Result<Module, ParseError> {
    let _ = src;
    Err(ParseError { span: Span::new(1, 1), message: "the parser is not written yet".into() })
}
