//! relok's kernel IR: types, a builder, a text format (`.rk`) that prints and
//! parses the IR exactly, and a two-phase verifier.
//!
//! See `docs/ir.md` for the text grammar and the semantics of every
//! operation, and [`ir`] for the data model and its invariants.

pub mod builder;
pub mod entity;
pub mod eval;
pub mod ir;
pub mod types;
pub mod typing;

pub use entity::{Arena, EntityRef};
pub use ir::*;
pub use types::{AddrSpace, LayoutError, Scalar, Type};
pub mod text;
pub mod verify;

pub use text::{ParseError, parse, parse_type, print};
pub use verify::{ModuleInfo, VerifiedModule, VerifyErrors, verify};
