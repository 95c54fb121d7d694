//! [`Call`]: a request in flight — its events as a [`Stream`], then its result.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use a2e_proto::{ChainEvent, InvokeEvent, Message, ProcReadEvent, SkillEvent, ToolEvent};
use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Sleep;

use crate::conn::{Answer, Shared};
use crate::error::{ClientError, ClientResult};

/// An event type a [`Call`] yields, taken out of a [`Message`].
pub trait FromMessage: Sized {
    /// The event, when `msg` is one of this type.
    fn from_message(msg: Message) -> Option<Self>;
}

macro_rules! from_message {
    ($($t:ident),+) => {$(
        impl FromMessage for $t {
            fn from_message(msg: Message) -> Option<Self> {
                match msg {
                    Message::$t(m) => Some(m),
                    _ => None,
                }
            }
        }
    )+};
}

from_message!(
    ToolEvent,
    SkillEvent,
    ChainEvent,
    ProcReadEvent,
    InvokeEvent
);

impl FromMessage for Message {
    fn from_message(msg: Message) -> Option<Self> {
        Some(msg)
    }
}

/// A call taken apart: id, events, answer, deadline, limit.
pub(crate) type Parts = (
    String,
    Option<mpsc::UnboundedReceiver<Message>>,
    oneshot::Receiver<Answer>,
    Pin<Box<Sleep>>,
    Duration,
);

/// Turns the final answer into the caller's type.
pub(crate) type MapAnswer<R> = fn(Message) -> ClientResult<R>;

/// A request in flight.
///
/// A `Call` is a [`Stream`] of the request's events (`E`: [`ToolEvent`],
/// [`SkillEvent`], [`ChainEvent`]…), in the order the host sent them; the
/// stream ends when the final answer has come. [`Call::finish`] then gives the
/// result. Both stop at the call's deadline. Dropping a `Call` forgets the
/// request (a late answer is ignored).
#[must_use = "a call does nothing useful unless its result is awaited"]
pub struct Call<E, R> {
    id: String,
    shared: Arc<Shared>,
    events: Option<mpsc::UnboundedReceiver<Message>>,
    answer: oneshot::Receiver<Answer>,
    limit: Duration,
    deadline: Pin<Box<Sleep>>,
    map: MapAnswer<R>,
    _event: PhantomData<fn() -> E>,
}

impl<E: FromMessage, R> Call<E, R> {
    pub(crate) fn new(
        id: String,
        shared: Arc<Shared>,
        events: Option<mpsc::UnboundedReceiver<Message>>,
        answer: oneshot::Receiver<Answer>,
        limit: Duration,
        map: MapAnswer<R>,
    ) -> Self {
        Self {
            id,
            shared,
            events,
            answer,
            limit,
            deadline: Box::pin(tokio::time::sleep(limit)),
            map,
            _event: PhantomData,
        }
    }

    /// The request's id (`req_id` of its events and answer).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The next event, or `None` once the answer has come (or the deadline passed).
    pub async fn next_event(&mut self) -> Option<E> {
        self.next().await
    }

    /// Waits for the final answer. Events not yet read are dropped.
    pub async fn finish(mut self) -> ClientResult<R> {
        self.events = None;
        let answer = tokio::select! {
            biased;
            answer = &mut self.answer => answer,
            () = &mut self.deadline => return Err(ClientError::Timeout(self.limit)),
        };
        match answer {
            Ok(Ok(Message::ErrorMessage(e))) => Err(ClientError::from_wire(e)),
            Ok(Ok(msg)) => (self.map)(msg),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ClientError::ConnectionClosed(
                self.shared
                    .closed_reason()
                    .unwrap_or_else(|| "the request was dropped".into()),
            )),
        }
    }

    /// Calls `on_event` for every event as it arrives, then returns the result.
    pub async fn finish_with(mut self, mut on_event: impl FnMut(E)) -> ClientResult<R> {
        while let Some(event) = self.next().await {
            on_event(event);
        }
        self.finish().await
    }

    /// Keeps the route alive after this handle is gone (a process's output).
    pub(crate) fn into_parts(mut self) -> Parts {
        let id = std::mem::take(&mut self.id);
        let events = self.events.take();
        let (_, dummy) = oneshot::channel();
        let answer = std::mem::replace(&mut self.answer, dummy);
        let deadline = std::mem::replace(
            &mut self.deadline,
            Box::pin(tokio::time::sleep(Duration::ZERO)),
        );
        (id, events, answer, deadline, self.limit)
    }
}

impl<E: FromMessage, R> Stream for Call<E, R> {
    type Item = E;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E>> {
        let this = self.get_mut();
        let Some(events) = this.events.as_mut() else {
            return Poll::Ready(None);
        };
        loop {
            match events.poll_recv(cx) {
                Poll::Ready(Some(msg)) => {
                    if let Some(event) = E::from_message(msg) {
                        return Poll::Ready(Some(event));
                    }
                }
                Poll::Ready(None) => {
                    this.events = None;
                    return Poll::Ready(None);
                }
                Poll::Pending => {
                    if this.deadline.as_mut().poll(cx).is_ready() {
                        this.events = None;
                        return Poll::Ready(None);
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl<E, R> Drop for Call<E, R> {
    fn drop(&mut self) {
        if !self.id.is_empty() {
            self.shared.unregister(&self.id);
        }
    }
}

impl<E, R> std::fmt::Debug for Call<E, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}
