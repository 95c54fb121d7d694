//! The provider trait every model provider implements.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse, DeltaSink};

/// A model provider: one chat call, streamed or not.
///
/// With `request.stream` set, text and tool-call fragments go to `deltas` as they arrive;
/// either way the complete answer is returned. Cancelling `cancel` ends the call with
/// [`LlmError::Cancelled`] and drops the HTTP response, closing its connection.
pub trait ChatProvider: Send + Sync {
    /// The provider's configured name.
    fn name(&self) -> &str;

    /// One chat completion.
    fn chat(
        &self,
        request: &ChatRequest,
        deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<ChatResponse, LlmError>> + Send;
}

impl<P: ChatProvider> ChatProvider for &P {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn chat(
        &self,
        request: &ChatRequest,
        deltas: &mut dyn DeltaSink,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<ChatResponse, LlmError>> + Send {
        (**self).chat(request, deltas, cancel)
    }
}
