//! `#[relok::kernel]`, `#[relok::device]` and `#[relok::host]`: Rust
//! kernels as relok IR. Use them through the `relok` crate; the subset,
//! the mapping of each construct to the IR and what is refused are in
//! docs/kernels.md.
//!
//! Shape: a kernel's body is translated, construct by construct
//! (the `translate` module), into a Rust function over *staged* values
//! (`relok::__kernel::Val<T>` and friends) that builds the kernel's IR when
//! it runs — once per process. rustc type-checks that function, so a type
//! error in a kernel is a Rust type error at the user's span; a construct
//! outside the subset is a `compile_error!` at its span, saying what is
//! supported instead, and the rest of the item is still generated (the
//! kernel's `launch` exists, so one error does not cascade).
//!
//! - [`kernel`] turns `fn name(params)` into `mod name` with `launch`
//!   (typed after the parameters), `program` and the definition `DEF`;
//! - [`device`] turns `fn name` into a hidden `enum name {}` (the type
//!   namespace, so a call `name(x)` resolves as Rust resolves `name`)
//!   whose `impl` defines the IR device function in a module (callees
//!   first; its IR name is its mangled path) and stages a call;
//! - [`host`] keeps the static and adds its companion, naming it by path,
//!   reached through a hidden `enum NAME {}` of the same name;
//! - [`macro@Struct`] (`structs.rs`) checks a struct's layout and
//!   generates what kernels need of it (its staged twins, `Pod`,
//!   `relok::Element`); [`device`] on a struct's `impl` (`methods.rs`)
//!   makes its methods device functions.

mod methods;
mod structs;
mod translate;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use translate::{FnKind, ParamKind, Translator};

/// A kernel: `#[relok::kernel] fn name(x: &[f32], y: &mut [f32], a: f32)`
/// becomes `mod name` with `launch(&stream, grid, &Buffer<f32>, &mut
/// Buffer<f32>, f32)`, `program()` (its verified IR) and `DEF`. The subset
/// of Rust a kernel is written in is in the repository's docs/kernels.md.
///
/// ```
/// #[relok::kernel]
/// fn add_one(x: &mut [u32]) {
///     let i = relok::global_id_x();
///     if i < x.len() {
///         x[i] += 1;
///     }
/// }
///
/// fn main() -> Result<(), relok::Error> {
///     let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
///     let mut x = ctx.upload(&[1u32, 2, 3])?;
///     let s = ctx.stream();
///     add_one::launch(&s, relok::Grid::cover(3, 64), &mut x)?;
///     s.synchronize()?;
///     assert_eq!(x.download()?, [2, 3, 4]);
///     Ok(())
/// }
/// ```
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr, item, true)
}

/// A device function a kernel calls: `#[relok::device] fn f(x: f32) ->
/// f32` (scalars and slices in, a scalar or nothing out; an IR device
/// function, defined once per module). A generic one (`fn f<T:
/// relok::Number>`) is staged into each caller at the caller's types.
///
/// ```
/// #[relok::device]
/// fn square(v: f32) -> f32 {
///     v * v
/// }
///
/// #[relok::kernel]
/// fn squares(x: &mut [f32]) {
///     let i = relok::global_id_x();
///     if i < x.len() {
///         x[i] = square(x[i]);
///     }
/// }
///
/// fn main() -> Result<(), relok::Error> {
///     let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
///     let mut x = ctx.upload(&[1.0f32, 2.0, 3.0])?;
///     let s = ctx.stream();
///     squares::launch(&s, relok::Grid::cover(3, 64), &mut x)?;
///     s.synchronize()?;
///     assert_eq!(x.download()?, [1.0, 4.0, 9.0]);
///     Ok(())
/// }
/// ```
///
/// On a `relok::Struct`'s `impl` block, it makes each method with a
/// receiver (`self`, `&self`) a device function, called as in Rust:
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq, relok::Struct)]
/// #[repr(C)]
/// struct Vec2 {
///     x: f32,
///     y: f32,
/// }
///
/// #[relok::device]
/// impl Vec2 {
///     fn dot(self, o: Vec2) -> f32 {
///         self.x * o.x + self.y * o.y
///     }
/// }
///
/// #[relok::kernel]
/// fn dots(a: &[Vec2], out: &mut [f32]) {
///     let i = relok::global_id_x();
///     if i < a.len() && i < out.len() {
///         out[i] = a[i].dot(a[i]);
///     }
/// }
///
/// fn main() -> Result<(), relok::Error> {
///     let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
///     let a = ctx.upload(&[Vec2 { x: 3.0, y: 4.0 }])?;
///     let mut out = ctx.zeros::<f32>(1)?;
///     let s = ctx.stream();
///     dots::launch(&s, relok::Grid::cover(1, 64), &a, &mut out)?;
///     s.synchronize()?;
///     assert_eq!(out.download()?, [Vec2 { x: 3.0, y: 4.0 }.dot(Vec2 { x: 3.0, y: 4.0 })]);
///     Ok(())
/// }
/// ```
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr, item, false)
}

/// A host static a kernel reads by identity (its path; or
/// `#[relok::host(name = "…")]`): `#[relok::host] static LUT: [u32; 16] =
/// …;`. The kernel's key holds the path, never the bytes: each context
/// writes this process's bytes to the device when it loads a kernel that
/// reads the static, so editing the table recompiles nothing.
///
/// ```
/// #[relok::host]
/// static PRIMES: [u32; 4] = [2, 3, 5, 7];
///
/// #[relok::kernel]
/// fn nth_prime(x: &mut [u32]) {
///     let i = relok::global_id_x();
///     if i < x.len() {
///         x[i] = PRIMES[x[i] as usize];
///     }
/// }
///
/// fn main() -> Result<(), relok::Error> {
///     let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
///     let mut x = ctx.upload(&[3u32, 0, 9])?;
///     let s = ctx.stream();
///     nth_prime::launch(&s, relok::Grid::cover(3, 64), &mut x)?;
///     let err = s.synchronize().unwrap_err();       // PRIMES[9]: out of bounds
///     assert!(err.to_string().ends_with("index out of bounds: the len is 4 but the index is 9"), "{err}");
///     Ok(())
/// }
/// ```
#[proc_macro_attribute]
pub fn host(attr: TokenStream, item: TokenStream) -> TokenStream {
    host_static(attr.into(), item.into()).into()
}

/// A struct kernels compute with, keep in slices and take as parameters:
/// `#[derive(Clone, Copy, relok::Struct)]` on a `#[repr(C)]` struct of
/// `i32 u32 i64 u64 f32 f64` fields without padding. It implements
/// [`relok::Element`](../relok/trait.Element.html) (so `Buffer<Particle>`
/// uploads and downloads it) and `bytemuck::Pod` — after checking the
/// layout, so no `unsafe` is written — and what kernels need to lower a
/// value of it to one IR value per field.
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq, relok::Struct)]
/// #[repr(C)]
/// struct Particle {
///     x: f32,
///     v: f32,
/// }
///
/// #[relok::kernel]
/// fn step(ps: &mut [Particle], dt: f32) {
///     let i = relok::global_id_x();
///     if i < ps.len() {
///         let p = ps[i];
///         ps[i].x = p.x + p.v * dt;
///     }
/// }
///
/// fn main() -> Result<(), relok::Error> {
///     let ctx = relok::Context::builder().device("cpu").no_cache().build()?;
///     let mut ps = ctx.upload(&[Particle { x: 1.0, v: 2.0 }])?;
///     let s = ctx.stream();
///     step::launch(&s, relok::Grid::cover(1, 64), &mut ps, 0.5)?;
///     s.synchronize()?;
///     assert_eq!(ps.download()?, [Particle { x: 2.0, v: 2.0 }]);
///     Ok(())
/// }
/// ```
#[proc_macro_derive(Struct)]
pub fn derive_struct(item: TokenStream) -> TokenStream {
    structs::derive(item.into()).into()
}

fn expand(attr: TokenStream, item: TokenStream, is_kernel: bool) -> TokenStream {
    let attr: Tokens = attr.into();
    let mut errors = Vec::new();
    let mut block = None;
    if is_kernel {
        match block_shape(attr) {
            Ok(b) => block = b,
            Err(e) => errors.push(e),
        }
    } else if !attr.is_empty() {
        errors.push(syn::Error::new(attr.span(), "this attribute takes no arguments"));
    }
    let f = match syn::parse::<syn::Item>(item) {
        Ok(syn::Item::Fn(f)) => f,
        // `#[relok::device] impl Vec3 { … }`: its methods (`methods.rs`).
        Ok(syn::Item::Impl(i)) if !is_kernel => return methods::device_impl(i, errors).into(),
        Ok(other) => {
            let what = if is_kernel { "a `fn`" } else { "a `fn` or a struct's `impl` block" };
            return syn::Error::new(other.span(), format!("this attribute applies to {what}"))
                .to_compile_error()
                .into();
        }
        Err(e) => return e.to_compile_error().into(),
    };
    if !is_kernel && let Some(r) = f.sig.receiver() {
        // A method marked alone: the function is left as written.
        let e = syn::Error::new(
            r.span(),
            "a struct's methods are device methods through their `impl` block: `#[relok::device] impl Vec3 { fn dot(self, o: Vec3) -> f32 { … } }` (the attribute on a method cannot name its type)",
        )
        .to_compile_error();
        return quote!(#e #f).into();
    }
    let out = if is_kernel { kernel_fn(&f, block, errors) } else { device_fn(&f, errors) };
    out.into()
}

/// A kernel attribute's arguments: nothing, or `block = (x, y, z)` (`y`
/// and `z` may be left out: 1), the block shape every launch must have.
fn block_shape(attr: Tokens) -> syn::Result<Option<[u32; 3]>> {
    if attr.is_empty() {
        return Ok(None);
    }
    let parser = |input: syn::parse::ParseStream<'_>| -> syn::Result<[u32; 3]> {
        let key: syn::Ident = input.parse()?;
        if key != "block" {
            return Err(syn::Error::new(key.span(), "expected `block = (x, y, z)`, the kernel's block shape"));
        }
        input.parse::<syn::Token![=]>()?;
        // The dimensions and the tokens they were written as (errors span them all).
        let (dims, written): (Vec<syn::LitInt>, Tokens) = if input.peek(syn::token::Paren) {
            let group: proc_macro2::Group = input.parse()?;
            let list = syn::punctuated::Punctuated::<syn::LitInt, syn::Token![,]>::parse_terminated;
            (syn::parse::Parser::parse2(list, group.stream())?.into_iter().collect(), quote!(#group))
        } else {
            let lit: syn::LitInt = input.parse()?;
            (vec![lit.clone()], quote!(#lit))
        };
        if dims.is_empty() || dims.len() > 3 {
            return Err(syn::Error::new_spanned(
                written,
                "a block shape has one to three dimensions: `block = (16, 16)`",
            ));
        }
        let mut shape = [1u32; 3];
        for (d, lit) in shape.iter_mut().zip(&dims) {
            *d = lit.base10_parse()?;
        }
        if let Some(why) = relok_ir::block_shape_problem(shape) {
            return Err(syn::Error::new_spanned(written, why));
        }
        Ok(shape)
    };
    syn::parse::Parser::parse2(parser, attr).map(Some)
}

/// Checks what kernels and device functions share: no generics, no
/// `async`/`const`/`unsafe`/`extern`, no `self`; the parameters.
fn signature(f: &syn::ItemFn, errors: &mut Vec<syn::Error>) -> Vec<(syn::Ident, ParamKind)> {
    let sig = &f.sig;
    if let Some(t) = &sig.asyncness {
        errors.push(syn::Error::new(t.span(), "a relok kernel or device function cannot be `async`"));
    }
    if let Some(t) = &sig.constness {
        errors.push(syn::Error::new(t.span(), "a relok kernel or device function cannot be `const`"));
    }
    if let Some(t) = &sig.unsafety {
        errors.push(syn::Error::new(
            t.span(),
            "a relok kernel or device function cannot be `unsafe`: its launch is safe",
        ));
    }
    if let Some(t) = &sig.abi {
        errors.push(syn::Error::new(t.span(), "a relok kernel or device function cannot have an ABI"));
    }
    if let Some(w) = &sig.generics.where_clause {
        errors.push(syn::Error::new(
            w.span(),
            "`where` clauses are not supported: write the bound on the parameter (`T: relok::Float`)",
        ));
    }
    if let Some(v) = &sig.variadic {
        errors.push(syn::Error::new(v.span(), "variadic parameters are not supported"));
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => {
                errors.push(syn::Error::new(
                    r.span(),
                    "a kernel or device function takes no `self`; a struct's methods are device methods through their `impl`: `#[relok::device] impl Vec3 { fn dot(self, o: Vec3) -> f32 { … } }`",
                ));
            }
            syn::FnArg::Typed(pt) => {
                let name = match &*pt.pat {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        if let Some(m) = &pi.mutability
                            && !matches!(translate::param_kind(&pt.ty), Ok(ParamKind::Scalar(_) | ParamKind::Struct(_)))
                        {
                            errors.push(syn::Error::new(
                                m.span(),
                                "only a scalar parameter may be `mut` (a slice parameter is not reassigned in a kernel)",
                            ));
                        }
                        pi.ident.clone()
                    }
                    other => {
                        errors.push(syn::Error::new(other.span(), "a parameter is a plain name (no patterns)"));
                        format_ident!("__relok_param_{}", params.len())
                    }
                };
                match translate::param_kind(&pt.ty) {
                    Ok(kind) => params.push((name, kind)),
                    Err(e) => {
                        errors.push(e);
                        params.push((name, ParamKind::Scalar(syn::parse_quote!(u32))));
                    }
                }
            }
        }
    }
    params
}

/// The scalar parameters declared `mut` (each a `let mut` of its value
/// in the body).
fn mut_params(f: &syn::ItemFn) -> Vec<syn::Ident> {
    f.sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Typed(pt) => match &*pt.pat {
                syn::Pat::Ident(pi) if pi.mutability.is_some() => Some(pi.ident.clone()),
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect()
}

fn errors_tokens(errors: &[syn::Error]) -> Tokens {
    errors.iter().map(syn::Error::to_compile_error).collect()
}

/// A generic kernel's parameters: `<T: bounds, const N: usize>` as
/// declared in the generated functions, as used, and the key type's.
struct Generics {
    decl: Tokens,
    args: Tokens,
    /// `type_name`s and values making the instance's IR name.
    name_parts: Vec<Tokens>,
    /// The type parameters.
    types: Vec<syn::Ident>,
}

fn generics(g: &syn::Generics, errors: &mut Vec<syn::Error>) -> Option<Generics> {
    if g.params.is_empty() {
        return None;
    }
    let mut decl = Vec::new();
    let mut args = Vec::new();
    let mut name_parts = Vec::new();
    let mut types = Vec::new();
    for p in &g.params {
        match p {
            syn::GenericParam::Type(t) => {
                let id = &t.ident;
                let mut bounds = vec![quote!(::relok::__kernel::Elem)];
                for b in &t.bounds {
                    let known = match b {
                        syn::TypeParamBound::Trait(tb) => tb.path.segments.last().map(|s| s.ident.to_string()),
                        _ => None,
                    };
                    match known.as_deref() {
                        Some("Element" | "Number") => {}
                        Some(k @ ("Float" | "Int" | "Signed")) => {
                            let k = format_ident!("{}", k);
                            bounds.push(quote!(::relok::__kernel::#k));
                        }
                        _ => errors.push(syn::Error::new(
                            b.span(),
                            "a kernel's type parameter is bounded by `relok::Number` (any element type), `relok::Float`, `relok::Int` or `relok::Signed`",
                        )),
                    }
                }
                if let Some(d) = &t.default {
                    errors.push(syn::Error::new(d.span(), "a kernel's type parameter has no default"));
                }
                decl.push(quote!(#id: #(#bounds)+*));
                args.push(quote!(#id));
                types.push(id.clone());
                name_parts.push(quote!(::std::any::type_name::<#id>().to_string()));
            }
            syn::GenericParam::Const(c) => {
                let id = &c.ident;
                let ty = &c.ty;
                decl.push(quote!(const #id: #ty));
                args.push(quote!(#id));
                name_parts.push(quote!(#id.to_string()));
            }
            syn::GenericParam::Lifetime(l) => {
                errors.push(syn::Error::new(l.span(), "a kernel has no lifetime parameters"));
            }
        }
    }
    Some(Generics { decl: quote!(<#(#decl),*>), args: quote!(<#(#args),*>), name_parts, types })
}

/// The names of a function's type parameters (`T` of `fn f<T, const N: usize>`).
fn type_param_names(generics: &syn::Generics) -> Vec<String> {
    generics
        .params
        .iter()
        .filter_map(|p| if let syn::GenericParam::Type(t) = p { Some(t.ident.to_string()) } else { None })
        .collect()
}

fn kernel_fn(f: &syn::ItemFn, block: Option<[u32; 3]>, errors: Vec<syn::Error>) -> Tokens {
    let out = translate::with_type_params(type_param_names(&f.sig.generics), || kernel_fn_inner(f, block, errors));
    translate::staged_names(out, f.block.brace_token.span.join())
}

fn kernel_fn_inner(f: &syn::ItemFn, block: Option<[u32; 3]>, mut errors: Vec<syn::Error>) -> Tokens {
    let generic = generics(&f.sig.generics, &mut errors);
    let params = signature(f, &mut errors);
    if let syn::ReturnType::Type(_, ty) = &f.sig.output {
        errors.push(syn::Error::new(ty.span(), "a kernel returns nothing: write results into a `&mut [T]` parameter"));
    }
    let name = &f.sig.ident;
    let name_str = name.to_string();
    let vis = &f.vis;
    let mut t = Translator::new(FnKind::Kernel, &params);
    t.mutable_params(&mut_params(f));
    let body = t.body(&f.block);
    errors.append(&mut t.errors);
    let callees = t.callee_defs();
    let declare = declare_params(&params);
    let taken = |n: &str| params.iter().any(|(p, _)| p == n);
    let stream = if taken("stream") { format_ident!("relok_stream") } else { format_ident!("stream") };
    let grid = if taken("grid") { format_ident!("relok_grid") } else { format_ident!("grid") };
    let launch_params = params.iter().map(|(n, k)| {
        let ty = k.launch_type();
        quote_spanned!(n.span()=> #n: #ty)
    });
    let pushes = params.iter().map(|(n, _)| {
        let param = n.unraw().to_string();
        quote!(::relok::__kernel::LaunchArg::push(#n, &mut __args, #name_str, #param)?;)
    });
    let count =
        params.iter().map(|(_, k)| if matches!(k, ParamKind::Slice { .. }) { 2usize } else { 1 }).sum::<usize>();
    let errs = errors_tokens(&errors);
    let block = match block {
        Some([x, y, z]) => quote!(::std::option::Option::Some([#x, #y, #z])),
        None => quote!(::std::option::Option::None),
    };
    // Docs, `cfg`s and lint levels go to the generated module.
    let kept = ["doc", "cfg", "cfg_attr", "allow", "expect", "warn", "deny"];
    let docs: Vec<_> = f.attrs.iter().filter(|a| kept.iter().any(|k| a.path().is_ident(k))).collect();
    let launch_doc = format!(
        "Launches the Rust kernel `{name_str}` on `stream` (loaded on the stream's context on first use; its IR is built once per process). Buffers pass their length with them."
    );
    if let Some(g) = generic {
        let Generics { decl, args, name_parts, types } = g;
        return quote! {
            #errs
            #(#docs)*
            #[allow(non_snake_case, non_camel_case_types, clippy::all)]
            #vis mod #name {
                #[allow(unused_imports)]
                use super::*;

                #[allow(unused_variables, unused_mut, unused_braces, unreachable_code, clippy::all)]
                fn __build #decl (__m: &mut ::relok::__kernel::ModuleCx) {
                    #callees
                    let __name = ::relok::__kernel::instance_name(#name_str, &[#(#name_parts),*]);
                    __m.kernel(&__name, #block, |__cx| {
                        #declare
                        #body
                    });
                }

                struct __Instance #decl (::std::marker::PhantomData<(#(#types,)*)>);

                /// The kernel's instances, one per type and constant: each its own IR and key.
                pub static INSTANCES: ::relok::__kernel::Instances = ::relok::__kernel::Instances::new(#name_str);

                /// The definition of one instance: its IR, built once.
                pub fn def #decl () -> &'static ::relok::__kernel::KernelDef {
                    INSTANCES.get(::std::any::TypeId::of::<__Instance #args>(), __build::#args)
                }

                #[doc = #launch_doc]
                #[allow(clippy::too_many_arguments)]
                pub fn launch #decl (#stream: &::relok::Stream, #grid: ::relok::Grid, #(#launch_params),*) -> ::relok::Result<()> {
                    let mut __args = ::std::vec::Vec::with_capacity(#count);
                    #(#pushes)*
                    def::#args().launch(#stream, #grid, __args)
                }

                /// One instance's verified IR (built on first use).
                pub fn program #decl () -> ::relok::Result<&'static ::relok::Program> {
                    def::#args().program()
                }
            }
        };
    }
    quote! {
        #errs
        #(#docs)*
        #[allow(non_snake_case, non_camel_case_types, clippy::all)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            #[allow(unused_variables, unused_mut, unused_braces, unreachable_code, clippy::all)]
            fn __build(__m: &mut ::relok::__kernel::ModuleCx) {
                #callees
                __m.kernel(#name_str, #block, |__cx| {
                    #declare
                    #body
                });
            }

            /// The kernel's definition: its IR, built once per process.
            pub static DEF: ::relok::__kernel::KernelDef = ::relok::__kernel::KernelDef::new(#name_str, __build);

            #[doc = #launch_doc]
            #[allow(clippy::too_many_arguments)]
            pub fn launch(#stream: &::relok::Stream, #grid: ::relok::Grid, #(#launch_params),*) -> ::relok::Result<()> {
                let mut __args = ::std::vec::Vec::with_capacity(#count);
                #(#pushes)*
                DEF.launch(#stream, #grid, __args)
            }

            /// The kernel's verified IR (built on first use).
            pub fn program() -> ::relok::Result<&'static ::relok::Program> {
                DEF.program()
            }
        }
    }
}

fn declare_params(params: &[(syn::Ident, ParamKind)]) -> Tokens {
    params
        .iter()
        .map(|(n, k)| {
            let ty = k.dsl_type();
            quote!(let #n: #ty = __cx.param();)
        })
        .collect()
}

fn device_fn(f: &syn::ItemFn, errors: Vec<syn::Error>) -> Tokens {
    device_fn_at(f, errors, None)
}

/// A device function; `path_name` names it after the module path
/// instead of its own name (a method: `Vec3::dot`).
fn device_fn_at(f: &syn::ItemFn, errors: Vec<syn::Error>, path_name: Option<String>) -> Tokens {
    let out = translate::with_type_params(type_param_names(&f.sig.generics), || device_fn_inner(f, errors, path_name));
    translate::staged_names(out, f.block.brace_token.span.join())
}

fn device_fn_inner(f: &syn::ItemFn, mut errors: Vec<syn::Error>, path_name: Option<String>) -> Tokens {
    let generic = generics(&f.sig.generics, &mut errors);
    let params = signature(f, &mut errors);
    // A struct or a tuple is several IR values, and an IR function
    // returns one: a function returning one is staged into each caller,
    // as a generic one is.
    let mut several = false;
    let ret = match &f.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, ty) => match translate::scalar_type(ty) {
            Some(_) => Some((**ty).clone()),
            None if translate::staged_type(ty, &|p| p.clone()).is_some() => {
                several = true;
                Some((**ty).clone())
            }
            None => {
                errors.push(syn::Error::new(
                    ty.span(),
                    format!(
                        "a device function returns a scalar ({}), a `relok::Struct` struct, a tuple of those, or nothing",
                        translate::SCALAR_LIST
                    ),
                ));
                Some(syn::parse_quote!(u32))
            }
        },
    };
    let name = &f.sig.ident;
    let name_str = name.unraw().to_string();
    if translate::is_builtin_name(&name_str) {
        errors.push(syn::Error::new(
            name.span(),
            format!(
                "`{name_str}` is a kernel builtin: a kernel's `{name_str}()` always means the builtin, so a device function of that name could never be called; rename it"
            ),
        ));
    }
    let path_str = path_name.unwrap_or_else(|| name_str.clone());
    let vis = &f.vis;
    let kind = if generic.is_some() || several {
        FnKind::Inline { returns: ret.is_some() }
    } else {
        FnKind::Device { ret: ret.clone().map(Box::new) }
    };
    let mut t = Translator::new(kind, &params);
    t.mutable_params(&mut_params(f));
    let body = t.body(&f.block);
    if let Some(p) = t.calls(&f.sig.ident.to_string()) {
        errors
            .push(syn::Error::new(p.span(), "a device function cannot call itself: calls are inlined (write a loop)"));
    }
    errors.append(&mut t.errors);
    let callees = t.callee_defs();
    let declare = declare_params(&params);
    let ret_dsl = match &ret {
        Some(t) => translate::staged_type(t, &|p| p.clone()).unwrap_or_else(|| quote!(::relok::__kernel::Val<#t>)),
        None => quote!(()),
    };
    let call_params = params.iter().map(|(n, k)| {
        let ty = k.call_type();
        quote_spanned!(n.span()=> #n: #ty)
    });
    let converts: Vec<Tokens> = params
        .iter()
        .map(|(n, k)| {
            let c = k.convert(n);
            quote!(let #n = #c;)
        })
        .collect();
    let pushes = params.iter().map(|(n, _)| quote!(::relok::__kernel::push(&mut __args, #n);));
    let errs = errors_tokens(&errors);
    let cfgs: Vec<_> = f.attrs.iter().filter(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr")).collect();
    // The function's staged twin lives in the type namespace under its
    // own name (`enum f {}` with the definer and the caller in its
    // `impl`): a call `f(x)` is `f::__relok_call(…)`, resolved by rustc
    // as `f` is (imports, paths); a function that is not a device
    // function is reported by its own name. Its IR function is named by
    // its path (`relok::__kernel::device_name`), unique per module.
    let item = quote! {
        #(#cfgs)*
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis enum #name {}
    };
    let bail = if ret.is_some() { quote!(__cx.never()) } else { quote!(()) };
    if generic.is_some() || several {
        // Generic: staged into each caller (its type parameters are the
        // caller's), so no IR function; its callees are defined up front.
        // So is one returning several values.
        let decl = generic.map(|g| g.decl).unwrap_or_default();
        return quote! {
            #errs
            #item

            #(#cfgs)*
            #[allow(non_snake_case, dead_code, clippy::all)]
            impl #name {
                #[doc(hidden)]
                pub const __RELOK_PATH: &'static str = concat!(module_path!(), "::", #path_str);

                #[doc(hidden)]
                pub fn __relok_define(__m: &mut ::relok::__kernel::ModuleCx) -> ::relok::__kernel::FuncId {
                    if let ::std::option::Option::Some(id) = __m.enter(Self::__RELOK_PATH) {
                        return id;
                    }
                    #callees
                    __m.inline(Self::__RELOK_PATH)
                }

                #[doc(hidden)]
                #[allow(unused_variables, unused_mut, unused_braces, unreachable_code)]
                pub fn __relok_call #decl (__cx: &mut ::relok::__kernel::Cx<'_>, #(#call_params),*) -> #ret_dsl {
                    // Staged into itself (a cycle of methods, whose
                    // callees are not known up front): an error, not an
                    // endless staging.
                    if __cx.inline_enter(Self::__RELOK_PATH) {
                        return #bail;
                    }
                    let __r = {
                        #(#converts)*
                        #body
                    };
                    __cx.inline_exit();
                    __r
                }
            }
        };
    }
    quote! {
        #errs
        #item

        #(#cfgs)*
        #[allow(non_snake_case, dead_code, clippy::all)]
        impl #name {
            #[doc(hidden)]
            pub const __RELOK_PATH: &'static str = concat!(module_path!(), "::", #path_str);

            #[doc(hidden)]
            #[allow(unused_variables, unused_mut, unused_braces, unreachable_code)]
            pub fn __relok_define(__m: &mut ::relok::__kernel::ModuleCx) -> ::relok::__kernel::FuncId {
                if let ::std::option::Option::Some(id) = __m.enter(Self::__RELOK_PATH) {
                    return id;
                }
                #callees
                __m.device::<#ret_dsl>(Self::__RELOK_PATH, |__cx| {
                    #declare
                    #body
                })
            }

            #[doc(hidden)]
            pub fn __relok_call(__cx: &mut ::relok::__kernel::Cx<'_>, #(#call_params),*) -> #ret_dsl {
                #(#converts)*
                let __f = __cx.func_or_define(Self::__RELOK_PATH, Self::__relok_define);
                let mut __args = ::std::vec::Vec::new();
                #(#pushes)*
                __cx.call(__f, __args)
            }
        }
    }
}

fn host_static(attr: Tokens, item: Tokens) -> Tokens {
    let s = match syn::parse2::<syn::ItemStatic>(item) {
        Ok(s) => s,
        Err(e) => {
            return syn::Error::new(e.span(), "#[relok::host] applies to a `static NAME: [T; N] = …;`")
                .to_compile_error();
        }
    };
    let mut errors = Vec::new();
    let mut explicit = None;
    if !attr.is_empty() {
        match syn::parse2::<syn::MetaNameValue>(attr.clone()) {
            Ok(nv) if nv.path.is_ident("name") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => explicit = Some(s.value()),
                v => errors.push(syn::Error::new(v.span(), "expected a string: `name = \"…\"`")),
            },
            _ => {
                errors.push(syn::Error::new(attr.span(), "expected `name = \"…\"` (the static's identity) or nothing"))
            }
        }
    }
    if let syn::StaticMutability::Mut(m) = &s.mutability {
        errors.push(syn::Error::new(m.span(), "a host static is read-only to kernels: `static mut` is not supported"));
    }
    match &*s.ty {
        syn::Type::Array(a) if translate::scalar_type(&a.elem).is_some_and(|t| t != "bool" && t != "usize") => {}
        ty => errors.push(syn::Error::new(
            ty.span(),
            "a host static is an array of u8, i8, u16, i16, i32, u32, i64, u64, f32 or f64 (`[T; N]`); pass a scalar as a kernel parameter",
        )),
    }
    let name = &s.ident;
    let ty = &s.ty;
    let vis = &s.vis;
    let companion = format_ident!("__RELOK_HOST_{}", name.unraw());
    let name_str = name.unraw().to_string();
    let path = match explicit {
        Some(p) => quote!(#p),
        None => quote!(concat!(module_path!(), "::", #name_str)),
    };
    let location = quote_spanned!(name.span()=> concat!(file!(), ":", line!()));
    let errs = errors_tokens(&errors);
    let cfgs: Vec<_> = s.attrs.iter().filter(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr")).collect();
    // The companion is reached through the static's name in the type
    // namespace (`enum NAME {}`, its `impl`): a kernel's `NAME[i]` reads
    // `NAME::__relok_host()`, so indexing a static that is not
    // `#[relok::host]` is reported by rustc under the static's own name.
    let companion_def = if errors.is_empty() {
        quote! {
            #(#cfgs)*
            #[doc(hidden)]
            #[allow(non_upper_case_globals)]
            #vis static #companion: ::relok::__kernel::HostStatic<#ty> = ::relok::__kernel::HostStatic::new(#path, #location, &#name);

            #(#cfgs)*
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            #vis enum #name {}

            #(#cfgs)*
            #[allow(dead_code)]
            impl #name {
                #[doc(hidden)]
                pub fn __relok_host() -> &'static ::relok::__kernel::HostStatic<#ty> {
                    &#companion
                }
            }
        }
    } else {
        Tokens::new()
    };
    quote! {
        #errs
        #s
        #companion_def
    }
}

/// A span's `Loc` (file, line, column as Rust reports them).
fn loc(span: Span) -> Tokens {
    quote_spanned!(span=> ::relok::__kernel::Loc { file: file!(), line: line!(), col: column!() })
}
