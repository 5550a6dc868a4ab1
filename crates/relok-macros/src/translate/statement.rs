//! Statements: blocks (whose value is unused, or with a tail value),
//! statements, `let` (a scalar `Val`, a `let mut` `Var`, a tuple, a
//! per-thread array, a shared array) and assignments (`=` and `op=` to a
//! `let mut`, a slice or array element, `*x.get_unchecked_mut(i)`: the
//! value first, then the place, as Rust evaluates them for primitive
//! types).
//!
//! A statement's `#[cfg(…)]` / `#[cfg_attr(…)]` goes on its staged code,
//! so rustc decides it as it would the statement: compiled out, it adds
//! nothing to the IR.

use super::call::call_name;
use super::{Binding, Translator, is_relok_path, scalar_type, strip_paren};
use crate::loc;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Stmt, UnOp};

impl Translator {
    /// A block whose value is unused.
    pub(super) fn block_unit(&mut self, block: &syn::Block) -> Tokens {
        self.scoped(|t| {
            let mut out = Tokens::new();
            for (k, s) in block.stmts.iter().enumerate() {
                t.deferred_let(s, &block.stmts[k + 1..]);
                let _rest = super::data::rest_of_block(&block.stmts[k + 1..]);
                out.extend(t.stmt(s));
                t.after_stmt(&block.stmts[k + 1..]);
                if diverges(s) {
                    break;
                }
            }
            quote!({ #out })
        })
    }

    /// A block with a value: statements then a tail expression.
    pub(super) fn block_value(&mut self, block: &syn::Block) -> Tokens {
        self.scoped(|t| {
            let mut out = Tokens::new();
            let n = block.stmts.len();
            for (k, s) in block.stmts.iter().enumerate() {
                if k + 1 == n
                    && let Stmt::Expr(e, None) = s
                    && !is_diverging_expr(e)
                {
                    if let Some(a) = expr_attrs(e).first() {
                        let r = t.refuse(
                            a.path().span(),
                            "a block's value takes no attributes: put a `#[cfg]` on a statement",
                        );
                        return quote!({ #out #r });
                    }
                    let v = t.expr(e);
                    return quote!({ #out #v });
                }
                t.deferred_let(s, &block.stmts[k + 1..]);
                let _rest = super::data::rest_of_block(&block.stmts[k + 1..]);
                out.extend(t.stmt(s));
                t.after_stmt(&block.stmts[k + 1..]);
                if diverges(s) {
                    return quote!({ #out __cx.never() });
                }
            }
            let span = block.brace_token.span.close();
            let e = t.refuse(span, "this block needs a value: end it with an expression (no `;`)");
            quote!({ #out #e })
        })
    }

    /// A `let name;` (no value) is checked against the statements after
    /// it (`deferred.rs`); refused, it is still bound.
    fn deferred_let(&mut self, s: &Stmt, rest: &[Stmt]) {
        let Stmt::Local(l @ syn::Local { init: None, .. }) = s else { return };
        let pat = match &l.pat {
            syn::Pat::Type(pt) => &*pt.pat,
            p => p,
        };
        match pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                self.check_deferred(l, &pi.ident, pi.mutability.is_some(), rest);
            }
            _ => {}
        }
    }

    fn stmt(&mut self, s: &Stmt) -> Tokens {
        match s {
            Stmt::Local(l) => {
                let cfg = self.cfg_attrs(&l.attrs);
                self.local(l, &cfg)
            }
            Stmt::Item(i) => self.refuse(i.span(), "items inside a kernel are not supported: define them outside"),
            Stmt::Expr(e, _) => {
                let mut e = e.clone();
                let attrs = stmt_attrs_mut(&mut e).map(std::mem::take).unwrap_or_default();
                let cfg = self.cfg_attrs(&attrs);
                let t = self.stmt_expr(&e);
                if cfg.is_empty() { t } else { quote!(#cfg { #t }) }
            }
            Stmt::Macro(m) => {
                let cfg = self.cfg_attrs(&m.attrs);
                let t = self.mac_stmt(&m.mac);
                if cfg.is_empty() { t } else { quote!(#cfg { #t }) }
            }
        }
    }

    /// A statement's attributes for its staged code: `cfg` and
    /// `cfg_attr` as written (rustc evaluates them); lint levels and tool
    /// attributes (`rustfmt::skip`) dropped, as they mean nothing to the
    /// staged code; anything else refused.
    fn cfg_attrs(&mut self, attrs: &[syn::Attribute]) -> Tokens {
        let mut out = Tokens::new();
        for a in attrs {
            let path = a.path();
            if path.is_ident("cfg") || path.is_ident("cfg_attr") {
                out.extend(quote!(#a));
            } else if ["allow", "expect", "warn", "deny", "forbid"].iter().any(|l| path.is_ident(l))
                || path.segments.len() > 1
            {
            } else {
                self.refuse(
                    a.path().span(),
                    "only `#[cfg(…)]`, `#[cfg_attr(…)]` and lint attributes go on a kernel's statements",
                );
            }
        }
        out
    }

    pub(super) fn local(&mut self, l: &syn::Local, cfg: &Tokens) -> Tokens {
        // `let Some(p) = e else { … };` (`option.rs`).
        if let Some(syn::LocalInit { diverge: Some((_, e)), .. }) = &l.init {
            return self.let_else(l, e, cfg);
        }
        // `let (a, b) = (x, y);`: one `let` per element.
        if let (syn::Pat::Tuple(pt), Some(init)) = (&l.pat, &l.init)
            && let (Expr::Tuple(et), None) = (strip_paren(&init.expr), &init.diverge)
        {
            {
                if pt.elems.len() != et.elems.len() {
                    return self.refuse(l.span(), "the tuple pattern and the tuple have different lengths");
                }
                // Every value first (as Rust evaluates them), then the
                // names; a shared array (`shared::<T, N>()`, which reads
                // no name) is declared where its name is bound.
                let mut out = Tokens::new();
                let temps: Vec<_> = (0..et.elems.len()).map(|k| format_ident!("__t{}", k)).collect();
                for (t, e) in temps.iter().zip(&et.elems) {
                    if shared_call(e).is_none() {
                        let v = self.expr(e);
                        out.extend(quote!(#cfg let #t = #v;));
                    }
                }
                for ((t, p), e) in temps.iter().zip(&pt.elems).zip(&et.elems) {
                    let value: Expr = if shared_call(e).is_some() { e.clone() } else { syn::parse_quote!(#t) };
                    let one = syn::Local {
                        attrs: Vec::new(),
                        let_token: l.let_token,
                        pat: p.clone(),
                        init: Some(syn::LocalInit { eq_token: init.eq_token, expr: Box::new(value), diverge: None }),
                        semi_token: l.semi_token,
                    };
                    self.bind(t, Binding::Val);
                    out.extend(self.local(&one, cfg));
                }
                return out;
            }
        }
        // `let (a, b) = e;`, `let Particle { x, .. } = e;` (`data.rs`).
        if let Some(t) = self.let_parts(l, cfg) {
            return t;
        }
        let (ident, mutable, ty) = match &l.pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                (pi.ident.clone(), pi.mutability.is_some(), None)
            }
            syn::Pat::Type(pt) => match &*pt.pat {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    (pi.ident.clone(), pi.mutability.is_some(), Some((*pt.ty).clone()))
                }
                p => return self.refuse(p.span(), "only `let name` and `let mut name` are supported (no patterns)"),
            },
            syn::Pat::Wild(w) => (format_ident!("_", span = w.span()), false, None),
            p => {
                return self
                    .refuse(p.span(), "only `let name` and `let mut name` are supported (no patterns or tuples)");
            }
        };
        let Some(init) = &l.init else {
            // `let y;`: assigned later (checked by `check_deferred`).
            if ident == "_" {
                return self.refuse(l.span(), "`let _;` binds nothing");
            }
            if let Some(t) = &ty
                && scalar_type(t).is_none()
            {
                return self.refuse(t.span(), format!("a `let` has a scalar type ({})", super::types::SCALAR_LIST));
            }
            self.bind(&ident, Binding::Var);
            return match &ty {
                Some(t) => {
                    quote_spanned!(ident.span()=> #cfg let #ident: ::relok::__kernel::Var<#t> = __cx.deferred();)
                }
                None => quote_spanned!(ident.span()=> #cfg let #ident = __cx.deferred();),
            };
        };
        // 2-D arrays, sub-slices and rows, closures.
        if let Some(t) = self.let_place(&ident, mutable, ty.as_ref(), &init.expr, cfg) {
            return t;
        }
        if !cfg.is_empty() {
            // Compiled out, the name keeps what it was bound to before;
            // the translation knows one binding per name.
            let now = match strip_paren(&init.expr) {
                _ if shared_call(&init.expr).is_some() => Binding::Shared,
                Expr::Repeat(_) | Expr::Array(_) => Binding::Array { mutable },
                _ if mutable => Binding::Var,
                _ => Binding::Val,
            };
            if self.lookup(&ident.to_string()).is_some_and(|b| b != now) {
                return self.refuse(
                    ident.span(),
                    format!("a `#[cfg]`'d `let` cannot shadow `{ident}` with another kind of binding here: rename it"),
                );
            }
        }
        // `let tile = shared::<f32, 256>();`
        if let Some(generics) = shared_call(&init.expr) {
            if !matches!(self.kind, super::FnKind::Kernel) {
                // Refused, but still bound: its uses raise no more errors.
                self.errors.push(syn::Error::new(
                    init.expr.span(),
                    "only kernels declare shared arrays: declare it in the kernel (a device function takes slices)",
                ));
            }
            if mutable {
                self.errors
                    .push(syn::Error::new(ident.span(), "a shared array is written through indexing: drop the `mut`"));
            }
            self.bind(&ident, Binding::Shared);
            let span = init.expr.span();
            return quote_spanned!(span=> #cfg let #ident = __cx.shared::#generics(););
        }
        // `let mut a = [init; N];` / `let mut a = [x, y, z];`: a per-thread array.
        match strip_paren(&init.expr) {
            Expr::Repeat(r) => {
                if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) = strip_paren(&r.len)
                    && n.base10_digits() == "0"
                {
                    // Refused, but still bound: its uses raise no more errors.
                    self.errors.push(syn::Error::new(n.span(), "a kernel's array has at least one element"));
                }
                let v = self.expr(&r.expr);
                let n = &r.len;
                self.bind(&ident, Binding::Array { mutable });
                return quote_spanned!(ident.span()=> #cfg let #ident = { let __v = #v; __cx.local_array::<_, { #n }>(__v) };);
            }
            Expr::Array(a) => {
                if a.elems.is_empty() {
                    return self.refuse(a.span(), "an empty array has no element type: give it elements");
                }
                let vals: Vec<Tokens> = a.elems.iter().map(|e| self.expr(e)).collect();
                self.bind(&ident, Binding::Array { mutable });
                return quote_spanned!(ident.span()=> #cfg let #ident = { let __vals = [#(#vals),*]; __cx.local_array_of(&__vals) };);
            }
            _ => {}
        }
        let ty_tokens = match &ty {
            None => None,
            Some(t) => match self.staged_ty(t) {
                Some(s) => Some(s),
                None => {
                    return self.refuse(
                        t.span(),
                        format!(
                            "a `let` has a scalar, struct or tuple type ({}, a `relok::Struct`, a tuple of those)",
                            super::types::SCALAR_LIST
                        ),
                    );
                }
            },
        };
        let v = if mutable { self.expr(&init.expr) } else { self.let_value(&ident, &init.expr) };
        if ident == "_" {
            return quote!(#cfg let _ = #v;);
        }
        if mutable {
            self.bind(&ident, Binding::Var);
            match ty_tokens {
                Some(t) => {
                    quote_spanned!(ident.span()=> #cfg let #ident = { let __v: #t = #v; __cx.var(__v) };)
                }
                None => quote_spanned!(ident.span()=> #cfg let #ident = { let __v = #v; __cx.var(__v) };),
            }
        } else {
            self.bind(&ident, Binding::Val);
            match ty_tokens {
                Some(t) => quote_spanned!(ident.span()=> #cfg let #ident: #t = #v;),
                None => quote_spanned!(ident.span()=> #cfg let #ident = #v;),
            }
        }
    }

    /// An expression in statement position.
    pub(super) fn stmt_expr(&mut self, e: &Expr) -> Tokens {
        match e {
            Expr::Assign(a) => self.assign(&a.left, None, &a.right, a.span()),
            Expr::Binary(b) if compound(&b.op).is_some() => self.assign(&b.left, compound(&b.op), &b.right, b.span()),
            Expr::If(i) => self.if_stmt(i),
            Expr::Match(m) => self.match_stmt(m),
            Expr::While(w) => self.while_loop(w),
            Expr::Loop(l) => self.plain_loop(l),
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Break(b) => self.break_stmt(b),
            Expr::Continue(c) => self.continue_stmt(c),
            Expr::Return(r) => self.return_stmt(r),
            Expr::Macro(m) => self.mac_stmt(&m.mac),
            Expr::Block(b) => {
                if let Some(l) = &b.label {
                    return self.refuse(l.span(), "block labels are not supported");
                }
                self.block_unit(&b.block)
            }
            Expr::Unsafe(u) => {
                self.unsafe_depth += 1;
                let b = self.block_unit(&u.block);
                self.unsafe_depth -= 1;
                b
            }
            Expr::Call(c) if call_name(c).as_deref() == Some("sync_threads") => {
                if !c.args.is_empty() {
                    return self.refuse(c.args.span(), "`sync_threads()` takes no arguments");
                }
                quote_spanned!(c.span()=> __cx.sync_threads();)
            }
            _ => {
                let v = self.expr(e);
                quote!(let _ = #v;)
            }
        }
    }

    /// `lhs = rhs` or `lhs op= rhs`: `rhs` first, then the place (its
    /// index, its bounds check), as Rust evaluates an assignment and a
    /// compound assignment of primitive types.
    fn assign(&mut self, lhs: &Expr, op: Option<&str>, rhs: &Expr, span: Span) -> Tokens {
        let r = self.expr(rhs);
        self.after_value();
        let combine = |old: Tokens| match op {
            None => quote!(__rhs),
            Some(m) => {
                let m = format_ident!("{}", m);
                quote_spanned!(span=> { let __o = #old; __cx.#m(__o, __rhs) })
            }
        };
        match strip_paren(lhs) {
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = p.path.get_ident().cloned().unwrap_or_else(|| format_ident!("_"));
                match self.lookup(&id.to_string()) {
                    Some(Binding::Var) => {
                        self.use_name(&id, true);
                        let v = combine(quote!(__cx.get(#id)));
                        quote!({ let __rhs = #r; let __n = #v; __cx.set(#id, __n); })
                    }
                    Some(Binding::ElemMut) => {
                        self.refuse(id.span(), format!("`{id}` is a `&mut` element: assign through it, `*{id} = v`"))
                    }
                    Some(Binding::Val | Binding::Ref) => self.refuse(
                        id.span(),
                        format!("cannot assign twice to immutable variable `{id}`: declare it with `let mut {id}`"),
                    ),
                    Some(_) => {
                        self.refuse(id.span(), "a slice or shared array is assigned element by element: `x[i] = v`")
                    }
                    None => self.refuse(
                        id.span(),
                        format!("`{id}` is not a variable of this kernel: only `let mut` variables are assigned"),
                    ),
                }
            }
            Expr::Field(f) => self.assign_field(f, &r, op, span),
            Expr::Index(ix) => {
                if let Some(t) = self.index2_assign(ix, op, &r) {
                    return t;
                }
                let Some(base) = self.indexable(&ix.expr, true) else {
                    return quote!({ ::core::panic!() });
                };
                let i = self.expr(&ix.index);
                let at = loc(ix.index.span());
                let v = combine(quote!(__cx.load(__b, __i, #at)));
                quote!({ let __rhs = #r; let __b = #base; let __i = #i; let __n = #v; __cx.store(__b, __i, __n, #at); })
            }
            Expr::Unary(u)
                if matches!(u.op, UnOp::Deref(_))
                    && let Expr::Path(p) = strip_paren(&u.expr)
                    && let Some(id) = p.path.get_ident()
                    && self.lookup(&id.to_string()) == Some(Binding::ElemMut) =>
            {
                let v = combine(quote!(__cx.elem_get(#id)));
                quote!({ let __rhs = #r; let __n = #v; __cx.elem_set(#id, __n); })
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => match strip_paren(&u.expr) {
                Expr::MethodCall(m) if m.method == "get_unchecked_mut" && m.args.len() == 1 => {
                    if self.unsafe_depth == 0 {
                        return self.refuse(
                            m.method.span(),
                            "call to unsafe function `get_unchecked_mut` requires an `unsafe` block",
                        );
                    }
                    let Some(base) = self.indexable(&m.receiver, true) else {
                        return quote!({ ::core::panic!() });
                    };
                    let i = self.expr(&m.args[0]);
                    let v = combine(quote!(__cx.load_unchecked(__b, __i)));
                    quote!({ let __rhs = #r; let __b = #base; let __i = #i; let __n = #v; __cx.store_unchecked(__b, __i, __n); })
                }
                other => self.refuse(other.span(), "only `*x.get_unchecked_mut(i) = v` writes through `*`"),
            },
            other => self.refuse(other.span(), "assign to a `let mut` variable or a slice element `x[i]`"),
        }
    }
}

fn compound(op: &BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::AddAssign(_) => "add",
        BinOp::SubAssign(_) => "sub",
        BinOp::MulAssign(_) => "mul",
        BinOp::DivAssign(_) => "div",
        BinOp::RemAssign(_) => "rem",
        BinOp::BitAndAssign(_) => "bitand",
        BinOp::BitOrAssign(_) => "bitor",
        BinOp::BitXorAssign(_) => "bitxor",
        BinOp::ShlAssign(_) => "shl",
        BinOp::ShrAssign(_) => "shr",
        _ => return None,
    })
}

/// Whether a statement always leaves the block (nothing after it runs):
/// never one under a `#[cfg]`, which may be compiled out.
fn diverges(s: &Stmt) -> bool {
    let cfg =
        |attrs: &[syn::Attribute]| attrs.iter().any(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr"));
    match s {
        Stmt::Expr(e, _) => {
            let mut e = e.clone();
            !stmt_attrs_mut(&mut e).is_some_and(|a| cfg(a)) && is_diverging_expr(&e)
        }
        Stmt::Macro(m) => !cfg(&m.attrs) && ["panic", "throw", "unreachable"].iter().any(|n| m.mac.path.is_ident(n)),
        _ => false,
    }
}

macro_rules! each_attrs {
    ($e:expr, $x:ident => $out:expr, $none:expr) => {
        each_attrs!(@ $e, $x => $out, $none; Array, Assign, Async, Await, Binary, Block, Break, Call, Cast, Closure,
            Const, Continue, Field, ForLoop, Group, If, Index, Infer, Let, Lit, Loop, Macro, Match, MethodCall, Paren,
            Path, Range, RawAddr, Reference, Repeat, Return, Struct, Try, TryBlock, Tuple, Unary, Unsafe, While, Yield)
    };
    (@ $e:expr, $x:ident => $out:expr, $none:expr; $($v:ident),*) => {
        match $e {
            $(Expr::$v($x) => $out,)*
            _ => $none,
        }
    };
}

/// An expression's outer attributes (`#[cfg(…)] x[i] = v;`).
pub(super) fn attrs_mut(e: &mut Expr) -> Option<&mut Vec<syn::Attribute>> {
    each_attrs!(e, x => Some(&mut x.attrs), None)
}

/// An expression statement's outer attributes: where syn puts them, on
/// the leftmost operand of an assignment, a binary operation or a cast
/// (`#[cfg(any())] x[i] = v;` holds its `cfg` on `x[i]`).
fn stmt_attrs_mut(mut e: &mut Expr) -> Option<&mut Vec<syn::Attribute>> {
    loop {
        e = match e {
            Expr::Assign(a) => &mut a.left,
            Expr::Binary(b) => &mut b.left,
            Expr::Cast(c) => &mut c.expr,
            e => return attrs_mut(e),
        };
    }
}

/// [`attrs_mut`], to read.
pub(super) fn expr_attrs(e: &Expr) -> &[syn::Attribute] {
    each_attrs!(e, x => &x.attrs, &[])
}

pub(super) fn is_diverging_expr(e: &Expr) -> bool {
    match e {
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
        Expr::Macro(m) => ["panic", "throw", "unreachable"].iter().any(|n| m.mac.path.is_ident(n)),
        _ => false,
    }
}

/// `shared::<T, N>()` / `relok::shared::<T, N>()`: the generic arguments.
fn shared_call(e: &Expr) -> Option<Tokens> {
    let Expr::Call(c) = strip_paren(e) else { return None };
    let Expr::Path(p) = &*c.func else { return None };
    if !(p.path.segments.len() == 1 || is_relok_path(&p.path)) || !c.args.is_empty() {
        return None;
    }
    let last = p.path.segments.last()?;
    if last.ident != "shared" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(a) => {
            let args = &a.args;
            Some(quote!(<#args>))
        }
        _ => Some(quote!(<>)),
    }
}
