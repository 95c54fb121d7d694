//! The namespace grammar.
//!
//! A namespace is one to [`MAX_SEGMENTS`] dot-separated segments, each one to
//! [`MAX_SEGMENT_LEN`] characters of `A-Z a-z 0-9 _ -`, at most
//! [`MAX_NAMESPACE_LEN`] bytes in all: `vector.user.42.memory`. Nothing else
//! is accepted, so a namespace cannot carry a wildcard (`*`, `%`, `?`), a
//! quote, a path (`/`, `..`), whitespace or a control character into SQL, a
//! file name or a log line.

/// Longest namespace, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 128;
/// Most segments in a namespace.
pub const MAX_SEGMENTS: usize = 16;
/// Longest segment, in bytes.
pub const MAX_SEGMENT_LEN: usize = 64;

/// Why a namespace was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// The empty string.
    #[error("namespace is empty")]
    Empty,
    /// Over [`MAX_NAMESPACE_LEN`] bytes.
    #[error("namespace is {0} bytes long (at most {MAX_NAMESPACE_LEN})")]
    TooLong(usize),
    /// Over [`MAX_SEGMENTS`] segments.
    #[error("namespace has {0} segments (at most {MAX_SEGMENTS})")]
    TooManySegments(usize),
    /// `a..b`, `.a` or `a.`.
    #[error("namespace has an empty segment (leading, trailing or doubled `.`)")]
    EmptySegment,
    /// A segment over [`MAX_SEGMENT_LEN`] bytes.
    #[error("namespace segment {0} is longer than {MAX_SEGMENT_LEN} characters")]
    SegmentTooLong(usize),
    /// A character outside the grammar.
    #[error(
        "namespace contains {0:?} (allowed: letters, digits, `_`, `-`, and `.` between segments)"
    )]
    BadChar(char),
}

/// Whether `c` may appear inside a segment.
pub(crate) fn is_segment_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `s` is a whole valid segment.
pub(crate) fn is_segment(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_SEGMENT_LEN && s.chars().all(is_segment_char)
}

/// Checks `namespace` against the grammar.
///
/// ```
/// use a2e_memory::{validate_namespace, NamespaceError};
/// assert!(validate_namespace("vector.user.42.memory").is_ok());
/// assert_eq!(validate_namespace("a..b"), Err(NamespaceError::EmptySegment));
/// assert_eq!(validate_namespace("a.*"), Err(NamespaceError::BadChar('*')));
/// ```
pub fn validate_namespace(namespace: &str) -> Result<(), NamespaceError> {
    if namespace.is_empty() {
        return Err(NamespaceError::Empty);
    }
    if let Some(c) = namespace.chars().find(|&c| !is_segment_char(c) && c != '.') {
        return Err(NamespaceError::BadChar(c));
    }
    if namespace.len() > MAX_NAMESPACE_LEN {
        return Err(NamespaceError::TooLong(namespace.len()));
    }
    let mut count = 0usize;
    for (i, segment) in namespace.split('.').enumerate() {
        count += 1;
        if segment.is_empty() {
            return Err(NamespaceError::EmptySegment);
        }
        if segment.len() > MAX_SEGMENT_LEN {
            return Err(NamespaceError::SegmentTooLong(i));
        }
    }
    if count > MAX_SEGMENTS {
        return Err(NamespaceError::TooManySegments(count));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_grammar() {
        for ok in [
            "a",
            "vector.user.550e8400-e29b-41d4-a716-446655440000.memory",
            "A_b-9.x",
        ] {
            assert_eq!(validate_namespace(ok), Ok(()), "{ok}");
        }
        let long = ["a"; MAX_SEGMENTS].join(".");
        assert_eq!(validate_namespace(&long), Ok(()));
    }

    #[test]
    fn refuses_tricks() {
        let cases: &[(&str, NamespaceError)] = &[
            ("", NamespaceError::Empty),
            ("a.", NamespaceError::EmptySegment),
            (".a", NamespaceError::EmptySegment),
            ("a..b", NamespaceError::EmptySegment),
            ("..", NamespaceError::EmptySegment),
            ("a/b", NamespaceError::BadChar('/')),
            ("../etc", NamespaceError::BadChar('/')),
            ("a%", NamespaceError::BadChar('%')),
            ("a*", NamespaceError::BadChar('*')),
            ("a b", NamespaceError::BadChar(' ')),
            ("a'b", NamespaceError::BadChar('\'')),
            ("a\u{0}", NamespaceError::BadChar('\u{0}')),
            ("ünï", NamespaceError::BadChar('ü')),
            ("${user_id}", NamespaceError::BadChar('$')),
        ];
        for (input, want) in cases {
            assert_eq!(validate_namespace(input).as_ref(), Err(want), "{input:?}");
        }
        let too_many = ["a"; MAX_SEGMENTS + 1].join(".");
        assert_eq!(
            validate_namespace(&too_many),
            Err(NamespaceError::TooManySegments(MAX_SEGMENTS + 1))
        );
        assert_eq!(
            validate_namespace(&"a".repeat(MAX_SEGMENT_LEN + 1)),
            Err(NamespaceError::SegmentTooLong(0))
        );
        assert_eq!(
            validate_namespace(&format!(
                "{}.{}.{}",
                "a".repeat(60),
                "b".repeat(60),
                "c".repeat(60)
            )),
            Err(NamespaceError::TooLong(182))
        );
    }
}
