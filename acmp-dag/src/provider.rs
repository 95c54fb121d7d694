//! The [`Provider`] trait the orchestrator invokes tasks through, and what an invocation
//! carries: params, a cancellation token, and optional input and output streams.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::orchestrator::msg::Msg;
use crate::{
    AcmpError, Heartbeat, InputChunk, InvokeParams, InvokeResult, Payload, ProviderFeatures,
    StreamChunk,
};

/// Something that executes tasks: an in-process function, or a remote provider reached over
/// Layer 1 (`acmp/invoke` and its notifications).
///
/// A host implements it over its transport: send `acmp/invoke` with
/// [`Invocation::params`]; forward each [`InputChunk`] from [`Invocation::input`] as an
/// `acmp/inputChunk`; when [`Invocation::cancel`] fires, send `acmp/cancel`; pass each
/// incoming `acmp/streamChunk` (in `seq` order) to [`OutputSink::send_chunk`] and each
/// `acmp/heartbeat` to [`OutputSink::heartbeat`]; return the `acmp/result` as `Ok` and an
/// `acmp/error` as `Err`.
pub trait Provider: Send + Sync + 'static {
    /// The optional features the provider advertised (streaming, heartbeats). The
    /// orchestrator streams an edge only when both of its providers support it.
    fn features(&self) -> ProviderFeatures {
        ProviderFeatures::default()
    }

    /// Executes one task. Should return soon after `invocation.cancel` fires (with -33004).
    fn invoke(
        &self,
        invocation: Invocation,
    ) -> impl Future<Output = Result<InvokeResult, AcmpError>> + Send;
}

/// The object-safe twin of [`Provider`], implemented for every provider; routers hand out
/// [`ProviderRef`]s.
pub trait DynProvider: Send + Sync + 'static {
    /// See [`Provider::features`].
    fn features(&self) -> ProviderFeatures;

    /// See [`Provider::invoke`].
    fn invoke_dyn(&self, invocation: Invocation) -> BoxFuture<'_, Result<InvokeResult, AcmpError>>;

    /// See [`Provider::invoke`]; the future owns the provider (one allocation).
    fn invoke_owned(
        self: Arc<Self>,
        invocation: Invocation,
    ) -> BoxFuture<'static, Result<InvokeResult, AcmpError>>;
}

impl<P: Provider> DynProvider for P {
    fn features(&self) -> ProviderFeatures {
        Provider::features(self)
    }

    fn invoke_dyn(&self, invocation: Invocation) -> BoxFuture<'_, Result<InvokeResult, AcmpError>> {
        Box::pin(self.invoke(invocation))
    }

    fn invoke_owned(
        self: Arc<Self>,
        invocation: Invocation,
    ) -> BoxFuture<'static, Result<InvokeResult, AcmpError>> {
        Box::pin(async move { self.invoke(invocation).await })
    }
}

/// A shared, type-erased provider.
pub type ProviderRef = Arc<dyn DynProvider>;

impl<P: Provider> Provider for Arc<P> {
    fn features(&self) -> ProviderFeatures {
        (**self).features()
    }

    fn invoke(
        &self,
        invocation: Invocation,
    ) -> impl Future<Output = Result<InvokeResult, AcmpError>> + Send {
        (**self).invoke(invocation)
    }
}

impl Provider for Arc<dyn DynProvider> {
    fn features(&self) -> ProviderFeatures {
        (**self).features()
    }

    fn invoke(
        &self,
        invocation: Invocation,
    ) -> impl Future<Output = Result<InvokeResult, AcmpError>> + Send {
        (**self).invoke_dyn(invocation)
    }
}

/// A provider made of an async function, e.g. for in-process capabilities and tests.
pub struct FnProvider<F> {
    f: F,
    features: ProviderFeatures,
}

/// A provider calling `f` for every invocation.
pub fn from_fn<F, Fut>(f: F) -> FnProvider<F>
where
    F: Fn(Invocation) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<InvokeResult, AcmpError>> + Send + 'static,
{
    FnProvider {
        f,
        features: ProviderFeatures::default(),
    }
}

impl<F> FnProvider<F> {
    /// Advertises features.
    #[must_use]
    pub fn with_features(mut self, features: ProviderFeatures) -> Self {
        self.features = features;
        self
    }
}

impl<F, Fut> Provider for FnProvider<F>
where
    F: Fn(Invocation) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<InvokeResult, AcmpError>> + Send + 'static,
{
    fn features(&self) -> ProviderFeatures {
        self.features
    }

    fn invoke(
        &self,
        invocation: Invocation,
    ) -> impl Future<Output = Result<InvokeResult, AcmpError>> + Send {
        (self.f)(invocation)
    }
}

/// One task invocation handed to a provider.
#[derive(Debug)]
pub struct Invocation {
    /// The `acmp/invoke` params; `input` is literal (references are already resolved), or
    /// absent with `input_stream: true`.
    pub params: InvokeParams,
    /// Fires when the task is cancelled (directly, downstream of a failure, fail-fast, or on
    /// timeout): the provider should stop and answer -33004.
    pub cancel: CancellationToken,
    /// The input stream, present exactly when `params.input_stream` is true.
    pub input: Option<InputChunks>,
    /// Where output chunks (when `params.stream` is true) and heartbeats go.
    pub output: OutputSink,
    /// Which execution of the task this is, from 1: a task invoked again
    /// after its host stopped while it ran keeps its attempt, so that
    /// `run_id/task_id/attempt` is the same idempotency key both times.
    pub attempt: u32,
}

impl Invocation {
    /// A standalone invocation: a fresh token, no input stream, output chunks discarded.
    pub fn new(params: InvokeParams) -> Self {
        let streaming = params.is_stream();
        let task_id = Arc::from(params.task_id.as_str());
        Self {
            params,
            cancel: CancellationToken::new(),
            input: None,
            output: OutputSink {
                target: SinkTarget::Discard,
                task_id,
                streaming,
                seq: 0,
                finished: false,
            },
            attempt: 1,
        }
    }

    /// A standalone invocation whose output chunks and heartbeats arrive on the returned
    /// receiver.
    pub fn with_output_channel(
        params: InvokeParams,
    ) -> (Self, mpsc::UnboundedReceiver<ProviderMessage>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut invocation = Self::new(params);
        invocation.output.target = SinkTarget::Channel(tx);
        (invocation, rx)
    }

    /// Attaches an input stream (and sets `input_stream: true`).
    #[must_use]
    pub fn with_input(mut self, input: InputChunks) -> Self {
        self.params.input_stream = Some(true);
        self.input = Some(input);
        self
    }

    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.params.task_id
    }
}

/// Output of a provider other than its result.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderMessage {
    /// An `acmp/streamChunk`.
    Chunk(StreamChunk),
    /// An `acmp/heartbeat`.
    Heartbeat(Heartbeat),
}

/// The input chunks of a streamed input, in `seq` order, ending with a `final` chunk.
#[derive(Debug)]
pub struct InputChunks {
    rx: mpsc::UnboundedReceiver<InputChunk>,
}

/// The sending side of [`InputChunks`], for driving a provider by hand.
pub type InputChunkSender = mpsc::UnboundedSender<InputChunk>;

impl InputChunks {
    /// A new input stream and its sender.
    pub fn channel() -> (InputChunkSender, Self) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, Self { rx })
    }

    pub(crate) fn from_receiver(rx: mpsc::UnboundedReceiver<InputChunk>) -> Self {
        Self { rx }
    }

    /// The next chunk; `None` once the sender is gone (after the final chunk, or when the
    /// upstream task failed or was cancelled).
    pub async fn recv(&mut self) -> Option<InputChunk> {
        self.rx.recv().await
    }

    /// Every chunk up to and including the `final` one (or until the stream ends).
    pub async fn collect_all(mut self) -> Vec<InputChunk> {
        let mut all = Vec::new();
        while let Some(chunk) = self.rx.recv().await {
            let last = chunk.is_final;
            all.push(chunk);
            if last {
                break;
            }
        }
        all
    }
}

impl futures::Stream for InputChunks {
    type Item = InputChunk;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<InputChunk>> {
        self.rx.poll_recv(cx)
    }
}

#[derive(Debug)]
enum SinkTarget {
    Discard,
    Channel(mpsc::UnboundedSender<ProviderMessage>),
    Orchestrator {
        tx: mpsc::UnboundedSender<Msg>,
        idx: u32,
    },
}

/// Why an output chunk was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// The invoke did not ask for `stream: true`.
    #[error("the invoke did not ask for a streamed output")]
    NotStreaming,
    /// The final chunk was already sent.
    #[error("the final chunk was already sent")]
    Finished,
    /// Nobody listens any more (the run ended).
    #[error("the output stream is closed")]
    Closed,
}

/// Where a provider sends `acmp/streamChunk`s and `acmp/heartbeat`s; numbers chunks itself.
#[derive(Debug)]
pub struct OutputSink {
    target: SinkTarget,
    task_id: Arc<str>,
    streaming: bool,
    seq: u64,
    finished: bool,
}

impl OutputSink {
    pub(crate) fn orchestrator(
        tx: mpsc::UnboundedSender<Msg>,
        idx: u32,
        task_id: Arc<str>,
        streaming: bool,
    ) -> Self {
        Self {
            target: SinkTarget::Orchestrator { tx, idx },
            task_id,
            streaming,
            seq: 0,
            finished: false,
        }
    }

    /// Whether output chunks are expected (the invoke had `stream: true`).
    pub fn is_streaming(&self) -> bool {
        self.streaming
    }

    /// Sends the next output chunk; `is_final` marks the last one. After it, return the
    /// result with [`InvokeResult::streamed`] (or with the full output).
    pub fn send_chunk(&mut self, chunk: Payload, is_final: bool) -> Result<(), SinkError> {
        if !self.streaming {
            return Err(SinkError::NotStreaming);
        }
        if self.finished {
            return Err(SinkError::Finished);
        }
        self.finished = is_final;
        let seq = self.seq;
        self.seq += 1;
        let sent = match &self.target {
            SinkTarget::Discard => true,
            SinkTarget::Channel(tx) => tx
                .send(ProviderMessage::Chunk(StreamChunk {
                    task_id: self.task_id.to_string(),
                    seq,
                    chunk,
                    is_final,
                }))
                .is_ok(),
            SinkTarget::Orchestrator { tx, idx } => tx
                .send(Msg::Chunk {
                    idx: *idx,
                    chunk,
                    last: is_final,
                })
                .is_ok(),
        };
        if sent { Ok(()) } else { Err(SinkError::Closed) }
    }

    /// Reports liveness and progress (0.0–1.0). Heartbeats never extend the deadline.
    pub fn heartbeat(&self, progress: Option<f64>, detail: Option<String>) {
        match &self.target {
            SinkTarget::Discard => {}
            SinkTarget::Channel(tx) => {
                let _ = tx.send(ProviderMessage::Heartbeat(Heartbeat {
                    task_id: self.task_id.to_string(),
                    progress,
                    detail,
                }));
            }
            SinkTarget::Orchestrator { tx, idx } => {
                let _ = tx.send(Msg::Heartbeat {
                    idx: *idx,
                    progress,
                    detail,
                });
            }
        }
    }
}
