//! Translation of a kernel's body, construct by construct, into staged
//! Rust (see the crate docs). Every `syn` construct either maps to a call
//! on `__cx` (`relok::__kernel::Cx`) or is refused with a spanned error
//! naming what is supported instead ([`Translator::refuse`]).
//!
//! Names in scope ([`Binding`]): a `let` (an immutable `Val<T>`), a `let
//! mut` (a `Var<T>`: reads are `get`, writes `set`), a slice parameter
//! (`Slice<T>`, `mutable` or not) and a shared array. A name not in scope
//! is the user's: a `const` (a literal, content-addressed), a `#[relok::
//! host] static` when indexed (read through its companion, by identity),
//! or a `#[relok::device]` function when called.

use crate::loc;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Stmt, UnOp};

/// The scalar types of the subset.
pub const SCALARS: [&str; 8] = ["bool", "i32", "u32", "i64", "u64", "f32", "f64", "usize"];

/// How a Rust method maps to the IR.
#[derive(Clone, Copy)]
enum Mapping {
    /// A method of `Cx` taking the receiver and the arguments.
    Cx(&'static str),
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
];

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

/// A kernel parameter's kind.
#[derive(Clone)]
pub enum ParamKind {
    /// A scalar of this Rust type.
    Scalar(syn::Type),
    /// `&[T]` / `&mut [T]`.
    Slice { elem: syn::Type, mutable: bool },
    /// `relok::Symbol`: a `word` (the symbol's).
    Symbol,
}

impl ParamKind {
    /// The staged type.
    pub fn dsl_type(&self) -> Tokens {
        match self {
            ParamKind::Scalar(t) => quote!(::relok::__kernel::Val<#t>),
            ParamKind::Slice { elem, .. } => quote!(::relok::__kernel::Slice<#elem>),
            ParamKind::Symbol => quote!(::relok::__kernel::Val<::relok::__kernel::Word>),
        }
    }
    /// The type `launch` takes.
    pub fn launch_type(&self) -> Tokens {
        match self {
            ParamKind::Scalar(t) => quote!(#t),
            ParamKind::Slice { elem, mutable: false } => quote!(&::relok::Buffer<#elem>),
            ParamKind::Slice { elem, mutable: true } => quote!(&mut ::relok::Buffer<#elem>),
            ParamKind::Symbol => quote!(&::relok::Symbol),
        }
    }
}

thread_local! {
    /// The type parameters of the generic kernel being expanded: scalar
    /// types too (set by [`with_type_params`]).
    static TYPE_PARAMS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with `params` counted as scalar types.
pub fn with_type_params<R>(params: Vec<String>, f: impl FnOnce() -> R) -> R {
    let saved = TYPE_PARAMS.with(|t| std::mem::replace(&mut *t.borrow_mut(), params));
    let r = f();
    TYPE_PARAMS.with(|t| *t.borrow_mut() = saved);
    r
}

/// The subset's name of a scalar type (or a kernel's type parameter), if
/// `ty` is one.
pub fn scalar_type(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            let id = p.path.get_ident()?.to_string();
            (SCALARS.contains(&id.as_str()) || TYPE_PARAMS.with(|t| t.borrow().contains(&id))).then_some(id)
        }
        syn::Type::Paren(p) => scalar_type(&p.elem),
        _ => None,
    }
}

/// A parameter's kind, or the error naming what is supported.
pub fn param_kind(ty: &syn::Type) -> syn::Result<ParamKind> {
    if scalar_type(ty).is_some() {
        return Ok(ParamKind::Scalar(ty.clone()));
    }
    if let syn::Type::Path(p) = ty
        && p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Symbol" && s.arguments.is_empty())
    {
        return Ok(ParamKind::Symbol);
    }
    if let syn::Type::Reference(r) = ty
        && let syn::Type::Slice(s) = &*r.elem
        && let Some(e) = scalar_type(&s.elem)
    {
        if e == "bool" || e == "usize" {
            return Err(syn::Error::new(s.elem.span(), "slices of `bool` or `usize` have no device layout: use `u32`"));
        }
        return Ok(ParamKind::Slice { elem: (*s.elem).clone(), mutable: r.mutability.is_some() });
    }
    Err(syn::Error::new(
        ty.span(),
        "unsupported parameter type: a kernel takes scalars (bool i32 u32 i64 u64 f32 f64 usize), `&[T]`, `&mut [T]` and `relok::Symbol`",
    ))
}

/// What a name in scope is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Binding {
    Val,
    Var,
    Slice {
        mutable: bool,
    },
    Shared,
    /// A per-thread array (`let mut a = [0; 4];`).
    Array {
        mutable: bool,
    },
}

/// Kernel or device function (and whether it returns a value).
#[derive(Clone)]
pub enum FnKind {
    /// A kernel.
    Kernel,
    /// A device function, with its result type.
    Device { ret: Option<Box<syn::Type>> },
    /// A generic device function, staged into each caller: no `return`
    /// (its tail is its result).
    Inline { returns: bool },
}

/// The translation state of one function.
pub struct Translator {
    kind: FnKind,
    scopes: Vec<HashMap<String, Binding>>,
    loops: u32,
    unsafe_depth: u32,
    /// Device functions called: (path of the definer, local name).
    callees: Vec<(String, syn::Path, syn::Ident)>,
    /// Errors, each at its span.
    pub errors: Vec<syn::Error>,
}

impl Translator {
    /// A translator with the parameters in scope.
    pub fn new(kind: FnKind, params: &[(syn::Ident, ParamKind)]) -> Translator {
        let mut scope = HashMap::new();
        for (n, k) in params {
            let b = match k {
                ParamKind::Scalar(_) | ParamKind::Symbol => Binding::Val,
                ParamKind::Slice { mutable, .. } => Binding::Slice { mutable: *mutable },
            };
            scope.insert(n.to_string(), b);
        }
        Translator { kind, scopes: vec![scope], loops: 0, unsafe_depth: 0, callees: Vec::new(), errors: Vec::new() }
    }

    /// The call of the single-segment function `name`, if the body makes
    /// one (a device function calling itself).
    pub fn calls(&self, name: &str) -> Option<&syn::Path> {
        self.callees.iter().map(|(_, p, _)| p).find(|p| p.get_ident().is_some_and(|id| id == name))
    }

    /// `let __relok_fn_k = path::__relok_device_f(__m);` for each callee.
    pub fn callee_defs(&self) -> Tokens {
        self.callees
            .iter()
            .map(|(_, path, _)| {
                let define = rename_last(path, "__relok_device_");
                quote_spanned!(path.span()=> #define(__m);)
            })
            .collect()
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn bind(&mut self, name: &syn::Ident, b: Binding) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), b);
        }
    }

    fn refuse(&mut self, span: Span, message: impl std::fmt::Display) -> Tokens {
        self.errors.push(syn::Error::new(span, message));
        // A block: a statement or a value of any type, never run (the
        // item does not compile).
        quote_spanned!(span=> { ::core::panic!() })
    }

    /// The whole body: statements; a device function's tail is its result.
    pub fn body(&mut self, block: &syn::Block) -> Tokens {
        match self.kind.clone() {
            FnKind::Device { ret: Some(ty) } => {
                let v = self.block_value(block);
                quote!(let __r = #v; __cx.ret_val::<#ty>(__r);)
            }
            FnKind::Inline { returns: true } => self.block_value(block),
            FnKind::Inline { returns: false } => self.block_unit(block),
            _ => {
                let b = self.block_unit(block);
                quote!(#b __cx.ret();)
            }
        }
    }

    fn scoped<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.scopes.push(HashMap::new());
        let r = f(self);
        self.scopes.pop();
        r
    }

    /// A block whose value is unused.
    fn block_unit(&mut self, block: &syn::Block) -> Tokens {
        self.scoped(|t| {
            let mut out = Tokens::new();
            for s in &block.stmts {
                out.extend(t.stmt(s));
                if diverges(s) {
                    break;
                }
            }
            quote!({ #out })
        })
    }

    /// A block with a value: statements then a tail expression.
    fn block_value(&mut self, block: &syn::Block) -> Tokens {
        self.scoped(|t| {
            let mut out = Tokens::new();
            let n = block.stmts.len();
            for (k, s) in block.stmts.iter().enumerate() {
                if k + 1 == n
                    && let Stmt::Expr(e, None) = s
                    && !is_diverging_expr(e)
                {
                    let v = t.expr(e);
                    return quote!({ #out #v });
                }
                out.extend(t.stmt(s));
                if diverges(s) {
                    return quote!({ #out __cx.never() });
                }
            }
            let span = block.brace_token.span.close();
            let e = t.refuse(span, "this block needs a value: end it with an expression (no `;`)");
            quote!({ #out #e })
        })
    }

    fn stmt(&mut self, s: &Stmt) -> Tokens {
        match s {
            Stmt::Local(l) => self.local(l),
            Stmt::Item(i) => self.refuse(i.span(), "items inside a kernel are not supported: define them outside"),
            Stmt::Expr(e, _) => self.stmt_expr(e),
            Stmt::Macro(m) => self.mac_stmt(&m.mac),
        }
    }

    /// A macro as a statement (`sym!` has a value, dropped).
    fn mac_stmt(&mut self, m: &syn::Macro) -> Tokens {
        let t = self.mac(m);
        if m.path.segments.last().is_some_and(|s| s.ident == "sym") { quote!(let _ = #t;) } else { t }
    }

    fn local(&mut self, l: &syn::Local) -> Tokens {
        // `let (a, b) = (x, y);`: one `let` per element.
        if let (syn::Pat::Tuple(pt), Some(init)) = (&l.pat, &l.init)
            && let (Expr::Tuple(et), None) = (strip_paren(&init.expr), &init.diverge)
        {
            {
                if pt.elems.len() != et.elems.len() {
                    return self.refuse(l.span(), "the tuple pattern and the tuple have different lengths");
                }
                // Every value first (as Rust evaluates them), then the names.
                let mut out = Tokens::new();
                let temps: Vec<_> = (0..et.elems.len()).map(|k| format_ident!("__t{}", k)).collect();
                for (t, e) in temps.iter().zip(&et.elems) {
                    let v = self.expr(e);
                    out.extend(quote!(let #t = #v;));
                }
                for (t, p) in temps.iter().zip(&pt.elems) {
                    let one = syn::Local {
                        attrs: Vec::new(),
                        let_token: l.let_token,
                        pat: p.clone(),
                        init: Some(syn::LocalInit {
                            eq_token: init.eq_token,
                            expr: Box::new(syn::parse_quote!(#t)),
                            diverge: None,
                        }),
                        semi_token: l.semi_token,
                    };
                    self.bind(t, Binding::Val);
                    out.extend(self.local(&one));
                }
                return out;
            }
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
            return self.refuse(l.span(), "a `let` needs a value here (`let x = …;`)");
        };
        if let Some((_, e)) = &init.diverge {
            return self.refuse(e.span(), "`let … else` is not supported");
        }
        // `let tile = shared::<f32, 256>();`
        if let Some(generics) = shared_call(&init.expr) {
            if mutable {
                self.errors
                    .push(syn::Error::new(ident.span(), "a shared array is written through indexing: drop the `mut`"));
            }
            self.bind(&ident, Binding::Shared);
            let span = init.expr.span();
            return quote_spanned!(span=> let #ident = __cx.shared::#generics(););
        }
        // `let mut a = [init; N];` / `let mut a = [x, y, z];`: a per-thread array.
        match strip_paren(&init.expr) {
            Expr::Repeat(r) => {
                let v = self.expr(&r.expr);
                let n = &r.len;
                self.bind(&ident, Binding::Array { mutable });
                return quote_spanned!(ident.span()=> let #ident = { let __v = #v; __cx.local_array::<_, { #n }>(__v) };);
            }
            Expr::Array(a) => {
                if a.elems.is_empty() {
                    return self.refuse(a.span(), "an empty array has no element type: give it elements");
                }
                let vals: Vec<Tokens> = a.elems.iter().map(|e| self.expr(e)).collect();
                self.bind(&ident, Binding::Array { mutable });
                return quote_spanned!(ident.span()=> let #ident = { let __vals = [#(#vals),*]; __cx.local_array_of(&__vals) };);
            }
            _ => {}
        }
        let ty_tokens = match &ty {
            None => None,
            Some(t) => match scalar_type(t) {
                Some(_) => Some(t.clone()),
                None => {
                    return self.refuse(t.span(), "a `let` has a scalar type (bool i32 u32 i64 u64 f32 f64 usize)");
                }
            },
        };
        let v = self.expr(&init.expr);
        if ident == "_" {
            return quote!(let _ = #v;);
        }
        if mutable {
            self.bind(&ident, Binding::Var);
            match ty_tokens {
                Some(t) => {
                    quote_spanned!(ident.span()=> let #ident: ::relok::__kernel::Var<#t> = { let __v = #v; __cx.var(__v) };)
                }
                None => quote_spanned!(ident.span()=> let #ident = { let __v = #v; __cx.var(__v) };),
            }
        } else {
            self.bind(&ident, Binding::Val);
            match ty_tokens {
                Some(t) => quote_spanned!(ident.span()=> let #ident: ::relok::__kernel::Val<#t> = #v;),
                None => quote_spanned!(ident.span()=> let #ident = #v;),
            }
        }
    }

    /// An expression in statement position.
    fn stmt_expr(&mut self, e: &Expr) -> Tokens {
        match e {
            Expr::Assign(a) => self.assign(&a.left, None, &a.right, a.span()),
            Expr::Binary(b) if compound(&b.op).is_some() => self.assign(&b.left, compound(&b.op), &b.right, b.span()),
            Expr::If(i) => self.if_stmt(i),
            Expr::While(w) => {
                if let Some(l) = &w.label {
                    return self.refuse(l.span(), "loop labels are not supported");
                }
                let c = self.scoped(|t| t.expr(&w.cond));
                self.loops += 1;
                let body = self.block_unit(&w.body);
                self.loops -= 1;
                quote!(__cx.while_(|__cx| #c, |__cx| #body);)
            }
            Expr::Loop(l) => {
                if let Some(l) = &l.label {
                    return self.refuse(l.span(), "loop labels are not supported");
                }
                self.loops += 1;
                let body = self.block_unit(&l.body);
                self.loops -= 1;
                quote!(__cx.loop_(|__cx| #body);)
            }
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Break(b) => {
                if let Some(l) = &b.label {
                    return self.refuse(l.span(), "loop labels are not supported");
                }
                if let Some(v) = &b.expr {
                    return self
                        .refuse(v.span(), "`break` with a value is not supported: assign a `let mut` before `break`");
                }
                if self.loops == 0 {
                    return self.refuse(b.span(), "`break` outside of a loop");
                }
                quote!(__cx.break_();)
            }
            Expr::Continue(c) => {
                if let Some(l) = &c.label {
                    return self.refuse(l.span(), "loop labels are not supported");
                }
                if self.loops == 0 {
                    return self.refuse(c.span(), "`continue` outside of a loop");
                }
                quote!(__cx.continue_();)
            }
            Expr::Return(r) => match (self.kind.clone(), &r.expr) {
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
            },
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

    fn if_stmt(&mut self, i: &syn::ExprIf) -> Tokens {
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

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Tokens {
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

    /// `lhs = rhs` or `lhs op= rhs`.
    fn assign(&mut self, lhs: &Expr, op: Option<&str>, rhs: &Expr, span: Span) -> Tokens {
        let r = self.expr(rhs);
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
                        let v = combine(quote!(__cx.get(#id)));
                        quote!({ let __rhs = #r; let __n = #v; __cx.set(#id, __n); })
                    }
                    Some(Binding::Val) => self.refuse(
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
            Expr::Index(ix) => {
                let Some(base) = self.indexable(&ix.expr, true) else {
                    return quote!({ ::core::panic!() });
                };
                let i = self.expr(&ix.index);
                let at = loc(ix.index.span());
                let v = combine(quote!(__cx.load(__b, __i, #at)));
                quote!({ let __b = #base; let __i = #i; let __rhs = #r; let __n = #v; __cx.store(__b, __i, __n, #at); })
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
                    quote!({ let __b = #base; let __i = #i; let __rhs = #r; let __n = #v; __cx.store_unchecked(__b, __i, __n); })
                }
                other => self.refuse(other.span(), "only `*x.get_unchecked_mut(i) = v` writes through `*`"),
            },
            other => self.refuse(other.span(), "assign to a `let mut` variable or a slice element `x[i]`"),
        }
    }

    /// The staged handle of an indexable place: a slice parameter, a shared
    /// array, or a host static (an unbound path).
    fn indexable(&mut self, e: &Expr, write: bool) -> Option<Tokens> {
        let e = strip_paren(e);
        let Expr::Path(p) = e else {
            self.refuse(
                e.span(),
                "only slice parameters, arrays bound by `let`, shared arrays and host statics are indexed",
            );
            return None;
        };
        if let Some(id) = p.path.get_ident() {
            match self.lookup(&id.to_string()) {
                Some(Binding::Slice { mutable }) => {
                    if write && !mutable {
                        self.refuse(
                            id.span(),
                            format!("cannot assign through `{id}`, a `&` slice: declare the parameter `&mut [T]`"),
                        );
                        return None;
                    }
                    return Some(quote!(#id));
                }
                Some(Binding::Shared) => return Some(quote!(#id)),
                Some(Binding::Array { mutable }) => {
                    if write && !mutable {
                        self.refuse(
                            id.span(),
                            format!("cannot assign to an element of `{id}`: declare it with `let mut {id}`"),
                        );
                        return None;
                    }
                    return Some(quote!(#id));
                }
                Some(_) => {
                    self.refuse(
                        id.span(),
                        format!("`{id}` is a scalar: only slices, shared arrays and host statics are indexed"),
                    );
                    return None;
                }
                None => {}
            }
        }
        if write {
            self.refuse(p.span(), "a host static is read-only to kernels");
            return None;
        }
        let companion = rename_last(&outer(&p.path), "__RELOK_HOST_");
        Some(quote_spanned!(p.span()=> __cx.host(&#companion)))
    }

    /// An expression with a value.
    fn expr(&mut self, e: &Expr) -> Tokens {
        let span = e.span();
        match e {
            Expr::Lit(l) => match &l.lit {
                syn::Lit::Int(_) | syn::Lit::Float(_) | syn::Lit::Bool(_) => quote_spanned!(span=> __cx.lit(#l)),
                other => self.refuse(other.span(), "only integer, float and bool literals are values in a kernel"),
            },
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Path(p) => self.path_value(p),
            Expr::Binary(b) => self.binary(b),
            Expr::Unary(u) => match u.op {
                UnOp::Neg(_) => {
                    if let Expr::Lit(l) = strip_paren(&u.expr)
                        && matches!(l.lit, syn::Lit::Int(_) | syn::Lit::Float(_))
                    {
                        return quote_spanned!(span=> __cx.lit(-#l));
                    }
                    let a = self.expr(&u.expr);
                    quote_spanned!(span=> { let __a = #a; __cx.neg(__a) })
                }
                UnOp::Not(_) => {
                    let a = self.expr(&u.expr);
                    quote_spanned!(span=> { let __a = #a; __cx.not(__a) })
                }
                UnOp::Deref(_) => match strip_paren(&u.expr) {
                    Expr::MethodCall(m) if m.method == "get_unchecked" && m.args.len() == 1 => {
                        if self.unsafe_depth == 0 {
                            return self.refuse(
                                m.method.span(),
                                "call to unsafe function `get_unchecked` requires an `unsafe` block",
                            );
                        }
                        let Some(base) = self.indexable(&m.receiver, false) else {
                            return quote!({ ::core::panic!() });
                        };
                        let i = self.expr(&m.args[0]);
                        quote_spanned!(span=> { let __b = #base; let __i = #i; __cx.load_unchecked(__b, __i) })
                    }
                    _ => self.refuse(span, "`*` only reads `*x.get_unchecked(i)`: the subset has no references"),
                },
                _ => self.refuse(span, "unsupported operator"),
            },
            Expr::Cast(c) => {
                let Some(_) = scalar_type(&c.ty) else {
                    return self
                        .refuse(c.ty.span(), "`as` casts to a scalar type (bool i32 u32 i64 u64 f32 f64 usize)");
                };
                let a = self.expr(&c.expr);
                let ty = &c.ty;
                quote_spanned!(span=> { let __a = #a; __cx.cast::<_, #ty>(__a) })
            }
            Expr::Index(ix) => {
                let Some(base) = self.indexable(&ix.expr, false) else {
                    return quote!({ ::core::panic!() });
                };
                let i = self.expr(&ix.index);
                let at = loc(ix.index.span());
                quote_spanned!(span=> { let __b = #base; let __i = #i; __cx.load(__b, __i, #at) })
            }
            Expr::MethodCall(m) => self.method(m),
            Expr::Call(c) => self.call(c),
            Expr::If(i) => self.if_value(i),
            Expr::Block(b) => {
                if let Some(l) = &b.label {
                    return self.refuse(l.span(), "block labels are not supported");
                }
                self.block_value(&b.block)
            }
            Expr::Unsafe(u) => {
                self.unsafe_depth += 1;
                let b = self.block_value(&u.block);
                self.unsafe_depth -= 1;
                b
            }
            Expr::Macro(m) if m.mac.path.segments.last().is_some_and(|s| s.ident == "sym") => self.mac(&m.mac),
            Expr::Macro(m) => {
                self.refuse(m.span(), format!("the macro `{}!` has no value in a kernel", path_str(&m.mac.path)))
            }
            Expr::Closure(_) => {
                self.refuse(span, "closures are not supported in kernels: write a `#[relok::device]` function")
            }
            Expr::Reference(_) => self
                .refuse(span, "references are not supported in kernels (except `&x[i]` as an atomic's first argument)"),
            Expr::Tuple(_) => {
                self.refuse(span, "tuples are not supported in kernels: the subset has scalars, slices and arrays")
            }
            Expr::Array(_) | Expr::Repeat(_) => {
                self.refuse(span, "an array is declared with `let`: `let mut a = [0.0f32; 4];`")
            }
            Expr::Struct(_) => self.refuse(span, "struct values are not supported in kernels"),
            Expr::Field(_) => {
                self.refuse(span, "fields are not supported in kernels: the subset has scalars, slices and arrays")
            }
            Expr::Match(_) => self.refuse(span, "`match` is not supported in kernels: use `if` / `else if`"),
            Expr::Range(_) => self.refuse(span, "ranges are only the iterator of a `for` loop"),
            Expr::Try(_) => {
                self.refuse(span, "`?` is not supported in kernels: throw with `assert!`, `panic!` or `throw!`")
            }
            Expr::Async(_) | Expr::Await(_) => self.refuse(span, "`async` is not supported in kernels"),
            Expr::Let(_) => self.refuse(span, "`let` expressions are not supported in kernels"),
            Expr::Return(_)
            | Expr::Break(_)
            | Expr::Continue(_)
            | Expr::Assign(_)
            | Expr::While(_)
            | Expr::Loop(_)
            | Expr::ForLoop(_) => self.refuse(span, "this is a statement here, not a value"),
            _ => self.refuse(span, "unsupported expression in a kernel (see docs/kernels.md for the subset)"),
        }
    }

    fn path_value(&mut self, p: &syn::ExprPath) -> Tokens {
        if let Some(id) = p.path.get_ident() {
            match self.lookup(&id.to_string()) {
                Some(Binding::Val | Binding::Slice { .. } | Binding::Shared | Binding::Array { .. }) => {
                    return quote!(#id);
                }
                Some(Binding::Var) => return quote_spanned!(id.span()=> __cx.get(#id)),
                None => {}
            }
        }
        // A `const` of the user's: a literal.
        let path = outer(&p.path);
        quote_spanned!(p.span()=> __cx.lit(#path))
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Tokens {
        let span = b.span();
        let method = match b.op {
            BinOp::Add(_) => "add",
            BinOp::Sub(_) => "sub",
            BinOp::Mul(_) => "mul",
            BinOp::Div(_) => "div",
            BinOp::Rem(_) => "rem",
            BinOp::BitAnd(_) => "bitand",
            BinOp::BitOr(_) => "bitor",
            BinOp::BitXor(_) => "bitxor",
            BinOp::Shl(_) => "shl",
            BinOp::Shr(_) => "shr",
            BinOp::Eq(_) => "eq",
            BinOp::Ne(_) => "ne",
            BinOp::Lt(_) => "lt",
            BinOp::Le(_) => "le",
            BinOp::Gt(_) => "gt",
            BinOp::Ge(_) => "ge",
            BinOp::And(_) | BinOp::Or(_) => {
                let a = self.expr(&b.left);
                let r = self.scoped(|t| t.expr(&b.right));
                let m = if matches!(b.op, BinOp::And(_)) { quote!(and) } else { quote!(or) };
                return quote_spanned!(span=> { let __a = #a; __cx.#m(__a, |__cx| #r) });
            }
            _ => return self.refuse(b.op.span(), "a compound assignment is a statement, not a value"),
        };
        let a = self.expr(&b.left);
        let c = self.expr(&b.right);
        let m = format_ident!("{}", method, span = b.op.span());
        quote_spanned!(span=> { let __a = #a; let __b = #c; __cx.#m(__a, __b) })
    }

    fn method(&mut self, m: &syn::ExprMethodCall) -> Tokens {
        let span = m.span();
        let name = m.method.to_string();
        if m.turbofish.is_some() {
            return self.refuse(m.method.span(), "method generics are not supported in kernels");
        }
        if name == "len" && m.args.is_empty() {
            let Some(base) = self.indexable(&m.receiver, false) else {
                return quote!({ ::core::panic!() });
            };
            return quote_spanned!(span=> { let __b = #base; __cx.len(__b) });
        }
        if name == "get_unchecked" || name == "get_unchecked_mut" {
            return self.refuse(m.method.span(), format!("`{name}` is used as `*x.{name}(i)` inside `unsafe`"));
        }
        let Some(&(_, arity, mapping)) = METHODS.iter().find(|(n, _, _)| *n == name) else {
            let known: Vec<&str> =
                METHODS.iter().filter(|m| IR_HAS_MATH || matches!(m.2, Mapping::Cx(_))).map(|m| m.0).collect();
            return self.refuse(
                m.method.span(),
                format!(
                    "the method `{name}` is not supported in kernels; supported: `len`, `get_unchecked`, {}",
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
            return self.refuse(m.span(), format!("`{name}` takes {arity} argument(s)"));
        }
        let recv = self.expr(&m.receiver);
        let args: Vec<Tokens> = m.args.iter().map(|a| self.expr(a)).collect();
        let names: Vec<_> = (0..args.len()).map(|k| format_ident!("__b{}", k)).collect();
        let call = match mapping {
            Mapping::Cx(f) => {
                let f = format_ident!("{}", f, span = m.method.span());
                quote_spanned!(span=> __cx.#f(__a, #(#names),*))
            }
            Mapping::Math(f) => {
                let f = format_ident!("{}", f);
                quote_spanned!(span=> __cx.math(::relok::__kernel::MathFn::#f, __a, &[#(#names),*]))
            }
        };
        quote_spanned!(span=> { let __a = #recv; #(let #names = #args;)* #call })
    }

    fn call(&mut self, c: &syn::ExprCall) -> Tokens {
        let span = c.span();
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
            if ATOMICS.contains(&name.as_str()) {
                return self.atomic(&name, c);
            }
        }
        if relok_path {
            return self.refuse(fp.span(), format!("`relok::{name}` is not a kernel builtin (see docs/kernels.md)"));
        }
        // A device function.
        let path = outer(&fp.path);
        let key = path.to_token_stream().to_string();
        if !self.callees.iter().any(|(k, _, _)| *k == key) {
            let l = format_ident!("__relok_fn_{}", self.callees.len());
            self.callees.push((key, path.clone(), l));
        }
        let call = rename_last(&path, "__relok_call_");
        let mut lets = Tokens::new();
        let mut names = Vec::new();
        for (k, a) in c.args.iter().enumerate() {
            let v = self.expr(a);
            let n = format_ident!("__a{}", k);
            lets.extend(quote!(let #n = #v;));
            names.push(n);
        }
        quote_spanned!(span=> { #lets let __f = __cx.func(#name); #call(__cx, __f, #(#names),*) })
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
            let global = outer(&p.path);
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

    fn if_value(&mut self, i: &syn::ExprIf) -> Tokens {
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

    /// `panic!("…")`, `throw!("…")`, `assert!(c)`, `assert!(c, "…")`.
    fn mac(&mut self, m: &syn::Macro) -> Tokens {
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
                quote_spanned!(span=> { let __c = #c; __cx.assert(__c, #message, #at); })
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
                quote_spanned!(span=> { let __a = #a; let __b = #b; let __c = __cx.#cmp(__a, __b); __cx.assert(__c, #message, #at); })
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

fn strip_paren(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_paren(&p.expr),
        Expr::Group(g) => strip_paren(&g.expr),
        e => e,
    }
}

/// Whether a statement always leaves the block (nothing after it runs).
fn diverges(s: &Stmt) -> bool {
    match s {
        Stmt::Expr(e, _) => is_diverging_expr(e),
        Stmt::Macro(m) => ["panic", "throw", "unreachable"].iter().any(|n| m.mac.path.is_ident(n)),
        _ => false,
    }
}

fn is_diverging_expr(e: &Expr) -> bool {
    match e {
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
        Expr::Macro(m) => ["panic", "throw", "unreachable"].iter().any(|n| m.mac.path.is_ident(n)),
        _ => false,
    }
}

fn call_name(c: &syn::ExprCall) -> Option<String> {
    let Expr::Path(p) = &*c.func else { return None };
    if p.path.segments.len() == 1 || is_relok_path(&p.path) {
        p.path.segments.last().map(|s| s.ident.to_string())
    } else {
        None
    }
}

fn is_relok_path(p: &syn::Path) -> bool {
    p.segments.len() == 2 && p.segments[0].ident == "relok"
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

fn path_str(p: &syn::Path) -> String {
    p.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
}

/// A path written in the kernel's module, as seen from the generated
/// module one level down (`super::x` → `super::super::x`, `self::x` →
/// `super::x`).
fn outer(p: &syn::Path) -> syn::Path {
    let mut p = p.clone();
    if let Some(first) = p.segments.first() {
        if first.ident == "super" && p.leading_colon.is_none() {
            p.segments.insert(0, syn::PathSegment::from(syn::Ident::new("super", first.ident.span())));
        } else if first.ident == "self" && p.leading_colon.is_none() {
            let span = first.ident.span();
            if let Some(s) = p.segments.first_mut() {
                s.ident = syn::Ident::new("super", span);
            }
        }
    }
    p
}

/// `a::b::f` → `a::b::PREFIXf`.
fn rename_last(p: &syn::Path, prefix: &str) -> syn::Path {
    let mut p = p.clone();
    if let Some(last) = p.segments.last_mut() {
        last.ident = format_ident!("{}{}", prefix, last.ident, span = last.ident.span());
        last.arguments = syn::PathArguments::None;
    }
    p
}
