//! Module-level rules: names of functions and constants, constant types and
//! initializers; and the type helpers the other phases share.

use super::error::{NameKind, Reporter, VerifyErrorKind as K};
use crate::ir::{ConstDecl, ConstInit, HostRef, Module, Stage, Strategy};
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

/// Whether `ty` contains a pointer.
fn has_ptr(ty: &Type) -> bool {
    match ty {
        Type::Scalar(_) => false,
        Type::Ptr(..) => true,
        Type::Array(e, _) => has_ptr(e),
        Type::Struct(fields) => fields.iter().any(has_ptr),
    }
}

/// The problem with the names inside a host reference, if any: symbols are
/// `[A-Za-z0-9_.]+`, globals `[A-Za-z0-9_]+` (strings and constants have
/// no name rules here).
pub(super) fn host_ref_name(r: &HostRef) -> Option<K> {
    let (kind, name, ok): (_, &String, fn(char) -> bool) = match r {
        HostRef::Symbol(name) => ("symbol", name, |c| c.is_ascii_alphanumeric() || c == '_' || c == '.'),
        HostRef::Global { name, .. } => ("global", name, |c| c.is_ascii_alphanumeric() || c == '_'),
        HostRef::Value(_) | HostRef::Str(_) => return None,
    };
    (name.is_empty() || !name.chars().all(ok)).then(|| K::BadHostName { kind, name: name.as_str().into() })
}

/// The problem with a `patch` name, if any: `[A-Za-z0-9_$]+`.
pub(super) fn patch_name(name: &str) -> Option<K> {
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    (!ok).then(|| K::BadHostName { kind: "patch", name: name.into() })
}

/// Function and constant names: identifiers, unique in one namespace.
pub(super) fn names(m: &Module, errors: &mut Vec<super::VerifyError>) {
    let mut seen = HashSet::new();
    let consts = m.consts.values().map(|c| (NameKind::Constant, c.name.as_str(), c.span));
    let funcs = m.funcs.values().map(|f| (NameKind::Function, f.name.as_str(), f.span));
    // Under `patch`, constants with interior sites carry their relocation
    // record's name, which may contain `$`.
    let record_names = m.stage == Stage::Lowered(Strategy::Patch);
    for (kind, name, span) in consts.chain(funcs) {
        let mut r = Reporter { errors: &mut *errors, func: Some(name) };
        let ok = is_ident(name) || (record_names && kind == NameKind::Constant && is_ident(&name.replace('$', "_")));
        if !ok {
            r.report(span, None, K::BadName { kind, name: name.to_owned() });
        } else if !seen.insert(name) {
            r.report(span, None, K::DuplicateName { kind, name: name.to_owned() });
        }
    }
}

/// A constant's type and initializer.
pub(super) fn constant(m: &Module, c: &ConstDecl, r: &mut Reporter<'_>) {
    if has_ptr(&c.ty) {
        r.report(c.span, None, K::ConstTypeNotData(Box::new(c.ty.clone())));
        return;
    }
    if let Err((ty, source)) = well_formed(&c.ty) {
        r.report(c.span, None, K::Layout { ty: Box::new(ty.clone()), source });
    }
    let mut path = String::new();
    let mut cx = Init { m, errors: Vec::new() };
    cx.check(&c.init, &c.ty, &mut path);
    for kind in cx.errors {
        r.report(c.span, None, kind);
    }
}

/// Checks an initializer against its type and the module's stage.
struct Init<'a> {
    m: &'a Module,
    errors: Vec<K>,
}

impl Init<'_> {
    /// Reports the first place where `init` is not shaped like `ty`, and
    /// every leaf that breaks the rules of words and `ref`s.
    fn check(&mut self, init: &ConstInit, ty: &Type, path: &mut String) -> bool {
        let here = |path: &String| -> Box<str> { path.as_str().into() };
        match (init, ty) {
            (ConstInit::Scalar(_), Type::Scalar(Scalar::Word)) => {
                match self.m.stage {
                    Stage::Source => self.errors.push(K::ConstWordLiteral { path: here(path) }),
                    Stage::Lowered(Strategy::Table) => self.errors.push(K::ConstWordInTable { path: here(path) }),
                    Stage::Lowered(Strategy::Bake | Strategy::Patch) => {}
                }
                true
            }
            (ConstInit::Scalar(bits), Type::Scalar(s)) => {
                if !literal_fits(*s, *bits) {
                    self.errors.push(K::ConstLiteral { path: here(path), bits: *bits, ty: *s });
                }
                true
            }
            (ConstInit::Ref(r), _) => {
                if let Stage::Lowered(stage) = self.m.stage {
                    self.errors.push(K::RefAfterLowering { stage, path: Some(here(path)) });
                } else if *ty != Type::Scalar(Scalar::Word) {
                    self.errors.push(K::ConstRefNotWord { path: here(path), ty: Box::new(ty.clone()) });
                }
                if let Some(k) = host_ref_name(r) {
                    self.errors.push(k);
                }
                if let HostRef::Value(c) = r {
                    match self.m.consts.get(*c) {
                        None => self.errors.push(K::DanglingConst(*c)),
                        Some(d) if crate::typing::contains_word_or_ptr(&d.ty) => {
                            self.errors.push(K::RefValueNotData { path: here(path), name: d.name.as_str().into() });
                        }
                        Some(_) => {}
                    }
                }
                true
            }
            (ConstInit::Array(items), Type::Array(e, n)) if usize::try_from(*n).is_ok_and(|n| n == items.len()) => {
                self.nested(items.iter().map(|i| (i, &**e)), path, |p, k| write!(p, "[{k}]"))
            }
            (ConstInit::Struct(items), Type::Struct(fields)) if items.len() == fields.len() => {
                self.nested(items.iter().zip(fields), path, |p, k| write!(p, ".{k}"))
            }
            _ => {
                self.errors.push(K::ConstInitShape { path: here(path), expected: Box::new(ty.clone()) });
                false
            }
        }
    }

    /// Checks the items in order; stops after the first shape error.
    fn nested<'t>(
        &mut self,
        items: impl Iterator<Item = (&'t ConstInit, &'t Type)>,
        path: &mut String,
        step: impl Fn(&mut String, usize) -> std::fmt::Result,
    ) -> bool {
        for (k, (init, ty)) in items.enumerate() {
            let len = path.len();
            // Writing to a String cannot fail.
            let _ = step(path, k);
            let ok = self.check(init, ty, path);
            path.truncate(len);
            if !ok {
                return false;
            }
        }
        true
    }
}
