//! `skill/*`: discover and call.

use std::time::Duration;

use a2e_proto::{
    ErrorCode, LLMConfig, Message, SkillCallRequest, SkillDefinition, SkillDiscoverRequest,
    SkillEvent, SkillResult,
};
use serde_json::{Map, Value};

use crate::call::Call;
use crate::client::{Client, unexpected};
use crate::error::{ClientError, ClientResult};

/// Which skills to discover ([`SkillApi::discover_with`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillQuery {
    /// Skills carrying any of these tags.
    pub tags: Vec<String>,
    /// Skills of any of these categories.
    pub categories: Vec<String>,
}

impl SkillQuery {
    /// Only skills carrying any of `tags`.
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Only skills of any of `categories`.
    pub fn categories<S: Into<String>>(mut self, categories: impl IntoIterator<Item = S>) -> Self {
        self.categories
            .extend(categories.into_iter().map(Into::into));
        self
    }
}

/// A skill call to make ([`SkillApi::call_with`], [`SkillApi::start`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SkillCall {
    /// The skill.
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// Ask for `skill/event`s (the spec's default: yes).
    pub streaming: bool,
    /// Wall-clock limit the host enforces, in seconds (0: the skill's default).
    pub timeout_secs: u64,
    /// Ties the call to an agent turn.
    pub correlation_id: String,
    /// Another model or provider for this call.
    pub llm_override: Option<LLMConfig>,
    /// More metadata.
    pub metadata: Map<String, Value>,
    /// How long the client waits for the answer (default: `timeout_secs` plus the slack).
    pub client_timeout: Option<Duration>,
}

impl SkillCall {
    /// A call of `name` with `arguments` (a JSON object).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            name: name.into(),
            arguments: super::object(arguments),
            streaming: true,
            timeout_secs: 60,
            correlation_id: String::new(),
            llm_override: None,
            metadata: Map::new(),
            client_timeout: None,
        }
    }

    /// The host-side limit in seconds.
    pub fn timeout_secs(mut self, secs: u64) -> Self {
        self.timeout_secs = secs;
        self
    }

    /// The client-side limit.
    pub fn client_timeout(mut self, limit: Duration) -> Self {
        self.client_timeout = Some(limit);
        self
    }

    /// The correlation id.
    pub fn correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = id.into();
        self
    }

    /// Ask for events or not.
    pub fn streaming(mut self, yes: bool) -> Self {
        self.streaming = yes;
        self
    }
}

/// The skills capability of a [`Client`].
#[derive(Debug, Clone, Copy)]
pub struct SkillApi<'a> {
    client: &'a Client,
}

impl<'a> SkillApi<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Self { client }
    }

    /// Every skill.
    pub async fn discover(&self) -> ClientResult<Vec<SkillDefinition>> {
        self.discover_with(SkillQuery::default()).await
    }

    /// Skills matching the query.
    pub async fn discover_with(&self, query: SkillQuery) -> ClientResult<Vec<SkillDefinition>> {
        let req = SkillDiscoverRequest {
            filter_tags: query.tags,
            filter_categories: query.categories,
            ..SkillDiscoverRequest::default()
        };
        match self.client.request(req.into()).await? {
            Message::SkillDiscoverResponse(resp) => Ok(resp.skills),
            other => Err(unexpected("skill/discover/resp", &other)),
        }
    }

    /// Calls skill `name` and waits for its result.
    pub async fn call(&self, name: &str, arguments: Value) -> ClientResult<SkillResult> {
        self.call_with(SkillCall::new(name, arguments)).await
    }

    /// Makes a call as described and waits for its result.
    pub async fn call_with(&self, call: SkillCall) -> ClientResult<SkillResult> {
        let streaming = call.streaming;
        self.begin(call, streaming).await?.finish().await
    }

    /// Makes a streaming call, handing each event to `on_event` as it arrives.
    pub async fn call_with_events(
        &self,
        call: SkillCall,
        on_event: impl FnMut(SkillEvent),
    ) -> ClientResult<SkillResult> {
        self.begin(call, true).await?.finish_with(on_event).await
    }

    /// Starts a streaming call: its events as a stream, then its result.
    pub async fn start(&self, call: SkillCall) -> ClientResult<Call<SkillEvent, SkillResult>> {
        self.begin(call, true).await
    }

    async fn begin(
        &self,
        call: SkillCall,
        streaming: bool,
    ) -> ClientResult<Call<SkillEvent, SkillResult>> {
        let limit = self.client.limit_for(
            super::tools::effective(call.timeout_secs, 60),
            call.client_timeout,
        );
        let req = SkillCallRequest {
            name: call.name,
            arguments: call.arguments,
            correlation_id: call.correlation_id,
            timeout: call.timeout_secs,
            streaming,
            llm_override: call.llm_override,
            metadata: call.metadata,
            ..SkillCallRequest::default()
        };
        self.client
            .start(req.into(), streaming, limit, |msg| match msg {
                Message::SkillCallResponse(resp) => match (resp.data, resp.error) {
                    (Some(result), _) => Ok(result),
                    (None, Some(error)) => Err(ClientError::Protocol {
                        code: error
                            .get("code")
                            .and_then(Value::as_str)
                            .map_or(ErrorCode::SKILL_ERROR, ErrorCode::new),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        retryable: error
                            .get("retryable")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                        detail: Box::new(error),
                        capability: "skill".into(),
                    }),
                    (None, None) => Err(ClientError::Failed {
                        what: "skill/call",
                        message: "the host sent neither a result nor an error".into(),
                    }),
                },
                other => Err(unexpected("skill/call/resp", &other)),
            })
            .await
    }
}
