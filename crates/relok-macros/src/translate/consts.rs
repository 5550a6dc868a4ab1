//! A generic kernel's constants of its type parameters: `T::default()`
//! (and `f32::default()`, …) is the type's `Default`, a literal; `T::ZERO`
//! and `T::ONE` (`relok::Number`'s constants) are paths, read as any
//! `const` is (`expr.rs`).

use super::{Translator, scalar_type};
use proc_macro2::TokenStream as Tokens;
use quote::quote_spanned;
use syn::Expr;
use syn::spanned::Spanned;

impl Translator {
    /// `T::default()` (or `<T>::default()`, as a `macro_rules!` writes
    /// it of a `$t:ty`) of a scalar type or a type parameter: `None` when
    /// `c` is another call.
    pub(super) fn default_call(&mut self, c: &syn::ExprCall) -> Option<Tokens> {
        let Expr::Path(p) = &*c.func else { return None };
        if let Some(q) = &p.qself
            && q.position == 0
            && p.path.segments.len() == 1
            && p.path.segments[0].ident == "default"
            && p.path.segments[0].arguments.is_empty()
            && c.args.is_empty()
        {
            let ty = &q.ty;
            scalar_type(ty)?;
            return Some(quote_spanned!(c.span()=> __cx.lit(<#ty as ::core::default::Default>::default())));
        }
        if p.qself.is_some() || p.path.leading_colon.is_some() || p.path.segments.len() != 2 || !c.args.is_empty() {
            return None;
        }
        let (t, m) = (&p.path.segments[0], &p.path.segments[1]);
        if m.ident != "default" || !t.arguments.is_empty() || !m.arguments.is_empty() {
            return None;
        }
        let ty: syn::Type = syn::Type::Path(syn::TypePath { qself: None, path: t.ident.clone().into() });
        scalar_type(&ty)?;
        Some(quote_spanned!(c.span()=> __cx.lit(<#ty as ::core::default::Default>::default())))
    }
}
