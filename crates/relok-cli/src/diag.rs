//! Rendering errors against kernel text: `file:line:col: error: message`,
//! followed by the offending line and a caret.

use relok_ir::{ParseError, Span, VerifyErrors};

/// One diagnostic.
pub fn render(file: &str, src: &str, span: Span, message: &str) -> String {
    if !span.is_known() {
        return format!("{file}: error: {message}\n");
    }
    let mut out = format!("{file}:{span}: error: {message}\n");
    if let Some(line) = src.lines().nth(span.line as usize - 1) {
        let gutter = span.line.to_string();
        let caret_pad: String = line
            .chars()
            .take(span.col.saturating_sub(1) as usize)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        out.push_str(&format!("{:w$} |\n{gutter} | {line}\n{:w$} | {caret_pad}^\n", "", "", w = gutter.len()));
    }
    out
}

/// A parse error.
pub fn render_parse(file: &str, src: &str, e: &ParseError) -> String {
    render(file, src, e.span, &e.message)
}

/// Every verifier error, in order.
pub fn render_verify(file: &str, src: &str, errors: &VerifyErrors) -> String {
    errors.errors.iter().map(|e| render(file, src, e.span, &e.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_at_the_column() {
        let s = render("k.rk", "a\n  bad thing\n", Span::new(2, 3), "oops");
        assert_eq!(s, "k.rk:2:3: error: oops\n  |\n2 |   bad thing\n  |   ^\n");
        assert_eq!(render("k.rk", "", Span::default(), "oops"), "k.rk: error: oops\n");
    }
}
