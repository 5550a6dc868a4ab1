//! 2-D arrays: per-thread (`let mut m = [[0.0f32; 3]; 3];`, `let w =
//! [[1, 2], [3, 4]];`, `let m: [[f32; 3]; 3] = …;`) and block-shared
//! (`let tile = shared::<[f32; 17], 16>();`: 16 rows of `[f32; 17]`, as
//! `shared::<T, N>()` is `N` elements of `T`), as
//! `relok::__kernel::Array2<T, R, C>`:
//!
//! - `m[r][c]` read, written (`=`, `op=`): each index checked against
//!   its own dimension, as Rust does, at its own span;
//! - a row `m[r]` is a place (`m[r].len()`, `m[r].iter()`, `&m[r]`,
//!   `&m[r][1..]`, `atomic_add(&tile[r][c], v)`: `subslice.rs` asks
//!   [`Translator::row_place`]);
//! - `m.len()` (the rows), `for row in m.iter()` / `m.iter_mut()` / `&m`
//!   (`iter.rs` asks [`Translator::rows_iterator`]).
//!
//! Three or more dimensions are refused.

use super::iter::Shape;
use super::{Binding, Translator, strip_paren};
use crate::loc;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote, quote_spanned};
use syn::Expr;
use syn::spanned::Spanned;

impl Translator {
    /// The 2-D array `e` names, with whether it may be written.
    fn array2_name<'e>(&self, e: &'e Expr) -> Option<(&'e syn::Ident, bool)> {
        let Expr::Path(p) = strip_paren(e) else { return None };
        let id = p.path.get_ident()?;
        match self.lookup(&id.to_string()) {
            Some(Binding::Array2 { mutable }) => Some((id, mutable)),
            _ => None,
        }
    }

    /// Whether `ix` is a row `m[r]` of a 2-D array.
    pub(super) fn row_place_of(&self, ix: &syn::ExprIndex) -> bool {
        self.array2_name(&ix.expr).is_some() && !matches!(strip_paren(&ix.index), Expr::Range(_))
    }

    /// Uses the 2-D array `id` (a write when `write`); a refused use is
    /// still translated, so that nothing else fails.
    fn use_array2(&mut self, id: &syn::Ident, mutable: bool, write: bool) {
        if write && !mutable {
            self.errors.push(syn::Error::new(
                id.span(),
                format!("cannot assign to an element of `{id}`: declare it with `let mut {id}`"),
            ));
        }
        self.use_name(id, write);
    }

    /// The row `m[r]` as a place (`None`: `ix` is not a row; `Some(None)`:
    /// refused).
    pub(super) fn row_place(&mut self, ix: &syn::ExprIndex, write: bool) -> Option<Option<Tokens>> {
        if !self.row_place_of(ix) {
            return None;
        }
        let (id, mutable) = self.array2_name(&ix.expr)?;
        self.use_array2(id, mutable, write);
        let r = self.expr(&ix.index);
        let at = loc(ix.index.span());
        Some(Some(quote_spanned!(ix.span()=> { let __m = #id; let __r = #r; __cx.row(__m, __r, #at) })))
    }

    /// `m[r][c]`: the array, the row's start (`r` checked) and the column,
    /// evaluated in Rust's order; `None` when `ix` is not one.
    fn element2(&mut self, ix: &syn::ExprIndex, write: bool) -> Option<Option<(Tokens, Tokens)>> {
        let Expr::Index(row) = strip_paren(&ix.expr) else { return None };
        if !self.row_place_of(row) || matches!(strip_paren(&ix.index), Expr::Range(_)) {
            return None;
        }
        let (id, mutable) = self.array2_name(&row.expr)?;
        self.use_array2(id, mutable, write);
        let r = self.expr(&row.index);
        let c = self.expr(&ix.index);
        let (at_r, at_c) = (loc(row.index.span()), loc(ix.index.span()));
        let lets = quote!(let __m = #id; let __r = #r; let __s = __cx.row_start(__m, __r, #at_r); let __c = #c;);
        Some(Some((lets, at_c)))
    }

    /// `m[r][c]` as a value.
    pub(super) fn index2_read(&mut self, ix: &syn::ExprIndex) -> Option<Tokens> {
        let (lets, at) = match self.element2(ix, false)? {
            Some(x) => x,
            None => return Some(quote!({ ::core::panic!() })),
        };
        Some(quote_spanned!(ix.span()=> { #lets __cx.load2(__m, __s, __c, #at) }))
    }

    /// `m[r][c] = v` / `m[r][c] op= v` (`rhs`: `v`, evaluated first).
    pub(super) fn index2_assign(&mut self, ix: &syn::ExprIndex, op: Option<&str>, rhs: &Tokens) -> Option<Tokens> {
        let (lets, at) = match self.element2(ix, true)? {
            Some(x) => x,
            None => return Some(quote!({ ::core::panic!() })),
        };
        let new = match op {
            None => quote!(__rhs),
            Some(m) => {
                let m = format_ident!("{}", m);
                quote_spanned!(ix.span()=> { let __o = __cx.load2(__m, __s, __c, #at); __cx.#m(__o, __rhs) })
            }
        };
        Some(quote!({ let __rhs = #rhs; #lets let __n = #new; __cx.store2(__m, __s, __c, __n, #at); }))
    }

    /// `m.len()` of a 2-D array.
    pub(super) fn array2_len(&mut self, receiver: &Expr) -> Option<Tokens> {
        let (id, _) = self.array2_name(receiver)?;
        self.use_name(id, false);
        Some(quote_spanned!(receiver.span()=> __cx.len2(#id)))
    }

    /// The rows of `place` (`m.iter()`, `m.iter_mut()` when `write`, `&m`,
    /// `m`): `None` when `place` is not a 2-D array.
    pub(super) fn rows_iterator(&mut self, place: &Expr, write: bool) -> Option<Result<(Tokens, Shape), Tokens>> {
        let (id, mutable) = self.array2_name(place)?;
        self.use_array2(id, mutable, write);
        Some(Ok((quote_spanned!(place.span()=> __cx.rows(#id)), Shape::Row { mutable: write })))
    }

    /// `let m = [[…]; R];`, `[[a, b], [c, d]]`, `shared::<[T; C], R>()`
    /// (and `let m: [[T; C]; R] = …`): `None` when `init` is not a 2-D
    /// array.
    pub(super) fn let_array2(
        &mut self,
        ident: &syn::Ident,
        mutable: bool,
        ty: Option<&syn::Type>,
        init: &Expr,
        cfg: &Tokens,
    ) -> Option<Tokens> {
        if let Some((elem, cols, rows)) = shared2_call(init) {
            if !matches!(self.kind, super::FnKind::Kernel) {
                self.errors.push(syn::Error::new(
                    init.span(),
                    "only kernels declare shared arrays: declare it in the kernel (a device function takes slices)",
                ));
            }
            if mutable {
                self.errors
                    .push(syn::Error::new(ident.span(), "a shared array is written through indexing: drop the `mut`"));
            }
            self.bind(ident, Binding::Array2 { mutable: true });
            return Some(
                quote_spanned!(init.span()=> #cfg let #ident = __cx.shared2::<#elem, { #rows }, { #cols }>();),
            );
        }
        if !is_2d(init) {
            return None;
        }
        let annotation = match ty {
            None => None,
            Some(t) => match array2_type(t) {
                Some((elem, cols, rows)) => {
                    Some(quote_spanned!(t.span()=> : ::relok::__kernel::Array2<#elem, { #rows }, { #cols }>))
                }
                None => {
                    return Some(self.refuse(t.span(), "a 2-D array's type is `[[T; C]; R]`, T a scalar type"));
                }
            },
        };
        let value = match strip_paren(init) {
            // `[[v; C]; R]`: a fill loop.
            Expr::Repeat(r) if let Expr::Repeat(inner) = strip_paren(&r.expr) => {
                if !self.nonzero(&r.len) || !self.nonzero(&inner.len) || self.too_deep(&inner.expr) {
                    return Some(self.refused_array2(ident, mutable, init, cfg));
                }
                let v = self.expr(&inner.expr);
                let (rows, cols) = (&r.len, &inner.len);
                quote_spanned!(init.span()=> { let __v = #v; __cx.local_array2::<_, { #rows }, { #cols }>(__v) })
            }
            _ => {
                let Some(rows) = self.rows_of(init) else {
                    return Some(self.refused_array2(ident, mutable, init, cfg));
                };
                quote_spanned!(init.span()=> { let __rows = #rows; __cx.local_array2_of(&__rows) })
            }
        };
        self.bind(ident, Binding::Array2 { mutable });
        Some(quote_spanned!(ident.span()=> #cfg let #ident #annotation = #value;))
    }

    /// A refused 2-D array: a 1 x 1 array of the first element of
    /// `init`, so that its uses raise no more errors.
    fn refused_array2(&mut self, ident: &syn::Ident, mutable: bool, init: &Expr, cfg: &Tokens) -> Tokens {
        let mut e = strip_paren(init);
        loop {
            e = match e {
                Expr::Repeat(r) => strip_paren(&r.expr),
                Expr::Array(a) if !a.elems.is_empty() => strip_paren(&a.elems[0]),
                _ => break,
            };
        }
        let errors = self.errors.len();
        let v = if matches!(e, Expr::Array(_)) { quote!(__cx.lit(0u32)) } else { self.expr(e) };
        self.errors.truncate(errors);
        self.bind(ident, Binding::Array2 { mutable });
        quote_spanned!(ident.span()=> #cfg let #ident = { let __v = #v; __cx.local_array2::<_, 1, 1>(__v) };)
    }

    /// The rows of a 2-D array literal as a Rust array of rows of staged
    /// values, evaluated in Rust's order (`None`: refused).
    fn rows_of(&mut self, e: &Expr) -> Option<Tokens> {
        match strip_paren(e) {
            Expr::Array(a) => {
                let mut rows = Vec::new();
                for row in &a.elems {
                    rows.push(self.row_of(row)?);
                }
                Some(quote_spanned!(e.span()=> [#(#rows),*]))
            }
            Expr::Repeat(r) => {
                if !self.nonzero(&r.len) {
                    return None;
                }
                let row = self.row_of(&r.expr)?;
                let n = &r.len;
                Some(quote_spanned!(e.span()=> { let __row = #row; [__row; #n] }))
            }
            _ => None,
        }
    }

    /// One row of a 2-D array literal.
    fn row_of(&mut self, e: &Expr) -> Option<Tokens> {
        match strip_paren(e) {
            Expr::Array(a) => {
                if a.elems.is_empty() {
                    self.refuse(a.span(), "an empty array has no element type: give it elements");
                    return None;
                }
                let mut vals = Vec::new();
                for v in &a.elems {
                    if self.too_deep(v) {
                        return None;
                    }
                    vals.push(self.expr(v));
                }
                Some(quote_spanned!(e.span()=> [#(#vals),*]))
            }
            Expr::Repeat(r) => {
                if !self.nonzero(&r.len) || self.too_deep(&r.expr) {
                    return None;
                }
                let v = self.expr(&r.expr);
                let n = &r.len;
                Some(quote_spanned!(e.span()=> { let __v = #v; [__v; #n] }))
            }
            other => {
                self.refuse(other.span(), "each row of a 2-D array is an array: `[a, b]` or `[v; N]`");
                None
            }
        }
    }

    /// Refuses a third dimension.
    fn too_deep(&mut self, e: &Expr) -> bool {
        if matches!(strip_paren(e), Expr::Array(_) | Expr::Repeat(_)) {
            self.refuse(e.span(), "a kernel's arrays have one or two dimensions");
            return true;
        }
        false
    }

    /// Refuses a literal length of 0.
    fn nonzero(&mut self, len: &Expr) -> bool {
        if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) = strip_paren(len)
            && n.base10_digits() == "0"
        {
            self.refuse(n.span(), "a kernel's array has at least one element");
            return false;
        }
        true
    }
}

/// Whether `e` is a 2-D array literal (`[[…]; R]`, `[[…], …]`).
fn is_2d(e: &Expr) -> bool {
    let inner = match strip_paren(e) {
        Expr::Repeat(r) => &*r.expr,
        Expr::Array(a) => match a.elems.first() {
            Some(x) => x,
            None => return false,
        },
        _ => return false,
    };
    matches!(strip_paren(inner), Expr::Array(_) | Expr::Repeat(_))
}

/// `[[T; C]; R]`: (T, C, R).
fn array2_type(t: &syn::Type) -> Option<(&syn::Type, &Expr, &Expr)> {
    let syn::Type::Array(outer) = strip_type(t) else { return None };
    let syn::Type::Array(inner) = strip_type(&outer.elem) else { return None };
    super::scalar_type(&inner.elem)?;
    Some((&inner.elem, &inner.len, &outer.len))
}

fn strip_type(t: &syn::Type) -> &syn::Type {
    match t {
        syn::Type::Paren(p) => strip_type(&p.elem),
        syn::Type::Group(g) => strip_type(&g.elem),
        t => t,
    }
}

/// `shared::<[T; C], R>()` / `relok::shared::<[T; C], R>()`: (T, C, R).
fn shared2_call(e: &Expr) -> Option<(&syn::Type, &Expr, &syn::GenericArgument)> {
    let Expr::Call(c) = strip_paren(e) else { return None };
    let Expr::Path(p) = &*c.func else { return None };
    if !(p.path.segments.len() == 1 || super::is_relok_path(&p.path)) || !c.args.is_empty() {
        return None;
    }
    let last = p.path.segments.last()?;
    if last.ident != "shared" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return None };
    if a.args.len() != 2 {
        return None;
    }
    let syn::GenericArgument::Type(t) = &a.args[0] else { return None };
    let syn::Type::Array(row) = strip_type(t) else { return None };
    Some((&row.elem, &row.len, &a.args[1]))
}
