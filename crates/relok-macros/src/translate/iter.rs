//! `for` loops and the iterators they run over, translated to the staged
//! iterators of `relok::__kernel` (each one IR `loop`; their semantics are
//! in that module's docs):
//!
//! - ranges: `a..b`, `a..=b` of any integer type, then `.rev()` and
//!   `.step_by(k)` (each at most once, in either order);
//! - the strides of a tree: `halving(n)` (`n, n >> 1, …, 1`) and
//!   `doubling(from, below)` (`from, 2 from, …` below `below`), unsigned;
//! - a slice parameter or an array (per-thread, shared, host static):
//!   `x.iter()`, `x.iter_mut()`, `x` itself, `&x`, `&mut x`, then
//!   `.copied()`, `.cloned()`, `.rev()`;
//! - `.enumerate()` and `.zip(other)` of any of these (`other` another
//!   one, or a slice or array as written after `in`).
//!
//! What one iteration binds is a [`Shape`]: the loop's pattern follows it
//! (`(i, x)`, `(x, (y, z))`, `&x` for an element `x.iter()` gives by
//! reference, `mut x`, `_`). An element of `x.iter()` is a reference in
//! Rust: it is bound as a value that `*x` also reads ([`Binding::Ref`]);
//! one of `x.iter_mut()` is written through `*x = v` ([`Binding::ElemMut`]).
//!
//! `it.sum()` and `it.product()` (with `::<T>` or not) are values over
//! any iterator of numbers here.

use super::{Binding, Translator, strip_paren};
use crate::loc;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Pat};

/// What one iteration of an iterator binds.
#[derive(Clone)]
pub(super) enum Shape {
    /// A value (a range's integer, `.copied()`).
    Val,
    /// An element by reference (`x.iter()`).
    Ref,
    /// An element of `x.iter_mut()`.
    RefMut,
    /// `.enumerate()` / `.zip()`: two.
    Pair(Box<Shape>, Box<Shape>),
    /// A row of a 2-D array (`m.iter()`): a slice binding.
    Row { mutable: bool },
}

impl Translator {
    /// `for pat in iter { body }`.
    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) -> Tokens {
        let (it, shape) = match self.iterator(&f.expr) {
            Ok(x) => x,
            Err(e) => return e,
        };
        self.in_loop(f.label.as_ref(), super::branch::LoopKind::Other, |t| {
            t.scoped(|t| {
                t.lend_to_loop(&f.expr);
                let mut lets = Tokens::new();
                let pat = match t.bind_pattern(&f.pat, &shape, &mut lets) {
                    Ok(p) => p,
                    Err(e) => return e,
                };
                let body = t.block_unit(&f.body);
                quote!({ let __it = #it; __cx.each(__it, |__cx, #pat| { #lets #body }); })
            })
        })
    }

    /// `it.sum()` / `it.product()` (`method`), `ty` its `::<T>`.
    pub(super) fn fold(&mut self, m: &syn::ExprMethodCall) -> Tokens {
        let (it, shape) = match self.iterator(&m.receiver) {
            Ok(x) => x,
            Err(e) => return e,
        };
        if matches!(shape, Shape::Pair(..) | Shape::RefMut) {
            return self.refuse(m.receiver.span(), format!("`{}` takes an iterator of numbers", m.method));
        }
        let f = &m.method;
        let ty = match &m.turbofish {
            None => quote!(_),
            Some(t) => match t.args.first() {
                Some(syn::GenericArgument::Type(ty)) if t.args.len() == 1 => quote!(#ty),
                _ => return self.refuse(t.span(), format!("`{f}::<T>` takes one type")),
            },
        };
        quote_spanned!(m.span()=> { let __it = #it; let __s: ::relok::__kernel::Val<#ty> = __cx.#f(__it); __s })
    }

    /// The staged iterator `e` is, and what it binds; `Err` is the
    /// refusal.
    fn iterator(&mut self, e: &Expr) -> Result<(Tokens, Shape), Tokens> {
        match strip_paren(e) {
            Expr::Range(r) => {
                let (Some(s), Some(end)) = (&r.start, &r.end) else {
                    return Err(self.refuse(r.span(), "a `for` range has a start and an end: `a..b`, `a..=b`"));
                };
                let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
                let s = self.expr(s);
                let end = self.expr(end);
                Ok((quote_spanned!(r.span()=> { let __s = #s; let __e = #end; __cx.range(__s, __e, #inclusive) }), Shape::Val))
            }
            Expr::MethodCall(m) => self.iterator_method(m),
            Expr::Call(c) if stride_call(c).is_some() => self.strides(c),
            Expr::Reference(r) => {
                let (it, shape) = self.slice_iterator(&r.expr, r.mutability.is_some())?;
                Ok((it, shape))
            }
            Expr::Path(p) if p.path.get_ident().is_some_and(|id| self.is_indexable_name(id)) => {
                let owned = p.path.get_ident().is_some_and(|id| {
                    matches!(self.lookup(&id.to_string()), Some(Binding::Array { .. }))
                });
                let (it, shape) = self.slice_iterator(e, false)?;
                // An array by value (Rust 2021) gives its elements' values.
                Ok((it, if owned { Shape::Val } else { shape }))
            }
            e => Err(self.refuse(
                e.span(),
                "a `for` loop runs over a range (`a..b`, `a..=b`, `.rev()`, `.step_by(k)`), `halving(n)`, `doubling(from, below)`, or a slice or array (`x.iter()`, `x.iter_mut()`, `.enumerate()`, `.zip(…)`)",
            )),
        }
    }

    /// `halving(n)` / `doubling(from, below)`.
    fn strides(&mut self, c: &syn::ExprCall) -> Result<(Tokens, Shape), Tokens> {
        let name = stride_call(c).unwrap_or_default();
        let span = c.span();
        match (name, c.args.len()) {
            ("halving", 1) => {
                let n = self.expr(&c.args[0]);
                Ok((quote_spanned!(span=> { let __n = #n; __cx.halving(__n) }), Shape::Val))
            }
            ("doubling", 2) => {
                let from = self.expr(&c.args[0]);
                let below = self.expr(&c.args[1]);
                let at = loc(span);
                Ok((
                    quote_spanned!(span=> { let __f = #from; let __b = #below; __cx.doubling(__f, __b, #at) }),
                    Shape::Val,
                ))
            }
            ("halving", _) => Err(self.refuse(c.args.span(), "`halving(n)` takes one value: `n, n >> 1, …, 1`")),
            _ => Err(self.refuse(
                c.args.span(),
                "`doubling(from, below)` takes two values: `from, 2 from, …` while below `below`",
            )),
        }
    }

    fn is_indexable_name(&self, id: &syn::Ident) -> bool {
        matches!(
            self.lookup(&id.to_string()),
            Some(Binding::Slice { .. } | Binding::Shared | Binding::Array { .. } | Binding::Array2 { .. })
        )
    }

    /// `x.iter()` / `x.iter_mut()` of an indexable place.
    fn slice_iterator(&mut self, place: &Expr, mutable: bool) -> Result<(Tokens, Shape), Tokens> {
        if let Some(rows) = self.rows_iterator(place, mutable) {
            return rows;
        }
        let Some(base) = self.indexable(place, mutable) else {
            return Err(quote!({ ::core::panic!() }));
        };
        Ok(if mutable {
            (quote_spanned!(place.span()=> { let __b = #base; __cx.iter_mut(__b) }), Shape::RefMut)
        } else {
            (quote_spanned!(place.span()=> { let __b = #base; __cx.iter(__b) }), Shape::Ref)
        })
    }

    fn iterator_method(&mut self, m: &syn::ExprMethodCall) -> Result<(Tokens, Shape), Tokens> {
        let name = m.method.to_string();
        let span = m.method.span();
        if let Some(t) = &m.turbofish {
            return Err(self.refuse(t.span(), "an iterator's methods take no `::<…>` here"));
        }
        let args = m.args.len();
        match (name.as_str(), args) {
            ("iter", 0) => self.slice_iterator(&m.receiver, false),
            ("iter_mut", 0) => self.slice_iterator(&m.receiver, true),
            ("copied" | "cloned", 0) => {
                let (it, shape) = self.iterator(&m.receiver)?;
                match shape {
                    Shape::Ref => Ok((it, Shape::Val)),
                    _ => Err(self.refuse(span, format!("`{name}` takes an iterator of references (`x.iter()`)"))),
                }
            }
            ("rev", 0) => {
                if let Expr::Call(c) = strip_paren(&m.receiver)
                    && stride_call(c).is_some()
                {
                    return Err(self.refuse(span, "`halving` and `doubling` run one way: each is the other's `rev`"));
                }
                let (it, shape) = self.iterator(&m.receiver)?;
                if matches!(shape, Shape::Pair(..)) {
                    return Err(
                        self.refuse(span, "`rev` goes on a range or `x.iter()` here, before `enumerate` or `zip`")
                    );
                }
                if twice(&m.receiver, "rev") {
                    return Err(self.refuse(span, "one `rev` per range or slice here"));
                }
                Ok((quote_spanned!(span=> #it.rev()), shape))
            }
            ("step_by", 1) => {
                if twice(&m.receiver, "step_by") {
                    return Err(self.refuse(span, "one `step_by` per range here"));
                }
                if !is_range_chain(&m.receiver) {
                    return Err(self.refuse(span, "`step_by` goes on a range here: `(a..b).step_by(k)`"));
                }
                let (it, shape) = self.iterator(&m.receiver)?;
                let k = self.expr(&m.args[0]);
                let at = loc(span);
                Ok((quote_spanned!(span=> { let __r = #it; let __k = #k; __r.step_by(__k, #at) }), shape))
            }
            ("enumerate", 0) => {
                let (it, shape) = self.iterator(&m.receiver)?;
                Ok((
                    quote_spanned!(span=> ::relok::__kernel::Staged::enumerate(#it)),
                    Shape::Pair(Box::new(Shape::Val), Box::new(shape)),
                ))
            }
            ("zip", 1) => {
                let (a, sa) = self.iterator(&m.receiver)?;
                let (b, sb) = self.iterator(&m.args[0])?;
                Ok((
                    quote_spanned!(span=> { let __a = #a; let __b = #b; ::relok::__kernel::Staged::zip(__a, __b) }),
                    Shape::Pair(Box::new(sa), Box::new(sb)),
                ))
            }
            _ => Err(self.refuse(
                span,
                format!(
                    "`{name}` is not one of a kernel's iterator methods: `iter`, `iter_mut`, `copied`, `cloned`, `rev`, `step_by`, `enumerate`, `zip` (and `sum`, `product`)"
                ),
            )),
        }
    }

    /// The closure pattern binding one iteration's item of `shape` to
    /// `p`, with the names bound; `lets` gets what the body starts with
    /// (`mut x` as a `Var`).
    fn bind_pattern(&mut self, p: &Pat, shape: &Shape, lets: &mut Tokens) -> Result<Tokens, Tokens> {
        match (p, shape) {
            (Pat::Wild(w), _) => Ok(quote_spanned!(w.span()=> _)),
            (Pat::Paren(q), _) => self.bind_pattern(&q.pat, shape, lets),
            (Pat::Ident(pi), _) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                let id = &pi.ident;
                match (pi.mutability.is_some(), shape) {
                    (true, Shape::Val | Shape::Ref) => {
                        self.bind(id, Binding::Var);
                        lets.extend(quote_spanned!(id.span()=> let #id = __cx.var(#id);));
                    }
                    (true, _) => return Err(self.refuse(pi.span(), "`mut` binds a number here")),
                    (false, Shape::Val) => self.bind(id, Binding::Val),
                    (false, Shape::Ref) => self.bind(id, Binding::Ref),
                    (false, Shape::RefMut) => self.bind(id, Binding::ElemMut),
                    (false, Shape::Row { mutable }) => self.bind(id, Binding::Slice { mutable: *mutable }),
                    (false, Shape::Pair(..)) => {
                        return Err(self.refuse(pi.span(), "this iterator gives two values: bind them as `(a, b)`"));
                    }
                }
                Ok(quote!(#id))
            }
            (Pat::Reference(r), Shape::Ref | Shape::RefMut) => {
                if matches!(shape, Shape::RefMut) != r.mutability.is_some() {
                    return Err(self.refuse(r.span(), "this pattern's `&` / `&mut` is not the element's"));
                }
                match &*r.pat {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        let id = &pi.ident;
                        if matches!(shape, Shape::RefMut) {
                            // The element's value, copied out.
                            lets.extend(quote_spanned!(id.span()=> let #id = __cx.elem_get(#id);));
                        }
                        let mut inner = Tokens::new();
                        let p = self.bind_pattern(&Pat::Ident(pi.clone()), &Shape::Val, &mut inner)?;
                        lets.extend(inner);
                        Ok(p)
                    }
                    Pat::Wild(_) => self.bind_pattern(&r.pat, &Shape::Val, lets),
                    other => Err(self.refuse(other.span(), "`&` binds one name here: `&x`")),
                }
            }
            (Pat::Tuple(t), Shape::Pair(a, b)) if t.elems.len() == 2 => {
                let pa = self.bind_pattern(&t.elems[0], a, lets)?;
                let pb = self.bind_pattern(&t.elems[1], b, lets)?;
                Ok(quote!((#pa, #pb)))
            }
            (p, Shape::Pair(..)) => Err(self.refuse(p.span(), "this iterator gives two values: bind them as `(a, b)`")),
            (p, _) => Err(self.refuse(p.span(), "a `for` loop binds a name, `_`, `&x`, or a pair `(a, b)`")),
        }
    }
}

/// `halving` / `doubling` when `c` calls one (with or without `relok::`).
pub(super) fn stride_call(c: &syn::ExprCall) -> Option<&'static str> {
    let Expr::Path(p) = &*c.func else { return None };
    if p.path.segments.len() != 1 && !super::is_relok_path(&p.path) {
        return None;
    }
    let last = p.path.segments.last()?;
    if !last.arguments.is_none() {
        return None;
    }
    ["halving", "doubling"].into_iter().find(|n| last.ident == n)
}

/// Whether `e` is a range, maybe under `rev` (what `step_by` takes here).
fn is_range_chain(e: &Expr) -> bool {
    match strip_paren(e) {
        Expr::Range(_) => true,
        Expr::MethodCall(m) if m.method == "rev" => is_range_chain(&m.receiver),
        _ => false,
    }
}

/// Whether the chain `e` already calls `method` (on a range or slice,
/// below any `enumerate` / `zip`).
fn twice(e: &Expr, method: &str) -> bool {
    match strip_paren(e) {
        Expr::MethodCall(m) if m.method == method => true,
        Expr::MethodCall(m) if m.method == "rev" || m.method == "step_by" => twice(&m.receiver, method),
        _ => false,
    }
}
