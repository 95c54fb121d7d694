//! The steps that call the backend, and `transform`.

use serde_json::{Map, Value, json};

use super::{Cx, Engine, Frame, Outcome, lock, truncate_chars};
use crate::backend::{
    AgentPlan, AgentRequest, Backend, LlmReply, LlmRequest, MemorySearch, MemoryWrite, RestRequest,
    ToolStepCall,
};
use crate::doc::Step;
use crate::error::StepError;
use crate::limits::DEFAULT_TOP_K;
use crate::repair::{extract_json, parse_lenient};
use crate::template::Expander;
use crate::validate::validate;

/// `params` keys the engine consumes itself (not passed on to the model).
const LLM_OWN_PARAMS: [&str; 6] = [
    "silent",
    "temperature",
    "prompt",
    "system_prompt",
    "model",
    "metadata",
];

fn string_param(
    step: &Step,
    name: &str,
    ex: &mut Expander<'_>,
) -> Result<Option<String>, StepError> {
    match step.param(name) {
        Some(Value::String(s)) => Ok(Some(ex.expand(&s)?)),
        Some(Value::Null) | None => Ok(None),
        Some(other) => Ok(Some(ex.expand(&crate::template::to_text(&other))?)),
    }
}

fn required(step: &Step, name: &str, ex: &mut Expander<'_>) -> Result<String, StepError> {
    string_param(step, name, ex)?.ok_or_else(|| StepError::Param(format!("`{name}` is missing")))
}

impl<B: Backend> Engine<B> {
    pub(super) fn cut(&self, text: &str) -> String {
        truncate_chars(text, self.config.max_output_chars).into_owned()
    }

    /// The chain state for a model: `{id: {data, output}}`, truncated.
    fn chain_state(&self, cx: &Cx<'_, '_>) -> String {
        // Written entry by entry, stopping once past the limit, so that the
        // cost is bounded by the limit, not by the size of the results.
        let limit = self.config.chain_context_chars;
        let st = lock(&cx.state);
        let mut text = String::from("{");
        for (n, id) in st.order.iter().enumerate() {
            if text.len() > limit.saturating_mul(4) {
                break;
            }
            if let Some(r) = st.results.get(id) {
                if n > 0 {
                    text.push(',');
                }
                text.push_str(&Value::String(id.clone()).to_string());
                text.push(':');
                text.push_str(&json!({"data": r.data, "output": r.output}).to_string());
            }
        }
        text.push('}');
        truncate_chars(&text, limit).into_owned()
    }

    fn model_outcome(&self, step: &Step, reply: LlmReply) -> Outcome {
        let data = extract_json(&reply.text).unwrap_or(Value::Null);
        let message = (!step.flag("silent")).then(|| reply.text.clone());
        Outcome {
            output: Value::String(self.cut(&reply.text)),
            data,
            result: None,
            warnings: reply.warnings,
            message,
        }
    }

    pub(super) async fn llm(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let chain_state = self.chain_state(cx);
        let req = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            let mut params = Map::new();
            if let Some(p) = &step.params {
                for (k, v) in p {
                    if !LLM_OWN_PARAMS.contains(&k.as_str()) {
                        params.insert(k.clone(), ex.expand_value(v)?);
                    }
                }
            }
            LlmRequest {
                step_id: step.id.clone(),
                prompt: required(step, "prompt", &mut ex)?,
                system_prompt: string_param(step, "system_prompt", &mut ex)?,
                model: string_param(step, "model", &mut ex)?,
                temperature: step.param("temperature").and_then(|t| t.as_f64()),
                silent: step.flag("silent"),
                params,
                chain_state,
                agent_id: match string_param(step, "agent_id", &mut ex)? {
                    Some(a) => Some(a),
                    None => cx
                        .globals
                        .get("agent_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                },
                depth: cx.depth,
            }
        };
        let reply = self
            .call(cx, self.backend.llm(req, cx.run.cancel.clone()))
            .await?;
        Ok(self.model_outcome(step, reply))
    }

    pub(super) async fn tool(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let call = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            let args = match step.param("args") {
                Some(v @ Value::Object(_)) => match ex.expand_value(&v)? {
                    Value::Object(m) => m,
                    _ => Map::new(),
                },
                _ => Map::new(),
            };
            ToolStepCall {
                step_id: step.id.clone(),
                key: super::durable::key(&frame.path, &step.id).into_owned(),
                attempt: frame.attempt.max(1),
                server: step
                    .param_str("server")
                    .ok_or_else(|| StepError::Param("`server` is missing".into()))?,
                tool: step
                    .param_str("tool")
                    .ok_or_else(|| StepError::Param("`tool` is missing".into()))?,
                args,
            }
        };
        let result = self
            .call(cx, self.backend.tool(call, cx.run.cancel.clone()))
            .await?;
        let parts: Vec<&str> = result
            .get("content")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|c| c.get("text").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let all_text = parts.join("\n");
        let data = match parts.as_slice() {
            [] => Value::Null,
            [one] => {
                let t = one.trim();
                if t.contains(['{', '[']) {
                    parse_lenient(t).unwrap_or_else(|| Value::String((*one).to_owned()))
                } else {
                    Value::String(t.to_owned())
                }
            }
            many => Value::Array(
                many.iter()
                    .map(|t| {
                        parse_lenient(t.trim()).unwrap_or_else(|| Value::String((*t).to_owned()))
                    })
                    .collect(),
            ),
        };
        let mut warnings = Vec::new();
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            warnings.push(format!(
                "tool reported an error: {}",
                truncate_chars(&all_text, 200)
            ));
        }
        let output = if all_text.is_empty() {
            self.cut(&result.to_string())
        } else {
            self.cut(&all_text)
        };
        Ok(Outcome {
            output: Value::String(output),
            data,
            result: Some(result),
            warnings,
            message: None,
        })
    }

    pub(super) async fn memory_search(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let req = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            let namespaces = match step.param("namespaces") {
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|n| ex.expand(&crate::template::to_text(n)))
                    .collect::<Result<Vec<_>, _>>()?,
                _ => Vec::new(),
            };
            let query = match string_param(step, "query", &mut ex)? {
                Some(q) => q,
                None => cx
                    .globals
                    .get("input")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            };
            let top_k = step.param_u64("top_k").unwrap_or(DEFAULT_TOP_K);
            MemorySearch {
                step_id: step.id.clone(),
                namespaces,
                query,
                top_k: u32::try_from(top_k).unwrap_or(u32::MAX),
            }
        };
        let hits = self
            .call(cx, self.backend.memory_search(req, cx.run.cancel.clone()))
            .await?;
        let data = json!({ "hits": hits });
        Ok(Outcome {
            output: Value::String(data.to_string()),
            data,
            ..Outcome::default()
        })
    }

    pub(super) async fn memory_write(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let req = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            let mut metadata = match step.param("metadata") {
                Some(v @ Value::Object(_)) => match ex.expand_value(&v)? {
                    Value::Object(m) => m,
                    _ => Map::new(),
                },
                _ => Map::new(),
            };
            metadata.insert("source".into(), json!("chain_step"));
            metadata.insert("step_id".into(), json!(step.id));
            MemoryWrite {
                step_id: step.id.clone(),
                namespace: required(step, "namespace", &mut ex)?,
                content: required(step, "content", &mut ex)?,
                metadata,
            }
        };
        let namespace = req.namespace.clone();
        let count = self
            .call(cx, self.backend.memory_write(req, cx.run.cancel.clone()))
            .await?;
        Ok(Outcome {
            output: Value::String(format!("stored {count} in {namespace}")),
            data: json!({ "count": count, "namespace": namespace }),
            ..Outcome::default()
        })
    }

    pub(super) fn transform(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let text = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            match string_param(step, "prompt", &mut ex)? {
                Some(t) => t,
                None => required(step, "template", &mut ex)?,
            }
        };
        let format = step.param_str("output_format");
        let (output, data) = match format.as_deref() {
            Some("json") => {
                let strict = serde_json::from_str::<Value>(&text).ok();
                let v = strict
                    .or_else(|| parse_lenient(&text).filter(|v| v.is_object() || v.is_array()))
                    .ok_or_else(|| {
                        StepError::Param(format!(
                            "output_format is json but the text is not JSON: {}",
                            truncate_chars(&text, 200)
                        ))
                    })?;
                (v.clone(), v)
            }
            Some(_) => (Value::String(text.clone()), Value::Null),
            None => match text
                .contains(['{', '['])
                .then(|| parse_lenient(text.trim()))
                .flatten()
            {
                Some(v) => (v.clone(), v),
                None => (Value::String(text.clone()), Value::Null),
            },
        };
        let message = (!step.flag("silent")).then(|| match &output {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        });
        Ok(Outcome {
            output,
            data,
            message,
            ..Outcome::default()
        })
    }

    pub(super) async fn rest_call(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let req = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            let url = required(step, "url", &mut ex)?.trim().to_owned();
            let method = step
                .param_str("method")
                .map(|m| m.to_ascii_uppercase())
                .unwrap_or_else(|| "GET".into());
            let mut headers = Vec::new();
            if let Some(Value::Object(h)) = step.param("headers") {
                for (k, v) in h {
                    headers.push((k.clone(), ex.expand(&crate::template::to_text(&v))?));
                }
            }
            let body = match step.param("body") {
                None | Some(Value::Null) => None,
                Some(b) => Some(ex.expand_value(&b)?),
            };
            if body.is_some()
                && !headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("Content-Type".into(), "application/json".into()));
            }
            RestRequest {
                step_id: step.id.clone(),
                method,
                url,
                headers,
                body,
            }
        };
        let method = req.method.clone();
        let url = req.url.clone();
        let resp = self
            .call(cx, self.backend.rest_call(req, cx.run.cancel.clone()))
            .await
            .map_err(|e| match e {
                StepError::Backend(b) => {
                    StepError::Param(format!("HTTP {method} to {url} failed: {b}"))
                }
                other => other,
            })?;
        let ok = (200..300).contains(&resp.status);
        let data = parse_lenient(&resp.body).unwrap_or(Value::Null);
        let mut warnings = Vec::new();
        if !ok {
            warnings.push(format!("HTTP {method} to {url} answered {}", resp.status));
        }
        Ok(Outcome {
            output: Value::String(self.cut(&resp.body)),
            data: data.clone(),
            result: Some(json!({"status": resp.status, "ok": ok, "body": resp.body, "data": data})),
            warnings,
            message: None,
        })
    }

    pub(super) async fn agent(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let depth = cx.depth + 1;
        if depth > self.config.max_agent_depth {
            return Err(StepError::AgentDepth(self.config.max_agent_depth));
        }
        let req = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            let input = match string_param(step, "input", &mut ex)? {
                Some(i) if !i.is_empty() => i,
                _ => cx
                    .globals
                    .get("input")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            };
            AgentRequest {
                step_id: step.id.clone(),
                agent_id: required(step, "agent_id", &mut ex)?,
                task_id: string_param(step, "task_id", &mut ex)?,
                chain_id: string_param(step, "chain_id", &mut ex)?,
                input,
                depth,
            }
        };
        let input = req.input.clone();
        let agent_id = req.agent_id.clone();
        let plan = self
            .call(cx, self.backend.agent(req, cx.run.cancel.clone()))
            .await?;
        match plan {
            AgentPlan::Reply(reply) => Ok(self.model_outcome(step, reply)),
            AgentPlan::Llm {
                system_prompt,
                model,
            } => {
                let req = LlmRequest {
                    step_id: step.id.clone(),
                    prompt: input,
                    system_prompt,
                    model,
                    temperature: step.param("temperature").and_then(|t| t.as_f64()),
                    silent: step.flag("silent"),
                    params: Map::new(),
                    chain_state: String::new(),
                    agent_id: Some(agent_id),
                    depth,
                };
                let reply = self
                    .call(cx, self.backend.llm(req, cx.run.cancel.clone()))
                    .await?;
                Ok(self.model_outcome(step, reply))
            }
            AgentPlan::Chain {
                document,
                agent_id: sub_agent,
                task_id,
            } => {
                validate(&document).map_err(|e| StepError::InvalidSubChain(e.to_string()))?;
                let mut globals = cx.globals.clone();
                globals.insert("input".into(), Value::String(input.clone()));
                globals.insert("userInput".into(), Value::String(input));
                globals.insert(
                    "agent_id".into(),
                    Value::String(sub_agent.unwrap_or(agent_id)),
                );
                match task_id {
                    Some(t) => globals.insert("task_id".into(), Value::String(t)),
                    None => globals.remove("task_id"),
                };
                let path = format!("{}{}>", frame.path, step.id);
                let outcome = self
                    .run_chain(cx.run, &document, globals, depth, path.into())
                    .await?;
                let last = outcome.last_result();
                let text = last
                    .map(|r| super::output_text(&r.output))
                    .unwrap_or_default();
                let data = last.map(|r| r.data.clone()).unwrap_or(Value::Null);
                let warnings = outcome
                    .order
                    .iter()
                    .filter_map(|id| {
                        outcome
                            .results
                            .get(id)
                            .and_then(|r| r.error.as_ref().map(|e| (id, e)))
                    })
                    .map(|(id, e)| format!("agent chain step '{id}' failed: {e}"))
                    .collect();
                let message = (!step.flag("silent")).then(|| text.clone());
                Ok(Outcome {
                    output: Value::String(self.cut(&text)),
                    data,
                    result: Some(outcome.to_value()),
                    warnings,
                    message,
                })
            }
        }
    }
}
