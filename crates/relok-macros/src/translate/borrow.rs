//! The borrows the macro checks itself: the staged values of a sub-slice
//! (`let row = &mut y[a..b];`), a row (`let r = &m[i];`) and a closure
//! (`let f = |k| y[k];`) are `Copy` handles, so rustc cannot see the
//! borrows the Rust they come from holds; the macro keeps Rust's rules
//! for them instead, conservatively:
//!
//! - a borrow lasts from its `let` to the end of the last statement of
//!   the block that names the borrower (a loop or block naming it counts
//!   whole: the borrow is live around a loop, as in Rust);
//! - while it lasts, the borrowed name is not used at all when the borrow
//!   is `&mut` (a `&mut` sub-slice, a closure that writes what it
//!   captures), and not written when it is `&` (a `&` sub-slice, a
//!   closure that reads it);
//! - what a borrower borrows, a borrower of it borrows too (`&row[1..]`,
//!   a closure capturing `row`): Rust's reborrows;
//! - in a call, an argument `&mut y[..]` (or `&y[..]`) borrows `y` for
//!   the arguments after it;
//! - a `for` loop over a place (`y.iter_mut()`, `&x[a..b]`, `m.iter()`,
//!   zipped or not) borrows it for its body.
//!
//! Rust's borrow checker accepts more (a borrow ends at its last use,
//! inside a statement too); what it refuses, this refuses. Each refusal
//! names the borrower.
//!
//! A closure being translated records what it captures ([`Capture`]):
//! every name of the scopes outside it that its body uses, and whether
//! it writes it.

use super::Translator;
use proc_macro2::TokenStream as Tokens;
use syn::{Expr, Stmt};

/// A live borrow of the name `of`.
pub(super) struct Borrow {
    of: String,
    /// The borrower (a name in scope), or `None` for a call's argument.
    by: Option<String>,
    mutable: bool,
    /// The depth of the scope the borrow ends with.
    depth: usize,
    /// The borrower's last use is the value of the assignment that comes
    /// next (`x[0] = row[1];`): the borrow ends before its place.
    until_value: bool,
}

/// What a closure being translated captures.
pub(super) struct Capture {
    /// Names bound in scopes below this depth are captured.
    depth: usize,
    /// Each captured name and whether the body writes it.
    pub(super) names: Vec<(String, bool)>,
}

impl Translator {
    /// A use of `id` (a write when `write`): an error while a live borrow
    /// forbids it (the use is still translated, so that nothing else
    /// fails), and recorded for the closures around.
    pub(super) fn use_name(&mut self, id: &syn::Ident, write: bool) {
        let name = id.to_string();
        let Some(at) = self.scopes.iter().rposition(|s| s.contains_key(&name)) else { return };
        for c in &mut self.captures {
            if at < c.depth {
                match c.names.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, w)) => *w |= write,
                    None => c.names.push((name.clone(), write)),
                }
            }
        }
        let Some(b) = self.borrows.iter().find(|b| b.of == name && (b.mutable || write)) else { return };
        let by = match &b.by {
            Some(by) if by == LOOP => "the `for` loop's iterator".to_owned(),
            Some(by) => format!("`{by}`, which is used later"),
            None => "an earlier argument of this call".to_owned(),
        };
        let message = if b.mutable {
            format!(
                "cannot use `{name}` here: it is borrowed mutably by {by} (Rust's borrow checker refuses this too); go through the borrower, or use `{name}` after the borrower's last use"
            )
        } else {
            format!(
                "cannot write `{name}` here: it is borrowed by {by} (Rust's borrow checker refuses this too); write it after the borrower's last use"
            )
        };
        self.errors.push(syn::Error::new(id.span(), message));
    }

    /// `by` borrows `of` (mutably or not) from here to the end of the
    /// last statement of this block naming `by`; it also borrows what
    /// `of` borrows.
    pub(super) fn lend(&mut self, of: &str, by: Option<&syn::Ident>, mutable: bool) {
        let depth = if by.is_some() { self.scopes.len() } else { usize::MAX };
        let by = by.map(ToString::to_string);
        let mut new = vec![Borrow { of: of.to_owned(), by: by.clone(), mutable, depth, until_value: false }];
        for b in &self.borrows {
            if b.by.as_deref() == Some(of) {
                new.push(Borrow { of: b.of.clone(), by: by.clone(), mutable: b.mutable, depth, until_value: false });
            }
        }
        self.borrows.extend(new);
    }

    /// The `for` loop over `it` borrows the places it iterates for its
    /// body (called in the loop's scope).
    pub(super) fn lend_to_loop(&mut self, it: &Expr) {
        let mut places = Vec::new();
        iterated(it, &mut places);
        let by = syn::Ident::new(LOOP, proc_macro2::Span::call_site());
        for (of, mutable) in places {
            self.lend(&of.to_string(), Some(&by), mutable);
        }
    }

    /// After a statement of a block: the borrows of borrowers the rest of
    /// the block does not name are over; those whose borrower the next
    /// statement, an assignment, names last and only in its value end
    /// with that value (Rust evaluates it before the place).
    pub(super) fn after_stmt(&mut self, rest: &[Stmt]) {
        let depth = self.scopes.len();
        self.borrows.retain(|b| {
            b.depth != depth || b.by.as_ref().is_some_and(|by| rest.iter().any(|s| names(&quote::quote!(#s), by)))
        });
        let next_place = match rest.first() {
            Some(Stmt::Expr(Expr::Assign(a), _)) => Some(&*a.left),
            Some(Stmt::Expr(Expr::Binary(b), _)) if is_compound(&b.op) => Some(&*b.left),
            _ => None,
        };
        for b in &mut self.borrows {
            if b.depth == depth
                && let (Some(by), Some(place)) = (&b.by, next_place)
            {
                b.until_value =
                    !names(&quote::quote!(#place), by) && !rest[1..].iter().any(|s| names(&quote::quote!(#s), by));
            }
        }
    }

    /// An assignment's value was translated: the borrows that end with it
    /// are over.
    pub(super) fn after_value(&mut self) {
        let depth = self.scopes.len();
        self.borrows.retain(|b| !(b.until_value && b.depth == depth));
    }

    /// A scope ended: the borrows made in it are over.
    pub(super) fn end_borrows(&mut self) {
        let depth = self.scopes.len();
        self.borrows.retain(|b| b.depth <= depth || b.depth == usize::MAX);
    }

    /// The arguments of a call were translated: their borrows are over.
    pub(super) fn end_argument_borrows(&mut self) {
        self.borrows.retain(|b| b.by.is_some());
    }

    /// Translates a closure's body with its captures recorded (`depth`:
    /// the scopes outside it).
    pub(super) fn capturing(&mut self, depth: usize, f: impl FnOnce(&mut Self) -> Tokens) -> (Tokens, Capture) {
        self.captures.push(Capture { depth, names: Vec::new() });
        let t = f(self);
        let c = self.captures.pop().unwrap_or(Capture { depth, names: Vec::new() });
        (t, c)
    }
}

/// The borrower a `for` loop's iterator is (never a user's name).
const LOOP: &str = "__relok_loop";

/// The places the iterator `e` runs over, each with whether it writes
/// them.
fn iterated<'e>(e: &'e Expr, out: &mut Vec<(&'e syn::Ident, bool)>) {
    match super::strip_paren(e) {
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "iter" | "iter_mut" => {
                if let Some(root) = super::subslice::root(&m.receiver) {
                    out.push((root, m.method == "iter_mut"));
                }
            }
            "zip" => {
                iterated(&m.receiver, out);
                if let Some(a) = m.args.first() {
                    iterated(a, out);
                }
            }
            _ => iterated(&m.receiver, out),
        },
        Expr::Reference(r) => {
            if let Some(root) = super::subslice::root(&r.expr) {
                out.push((root, r.mutability.is_some()));
            }
        }
        Expr::Path(p) => {
            if let Some(id) = p.path.get_ident() {
                out.push((id, false));
            }
        }
        _ => {}
    }
}

fn is_compound(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | BitXorAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// Whether `tokens` name `ident` (anywhere, macros' arguments too).
pub(super) fn names(tokens: &Tokens, ident: &str) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == ident,
        proc_macro2::TokenTree::Group(g) => names(&g.stream(), ident),
        _ => false,
    })
}
