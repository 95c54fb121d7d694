//! The `field` path grammar of input references (Layer 2 §3) and its evaluation.
//!
//! ```text
//! path    = "data" segment*
//! segment = "." member | "[" index "]"
//! member  = 1*( letter | digit | "_" | "-" )
//! index   = "0" | nonzero-digit *digit
//! ```
//!
//! A path is evaluated against the referenced task's whole output `{type, data}`, so every
//! path starts at `data`. Wildcards, slices, filters, unions, recursive descent, quoted
//! members, negative indexes and a leading `$` are rejected with an error naming the offset.

use std::fmt;

use serde_json::Value;

use crate::Payload;

/// One step of a [`FieldPath`] after the `data` root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// `.name`: object member access.
    Member(String),
    /// `[n]`: array index access.
    Index(usize),
}

/// A parsed `field` path, e.g. `data.items[0].name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    segments: Vec<Segment>,
}

/// Why a path is outside the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathErrorKind {
    /// The path is empty.
    Empty,
    /// The path starts with `$`.
    DollarRoot,
    /// The path does not start with the `data` member.
    BadRoot {
        /// The first member found instead.
        found: String,
    },
    /// `*`: wildcards are out of scope.
    Wildcard,
    /// `[a:b]`: slices are out of scope.
    Slice,
    /// `[?(…)]`: filters are out of scope.
    Filter,
    /// `[a,b]`: unions are out of scope.
    Union,
    /// `..`: recursive descent is out of scope.
    RecursiveDescent,
    /// `['name']`: quoted members are out of scope; use `.name`.
    QuotedMember,
    /// `[-1]`: negative indexes are out of scope.
    NegativeIndex,
    /// `[01]`: an index with a leading zero.
    LeadingZero,
    /// An index too large for this machine.
    IndexTooLarge,
    /// `.` followed by no member name.
    EmptyMember,
    /// `[]` with no index.
    EmptyIndex,
    /// `[` without its `]`.
    UnclosedBracket,
    /// A character that the grammar does not allow here.
    Unexpected {
        /// The character found.
        found: char,
        /// What the grammar allows here.
        expected: &'static str,
    },
}

impl fmt::Display for PathErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const OUT: &str = "wildcards, slices and filters are outside the path grammar";
        match self {
            Self::Empty => f.write_str("empty path (omit `field` to pass the whole output)"),
            Self::DollarRoot => f.write_str("paths start at `data`, without a leading `$`"),
            Self::BadRoot { found } => write!(
                f,
                "paths start at `data` (the payload of the referenced `{{type, data}}` output), found `{found}`"
            ),
            Self::Wildcard => write!(f, "wildcard `*` is not supported: {OUT}"),
            Self::Slice => write!(f, "slice `[a:b]` is not supported: {OUT}"),
            Self::Filter => write!(f, "filter `[?…]` is not supported: {OUT}"),
            Self::Union => f.write_str("union `[a,b]` is not supported: one index per bracket"),
            Self::RecursiveDescent => f.write_str("recursive descent `..` is not supported"),
            Self::QuotedMember => {
                f.write_str("quoted member `['name']` is not supported: use `.name`")
            }
            Self::NegativeIndex => f.write_str("negative index is not supported"),
            Self::LeadingZero => f.write_str("index with a leading zero"),
            Self::IndexTooLarge => f.write_str("index too large"),
            Self::EmptyMember => f.write_str("`.` must be followed by a member name"),
            Self::EmptyIndex => f.write_str("`[]` needs an index"),
            Self::UnclosedBracket => f.write_str("`[` without its closing `]`"),
            Self::Unexpected { found, expected } => {
                write!(f, "unexpected `{found}`, expected {expected}")
            }
        }
    }
}

/// A path outside the grammar: the path, the byte offset of the problem, and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid path `{path}` at offset {offset}: {kind}")]
pub struct PathError {
    /// The path as written.
    pub path: String,
    /// Byte offset of the offending character.
    pub offset: usize,
    /// What is wrong there.
    pub kind: PathErrorKind,
}

/// Why a valid path found nothing in an actual output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalErrorKind {
    /// The object has no such member.
    MissingMember(String),
    /// The index is past the end of the array.
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The array's length.
        len: usize,
    },
    /// A member was asked of something that is not an object.
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// An index was asked of something that is not an array.
    NotAnArray {
        /// The JSON type found.
        found: &'static str,
    },
}

impl fmt::Display for EvalErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingMember(m) => write!(f, "no member `{m}`"),
            Self::IndexOutOfRange { index, len } => {
                write!(f, "index {index} out of range (array of {len})")
            }
            Self::NotAnObject { found } => write!(f, "expected an object, found {found}"),
            Self::NotAnArray { found } => write!(f, "expected an array, found {found}"),
        }
    }
}

/// A path that does not match the output it is evaluated against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{at}`: {kind}")]
pub struct EvalError {
    /// The path prefix up to and including the failing step, e.g. `data.chunks[2]`.
    pub at: String,
    /// What is wrong there.
    pub kind: EvalErrorKind,
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_member_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

impl FieldPath {
    /// Parses a path, rejecting anything outside the grammar.
    pub fn parse(path: &str) -> Result<Self, PathError> {
        Parser { path, pos: 0 }.parse()
    }

    /// The path `data`: the whole payload.
    pub fn data() -> Self {
        Self {
            segments: Vec::new(),
        }
    }

    /// The steps after the `data` root.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Whether this path is just `data` (the whole payload, no sub-selection).
    pub fn is_whole_data(&self) -> bool {
        self.segments.is_empty()
    }

    /// Evaluates the path against a task's whole output `{type, data}`.
    pub fn evaluate<'a>(&self, output: &'a Payload) -> Result<&'a Value, EvalError> {
        let mut current = &output.data;
        for (i, segment) in self.segments.iter().enumerate() {
            let found = match (segment, current) {
                (Segment::Member(name), Value::Object(map)) => map
                    .get(name)
                    .ok_or_else(|| EvalErrorKind::MissingMember(name.clone())),
                (Segment::Member(_), other) => Err(EvalErrorKind::NotAnObject {
                    found: json_type(other),
                }),
                (Segment::Index(index), Value::Array(items)) => {
                    items.get(*index).ok_or(EvalErrorKind::IndexOutOfRange {
                        index: *index,
                        len: items.len(),
                    })
                }
                (Segment::Index(_), other) => Err(EvalErrorKind::NotAnArray {
                    found: json_type(other),
                }),
            };
            current = found.map_err(|kind| EvalError {
                at: self.prefix(i + 1),
                kind,
            })?;
        }
        Ok(current)
    }

    /// The path up to its `len`-th segment, as written (`data.chunks[5]`).
    fn prefix(&self, len: usize) -> String {
        let prefix = Self {
            segments: self.segments.iter().take(len).cloned().collect(),
        };
        prefix.to_string()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("data")?;
        for segment in &self.segments {
            match segment {
                Segment::Member(m) => write!(f, ".{m}")?,
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldPath {
    type Err = PathError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

struct Parser<'a> {
    path: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, offset: usize, kind: PathErrorKind) -> PathError {
        PathError {
            path: self.path.to_owned(),
            offset,
            kind,
        }
    }

    fn peek(&self) -> Option<char> {
        self.path
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn member(&mut self) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(is_member_char) {
            self.bump();
        }
        self.path.get(start..self.pos).unwrap_or_default()
    }

    fn parse(mut self) -> Result<FieldPath, PathError> {
        match self.peek() {
            None => return Err(self.err(0, PathErrorKind::Empty)),
            Some('$') => return Err(self.err(0, PathErrorKind::DollarRoot)),
            Some(_) => {}
        }
        let root = self.member();
        if root != "data" {
            if root.is_empty() {
                let found = self.peek().unwrap_or(' ');
                let kind = if found == '*' {
                    PathErrorKind::Wildcard
                } else {
                    PathErrorKind::Unexpected {
                        found,
                        expected: "`data`",
                    }
                };
                return Err(self.err(0, kind));
            }
            let found = root.to_owned();
            return Err(self.err(0, PathErrorKind::BadRoot { found }));
        }
        let mut segments = Vec::new();
        while let Some(c) = self.peek() {
            let at = self.pos;
            match c {
                '.' => {
                    self.bump();
                    segments.push(self.dotted(at)?);
                }
                '[' => {
                    self.bump();
                    segments.push(self.bracketed(at)?);
                }
                '*' => return Err(self.err(at, PathErrorKind::Wildcard)),
                found => {
                    return Err(self.err(
                        at,
                        PathErrorKind::Unexpected {
                            found,
                            expected: "`.`, `[` or the end of the path",
                        },
                    ));
                }
            }
        }
        Ok(FieldPath { segments })
    }

    /// After a `.` at `dot`.
    fn dotted(&mut self, dot: usize) -> Result<Segment, PathError> {
        let at = self.pos;
        match self.peek() {
            None => return Err(self.err(dot, PathErrorKind::EmptyMember)),
            Some('.') => return Err(self.err(dot, PathErrorKind::RecursiveDescent)),
            Some('*') => return Err(self.err(at, PathErrorKind::Wildcard)),
            Some(c) if !is_member_char(c) => {
                return Err(self.err(
                    at,
                    PathErrorKind::Unexpected {
                        found: c,
                        expected: "a member name (letters, digits, `_`, `-`)",
                    },
                ));
            }
            Some(_) => {}
        }
        Ok(Segment::Member(self.member().to_owned()))
    }

    /// After a `[` at `open`.
    fn bracketed(&mut self, open: usize) -> Result<Segment, PathError> {
        let at = self.pos;
        match self.peek() {
            None => return Err(self.err(open, PathErrorKind::UnclosedBracket)),
            Some('*') => return Err(self.err(at, PathErrorKind::Wildcard)),
            Some('?') => return Err(self.err(at, PathErrorKind::Filter)),
            Some(':') => return Err(self.err(at, PathErrorKind::Slice)),
            Some('-') => return Err(self.err(at, PathErrorKind::NegativeIndex)),
            Some('\'' | '"') => return Err(self.err(at, PathErrorKind::QuotedMember)),
            Some(']') => return Err(self.err(open, PathErrorKind::EmptyIndex)),
            Some(c) if !c.is_ascii_digit() => {
                return Err(self.err(
                    at,
                    PathErrorKind::Unexpected {
                        found: c,
                        expected: "an array index",
                    },
                ));
            }
            Some(_) => {}
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        let digits = self.path.get(at..self.pos).unwrap_or_default();
        let after = self.pos;
        match self.bump() {
            Some(']') => {}
            Some(':') => return Err(self.err(after, PathErrorKind::Slice)),
            Some(',') => return Err(self.err(after, PathErrorKind::Union)),
            None => return Err(self.err(open, PathErrorKind::UnclosedBracket)),
            Some(found) => {
                return Err(self.err(
                    after,
                    PathErrorKind::Unexpected {
                        found,
                        expected: "`]`",
                    },
                ));
            }
        }
        if digits.len() > 1 && digits.starts_with('0') {
            return Err(self.err(at, PathErrorKind::LeadingZero));
        }
        digits
            .parse::<usize>()
            .map(Segment::Index)
            .map_err(|_| self.err(at, PathErrorKind::IndexTooLarge))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kind(path: &str) -> (usize, PathErrorKind) {
        let e = FieldPath::parse(path).unwrap_err();
        (e.offset, e.kind)
    }

    #[test]
    fn parses_the_spec_forms() {
        for (text, segments) in [
            ("data", vec![]),
            ("data.foo", vec![Segment::Member("foo".into())]),
            (
                "data.foo.bar",
                vec![Segment::Member("foo".into()), Segment::Member("bar".into())],
            ),
            (
                "data.items[0]",
                vec![Segment::Member("items".into()), Segment::Index(0)],
            ),
            (
                "data.items[0].name",
                vec![
                    Segment::Member("items".into()),
                    Segment::Index(0),
                    Segment::Member("name".into()),
                ],
            ),
            ("data[12][3]", vec![Segment::Index(12), Segment::Index(3)]),
            ("data.a-b_c9", vec![Segment::Member("a-b_c9".into())]),
        ] {
            let path = FieldPath::parse(text).unwrap();
            assert_eq!(path.segments(), segments.as_slice(), "{text}");
            assert_eq!(path.to_string(), text);
        }
    }

    #[test]
    fn rejects_what_is_outside_the_grammar() {
        use PathErrorKind::*;
        assert_eq!(kind(""), (0, Empty));
        assert_eq!(kind("$.data"), (0, DollarRoot));
        assert_eq!(
            kind("output.data"),
            (
                0,
                BadRoot {
                    found: "output".into()
                }
            )
        );
        assert_eq!(
            kind("type"),
            (
                0,
                BadRoot {
                    found: "type".into()
                }
            )
        );
        assert_eq!(kind("*"), (0, Wildcard));
        assert_eq!(kind("data.items[*]"), (11, Wildcard));
        assert_eq!(kind("data.*"), (5, Wildcard));
        assert_eq!(kind("data*"), (4, Wildcard));
        assert_eq!(kind("data.items[0:2]"), (12, Slice));
        assert_eq!(kind("data.items[:2]"), (11, Slice));
        assert_eq!(kind("data.items[?(@.x)]"), (11, Filter));
        assert_eq!(kind("data.items[0,1]"), (12, Union));
        assert_eq!(kind("data..name"), (4, RecursiveDescent));
        assert_eq!(kind("data['x']"), (5, QuotedMember));
        assert_eq!(kind("data.items[-1]"), (11, NegativeIndex));
        assert_eq!(kind("data.items[01]"), (11, LeadingZero));
        assert_eq!(
            kind("data.items[99999999999999999999999]"),
            (11, IndexTooLarge)
        );
        assert_eq!(kind("data."), (4, EmptyMember));
        assert_eq!(kind("data[]"), (4, EmptyIndex));
        assert_eq!(kind("data.items[0"), (10, UnclosedBracket));
        assert_eq!(kind("data.items["), (10, UnclosedBracket));
        assert_eq!(
            kind("data.items[0]name"),
            (
                13,
                Unexpected {
                    found: 'n',
                    expected: "`.`, `[` or the end of the path"
                }
            )
        );
        assert_eq!(
            kind("data. x"),
            (
                5,
                Unexpected {
                    found: ' ',
                    expected: "a member name (letters, digits, `_`, `-`)"
                }
            )
        );
        assert_eq!(
            kind("data[x]"),
            (
                5,
                Unexpected {
                    found: 'x',
                    expected: "an array index"
                }
            )
        );
        assert_eq!(
            kind("data[1x]"),
            (
                6,
                Unexpected {
                    found: 'x',
                    expected: "`]`"
                }
            )
        );
    }

    #[test]
    fn error_message_names_path_offset_and_reason() {
        let e = FieldPath::parse("data.items[*]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid path `data.items[*]` at offset 11: wildcard `*` is not supported: \
             wildcards, slices and filters are outside the path grammar"
        );
    }

    #[test]
    fn evaluates_against_the_whole_output() {
        let out = Payload::json(
            json!({"chunks": ["a", "b"], "meta": {"n": 2}, "items": [{"name": "x"}]}),
        );
        let eval = |p: &str| FieldPath::parse(p).unwrap().evaluate(&out).cloned();
        assert_eq!(eval("data").unwrap(), out.data);
        assert_eq!(eval("data.chunks[1]").unwrap(), json!("b"));
        assert_eq!(eval("data.meta.n").unwrap(), json!(2));
        assert_eq!(eval("data.items[0].name").unwrap(), json!("x"));
        let e = eval("data.chunks[2]").unwrap_err();
        assert_eq!(e.at, "data.chunks[2]");
        assert_eq!(e.kind, EvalErrorKind::IndexOutOfRange { index: 2, len: 2 });
        assert_eq!(
            e.to_string(),
            "`data.chunks[2]`: index 2 out of range (array of 2)"
        );
        assert_eq!(
            eval("data.missing").unwrap_err().kind,
            EvalErrorKind::MissingMember("missing".into())
        );
        assert_eq!(
            eval("data.meta[0]").unwrap_err().kind,
            EvalErrorKind::NotAnArray { found: "an object" }
        );
        assert_eq!(
            eval("data.chunks.x").unwrap_err().kind,
            EvalErrorKind::NotAnObject { found: "an array" }
        );
    }
}
