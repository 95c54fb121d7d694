//! `skill/*`: discover and call.

use a2e_proto::{
    ErrorCode, LLMConfig, Message, SkillCallRequest, SkillDefinition, SkillDiscoverRequest,
    SkillEvent, SkillResult,
};
use serde_json::{Map, Value};

use super::invoke::{self, Invocation, InvokeOptions, call_options};
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
    /// Streaming (the spec's default: on), timeouts (default 60 s), correlation id.
    pub options: InvokeOptions,
    /// Another model or provider for this call.
    pub llm_override: Option<LLMConfig>,
    /// More metadata.
    pub metadata: Map<String, Value>,
}

impl SkillCall {
    /// A call of `name` with `arguments` (a JSON object).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            name: name.into(),
            arguments: super::object(arguments),
            options: InvokeOptions {
                streaming: true,
                timeout_secs: 60,
                ..InvokeOptions::default()
            },
            llm_override: None,
            metadata: Map::new(),
        }
    }

    /// Another model or provider for this call (honoured only where the host allows it).
    pub fn llm_override(mut self, config: LLMConfig) -> Self {
        self.llm_override = Some(config);
        self
    }
}

call_options!(SkillCall);

impl Invocation for SkillCall {
    type Event = SkillEvent;
    type Output = SkillResult;
    const DEFAULT_TIMEOUT_SECS: u64 = 60;
    const ANSWER: &'static str = "skill/call/resp";

    fn options(&self) -> &InvokeOptions {
        &self.options
    }

    fn into_request(self, _client: &Client, streaming: bool) -> Message {
        SkillCallRequest {
            name: self.name,
            arguments: self.arguments,
            correlation_id: self.options.correlation_id,
            timeout: self.options.timeout_secs,
            streaming,
            llm_override: self.llm_override,
            metadata: self.metadata,
            ..SkillCallRequest::default()
        }
        .into()
    }

    fn answer(msg: Message) -> ClientResult<SkillResult> {
        let resp = match msg {
            Message::SkillCallResponse(resp) => resp,
            other => return Err(unexpected(Self::ANSWER, &other)),
        };
        match (resp.data, resp.error) {
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
        }
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
        invoke::call_with(self.client, call).await
    }

    /// Makes a streaming call, handing each event to `on_event` as it arrives.
    pub async fn call_with_events(
        &self,
        call: SkillCall,
        on_event: impl FnMut(SkillEvent),
    ) -> ClientResult<SkillResult> {
        invoke::call_with_events(self.client, call, on_event).await
    }

    /// Starts a streaming call: its events as a stream, then its result.
    pub async fn start(&self, call: SkillCall) -> ClientResult<Call<SkillEvent, SkillResult>> {
        invoke::begin(self.client, call, true).await
    }
}
