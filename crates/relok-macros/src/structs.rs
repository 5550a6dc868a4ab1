//! `#[derive(relok::Struct)]`: a user struct a kernel takes by value,
//! builds, returns from a device function and keeps in slices
//! (`Buffer<Particle>` on the host).
//!
//! The kernel's macro cannot see the struct, so the derive generates what
//! kernels need, in a `const _: () = { … };` block:
//!
//! - the checks: named fields of the scalar types a device lays out as the
//!   host does (`i32 u32 i64 u64 f32 f64`), `#[repr(C)]`, no padding (the
//!   field a C layout would pad before, or the struct's end, is the error's
//!   span), no generics; and, for rustc, each field's type
//!   (`assert_field`: a name that shadows a scalar is refused), `Copy`,
//!   and the size (a `const` assertion that the fields fill it);
//! - `bytemuck`'s `Zeroable` and `Pod` (sound after those checks: the
//!   user writes no `unsafe`), `relok::Element` (its IR type is the
//!   fields' struct, `{f32, f32, u32}`), and `LaunchArg` (a kernel's
//!   struct parameter is one IR parameter per field);
//! - three twins with the struct's field names: the value (`Val<T>` per
//!   field), the `let mut` (`Var<T>` per field) and the element's place
//!   (`FieldRef<T>` per field: `ps[i].x` loads one field), and the
//!   `relok::__kernel` traits that load, store, declare and pass them.

use proc_macro2::TokenStream as Tokens;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// Scalars a kernel struct's fields may have, with their sizes.
const FIELD_TYPES: [(&str, usize); 10] = [
    ("u8", 1),
    ("i8", 1),
    ("u16", 2),
    ("i16", 2),
    ("i32", 4),
    ("u32", 4),
    ("i64", 8),
    ("u64", 8),
    ("f32", 4),
    ("f64", 8),
];

pub fn derive(input: Tokens) -> Tokens {
    let item = match syn::parse2::<syn::DeriveInput>(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Vec::new();
    let name = &item.ident;

    if !item.generics.params.is_empty() {
        errors.push(syn::Error::new(
            item.generics.span(),
            "a kernel struct has no generic parameters: its fields are concrete scalars",
        ));
    }
    let fields = match &item.data {
        syn::Data::Struct(syn::DataStruct { fields: syn::Fields::Named(f), .. }) => f.named.iter().collect::<Vec<_>>(),
        syn::Data::Struct(s) => {
            errors.push(syn::Error::new(
                s.struct_token.span,
                "a kernel struct has named fields: `struct Particle { x: f32, v: f32 }`",
            ));
            Vec::new()
        }
        syn::Data::Enum(e) => {
            errors.push(syn::Error::new(
                e.enum_token.span,
                "`relok::Struct` derives only structs: kernels have no enums",
            ));
            Vec::new()
        }
        syn::Data::Union(u) => {
            errors.push(syn::Error::new(
                u.union_token.span,
                "`relok::Struct` derives only structs: kernels have no unions",
            ));
            Vec::new()
        }
    };
    if matches!(&item.data, syn::Data::Struct(_)) && fields.is_empty() && errors.is_empty() {
        errors
            .push(syn::Error::new(name.span(), "a kernel struct has at least one field (an empty type has no layout)"));
    }
    check_repr(&item, &mut errors);
    // The C layout: each field at the next multiple of its size (size =
    // alignment for these scalars), the end at a multiple of the largest.
    let mut offset = 0usize;
    let mut largest = 1usize;
    for f in &fields {
        let ty = &f.ty;
        let size = match field_type(ty) {
            Some((_, size)) => size,
            None => {
                errors.push(unsupported_field(ty));
                continue;
            }
        };
        let fname = f.ident.as_ref().map(ToString::to_string).unwrap_or_default();
        if !offset.is_multiple_of(size) {
            let pad = size - offset % size;
            errors.push(syn::Error::new(
                f.span(),
                format!(
                    "`{name}` would have {pad} bytes of padding before `{fname}` (C puts each {size}-byte field at a multiple of {size}): a kernel struct has none; order the fields largest first, or add `_pad` fields of {pad} bytes (u8, u16, u32) before it"
                ),
            ));
            offset += pad;
        }
        offset += size;
        largest = largest.max(size);
    }
    if errors.is_empty() && !offset.is_multiple_of(largest) {
        let pad = largest - offset % largest;
        errors.push(syn::Error::new(
            name.span(),
            format!(
                "`{name}` would have {pad} bytes of padding at its end (its size is a multiple of its largest field's, {largest}): a kernel struct has none; add `_pad` fields of {pad} bytes (u8, u16, u32) at the end"
            ),
        ));
    }
    if !errors.is_empty() {
        return errors.iter().map(syn::Error::to_compile_error).collect();
    }
    generate(&item, &fields)
}

/// `#[repr(C)]`, and nothing else in it.
fn check_repr(item: &syn::DeriveInput, errors: &mut Vec<syn::Error>) {
    let mut c = false;
    for a in item.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let r = a.parse_nested_meta(|m| {
            if m.path.is_ident("C") {
                c = true;
                Ok(())
            } else {
                Err(m.error("a kernel struct is `#[repr(C)]` only (no `packed`, `align` or other representation)"))
            }
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    if !c {
        errors.push(syn::Error::new(
            item.ident.span(),
            "a kernel struct is `#[repr(C)]` (its fields in order, as the device lays them out): add `#[repr(C)]`",
        ));
    }
}

fn field_type(ty: &syn::Type) -> Option<(&'static str, usize)> {
    let syn::Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    let id = p.path.get_ident()?.to_string();
    FIELD_TYPES.iter().find(|(n, _)| *n == id).copied()
}

fn unsupported_field(ty: &syn::Type) -> syn::Error {
    let msg = match ty {
        syn::Type::Path(p) if p.path.is_ident("bool") || p.path.is_ident("usize") => {
            "`bool` and `usize` fields have no device layout that matches the host's (a device `usize` is 32 bits): use `u32`"
        }
        syn::Type::Array(_) => {
            "a kernel struct's fields are scalars (u8 i8 u16 i16 i32 u32 i64 u64 f32 f64), not arrays: write one field per element (`x: f32, y: f32, z: f32`)"
        }
        _ => {
            "a kernel struct's fields are scalars (u8 i8 u16 i16 i32 u32 i64 u64 f32 f64); nested structs are not supported: write their fields here"
        }
    };
    syn::Error::new(ty.span(), msg)
}

fn generate(item: &syn::DeriveInput, fields: &[&syn::Field]) -> Tokens {
    let name = &item.ident;
    let k = quote!(::relok::__kernel);
    let names: Vec<&syn::Ident> = fields.iter().filter_map(|f| f.ident.as_ref()).collect();
    let vis: Vec<&syn::Visibility> = fields.iter().map(|f| &f.vis).collect();
    let tys: Vec<&syn::Type> = fields.iter().map(|f| &f.ty).collect();
    let index: Vec<u32> = (0..fields.len() as u32).collect();
    let name_strs: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    // The twins are named as the struct, each in a module saying what it
    // is (rustc's errors name them: "no field `y` on type
    // `kernel::Particle`"); their fields are as visible as the struct's.
    let val = quote!(kernel::#name);
    let var = quote!(kernel_mut::#name);
    let place = quote!(slice_element::#name);
    let vis: Vec<syn::Visibility> = vis.iter().map(|v| one_down(v)).collect();
    let checks = tys.iter().map(|t| quote_spanned!(t.span()=> #k::assert_field::<#t>();));
    let size_msg = format!("`{name}` has padding: a kernel struct's fields fill it (see `relok::Struct`)");
    let doc = format!("The staged value of a `{name}` in a kernel (generated by `relok::Struct`).");
    quote! {
        const _: () = {
            #[doc(hidden)]
            pub mod kernel {
                #[doc = #doc]
                #[derive(Clone, Copy)]
                pub struct #name { #(#vis #names: #k::Val<#tys>,)* }
            }

            #[doc(hidden)]
            pub mod kernel_mut {
                #[derive(Clone, Copy)]
                pub struct #name { #(#vis #names: #k::Var<#tys>,)* }
            }

            #[doc(hidden)]
            pub mod slice_element {
                #[derive(Clone, Copy)]
                pub struct #name { #(#vis #names: #k::FieldRef<#tys>,)* }
            }

            #[allow(dead_code)]
            fn __relok_checks() {
                #k::assert_copy::<#name>();
                #(#checks)*
            }
            const _: () = ::core::assert!(
                ::core::mem::size_of::<#name>() == 0 #(+ ::core::mem::size_of::<#tys>())*,
                #size_msg
            );

            // SAFETY: `#[repr(C)]` (checked above), every field one of
            // `i32 u32 i64 u64 f32 f64` (checked by `assert_field`, which
            // only they implement: `Pod`, every bit pattern valid), no
            // padding (the size is the fields' sum), `Copy`, no generics
            // and no lifetimes (so `'static`).
            unsafe impl #k::bytemuck::Zeroable for #name {}
            // SAFETY: as for `Zeroable`.
            unsafe impl #k::bytemuck::Pod for #name {}

            impl #k::Sealed for #name {}

            impl ::relok::Element for #name {
                const TYPE: ::relok::ElementType =
                    ::relok::ElementType::Struct(&[#(<#tys as #k::DevScalar>::MEM),*]);
                fn from_device_bytes(bytes: &[u8]) -> ::core::result::Result<::std::vec::Vec<Self>, usize> {
                    ::core::result::Result::Ok(#k::bytemuck::pod_collect_to_vec(bytes))
                }
            }

            impl #k::Stored for #name {
                type Val = #val;
                fn ty() -> #k::Type {
                    <Self as ::relok::Element>::TYPE.ir_type()
                }
                fn load_at(cx: &mut #k::Cx<'_>, p: #k::Value, i: ::core::option::Option<#k::Value>) -> #val {
                    let q = cx.elem_ptr(p, i);
                    #val { #(#names: cx.load_field::<#tys>(q, #index),)* }
                }
                fn load_fields(cx: &mut #k::Cx<'_>, p: #k::Value, i: ::core::option::Option<#k::Value>, fields: &[&str]) -> #val {
                    let q = cx.elem_ptr(p, i);
                    #val {
                        #(#names: if fields.contains(&#name_strs) {
                            cx.load_field::<#tys>(q, #index)
                        } else {
                            <#k::Val<#tys> as #k::KernelValue>::never(cx)
                        },)*
                    }
                }
                fn store_at(cx: &mut #k::Cx<'_>, p: #k::Value, i: ::core::option::Option<#k::Value>, v: #val) {
                    let q = cx.elem_ptr(p, i);
                    #(cx.store_field::<#tys>(q, #index, v.#names);)*
                }
            }

            impl #k::DevStruct for #name {
                type Place = #place;
                fn place(p: #k::Value) -> #place {
                    #place { #(#names: #k::FieldRef::new(p, #index),)* }
                }
            }

            impl #k::KernelValue for #val {
                type Var = #var;
                fn new_var(cx: &mut #k::Cx<'_>) -> #var {
                    #var { #(#names: <#k::Val<#tys> as #k::KernelValue>::new_var(cx),)* }
                }
                fn never(cx: &mut #k::Cx<'_>) -> #val {
                    #val { #(#names: <#k::Val<#tys> as #k::KernelValue>::never(cx),)* }
                }
            }

            impl #k::KernelVar for #var {
                type Val = #val;
                fn get(self, cx: &mut #k::Cx<'_>) -> #val {
                    #val { #(#names: #k::KernelVar::get(self.#names, cx),)* }
                }
                fn set(self, cx: &mut #k::Cx<'_>, v: #val) {
                    #(#k::KernelVar::set(self.#names, cx, v.#names);)*
                }
            }

            impl #k::Param for #val {
                fn declare(cx: &mut #k::Cx<'_>) -> #val {
                    #val { #(#names: <#k::Val<#tys> as #k::Param>::declare(cx),)* }
                }
                fn values(self, out: &mut ::std::vec::Vec<#k::Value>) {
                    #(#k::push(out, self.#names);)*
                }
            }

            impl #k::IntoStruct<#name> for #val {
                fn into_struct(self) -> #val {
                    self
                }
            }

            impl<'a> #k::LaunchArg<'a> for #name {
                fn push(
                    self,
                    out: &mut ::std::vec::Vec<::relok::Arg<'a>>,
                    kernel: &'static str,
                    param: &'static str,
                ) -> ::relok::Result<()> {
                    #(#k::LaunchArg::push(self.#names, out, kernel, param)?;)*
                    ::core::result::Result::Ok(())
                }
            }
        };
    }
}

/// A field's visibility for its twin, one module down (the twins are in
/// modules of their own): a private field is visible in the struct's
/// module, so its twin's is `pub(super)`.
fn one_down(v: &syn::Visibility) -> syn::Visibility {
    match v {
        syn::Visibility::Inherited => syn::parse_quote!(pub(super)),
        syn::Visibility::Public(_) => v.clone(),
        syn::Visibility::Restricted(r) => {
            let p = &r.path;
            if p.is_ident("crate") {
                v.clone()
            } else if p.is_ident("self") {
                syn::parse_quote!(pub(super))
            } else if p.is_ident("super") {
                syn::parse_quote!(pub(in super::super))
            } else if p.segments.first().is_some_and(|s| s.ident == "crate") {
                v.clone()
            } else {
                syn::parse_quote!(pub(crate))
            }
        }
    }
}
