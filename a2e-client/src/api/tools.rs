//! `tool/*`: list (cached), search, call with streaming, timeout and correlation id.

use std::sync::{Arc, PoisonError};

use a2e_proto::{Message, ToolCallRequest, ToolDefinition, ToolEvent, ToolListRequest, ToolResult};
use serde_json::{Map, Value};

use super::invoke::{self, Invocation, InvokeOptions, call_options};
use crate::call::Call;
use crate::client::{Client, unexpected};
use crate::error::ClientResult;

/// What to list or search for ([`ToolApi::list_with`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolQuery {
    /// Search query; empty lists the active (non-deferred) tools.
    pub query: String,
    /// Tags every tool must carry.
    pub tags: Vec<String>,
    /// Include deferred tools in search results.
    pub include_deferred: bool,
    /// Tool kind (toolkit or tag) filter.
    pub kind: String,
}

impl ToolQuery {
    /// A search for `query`.
    pub fn search(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            ..Self::default()
        }
    }

    /// Only tools carrying every one of `tags`.
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Include deferred tools (search mode).
    pub fn include_deferred(mut self, yes: bool) -> Self {
        self.include_deferred = yes;
        self
    }

    /// Only tools of this kind.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = kind.into();
        self
    }
}

/// A tool call to make ([`ToolApi::call_with`], [`ToolApi::start`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// Streaming (default off), timeouts (default 30 s), correlation id.
    pub options: InvokeOptions,
}

impl ToolCall {
    /// A call of `name` with `arguments` (a JSON object).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            name: name.into(),
            arguments: super::object(arguments),
            options: InvokeOptions {
                timeout_secs: 30,
                ..InvokeOptions::default()
            },
        }
    }
}

call_options!(ToolCall);

impl Invocation for ToolCall {
    type Event = ToolEvent;
    type Output = ToolResult;
    const DEFAULT_TIMEOUT_SECS: u64 = 30;
    const ANSWER: &'static str = "tool/call/resp";

    fn options(&self) -> &InvokeOptions {
        &self.options
    }

    fn into_request(self, client: &Client, streaming: bool) -> Message {
        ToolCallRequest {
            session_id: client.session_id().to_owned(),
            tool_name: self.name,
            arguments: self.arguments,
            correlation_id: self.options.correlation_id,
            streaming,
            timeout: self.options.timeout_secs,
            ..ToolCallRequest::default()
        }
        .into()
    }

    fn answer(msg: Message) -> ClientResult<ToolResult> {
        match msg {
            Message::ToolCallResponse(resp) => Ok(resp.data),
            other => Err(unexpected(Self::ANSWER, &other)),
        }
    }
}

/// The tools capability of a [`Client`].
#[derive(Debug, Clone, Copy)]
pub struct ToolApi<'a> {
    client: &'a Client,
}

impl<'a> ToolApi<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Self { client }
    }

    /// The active (non-deferred) tools; fetched once, then served from the cache.
    pub async fn list(&self) -> ClientResult<Arc<Vec<ToolDefinition>>> {
        let cached = self
            .client
            .inner
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match cached {
            Some(tools) => Ok(tools),
            None => self.refresh().await,
        }
    }

    /// Fetches the active tools again and refreshes the cache.
    pub async fn refresh(&self) -> ClientResult<Arc<Vec<ToolDefinition>>> {
        let tools = Arc::new(self.list_with(ToolQuery::default()).await?);
        *self
            .client
            .inner
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(tools.clone());
        Ok(tools)
    }

    /// Lists or searches tools (never cached).
    pub async fn list_with(&self, query: ToolQuery) -> ClientResult<Vec<ToolDefinition>> {
        let req = ToolListRequest {
            filter_kind: query.kind,
            filter_tags: query.tags,
            query: query.query,
            include_deferred: query.include_deferred,
            ..ToolListRequest::default()
        };
        match self.client.request(req.into()).await? {
            Message::ToolListResponse(resp) => Ok(resp.tools),
            other => Err(unexpected("tool/list/resp", &other)),
        }
    }

    /// Calls `name` with `arguments` and waits for its result. A tool that ran
    /// and failed is `Ok` with `success: false`; a refused call is an error.
    pub async fn call(&self, name: &str, arguments: Value) -> ClientResult<ToolResult> {
        self.call_with(ToolCall::new(name, arguments)).await
    }

    /// Makes a call as described and waits for its result.
    pub async fn call_with(&self, call: ToolCall) -> ClientResult<ToolResult> {
        invoke::call_with(self.client, call).await
    }

    /// Makes a streaming call, handing each event to `on_event` as it arrives.
    pub async fn call_with_events(
        &self,
        call: ToolCall,
        on_event: impl FnMut(ToolEvent),
    ) -> ClientResult<ToolResult> {
        invoke::call_with_events(self.client, call, on_event).await
    }

    /// Starts a streaming call: its events as a stream, then its result.
    pub async fn start(&self, call: ToolCall) -> ClientResult<Call<ToolEvent, ToolResult>> {
        invoke::begin(self.client, call, true).await
    }
}
