//! Expressions with a value: literals, names in scope and the user's
//! `const`s, unary and binary operators (`&&` / `||` short-circuit),
//! blocks and `unsafe` blocks, and the dispatch to the other groups
//! (casts, indexing, calls, methods, `if`, `sym!`); every other
//! expression is refused, naming what the subset has instead.

use super::{Binding, Translator, path_str, strip_paren};
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, UnOp};

impl Translator {
    /// An expression with a value.
    pub(super) fn expr(&mut self, e: &Expr) -> Tokens {
        let span = e.span();
        if let Some(a) = super::statement::expr_attrs(e).first() {
            return self.refuse(
                a.path().span(),
                "attributes on expressions are not supported in kernels: put a `#[cfg]` on a statement",
            );
        }
        match e {
            Expr::Lit(l) => match &l.lit {
                syn::Lit::Int(i) => self.int_lit(i, quote!(#l)),
                // `b'a'`: a `u8`.
                syn::Lit::Float(_) | syn::Lit::Bool(_) | syn::Lit::Byte(_) => quote_spanned!(span=> __cx.lit(#l)),
                other => {
                    self.refuse(other.span(), "only integer, float, bool and byte (`b'a'`) literals are values in a kernel")
                }
            },
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Path(p) => self.path_value(p),
            Expr::Binary(b) => self.binary(b),
            Expr::Unary(u) => match u.op {
                UnOp::Neg(_) => {
                    if let Expr::Lit(l) = strip_paren(&u.expr) {
                        match &l.lit {
                            syn::Lit::Int(i) => return self.int_lit(i, quote_spanned!(span=> -#l)),
                            syn::Lit::Float(_) => return quote_spanned!(span=> __cx.lit(-#l)),
                            _ => {}
                        }
                    }
                    let a = self.expr(&u.expr);
                    quote_spanned!(span=> { let __a = #a; __cx.neg(__a) })
                }
                UnOp::Not(_) => {
                    let a = self.expr(&u.expr);
                    quote_spanned!(span=> { let __a = #a; __cx.not(__a) })
                }
                UnOp::Deref(_) => self.deref_read(u, span),
                _ => self.refuse(span, "unsupported operator"),
            },
            Expr::Cast(c) => self.cast(c, span),
            Expr::Index(ix) => self.index_read(ix, span),
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
            Expr::Closure(_) => self.refuse(
                span,
                "a closure is bound by `let` and called in a kernel (`let f = |x: f32| x * 2.0; f(v)`): it is not a value",
            ),
            Expr::Reference(r) if let Some(t) = self.reference_value(r) => t,
            Expr::Reference(_) => self
                .refuse(span, "references are not supported in kernels (except `&x[i]` as an atomic's first argument)"),
            Expr::Tuple(t) => self.tuple(t),
            Expr::Array(_) | Expr::Repeat(_) => {
                self.refuse(span, "an array is declared with `let`: `let mut a = [0.0f32; 4];`")
            }
            Expr::Struct(s) => self.struct_lit(s),
            Expr::Field(f) => self.field(f),
            Expr::Match(m) => self.match_value(m),
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
            | Expr::ForLoop(_) => self.refuse(span, "this is a statement here, not a value"),
            Expr::Loop(l) => self.loop_value(l),
            _ => self.refuse(span, "unsupported expression in a kernel (see docs/kernels.md for the subset)"),
        }
    }

    /// An integer literal (`value` is it, or its negation). The device's
    /// `usize` is 32 bits: a `usize` literal above `u32::MAX` is refused
    /// here, an unsuffixed one that large is wrapped in `wide_lit`, which
    /// rustc refuses for `usize` (whose type only rustc knows) with the
    /// same reason, at the literal.
    fn int_lit(&mut self, i: &syn::LitInt, value: Tokens) -> Tokens {
        let span = i.span();
        let wide = i.base10_parse::<u128>().is_ok_and(|v| v > u128::from(u32::MAX));
        if !wide {
            return quote_spanned!(span=> __cx.lit(#value));
        }
        if i.suffix() == "usize" {
            return self.refuse(
                span,
                "this literal does not fit a kernel's `usize`: it is 32 bits on the device (indices and lengths are `u32`); use `u64` for wider values",
            );
        }
        quote_spanned!(span=> __cx.lit(::relok::__kernel::wide_lit(#value)))
    }

    fn path_value(&mut self, p: &syn::ExprPath) -> Tokens {
        if let Some(id) = p.path.get_ident() {
            match self.lookup(&id.to_string()) {
                Some(
                    b @ (Binding::Val | Binding::Ref | Binding::Slice { .. } | Binding::Shared | Binding::Array { .. }),
                ) => {
                    // A `&mut` slice passed on may be written.
                    self.use_name(id, b == Binding::Slice { mutable: true });
                    return quote!(#id);
                }
                Some(Binding::Array2 { mutable }) => {
                    self.use_name(id, mutable);
                    return quote!(#id);
                }
                Some(Binding::Closure { .. }) => {
                    return self.refuse(
                        id.span(),
                        format!("`{id}` is a closure: a kernel calls it, `{id}(…)`; it is not a value"),
                    );
                }
                Some(Binding::ElemMut) => {
                    return self.refuse(id.span(), format!("`{id}` is a `&mut` element: read it as `*{id}`"));
                }
                Some(Binding::Var) => {
                    self.use_name(id, false);
                    return quote_spanned!(id.span()=> __cx.get(#id));
                }
                None => {}
            }
        }
        if let Some(t) = self.none_path(p) {
            return t;
        }
        // A `const` of the user's: a literal.
        let path = self.outer(&p.path);
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
}
