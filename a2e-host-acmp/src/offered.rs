//! The host as an ACMP provider: `[[acmp.provider.capabilities]]` map each
//! capability tag to a tool, a skill, a chain file or an Ontheia document,
//! served by a [`ProviderService`].
//!
//! A chain's task input is its `initial_input` (an object's keys; a string is
//! `text`); its answer is the chain's `final_output`. An Ontheia document's
//! task input is `${input}`: a string as it is, an object's `input` (or
//! `text`) string with its other string keys as globals, anything else as
//! JSON; its answer is the last step's output, and a failed step fails the task.

use std::sync::Arc;

use a2e_proto::ChainRequest;
use acmp_dag::serve::{Offer, Pricing, ProviderService, ServiceConfig};
use acmp_dag::{AcmpError, Invocation, InvokeResult, Provider, ProviderFeatures};
use serde_json::Value;

use super::{HostProvider, arguments, payload};
use crate::acmp_config::{AcmpConfigError, AcmpProviderConfig, CapabilityConfig, resolve_token};
use crate::host::{CallOptions, Host};

/// What serves a capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A tool of the host.
    Tool(String),
    /// A skill of the host.
    Skill(String),
    /// A chain file, read when the task runs.
    Chain(std::path::PathBuf),
    /// An Ontheia document, read and validated when the task runs.
    Ontheia(std::path::PathBuf),
}

/// The capability's target, or why the entry is unusable.
pub(crate) fn target(entry: &CapabilityConfig) -> Result<Target, String> {
    let mut targets = Vec::new();
    if let Some(t) = &entry.tool {
        targets.push(Target::Tool(t.clone()));
    }
    if let Some(s) = &entry.skill {
        targets.push(Target::Skill(s.clone()));
    }
    if let Some(c) = &entry.chain {
        targets.push(Target::Chain(c.clone()));
    }
    if let Some(o) = &entry.ontheia {
        if cfg!(not(feature = "ontheia")) {
            return Err(format!(
                "acmp.provider.capabilities \"{}\": ontheia: this host was built without the ontheia feature",
                entry.capability
            ));
        }
        targets.push(Target::Ontheia(o.clone()));
    }
    match targets.len() {
        1 => Ok(targets.remove(0)),
        0 => Err(format!(
            "acmp.provider.capabilities \"{}\": name one of tool, skill, chain, ontheia",
            entry.capability
        )),
        _ => Err(format!(
            "acmp.provider.capabilities \"{}\": name only one of tool, skill, chain, ontheia",
            entry.capability
        )),
    }
}

/// The offer of a capability entry.
pub(crate) fn offer(entry: &CapabilityConfig) -> Result<Offer, String> {
    let pricing = match entry.pricing.as_deref() {
        None | Some("per_call") => Pricing::PerCall,
        Some("per_input_token") => Pricing::PerInputToken,
        Some(other) => {
            return Err(format!(
                "acmp capability \"{}\": pricing: \"{other}\" is neither per_call nor per_input_token",
                entry.capability
            ));
        }
    };
    if entry.capability.is_empty() {
        return Err("acmp capability: capability: must not be empty".into());
    }
    if !(entry.price_cu.is_finite() && entry.price_cu >= 0.0) {
        return Err(format!(
            "acmp capability \"{}\": price_cu: must be a number ≥ 0",
            entry.capability
        ));
    }
    Ok(Offer {
        capability: entry.capability.clone(),
        input_types: entry.input_types.clone(),
        output_type: entry.output_type.clone(),
        price_cu: entry.price_cu,
        pricing,
        tier: entry.tier.clone(),
        latency_ms: entry.latency_ms,
    })
}

/// Executes capabilities on the host through their targets.
pub struct OfferedProvider {
    host: Arc<Host>,
    tools: HostProvider,
    targets: std::collections::HashMap<String, Target>,
}

impl Provider for OfferedProvider {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeResult, AcmpError> {
        let task_id = invocation.params.task_id.clone();
        let Some(target) = self.targets.get(&invocation.params.capability) else {
            return Err(AcmpError::capability_not_found(
                &task_id,
                &invocation.params.capability,
            ));
        };
        match target {
            Target::Tool(name) | Target::Skill(name) => {
                let mut invocation = invocation;
                invocation.params.capability.clone_from(name);
                self.tools.invoke(invocation).await
            }
            Target::Chain(path) => self.run_chain(path, invocation).await,
            #[cfg(feature = "ontheia")]
            Target::Ontheia(path) => self.run_ontheia(path, invocation).await,
            #[cfg(not(feature = "ontheia"))]
            Target::Ontheia(_) => Err(AcmpError::capability_not_found(
                &task_id,
                &invocation.params.capability,
            )),
        }
    }
}

impl OfferedProvider {
    /// The text of a target's file (`path` under the root); `what` names it
    /// in the task's error.
    async fn read(
        &self,
        path: &std::path::Path,
        what: &str,
        task_id: &str,
    ) -> Result<String, AcmpError> {
        let file = self.host.config().root.join(path);
        tokio::fs::read_to_string(&file)
            .await
            .map_err(|e| AcmpError::internal(task_id, format!("{what}: {e}")))
    }

    async fn run_chain(
        &self,
        path: &std::path::Path,
        invocation: Invocation,
    ) -> Result<InvokeResult, AcmpError> {
        let task_id = invocation.params.task_id.clone();
        let text = self.read(path, "chain file", &task_id).await?;
        let mut req: ChainRequest = serde_json::from_str(&text)
            .map_err(|e| AcmpError::internal(&task_id, format!("chain file: {e}")))?;
        req.initial_input
            .extend(arguments(invocation.params.input.as_ref()));
        let options = CallOptions::new().cancel(&invocation.cancel);
        let resp = crate::chains::run_request(&self.host, &req, options)
            .await
            .map_err(|e| AcmpError::internal(&task_id, e.to_string()))?;
        if invocation.cancel.is_cancelled() {
            return Err(AcmpError::cancelled(&task_id));
        }
        if !resp.success {
            let message = resp
                .final_output
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("the chain failed")
                .to_owned();
            return Err(AcmpError::internal(&task_id, message));
        }
        Ok(InvokeResult::new(task_id, payload(resp.final_output)))
    }

    #[cfg(feature = "ontheia")]
    async fn run_ontheia(
        &self,
        path: &std::path::Path,
        invocation: Invocation,
    ) -> Result<InvokeResult, AcmpError> {
        let task_id = invocation.params.task_id.clone();
        let text = self.read(path, "ontheia document", &task_id).await?;
        let doc = ontheia::parse(&text)
            .map_err(|e| AcmpError::internal(&task_id, format!("ontheia document: {e}")))?;
        let (input, vars) = ontheia_input(invocation.params.input.as_ref().map(|p| &p.data));
        let globals = crate::ontheia_host::globals(
            &input,
            vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let outcome = crate::ontheia_host::run(
            &self.host,
            "",
            &doc,
            &globals,
            |_| {},
            invocation.cancel.clone(),
        )
        .await;
        if invocation.cancel.is_cancelled() {
            return Err(AcmpError::cancelled(&task_id));
        }
        // The same outcome an Ontheia skill answers: the last step's output,
        // or the failed steps named.
        match crate::ontheia_host::output_of(outcome) {
            Ok(out) => Ok(InvokeResult::new(task_id, payload(out.summary))),
            Err(crate::error::HostError::Cancelled) => Err(AcmpError::cancelled(&task_id)),
            Err(e) => Err(AcmpError::internal(&task_id, e.to_string())),
        }
    }
}

/// An Ontheia run's `${input}` and string globals from a task's input data
/// (an object's `input`, else `text`, as [`crate::ontheia_host::input_of`]).
#[cfg(feature = "ontheia")]
fn ontheia_input(data: Option<&Value>) -> (String, Vec<(String, String)>) {
    match data {
        None | Some(Value::Null) => (String::new(), Vec::new()),
        Some(Value::String(s)) => (s.clone(), Vec::new()),
        Some(Value::Object(map)) => crate::ontheia_host::input_of(map, &["input", "text"]),
        Some(other) => (other.to_string(), Vec::new()),
    }
}

/// The host's provider service from `[acmp.provider]`.
pub fn service(
    host: &Arc<Host>,
    config: &AcmpProviderConfig,
) -> Result<ProviderService, AcmpConfigError> {
    build_service(host, config).map_err(AcmpConfigError)
}

fn build_service(host: &Arc<Host>, config: &AcmpProviderConfig) -> Result<ProviderService, String> {
    let mut offers = Vec::new();
    let mut targets = std::collections::HashMap::new();
    for entry in &config.capabilities {
        offers.push(offer(entry)?);
        targets.insert(entry.capability.clone(), target(entry)?);
    }
    let provider = OfferedProvider {
        host: host.clone(),
        tools: HostProvider::new(host.clone(), ""),
        targets,
    };
    let service_config = ServiceConfig {
        features: ProviderFeatures {
            output_streaming: config.output_streaming,
            input_streaming: config.input_streaming,
            heartbeat_interval_ms: Some(config.heartbeat_interval_ms).filter(|&ms| ms > 0),
        },
        provider_id: config.provider_id.clone(),
        max_payload_bytes: config.max_payload_bytes,
        ..ServiceConfig::default()
    };
    Ok(ProviderService::new(provider, offers, service_config))
}

/// The bearer token buyers must present; an error when none is configured (the
/// spec makes it a must).
pub fn provider_token(config: &AcmpProviderConfig) -> Result<String, AcmpConfigError> {
    resolve_token(config.token.as_deref(), config.token_env.as_deref()).ok_or_else(|| {
        AcmpConfigError(
            "acmp.provider: a bearer token is required: set token_env (or token)".to_owned(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "ontheia")]
    #[test]
    fn an_ontheia_task_input_becomes_its_input_and_string_globals() {
        use serde_json::json;
        assert_eq!(
            ontheia_input(Some(&json!("hello"))),
            ("hello".into(), vec![])
        );
        let (input, vars) = ontheia_input(Some(&json!({"text": "t", "user_id": "u", "n": 3})));
        assert_eq!(input, "t");
        assert_eq!(vars, vec![("user_id".to_owned(), "u".to_owned())]);
        let (input, _) = ontheia_input(Some(&json!({"n": 3})));
        assert_eq!(input, r#"{"n":3}"#);
        assert_eq!(ontheia_input(Some(&json!([1, 2]))).0, "[1,2]");
        assert_eq!(ontheia_input(None).0, "");
    }

    #[test]
    fn a_capability_names_exactly_one_target() {
        let entry = CapabilityConfig {
            capability: "c".into(),
            ontheia: Some("doc.json".into()),
            ..CapabilityConfig::default()
        };
        #[cfg(feature = "ontheia")]
        assert_eq!(target(&entry), Ok(Target::Ontheia("doc.json".into())));
        #[cfg(not(feature = "ontheia"))]
        assert!(
            target(&entry)
                .unwrap_err()
                .contains("without the ontheia feature")
        );
        let both = CapabilityConfig {
            tool: Some("t".into()),
            ..entry.clone()
        };
        assert!(target(&both).unwrap_err().contains("only one of"));
        let none = CapabilityConfig {
            capability: "c".into(),
            ..CapabilityConfig::default()
        };
        assert!(target(&none).unwrap_err().contains("name one of"));
    }
}
