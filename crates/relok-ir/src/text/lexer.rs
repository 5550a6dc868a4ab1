//! Tokens of the `.rk` text.
//!
//! The lexer is pulled by the parser one token at a time because `;` means
//! two things: it starts a comment everywhere except where the grammar
//! expects the separator of an array type `[T; N]`, which the parser asks
//! for with [`Lexer::array_semicolon`].

use super::ParseError;
use crate::ir::Span;

/// What a token is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum Tok<'a> {
    /// `[A-Za-z_][A-Za-z0-9_]*`
    Ident(&'a str),
    /// Decimal digits with an optional fraction and exponent: `12`, `1.5`, `1e-10`.
    Num(&'a str),
    /// `0x` and hex digits; the payload is the digits.
    Hex(&'a str),
    /// A string literal with Rust `{:?}` escapes; the payload is the raw
    /// text between the quotes (validated: decode with [`unescape`]).
    Str(&'a str),
    /// `->`
    Arrow,
    /// One punctuation character: `@ % : = , ( ) { } [ ] < > . - +`.
    Punct(char),
    /// End of input.
    Eof,
}

/// A token with its text and position.
#[derive(Copy, Clone, Debug)]
pub(super) struct Token<'a> {
    pub tok: Tok<'a>,
    pub text: &'a str,
    pub span: Span,
}

impl Token<'_> {
    /// The token as error messages name it: `` `}` `` or `end of input`.
    pub fn describe(&self) -> String {
        match self.tok {
            Tok::Eof => "end of input".to_string(),
            _ => {
                const MAX: usize = 40;
                match self.text.char_indices().nth(MAX) {
                    Some((i, _)) => format!("`{}...`", &self.text[..i]),
                    None => format!("`{}`", self.text),
                }
            }
        }
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

/// `$` continues an identifier so that lowered `patch` modules, whose
/// patched constants carry relocation-record names (`relok$k$agg$box`),
/// print and parse; the verifier allows it only there.
fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// A cursor over the source text.
#[derive(Debug)]
pub(super) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
    col: u32,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Lexer<'a> {
        Lexer { src, pos: 0, line: 1, col: 1 }
    }

    fn span(&self) -> Span {
        Span::new(self.line, self.col)
    }

    fn peek_char(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_char_at(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line = self.line.saturating_add(1);
            self.col = 1;
        } else {
            self.col = self.col.saturating_add(1);
        }
        Some(c)
    }

    fn bump_while(&mut self, f: impl Fn(char) -> bool) {
        while self.peek_char().is_some_and(&f) {
            self.bump();
        }
    }

    fn skip_whitespace(&mut self) {
        self.bump_while(char::is_whitespace);
    }

    fn skip_trivia(&mut self) {
        loop {
            self.skip_whitespace();
            if self.peek_char() == Some(';') {
                self.bump_while(|c| c != '\n');
            } else {
                return;
            }
        }
    }

    /// The `;` of an array type; whitespace may precede it, a comment may not.
    pub fn array_semicolon(&mut self) -> Result<(), ParseError> {
        self.skip_whitespace();
        if self.peek_char() == Some(';') {
            self.bump();
            return Ok(());
        }
        let found = self.next()?;
        Err(ParseError {
            span: found.span,
            message: format!("expected `;` after the element type of an array, found {}", found.describe()),
        })
    }

    /// The next token, skipping whitespace and comments.
    pub fn next(&mut self) -> Result<Token<'a>, ParseError> {
        self.skip_trivia();
        let span = self.span();
        let start = self.pos;
        let Some(c) = self.bump() else {
            return Ok(Token { tok: Tok::Eof, text: "", span });
        };
        let tok = if is_ident_start(c) {
            self.bump_while(is_ident_char);
            Tok::Ident(&self.src[start..self.pos])
        } else if c.is_ascii_digit() {
            self.number(c, start, span)?
        } else if c == '-' && self.peek_char() == Some('>') {
            self.bump();
            Tok::Arrow
        } else if c == '"' {
            self.string(span)?
        } else if "@%:=,(){}[]<>.-+".contains(c) {
            Tok::Punct(c)
        } else {
            return Err(ParseError { span, message: format!("unexpected character `{}`", c.escape_debug()) });
        };
        Ok(Token { tok, text: &self.src[start..self.pos], span })
    }

    /// A name of the characters `ok` accepts, e.g. a symbol name after
    /// `:` (`ref :a.b`), which the ordinary tokens would split. With
    /// `skip_trivia`, whitespace and comments may precede it; without, it
    /// must follow the previous token directly.
    pub fn raw_name(
        &mut self,
        skip_trivia: bool,
        ok: fn(char) -> bool,
        what: &str,
    ) -> Result<(&'a str, Span), ParseError> {
        if skip_trivia {
            self.skip_trivia();
        }
        let span = self.span();
        let start = self.pos;
        self.bump_while(ok);
        if self.pos == start {
            let found = self.next()?;
            return Err(ParseError {
                span: found.span,
                message: format!("expected {what}, found {}", found.describe()),
            });
        }
        Ok((&self.src[start..self.pos], span))
    }

    /// The rest of a string literal after its opening `"`: checks every
    /// escape (`\"` `\\` `\n` `\r` `\t` `\0` `\'` `\u{XXXX}`).
    fn string(&mut self, open: Span) -> Result<Tok<'a>, ParseError> {
        let start = self.pos;
        loop {
            let at = self.span();
            let end = self.pos;
            match self.bump() {
                None | Some('\n') => {
                    return Err(ParseError { span: open, message: "string literal not closed on its line".into() });
                }
                Some('"') => return Ok(Tok::Str(&self.src[start..end])),
                Some('\\') => match self.bump() {
                    Some('"' | '\\' | 'n' | 'r' | 't' | '0' | '\'') => {}
                    Some('u') => {
                        let bad = || ParseError {
                            span: at,
                            message:
                                "malformed `\\u{...}` escape: expected 1 to 6 hex digits of a Unicode scalar value"
                                    .into(),
                        };
                        if self.bump() != Some('{') {
                            return Err(bad());
                        }
                        let digits = self.pos;
                        self.bump_while(|c| c.is_ascii_hexdigit());
                        let hex = &self.src[digits..self.pos];
                        if self.bump() != Some('}') || hex.is_empty() || hex.len() > 6 {
                            return Err(bad());
                        }
                        if u32::from_str_radix(hex, 16).ok().and_then(char::from_u32).is_none() {
                            return Err(bad());
                        }
                    }
                    Some(c) => {
                        return Err(ParseError {
                            span: at,
                            message: format!("unknown escape `\\{}` in a string literal", c.escape_debug()),
                        });
                    }
                    None => {
                        return Err(ParseError { span: open, message: "string literal not closed on its line".into() });
                    }
                },
                Some(_) => {}
            }
        }
    }

    fn number(&mut self, first: char, start: usize, span: Span) -> Result<Tok<'a>, ParseError> {
        let tok = if first == '0' && matches!(self.peek_char(), Some('x' | 'X')) {
            self.bump();
            let digits = self.pos;
            self.bump_while(|c| c.is_ascii_hexdigit());
            if self.pos == digits {
                return Err(ParseError { span, message: "expected hex digits after `0x`".into() });
            }
            Tok::Hex(&self.src[digits..self.pos])
        } else {
            self.bump_while(|c| c.is_ascii_digit());
            if self.peek_char() == Some('.') && self.peek_char_at(1).is_some_and(|c| c.is_ascii_digit()) {
                self.bump();
                self.bump_while(|c| c.is_ascii_digit());
            }
            if matches!(self.peek_char(), Some('e' | 'E')) {
                let signed = matches!(self.peek_char_at(1), Some('+' | '-'));
                let first_digit = if signed { 2 } else { 1 };
                if self.peek_char_at(first_digit).is_some_and(|c| c.is_ascii_digit()) {
                    for _ in 0..first_digit {
                        self.bump();
                    }
                    self.bump_while(|c| c.is_ascii_digit());
                }
            }
            Tok::Num(&self.src[start..self.pos])
        };
        if self.peek_char().is_some_and(|c| is_ident_char(c) || c == '.') {
            self.bump_while(|c| is_ident_char(c) || c == '.');
            return Err(ParseError { span, message: format!("malformed number `{}`", &self.src[start..self.pos]) });
        }
        Ok(tok)
    }
}

/// The text of a string literal whose raw contents the lexer validated.
pub(super) fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('0') => out.push('\0'),
            Some('u') => {
                let hex: String = chars.by_ref().skip(1).take_while(|&c| c != '}').collect();
                out.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
            }
            Some(c) => out.push(c),
            None => {}
        }
    }
    out
}
