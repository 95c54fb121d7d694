//! Field checks: types, lengths, ranges and sets of values, for fields at
//! the top level of a step or inside its `params`.

use serde_json::{Map, Value};

use super::{Checker, kind};
use crate::doc::StepType;
use crate::error::Rule;
use crate::limits::*;

impl Checker {
    /// Type and range checks of the fields that may sit at the top level or
    /// in `params`.
    pub(super) fn fields(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        ty: Option<StepType>,
        in_params: bool,
    ) {
        for (key, v) in obj {
            let p = format!("{path}.{key}");
            match key.as_str() {
                "agent_id" | "chain_id" => self.string(&p, v, 1, MAX_AGENT_ID_CHARS),
                "task_id" => self.string(&p, v, 1, MAX_ID_CHARS),
                "input" | "prompt" | "system_prompt" | "model" | "server" | "tool" | "url"
                | "template" | "query" | "namespace" | "content" => {
                    self.string(&p, v, 0, usize::MAX)
                }
                "method" => {
                    if let Some(m) = self.string_val(&p, v)
                        && !HTTP_METHODS.contains(&m.to_ascii_uppercase().as_str())
                    {
                        self.err(
                            &p,
                            Rule::Enum,
                            format!("method `{m}` is not one of {}", HTTP_METHODS.join(", ")),
                        );
                    }
                }
                "delay_ms" => self.integer(&p, v, 0, MAX_DELAY_MS),
                "count" => match ty {
                    Some(StepType::Retry) => self.integer(&p, v, 1, MAX_RETRY_COUNT),
                    Some(StepType::Loop) => self.integer(&p, v, 1, MAX_LOOP_COUNT),
                    _ => self.integer(&p, v, 1, u64::MAX),
                },
                "top_k" if in_params => self.integer(&p, v, 1, MAX_TOP_K),
                "fail_on_warnings" | "silent" if !v.is_boolean() => {
                    self.err(
                        &p,
                        Rule::Type,
                        format!("expected a boolean, got {}", kind(v)),
                    );
                }
                "temperature" if in_params => match v.as_f64() {
                    Some(t) if (0.0..=2.0).contains(&t) => {}
                    Some(t) => self.err(&p, Rule::Range, format!("temperature {t} is outside 0–2")),
                    None => self.err(
                        &p,
                        Rule::Type,
                        format!("expected a number, got {}", kind(v)),
                    ),
                },
                "namespaces" if in_params => match v.as_array() {
                    Some(list) => {
                        for (i, ns) in list.iter().enumerate() {
                            self.string(&format!("{p}[{i}]"), ns, 1, usize::MAX);
                        }
                    }
                    None => self.err(
                        &p,
                        Rule::Type,
                        format!("expected an array of strings, got {}", kind(v)),
                    ),
                },
                "output_format" if in_params => {
                    if let Some(f) = self.string_val(&p, v)
                        && f != "text"
                        && f != "json"
                    {
                        self.err(
                            &p,
                            Rule::Enum,
                            format!("output_format `{f}` is not `text` or `json`"),
                        );
                    }
                }
                "success_when" if in_params => self.when(v, &p),
                "headers" => {
                    if let Some(h) = v.as_object() {
                        for (name, hv) in h {
                            if !hv.is_string() {
                                self.err(
                                    &format!("{p}.{name}"),
                                    Rule::Type,
                                    format!("a header value is a string, got {}", kind(hv)),
                                );
                            }
                        }
                    } else if in_params {
                        self.err(
                            &p,
                            Rule::Type,
                            format!("expected an object, got {}", kind(v)),
                        );
                    }
                }
                "args" if in_params && !v.is_object() => {
                    self.err(
                        &p,
                        Rule::Type,
                        format!("expected an object, got {}", kind(v)),
                    );
                }
                _ => {}
            }
        }
    }

    pub(super) fn when(&mut self, value: &Value, path: &str) {
        if !(value.is_boolean() || value.is_number() || value.is_string()) {
            self.err(
                path,
                Rule::Type,
                format!(
                    "a condition is a boolean, number or string, got {}",
                    kind(value)
                ),
            );
        }
    }

    pub(super) fn string_val<'v>(&mut self, path: &str, value: &'v Value) -> Option<&'v str> {
        match value {
            Value::String(s) => Some(s),
            other => {
                self.err(
                    path,
                    Rule::Type,
                    format!("expected a string, got {}", kind(other)),
                );
                None
            }
        }
    }

    pub(super) fn string(&mut self, path: &str, value: &Value, min: usize, max: usize) {
        if let Some(s) = self.string_val(path, value) {
            self.length(path, s, min, max);
        }
    }

    pub(super) fn length(&mut self, path: &str, s: &str, min: usize, max: usize) {
        let n = s.chars().count();
        if n < min || n > max {
            let msg = if max == usize::MAX {
                format!("{n} characters, at least {min}")
            } else {
                format!("{n} characters, expected {min}–{max}")
            };
            self.err(path, Rule::Length, msg);
        }
    }

    pub(super) fn integer(&mut self, path: &str, value: &Value, min: u64, max: u64) {
        let Some(n) = value.as_number() else {
            self.err(
                path,
                Rule::Type,
                format!("expected a number, got {}", kind(value)),
            );
            return;
        };
        if let Some(u) = n.as_u64() {
            if u < min || u > max {
                let range = if max == u64::MAX {
                    format!("at least {min}")
                } else {
                    format!("{min}–{max}")
                };
                self.err(path, Rule::Range, format!("{u} is outside {range}"));
            }
            return;
        }
        match n.as_f64() {
            Some(f) if f.fract() != 0.0 => {
                self.err(path, Rule::Integer, format!("{f} is not a whole number"))
            }
            _ => self.err(path, Rule::Range, format!("{n} is outside {min}–{max}")),
        }
    }
}
