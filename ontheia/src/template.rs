//! `${…}` templates: one pass, bounded.
//!
//! A template is scanned once, left to right. Each `${key}` is replaced by
//! its value and the scan goes on *after* the inserted text, so a value is
//! never expanded again — whatever it holds (a user's `${steps.x.output}`, a
//! model's answer, a tool's output). Keys:
//!
//! - `steps.<id>.<path>`: the stored result of step `<id>`
//!   (`output`, `data`, `result`, `error`, `status`, `inputs`, `warnings`),
//!   then a dot path (object keys, array indexes; a string holding JSON is
//!   parsed when the path goes on into it). A step that has not run leaves
//!   the placeholder as it is; a missing path gives `""`.
//! - any other `name.path` of letters, digits, `_` and `.`: the local
//!   variables (`loop.index`, `retry.attempt`, `inputs.<key>`), then the
//!   global context (`input`, `user_id`, `current_date`, …). Unknown names
//!   stay literal.
//!
//! Values become text: strings as they are, numbers and booleans as JSON,
//! `null` as `""`, arrays and objects as pretty-printed JSON. Expansion is
//! bounded by a byte budget shared by everything one step expands, and
//! nested values by a depth bound.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::StepError;
use crate::path::get_path;
use crate::result::StepResult;

/// What templates can read.
#[derive(Debug, Clone, Copy)]
pub struct Vars<'a> {
    /// The global context (`input`, `user_id`, …) as a JSON object.
    pub globals: &'a Map<String, Value>,
    /// Local variables: `loop`, `retry`, `inputs`.
    pub locals: &'a Map<String, Value>,
    /// Stored step results by id.
    pub steps: &'a HashMap<String, StepResult>,
}

/// Expands templates within a byte budget and a depth bound.
#[derive(Debug)]
pub struct Expander<'a> {
    vars: Vars<'a>,
    budget: usize,
    limit: usize,
    max_depth: usize,
}

impl<'a> Expander<'a> {
    /// An expander that may produce at most `max_bytes` of text in all and
    /// descend at most `max_depth` levels into nested values.
    pub fn new(vars: Vars<'a>, max_bytes: usize, max_depth: usize) -> Self {
        Expander {
            vars,
            budget: max_bytes,
            limit: max_bytes,
            max_depth,
        }
    }

    /// Expands one string.
    pub fn expand(&mut self, template: &str) -> Result<String, StepError> {
        let mut out = String::with_capacity(template.len().min(self.budget));
        let mut rest = template;
        while let Some(start) = rest.find("${") {
            self.push(&mut out, &rest[..start])?;
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                self.push(&mut out, &rest[start..])?;
                return Ok(out);
            };
            let key = &after[..end];
            match self.resolve(key) {
                Some(text) => self.push(&mut out, &text)?,
                None => self.push(&mut out, &rest[start..start + 2 + end + 1])?,
            }
            rest = &after[end + 1..];
        }
        self.push(&mut out, rest)?;
        Ok(out)
    }

    /// Expands every string inside a value (arrays and objects recursively;
    /// keys stay as they are).
    pub fn expand_value(&mut self, value: &Value) -> Result<Value, StepError> {
        self.expand_at(value, 0)
    }

    fn expand_at(&mut self, value: &Value, depth: usize) -> Result<Value, StepError> {
        if depth > self.max_depth {
            return Err(StepError::TooDeep(self.max_depth));
        }
        Ok(match value {
            Value::String(s) => Value::String(self.expand(s)?),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.expand_at(v, depth + 1))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => {
                let mut out = Map::with_capacity(map.len());
                for (k, v) in map {
                    out.insert(k.clone(), self.expand_at(v, depth + 1)?);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }

    fn push(&mut self, out: &mut String, text: &str) -> Result<(), StepError> {
        if text.len() > self.budget {
            return Err(StepError::ExpansionTooLarge(self.limit));
        }
        self.budget -= text.len();
        out.push_str(text);
        Ok(())
    }

    /// The text for `key`, or `None` to leave the placeholder literal.
    fn resolve(&self, key: &str) -> Option<String> {
        if let Some(rest) = key.strip_prefix("steps.") {
            let (id, path) = rest.split_once('.')?;
            if id.is_empty() || path.is_empty() {
                return None;
            }
            let result = self.vars.steps.get(id)?;
            return Some(match result.lookup(path) {
                Some(v) => to_text(&v),
                None => String::new(),
            });
        }
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        {
            return None;
        }
        let (head, path) = match key.split_once('.') {
            Some((h, p)) => (h, Some(p)),
            None => (key, None),
        };
        let root = self
            .vars
            .locals
            .get(head)
            .or_else(|| self.vars.globals.get(head))?;
        let value = match path {
            None => Cow::Borrowed(root),
            Some(p) => get_path(root, p)?,
        };
        Some(to_text(&value))
    }
}

/// A value as template text: strings raw, `null` empty, containers as
/// pretty JSON.
pub fn to_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}
