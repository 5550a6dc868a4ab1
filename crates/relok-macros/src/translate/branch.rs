//! Control flow: `if` / `else if` / `else` as a statement and as a
//! value, `while`, `loop` (as a statement and as a value), loop labels,
//! `break` (with a label, with a value), `continue` and `return`.
//!
//! Loops are the IR's (`break` and `continue` leave the innermost one);
//! a `break 'outer` / `continue 'outer` from inside inner loops sets the
//! labelled loop's exit flag (a `local` cleared where it starts) and
//! breaks; after each loop in between, the flag sends the loop around it
//! on (`exit_through`), and in the labelled loop `exit_to` breaks or
//! continues it. A `loop`'s value is a `local` its `break value`s set.

use super::{FnKind, Translator};
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::Expr;
use syn::spanned::Spanned;

impl Translator {
    pub(super) fn if_stmt(&mut self, i: &syn::ExprIf) -> Tokens {
        if let Expr::Let(l) = &*i.cond {
            return self.if_let(i, l, false);
        }
        if super::option::is_let_chain(&i.cond) {
            return self.refuse_let_chain(&i.cond);
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
            return self.if_let(i, l, true);
        }
        if super::option::is_let_chain(&i.cond) {
            return self.refuse_let_chain(&i.cond);
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
        if let Expr::Let(l) = &*w.cond {
            return self.while_let(w, l);
        }
        if super::option::is_let_chain(&w.cond) {
            return self.refuse_let_chain(&w.cond);
        }
        self.in_loop(w.label.as_ref(), LoopKind::Other, |t| {
            let c = t.scoped(|t| t.expr(&w.cond));
            let body = t.block_unit(&w.body);
            quote!(__cx.while_(|__cx| #c, |__cx| #body);)
        })
    }

    /// A `while`'s body written as `loop { … }` (`while let`, `option.rs`):
    /// a `break value` in it is refused, as in a `while`.
    pub(super) fn while_as_loop(&mut self, l: &syn::ExprLoop) -> Tokens {
        self.in_loop(l.label.as_ref(), LoopKind::Other, |t| {
            let body = t.block_unit(&l.body);
            quote!(__cx.loop_(|__cx| #body);)
        })
    }

    /// `loop { … }` as a statement (a `break value` is evaluated and dropped).
    pub(super) fn plain_loop(&mut self, l: &syn::ExprLoop) -> Tokens {
        self.in_loop(l.label.as_ref(), LoopKind::Loop { value: false }, |t| {
            let body = t.block_unit(&l.body);
            quote!(__cx.loop_(|__cx| #body);)
        })
    }

    /// `loop { … }` as a value: what its `break value` gives.
    pub(super) fn loop_value(&mut self, l: &syn::ExprLoop) -> Tokens {
        let value = format_ident!("__relok_loop_value_{}", self.loop_count);
        let stmt = self.in_loop(l.label.as_ref(), LoopKind::Loop { value: true }, |t| {
            let body = t.block_unit(&l.body);
            quote!(__cx.loop_(|__cx| #body);)
        });
        quote!({ let #value = __cx.loop_value(); #stmt __cx.get(#value) })
    }

    /// A loop: `body` translates it with its frame pushed; the exit flag
    /// of a labelled loop left from inside an inner one is declared before
    /// it, and after it come the checks of the labelled loops further out
    /// that are left from inside it (see [`LoopFrame`]).
    pub(super) fn in_loop(
        &mut self,
        label: Option<&syn::Label>,
        kind: LoopKind,
        body: impl FnOnce(&mut Self) -> Tokens,
    ) -> Tokens {
        let n = self.loop_count;
        self.loop_count += 1;
        self.loops.push(LoopFrame {
            label: label.map(|l| l.name.ident.to_string()),
            kind,
            flag: format_ident!("__relok_exit_{}", n),
            value: format_ident!("__relok_loop_value_{}", n),
            flag_used: false,
            escapes: Vec::new(),
        });
        let stmt = body(self);
        let Some(frame) = self.loops.pop() else { return stmt };
        let mut out = Tokens::new();
        if frame.flag_used {
            let flag = &frame.flag;
            out.extend(quote!(let #flag = __cx.exit_flag();));
        }
        out.extend(stmt);
        let parent = self.loops.len().checked_sub(1);
        for &t in &frame.escapes {
            let flag = &self.loops[t].flag;
            if Some(t) == parent {
                out.extend(quote!(__cx.exit_to(#flag);));
            } else {
                out.extend(quote!(__cx.exit_through(#flag);));
            }
        }
        quote!({ #out })
    }

    /// The loop a `break` / `continue` leaves: the innermost, or the one
    /// of its label.
    fn target(&mut self, label: Option<&syn::Lifetime>, what: &str, span: proc_macro2::Span) -> Result<usize, Tokens> {
        match label {
            None => match self.loops.len().checked_sub(1) {
                Some(t) => Ok(t),
                None => Err(self.refuse(span, format!("`{what}` outside of a loop"))),
            },
            Some(l) => {
                let name = l.ident.to_string();
                match self.loops.iter().rposition(|f| f.label.as_deref() == Some(name.as_str())) {
                    Some(t) => Ok(t),
                    None => Err(self.refuse(
                        l.span(),
                        format!("use of undeclared label `{l}`: a kernel's labels name the loops around it"),
                    )),
                }
            }
        }
    }

    /// Leaves the loops from the innermost to `t` (1: to break it, 2: to
    /// continue it).
    fn exit(&mut self, t: usize, how: u32) -> Tokens {
        let inner = self.loops.len() - 1;
        if t == inner {
            return if how == 1 { quote!(__cx.break_();) } else { quote!(__cx.continue_();) };
        }
        self.loops[t].flag_used = true;
        for f in &mut self.loops[t + 1..] {
            if !f.escapes.contains(&t) {
                f.escapes.push(t);
            }
        }
        let flag = &self.loops[t].flag;
        quote!(__cx.exit_outer(#flag, #how);)
    }

    /// `break`, `break 'label`, `break value` (out of a `loop`).
    pub(super) fn break_stmt(&mut self, b: &syn::ExprBreak) -> Tokens {
        let t = match self.target(b.label.as_ref(), "break", b.span()) {
            Ok(t) => t,
            Err(e) => return e,
        };
        let mut out = Tokens::new();
        if let Some(v) = &b.expr {
            let LoopKind::Loop { value } = self.loops[t].kind else {
                return self.refuse(v.span(), "`break` with a value leaves only a `loop` (not a `while` or a `for`)");
            };
            let v = self.expr(v);
            if value {
                let var = &self.loops[t].value;
                out.extend(quote!({ let __v = #v; __cx.set(#var, __v); }));
            } else {
                out.extend(quote!(let _ = #v;));
            }
        }
        out.extend(self.exit(t, 1));
        quote!({ #out })
    }

    /// `continue`, `continue 'label`.
    pub(super) fn continue_stmt(&mut self, c: &syn::ExprContinue) -> Tokens {
        match self.target(c.label.as_ref(), "continue", c.span()) {
            Ok(t) => self.exit(t, 2),
            Err(e) => e,
        }
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
                "a generic device function, or one returning a struct or a tuple, is inlined into its callers: end it with its result instead of `return`",
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

/// What kind of loop a frame is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LoopKind {
    /// `loop` (`value`: used as a value, so `break value` sets it).
    Loop { value: bool },
    /// `while`, `for`.
    Other,
}

/// A loop around the construct being translated.
pub(super) struct LoopFrame {
    label: Option<String>,
    kind: LoopKind,
    /// Its exit flag (`__cx.exit_flag()`), declared when `flag_used`.
    flag: syn::Ident,
    /// Its value's `local` (a `loop` used as a value).
    value: syn::Ident,
    /// Whether a `break`/`continue` from inside an inner loop leaves it.
    flag_used: bool,
    /// The loops further out (indices into the stack) that a labelled
    /// `break`/`continue` inside this one leaves: checked after it.
    escapes: Vec<usize>,
}
