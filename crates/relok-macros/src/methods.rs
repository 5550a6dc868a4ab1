//! `#[relok::device] impl Vec3 { fn dot(self, o: Vec3) -> f32 { … } }`:
//! a struct's methods as device functions, called `a.dot(b)` in kernels.
//!
//! A kernel's macro sees `a.dot(b)` without `a`'s type, so the call is
//! found by rustc, through a trait: each method `m` of `impl T` becomes
//!
//! - a hidden device function `__relok_method_T_m(__relok_self: T, …)`
//!   (its body the method's, `self` renamed), generated as any
//!   `#[relok::device] fn`; its path (its IR name, mangled, and its name
//!   in errors) is the method's, `module::T::m`;
//! - an `impl relok::__kernel::Method<H, Args, Out> for ValOf<T>` (`H`:
//!   a hash of `m`'s name) whose `call` stages that function's call: a
//!   kernel's `a.dot(b)` is `call_method::<H, _, _, _>(__cx, a, (b,))`,
//!   and rustc picks the impl by `a`'s staged type.
//!
//! The kernel cannot define the function before its body (it cannot name
//! it), so the call defines it on first use and the kernel is staged
//! again (`Cx::func_or_define`). The impl itself stays as written, for the
//! host; methods without a receiver stay host-only.

use proc_macro2::{Span, TokenStream as Tokens, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The hash naming a method in `Method<H>`: FNV-1a of its name (two
/// names of one hash on one type are conflicting impls, never a wrong
/// call).
pub fn method_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

pub fn device_impl(mut imp: syn::ItemImpl, mut errors: Vec<syn::Error>) -> Tokens {
    if let Some((_, path, _)) = &imp.trait_ {
        errors.push(syn::Error::new(
            path.span(),
            "`#[relok::device]` marks an inherent `impl` (a struct's own methods), not a trait's",
        ));
    }
    if !imp.generics.params.is_empty() {
        errors.push(syn::Error::new(imp.generics.span(), "a device `impl` has no generic parameters"));
    }
    let ty_name = match &*imp.self_ty {
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.iter().all(|s| s.arguments.is_empty()) => {
            p.path.segments.last().map(|s| s.ident.clone())
        }
        _ => None,
    };
    let Some(ty_name) = ty_name else {
        errors.push(syn::Error::new(imp.self_ty.span(), "`#[relok::device] impl` is for a `relok::Struct` struct"));
        let errs: Tokens = errors.iter().map(syn::Error::to_compile_error).collect();
        return quote!(#errs #imp);
    };
    let self_ty = (*imp.self_ty).clone();
    let mut out = Tokens::new();
    for item in &mut imp.items {
        let syn::ImplItem::Fn(m) = item else { continue };
        // A method's own `#[relok::device]` (optional) is this one's.
        m.attrs.retain(|a| !is_device_attr(a));
        let Some(syn::FnArg::Receiver(r)) = m.sig.inputs.first() else { continue };
        if r.reference.as_ref().is_some_and(|_| r.mutability.is_some()) {
            errors.push(syn::Error::new(
                r.span(),
                "a device method takes `self` or `&self` (a struct in a kernel is a value): return the new value instead of `&mut self`",
            ));
            continue;
        }
        // Kernels call it, which rustc does not see: no dead-code
        // warning for a method only kernels use.
        m.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
        let name = &m.sig.ident;
        let free = format_ident!("__relok_method_{}_{}", ty_name, name, span = name.span());
        let this = syn::Ident::new("__relok_self", Span::call_site());
        let mut inputs: Vec<Tokens> = vec![quote!(#this: #self_ty)];
        let mut params = Vec::new();
        for a in m.sig.inputs.iter().skip(1) {
            let syn::FnArg::Typed(pt) = a else { continue };
            let ty = rename_self_ty(&pt.ty, &self_ty);
            let pat = &pt.pat;
            inputs.push(quote!(#pat: #ty));
            params.push(ty);
        }
        let ret = match &m.sig.output {
            syn::ReturnType::Default => syn::ReturnType::Default,
            syn::ReturnType::Type(arrow, ty) => syn::ReturnType::Type(*arrow, Box::new(rename_self_ty(ty, &self_ty))),
        };
        let block = &m.block;
        let body = rename_self(quote!(#block), &this, &self_ty);
        let vis = &m.vis;
        let f: syn::ItemFn = match syn::parse2(quote_spanned!(m.sig.span()=>
            #[allow(non_snake_case)]
            #vis fn #free(#(#inputs),*) #ret #body
        )) {
            Ok(f) => f,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        // Named `T::m` (the IR name is the path, mangled): a struct and a
        // module of one name cannot both be in a module, so no free
        // function has this path.
        out.extend(crate::device_fn_at(&f, Vec::new(), Some(format!("{ty_name}::{name}"))));
        // The dispatch: rustc finds it by the receiver's staged type.
        let hash = method_hash(&name.to_string());
        let kinds: Vec<Tokens> = params
            .iter()
            .map(|t| match crate::translate::param_kind(t) {
                Ok(k) => k.dsl_type(),
                Err(e) => e.to_compile_error(),
            })
            .collect();
        let ret_dsl = match &ret {
            syn::ReturnType::Default => quote!(()),
            syn::ReturnType::Type(_, t) => {
                crate::translate::staged_type(t, &|p| p.clone()).unwrap_or_else(|| quote!(::relok::__kernel::Val<#t>))
            }
        };
        let idx = (0..params.len()).map(syn::Index::from);
        out.extend(quote_spanned!(name.span()=>
            const _: () = {
                #[allow(private_interfaces)]
                impl ::relok::__kernel::Method<#hash, (#(#kinds,)*), #ret_dsl> for ::relok::__kernel::ValOf<#self_ty> {
                    fn call(self, __cx: &mut ::relok::__kernel::Cx<'_>, __args: (#(#kinds,)*)) -> #ret_dsl {
                        #free::__relok_call(__cx, self, #(__args.#idx),*)
                    }
                }
            };
        ));
    }
    let errs: Tokens = errors.iter().map(syn::Error::to_compile_error).collect();
    quote!(#errs #imp #out)
}

fn is_device_attr(a: &syn::Attribute) -> bool {
    let p = a.path();
    p.segments.last().is_some_and(|s| s.ident == "device")
        && (p.segments.len() == 1 || (p.segments.len() == 2 && p.segments[0].ident == "relok"))
}

/// `self` (the receiver: not `self::`) as `this`, `Self` as the type.
fn rename_self(tokens: Tokens, this: &syn::Ident, self_ty: &syn::Type) -> Tokens {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Tokens::new();
    for (k, t) in tts.iter().enumerate() {
        match t {
            TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), rename_self(g.stream(), this, self_ty));
                ng.set_span(g.span());
                out.extend([TokenTree::Group(ng)]);
            }
            TokenTree::Ident(id) if id == "self" => {
                let path = matches!(tts.get(k + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if path {
                    out.extend([t.clone()]);
                } else {
                    out.extend([TokenTree::Ident(syn::Ident::new(&this.to_string(), id.span()))]);
                }
            }
            TokenTree::Ident(id) if id == "Self" => out.extend(quote_spanned!(id.span()=> #self_ty)),
            _ => out.extend([t.clone()]),
        }
    }
    out
}

fn rename_self_ty(ty: &syn::Type, self_ty: &syn::Type) -> syn::Type {
    let this = syn::Ident::new("__relok_self", Span::call_site());
    syn::parse2(rename_self(quote::ToTokens::to_token_stream(ty), &this, self_ty)).unwrap_or_else(|_| ty.clone())
}
