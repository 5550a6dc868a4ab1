//! `match` on integers and `bool`s, as a statement and as a value,
//! lowered to a chain of `if`s over the scrutinee (evaluated once).
//!
//! Patterns: literals (`3`, `-1`, `true`, `2.5`), ranges (`a..=b`,
//! `a..b`, `..=b`, `a..`, bounds literals or `const`s), `|`, `_`, a
//! `const` (a path, or a name starting with an uppercase letter) and a
//! binding (`n`, `mut n`, `n @ pattern`: the scrutinee's value); arms may
//! have guards (`n if n > 5 =>`), evaluated only when the pattern matches,
//! with the bindings in scope. Anything else is refused at its span.
//!
//! rustc decides what the patterns mean, so the lowering cannot disagree
//! with it silently:
//!
//! - the arms' patterns go, verbatim, into a `match` that is never run
//!   (`__kernel::check_match`, over a value of the scrutinee's Rust type):
//!   rustc checks their types and the match's exhaustiveness there, so the
//!   chain's last arm is taken without a test when it has no guard (an
//!   exhaustive `match` reaches it only when it matches), and warns of
//!   unreachable arms as it would for the Rust;
//! - a lowercase name is a binding, an uppercase one a `const`: rustc
//!   refuses the first if it names a `const` (`let n = ();` does not
//!   compile when `n` is one), and the second if it names none (it is
//!   read as a value).

use super::{Binding, Translator};
use proc_macro2::TokenStream as Tokens;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Pat};

/// What an arm's pattern tests and binds.
struct Arm {
    /// The test over `__m` (`None`: always matches).
    test: Option<Tokens>,
    /// The names bound to the scrutinee (`true`: `mut`).
    binds: Vec<(syn::Ident, bool)>,
}

impl Translator {
    /// `match` as a statement.
    pub(super) fn match_stmt(&mut self, m: &syn::ExprMatch) -> Tokens {
        self.lower_match(m, false)
    }

    /// `match` as a value.
    pub(super) fn match_value(&mut self, m: &syn::ExprMatch) -> Tokens {
        self.lower_match(m, true)
    }

    fn lower_match(&mut self, m: &syn::ExprMatch, value: bool) -> Tokens {
        if let Some(t) = self.option_match(m, value) {
            return t;
        }
        let scrutinee = self.expr(&m.expr);
        let mut arms = Vec::new();
        let mut checks = Tokens::new();
        for a in &m.arms {
            if let Some(attr) = a.attrs.first() {
                return self.refuse(attr.span(), "a kernel's `match` arm takes no attributes");
            }
            let mut arm = Arm { test: None, binds: Vec::new() };
            arm.test = match self.pattern(&a.pat, &mut arm.binds) {
                Ok(t) => t,
                Err(e) => return e,
            };
            for (n, _) in &arm.binds {
                checks.extend(quote_spanned!(n.span()=> #[allow(unused_variables)] let #n = ();));
            }
            arms.push(arm);
        }
        let checker_arms = m.arms.iter().map(|a| {
            let p = self.checker_pat(&a.pat);
            let guard = a.guard.as_ref().map(|(i, _)| quote!(#i ::relok::__kernel::guard()));
            let body = quote_spanned!(a.body.span()=> {});
            quote!(#p #guard => #body,)
        });
        // The user's braces: rustc's help for a missing arm points there.
        let mut arms_group = proc_macro2::Group::new(proc_macro2::Delimiter::Brace, quote!(#(#checker_arms)*));
        arms_group.set_span(m.brace_token.span.join());
        let check = quote_spanned!(m.match_token.span=>
            #[allow(unused_variables, unused_mut)]
            let () = ::relok::__kernel::check_match(__m, |__d| match __d #arms_group);
        );
        let chain = self.arm_chain(&m.arms, &arms, value);
        quote!({ let __m = #scrutinee; #check { #checks } #chain })
    }

    /// Arms `k..` as nested `if`s: the last one without a guard is taken
    /// without a test (see the module docs).
    fn arm_chain(&mut self, src: &[syn::Arm], arms: &[Arm], value: bool) -> Tokens {
        let Some((a, rest)) = src.split_first() else {
            return if value { quote!(__cx.never()) } else { quote!({}) };
        };
        let arm = &arms[0];
        let body = self.scoped(|t| {
            let binds = t.bind_arm(&arm.binds);
            let b = if value { t.arm_value(&a.body) } else { t.arm_stmt(&a.body) };
            quote!({ #binds #b })
        });
        let last = rest.is_empty();
        let test = match (&arm.test, &a.guard) {
            (_, None) if last => return body,
            (None, None) => quote!(__cx.lit(true)),
            (Some(t), None) => t.clone(),
            (t, Some((_, g))) => {
                let t = t.clone().unwrap_or_else(|| quote!(__cx.lit(true)));
                let g = self.scoped(|tr| {
                    let binds = tr.bind_arm(&arm.binds.iter().map(|(n, _)| (n.clone(), false)).collect::<Vec<_>>());
                    let g = tr.expr(g);
                    quote!({ #binds #g })
                });
                quote!({ let __t = #t; __cx.and(__t, |__cx| #g) })
            }
        };
        let otherwise = self.arm_chain(rest, &arms[1..], value);
        if value {
            quote!({ let __c = #test; __cx.if_val(__c, |__cx| #body, |__cx| #otherwise) })
        } else {
            quote!({ let __c = #test; __cx.if_(__c, |__cx| #body, |__cx| #otherwise); })
        }
    }

    fn bind_arm(&mut self, binds: &[(syn::Ident, bool)]) -> Tokens {
        let mut out = Tokens::new();
        for (n, mutable) in binds {
            if *mutable {
                self.bind(n, Binding::Var);
                out.extend(quote_spanned!(n.span()=> let #n = __cx.var(__m);));
            } else {
                self.bind(n, Binding::Val);
                out.extend(quote_spanned!(n.span()=> let #n = __m;));
            }
        }
        out
    }

    /// An arm's body as a statement.
    fn arm_stmt(&mut self, e: &Expr) -> Tokens {
        match e {
            Expr::Block(b) if b.label.is_none() => self.block_unit(&b.block),
            e => {
                let s = self.stmt_expr(e);
                quote!({ #s })
            }
        }
    }

    /// An arm's body as a value: a diverging one (`return`, `panic!()`)
    /// has none.
    fn arm_value(&mut self, e: &Expr) -> Tokens {
        if super::statement::is_diverging_expr(e) {
            let s = self.stmt_expr(e);
            return quote!({ #s __cx.never() });
        }
        self.expr(e)
    }

    /// The test of `p` over `__m`, collecting its bindings; `Err` is the
    /// refusal.
    fn pattern(&mut self, p: &Pat, binds: &mut Vec<(syn::Ident, bool)>) -> Result<Option<Tokens>, Tokens> {
        Ok(match p {
            Pat::Wild(_) => None,
            Pat::Paren(p) => self.pattern(&p.pat, binds)?,
            Pat::Lit(l) => {
                let v = self.expr(&Expr::Lit(l.clone()));
                Some(quote_spanned!(l.span()=> { let __p = #v; __cx.eq(__m, __p) }))
            }
            Pat::Path(p) if p.qself.is_none() => {
                let c = self.const_value(&p.path);
                Some(quote_spanned!(p.span()=> { let __p = #c; __cx.eq(__m, __p) }))
            }
            Pat::Ident(pi) if pi.by_ref.is_none() => {
                let constant = pi.subpat.is_none()
                    && pi.mutability.is_none()
                    && pi.ident.to_string().starts_with(|c: char| c.is_uppercase());
                if constant {
                    let c = self.const_value(&syn::Path::from(pi.ident.clone()));
                    return Ok(Some(quote_spanned!(pi.span()=> { let __p = #c; __cx.eq(__m, __p) })));
                }
                if !binds.iter().any(|(n, _)| *n == pi.ident) {
                    binds.push((pi.ident.clone(), pi.mutability.is_some()));
                }
                match &pi.subpat {
                    Some((_, sub)) => self.pattern(sub, binds)?,
                    None => None,
                }
            }
            Pat::Range(r) => {
                let bound = |t: &mut Self, e: &Expr| match e {
                    Expr::Lit(_) => Ok(t.expr(e)),
                    Expr::Path(p) if p.qself.is_none() => Ok(t.const_value(&p.path)),
                    e => Err(t.refuse(e.span(), "a range pattern's bounds are literals or `const`s")),
                };
                let lo = match &r.start {
                    Some(s) => {
                        let v = bound(self, s)?;
                        Some(quote!({ let __p = #v; __cx.ge(__m, __p) }))
                    }
                    None => None,
                };
                let hi = match (&r.end, &r.limits) {
                    (Some(e), syn::RangeLimits::Closed(_)) => {
                        let v = bound(self, e)?;
                        Some(quote!({ let __p = #v; __cx.le(__m, __p) }))
                    }
                    (Some(e), syn::RangeLimits::HalfOpen(_)) => {
                        let v = bound(self, e)?;
                        Some(quote!({ let __p = #v; __cx.lt(__m, __p) }))
                    }
                    (None, _) => None,
                };
                match (lo, hi) {
                    (Some(a), Some(b)) => {
                        Some(quote_spanned!(r.span()=> { let __a = #a; let __b = #b; __cx.bitand(__a, __b) }))
                    }
                    (a, b) => a.or(b),
                }
            }
            Pat::Or(o) => {
                let mut tests = Vec::new();
                let mut always = false;
                for c in &o.cases {
                    match self.pattern(c, binds)? {
                        Some(t) => tests.push(t),
                        None => always = true,
                    }
                }
                if always {
                    None
                } else {
                    let mut it = tests.into_iter();
                    let first = it.next().unwrap_or_else(|| quote!(__cx.lit(false)));
                    Some(it.fold(first, |acc, t| quote!({ let __a = #acc; let __b = #t; __cx.bitor(__a, __b) })))
                }
            }
            p => {
                return Err(self.refuse(
                    p.span(),
                    "a kernel's `match` takes integer and `bool` patterns: literals, ranges `a..=b`, `|`, `_`, `const`s and names; on an `Option`, a `Some(p)` arm then `None` or `_` (or `None` then `Some(p)`)",
                ));
            }
        })
    }

    /// A `const` of the user's, read as a value (a path seen from the
    /// staged body).
    fn const_value(&self, p: &syn::Path) -> Tokens {
        let path = self.outer(p);
        quote_spanned!(p.span()=> __cx.lit(#path))
    }

    /// `p` for the `match` rustc checks, its paths seen from the staged
    /// body.
    fn checker_pat(&self, p: &Pat) -> Pat {
        let mut p = p.clone();
        self.rewrite_paths(&mut p);
        p
    }

    fn rewrite_paths(&self, p: &mut Pat) {
        let bound = |t: &Self, e: &mut Expr| {
            if let Expr::Path(ep) = e {
                ep.path = t.outer(&ep.path);
            }
        };
        match p {
            Pat::Paren(q) => self.rewrite_paths(&mut q.pat),
            Pat::Path(q) => q.path = self.outer(&q.path),
            Pat::Ident(pi) => {
                if let Some((_, sub)) = &mut pi.subpat {
                    self.rewrite_paths(sub);
                }
            }
            Pat::Range(r) => {
                if let Some(s) = &mut r.start {
                    bound(self, s);
                }
                if let Some(e) = &mut r.end {
                    bound(self, e);
                }
            }
            Pat::Or(o) => o.cases.iter_mut().for_each(|c| self.rewrite_paths(c)),
            _ => {}
        }
    }
}
