//! Types: the subset's scalar types (and a generic kernel's type
//! parameters), a kernel parameter's kind ([`ParamKind`]: scalar, slice,
//! `relok::Symbol`), and `as` casts to a scalar type.

use super::Translator;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// The scalar types of the subset (`u8 i8 u16 i16` are computed on as
/// 32-bit values kept in their range, and stored in their own width).
pub const SCALARS: [&str; 12] = ["bool", "i32", "u32", "i64", "u64", "f32", "f64", "usize", "u8", "i8", "u16", "i16"];

/// The scalar types, as the refusals list them.
pub const SCALAR_LIST: &str = "bool u8 i8 u16 i16 i32 u32 i64 u64 f32 f64 usize";

/// A kernel parameter's kind.
#[derive(Clone)]
pub enum ParamKind {
    /// A scalar of this Rust type.
    Scalar(syn::Type),
    /// `&[T]` / `&mut [T]`.
    Slice { elem: syn::Type, mutable: bool },
    /// `relok::Symbol`: a `word` (the symbol's).
    Symbol,
    /// A `#[derive(relok::Struct)]` struct by value: one IR parameter
    /// per field.
    Struct(syn::Type),
}

impl ParamKind {
    /// The staged type.
    pub fn dsl_type(&self) -> Tokens {
        match self {
            ParamKind::Scalar(t) => quote!(::relok::__kernel::Val<#t>),
            ParamKind::Slice { elem, mutable: false } => quote!(::relok::__kernel::Slice<#elem>),
            ParamKind::Slice { elem, mutable: true } => quote!(::relok::__kernel::SliceMut<#elem>),
            ParamKind::Symbol => quote!(::relok::__kernel::Val<::relok::__kernel::Word>),
            ParamKind::Struct(t) => quote!(::relok::__kernel::ValOf<#t>),
        }
    }

    /// The type a device function's staged call takes for the parameter:
    /// what a Rust call of it would accept (a `&mut [T]` where `&[T]` is
    /// expected, never a `&[T]` where `&mut [T]` is), each refusal with a
    /// message in Rust's terms (`#[diagnostic::on_unimplemented]`).
    pub fn call_type(&self) -> Tokens {
        match self {
            ParamKind::Scalar(t) => quote!(impl ::relok::__kernel::IntoVal<#t>),
            ParamKind::Slice { elem, mutable: false } => quote!(impl ::relok::__kernel::IntoSlice<#elem>),
            ParamKind::Slice { elem, mutable: true } => quote!(impl ::relok::__kernel::IntoSliceMut<#elem>),
            ParamKind::Symbol => quote!(impl ::relok::__kernel::IntoVal<::relok::__kernel::Word>),
            ParamKind::Struct(t) => quote!(impl ::relok::__kernel::IntoStruct<#t>),
        }
    }

    /// `n` (of [`ParamKind::call_type`]) as the staged type.
    pub fn convert(&self, n: &syn::Ident) -> Tokens {
        match self {
            ParamKind::Scalar(_) | ParamKind::Symbol => quote!(::relok::__kernel::IntoVal::into_val(#n)),
            ParamKind::Slice { mutable: false, .. } => quote!(::relok::__kernel::IntoSlice::into_slice(#n)),
            ParamKind::Slice { mutable: true, .. } => quote!(::relok::__kernel::IntoSliceMut::into_slice_mut(#n)),
            ParamKind::Struct(_) => quote!(::relok::__kernel::IntoStruct::into_struct(#n)),
        }
    }
    /// The type `launch` takes.
    pub fn launch_type(&self) -> Tokens {
        match self {
            ParamKind::Scalar(t) => quote!(#t),
            ParamKind::Slice { elem, mutable: false } => quote!(&::relok::Buffer<#elem>),
            ParamKind::Slice { elem, mutable: true } => quote!(&mut ::relok::Buffer<#elem>),
            ParamKind::Symbol => quote!(&::relok::Symbol),
            ParamKind::Struct(t) => quote!(#t),
        }
    }
}

thread_local! {
    /// The type parameters of the generic kernel being expanded: scalar
    /// types too (set by [`with_type_params`]).
    static TYPE_PARAMS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with `params` counted as scalar types.
pub fn with_type_params<R>(params: Vec<String>, f: impl FnOnce() -> R) -> R {
    let saved = TYPE_PARAMS.with(|t| std::mem::replace(&mut *t.borrow_mut(), params));
    let r = f();
    TYPE_PARAMS.with(|t| *t.borrow_mut() = saved);
    r
}

/// The subset's name of a scalar type (or a kernel's type parameter), if
/// `ty` is one.
pub fn scalar_type(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            let id = p.path.get_ident()?.to_string();
            (SCALARS.contains(&id.as_str()) || TYPE_PARAMS.with(|t| t.borrow().contains(&id))).then_some(id)
        }
        syn::Type::Paren(p) => scalar_type(&p.elem),
        // A `$t:ty` of a `macro_rules!`.
        syn::Type::Group(g) => scalar_type(&g.elem),
        _ => None,
    }
}

/// A parameter's kind, or the error naming what is supported.
pub fn param_kind(ty: &syn::Type) -> syn::Result<ParamKind> {
    if scalar_type(ty).is_some() {
        return Ok(ParamKind::Scalar(ty.clone()));
    }
    if let syn::Type::Path(p) = ty
        && p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Symbol" && s.arguments.is_empty())
    {
        return Ok(ParamKind::Symbol);
    }
    if let syn::Type::Reference(r) = ty
        && let syn::Type::Slice(s) = &*r.elem
        && let Some(e) = scalar_type(&s.elem)
    {
        if e == "usize" {
            return Err(syn::Error::new(
                s.elem.span(),
                "slices of `usize` have no device layout that matches the host's (a device `usize` is 32 bits): use `u32`",
            ));
        }
        return Ok(ParamKind::Slice { elem: (*s.elem).clone(), mutable: r.mutability.is_some() });
    }
    // A slice of structs, a struct (`data.rs`; rustc checks that it is a
    // `relok::Struct`).
    if let syn::Type::Reference(r) = ty
        && let syn::Type::Slice(s) = &*r.elem
        && let syn::Type::Path(p) = &*s.elem
        && super::data::is_struct_path(p)
    {
        return Ok(ParamKind::Slice { elem: (*s.elem).clone(), mutable: r.mutability.is_some() });
    }
    if let syn::Type::Path(p) = ty
        && super::data::is_struct_path(p)
    {
        return Ok(ParamKind::Struct(ty.clone()));
    }
    Err(syn::Error::new(
        ty.span(),
        format!(
            "unsupported parameter type: a kernel takes scalars ({SCALAR_LIST}), `relok::Struct` structs, `&[T]`, `&mut [T]` and `relok::Symbol`"
        ),
    ))
}

impl Translator {
    /// `e as T`, to a scalar type.
    pub(super) fn cast(&mut self, c: &syn::ExprCast, span: Span) -> Tokens {
        let Some(_) = scalar_type(&c.ty) else {
            return self.refuse(c.ty.span(), format!("`as` casts to a scalar type ({SCALAR_LIST})"));
        };
        let a = self.expr(&c.expr);
        let ty = &c.ty;
        quote_spanned!(span=> { let __a = #a; __cx.cast::<_, #ty>(__a) })
    }
}
