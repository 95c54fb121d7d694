//! Model providers for A2E skills: OpenAI-compatible Chat Completions and Anthropic
//! Messages, streaming, retries, and the agentic tool loop.
//!
//! * [`ProviderConfig`] / [`Providers`]: the host's configured providers and the
//!   allow-list agents are held to; [`Providers::resolve`] maps a skill's `llm_config` or an
//!   agent's `llm_override` ([`a2e_proto::LLMConfig`]) onto a [`ResolvedModel`], refusing
//!   what is not allowed with a [`ConfigError`] naming the field.
//! * [`ChatProvider`]: one chat call (messages, tools, streamed [`Delta`]s, [`Usage`]),
//!   implemented by [`OpenAiProvider`] and [`AnthropicProvider`] behind [`ModelClient`].
//!   Retries with backoff on 429/5xx (honouring `Retry-After` within a cap), a per-request
//!   timeout, cancellation through a [`CancellationToken`] that drops the HTTP stream.
//! * [`run_loop`]: the agentic loop over a [`ToolExecutor`], emitting [`LoopEvent`]s
//!   (mapped onto `skill/event`s by [`LoopEvent::to_skill_event`]).
//!
//! Credentials are [`Secret`]s: never in `Debug`, errors (bodies quoted in errors are
//! scrubbed), events or logs.
//!
//! Both providers are `reqwest` (rustls on `ring`) with this crate's own tolerant serde
//! types rather than `async-openai`: compatible servers differ from OpenAI in small ways
//! that strict types reject, both APIs need one retry/timeout/cancellation policy and one
//! SSE reader, and Anthropic needed its own types anyway (README: "Why `reqwest`").
//!
//! ```
//! use a2e_llm::{Message, ProviderConfig, ProviderKind, Providers};
//!
//! let mut config = ProviderConfig::new(
//!     "local",
//!     ProviderKind::OpenAi,
//!     "http://127.0.0.1:8080/v1",
//!     "smollm2",
//! );
//! config.api_key = Some("sk-not-shown".into());
//! config.agent_selectable = true;
//! let providers = Providers::new(vec![config]).unwrap();
//!
//! // An agent's override naming a model that is not on the allow-list is refused.
//! let wanted: a2e_proto::LLMConfig = serde_json::from_value(serde_json::json!({
//!     "provider_name": "local", "provider_credentials": {},
//!     "provider_config": {"model": "gpt-5"}
//! })).unwrap();
//! let err = providers.resolve(None, Some(&wanted)).unwrap_err();
//! assert!(err.is_unauthorized());
//! assert_eq!(err.field(), "llm_override.provider_config.model");
//!
//! // The skill's own configuration resolves to a request for the default model.
//! let model = providers.resolve(None, None).unwrap();
//! let request = model.request(vec![Message::system("Be brief."), Message::user("Hi")], vec![]);
//! assert_eq!(request.model, "smollm2");
//! assert!(!format!("{providers:?}").contains("sk-not-shown"));
//! ```

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
mod agent;
mod anthropic;
mod client;
mod config;
mod error;
mod events;
mod http;
mod openai;
mod provider;
mod secret;
mod skill;
mod types;

pub use agent::{
    ArgumentsError, LoopEventSink, LoopOptions, LoopOutcome, ToolExecutor, parse_arguments,
    run_loop, truncate,
};
pub use anthropic::{AnthropicProvider, DEFAULT_ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS};
pub use client::ModelClient;
pub use config::{
    ConfigSource, DEFAULT_TIMEOUT_SECONDS, ProviderConfig, ProviderKind, Providers, ResolvedModel,
};
pub use error::{ConfigError, LlmError, LoopError};
pub use events::{ANSWER_ARTIFACT, LoopEvent, base64};
pub use http::{MAX_BODY_BYTES, MAX_EVENT_BYTES, MAX_STREAM_BYTES, RetryPolicy};
pub use openai::OpenAiProvider;
pub use provider::ChatProvider;
pub use secret::{REDACTED, Secret};
pub use skill::{DEFAULT_MAX_TURNS, SkillEventSink, run_metadata, skill_messages};
pub use tokio_util::sync::CancellationToken;
pub use types::{
    ChatRequest, ChatResponse, Delta, DeltaSink, FinishReason, Message, ModelToolCall, NoDeltas,
    ToolChoice, ToolSpec, Usage,
};
