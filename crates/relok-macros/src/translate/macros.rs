//! Macros: `panic!`, `throw!` and `unreachable!` (a throw with a
//! literal message), `assert!` / `debug_assert!`, `assert_eq!` /
//! `assert_ne!` (and their `debug_` forms, staged only under
//! `debug_assertions`), and `sym!` (a symbol's word).

use super::{Translator, path_str};
use crate::loc;
use proc_macro2::TokenStream as Tokens;
use quote::{ToTokens, quote, quote_spanned};
use syn::Expr;
use syn::spanned::Spanned;

impl Translator {
    /// A macro as a statement (`sym!` has a value, dropped).
    pub(super) fn mac_stmt(&mut self, m: &syn::Macro) -> Tokens {
        let t = self.mac(m);
        if m.path.segments.last().is_some_and(|s| s.ident == "sym") { quote!(let _ = #t;) } else { t }
    }

    /// `panic!("…")`, `throw!("…")`, `assert!(c)`, `assert!(c, "…")`.
    pub(super) fn mac(&mut self, m: &syn::Macro) -> Tokens {
        let name = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let span = m.span();
        let at = loc(m.path.span());
        match name.as_str() {
            "sym" => {
                let Ok(lit) = syn::parse2::<syn::LitStr>(m.tokens.clone()) else {
                    return self.refuse(m.tokens.span(), "`sym!` takes the symbol's name as a string literal: `sym!(\"foo\")`");
                };
                let name = lit.value();
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                    return self.refuse(lit.span(), "a symbol's name is made of `A-Z a-z 0-9 _ .`");
                }
                quote_spanned!(span=> __cx.symbol(#name))
            }
            "panic" | "throw" | "unreachable" => {
                let message = if m.tokens.is_empty() {
                    if name == "unreachable" { "internal error: entered unreachable code".to_owned() } else { "explicit panic".to_owned() }
                } else {
                    match literal_message(&m.tokens) {
                        Ok(s) => s,
                        Err(e) => {
                            self.errors.push(e);
                            return quote!(::core::panic!(););
                        }
                    }
                };
                quote_spanned!(span=> __cx.throw(#message, #at);)
            }
            "assert" | "debug_assert" => {
                let parsed = m.parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated);
                let args = match parsed {
                    Ok(a) => a,
                    Err(e) => {
                        self.errors.push(e);
                        return quote!(::core::panic!(););
                    }
                };
                let Some(cond) = args.first() else {
                    return self.refuse(span, "`assert!` needs a condition");
                };
                let message = match args.iter().nth(1) {
                    None => format!("assertion failed: {}", pretty(cond)),
                    Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) if args.len() == 2 && !s.value().contains('{') => s.value(),
                    Some(other) => {
                        return self.refuse(
                            other.span(),
                            "an `assert!` message is a string literal without formatting: it is a relocated host value, not formatted on the device",
                        );
                    }
                };
                let c = self.expr(cond);
                let t = quote_spanned!(span=> { let __c = #c; __cx.assert(__c, #message, #at); });
                debug_only(&name, t)
            }
            "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" => {
                let parsed = m.parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated);
                let args = match parsed {
                    Ok(a) if a.len() == 2 || a.len() == 3 => a,
                    Ok(_) => return self.refuse(span, format!("`{name}!` takes two values and an optional message")),
                    Err(e) => {
                        self.errors.push(e);
                        return quote!(::core::panic!(););
                    }
                };
                let op = if name.ends_with("_eq") { "==" } else { "!=" };
                let mut message = format!("assertion `left {op} right` failed");
                match args.iter().nth(2) {
                    None => {}
                    Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) if !s.value().contains('{') => {
                        message = format!("{message}: {}", s.value());
                    }
                    Some(other) => {
                        return self.refuse(
                            other.span(),
                            "an assertion's message is a string literal without formatting: it is a relocated host value, not formatted on the device",
                        );
                    }
                }
                let (a, b) = (self.expr(&args[0]), self.expr(&args[1]));
                let cmp = if op == "==" { quote!(eq) } else { quote!(ne) };
                let t = quote_spanned!(span=> { let __a = #a; let __b = #b; let __c = __cx.#cmp(__a, __b); __cx.assert(__c, #message, #at); });
                debug_only(&name, t)
            }
            _ => self.refuse(
                m.path.span(),
                format!(
                    "the macro `{}!` is not supported in kernels; supported: `assert!`, `assert_eq!`, `assert_ne!`, `panic!`, `throw!`, `unreachable!`, `sym!`",
                    path_str(&m.path)
                ),
            ),
        }
    }
}

/// A `debug_` assertion is staged only where the kernel's crate is
/// built with `debug_assertions` (as Rust's `debug_assert!`: checked for
/// types everywhere, run only there); the others always.
fn debug_only(name: &str, staged: Tokens) -> Tokens {
    if name.starts_with("debug_") { quote!(if ::core::cfg!(debug_assertions) #staged) } else { staged }
}

fn literal_message(tokens: &Tokens) -> syn::Result<String> {
    let lit: syn::LitStr = syn::parse2(tokens.clone()).map_err(|_| {
        syn::Error::new(
            tokens.span(),
            "a kernel's panic message is one string literal, without formatting arguments: it is a relocated host value",
        )
    })?;
    if lit.value().contains('{') {
        return Err(syn::Error::new(
            lit.span(),
            "a kernel's panic message cannot be formatted: it is a relocated host value",
        ));
    }
    Ok(lit.value())
}

/// Source text of an expression, close to how rustc prints it in
/// `assertion failed: …`.
fn pretty(e: &Expr) -> String {
    let s = e.to_token_stream().to_string();
    s.replace(" . ", ".")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" [", "[")
        .replace("[ ", "[")
        .replace(" ]", "]")
}
