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

/// Containers may nest this deep: as deep as `serde_json`, which reads
/// every repair, parses (it refuses the 128th level).
pub const MAX_DEPTH: usize = 127;

pub(super) fn repair(text: &str) -> Result<String, RepairError> {
    let chars: Vec<char> = text.chars().collect();
    let mut p = Parser {
        s: &chars,
        i: 0,
        out: String::with_capacity(text.len() + text.len() / 8 + 16),
        depth: 0,
        deepest: 0,
    };
    p.document()?;
    Ok(p.out)
}

pub(super) struct Parser<'a> {
    pub(super) s: &'a [char],
    pub(super) i: usize,
    pub(super) out: String,
    depth: usize,
    /// The deepest level entered so far.
    deepest: usize,
}

use super::chars::*;

impl Parser<'_> {
    pub(super) fn at(&self, i: usize) -> Option<char> {
        self.s.get(i).copied()
    }

    pub(super) fn cur(&self) -> Option<char> {
        self.at(self.i)
    }

    pub(super) fn is(&self, c: char) -> bool {
        self.cur() == Some(c)
    }

    pub(super) fn fail<T>(&self, message: impl Into<String>) -> Result<T, RepairError> {
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
        // The list around the values is one level more.
        if self.deepest >= MAX_DEPTH {
            return self.fail(format!("nesting deeper than {MAX_DEPTH}"));
        }
        self.out = format!("[\n{}\n]", self.out);
        Ok(())
    }

    fn markdown_fence(&mut self, blocks: &[&str]) -> bool {
        let save = self.i;
        let save_out = self.out.len();
        self.whitespace(true);
        for block in blocks {
            let n = block.chars().count();
            if self
                .s
                .get(self.i..self.i + n)
                .is_some_and(|w| w.iter().copied().eq(block.chars()))
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

    pub(super) fn value(&mut self) -> Result<bool, RepairError> {
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

    pub(super) fn whitespace_and_comments(&mut self, skip_newline: bool) -> bool {
        let start = self.i;
        self.whitespace(skip_newline);
        while self.comment() {
            self.whitespace(skip_newline);
        }
        self.i > start
    }

    pub(super) fn whitespace(&mut self, skip_newline: bool) -> bool {
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

    pub(super) fn character(&mut self, c: char) -> bool {
        if self.is(c) {
            self.out.push(c);
            self.i += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn skip(&mut self, c: char) -> bool {
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

    /// One level deeper: an object, an array or a function call's argument.
    pub(super) fn enter(&mut self) -> Result<(), RepairError> {
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
        if self.depth > MAX_DEPTH {
            return self.fail(format!("nesting deeper than {MAX_DEPTH}"));
        }
        Ok(())
    }

    /// Back out of a level [`Self::enter`] opened.
    pub(super) fn leave(&mut self) {
        self.depth -= 1;
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
        self.leave();
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
        self.leave();
        Ok(true)
    }

    fn number(&mut self) -> bool {
        let start = self.i;
        let digits = |p: &mut Self| {
            while p.cur().is_some_and(|c| c.is_ascii_digit()) {
                p.i += 1;
            }
        };
        let at_end = |p: &Self| p.cur().is_none_or(|c| is_delimiter(c) || is_whitespace(c));
        // A number cut off after `-`, `.` or the exponent: complete it with
        // a zero, unless it has a leading zero (then it is quoted as is).
        let finish_with_zero = |p: &mut Self| {
            let text: String = p.s.get(start..p.i).unwrap_or_default().iter().collect();
            if has_leading_zero(&text) {
                push_number(&mut p.out, &text);
            } else {
                push_number(&mut p.out, &format!("{text}0"));
            }
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
        let text: String = self
            .s
            .get(start..self.i)
            .unwrap_or_default()
            .iter()
            .collect();
        push_number(&mut self.out, &text);
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
            if self
                .s
                .get(self.i..self.i + n)
                .is_some_and(|w| w.iter().copied().eq(name.chars()))
            {
                self.out.push_str(value);
                self.i += n;
                return true;
            }
        }
        false
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
        let text: String = self
            .s
            .get(start..self.i)
            .unwrap_or_default()
            .iter()
            .collect();
        self.out
            .push_str(&serde_json::Value::String(text).to_string());
        true
    }
}

/// `00`, `-01.5`: JSON has no such number; the repair quotes it.
fn has_leading_zero(number: &str) -> bool {
    let unsigned = number.strip_prefix('-').unwrap_or(number).as_bytes();
    matches!(unsigned, [b'0', next, ..] if next.is_ascii_digit())
}

/// Writes a number the scan accepted as JSON: one with a leading zero
/// quoted, `.5` as `0.5`, the rest as it is.
fn push_number(out: &mut String, text: &str) {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    if has_leading_zero(text) {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else if let Some(frac) = unsigned.strip_prefix('.') {
        if text.starts_with('-') {
            out.push('-');
        }
        out.push_str("0.");
        out.push_str(frac);
    } else {
        out.push_str(text);
    }
}
