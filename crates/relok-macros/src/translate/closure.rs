//! Closures bound by `let` and called in the same function:
//! `let f = |x: f32| x * a + b; y[i] = f(x[i]);`. A closure is a staged
//! Rust closure (`move |__cx, x| …` over the staged handles it names), so
//! each call stages its body again where it is called: inlined, with
//! nothing left of the closure in the IR.
//!
//! Captures follow Rust's:
//!
//! - without `move`, a closure sees the variables it names *by
//!   reference*: it reads a `let mut` when it is called, and may write it
//!   (`let mut add = |v: u32| total += v;`, then it must be `let mut`, an
//!   `FnMut`); while the closure is used (up to its last call in the
//!   block), what it reads is not written and what it writes is not used
//!   (`borrow.rs`), which is what makes by-reference the only meaning;
//! - with `move`, it captures copies: a `let mut` it names is copied into
//!   a `local` of its own when it is defined (so a `move` closure that
//!   counts keeps its count from call to call, as Rust's); a `move` of a
//!   `&mut` slice, an array or an `FnMut` closure is refused (it would
//!   move the value out of the kernel's reach).
//!
//! Its parameters are scalars (`x`, `x: f32`, `mut x`, `_`); its result
//! a scalar or nothing. `return` in a closure, closures as values (an
//! argument, a field, `(|x| x)(1)`), `async` and `const` closures are
//! refused.

use super::{Binding, Translator, scalar_type, strip_paren};
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Pat, Stmt};

impl Translator {
    /// `let f = |…| …;`: `None` when `init` is not a closure.
    pub(super) fn let_closure(
        &mut self,
        ident: &syn::Ident,
        mutable: bool,
        init: &Expr,
        cfg: &Tokens,
    ) -> Option<Tokens> {
        let Expr::Closure(c) = strip_paren(init) else { return None };
        if let Some(a) = &c.asyncness {
            return Some(self.refuse_closure(ident, a.span(), "`async` closures are not supported in kernels"));
        }
        if let Some(k) = &c.constness {
            return Some(self.refuse_closure(ident, k.span(), "`const` closures are not supported in kernels"));
        }
        if let Some(s) = &c.movability {
            return Some(self.refuse_closure(ident, s.span(), "`static` closures are not supported in kernels"));
        }
        if let Some(l) = &c.lifetimes {
            return Some(self.refuse_closure(ident, l.span(), "a kernel's closure takes no `for<…>`"));
        }
        if let Some(r) = find_ident(&quote!(#c), "return") {
            return Some(self.refuse_closure(
                ident,
                r,
                "`return` in a closure is not supported in kernels: end the closure with its value",
            ));
        }
        let mut params = Vec::new();
        let mut lets = Tokens::new();
        for p in &c.inputs {
            let (pat, ty) = match p {
                Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
                p => (p, None),
            };
            if let Some(t) = ty
                && scalar_type(t).is_none()
            {
                return Some(self.refuse_closure(
                    ident,
                    t.span(),
                    &format!("a closure's parameters are scalars in kernels ({})", super::types::SCALAR_LIST),
                ));
            }
            match pat {
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    let id = &pi.ident;
                    params.push((id.clone(), pi.mutability.is_some()));
                    if pi.mutability.is_some() {
                        lets.extend(quote_spanned!(id.span()=> let #id = __cx.var(#id);));
                    }
                }
                Pat::Wild(_) => params.push((format_ident!("_"), false)),
                other => {
                    return Some(self.refuse_closure(
                        ident,
                        other.span(),
                        "a closure's parameter is a name in kernels: `x`, `x: f32`, `mut x`",
                    ));
                }
            }
        }
        let ret = match &c.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(_, t) => match scalar_type(t) {
                Some(_) => Some(t.clone()),
                None => {
                    return Some(self.refuse_closure(
                        ident,
                        t.span(),
                        "a closure returns a scalar or nothing in kernels",
                    ));
                }
            },
        };
        let typed: Vec<Tokens> = c
            .inputs
            .iter()
            .zip(&params)
            .map(|(p, (id, _))| match p {
                Pat::Type(pt) => {
                    let t = &pt.ty;
                    quote_spanned!(pt.span()=> #id: ::relok::__kernel::Val<#t>)
                }
                _ => quote!(#id),
            })
            .collect();
        let value = ret.is_some() || is_value(&c.body);
        let depth = self.scopes.len();
        let loops = std::mem::take(&mut self.loops);
        let (body, capture) = self.capturing(depth, |t| {
            t.scoped(|t| {
                for (id, m) in &params {
                    if id != "_" {
                        t.bind(id, if *m { Binding::Var } else { Binding::Val });
                    }
                }
                if value { t.expr(&c.body) } else { t.stmt_expr(&c.body) }
            })
        });
        self.loops = loops;
        let mutating = capture.names.iter().any(|(_, w)| *w);
        self.bind(ident, Binding::Closure { mutating, refused: false });
        if mutating && !mutable {
            let written: Vec<&str> = capture.names.iter().filter(|(_, w)| *w).map(|(n, _)| n.as_str()).collect();
            self.refuse(
                ident.span(),
                format!(
                    "calling `{ident}` changes what it captures (`{}`): declare it `let mut {ident}`, as Rust requires of an `FnMut` closure",
                    written.join("`, `")
                ),
            );
        }
        let mut prelude = Tokens::new();
        if c.capture.is_some() {
            for (n, _) in &capture.names {
                let id = format_ident!("{}", n, span = c.span());
                match self.lookup(n) {
                    Some(Binding::Var) => {
                        prelude.extend(quote!(let #id = { let __v = __cx.get(#id); __cx.var(__v) };));
                    }
                    Some(
                        Binding::Slice { mutable: true }
                        | Binding::Array { .. }
                        | Binding::Array2 { .. }
                        | Binding::ElemMut
                        | Binding::Closure { mutating: true, .. },
                    ) => {
                        self.refuse(
                            c.span(),
                            format!(
                                "this `move` closure would move `{n}` (a `&mut` slice, an array or an `FnMut` closure) into itself, which a kernel does not: drop the `move` (the closure then borrows it)"
                            ),
                        );
                    }
                    _ => {}
                }
            }
        } else {
            for (n, w) in &capture.names {
                self.lend(n, Some(ident), *w);
            }
        }
        let ret = ret.map(|t| quote_spanned!(t.span()=> -> ::relok::__kernel::Val<#t>));
        let body = quote!({ #lets #body });
        Some(
            quote_spanned!(ident.span()=> #cfg let #ident = { #prelude move |__cx: &mut ::relok::__kernel::Cx<'_>, #(#typed),*| #ret #body };),
        )
    }

    /// Refuses a closure at `span`; its name is still bound, so that its
    /// calls raise no more errors.
    fn refuse_closure(&mut self, ident: &syn::Ident, span: proc_macro2::Span, message: &str) -> Tokens {
        self.bind(ident, Binding::Closure { mutating: true, refused: true });
        self.refuse(span, message)
    }

    /// `f(a, b)` of a closure `f` bound by `let`: `None` when `f` is not
    /// one.
    pub(super) fn closure_call(&mut self, c: &syn::ExprCall) -> Option<Tokens> {
        let p = match strip_paren(&c.func) {
            Expr::Path(p) => p,
            Expr::Closure(f) => {
                return Some(self.refuse(
                    f.span(),
                    "a closure is bound by `let` and called in a kernel (`let f = |x: f32| x * 2.0; f(v)`): it is not a value",
                ));
            }
            _ => return None,
        };
        let id = p.path.get_ident()?;
        let Some(Binding::Closure { mutating, refused }) = self.lookup(&id.to_string()) else { return None };
        self.use_name(id, mutating);
        let mut lets = Tokens::new();
        let mut names = Vec::new();
        for (k, a) in c.args.iter().enumerate() {
            let v = self.expr(a);
            self.argument_borrow(a);
            let n = format_ident!("__a{}", k, span = a.span());
            lets.extend(quote!(let #n = #v;));
            names.push(n);
        }
        self.end_argument_borrows();
        if refused {
            return Some(quote_spanned!(c.span()=> { #lets ::core::panic!() }));
        }
        Some(quote_spanned!(c.span()=> { #lets #id(__cx, #(#names),*) }))
    }
}

/// Whether a closure's body gives a value (else it is a statement:
/// an assignment, a loop, a block ending with `;`).
fn is_value(e: &Expr) -> bool {
    match strip_paren(e) {
        Expr::Block(b) => block_value(&b.block),
        Expr::Unsafe(u) => block_value(&u.block),
        Expr::If(i) => i.else_branch.is_some() && block_value(&i.then_branch),
        Expr::Match(m) => m.arms.first().is_some_and(|a| is_value(&a.body)),
        Expr::Macro(m) => m.mac.path.is_ident("sym"),
        Expr::Binary(b) => !matches!(
            b.op,
            syn::BinOp::AddAssign(_)
                | syn::BinOp::SubAssign(_)
                | syn::BinOp::MulAssign(_)
                | syn::BinOp::DivAssign(_)
                | syn::BinOp::RemAssign(_)
                | syn::BinOp::BitAndAssign(_)
                | syn::BinOp::BitOrAssign(_)
                | syn::BinOp::BitXorAssign(_)
                | syn::BinOp::ShlAssign(_)
                | syn::BinOp::ShrAssign(_)
        ),
        Expr::Assign(_)
        | Expr::While(_)
        | Expr::ForLoop(_)
        | Expr::Loop(_)
        | Expr::Return(_)
        | Expr::Break(_)
        | Expr::Continue(_) => false,
        _ => true,
    }
}

fn block_value(b: &syn::Block) -> bool {
    match b.stmts.last() {
        Some(Stmt::Expr(e, None)) => !super::statement::is_diverging_expr(e) && is_value(e),
        _ => false,
    }
}

/// Where `tokens` hold the identifier `name`, if they do.
fn find_ident(tokens: &Tokens, name: &str) -> Option<proc_macro2::Span> {
    tokens.clone().into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Ident(i) if i == name => Some(i.span()),
        proc_macro2::TokenTree::Group(g) => find_ident(&g.stream(), name),
        _ => None,
    })
}
