//! `when` conditions (and `success_when`, and router cases).
//!
//! - absent → true; a boolean as is; a number → non-zero;
//! - a string: if it has a top-level `==` or `!=` (outside `${…}` and
//!   quotes), each side is unquoted, expanded and trimmed on its own, then
//!   the two are compared as strings. A side that expands to nothing still
//!   compares: `'' == 'slow'` is false. The operator is found before
//!   expansion, so an inserted value can never change the comparison.
//! - otherwise the expanded, trimmed text: `true`/`false` (any case), then a
//!   number (true when non-zero), then true when non-empty.

use serde_json::Value;

use crate::doc::When;
use crate::error::StepError;
use crate::template::Expander;

/// Evaluates an optional `when`.
pub fn holds(when: Option<&When>, ex: &mut Expander<'_>) -> Result<bool, StepError> {
    match when {
        None => Ok(true),
        Some(When::Bool(b)) => Ok(*b),
        Some(When::Number(n)) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        Some(When::Text(s)) => holds_str(s, ex),
    }
}

/// Evaluates a condition given as a JSON value (`params.success_when`).
pub fn holds_value(when: &Value, ex: &mut Expander<'_>) -> Result<bool, StepError> {
    match when {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        Value::String(s) => holds_str(s, ex),
        Value::Null => Ok(true),
        _ => Ok(false),
    }
}

/// Evaluates a string condition.
pub fn holds_str(expr: &str, ex: &mut Expander<'_>) -> Result<bool, StepError> {
    if let Some((left, op, right)) = split_comparison(expr) {
        let a = side(left, ex)?;
        let b = side(right, ex)?;
        return Ok(match op {
            Op::Eq => a == b,
            Op::Ne => a != b,
        });
    }
    let text = ex.expand(expr)?;
    Ok(truthy(text.trim()))
}

/// Whether a router case matches the central value.
pub fn case_matches(
    when: Option<&When>,
    central: &str,
    ex: &mut Expander<'_>,
) -> Result<bool, StepError> {
    match when {
        None => Ok(true),
        Some(When::Bool(b)) => Ok(*b),
        Some(When::Number(n)) => Ok(central
            .trim()
            .parse::<f64>()
            .ok()
            .zip(n.as_f64())
            .is_some_and(|(a, b)| a == b)),
        Some(When::Text(s)) => {
            if split_comparison(s).is_some() {
                holds_str(s, ex)
            } else {
                Ok(side(s, ex)? == central.trim())
            }
        }
    }
}

fn truthy(text: &str) -> bool {
    if text.eq_ignore_ascii_case("true") {
        return true;
    }
    if text.eq_ignore_ascii_case("false") {
        return false;
    }
    if let Ok(n) = text.parse::<f64>() {
        return n != 0.0;
    }
    !text.is_empty()
}

#[derive(Clone, Copy)]
enum Op {
    Eq,
    Ne,
}

/// One side of a comparison: trimmed, one pair of matching quotes removed,
/// expanded, trimmed again.
fn side(raw: &str, ex: &mut Expander<'_>) -> Result<String, StepError> {
    let t = raw.trim();
    let inner = unquote(t).unwrap_or(t);
    Ok(ex.expand(inner)?.trim().to_owned())
}

fn unquote(t: &str) -> Option<&str> {
    let first = t.chars().next()?;
    if (first == '\'' || first == '"') && t.len() >= 2 && t.ends_with(first) {
        Some(&t[1..t.len() - 1])
    } else {
        None
    }
}

/// Splits at the first `==`/`!=` outside `${…}` and closed quotes.
fn split_comparison(expr: &str) -> Option<(&str, Op, &str)> {
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'$' if bytes.get(i + 1) == Some(&b'{') => match expr[i..].find('}') {
                Some(end) => i += end + 1,
                None => return None,
            },
            q @ (b'\'' | b'"') => match expr[i + 1..].find(q as char) {
                Some(end) => i += end + 2,
                None => i += 1,
            },
            b'=' | b'!' if bytes.get(i + 1) == Some(&b'=') => {
                let op = if byte == b'=' { Op::Eq } else { Op::Ne };
                return Some((&expr[..i], op, &expr[i + 2..]));
            }
            _ => i += 1,
        }
    }
    None
}
