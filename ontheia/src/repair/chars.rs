//! Character classes and output edits of the repairing parser.

pub(super) fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\n' | '\t' | '\r')
}

pub(super) fn is_special_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

pub(super) fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        ',' | ':' | '[' | ']' | '/' | '{' | '}' | '(' | ')' | '\n' | '+'
    )
}

pub(super) fn is_unquoted_delimiter(c: char) -> bool {
    matches!(c, ',' | '[' | ']' | '/' | '{' | '}' | '\n' | '+')
}

pub(super) fn is_double_quote_like(c: char) -> bool {
    matches!(c, '"' | '\u{201c}' | '\u{201d}')
}

pub(super) fn is_single_quote_like(c: char) -> bool {
    matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '`' | '\u{b4}')
}

pub(super) fn is_quote(c: char) -> bool {
    is_double_quote_like(c) || is_single_quote_like(c)
}

pub(super) fn is_start_of_value(c: char) -> bool {
    c == '[' || c == '{' || c == '-' || c == '_' || c.is_ascii_alphanumeric() || is_quote(c)
}

pub(super) fn is_function_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

pub(super) fn is_function_name_char(c: char) -> bool {
    is_function_name_start(c) || c.is_ascii_digit()
}

pub(super) fn is_url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?#@!$&'()*+;=".contains(c)
}

/// Which characters close a string opened by `open`.
#[derive(Clone, Copy)]
pub(super) enum QuoteKind {
    Double,
    Single,
    SingleLike,
    DoubleLike,
}

impl QuoteKind {
    pub(super) fn of(open: char) -> QuoteKind {
        if open == '"' {
            QuoteKind::Double
        } else if open == '\'' {
            QuoteKind::Single
        } else if is_single_quote_like(open) {
            QuoteKind::SingleLike
        } else {
            QuoteKind::DoubleLike
        }
    }

    pub(super) fn closes(self, c: char) -> bool {
        match self {
            QuoteKind::Double => c == '"',
            QuoteKind::Single => c == '\'',
            QuoteKind::SingleLike => is_single_quote_like(c),
            QuoteKind::DoubleLike => is_double_quote_like(c),
        }
    }
}

/// Pushes a character into a JSON string, escaping control characters.
pub(super) fn push_escaped(s: &mut String, c: char) {
    match c {
        '\n' => s.push_str("\\n"),
        '\r' => s.push_str("\\r"),
        '\t' => s.push_str("\\t"),
        c if c < '\u{20}' => s.push_str(&format!("\\u{:04x}", u32::from(c))),
        c => s.push(c),
    }
}

/// Inserts `text` before the trailing whitespace of `out`.
pub(super) fn insert_before_last_whitespace(out: &mut String, text: &str) {
    let trimmed = out.trim_end_matches(is_whitespace).len();
    out.insert_str(trimmed, text);
}

/// Removes a `,` that ends `out` (before trailing whitespace).
pub(super) fn strip_trailing_comma(out: &mut String) {
    let trimmed = out.trim_end_matches(is_whitespace);
    if trimmed.ends_with(',') {
        let at = trimmed.len() - 1;
        out.remove(at);
    }
}

/// Bracket counts of a string being built, brought up to date lazily so
/// that a long string is counted once however often it is asked about.
#[derive(Default)]
pub(super) struct BracketCount {
    counted: usize,
    /// (open − close) for `()`, `[]`, `{}`.
    balance: [i64; 3],
}

impl BracketCount {
    /// Whether `text` opens more of the bracket that `close` closes than it
    /// closes.
    pub(super) fn unclosed(&mut self, text: &str, close: char) -> bool {
        let slot = match close {
            ')' => 0,
            ']' => 1,
            '}' => 2,
            _ => return false,
        };
        if let Some(rest) = text.get(self.counted..) {
            for c in rest.chars() {
                match c {
                    '(' => self.balance[0] += 1,
                    ')' => self.balance[0] -= 1,
                    '[' => self.balance[1] += 1,
                    ']' => self.balance[1] -= 1,
                    '{' => self.balance[2] += 1,
                    '}' => self.balance[2] -= 1,
                    _ => {}
                }
            }
        }
        self.counted = text.len();
        self.balance.get(slot).is_some_and(|open| *open > 0)
    }

    /// One byte (not a bracket) was inserted at `at`.
    pub(super) fn shifted(&mut self, at: usize) {
        if self.counted > at {
            self.counted += 1;
        }
    }
}

pub(super) fn ends_with_comma_or_newline(out: &str) -> bool {
    let t = out.trim_end_matches([' ', '\t', '\r']);
    t.ends_with(',') || t.ends_with('\n')
}
