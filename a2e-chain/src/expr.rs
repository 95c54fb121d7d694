//! Limits on JMESPath expression text, checked before the parser sees it.
//!
//! The `jmespath` parser and interpreter recurse once per level of nesting,
//! and each level costs a large stack frame (kilobytes in a debug build), so
//! an expression of 200,000 `!` or 100,000 nested parentheses would overflow
//! the stack and abort the whole process. [`check_expression`] is a single
//! linear scan that refuses such text first: at most
//! [`MAX_EXPRESSION_LEN`] bytes and a nesting depth of at most
//! [`MAX_EXPRESSION_DEPTH`].
//!
//! The depth is a conservative bound on the depth of the parsed expression:
//! every open parenthesis, bracket or brace, every unary `!` or `&`, and every
//! operator that nests the expression (`.`, `|`, `||`, `&&`, comparisons,
//! projections) counts at least one level until a `,` or `:` starts the next
//! element of a list, hash or argument list; brackets and `*` count two (a
//! projection is two nodes). Nesting inside a `` `literal` `` counts too.
//! `a.b[0].c` is 5 deep; an expression an honest chain writes is rarely
//! above 15.
//!
//! ```
//! use a2e_chain::expr::{check_expression, ExprLimitError, MAX_EXPRESSION_DEPTH};
//!
//! assert!(check_expression("sort_by(read.output.items[?size > `3`], &size)[0].name").is_ok());
//! let deep = "!".repeat(200_000) + "a";
//! assert!(matches!(check_expression(&deep), Err(ExprLimitError::TooLong { .. })));
//! let nested = "(".repeat(100) + "a" + &")".repeat(100);
//! assert!(matches!(
//!     check_expression(&nested),
//!     Err(ExprLimitError::TooDeep { limit: MAX_EXPRESSION_DEPTH, .. })
//! ));
//! ```

/// The longest JMESPath expression accepted, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 4096;

/// The deepest nesting accepted in a JMESPath expression (see the module
/// docs for how it is counted).
pub const MAX_EXPRESSION_DEPTH: usize = 64;

/// Why an expression's text is refused before it is parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprLimitError {
    /// Longer than [`MAX_EXPRESSION_LEN`].
    #[error("JMESPath expression is {len} bytes long; the limit is {limit}")]
    TooLong {
        /// The expression's length in bytes.
        len: usize,
        /// The limit, [`MAX_EXPRESSION_LEN`].
        limit: usize,
    },
    /// Nested deeper than [`MAX_EXPRESSION_DEPTH`].
    #[error("JMESPath expression nests deeper than {limit} levels (at byte {offset})")]
    TooDeep {
        /// Byte offset where the limit was passed.
        offset: usize,
        /// The limit, [`MAX_EXPRESSION_DEPTH`].
        limit: usize,
    },
}

/// Checks `text` against [`MAX_EXPRESSION_LEN`] and
/// [`MAX_EXPRESSION_DEPTH`]; call it before `jmespath::parse` or
/// `jmespath::compile` on any expression that comes from outside. Linear in
/// the length, no allocation beyond a small stack of open groups.
pub fn check_expression(text: &str) -> Result<(), ExprLimitError> {
    if text.len() > MAX_EXPRESSION_LEN {
        return Err(ExprLimitError::TooLong {
            len: text.len(),
            limit: MAX_EXPRESSION_LEN,
        });
    }
    Scan::default().run(text.as_bytes())
}

/// The scan's state: the open groups and the weight of the current element.
#[derive(Default)]
struct Scan {
    /// For each open group, the depth it opened at and the weight of the
    /// element it interrupted.
    open: Vec<(usize, usize)>,
    /// Depth at which the current group's elements start.
    base: usize,
    /// Levels the current element has added so far.
    chain: usize,
}

impl Scan {
    fn run(mut self, b: &[u8]) -> Result<(), ExprLimitError> {
        let mut i = 0;
        while let Some(&c) = b.get(i) {
            let next = b.get(i + 1).copied();
            match c {
                b'"' | b'\'' => i = skip_quoted(b, i, c),
                b'`' => {
                    let (end, depth) = literal(b, i);
                    self.check(i, depth)?;
                    i = end;
                }
                b'(' | b'{' => {
                    self.push(i, 1)?;
                    i += 1;
                }
                b'[' => {
                    // A projection, index, slice, filter or list: two levels
                    // for the node it makes, one for the group it opens.
                    if next == Some(b']') {
                        self.add(i, 2)?;
                        i += 2;
                    } else {
                        self.push(i, 2)?;
                        i += 1;
                    }
                }
                b')' | b'}' | b']' => {
                    self.pop();
                    i += 1;
                }
                b',' | b':' => {
                    self.chain = 0;
                    i += 1;
                }
                b'*' => {
                    self.add(i, 2)?;
                    i += 1;
                }
                b'|' | b'&' => {
                    i += if next == Some(c) { 2 } else { 1 };
                    self.add(i, 1)?;
                }
                b'.' | b'!' | b'<' | b'>' | b'=' => {
                    i += if next == Some(b'=') { 2 } else { 1 };
                    self.add(i, 1)?;
                }
                _ => i += 1,
            }
        }
        Ok(())
    }

    fn depth(&self) -> usize {
        self.base.saturating_add(self.chain)
    }

    fn check(&self, offset: usize, extra: usize) -> Result<(), ExprLimitError> {
        if self.depth().saturating_add(extra) > MAX_EXPRESSION_DEPTH {
            return Err(ExprLimitError::TooDeep {
                offset,
                limit: MAX_EXPRESSION_DEPTH,
            });
        }
        Ok(())
    }

    fn add(&mut self, offset: usize, levels: usize) -> Result<(), ExprLimitError> {
        self.chain = self.chain.saturating_add(levels);
        self.check(offset, 0)
    }

    fn push(&mut self, offset: usize, levels: usize) -> Result<(), ExprLimitError> {
        self.add(offset, levels)?;
        self.open.push((self.base, self.chain));
        self.base = self.depth().saturating_add(1);
        self.chain = 0;
        self.check(offset, 0)
    }

    fn pop(&mut self) {
        // An unbalanced close is the parser's to report.
        if let Some((base, chain)) = self.open.pop() {
            self.base = base;
            self.chain = chain;
        }
    }
}

/// The index just past a `"…"` or `'…'` that starts at `start` (or the end).
fn skip_quoted(b: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The index just past a `` `…` `` literal that starts at `start`, and the
/// deepest nesting of arrays and objects inside it.
fn literal(b: &[u8], start: usize) -> (usize, usize) {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = start + 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 2,
            b'`' => return (i + 1, deepest),
            b'"' => i = skip_quoted(b, i, b'"'),
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    (b.len(), deepest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str) -> bool {
        check_expression(text).is_ok()
    }

    #[test]
    fn honest_expressions_pass() {
        for e in [
            "read.output.text",
            "input.files[0]",
            "a.b[0].c",
            "sort_by(read.output.items[?size > `3`], &size)[0].name",
            "{name: read.output.name, size: length(read.output.items[*].size)}",
            "read.output.items[?contains(tags, 'x') && !hidden].name | [0]",
            "`{\"a\": [1, 2, {\"b\": 3}]}`",
            "\"quoted(((\".x",
            "'raw [[[ string'",
            "output == `true`",
        ] {
            assert!(depth_ok(e), "{e}");
        }
    }

    #[test]
    fn length_limit() {
        let e = "a".repeat(MAX_EXPRESSION_LEN);
        assert!(depth_ok(&e));
        let e = "a".repeat(MAX_EXPRESSION_LEN + 1);
        assert_eq!(
            check_expression(&e),
            Err(ExprLimitError::TooLong {
                len: MAX_EXPRESSION_LEN + 1,
                limit: MAX_EXPRESSION_LEN
            })
        );
    }

    #[test]
    fn depth_limits() {
        let n = MAX_EXPRESSION_DEPTH;
        // At the limit passes, one more does not.
        assert!(depth_ok(&format!("{}a", "!".repeat(n))));
        assert!(!depth_ok(&format!("{}a", "!".repeat(n + 1))));
        assert!(!depth_ok(&format!(
            "{}a{}",
            "(".repeat(n + 1),
            ")".repeat(n + 1)
        )));
        assert!(!depth_ok(&format!("{}a{}", "[".repeat(n), "]".repeat(n))));
        assert!(!depth_ok(&format!("{}a{}", "{a:".repeat(n), "}".repeat(n))));
        assert!(!depth_ok(&format!("a{}", ".a".repeat(n + 1))));
        assert!(!depth_ok(&format!("a{}", "|a".repeat(n + 1))));
        assert!(!depth_ok(&format!("a{}", "[]".repeat(n))));
        assert!(!depth_ok(&format!("a{}", "[*]".repeat(n))));
        assert!(!depth_ok(&format!("a{}", "[?a]".repeat(n))));
        assert!(!depth_ok(&format!("a{}", " || a".repeat(n + 1))));
        assert!(!depth_ok(&format!(
            "`{}1{}`",
            "[".repeat(n + 1),
            "]".repeat(n + 1)
        )));
        // Elements of a list reset the chain; closing a group restores it.
        let wide = format!("[{}]", vec!["a.b.c.d"; 200].join(", "));
        assert!(depth_ok(&wide));
        let closed = "(a.b)".repeat(50);
        assert!(depth_ok(&closed), "siblings do not nest");
    }

    #[test]
    fn hostile_text_never_panics() {
        for e in [
            "\"unterminated",
            "'unterminated",
            "`unterminated [[[",
            "\\",
            "]]]]",
            ")))((((",
            "`\\",
            "\"\\",
        ] {
            let _ = check_expression(e);
        }
    }
}
