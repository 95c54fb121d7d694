//! Pure compute tools: no file, process or network access.
//!
//! - `text_stats` counts words, lines, sentences and characters, and lists the
//!   most frequent words.
//! - `transform` evaluates a JMESPath expression over `data` (any JSON).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::args::*;
use super::split_text::sentences;
use crate::error::{HostError, HostResult};
use crate::plugin::ToolOutput;

/// `text_stats`.
pub(crate) fn text_stats(args: TextStatsArgs) -> HostResult<ToolOutput> {
    let text = args.text.as_str();
    let top = args.top.unwrap_or(5).min(100) as usize;
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut words = 0u64;
    for word in text.split_whitespace() {
        words += 1;
        let w: String = word
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '\'')
            .flat_map(char::to_lowercase)
            .collect();
        if !w.is_empty() {
            *counts.entry(w).or_default() += 1;
        }
    }
    let mut freq: Vec<(String, u64)> = counts.into_iter().collect();
    freq.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    freq.truncate(top);
    Ok(json!({
        "words": words,
        "lines": text.lines().count(),
        "sentences": sentences(text).len(),
        "chars": text.chars().count(),
        "top_words": freq.into_iter().map(|(word, count)| json!({"word": word, "count": count})).collect::<Vec<_>>(),
    })
    .into())
}

/// `transform`.
pub(crate) fn transform(args: TransformArgs) -> HostResult<ToolOutput> {
    let expression = args.expression.as_str();
    let data = args.data;
    a2e_chain::expr::check_expression(expression)
        .map_err(|e| HostError::invalid_argument("expression", e))?;
    let compiled = jmespath::compile(expression)
        .map_err(|e| HostError::schema(vec![format!("expression: {e}")]))?;
    let result = compiled
        .search(data)
        .map_err(|e| HostError::tool_failed("expression failed", e))?;
    let value = serde_json::to_value(&*result)
        .map_err(|e| HostError::tool_failed("result is not JSON", e))?;
    Ok(json!({"result": whole_numbers(value)}).into())
}

/// JMESPath arithmetic yields floats; a whole one reads better as an integer.
fn whole_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(whole_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, whole_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: serde::de::DeserializeOwned>(
        tool: fn(T) -> HostResult<ToolOutput>,
        args: Value,
    ) -> HostResult<ToolOutput> {
        tool(crate::plugin::parse_args(
            args.as_object().unwrap().clone(),
        )?)
    }

    #[test]
    fn counts_words_and_frequencies() {
        let out = run(
            text_stats,
            json!({"text": "The cat. The dog, the END!", "top": 2}),
        )
        .unwrap()
        .data;
        assert_eq!(out["words"], 6);
        assert_eq!(out["sentences"], 2);
        assert_eq!(
            out["top_words"],
            json!([{"word": "the", "count": 3}, {"word": "cat", "count": 1}])
        );
    }

    #[test]
    fn transforms_with_jmespath() {
        let out = run(
            transform,
            json!({"data": [{"n": 1}, {"n": 2}], "expression": "sum([*].n)"}),
        )
        .unwrap()
        .data;
        assert_eq!(out["result"], json!(3));
        let out = run(transform, json!({"data": [1.5, 2], "expression": "sum(@)"}))
            .unwrap()
            .data;
        assert_eq!(out["result"], json!(3.5));
        assert!(matches!(
            run(transform, json!({"data": 1, "expression": "[*"})),
            Err(HostError::Schema { .. })
        ));
    }

    #[test]
    fn hostile_expressions_are_refused_before_parsing() {
        let deep = format!("{}a", "!".repeat(200_000));
        let nested = format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000));
        for expression in [deep, nested] {
            let err = run(transform, json!({"data": 1, "expression": expression})).unwrap_err();
            let HostError::Schema { violations, .. } = err else {
                panic!("{err}")
            };
            assert!(violations[0].starts_with("expression: "), "{violations:?}");
        }
    }
}
