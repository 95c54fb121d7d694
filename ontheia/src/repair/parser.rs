//! The repairing parser: a single left-to-right pass over the characters
//! that writes JSON as it goes, inserting what is missing and dropping what
//! is superfluous. Its decisions follow the npm `jsonrepair` package, so
//! that the engine reads model output the way the reference engine does.
//!
//! Every character is visited a bounded number of times (a string is
//! re-scanned at most twice when its end quote turns out to be missing), and
//! edits to the output only touch its tail, so the pass is linear.

/// Why a text could not be repaired.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot repair JSON at character {position}: {message}")]
pub struct RepairError {
    /// Character offset.
    pub position: usize,
    /// What went wrong.
    pub message: String,
}

/// Containers may nest this deep.
const MAX_DEPTH: usize = 512;

pub(super) fn repair(text: &str) -> Result<String, RepairError> {
    let chars: Vec<char> = text.chars().collect();
    let mut p = Parser {
        s: &chars,
        i: 0,
        out: String::with_capacity(text.len() + text.len() / 8 + 16),
        depth: 0,
    };
    p.document()?;
    Ok(p.out)
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
    out: String,
    depth: usize,
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\n' | '\t' | '\r')
}

fn is_special_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        ',' | ':' | '[' | ']' | '/' | '{' | '}' | '(' | ')' | '\n' | '+'
    )
}

fn is_unquoted_delimiter(c: char) -> bool {
    matches!(c, ',' | '[' | ']' | '/' | '{' | '}' | '\n' | '+')
}

fn is_double_quote_like(c: char) -> bool {
    matches!(c, '"' | '\u{201c}' | '\u{201d}')
}

fn is_single_quote_like(c: char) -> bool {
    matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '`' | '\u{b4}')
}

fn is_quote(c: char) -> bool {
    is_double_quote_like(c) || is_single_quote_like(c)
}

fn is_start_of_value(c: char) -> bool {
    c == '[' || c == '{' || c == '-' || c == '_' || c.is_ascii_alphanumeric() || is_quote(c)
}

fn is_function_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn is_function_name_char(c: char) -> bool {
    is_function_name_start(c) || c.is_ascii_digit()
}

fn is_url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?#@!$&'()*+;=".contains(c)
}

/// Which characters close a string opened by `open`.
#[derive(Clone, Copy)]
enum QuoteKind {
    Double,
    Single,
    SingleLike,
    DoubleLike,
}

impl QuoteKind {
    fn of(open: char) -> QuoteKind {
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

    fn closes(self, c: char) -> bool {
        match self {
            QuoteKind::Double => c == '"',
            QuoteKind::Single => c == '\'',
            QuoteKind::SingleLike => is_single_quote_like(c),
            QuoteKind::DoubleLike => is_double_quote_like(c),
        }
    }
}

/// Pushes a character into a JSON string, escaping control characters.
fn push_escaped(s: &mut String, c: char) {
    match c {
        '\n' => s.push_str("\\n"),
        '\r' => s.push_str("\\r"),
        '\t' => s.push_str("\\t"),
        c if c < '\u{20}' => s.push_str(&format!("\\u{:04x}", u32::from(c))),
        c => s.push(c),
    }
}

/// Inserts `text` before the trailing whitespace of `out`.
fn insert_before_last_whitespace(out: &mut String, text: &str) {
    let trimmed = out.trim_end_matches(is_whitespace).len();
    out.insert_str(trimmed, text);
}

/// Removes a `,` that ends `out` (before trailing whitespace).
fn strip_trailing_comma(out: &mut String) {
    let trimmed = out.trim_end_matches(is_whitespace);
    if trimmed.ends_with(',') {
        let at = trimmed.len() - 1;
        out.remove(at);
    }
}

/// Bracket counts of a string being built, brought up to date lazily so
/// that a long string is counted once however often it is asked about.
#[derive(Default)]
struct BracketCount {
    counted: usize,
    /// (open − close) for `()`, `[]`, `{}`.
    balance: [i64; 3],
}

impl BracketCount {
    /// Whether `text` opens more of the bracket that `close` closes than it
    /// closes.
    fn unclosed(&mut self, text: &str, close: char) -> bool {
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
        self.balance[slot] > 0
    }

    /// One byte (not a bracket) was inserted at `at`.
    fn shifted(&mut self, at: usize) {
        if self.counted > at {
            self.counted += 1;
        }
    }
}

fn ends_with_comma_or_newline(out: &str) -> bool {
    let t = out.trim_end_matches([' ', '\t', '\r']);
    t.ends_with(',') || t.ends_with('\n')
}

impl Parser<'_> {
    fn at(&self, i: usize) -> Option<char> {
        self.s.get(i).copied()
    }

    fn cur(&self) -> Option<char> {
        self.at(self.i)
    }

    fn is(&self, c: char) -> bool {
        self.cur() == Some(c)
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, RepairError> {
        Err(RepairError {
            position: self.i,
            message: message.into(),
        })
    }

    fn document(&mut self) -> Result<(), RepairError> {
        self.markdown_fence(&["```", "[```", "{```"]);
        if !self.value()? {
            return self.fail("unexpected end of input");
        }
        self.markdown_fence(&["```", "```]", "```}"]);
        let comma = self.character(',');
        if comma {
            self.whitespace_and_comments(true);
        }
        if self.cur().is_some_and(is_start_of_value) && ends_with_comma_or_newline(&self.out) {
            if !comma {
                insert_before_last_whitespace(&mut self.out, ",");
            }
            self.newline_delimited()?;
        } else if comma {
            strip_trailing_comma(&mut self.out);
        }
        while matches!(self.cur(), Some('}' | ']')) {
            self.i += 1;
            self.whitespace_and_comments(true);
        }
        if self.i >= self.s.len() {
            return Ok(());
        }
        self.fail(format!(
            "unexpected character {:?}",
            self.cur().unwrap_or(' ')
        ))
    }

    fn newline_delimited(&mut self) -> Result<(), RepairError> {
        let mut initial = true;
        loop {
            if !initial && !self.character(',') {
                insert_before_last_whitespace(&mut self.out, ",");
            }
            initial = false;
            if !self.value()? {
                break;
            }
        }
        strip_trailing_comma(&mut self.out);
        self.out = format!("[\n{}\n]", self.out);
        Ok(())
    }

    fn markdown_fence(&mut self, blocks: &[&str]) -> bool {
        let save = self.i;
        let save_out = self.out.len();
        self.whitespace(true);
        for block in blocks {
            let n = block.chars().count();
            if self.i + n <= self.s.len()
                && self.s[self.i..self.i + n].iter().copied().eq(block.chars())
            {
                self.i += n;
                if self.cur().is_some_and(is_function_name_start) {
                    while self.cur().is_some_and(is_function_name_char) {
                        self.i += 1;
                    }
                }
                self.whitespace_and_comments(true);
                return true;
            }
        }
        self.i = save;
        self.out.truncate(save_out);
        false
    }

    fn value(&mut self) -> Result<bool, RepairError> {
        self.whitespace_and_comments(true);
        let done = self.object()?
            || self.array()?
            || self.string(false, None)?
            || self.number()
            || self.keywords()
            || self.unquoted_string(false)?
            || self.regex();
        self.whitespace_and_comments(true);
        Ok(done)
    }

    fn whitespace_and_comments(&mut self, skip_newline: bool) -> bool {
        let start = self.i;
        self.whitespace(skip_newline);
        while self.comment() {
            self.whitespace(skip_newline);
        }
        self.i > start
    }

    fn whitespace(&mut self, skip_newline: bool) -> bool {
        let start = self.i;
        while let Some(c) = self.cur() {
            if is_whitespace(c) && (skip_newline || c != '\n') {
                self.out.push(c);
            } else if is_special_whitespace(c) {
                self.out.push(' ');
            } else {
                break;
            }
            self.i += 1;
        }
        self.i > start
    }

    fn comment(&mut self) -> bool {
        if self.is('/') && self.at(self.i + 1) == Some('*') {
            while self.i < self.s.len() && !(self.is('*') && self.at(self.i + 1) == Some('/')) {
                self.i += 1;
            }
            self.i = (self.i + 2).min(self.s.len());
            true
        } else if self.is('/') && self.at(self.i + 1) == Some('/') {
            while self.i < self.s.len() && !self.is('\n') {
                self.i += 1;
            }
            true
        } else {
            false
        }
    }

    fn character(&mut self, c: char) -> bool {
        if self.is(c) {
            self.out.push(c);
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn skip(&mut self, c: char) -> bool {
        if self.is(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn skip_ellipsis(&mut self) {
        self.whitespace_and_comments(true);
        if self.is('.') && self.at(self.i + 1) == Some('.') && self.at(self.i + 2) == Some('.') {
            self.i += 3;
            self.whitespace_and_comments(true);
            self.skip(',');
        }
    }

    fn enter(&mut self) -> Result<(), RepairError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.fail(format!("nesting deeper than {MAX_DEPTH}"));
        }
        Ok(())
    }

    fn object(&mut self) -> Result<bool, RepairError> {
        if !self.is('{') {
            return Ok(false);
        }
        self.enter()?;
        self.out.push('{');
        self.i += 1;
        self.whitespace_and_comments(true);
        if self.skip(',') {
            self.whitespace_and_comments(true);
        }
        let mut initial = true;
        while self.i < self.s.len() && !self.is('}') {
            if !initial {
                if !self.character(',') {
                    insert_before_last_whitespace(&mut self.out, ",");
                }
                self.whitespace_and_comments(true);
            }
            initial = false;
            self.skip_ellipsis();
            let key = self.string(false, None)? || self.unquoted_string(true)?;
            if !key {
                if matches!(self.cur(), None | Some('}' | '{' | ']' | '[')) {
                    strip_trailing_comma(&mut self.out);
                } else {
                    return self.fail("object key expected");
                }
                break;
            }
            self.whitespace_and_comments(true);
            let colon = self.character(':');
            let truncated = self.i >= self.s.len();
            if !colon {
                if self.cur().is_some_and(is_start_of_value) || truncated {
                    insert_before_last_whitespace(&mut self.out, ":");
                } else {
                    return self.fail("colon expected");
                }
            }
            if !self.value()? {
                if colon || truncated {
                    self.out.push_str("null");
                } else {
                    return self.fail("colon expected");
                }
            }
        }
        if self.is('}') {
            self.out.push('}');
            self.i += 1;
        } else {
            insert_before_last_whitespace(&mut self.out, "}");
        }
        self.depth -= 1;
        Ok(true)
    }

    fn array(&mut self) -> Result<bool, RepairError> {
        if !self.is('[') {
            return Ok(false);
        }
        self.enter()?;
        self.out.push('[');
        self.i += 1;
        self.whitespace_and_comments(true);
        if self.skip(',') {
            self.whitespace_and_comments(true);
        }
        let mut initial = true;
        while self.i < self.s.len() && !self.is(']') {
            if !initial && !self.character(',') {
                insert_before_last_whitespace(&mut self.out, ",");
            }
            self.skip_ellipsis();
            if !self.value()? {
                if !initial {
                    strip_trailing_comma(&mut self.out);
                }
                break;
            }
            initial = false;
        }
        if self.is(']') {
            self.out.push(']');
            self.i += 1;
        } else {
            insert_before_last_whitespace(&mut self.out, "]");
        }
        self.depth -= 1;
        Ok(true)
    }

    fn prev_non_whitespace(&self, from: usize) -> Option<usize> {
        let mut j = from;
        loop {
            let c = self.at(j)?;
            if !is_whitespace(c) {
                return Some(j);
            }
            j = j.checked_sub(1)?;
        }
    }

    /// A quoted string. `stop_at_delimiter`: the end quote is missing, end
    /// at the first delimiter; `stop_at`: end at this index.
    fn string(
        &mut self,
        stop_at_delimiter: bool,
        stop_at: Option<usize>,
    ) -> Result<bool, RepairError> {
        let skip_escapes = self.is('\\');
        if skip_escapes {
            self.i += 1;
        }
        let Some(open) = self.cur().filter(|c| is_quote(*c)) else {
            if skip_escapes {
                return self.fail("unexpected backslash");
            }
            return Ok(false);
        };
        let kind = QuoteKind::of(open);
        let i_before = self.i;
        let o_before = self.out.len();
        let mut s = String::from("\"");
        let mut brackets = BracketCount::default();
        self.i += 1;
        loop {
            let Some(c) = self.cur() else {
                // End of text: the end quote is missing.
                let prev = self
                    .i
                    .checked_sub(1)
                    .and_then(|j| self.prev_non_whitespace(j));
                if !stop_at_delimiter && prev.and_then(|j| self.at(j)).is_some_and(is_delimiter) {
                    self.i = i_before;
                    self.out.truncate(o_before);
                    return self.string(true, None);
                }
                insert_before_last_whitespace(&mut s, "\"");
                self.out.push_str(&s);
                return Ok(true);
            };
            if stop_at == Some(self.i) {
                insert_before_last_whitespace(&mut s, "\"");
                self.out.push_str(&s);
                return Ok(true);
            }
            if kind.closes(c) {
                let i_quote = self.i;
                let o_quote = s.len();
                s.push('"');
                self.i += 1;
                self.out.push_str(&s);
                self.whitespace_and_comments(false);
                let next = self.cur();
                if stop_at_delimiter
                    || next.is_none_or(|n| {
                        (is_delimiter(n) && !brackets.unclosed(&s, n))
                            || (is_quote(n) && !self.next_quote_is_end_quote(self.i))
                            || n.is_ascii_digit()
                    })
                {
                    self.concatenated_string()?;
                    return Ok(true);
                }
                if next == Some('\\') {
                    return self.fail("unexpected backslash after a string");
                }
                let prev_i = i_quote
                    .checked_sub(1)
                    .and_then(|j| self.prev_non_whitespace(j));
                let prev = prev_i.and_then(|j| self.at(j));
                if prev == Some(',') {
                    // `["hello, world]`: the string ended at the comma.
                    self.i = i_before;
                    self.out.truncate(o_before);
                    return self.string(false, prev_i);
                }
                if prev.is_some_and(is_delimiter) {
                    self.i = i_before;
                    self.out.truncate(o_before);
                    return self.string(true, None);
                }
                // The quote was an unescaped one inside the string.
                self.out.truncate(o_before);
                self.i = i_quote + 1;
                s.insert(o_quote, '\\');
                brackets.shifted(o_quote);
            } else if stop_at_delimiter && is_unquoted_delimiter(c) {
                if self.i > 0 && self.at(self.i - 1) == Some(':') && self.url_start_at(i_before + 1)
                {
                    while self.cur().is_some_and(is_url_char) {
                        s.push(self.s[self.i]);
                        self.i += 1;
                    }
                }
                insert_before_last_whitespace(&mut s, "\"");
                self.out.push_str(&s);
                self.concatenated_string()?;
                return Ok(true);
            } else if c == '\\' {
                let next = self.at(self.i + 1);
                match next {
                    Some(e @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {
                        s.push('\\');
                        s.push(e);
                        self.i += 2;
                    }
                    Some('u') => {
                        let mut j = 2;
                        while j < 6 && self.at(self.i + j).is_some_and(|h| h.is_ascii_hexdigit()) {
                            j += 1;
                        }
                        if j == 6 {
                            s.extend(&self.s[self.i..self.i + 6]);
                            self.i += 6;
                        } else if self.i + j >= self.s.len() {
                            self.i = self.s.len();
                        } else {
                            return self.fail("invalid unicode escape");
                        }
                    }
                    Some(other) => {
                        // An invalid escape: drop the backslash.
                        push_escaped(&mut s, other);
                        self.i += 2;
                    }
                    None => {
                        self.i += 1;
                    }
                }
            } else if c == '"' {
                // A bare double quote inside a string opened by another quote
                // (an escaped one was taken with its backslash above).
                s.push_str("\\\"");
                self.i += 1;
            } else if let Some(esc) = match c {
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                '\u{8}' => Some("\\b"),
                '\u{c}' => Some("\\f"),
                _ => None,
            } {
                s.push_str(esc);
                self.i += 1;
            } else {
                if c < '\u{20}' {
                    return self.fail(format!("invalid character {c:?}"));
                }
                s.push(c);
                self.i += 1;
            }
            if skip_escapes {
                self.skip('\\');
            }
        }
    }

    /// Whether the quote at `index` is followed only by whitespace and then
    /// the end or a delimiter (then it, not the one before, ends the string).
    fn next_quote_is_end_quote(&self, index: usize) -> bool {
        let mut next = index + 1;
        while self.at(next).is_some_and(is_whitespace) {
            next += 1;
        }
        self.at(next).is_none_or(is_delimiter)
    }

    /// `scheme://` at index `at`.
    fn url_start_at(&self, at: usize) -> bool {
        let mut j = at;
        let mut letters = 0;
        while self.at(j).is_some_and(|c| c.is_ascii_alphabetic()) {
            j += 1;
            letters += 1;
        }
        letters >= 2
            && self.at(j) == Some(':')
            && self.at(j + 1) == Some('/')
            && self.at(j + 2) == Some('/')
    }

    fn concatenated_string(&mut self) -> Result<bool, RepairError> {
        let mut done = false;
        self.whitespace_and_comments(true);
        while self.is('+') {
            done = true;
            self.i += 1;
            self.whitespace_and_comments(true);
            // Drop the end quote of the first string (and what follows it).
            let trimmed = self.out.trim_end_matches(is_whitespace).len();
            if self.out[..trimmed].ends_with('"') {
                self.out.truncate(trimmed - 1);
            }
            let start = self.out.len();
            if self.string(false, None)? {
                // Drop the start quote of the second string.
                if self.out[start..].starts_with('"') {
                    self.out.remove(start);
                }
            } else {
                insert_before_last_whitespace(&mut self.out, "\"");
            }
        }
        Ok(done)
    }

    fn number(&mut self) -> bool {
        let start = self.i;
        let digits = |p: &mut Self| {
            while p.cur().is_some_and(|c| c.is_ascii_digit()) {
                p.i += 1;
            }
        };
        let at_end = |p: &Self| p.cur().is_none_or(|c| is_delimiter(c) || is_whitespace(c));
        let finish_with_zero = |p: &mut Self| {
            let text: String = p.s[start..p.i].iter().collect();
            p.out.push_str(&text);
            p.out.push('0');
        };
        if self.is('-') {
            self.i += 1;
            if at_end(self) {
                finish_with_zero(self);
                return true;
            }
            if !self.cur().is_some_and(|c| c.is_ascii_digit() || c == '.') {
                self.i = start;
                return false;
            }
        }
        let int_start = self.i;
        digits(self);
        let no_int = self.i == int_start;
        if self.is('.') {
            self.i += 1;
            if at_end(self) && !no_int {
                finish_with_zero(self);
                return true;
            }
            if !self.cur().is_some_and(|c| c.is_ascii_digit()) {
                self.i = start;
                return false;
            }
            digits(self);
        } else if no_int {
            self.i = start;
            return false;
        }
        if matches!(self.cur(), Some('e' | 'E')) {
            self.i += 1;
            if matches!(self.cur(), Some('-' | '+')) {
                self.i += 1;
            }
            if at_end(self) {
                finish_with_zero(self);
                return true;
            }
            if !self.cur().is_some_and(|c| c.is_ascii_digit()) {
                self.i = start;
                return false;
            }
            digits(self);
        }
        if !at_end(self) {
            self.i = start;
            return false;
        }
        if self.i == start {
            return false;
        }
        let text: String = self.s[start..self.i].iter().collect();
        let unsigned = text.strip_prefix('-').unwrap_or(&text);
        if unsigned.len() > 1
            && unsigned.starts_with('0')
            && unsigned.as_bytes()[1].is_ascii_digit()
        {
            self.out.push('"');
            self.out.push_str(&text);
            self.out.push('"');
        } else if let Some(frac) = unsigned.strip_prefix('.') {
            if text.starts_with('-') {
                self.out.push('-');
            }
            self.out.push_str("0.");
            self.out.push_str(frac);
        } else {
            self.out.push_str(&text);
        }
        true
    }

    fn keywords(&mut self) -> bool {
        for (name, value) in [
            ("true", "true"),
            ("false", "false"),
            ("null", "null"),
            ("True", "true"),
            ("False", "false"),
            ("None", "null"),
        ] {
            let n = name.len();
            if self.i + n <= self.s.len()
                && self.s[self.i..self.i + n].iter().copied().eq(name.chars())
            {
                self.out.push_str(value);
                self.i += n;
                return true;
            }
        }
        false
    }

    fn unquoted_string(&mut self, is_key: bool) -> Result<bool, RepairError> {
        let start = self.i;
        if self.cur().is_some_and(is_function_name_start) {
            while self.cur().is_some_and(is_function_name_char) {
                self.i += 1;
            }
            let mut j = self.i;
            while self.at(j).is_some_and(is_whitespace) {
                j += 1;
            }
            if self.at(j) == Some('(') {
                // `NumberLong("2")`, `callback({...});`: keep the argument.
                self.i = j + 1;
                if !self.value()? {
                    return self.fail("a function call without an argument");
                }
                if self.is(')') {
                    self.i += 1;
                    if self.is(';') {
                        self.i += 1;
                    }
                }
                return Ok(true);
            }
        }
        while let Some(c) = self.cur() {
            if is_unquoted_delimiter(c) || is_quote(c) || (is_key && c == ':') {
                break;
            }
            self.i += 1;
        }
        if self.i > start && self.at(self.i - 1) == Some(':') && self.url_start_at(start) {
            while self.cur().is_some_and(is_url_char) {
                self.i += 1;
            }
        }
        if self.i > start {
            while self.i > start && self.at(self.i - 1).is_some_and(is_whitespace) {
                self.i -= 1;
            }
            let symbol: String = self.s[start..self.i].iter().collect();
            if symbol == "undefined" {
                self.out.push_str("null");
            } else {
                self.out
                    .push_str(&serde_json::Value::String(symbol).to_string());
            }
            if self.is('"') {
                self.i += 1;
            }
            return Ok(true);
        }
        Ok(false)
    }

    fn regex(&mut self) -> bool {
        if !self.is('/') {
            return false;
        }
        let start = self.i;
        self.i += 1;
        while self.i < self.s.len() && !(self.is('/') && self.at(self.i - 1) != Some('\\')) {
            self.i += 1;
        }
        self.i = (self.i + 1).min(self.s.len());
        let text: String = self.s[start..self.i].iter().collect();
        self.out
            .push_str(&serde_json::Value::String(text).to_string());
        true
    }
}
