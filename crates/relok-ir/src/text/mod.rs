//! The text format (`.rk`): a printer and a parser that agree exactly.
//!
//! `parse(print(m)) == m` for every module `m` whose values are numbered in
//! definition order (the builder's and the parser's numbering), and
//! `print(parse(t)) == t` for every canonical text `t` (what `relok fmt`
//! writes). The grammar, the lexical rules and the canonical form are in
//! `docs/ir.md`.
//!
//! Literals are typed by where they appear: the declared result type of a
//! `const` operation, or the declared type of a constant at that position of
//! its initializer. The printer writes a literal from its bits: `true` /
//! `false`; integers in signed or unsigned decimal by their type; finite
//! floats in Rust's shortest round-trip form (`1.0`, `-0.0`, `1e-10`),
//! `inf`, `-inf`, `nan` for the canonical quiet NaN and `0x` with the exact
//! width's hex digits for any other NaN. The parser accepts `0x` bit
//! patterns for every scalar type.
//!
//! The parser never panics and never recurses deeper than 64 nested blocks
//! or types; every failure is a [`ParseError`] at a 1-based `line:col`
//! (columns count characters).

mod lexer;
mod parser;
mod printer;
#[cfg(test)]
mod testgen;
#[cfg(test)]
mod tests;

use crate::ir::{Module, Span};
use crate::types::{Scalar, Type};

pub use parser::MAX_DEPTH;

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
    printer::print_module(module)
}

/// Parses one literal of scalar type `ty`: the whole of `src`, written as in
/// a `const` operation (`-3`, `2.5`, `true`, `nan`, `0x3f800000`). Returns
/// its bits, zero-extended as in [`crate::Op::Const`]. `word` has no literals
/// other than hex bit patterns.
pub fn parse_literal(src: &str, ty: Scalar) -> Result<u64, String> {
    parser::parse_scalar_literal(src, ty).map_err(|e| e.message)
}

/// The canonical text of a literal of scalar type `ty` with these bits.
pub fn format_literal(ty: Scalar, bits: u64) -> String {
    printer::literal_text(&Type::Scalar(ty), bits)
}

/// Parses a type written as in the text format (`ptr<global, f32>`): the
/// whole of `src`. `parse_type(&ty.to_string()) == Ok(ty)`.
pub fn parse_type(src: &str) -> Result<Type, String> {
    parser::parse_type(src).map_err(|e| e.message)
}

/// Parses a module from text.
pub fn parse(src: &str) -> Result<Module, ParseError> {
    parser::parse_module(src)
}
