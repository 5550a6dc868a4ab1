//! Indexing: the indexable places (a slice parameter, a per-thread or
//! shared array, a host static read through its companion), `x[i]` as a
//! bounds-checked load, and `*x.get_unchecked(i)` (no bounds check,
//! inside `unsafe`).

use super::{Binding, Translator, staged_item, strip_paren};
use crate::loc;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, quote_spanned};
use syn::Expr;
use syn::spanned::Spanned;

impl Translator {
    /// The staged handle of an indexable place: a slice parameter, a shared
    /// array, or a host static (an unbound path).
    pub(super) fn indexable(&mut self, e: &Expr, write: bool) -> Option<Tokens> {
        let e = strip_paren(e);
        // A sub-slice `x[a..b]`, a row `m[r]`.
        if let Expr::Index(ix) = e
            && let Some(place) = self.index_place(ix, write)
        {
            return place;
        }
        let Expr::Path(p) = e else {
            self.refuse(
                e.span(),
                "only slice parameters, arrays bound by `let`, shared arrays and host statics are indexed",
            );
            return None;
        };
        if let Some(id) = p.path.get_ident() {
            if self.lookup(&id.to_string()).is_some() {
                self.use_name(id, write);
            }
            match self.lookup(&id.to_string()) {
                Some(Binding::Array2 { .. }) => {
                    self.refuse(id.span(), format!("`{id}` is a 2-D array: index a row, then a column: `{id}[r][c]`"));
                    return None;
                }
                Some(Binding::Slice { mutable }) => {
                    if write && !mutable {
                        self.refuse(
                            id.span(),
                            format!("cannot assign through `{id}`, a `&` slice: declare the parameter `&mut [T]`"),
                        );
                        return None;
                    }
                    return Some(quote!(#id));
                }
                Some(Binding::Shared) => return Some(quote!(#id)),
                Some(Binding::Array { mutable }) => {
                    if write && !mutable {
                        self.refuse(
                            id.span(),
                            format!("cannot assign to an element of `{id}`: declare it with `let mut {id}`"),
                        );
                        return None;
                    }
                    return Some(quote!(#id));
                }
                Some(_) => {
                    self.refuse(
                        id.span(),
                        format!("`{id}` is a scalar: only slices, shared arrays and host statics are indexed"),
                    );
                    return None;
                }
                None => {}
            }
        }
        if write {
            self.refuse(p.span(), "a host static is read-only to kernels");
            return None;
        }
        // `#[relok::host]` puts the companion under the static's name in
        // the type namespace: a static that is not one is reported by
        // rustc under its own name.
        let companion = staged_item(&self.outer(&p.path), "__relok_host");
        Some(quote_spanned!(p.span()=> __cx.host(#companion())))
    }

    /// `x[i]` as a value: a bounds-checked load.
    pub(super) fn index_read(&mut self, ix: &syn::ExprIndex, span: Span) -> Tokens {
        if let Some(t) = self.index2_read(ix) {
            return t;
        }
        let Some(base) = self.indexable(&ix.expr, false) else {
            return quote!({ ::core::panic!() });
        };
        let i = self.expr(&ix.index);
        let at = loc(ix.index.span());
        quote_spanned!(span=> { let __b = #base; let __i = #i; __cx.load(__b, __i, #at) })
    }

    /// `*x.get_unchecked(i)` (inside `unsafe`): a load without a bounds
    /// check; `*x` of an element `x.iter()` or `x.iter_mut()` gives; any
    /// other `*` is refused.
    pub(super) fn deref_read(&mut self, u: &syn::ExprUnary, span: Span) -> Tokens {
        if let Expr::Path(p) = strip_paren(&u.expr)
            && let Some(id) = p.path.get_ident()
        {
            match self.lookup(&id.to_string()) {
                Some(Binding::Ref) => return quote!(#id),
                Some(Binding::ElemMut) => return quote_spanned!(span=> __cx.elem_get(#id)),
                _ => {}
            }
        }
        match strip_paren(&u.expr) {
            Expr::MethodCall(m) if m.method == "get_unchecked" && m.args.len() == 1 => {
                if self.unsafe_depth == 0 {
                    return self
                        .refuse(m.method.span(), "call to unsafe function `get_unchecked` requires an `unsafe` block");
                }
                let Some(base) = self.indexable(&m.receiver, false) else {
                    return quote!({ ::core::panic!() });
                };
                let i = self.expr(&m.args[0]);
                quote_spanned!(span=> { let __b = #base; let __i = #i; __cx.load_unchecked(__b, __i) })
            }
            _ => self.refuse(span, "`*` only reads `*x.get_unchecked(i)`: the subset has no references"),
        }
    }
}
