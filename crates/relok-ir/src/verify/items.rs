//! Module-level rules: names of functions and constants, constant types and
//! initializers; and the type helpers the other phases share.

use super::error::{NameKind, Reporter, VerifyErrorKind as K};
use crate::ir::{ConstDecl, ConstInit, Module};
use crate::types::{LayoutError, Scalar, Type};
use crate::typing::literal_fits;
use std::collections::HashSet;
use std::fmt::Write as _;

/// Whether `s` is `[A-Za-z_][A-Za-z0-9_]*`.
pub(super) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `ty` and every type inside it (pointees included) has a layout;
/// the error names the innermost type without one.
pub(super) fn well_formed(ty: &Type) -> Result<(), (&Type, LayoutError)> {
    match ty {
        Type::Scalar(_) => return Ok(()),
        Type::Ptr(_, p) => return well_formed(p),
        Type::Array(e, _) => well_formed(e)?,
        Type::Struct(fields) => fields.iter().try_for_each(well_formed)?,
    }
    ty.size().map(|_| ()).map_err(|e| (ty, e))
}

/// Whether `ty` contains a pointer or a `word`.
fn has_ptr_or_word(ty: &Type) -> bool {
    match ty {
        Type::Scalar(s) => *s == Scalar::Word,
        Type::Ptr(..) => true,
        Type::Array(e, _) => has_ptr_or_word(e),
        Type::Struct(fields) => fields.iter().any(has_ptr_or_word),
    }
}

/// Function and constant names: identifiers, unique in one namespace.
pub(super) fn names(m: &Module, errors: &mut Vec<super::VerifyError>) {
    let mut seen = HashSet::new();
    let consts = m.consts.values().map(|c| (NameKind::Constant, c.name.as_str(), c.span));
    let funcs = m.funcs.values().map(|f| (NameKind::Function, f.name.as_str(), f.span));
    for (kind, name, span) in consts.chain(funcs) {
        let mut r = Reporter { errors: &mut *errors, func: Some(name) };
        if !is_ident(name) {
            r.report(span, None, K::BadName { kind, name: name.to_owned() });
        } else if !seen.insert(name) {
            r.report(span, None, K::DuplicateName { kind, name: name.to_owned() });
        }
    }
}

/// A constant's type and initializer.
pub(super) fn constant(c: &ConstDecl, r: &mut Reporter<'_>) {
    if has_ptr_or_word(&c.ty) {
        r.report(c.span, None, K::ConstTypeNotData(Box::new(c.ty.clone())));
        return;
    }
    if let Err((ty, source)) = well_formed(&c.ty) {
        r.report(c.span, None, K::Layout { ty: Box::new(ty.clone()), source });
    }
    let mut path = String::new();
    if let Some(kind) = init_shape(&c.init, &c.ty, &mut path) {
        r.report(c.span, None, kind);
    }
}

/// The first place where `init` is not shaped like `ty` (a data type).
fn init_shape(init: &ConstInit, ty: &Type, path: &mut String) -> Option<K> {
    let shape_error = |path: &str| K::ConstInitShape { path: path.into(), expected: Box::new(ty.clone()) };
    match (init, ty) {
        (ConstInit::Scalar(bits), Type::Scalar(s)) => {
            (!literal_fits(*s, *bits)).then(|| K::ConstLiteral { path: path.as_str().into(), bits: *bits, ty: *s })
        }
        (ConstInit::Array(items), Type::Array(e, n)) if usize::try_from(*n).is_ok_and(|n| n == items.len()) => {
            nested(items.iter().map(|i| (i, &**e)), path, |p, k| write!(p, "[{k}]"))
        }
        (ConstInit::Struct(items), Type::Struct(fields)) if items.len() == fields.len() => {
            nested(items.iter().zip(fields), path, |p, k| write!(p, ".{k}"))
        }
        _ => Some(shape_error(path)),
    }
}

fn nested<'t>(
    items: impl Iterator<Item = (&'t ConstInit, &'t Type)>,
    path: &mut String,
    step: impl Fn(&mut String, usize) -> std::fmt::Result,
) -> Option<K> {
    for (k, (init, ty)) in items.enumerate() {
        let len = path.len();
        // Writing to a String cannot fail.
        let _ = step(path, k);
        let e = init_shape(init, ty, path);
        path.truncate(len);
        if e.is_some() {
            return e;
        }
    }
    None
}
