//! Strings: quoted (with their many repairs), concatenated, unquoted.

use super::chars::*;
use super::parser::{Parser, RepairError};

impl Parser<'_> {
    pub(super) fn prev_non_whitespace(&self, from: usize) -> Option<usize> {
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
    pub(super) fn string(
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
            // `>=`: an escape can step over the stop index (`"a\,"b`).
            if stop_at.is_some_and(|stop| self.i >= stop) {
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
                    while let Some(c) = self.cur().filter(|c| is_url_char(*c)) {
                        s.push(c);
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
                            s.extend(self.s.get(self.i..self.i + 6).unwrap_or_default());
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
    pub(super) fn next_quote_is_end_quote(&self, index: usize) -> bool {
        let mut next = index + 1;
        while self.at(next).is_some_and(is_whitespace) {
            next += 1;
        }
        self.at(next).is_none_or(is_delimiter)
    }

    /// `scheme://` at index `at`.
    pub(super) fn url_start_at(&self, at: usize) -> bool {
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

    pub(super) fn concatenated_string(&mut self) -> Result<bool, RepairError> {
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

    pub(super) fn unquoted_string(&mut self, is_key: bool) -> Result<bool, RepairError> {
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
                // `a(a(a(…` nests like brackets do.
                self.enter()?;
                if is_key {
                    // A key must stay a string: `{a("x"): 1}` (npm
                    // jsonrepair lets `{a({` through as `{{}:null}`).
                    self.whitespace_and_comments(true);
                    if !self.string(false, None)? {
                        return self.fail("object key expected");
                    }
                    self.whitespace_and_comments(true);
                } else if !self.value()? {
                    return self.fail("a function call without an argument");
                }
                self.leave();
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
            let symbol: String = self
                .s
                .get(start..self.i)
                .unwrap_or_default()
                .iter()
                .collect();
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
}
