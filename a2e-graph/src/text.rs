//! Text from documents, made safe for each output format.
//!
//! Every id, caption and label comes from a document, so from an agent, a
//! model or a person: it is shown as text, never read as markup. Two steps:
//!
//! 1. [`visible`]: control characters (a newline in an id, a tab) are shown as
//!    their escapes (`\n`, `\t`, `\u{1b}`), so that a value stays on its line
//!    and cannot start a statement of the output language;
//! 2. each format's escape: [`xml`] for SVG text and attributes, [`dot`] for
//!    DOT's quoted strings, [`mermaid`] for Mermaid's quoted labels (entity
//!    codes, which Mermaid turns back into the characters as text).

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with control characters written as escapes.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` (made [`visible`]) for XML character data and quoted attributes.
pub fn xml(text: &str) -> String {
    let text = visible(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` (made [`visible`]) for the inside of a DOT `"…"` string: `\` and
/// `"` escaped, so that the string ends where we end it and a backslash
/// sequence (`\n`, `\N`, `\G`) is shown as written, not interpreted.
pub fn dot(text: &str) -> String {
    let text = visible(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// `text` (made [`visible`]) for the inside of a Mermaid `"…"` label: the
/// characters that could end the label (`"`, `|`), start an entity code
/// (`#`), a Markdown string (`` ` ``) or HTML (`<`, `>`, `&`) are written as
/// entity codes (`#60;` for `<`), which Mermaid shows as the characters
/// themselves, as text.
pub fn mermaid(text: &str) -> String {
    let text = visible(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' | '#' | '&' | '<' | '>' | '|' | '`' => {
                let _ = write!(out, "#{};", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Reads back what [`mermaid`] wrote: the entity codes as characters.
#[cfg(test)]
pub fn unmermaid(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('#') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let end = tail.find(';').unwrap();
        let code: u32 = tail[..end].parse().unwrap();
        out.push(char::from_u32(code).unwrap());
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str =
        "<img src=x onerror=alert(1)>\"quoted\" 'single' a&b\nnext\tline\\n #35; ]; end";

    #[test]
    fn control_characters_are_shown_as_escapes() {
        assert_eq!(visible("a\nb\tc\u{1b}"), "a\\nb\\tc\\u{1b}");
        assert!(matches!(visible("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn xml_text_has_no_markup_left() {
        let out = xml(HOSTILE);
        assert!(!out.contains(['<', '>', '"', '\'', '\n', '\t']), "{out}");
        assert!(out.starts_with("&lt;img src=x onerror=alert(1)&gt;&quot;quoted&quot;"));
    }

    #[test]
    fn dot_strings_end_only_where_we_end_them() {
        let out = dot(HOSTILE);
        // Every quote is escaped: no unescaped `"` remains.
        let unescaped = out
            .char_indices()
            .filter(|&(i, c)| c == '"' && !out[..i].ends_with('\\'))
            .count();
        assert_eq!(unescaped, 0, "{out}");
        assert!(!out.contains(['\n', '\t']));
        assert!(
            out.contains("\\\\n #35;"),
            "a backslash stays a backslash: {out}"
        );
    }

    #[test]
    fn mermaid_labels_read_back_as_the_text() {
        let out = mermaid(HOSTILE);
        assert!(!out.contains(['<', '>', '"', '\n', '|', '`', '&']), "{out}");
        assert_eq!(unmermaid(&out), visible(HOSTILE));
    }
}
