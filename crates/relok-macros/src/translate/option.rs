//! `Option`: `Some(e)` and `None` as values (`relok::__kernel::Opt`: a
//! flag and a value), and the forms that take one apart, each rewritten
//! to a test of the flag before it is translated:
//!
//! - `if let Some(p) = e { a } else { b }` is
//!   `{ let o = e; if o.is_some() { let p = o.__relok_some_value(); a } else { b } }`;
//! - `'l: while let Some(p) = e { body }` is
//!   `'l: loop { let o = e; if o.is_none() { break; } let p = …; body }`;
//! - `let Some(p) = e else { d };` is `let o = e; if o.is_none() { d }
//!   let p = …;` (`d` must end in `return`, `break`, `continue` or a
//!   panic, as rustc requires it to diverge);
//! - a `match` of a `Some(p)` arm then a `None` (or `_`) arm, or `None`
//!   then `Some(p)`, is the
//!   `if let` (a guard on `Some(p)`, with `_` for the other arm, is tested
//!   after the flag with `p` bound).
//!
//! `p` is any pattern a `let` takes (a name, `mut x`, a tuple, a struct,
//! `_`). Other patterns (`Some(3)`, `None` alone, `if let … && c`) are
//! refused by name.

use super::{Translator, strip_paren};
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Expr, Pat};

/// Whether `path` names `Option`'s variant `variant` (`Some`,
/// `Option::Some`, `std::option::Option::Some`, `core::…`).
fn is_variant(path: &syn::Path, variant: &str) -> bool {
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let tail = names.last().is_some_and(|n| n == variant);
    let prefix = &names[..names.len().saturating_sub(1)];
    let known = prefix.is_empty()
        || prefix == ["Option"]
        || prefix == ["std", "option", "Option"]
        || prefix == ["core", "option", "Option"];
    tail && known && path.segments.iter().all(|s| s.arguments.is_empty())
}

/// The pattern inside `Some(p)`, if `pat` is one.
fn some_inner(pat: &Pat) -> Option<&Pat> {
    match pat {
        Pat::TupleStruct(t) if is_variant(&t.path, "Some") && t.elems.len() == 1 && t.qself.is_none() => {
            t.elems.first()
        }
        Pat::Paren(p) => some_inner(&p.pat),
        _ => None,
    }
}

/// Whether `pat` is `None` or `_` (the arm that has no value).
fn is_none_or_wild(pat: &Pat) -> bool {
    match pat {
        Pat::Ident(i) => i.ident == "None" && i.subpat.is_none() && i.by_ref.is_none() && i.mutability.is_none(),
        Pat::Path(p) => p.qself.is_none() && is_variant(&p.path, "None"),
        Pat::Wild(_) => true,
        _ => false,
    }
}

/// `o.is_some()` and `o.__relok_some_value()`, at the pattern's span (a
/// scrutinee that is not an `Option` is reported there).
fn flag_and_value(o: &syn::Ident, at: proc_macro2::Span) -> (Tokens, Tokens) {
    let mut o = o.clone();
    o.set_span(at);
    (quote::quote_spanned!(at=> #o.is_some()), quote::quote_spanned!(at=> #o.__relok_some_value()))
}

/// Whether block `b` ends by leaving it: `return`, `break`, `continue`,
/// or a panicking macro.
fn diverges(b: &syn::Block) -> bool {
    let mac_diverges = |m: &syn::Macro| {
        m.path.segments.last().is_some_and(|s| {
            ["panic", "unreachable", "todo", "unimplemented", "throw"].contains(&s.ident.to_string().as_str())
        })
    };
    match b.stmts.last() {
        Some(syn::Stmt::Expr(e, _)) => match strip_paren(e) {
            Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
            Expr::Macro(m) => mac_diverges(&m.mac),
            Expr::Block(inner) => diverges(&inner.block),
            _ => false,
        },
        Some(syn::Stmt::Macro(m)) => mac_diverges(&m.mac),
        _ => false,
    }
}

/// Whether `cond` is a let chain (`let p = e && c`, `c && let p = e`).
pub(super) fn is_let_chain(cond: &Expr) -> bool {
    match strip_paren(cond) {
        Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
            matches!(strip_paren(&b.left), Expr::Let(_))
                || matches!(strip_paren(&b.right), Expr::Let(_))
                || is_let_chain(&b.left)
                || is_let_chain(&b.right)
        }
        _ => false,
    }
}

impl Translator {
    /// The refusal of a let chain.
    pub(super) fn refuse_let_chain(&mut self, cond: &Expr) -> Tokens {
        self.refuse(
            cond.span(),
            "let chains (`if let … && …`) are not supported in kernels: nest an `if` inside the `if let`",
        )
    }

    /// A fresh name for the `Option` a form takes apart.
    fn option_temp(&mut self, span: proc_macro2::Span) -> syn::Ident {
        self.option_count += 1;
        format_ident!("__relok_option_{}", self.option_count, span = span)
    }

    /// `Some(e)` (a call of the variant), if `c` is one.
    pub(super) fn some_call(&mut self, c: &syn::ExprCall) -> Option<Tokens> {
        let Expr::Path(p) = &*c.func else { return None };
        if p.qself.is_some() || !is_variant(&p.path, "Some") {
            return None;
        }
        if c.args.len() != 1 {
            return Some(self.refuse(c.span(), "`Some` takes one value"));
        }
        let v = self.expr(&c.args[0]);
        Some(quote::quote_spanned!(c.span()=> { let __v = #v; __cx.some(__v) }))
    }

    /// `None`, if `p` is it.
    pub(super) fn none_path(&mut self, p: &syn::ExprPath) -> Option<Tokens> {
        (p.qself.is_none() && is_variant(&p.path, "None")).then(|| quote::quote_spanned!(p.span()=> __cx.none()))
    }

    /// `if let Some(p) = e { … } else { … }`, as a value or a statement.
    pub(super) fn if_let(&mut self, i: &syn::ExprIf, l: &syn::ExprLet, value: bool) -> Tokens {
        let Some(inner) = some_inner(&l.pat) else {
            return self.refuse(
                l.pat.span(),
                "`if let` takes `Some(pattern)` in a kernel (an `Option`; the subset has no other enums)",
            );
        };
        if let Expr::Let(_) = strip_paren(&l.expr) {
            return self.refuse(l.expr.span(), "`let` expressions are not supported in kernels");
        }
        let o = self.option_temp(l.expr.span());
        let e = &l.expr;
        let then = &i.then_branch.stmts;
        let otherwise = i.else_branch.as_ref().map(|(_, e)| quote!(else #e));
        let (test, some_value) = flag_and_value(&o, l.pat.span());
        let rewritten: Expr = syn::parse_quote_spanned!(i.span()=> {
            let #o = #e;
            if #test {
                let #inner = #some_value;
                #(#then)*
            } #otherwise
        });
        if value { self.expr(&rewritten) } else { self.stmt_expr(&rewritten) }
    }

    /// `while let Some(p) = e { … }`.
    pub(super) fn while_let(&mut self, w: &syn::ExprWhile, l: &syn::ExprLet) -> Tokens {
        let Some(inner) = some_inner(&l.pat) else {
            return self.refuse(l.pat.span(), "`while let` takes `Some(pattern)` in a kernel (an `Option`)");
        };
        let o = self.option_temp(l.expr.span());
        let e = &l.expr;
        let label = &w.label;
        let body = &w.body.stmts;
        let (test, some_value) = flag_and_value(&o, l.pat.span());
        let rewritten: syn::ExprLoop = syn::parse_quote_spanned!(w.span()=> #label loop {
            let #o = #e;
            if !#test {
                break;
            }
            let #inner = #some_value;
            #(#body)*
        });
        // A `while`'s loop: `break value` is refused in it, as Rust does.
        self.while_as_loop(&rewritten)
    }

    /// `let Some(p) = e else { d };`: its statements, binding `p` in the
    /// enclosing block.
    pub(super) fn let_else(&mut self, l: &syn::Local, diverge: &Expr, cfg: &Tokens) -> Tokens {
        let Some(init) = &l.init else { return Tokens::new() };
        let Some(inner) = some_inner(&l.pat) else {
            return self.refuse(l.pat.span(), "`let … else` takes `Some(pattern)` in a kernel (an `Option`)");
        };
        let Expr::Block(d) = diverge else {
            return self.refuse(diverge.span(), "expected `else { … }`");
        };
        if !diverges(&d.block) {
            // Refused; the names are still bound (no error after this one).
            self.refuse(
                diverge.span(),
                "the `else` of `let … else` must leave: end it in `return`, `break`, `continue` or `panic!`",
            );
        }
        let o = self.option_temp(init.expr.span());
        let e = &init.expr;
        let local = |s: syn::Stmt| match s {
            syn::Stmt::Local(l) => Some(l),
            _ => None,
        };
        let (flag, some_value) = flag_and_value(&o, l.pat.span());
        let (Some(bind), Some(unpack)) = (
            local(syn::parse_quote_spanned!(l.span()=> let #o = #e;)),
            local(syn::parse_quote_spanned!(l.span()=> let #inner = #some_value;)),
        ) else {
            return self.refuse(l.span(), "unsupported `let … else`");
        };
        let test: Expr = syn::parse_quote_spanned!(diverge.span()=> if !#flag #d);
        let mut out = self.local(&bind, cfg);
        let t = self.stmt_expr(&test);
        out.extend(if cfg.is_empty() { t } else { quote!(#cfg { #t }) });
        out.extend(self.local(&unpack, cfg));
        out
    }

    /// A `match` of a `Some(p)` arm then a `None` (or `_`) arm, or `None`
    /// then `Some(p)` (a guard on `Some(p)` with `_` after it), as the
    /// `if let` it is; `None` when `m` is not one.
    pub(super) fn option_match(&mut self, m: &syn::ExprMatch, value: bool) -> Option<Tokens> {
        let [a, b] = &m.arms[..] else { return None };
        // `Some(p)` first and `None` or `_` second, or `None` first: a `_`
        // first would take every value (Rust's arms are tried in order).
        let (some, none) = match (some_inner(&a.pat), some_inner(&b.pat)) {
            (Some(_), _) if is_none_or_wild(&b.pat) => (a, b),
            (None, Some(_)) if is_none_or_wild(&a.pat) && !matches!(a.pat, Pat::Wild(_)) => (b, a),
            _ => return None,
        };
        let inner = some_inner(&some.pat)?;
        if let Some((g, _)) = &none.guard {
            return Some(self.refuse(g.span(), "the `None` arm of a kernel's `match` on an `Option` takes no guard"));
        }
        let e = &m.expr;
        let (then, otherwise) = (&some.body, &none.body);
        let o = self.option_temp(m.expr.span());
        // A guard on `Some(p)`: tested after the flag, with `p` bound; the
        // other arm is then `_` (rustc would refuse `None` as not
        // exhaustive).
        let (flag, some_value) = flag_and_value(&o, some.pat.span());
        let test = match &some.guard {
            None => flag,
            Some((_, g)) if matches!(none.pat, Pat::Wild(_)) => quote!(#flag && { let #inner = #some_value; #g }),
            Some((i, _)) => {
                return Some(self.refuse(
                    i.span(),
                    "with a guard on `Some(…)`, the other arm is `_` (a `None` arm leaves `Some` values unmatched)",
                ));
            }
        };
        let rewritten: Expr = syn::parse_quote_spanned!(m.span()=> {
            let #o = #e;
            if #test {
                let #inner = #some_value;
                #then
            } else {
                #otherwise
            }
        });
        Some(if value { self.expr(&rewritten) } else { self.stmt_expr(&rewritten) })
    }
}
