//! Calls and methods: the builtins (`thread_id_x()`, `global_id_x()`, …),
//! atomics (on a slice element or a `relok::Global`), calls of
//! `#[relok::device]` functions, and Rust methods through the one table
//! [`METHODS`] (`len`, `abs`, `min`, `max`, the math functions, the
//! integer and float methods `relok::__kernel` composes from the IR's
//! operations, `checked_*` and `Option`'s methods), a slice's `swap` and `fill`, and every table method in path form too (`f32::max(a, b)`,
//! `u32::count_ones(x)`: the receiver is the first argument, of that
//! type) and `f32::from_bits(b)`.

use super::{Translator, is_relok_path, staged_item, strip_paren};
use crate::loc;
use proc_macro2::TokenStream as Tokens;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::Expr;
use syn::spanned::Spanned;

/// How a Rust method maps to the IR.
#[derive(Clone, Copy)]
enum Mapping {
    /// A method of `Cx` taking the receiver and the arguments.
    Cx(&'static str),
    /// A method of `Cx` taking the receiver, the arguments and where the
    /// call is (it may throw Rust's panic message).
    CxAt(&'static str),
    /// `math <fn>` of the IR (`relok_ir::MathFn::<variant>`) over the
    /// receiver and the arguments, in order.
    Math(&'static str),
}

/// Whether the IR has its math operations (`Op::Math`): until it does,
/// every [`Mapping::Math`] method is refused with a spanned error.
const IR_HAS_MATH: bool = true;

/// Rust float and integer methods → the IR's operations: the ONE table.
/// (method, arguments besides the receiver, mapping)
const METHODS: &[(&str, usize, Mapping)] = &[
    ("abs", 0, Mapping::Cx("abs")),
    ("sqrt", 0, Mapping::Cx("sqrt")),
    ("min", 1, Mapping::Cx("min")),
    ("max", 1, Mapping::Cx("max")),
    ("recip", 0, Mapping::Cx("recip")),
    ("is_nan", 0, Mapping::Cx("is_nan")),
    ("mul_add", 2, Mapping::Math("Fma")),
    ("floor", 0, Mapping::Math("Floor")),
    ("ceil", 0, Mapping::Math("Ceil")),
    ("trunc", 0, Mapping::Math("Trunc")),
    ("round", 0, Mapping::Math("Round")),
    ("copysign", 1, Mapping::Math("Copysign")),
    ("exp", 0, Mapping::Math("Exp")),
    ("exp2", 0, Mapping::Math("Exp2")),
    ("ln", 0, Mapping::Math("Log")),
    ("log2", 0, Mapping::Math("Log2")),
    ("log10", 0, Mapping::Math("Log10")),
    ("sin", 0, Mapping::Math("Sin")),
    ("cos", 0, Mapping::Math("Cos")),
    ("tan", 0, Mapping::Math("Tan")),
    ("sinh", 0, Mapping::Math("Sinh")),
    ("cosh", 0, Mapping::Math("Cosh")),
    ("tanh", 0, Mapping::Math("Tanh")),
    ("asin", 0, Mapping::Math("Asin")),
    ("acos", 0, Mapping::Math("Acos")),
    ("atan", 0, Mapping::Math("Atan")),
    ("atan2", 1, Mapping::Math("Atan2")),
    ("powf", 1, Mapping::Math("Pow")),
    ("hypot", 1, Mapping::Math("Hypot")),
    ("powi", 1, Mapping::Cx("powi")),
    ("signum", 0, Mapping::Cx("signum")),
    ("clamp", 2, Mapping::CxAt("clamp")),
    ("is_finite", 0, Mapping::Cx("is_finite")),
    ("is_infinite", 0, Mapping::Cx("is_infinite")),
    ("is_sign_negative", 0, Mapping::Cx("is_sign_negative")),
    ("is_sign_positive", 0, Mapping::Cx("is_sign_positive")),
    ("to_bits", 0, Mapping::Cx("to_bits")),
    ("count_ones", 0, Mapping::Cx("count_ones")),
    ("count_zeros", 0, Mapping::Cx("count_zeros")),
    ("leading_zeros", 0, Mapping::Cx("leading_zeros")),
    ("trailing_zeros", 0, Mapping::Cx("trailing_zeros")),
    ("leading_ones", 0, Mapping::Cx("leading_ones")),
    ("trailing_ones", 0, Mapping::Cx("trailing_ones")),
    ("rotate_left", 1, Mapping::Cx("rotate_left")),
    ("rotate_right", 1, Mapping::Cx("rotate_right")),
    ("swap_bytes", 0, Mapping::Cx("swap_bytes")),
    ("reverse_bits", 0, Mapping::Cx("reverse_bits")),
    ("pow", 1, Mapping::Cx("pow")),
    ("is_positive", 0, Mapping::Cx("is_positive")),
    ("is_negative", 0, Mapping::Cx("is_negative")),
    // The IR's integer arithmetic wraps.
    ("wrapping_add", 1, Mapping::Cx("add")),
    ("wrapping_sub", 1, Mapping::Cx("sub")),
    ("wrapping_mul", 1, Mapping::Cx("mul")),
    ("wrapping_div", 1, Mapping::Cx("div")),
    ("wrapping_rem", 1, Mapping::Cx("rem")),
    ("wrapping_neg", 0, Mapping::Cx("wrapping_neg")),
    ("wrapping_abs", 0, Mapping::Cx("abs")),
    ("wrapping_shl", 1, Mapping::Cx("wrapping_shl")),
    ("wrapping_shr", 1, Mapping::Cx("wrapping_shr")),
    ("wrapping_pow", 1, Mapping::Cx("pow")),
    ("saturating_add", 1, Mapping::Cx("saturating_add")),
    ("saturating_sub", 1, Mapping::Cx("saturating_sub")),
    ("saturating_mul", 1, Mapping::Cx("saturating_mul")),
    // Tuples (`relok::__kernel`'s `structs.rs`).
    ("sin_cos", 0, Mapping::Cx("sin_cos")),
    ("overflowing_add", 1, Mapping::Cx("overflowing_add")),
    ("overflowing_sub", 1, Mapping::Cx("overflowing_sub")),
    ("overflowing_mul", 1, Mapping::Cx("overflowing_mul")),
    ("abs_diff", 1, Mapping::Cx("abs_diff")),
    // `Option`s (`relok::__kernel`'s `option.rs`); `expect` takes a
    // literal message (below).
    ("checked_add", 1, Mapping::Cx("checked_add")),
    ("checked_sub", 1, Mapping::Cx("checked_sub")),
    ("checked_mul", 1, Mapping::Cx("checked_mul")),
    ("checked_div", 1, Mapping::Cx("checked_div")),
    ("checked_rem", 1, Mapping::Cx("checked_rem")),
    ("checked_neg", 0, Mapping::Cx("checked_neg")),
    ("checked_shl", 1, Mapping::Cx("checked_shl")),
    ("checked_shr", 1, Mapping::Cx("checked_shr")),
    ("is_some", 0, Mapping::Cx("is_some")),
    ("is_none", 0, Mapping::Cx("is_none")),
    ("unwrap_or", 1, Mapping::Cx("unwrap_or")),
    ("unwrap_or_default", 0, Mapping::Cx("unwrap_or_default")),
    ("unwrap", 0, Mapping::CxAt("unwrap")),
    // The value of an `Option` tested to hold one (`if let`, `option.rs`).
    ("__relok_some_value", 0, Mapping::Cx("some_value")),
];

/// A method call, written `x.m(args)` or `T::m(x, args)` (`ty`: `T`).
struct MethodCall<'a> {
    ty: Option<&'a syn::Ident>,
    method: &'a syn::Ident,
    receiver: &'a Expr,
    args: Vec<&'a Expr>,
}

/// `e` as a method call, if it is one (in either form).
fn method_call(e: &Expr) -> Option<MethodCall<'_>> {
    match strip_paren(e) {
        Expr::MethodCall(m) if m.turbofish.is_none() => {
            Some(MethodCall { ty: None, method: &m.method, receiver: &m.receiver, args: m.args.iter().collect() })
        }
        Expr::Call(c) => {
            let (ty, method) = scalar_path(c)?;
            let (receiver, args) = c.args.iter().collect::<Vec<_>>().split_first().map(|(r, a)| (*r, a.to_vec()))?;
            Some(MethodCall { ty: Some(ty), method, receiver, args })
        }
        _ => None,
    }
}

/// `T::m` of a call `T::m(…)` with `T` a scalar type.
fn scalar_path(c: &syn::ExprCall) -> Option<(&syn::Ident, &syn::Ident)> {
    let Expr::Path(p) = &*c.func else { return None };
    if p.qself.is_some() || p.path.leading_colon.is_some() || p.path.segments.len() != 2 {
        return None;
    }
    let (t, m) = (&p.path.segments[0], &p.path.segments[1]);
    if !t.arguments.is_empty() || !m.arguments.is_empty() {
        return None;
    }
    super::types::SCALARS.contains(&t.ident.to_string().as_str()).then_some((&t.ident, &m.ident))
}

/// Builtins: `name` → (family 0..3 or 4 = global id, axis).
fn builtin(name: &str) -> Option<(u8, u8)> {
    let (family, axis) = name.rsplit_once('_')?;
    let axis = match axis {
        "x" => 0,
        "y" => 1,
        "z" => 2,
        _ => return None,
    };
    let family = match family {
        "thread_id" => 0,
        "block_id" => 1,
        "block_dim" => 2,
        "grid_dim" => 3,
        "global_id" => 4,
        _ => return None,
    };
    Some((family, axis))
}

const ATOMICS: [&str; 5] = ["atomic_add", "atomic_min", "atomic_max", "atomic_exchange", "atomic_compare_exchange"];

/// Whether a kernel's call `name()` (one segment) is a builtin, whatever
/// is in scope: a device function of that name is refused at its
/// definition (the macro cannot see which items a call's module has).
pub fn is_builtin_name(name: &str) -> bool {
    builtin(name).is_some()
        || ["sync_threads", "shared", "halving", "doubling"].contains(&name)
        || ATOMICS.contains(&name)
}

impl Translator {
    pub(super) fn method(&mut self, m: &syn::ExprMethodCall) -> Tokens {
        let span = m.span();
        let name = m.method.to_string();
        if (name == "sum" || name == "product") && m.args.is_empty() {
            return self.fold(m);
        }
        if m.turbofish.is_some() {
            return self.refuse(m.method.span(), "method generics are not supported in kernels");
        }
        if name == "len"
            && m.args.is_empty()
            && let Some(t) = self.array2_len(&m.receiver)
        {
            return t;
        }
        if name == "len" && m.args.is_empty() {
            let Some(base) = self.indexable(&m.receiver, false) else {
                return quote!({ ::core::panic!() });
            };
            return quote_spanned!(span=> { let __b = #base; __cx.len(__b) });
        }
        if name == "swap" && m.args.len() == 2 {
            let Some(base) = self.indexable(&m.receiver, true) else {
                return quote!({ ::core::panic!() });
            };
            let i = self.expr(&m.args[0]);
            let j = self.expr(&m.args[1]);
            let at = loc(m.method.span());
            return quote_spanned!(span=> { let __b = #base; let __i = #i; let __j = #j; __cx.swap(__b, __i, __j, #at); });
        }
        if name == "fill" && m.args.len() == 1 {
            let Some(base) = self.indexable(&m.receiver, true) else {
                return quote!({ ::core::panic!() });
            };
            let v = self.expr(&m.args[0]);
            return quote_spanned!(span=> { let __b = #base; let __v = #v; __cx.fill(__b, __v); });
        }
        if name == "get_unchecked" || name == "get_unchecked_mut" {
            return self.refuse(m.method.span(), format!("`{name}` is used as `*x.{name}(i)` inside `unsafe`"));
        }
        if name == "expect" {
            return self.expect(m);
        }
        let call = MethodCall { ty: None, method: &m.method, receiver: &m.receiver, args: m.args.iter().collect() };
        self.table_method(&call, span)
    }

    /// A method of [`METHODS`], in either form.
    fn table_method(&mut self, m: &MethodCall<'_>, span: proc_macro2::Span) -> Tokens {
        let name = m.method.to_string();
        let Some(&(_, arity, mapping)) = METHODS.iter().find(|(n, _, _)| *n == name) else {
            // Not a number method: a struct's (rustc finds it, `methods.rs`).
            if m.ty.is_none() {
                return self.struct_method(m, span);
            }
            let known: Vec<&str> =
                METHODS.iter().filter(|m| IR_HAS_MATH || !matches!(m.2, Mapping::Math(_))).map(|m| m.0).collect();
            return self.refuse(
                m.method.span(),
                format!(
                    "the method `{name}` is not supported in kernels; supported: `len`, `get_unchecked`, `swap`, `fill`, `expect`, {}",
                    known.join(", ")
                ),
            );
        };
        if matches!(mapping, Mapping::Math(_)) && !IR_HAS_MATH {
            return self.refuse(
                m.method.span(),
                format!("`{name}` needs the IR's math operations, which this build does not have yet; supported: abs, sqrt, min, max, recip, is_nan"),
            );
        }
        if m.args.len() != arity {
            return self.refuse(span, format!("`{name}` takes {arity} argument(s)"));
        }
        let recv = self.typed_receiver(m);
        let args: Vec<Tokens> = m.args.iter().map(|a| self.expr(a)).collect();
        let names: Vec<_> = (0..args.len()).map(|k| format_ident!("__b{}", k)).collect();
        let call = match mapping {
            Mapping::Cx(f) => {
                let f = format_ident!("{}", f, span = m.method.span());
                quote_spanned!(span=> __cx.#f(__a, #(#names),*))
            }
            Mapping::CxAt(f) => {
                let f = format_ident!("{}", f, span = m.method.span());
                let at = loc(m.method.span());
                quote_spanned!(span=> __cx.#f(__a, #(#names,)* #at))
            }
            Mapping::Math(f) => {
                let f = format_ident!("{}", f);
                quote_spanned!(span=> __cx.math(::relok::__kernel::MathFn::#f, __a, &[#(#names),*]))
            }
        };
        quote_spanned!(span=> { #recv #(let #names = #args;)* #call })
    }

    /// `a.m(args)` of a struct's `#[relok::device] impl`: its receiver
    /// and arguments in order, then the call rustc finds by the
    /// receiver's type.
    fn struct_method(&mut self, m: &MethodCall<'_>, span: proc_macro2::Span) -> Tokens {
        let recv = self.receiver(m.receiver);
        let args: Vec<Tokens> = m.args.iter().map(|a| self.expr(a)).collect();
        // Spanned at each argument: a wrong one is reported there.
        let names: Vec<_> =
            m.args.iter().enumerate().map(|(k, a)| format_ident!("__b{}", k, span = a.span())).collect();
        let hash = crate::methods::method_hash(&m.method.to_string());
        let call = quote_spanned!(m.method.span()=> ::relok::__kernel::call_method::<#hash, _, _, _>);
        quote_spanned!(span=> { let __a = #recv; #(let #names = #args;)* #call(__cx, __a, (#(#names,)*)) })
    }

    /// `let __a = receiver;`, of the path's type in the path form.
    fn typed_receiver(&mut self, m: &MethodCall<'_>) -> Tokens {
        let recv = self.receiver(m.receiver);
        match m.ty {
            Some(t) => quote_spanned!(m.receiver.span()=> let __a: ::relok::__kernel::Val<#t> = #recv;),
            None => quote!(let __a = #recv;),
        }
    }

    /// `o.expect("message")`: Rust's panic message is the literal.
    fn expect(&mut self, m: &syn::ExprMethodCall) -> Tokens {
        let span = m.span();
        let message = match m.args.first() {
            Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) if m.args.len() == 1 => s.value(),
            _ => return self.refuse(m.args.span(), "`expect` takes a string literal in a kernel"),
        };
        let recv = self.receiver(&m.receiver);
        let at = loc(m.method.span());
        quote_spanned!(span=> { let __a = #recv; __cx.expect(__a, #message, #at) })
    }

    /// A method's receiver: an element of `x.iter_mut()` is read (Rust
    /// derefs it).
    fn receiver(&mut self, e: &Expr) -> Tokens {
        if let Expr::Path(p) = strip_paren(e)
            && let Some(id) = p.path.get_ident()
            && self.lookup(&id.to_string()) == Some(super::Binding::ElemMut)
        {
            return quote_spanned!(id.span()=> __cx.elem_get(#id));
        }
        self.expr(e)
    }

    pub(super) fn call(&mut self, c: &syn::ExprCall) -> Tokens {
        let span = c.span();
        if let Some(t) = self.closure_call(c).or_else(|| self.default_call(c)).or_else(|| self.some_call(c)) {
            return t;
        }
        let Expr::Path(fp) = &*c.func else {
            return self.refuse(c.func.span(), "only named functions are called in kernels");
        };
        let name = fp.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let relok_path = is_relok_path(&fp.path);
        if relok_path || fp.path.segments.len() == 1 {
            if let Some((family, axis)) = builtin(&name) {
                if !c.args.is_empty() {
                    return self.refuse(c.args.span(), format!("`{name}()` takes no arguments"));
                }
                return if family == 4 {
                    quote_spanned!(span=> __cx.global_id(#axis))
                } else {
                    quote_spanned!(span=> __cx.builtin(#family, #axis))
                };
            }
            if name == "sync_threads" {
                return self.refuse(span, "`sync_threads()` is a statement, not a value");
            }
            if name == "shared" {
                return self.refuse(span, "a shared array is declared with `let name = shared::<T, N>();`");
            }
            if name == "halving" || name == "doubling" {
                return self.refuse(span, format!("`{name}(…)` is what a `for` loop runs over: `for s in {name}(…)`"));
            }
            if ATOMICS.contains(&name.as_str()) {
                return self.atomic(&name, c);
            }
        }
        if relok_path {
            return self.refuse(fp.span(), format!("`relok::{name}` is not a kernel builtin (see docs/kernels.md)"));
        }
        if let Some((ty, method)) = scalar_path(c) {
            if method == "from_bits" && c.args.len() == 1 {
                let b = self.expr(&c.args[0]);
                return quote_spanned!(span=> { let __a = #b; __cx.from_bits::<#ty>(__a) });
            }
            return match method_call(&Expr::Call(c.clone())) {
                Some(m) => self.table_method(&m, span),
                None => self.refuse(span, format!("`{ty}::{method}` takes its receiver first: `{ty}::{method}(x, …)`")),
            };
        }
        // A device function: `f::__relok_call`, the staged twin
        // `#[relok::device]` puts under `f` in the type namespace.
        let path = self.outer(&fp.path);
        let key = path.to_token_stream().to_string();
        if !self.callees.iter().any(|(k, _, _)| *k == key) {
            let l = format_ident!("__relok_fn_{}", self.callees.len());
            self.callees.push((key, path.clone(), l));
        }
        let call = staged_item(&path, "__relok_call");
        let errors = self.errors.len();
        let mut lets = Tokens::new();
        let mut names = Vec::new();
        for (k, a) in c.args.iter().enumerate() {
            let v = self.expr(a);
            self.argument_borrow(a);
            // Spanned at the argument: a wrong one is reported there.
            let n = format_ident!("__a{}", k, span = a.span());
            lets.extend(quote!(let #n = #v;));
            names.push(n);
        }
        self.end_argument_borrows();
        if self.errors.len() > errors {
            // A refused argument: no call, which would fail again.
            return quote_spanned!(span=> { #lets ::core::panic!() });
        }
        quote_spanned!(span=> { #lets #call(__cx, #(#names),*) })
    }

    fn atomic(&mut self, name: &str, c: &syn::ExprCall) -> Tokens {
        let span = c.span();
        let want = if name == "atomic_compare_exchange" { 3 } else { 2 };
        if c.args.len() != want {
            return self.refuse(span, format!("`{name}` takes {want} arguments: `{name}(&x[i], …)`"));
        }
        // `atomic_add(&GLOBAL, v)`: a `relok::Global` (a path, not a name
        // in scope).
        if let Expr::Reference(r) = strip_paren(&c.args[0])
            && let Expr::Path(p) = strip_paren(&r.expr)
            && p.path.get_ident().is_none_or(|id| self.lookup(&id.to_string()).is_none())
        {
            let global = self.outer(&p.path);
            let rest: Vec<Tokens> = c.args.iter().skip(1).map(|a| self.expr(a)).collect();
            let names: Vec<_> = (0..rest.len()).map(|k| format_ident!("__v{}", k)).collect();
            let call = match name {
                "atomic_compare_exchange" => quote_spanned!(span=> __cx.global_compare_exchange(&#global, #(#names),*)),
                "atomic_exchange" => quote_spanned!(span=> __cx.global_exchange(&#global, #(#names),*)),
                _ => {
                    let op =
                        ["atomic_add", "atomic_min", "atomic_max"].iter().position(|n| *n == name).unwrap_or(0) as u8;
                    quote_spanned!(span=> __cx.global_atomic(&#global, #op, #(#names),*))
                }
            };
            return quote_spanned!(span=> { #(let #names = #rest;)* #call });
        }
        let place = match strip_paren(&c.args[0]) {
            Expr::Reference(r) => match strip_paren(&r.expr) {
                Expr::Index(ix) => ix,
                other => {
                    return self.refuse(
                        other.span(),
                        "an atomic's first argument is `&x[i]`, `&mut x[i]` or a `relok::Global` `&G`",
                    );
                }
            },
            other => return self.refuse(other.span(), "an atomic's first argument is `&x[i]` or `&mut x[i]`"),
        };
        let Some(base) = self.indexable(&place.expr, true) else {
            return quote!({ ::core::panic!() });
        };
        let i = self.expr(&place.index);
        let at = loc(place.index.span());
        let m = format_ident!("{}", name, span = c.func.span());
        let rest: Vec<Tokens> = c.args.iter().skip(1).map(|a| self.expr(a)).collect();
        let names: Vec<_> = (0..rest.len()).map(|k| format_ident!("__v{}", k)).collect();
        quote_spanned!(span=> { let __b = #base; let __i = #i; #(let #names = #rest;)* __cx.#m(__b, __i, #(#names,)* #at) })
    }
}

pub(super) fn call_name(c: &syn::ExprCall) -> Option<String> {
    let Expr::Path(p) = &*c.func else { return None };
    if p.path.segments.len() == 1 || is_relok_path(&p.path) {
        p.path.segments.last().map(|s| s.ident.to_string())
    } else {
        None
    }
}
