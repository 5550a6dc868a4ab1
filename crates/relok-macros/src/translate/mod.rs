//! Translation of a kernel's body, construct by construct, into staged
//! Rust (see the crate docs). Every `syn` construct either maps to a call
//! on `__cx` (`relok::__kernel::Cx`) or is refused with a spanned error
//! naming what is supported instead ([`Translator::refuse`]).
//!
//! Names in scope ([`Binding`]): a `let` (an immutable `Val<T>`), a `let
//! mut` (a `Var<T>`: reads are `get`, writes `set`), a slice parameter
//! (`Slice<T>`, `mutable` or not) and a shared array. A name not in scope
//! is the user's: a `const` (a literal, content-addressed), a `#[relok::
//! host] static` when indexed (read through its companion, by identity),
//! or a `#[relok::device]` function when called.
//!
//! One file per group of constructs, each an `impl Translator` block
//! (this file holds the shared state, the entry point and the path
//! helpers every group uses):
//!
//! - `mod.rs`: [`Binding`], [`FnKind`], [`Translator`] (scopes, loop and
//!   `unsafe` depth, callees, errors), [`Translator::body`] (the entry
//!   point), [`Translator::refuse`], and the path helpers (`strip_paren`,
//!   `outer`, `staged_item`, `path_str`, `is_relok_path`);
//! - `types.rs`: the scalar types, kernel parameters ([`ParamKind`],
//!   [`param_kind`], [`scalar_type`], [`with_type_params`]) and `as` casts;
//! - `statement.rs`: blocks (with or without a value), statements, `let`
//!   (scalars, `let mut`, tuples, per-thread and shared arrays) and
//!   assignments (`=`, `op=`, element writes);
//! - `branch.rs`: control flow: `if` (statement and value), `while`,
//!   `loop` (statement and value), loop labels, `break` (with a value),
//!   `continue`, `return`;
//! - `iter.rs`: `for` loops and what they run over (ranges, slices and
//!   arrays, `enumerate`, `zip`, `rev`, `step_by`), and `sum`/`product`;
//! - `deferred.rs`: `let y;` assigned later, and the check that it is
//!   assigned before it is read (and once, without `mut`);
//! - `expr.rs`: expressions with a value: literals, names and `const`s,
//!   unary and binary operators, blocks, and the refusals of everything
//!   else;
//! - `index.rs`: indexing: the indexable places (slices, arrays, shared
//!   arrays, host statics), bounds-checked `x[i]` reads and
//!   `*x.get_unchecked(i)`;
//! - `call.rs`: calls and methods: builtins (`global_id_x()`, …), atomics,
//!   `#[relok::device]` functions, and the Rust methods table (`len`,
//!   `abs`, `min`, the math functions);
//! - `data.rs`: structs and tuples as values: literals, fields (`p.x`,
//!   `t.0`, `ps[i].x` loading one field), assignments to fields, and
//!   `let` patterns taking them apart;
//! - `pattern.rs`: `match` on integers and `bool`s (statement and
//!   value), lowered to an `if` chain, its patterns checked by rustc;
//! - `macros.rs`: macros: `panic!`, `throw!`, `unreachable!`, `assert!`,
//!   `assert_eq!`, `assert_ne!`, `sym!`;
//! - `array2d.rs`: 2-D arrays (per-thread and shared), `m[r][c]`, rows;
//! - `subslice.rs`: sub-slices `&a[lo..hi]` (places, `let`s, arguments);
//! - `closure.rs`: closures bound by `let`, inlined at each call;
//! - `borrow.rs`: the borrows of sub-slices, rows, closures and `for`
//!   loops, checked as Rust checks them (conservatively), and what a
//!   closure captures;
//! - `consts.rs`: `T::default()` of a type parameter or a scalar type.

mod array2d;
mod borrow;
mod branch;
mod call;
mod closure;
mod consts;
mod data;
mod deferred;
mod expr;
mod hygiene;
mod index;
mod iter;
mod macros;
mod option;
mod pattern;
mod statement;
mod subslice;
mod types;

use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, quote_spanned};
use std::collections::HashMap;
use syn::Expr;
use syn::spanned::Spanned;

pub use call::is_builtin_name;
pub use data::staged_type;
pub use hygiene::staged_names;
pub use types::{ParamKind, SCALAR_LIST, param_kind, scalar_type, with_type_params};

/// What a name in scope is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Binding {
    Val,
    Var,
    Slice {
        mutable: bool,
    },
    Shared,
    /// A per-thread array (`let mut a = [0; 4];`).
    Array {
        mutable: bool,
    },
    /// An element of `x.iter()`: a `Val` that `*x` reads too.
    Ref,
    /// An element of `x.iter_mut()` (`relok::__kernel::ElemMut`): `*x`
    /// reads it, `*x = v` writes it.
    ElemMut,
    /// A 2-D array (`relok::__kernel::Array2`: per-thread, or shared and
    /// then `mutable`), indexed `m[r][c]`.
    Array2 {
        mutable: bool,
    },
    /// A closure bound by `let` (`mutating`: calling it writes what it
    /// captures, an `FnMut`; `refused`: its definition was, and its calls
    /// are not staged), called `f(x)`.
    Closure {
        mutating: bool,
        refused: bool,
    },
}

/// Kernel or device function (and whether it returns a value).
#[derive(Clone)]
pub enum FnKind {
    /// A kernel.
    Kernel,
    /// A device function, with its result type.
    Device { ret: Option<Box<syn::Type>> },
    /// A generic device function, staged into each caller: no `return`
    /// (its tail is its result).
    Inline { returns: bool },
}

/// The translation state of one function.
pub struct Translator {
    kind: FnKind,
    scopes: Vec<HashMap<String, Binding>>,
    /// The loops around the construct being translated, innermost last.
    loops: Vec<branch::LoopFrame>,
    /// Loops translated so far (names each one's flag and value).
    loop_count: u32,
    /// The `Option`s taken apart so far (`option.rs`: each its own name).
    option_count: u32,
    unsafe_depth: u32,
    /// Device functions called: (path of the definer, local name).
    callees: Vec<(String, syn::Path, syn::Ident)>,
    /// What the body starts with (`mut` parameters' `let mut`s).
    prelude: Tokens,
    /// Errors, each at its span.
    pub errors: Vec<syn::Error>,
    /// The borrows live here (`borrow.rs`).
    borrows: Vec<borrow::Borrow>,
    /// The closures being translated, innermost last, each recording
    /// what it captures (`borrow.rs`).
    captures: Vec<borrow::Capture>,
}

impl Translator {
    /// A translator with the parameters in scope.
    pub fn new(kind: FnKind, params: &[(syn::Ident, ParamKind)]) -> Translator {
        let mut scope = HashMap::new();
        for (n, k) in params {
            let b = match k {
                ParamKind::Scalar(_) | ParamKind::Struct(_) | ParamKind::Symbol => Binding::Val,
                ParamKind::Slice { mutable, .. } => Binding::Slice { mutable: *mutable },
            };
            scope.insert(n.to_string(), b);
        }
        Translator {
            kind,
            scopes: vec![scope],
            loops: Vec::new(),
            loop_count: 0,
            option_count: 0,
            unsafe_depth: 0,
            callees: Vec::new(),
            prelude: Tokens::new(),
            errors: Vec::new(),
            borrows: Vec::new(),
            captures: Vec::new(),
        }
    }

    /// The scalar parameters declared `mut`: each a `let mut` of its
    /// value, as in Rust.
    pub fn mutable_params(&mut self, names: &[syn::Ident]) {
        for n in names {
            if self.lookup(&n.to_string()) == Some(Binding::Val) {
                self.bind(n, Binding::Var);
                self.prelude.extend(quote_spanned!(n.span()=> let #n = __cx.var(#n);));
            }
        }
    }

    /// The call of the single-segment function `name`, if the body makes
    /// one (a device function calling itself).
    pub fn calls(&self, name: &str) -> Option<&syn::Path> {
        self.callees.iter().map(|(_, p, _)| p).find(|p| p.get_ident().is_some_and(|id| id == name))
    }

    /// `path::__relok_define(__m);` for each callee (callees first: a
    /// call finds its callee by path).
    pub fn callee_defs(&self) -> Tokens {
        self.callees
            .iter()
            .map(|(_, path, _)| {
                let define = staged_item(path, "__relok_define");
                quote_spanned!(path.span()=> #define(__m);)
            })
            .collect()
    }

    /// A path written in the function, as seen from where its staged
    /// body is: a kernel's body is one module down ([`outer`]), a device
    /// function's is in its own module.
    fn outer(&self, p: &syn::Path) -> syn::Path {
        match self.kind {
            FnKind::Kernel => outer(p),
            FnKind::Device { .. } | FnKind::Inline { .. } => p.clone(),
        }
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn bind(&mut self, name: &syn::Ident, b: Binding) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), b);
        }
    }

    fn refuse(&mut self, span: Span, message: impl std::fmt::Display) -> Tokens {
        self.errors.push(syn::Error::new(span, message));
        // A block: a statement or a value of any type, never run (the
        // item does not compile).
        quote_spanned!(span=> { ::core::panic!() })
    }

    /// The whole body: statements; a device function's tail is its result.
    pub fn body(&mut self, block: &syn::Block) -> Tokens {
        let prelude = std::mem::take(&mut self.prelude);
        let body = self.body_of(block);
        quote!(#prelude #body)
    }

    fn body_of(&mut self, block: &syn::Block) -> Tokens {
        match self.kind.clone() {
            FnKind::Device { ret: Some(ty) } => {
                let v = self.block_value(block);
                quote!(let __r = #v; __cx.ret_val::<#ty>(__r);)
            }
            FnKind::Inline { returns: true } => self.block_value(block),
            FnKind::Inline { returns: false } => self.block_unit(block),
            _ => {
                let b = self.block_unit(block);
                quote!(#b __cx.ret();)
            }
        }
    }

    fn scoped<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.scopes.push(HashMap::new());
        let r = f(self);
        self.scopes.pop();
        self.end_borrows();
        r
    }
}

fn strip_paren(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_paren(&p.expr),
        Expr::Group(g) => strip_paren(&g.expr),
        e => e,
    }
}

fn is_relok_path(p: &syn::Path) -> bool {
    p.segments.len() == 2 && p.segments[0].ident == "relok"
}

fn path_str(p: &syn::Path) -> String {
    p.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
}

/// A path written in the kernel's module, as seen from the generated
/// module one level down (`super::x` → `super::super::x`, `self::x` →
/// `super::x`).
fn outer(p: &syn::Path) -> syn::Path {
    let mut p = p.clone();
    if let Some(first) = p.segments.first() {
        if first.ident == "super" && p.leading_colon.is_none() {
            p.segments.insert(0, syn::PathSegment::from(syn::Ident::new("super", first.ident.span())));
        } else if first.ident == "self" && p.leading_colon.is_none() {
            let span = first.ident.span();
            if let Some(s) = p.segments.first_mut() {
                s.ident = syn::Ident::new("super", span);
            }
        }
    }
    p
}

/// `a::b::f` → `a::b::f::ITEM` (without `f`'s generic arguments): an
/// item of the staged twin `#[relok::device]` and `#[relok::host]` put
/// under the name in the type namespace.
fn staged_item(p: &syn::Path, item: &str) -> syn::Path {
    let mut p = p.clone();
    let span = p.segments.last().map_or_else(Span::call_site, |s| s.ident.span());
    if let Some(last) = p.segments.last_mut() {
        last.arguments = syn::PathArguments::None;
    }
    p.segments.push(syn::PathSegment::from(syn::Ident::new(item, span)));
    p
}
