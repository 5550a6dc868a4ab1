//! Control flow: `if` / `else if` / `else` as a statement and as a
//! value, `while`, `loop`, `for` over a range (with `step_by`), `break`,
//! `continue` and `return`.

use super::{Binding, FnKind, Translator, strip_paren};
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::Expr;
use syn::spanned::Spanned;

impl Translator {
    pub(super) fn if_stmt(&mut self, i: &syn::ExprIf) -> Tokens {
        if let Expr::Let(l) = &*i.cond {
            return self.refuse(l.span(), "`if let` is not supported: the subset has no enums or patterns");
        }
        let c = self.expr(&i.cond);
        let then = self.block_unit(&i.then_branch);
        let otherwise = match &i.else_branch {
            None => quote!({}),
            Some((_, e)) => match &**e {
                Expr::If(inner) => {
                    let s = self.if_stmt(inner);
                    quote!({ #s })
                }
                Expr::Block(b) => self.block_unit(&b.block),
                other => self.refuse(other.span(), "expected `else { … }` or `else if`"),
            },
        };
        quote!({ let __c = #c; __cx.if_(__c, |__cx| #then, |__cx| #otherwise); })
    }

    pub(super) fn if_value(&mut self, i: &syn::ExprIf) -> Tokens {
        if let Expr::Let(l) = &*i.cond {
            return self.refuse(l.span(), "`if let` is not supported: the subset has no enums or patterns");
        }
        let Some((_, otherwise)) = &i.else_branch else {
            return self.refuse(i.span(), "an `if` with a value needs an `else`");
        };
        let c = self.expr(&i.cond);
        let then = self.block_value(&i.then_branch);
        let other = match &**otherwise {
            Expr::If(inner) => self.if_value(inner),
            Expr::Block(b) => self.block_value(&b.block),
            e => self.refuse(e.span(), "expected `else { … }` or `else if`"),
        };
        quote!({ let __c = #c; __cx.if_val(__c, |__cx| #then, |__cx| #other) })
    }

    /// `while c { … }`.
    pub(super) fn while_loop(&mut self, w: &syn::ExprWhile) -> Tokens {
        if let Some(l) = &w.label {
            return self.refuse(l.span(), "loop labels are not supported");
        }
        let c = self.scoped(|t| t.expr(&w.cond));
        self.loops += 1;
        let body = self.block_unit(&w.body);
        self.loops -= 1;
        quote!(__cx.while_(|__cx| #c, |__cx| #body);)
    }

    /// `loop { … }`.
    pub(super) fn plain_loop(&mut self, l: &syn::ExprLoop) -> Tokens {
        if let Some(l) = &l.label {
            return self.refuse(l.span(), "loop labels are not supported");
        }
        self.loops += 1;
        let body = self.block_unit(&l.body);
        self.loops -= 1;
        quote!(__cx.loop_(|__cx| #body);)
    }

    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) -> Tokens {
        if let Some(l) = &f.label {
            return self.refuse(l.span(), "loop labels are not supported");
        }
        let var = match &*f.pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() => {
                pi.ident.clone()
            }
            syn::Pat::Wild(w) => format_ident!("__relok_unused", span = w.span()),
            p => return self.refuse(p.span(), "a `for` loop binds one name: `for i in a..b`"),
        };
        let (range, step) = match &*f.expr {
            Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
                (strip_paren(&m.receiver), Some(&m.args[0]))
            }
            e => (strip_paren(e), None),
        };
        let (start, end) = match range {
            Expr::Range(r) => match (&r.start, &r.end, &r.limits) {
                (Some(s), Some(e), syn::RangeLimits::HalfOpen(_)) => (s, e),
                (_, _, syn::RangeLimits::Closed(c)) => {
                    return self.refuse(c.span(), "inclusive ranges are not supported: write `a..b + 1`");
                }
                _ => return self.refuse(r.span(), "a `for` range has a start and an end: `a..b`"),
            },
            e => {
                return self.refuse(
                    e.span(),
                    "a `for` loop runs over a range `a..b` (or `(a..b).step_by(k)`); iterate over indices: `for i in 0..x.len()`",
                );
            }
        };
        let s = self.expr(start);
        let e = self.expr(end);
        let step = match step {
            Some(k) => {
                let k = self.expr(k);
                quote!(::std::option::Option::Some(#k))
            }
            None => quote!(::std::option::Option::None),
        };
        self.loops += 1;
        let body = self.scoped(|t| {
            t.bind(&var, Binding::Val);
            t.block_unit(&f.body)
        });
        self.loops -= 1;
        quote!({
            let __s = #s;
            let __e = #e;
            let __k = #step;
            __cx.for_range(__s, __e, __k, |__cx, #var| #body);
        })
    }

    /// `break` (no label, no value).
    pub(super) fn break_stmt(&mut self, b: &syn::ExprBreak) -> Tokens {
        if let Some(l) = &b.label {
            return self.refuse(l.span(), "loop labels are not supported");
        }
        if let Some(v) = &b.expr {
            return self.refuse(v.span(), "`break` with a value is not supported: assign a `let mut` before `break`");
        }
        if self.loops == 0 {
            return self.refuse(b.span(), "`break` outside of a loop");
        }
        quote!(__cx.break_();)
    }

    /// `continue` (no label).
    pub(super) fn continue_stmt(&mut self, c: &syn::ExprContinue) -> Tokens {
        if let Some(l) = &c.label {
            return self.refuse(l.span(), "loop labels are not supported");
        }
        if self.loops == 0 {
            return self.refuse(c.span(), "`continue` outside of a loop");
        }
        quote!(__cx.continue_();)
    }

    /// `return`, by the function's kind: a device function's value, a
    /// kernel's end; refused in a generic (inlined) device function.
    pub(super) fn return_stmt(&mut self, r: &syn::ExprReturn) -> Tokens {
        match (self.kind.clone(), &r.expr) {
            (FnKind::Device { ret: Some(ty) }, Some(v)) => {
                let v = self.expr(v);
                quote!({ let __r = #v; __cx.ret_val::<#ty>(__r); })
            }
            (FnKind::Inline { .. }, _) => self.refuse(
                r.span(),
                "a generic device function is inlined into its callers: end it with its result instead of `return`",
            ),
            (FnKind::Device { ret: Some(_) }, None) => {
                self.refuse(r.span(), "this device function returns a value: `return value`")
            }
            (_, Some(v)) => {
                self.refuse(v.span(), "a kernel returns nothing: write results into a `&mut [T]` parameter")
            }
            (_, None) => quote!(__cx.ret();),
        }
    }
}
