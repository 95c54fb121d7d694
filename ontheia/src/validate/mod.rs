//! Parse and validate a chain document before anything runs.
//!
//! Checks run on the raw JSON value so that every error can name its path
//! and all of them are reported at once: shape and types, the spec's limits,
//! per-type required fields (which may also sit in `params`), unique ids,
//! edges naming existing steps, acyclic edges and the longest edge path.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::doc::{Document, StepType};
use crate::error::{Rule, ValidationError, ValidationErrors};
use crate::limits::*;

mod edges;
mod fields;

/// Parses a document from JSON text and validates it.
pub fn parse(text: &str) -> Result<Document, ValidationErrors> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(one(
            "$",
            Rule::DocumentSize,
            format!(
                "document is {} bytes, more than {MAX_DOCUMENT_BYTES}",
                text.len()
            ),
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        one(
            "$",
            Rule::Syntax,
            format!("not JSON: {e} (line {}, column {})", e.line(), e.column()),
        )
    })?;
    parse_value(&value)
}

/// Validates a JSON value and turns it into a [`Document`].
pub fn parse_value(value: &Value) -> Result<Document, ValidationErrors> {
    check(value)?;
    Document::deserialize(value)
        .map_err(|e| one("$", Rule::Type, format!("does not fit the format: {e}")))
}

/// Validates an already typed document (e.g. a sub-chain a host loaded).
pub fn validate(doc: &Document) -> Result<(), ValidationErrors> {
    let value = serde_json::to_value(doc)
        .map_err(|e| one("$", Rule::Type, format!("cannot serialize: {e}")))?;
    check(&value)
}

fn check(value: &Value) -> Result<(), ValidationErrors> {
    let mut v = Checker::default();
    v.document(value);
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(v.errors))
    }
}

fn one(path: &str, rule: Rule, message: String) -> ValidationErrors {
    ValidationErrors(vec![ValidationError {
        path: path.to_owned(),
        rule,
        message,
    }])
}

const STEP_FIELDS: [&str; 26] = [
    "id",
    "type",
    "agent_id",
    "task_id",
    "chain_id",
    "input",
    "when",
    "params",
    "inputs",
    "outputs",
    "prompt",
    "system_prompt",
    "model",
    "server",
    "tool",
    "args",
    "delay_ms",
    "count",
    "fail_on_warnings",
    "cases",
    "steps",
    "default",
    "url",
    "method",
    "headers",
    "body",
];

#[derive(Default)]
struct Checker {
    errors: Vec<ValidationError>,
    /// Step id → path of its first declaration.
    ids: HashMap<String, String>,
    total_steps: usize,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Checker {
    fn err(&mut self, path: &str, rule: Rule, message: impl Into<String>) {
        self.errors.push(ValidationError {
            path: path.to_owned(),
            rule,
            message: message.into(),
        });
    }

    fn document(&mut self, value: &Value) {
        let Some(obj) = value.as_object() else {
            self.err(
                "$",
                Rule::Type,
                format!("expected an object, got {}", kind(value)),
            );
            return;
        };
        for key in obj.keys() {
            if key != "steps" && key != "edges" {
                self.err(
                    &format!("$.{key}"),
                    Rule::UnknownField,
                    "unknown top-level key",
                );
            }
        }
        match obj.get("steps") {
            None => self.err("$.steps", Rule::Required, "a chain needs `steps`"),
            Some(steps) => self.step_list(steps, "$.steps", 1, MAX_STEPS, 0),
        }
        if self.total_steps > MAX_TOTAL_STEPS {
            self.err(
                "$.steps",
                Rule::Nesting,
                format!(
                    "{} steps in all, more than {MAX_TOTAL_STEPS}",
                    self.total_steps
                ),
            );
        }
        let edges = match obj.get("edges") {
            None => Vec::new(),
            Some(Value::Array(edges)) => {
                if edges.len() > MAX_EDGES {
                    self.err(
                        "$.edges",
                        Rule::Items,
                        format!("{} edges, at most {MAX_EDGES}", edges.len()),
                    );
                }
                self.edges(edges)
            }
            Some(other) => {
                self.err(
                    "$.edges",
                    Rule::Type,
                    format!("expected an array, got {}", kind(other)),
                );
                Vec::new()
            }
        };
        self.graph(&edges);
    }

    fn step_list(&mut self, value: &Value, path: &str, min: usize, max: usize, depth: usize) {
        let Some(steps) = value.as_array() else {
            self.err(
                path,
                Rule::Type,
                format!("expected an array of steps, got {}", kind(value)),
            );
            return;
        };
        if steps.len() < min || steps.len() > max {
            self.err(
                path,
                Rule::Items,
                format!("{} steps, expected {min}–{max}", steps.len()),
            );
        }
        if depth > MAX_NESTING {
            self.err(
                path,
                Rule::Nesting,
                format!("steps nest deeper than {MAX_NESTING} levels"),
            );
            return;
        }
        for (i, step) in steps.iter().enumerate() {
            self.step(step, &format!("{path}[{i}]"), depth);
        }
    }

    fn step(&mut self, value: &Value, path: &str, depth: usize) {
        self.total_steps += 1;
        let Some(obj) = value.as_object() else {
            self.err(
                path,
                Rule::Type,
                format!("a step is an object, got {}", kind(value)),
            );
            return;
        };
        for key in obj.keys() {
            if !STEP_FIELDS.contains(&key.as_str()) {
                self.err(
                    &format!("{path}.{key}"),
                    Rule::UnknownField,
                    "not a step field",
                );
            }
        }
        // id
        match obj.get("id") {
            None => self.err(
                &format!("{path}.id"),
                Rule::Required,
                "a step needs an `id`",
            ),
            Some(Value::String(id)) => {
                let p = format!("{path}.id");
                self.length(&p, id, 1, MAX_ID_CHARS);
                if id == "input" || id == "output" {
                    self.err(
                        &p,
                        Rule::ReservedId,
                        format!("`{id}` is reserved for edges"),
                    );
                }
                if let Some(first) = self.ids.get(id) {
                    let msg = format!("id `{id}` is already used at {first}");
                    self.err(&p, Rule::DuplicateId, msg);
                } else {
                    self.ids.insert(id.clone(), p);
                }
            }
            Some(other) => self.err(
                &format!("{path}.id"),
                Rule::Type,
                format!("expected a string, got {}", kind(other)),
            ),
        }
        // type
        let ty = match obj.get("type") {
            None => {
                self.err(
                    &format!("{path}.type"),
                    Rule::Required,
                    "a step needs a `type`",
                );
                None
            }
            Some(Value::String(t)) => match StepType::from_name(t) {
                Some(ty) => Some(ty),
                None => {
                    self.err(
                        &format!("{path}.type"),
                        Rule::Enum,
                        format!("unknown step type `{t}`"),
                    );
                    None
                }
            },
            Some(other) => {
                self.err(
                    &format!("{path}.type"),
                    Rule::Type,
                    format!("expected a string, got {}", kind(other)),
                );
                None
            }
        };
        let params = match obj.get("params") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(other) => {
                self.err(
                    &format!("{path}.params"),
                    Rule::Type,
                    format!("expected an object, got {}", kind(other)),
                );
                None
            }
        };
        // Field types, top level and in params.
        self.fields(obj, path, ty, false);
        if let Some(p) = params {
            self.fields(p, &format!("{path}.params"), ty, true);
        }
        for key in ["inputs", "outputs", "args", "headers"] {
            if let Some(v) = obj.get(key)
                && !v.is_object()
            {
                self.err(
                    &format!("{path}.{key}"),
                    Rule::Type,
                    format!("expected an object, got {}", kind(v)),
                );
            }
        }
        if let Some(when) = obj.get("when") {
            self.when(when, &format!("{path}.when"));
        }
        if let Some(ty) = ty {
            self.per_type(obj, params, path, ty, depth);
        }
    }

    /// Per-type required fields and sub-steps.
    fn per_type(
        &mut self,
        obj: &Map<String, Value>,
        params: Option<&Map<String, Value>>,
        path: &str,
        ty: StepType,
        depth: usize,
    ) {
        let has = |name: &str| {
            obj.get(name).is_some_and(|v| !v.is_null())
                || params.is_some_and(|p| p.get(name).is_some_and(|v| !v.is_null()))
        };
        let require = |this: &mut Self, name: &str, why: &str| {
            if !has(name) {
                this.err(
                    &format!("{path}.{name}"),
                    Rule::Required,
                    format!("a `{ty}` step needs `{name}`{why}"),
                );
            }
        };
        match ty {
            StepType::Llm => require(self, "prompt", ""),
            StepType::Agent => require(self, "agent_id", ""),
            StepType::Tool => {
                require(self, "server", "");
                require(self, "tool", "");
            }
            StepType::MemorySearch => require(self, "namespaces", " (in `params`)"),
            StepType::MemoryWrite => {
                require(self, "namespace", " (in `params`)");
                require(self, "content", " (in `params`)");
            }
            StepType::Transform => {
                if !has("prompt") && !has("template") {
                    self.err(
                        &format!("{path}.prompt"),
                        Rule::Required,
                        "a `transform` step needs `prompt` (or `params.template`)",
                    );
                }
            }
            StepType::RestCall => {
                require(self, "url", "");
                if let Some(Value::String(u)) = obj.get("url")
                    && u.trim().is_empty()
                {
                    self.err(&format!("{path}.url"), Rule::Length, "the URL is empty");
                }
            }
            StepType::Router => {
                require(self, "cases", "");
                if !has("input") && !has("value") {
                    self.err(
                        &format!("{path}.input"),
                        Rule::Required,
                        "a `router` step needs its central value in `input` (or `params.value`)",
                    );
                }
            }
            StepType::Branch => require(self, "cases", ""),
            StepType::Parallel => require(self, "steps", ""),
            StepType::Loop => {
                require(self, "count", "");
                require(self, "steps", "");
            }
            StepType::Retry => require(self, "steps", ""),
            StepType::Delay => require(self, "delay_ms", ""),
        }
        let takes_steps = matches!(ty, StepType::Parallel | StepType::Loop | StepType::Retry);
        let takes_cases = matches!(ty, StepType::Branch | StepType::Router);
        match obj.get("steps") {
            Some(_) if !takes_steps => {
                self.err(
                    &format!("{path}.steps"),
                    Rule::NotAllowed,
                    format!("a `{ty}` step has no sub-steps"),
                );
            }
            Some(steps) => self.step_list(
                steps,
                &format!("{path}.steps"),
                1,
                MAX_NESTED_STEPS,
                depth + 1,
            ),
            None => {}
        }
        for key in ["cases", "default"] {
            if obj.contains_key(key) && !takes_cases {
                self.err(
                    &format!("{path}.{key}"),
                    Rule::NotAllowed,
                    format!("a `{ty}` step has no `{key}`"),
                );
            }
        }
        if takes_cases {
            if let Some(cases) = obj.get("cases") {
                self.cases(cases, &format!("{path}.cases"), depth);
            }
            if let Some(default) = obj.get("default") {
                self.step_list(
                    default,
                    &format!("{path}.default"),
                    0,
                    MAX_CASE_STEPS,
                    depth + 1,
                );
            }
        }
    }

    fn cases(&mut self, value: &Value, path: &str, depth: usize) {
        let Some(cases) = value.as_array() else {
            self.err(
                path,
                Rule::Type,
                format!("expected an array of cases, got {}", kind(value)),
            );
            return;
        };
        if cases.is_empty() || cases.len() > MAX_CASES {
            self.err(
                path,
                Rule::Items,
                format!("{} cases, expected 1–{MAX_CASES}", cases.len()),
            );
        }
        for (i, case) in cases.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(obj) = case.as_object() else {
                self.err(
                    &p,
                    Rule::Type,
                    format!("a case is an object, got {}", kind(case)),
                );
                continue;
            };
            for key in obj.keys() {
                if key != "when" && key != "steps" {
                    self.err(
                        &format!("{p}.{key}"),
                        Rule::UnknownField,
                        "a case has only `when` and `steps`",
                    );
                }
            }
            if let Some(when) = obj.get("when") {
                self.when(when, &format!("{p}.when"));
            }
            match obj.get("steps") {
                None => self.err(
                    &format!("{p}.steps"),
                    Rule::Required,
                    "a case needs `steps`",
                ),
                Some(steps) => {
                    self.step_list(steps, &format!("{p}.steps"), 0, MAX_CASE_STEPS, depth + 1)
                }
            }
        }
    }
}
