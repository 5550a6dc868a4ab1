//! Hygiene: the generated code's own names (`__cx`, `__a`, `__rhs`,
//! `__m`, …: every identifier starting with `__`) are quoted at the spans
//! of the user's tokens they stand beside, for error locations, or at the
//! macro's call site. In a kernel written by a `macro_rules!`, the user's
//! tokens come from different syntax contexts — the macro's body and the
//! fragments (`$x:ident`, `$e:expr`, `$t:ty`) its caller passed — and a
//! local is only found under the context it was bound in: `__cx` bound by
//! the generated closure and used beside a fragment would not resolve
//! ("cannot find value `__cx`"). So every such name resolves as the
//! function's body does (its braces' context), keeping its location; the
//! user's names keep theirs, so a fragment's name still means what Rust's
//! hygiene says. Outside a `macro_rules!` every token already has that
//! context: nothing changes.

use proc_macro2::{Group, Span, TokenStream as Tokens, TokenTree};

/// `tokens` with the generated code's names (identifiers starting with
/// `__`) resolved at `body` (the function body's span).
pub fn staged_names(tokens: Tokens, body: Span) -> Tokens {
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Ident(mut i) if i.to_string().starts_with("__") => {
                i.set_span(i.span().resolved_at(body));
                TokenTree::Ident(i)
            }
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), staged_names(g.stream(), body));
                n.set_span(g.span());
                TokenTree::Group(n)
            }
            t => t,
        })
        .collect()
}
