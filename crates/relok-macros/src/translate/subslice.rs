//! Sub-slices: `x[lo..hi]`, `x[lo..]`, `x[..hi]`, `x[..]` of any
//! indexable place (a slice parameter, an array, a row `m[r]`, another
//! sub-slice) as a place (`x[a..b][k]`, `x[a..].len()`, `x[..n].iter()`),
//! and `x[a..=b]`, `x[..=b]` (Rust's checks and messages for those),
//! borrowed (`let row = &a[i * n..(i + 1) * n];`, `&mut y[..]`) and as a
//! call's argument (`f(&x[a..b])`). `relok::__kernel::Cx::sub_slice`
//! checks the ends as Rust does, in Rust's order, at the range's span.
//!
//! A `let` of a sub-slice or a row is a slice binding (read-only behind
//! `&`), and borrows the place it is cut from (`borrow.rs`): while it is
//! used, the place is not written (`&`) or not used at all (`&mut`).

use super::{Binding, Translator, strip_paren};
use crate::loc;
use proc_macro2::TokenStream as Tokens;
use quote::quote_spanned;
use syn::Expr;
use syn::spanned::Spanned;

impl Translator {
    /// A `let` of a 2-D array (`array2d.rs`), a sub-slice or a row (here)
    /// or a closure (`closure.rs`): `None` when `init` is none of them.
    pub(super) fn let_place(
        &mut self,
        ident: &syn::Ident,
        mutable: bool,
        ty: Option<&syn::Type>,
        init: &Expr,
        cfg: &Tokens,
    ) -> Option<Tokens> {
        if let Some(t) = self.let_array2(ident, mutable, ty, init, cfg) {
            return Some(t);
        }
        if let Some(t) = self.let_closure(ident, mutable, init, cfg) {
            return Some(t);
        }
        self.let_sub_slice(ident, mutable, init, cfg)
    }

    /// `base[lo..hi]` (or a row `m[r]`) as an indexable place: `None`
    /// when `ix` is neither; `Some(None)` when refused.
    pub(super) fn index_place(&mut self, ix: &syn::ExprIndex, write: bool) -> Option<Option<Tokens>> {
        if let Some(row) = self.row_place(ix, write) {
            return Some(row);
        }
        let Expr::Range(r) = strip_paren(&ix.index) else { return None };
        let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
        let mut write = write;
        if write
            && let Some(root) = root(&ix.expr)
            && self.lookup(&root.to_string()) == Some(Binding::Slice { mutable: false })
        {
            // Refused, but translated as `&`: nothing else fails.
            self.errors.push(syn::Error::new(
                root.span(),
                format!("cannot borrow `{root}` as mutable, as it is behind a `&` reference: declare it `&mut [T]`"),
            ));
            write = false;
        }
        let Some(base) = self.indexable(&ix.expr, write) else { return Some(None) };
        let lo = r.start.as_ref().map(|e| self.expr(e));
        let at = loc(r.span());
        let hi = r.end.as_ref().map(|e| self.expr(e));
        let lo = match lo {
            Some(lo) => quote_spanned!(r.span()=> ::core::option::Option::Some(#lo)),
            None => quote_spanned!(r.span()=> ::core::option::Option::None),
        };
        let hi = match hi {
            Some(hi) => quote_spanned!(r.span()=> ::core::option::Option::Some(#hi)),
            None => quote_spanned!(r.span()=> ::core::option::Option::None),
        };
        let f = if write { quote_spanned!(r.span()=> sub_slice_mut) } else { quote_spanned!(r.span()=> sub_slice) };
        Some(Some(
            quote_spanned!(ix.span()=> { let __s = #base; let __lo = #lo; let __hi = #hi; __cx.#f(__s, __lo, __hi, #inclusive, #at) }),
        ))
    }

    /// `&x[a..b]`, `&mut x[a..b]`, `&m[r]` as a value (a call's
    /// argument): `None` when `r` is another reference.
    pub(super) fn reference_value(&mut self, r: &syn::ExprReference) -> Option<Tokens> {
        let Expr::Index(ix) = strip_paren(&r.expr) else { return None };
        if !is_sub_place(ix, self) {
            return None;
        }
        let place = self.index_place(ix, r.mutability.is_some())?;
        Some(place.unwrap_or_else(|| quote_spanned!(r.span()=> { ::core::panic!() })))
    }

    /// A call's argument `&mut x[…]` / `&x[…]` borrows `x` for the
    /// arguments after it.
    pub(super) fn argument_borrow(&mut self, a: &Expr) {
        if let Expr::Reference(r) = strip_paren(a)
            && let Expr::Index(ix) = strip_paren(&r.expr)
            && is_sub_place(ix, self)
            && let Some(root) = root(&r.expr)
        {
            self.lend(&root.to_string(), None, r.mutability.is_some());
        }
    }

    /// `let name = &x[a..b];` / `&mut x[a..b]` / `&m[r]`: a slice
    /// binding borrowing `x`; `None` when `init` is something else.
    pub(super) fn let_sub_slice(
        &mut self,
        ident: &syn::Ident,
        mutable: bool,
        init: &Expr,
        cfg: &Tokens,
    ) -> Option<Tokens> {
        let (ix, shared) = match strip_paren(init) {
            Expr::Reference(r) => match strip_paren(&r.expr) {
                Expr::Index(ix) => (ix, r.mutability.is_none()),
                _ => return None,
            },
            Expr::Index(ix) if self.row_place_of(ix) => {
                // Refused, but translated as `&m[r]`: nothing else fails.
                self.errors.push(syn::Error::new(
                    init.span(),
                    "this copies a row of a 2-D array, which a kernel does not: borrow it (`let row = &m[r];`) or index it (`m[r][c]`)",
                ));
                (ix, true)
            }
            _ => return None,
        };
        if !is_sub_place(ix, self) {
            return None;
        }
        if mutable {
            return Some(self.refuse(
                ident.span(),
                format!("a sub-slice is not reassigned in a kernel: drop the `mut` of `{ident}`"),
            ));
        }
        let mut writes = !shared;
        if let Some(root) = root(&ix.expr)
            && self.lookup(&root.to_string()) == Some(Binding::Slice { mutable: false })
        {
            writes = false;
        }
        let place = self.index_place(ix, !shared)?;
        self.bind(ident, Binding::Slice { mutable: writes });
        let Some(place) = place else {
            return Some(quote_spanned!(init.span()=> #cfg let #ident = ::core::panic!();));
        };
        if let Some(root) = root(&ix.expr) {
            self.lend(&root.to_string(), Some(ident), writes);
        }
        Some(quote_spanned!(ident.span()=> #cfg let #ident = #place;))
    }
}

/// Whether `ix` is a sub-slice (its index a range) or a 2-D array's row.
fn is_sub_place(ix: &syn::ExprIndex, t: &Translator) -> bool {
    matches!(strip_paren(&ix.index), Expr::Range(_)) || t.row_place_of(ix)
}

/// The name a place is cut from (`y` of `y[a..b][c..]`).
pub(super) fn root(e: &Expr) -> Option<&syn::Ident> {
    match strip_paren(e) {
        Expr::Index(ix) => root(&ix.expr),
        Expr::Path(p) => p.path.get_ident(),
        _ => None,
    }
}
