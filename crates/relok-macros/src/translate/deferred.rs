//! Deferred initialisation: `let y;` (or `let y: T;`) assigned later,
//! `if c { y = a; } else { y = b; }`. `y` is a `local` of the IR (its
//! type is what rustc infers from the assignments).
//!
//! rustc would check that `y` is assigned before it is read, and (without
//! `mut`) at most once; the staged code cannot show it the Rust, so the
//! macro checks a simple form of both on the statements after the `let`,
//! and refuses the rest at the `let`: the first statement that mentions
//! `y` must assign it on every path that goes on — `y = e;` (`e` not
//! reading `y`), or an `if` / `else` or a `match` whose every branch
//! assigns it so (or leaves: `return`, `break`, `continue`, `panic!`) —
//! and, without `mut`, nothing after that assignment assigns `y` again.
//! A mention in a loop, in a condition, or anywhere else before the
//! assignment is refused (Rust accepts some of these).

use super::Translator;
use proc_macro2::{TokenStream as Tokens, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, Stmt};

/// What a run of statements does with the deferred name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Init {
    /// Not mentioned.
    Untouched,
    /// Assigned on every path that goes on.
    Assigned,
    /// Leaves on every path before mentioning it.
    Leaves,
    /// Anything else.
    Refused,
}

impl Translator {
    /// Checks `let name;` against the statements after it (see the module
    /// docs), recording the refusal.
    pub(super) fn check_deferred(&mut self, l: &syn::Local, name: &syn::Ident, mutable: bool, rest: &[Stmt]) {
        if init_of(rest, name, mutable) == Init::Refused {
            self.refuse(
                l.span(),
                format!(
                    "`{name}` is declared without a value: a kernel assigns it in the next statement that names it, on every path (`{name} = …;`, or in each branch of an `if` / `else` or a `match`), before reading it{}",
                    if mutable { "" } else { ", and only once" }
                ),
            );
        }
    }
}

fn init_of(stmts: &[Stmt], name: &syn::Ident, mutable: bool) -> Init {
    for (k, s) in stmts.iter().enumerate() {
        let here = stmt_init(s, name, mutable);
        match here {
            Init::Untouched => continue,
            Init::Assigned => {
                let again = stmts[k + 1..].iter().any(|s| assigns(s.to_token_stream(), name));
                return if again && !mutable { Init::Refused } else { Init::Assigned };
            }
            Init::Leaves | Init::Refused => return here,
        }
    }
    Init::Untouched
}

fn stmt_init(s: &Stmt, name: &syn::Ident, mutable: bool) -> Init {
    let mentioned = mentions(s.to_token_stream(), name);
    match s {
        Stmt::Expr(e, _) => expr_init(e, name, mutable, mentioned),
        Stmt::Macro(m) if !mentioned && ["panic", "throw", "unreachable"].iter().any(|n| m.mac.path.is_ident(n)) => {
            Init::Leaves
        }
        _ if mentioned => Init::Refused,
        _ => Init::Untouched,
    }
}

fn expr_init(e: &Expr, name: &syn::Ident, mutable: bool, mentioned: bool) -> Init {
    match e {
        Expr::Assign(a) if matches!(super::strip_paren(&a.left), Expr::Path(p) if p.path.is_ident(name)) => {
            if mentions(a.right.to_token_stream(), name) { Init::Refused } else { Init::Assigned }
        }
        Expr::If(i) if mentioned => {
            if mentions(i.cond.to_token_stream(), name) {
                return Init::Refused;
            }
            let then = init_of(&i.then_branch.stmts, name, mutable);
            let otherwise = match &i.else_branch {
                None => Init::Untouched,
                Some((_, e)) => match &**e {
                    Expr::Block(b) => init_of(&b.block.stmts, name, mutable),
                    e => expr_init(e, name, mutable, true),
                },
            };
            join(&[then, otherwise])
        }
        Expr::Match(m) if mentioned => {
            if mentions(m.expr.to_token_stream(), name)
                || m.arms.iter().any(|a| a.guard.as_ref().is_some_and(|(_, g)| mentions(g.to_token_stream(), name)))
            {
                return Init::Refused;
            }
            let arms: Vec<Init> = m
                .arms
                .iter()
                .map(|a| match &*a.body {
                    Expr::Block(b) => init_of(&b.block.stmts, name, mutable),
                    e => expr_init(e, name, mutable, mentions(e.to_token_stream(), name)),
                })
                .collect();
            join(&arms)
        }
        Expr::Block(b) if mentioned => init_of(&b.block.stmts, name, mutable),
        _ if mentioned => Init::Refused,
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => Init::Leaves,
        Expr::Macro(m) if ["panic", "throw", "unreachable"].iter().any(|n| m.mac.path.is_ident(n)) => Init::Leaves,
        _ => Init::Untouched,
    }
}

/// The branches of one statement together: assigned when every branch
/// assigns or leaves (and one assigns).
fn join(branches: &[Init]) -> Init {
    if branches.iter().all(|b| *b == Init::Untouched) {
        return Init::Untouched;
    }
    if branches.iter().all(|b| matches!(b, Init::Assigned | Init::Leaves)) {
        return if branches.contains(&Init::Assigned) { Init::Assigned } else { Init::Leaves };
    }
    Init::Refused
}

/// Whether `name` appears in `t` (shadowing aside: a mention refuses).
fn mentions(t: Tokens, name: &syn::Ident) -> bool {
    t.into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i == *name,
        TokenTree::Group(g) => mentions(g.stream(), name),
        _ => false,
    })
}

/// Whether `t` assigns `name` (`name =`, `name += …`, every compound
/// operator; not `name ==`).
fn assigns(t: Tokens, name: &syn::Ident) -> bool {
    let tokens: Vec<TokenTree> = t.into_iter().collect();
    for (k, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Group(g) if assigns(g.stream(), name) => return true,
            TokenTree::Ident(i) if i == name => {
                let mut j = k + 1;
                let mut op = String::new();
                while let Some(TokenTree::Punct(p)) = tokens.get(j) {
                    op.push(p.as_char());
                    if p.spacing() == proc_macro2::Spacing::Alone {
                        break;
                    }
                    j += 1;
                }
                if op.ends_with('=') && !matches!(op.as_str(), "==" | "<=" | ">=" | "!=") {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}
