//! The connection core every transport shares: the table of requests waiting
//! for answers, routing of incoming messages, push handlers, and failure of
//! everything pending when the connection ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use a2e_proto::{Message, Pong, Response, StreamType};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;

/// A handler of unsolicited messages.
pub(crate) type PushHandler = Arc<dyn Fn(&Message) + Send + Sync>;

/// The final answer to a request, or why there is none.
pub(crate) type Answer = Result<Message, ClientError>;

/// Where the answers to one request go.
struct Route {
    /// Events (`…/event` messages with this `req_id`), when the caller wants them.
    events: Option<mpsc::UnboundedSender<Message>>,
    /// The final answer; taken when it arrives.
    answer: Option<oneshot::Sender<Answer>>,
    /// Keep routing events after the answer (a process's output) until its end.
    sticky: bool,
    /// A sticky route's last event has come.
    finished: bool,
}

#[derive(Default)]
struct Table {
    routes: HashMap<String, Route>,
    /// Set once the connection has ended, with the reason.
    closed: Option<String>,
}

/// State shared by the client handle and the transport's tasks.
pub(crate) struct Shared {
    table: Mutex<Table>,
    push: RwLock<Vec<PushHandler>>,
    out: mpsc::Sender<Message>,
    /// Fires when the connection has ended.
    ended: CancellationToken,
    /// Fires when the client asks the transport to close.
    pub(crate) stop: CancellationToken,
    /// Who is at the other end, for messages and logs ("the host", or a
    /// plugin's name when a host speaks to its plugin process).
    peer: String,
}

/// What [`Shared::register`] hands the caller.
pub(crate) struct Registered {
    pub(crate) events: Option<mpsc::UnboundedReceiver<Message>>,
    pub(crate) answer: oneshot::Receiver<Answer>,
}

impl Shared {
    pub(crate) fn new(out: mpsc::Sender<Message>, peer: String) -> Arc<Self> {
        Arc::new(Self {
            table: Mutex::new(Table::default()),
            push: RwLock::new(Vec::new()),
            out,
            ended: CancellationToken::new(),
            stop: CancellationToken::new(),
            peer,
        })
    }

    /// Who is at the other end, for messages ("the host" unless named).
    pub(crate) fn peer(&self) -> &str {
        &self.peer
    }

    /// Fails request `id` at once with `error` (its answer could not be
    /// read); its events stop too.
    pub(crate) fn reject(&self, id: &str, error: ClientError) {
        let route = self.table().routes.remove(id);
        if let Some(answer) = route.and_then(|r| r.answer) {
            let _ = answer.send(Err(error));
        }
    }

    /// Fails every request still waiting for its answer with `error`,
    /// leaving the connection open (what the peer wrote could not be tied
    /// to one request). A process's output that is still streaming after
    /// its answer keeps its route.
    pub(crate) fn reject_waiting(&self, error: &ClientError) {
        let answers: Vec<oneshot::Sender<Answer>> = {
            let mut table = self.table();
            let mut answers = Vec::new();
            table.routes.retain(|_, route| match route.answer.take() {
                Some(answer) => {
                    answers.push(answer);
                    false
                }
                None => true,
            });
            answers
        };
        for answer in answers {
            let _ = answer.send(Err(error.clone()));
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for answers to request `id`; fails at once when the connection has ended.
    pub(crate) fn register(
        &self,
        id: &str,
        with_events: bool,
        sticky: bool,
    ) -> Result<Registered, ClientError> {
        let (answer_tx, answer) = oneshot::channel();
        let (events_tx, events) = if with_events {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let mut table = self.table();
        if let Some(reason) = &table.closed {
            return Err(ClientError::ConnectionClosed(reason.clone()));
        }
        table.routes.insert(
            id.to_owned(),
            Route {
                events: events_tx,
                answer: Some(answer_tx),
                sticky,
                finished: false,
            },
        );
        Ok(Registered { events, answer })
    }

    /// Forgets request `id` (its caller went away or gave up).
    pub(crate) fn unregister(&self, id: &str) {
        self.table().routes.remove(id);
    }

    /// Number of requests waiting for an answer or still streaming.
    pub(crate) fn pending(&self) -> usize {
        self.table().routes.len()
    }

    /// Sends a message to the host.
    pub(crate) async fn send(&self, msg: Message) -> Result<(), ClientError> {
        if let Some(reason) = self.closed_reason() {
            return Err(ClientError::ConnectionClosed(reason));
        }
        self.out.send(msg).await.map_err(|_| {
            ClientError::ConnectionClosed(
                self.closed_reason()
                    .unwrap_or_else(|| "the transport is gone".into()),
            )
        })
    }

    /// The reason the connection ended, if it has.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.table().closed.clone()
    }

    /// Fires when the connection has ended.
    pub(crate) fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    /// Adds a handler of unsolicited messages.
    pub(crate) fn add_push(&self, handler: PushHandler) {
        self.push
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(handler);
    }

    /// Routes one message from the host.
    pub(crate) fn deliver(&self, msg: Message) {
        if let Message::Ping(ping) = &msg {
            // Answer the host's liveness probe; drop the answer rather than block the reader.
            let _ = self.out.try_send(Pong::for_request(ping).into());
            return;
        }
        let msg = match self.route(msg) {
            None => return,
            Some(unrouted) => unrouted,
        };
        let handlers = self
            .push
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if handlers.is_empty() {
            tracing::debug!(r#type = msg.type_str(), "unsolicited message dropped");
        }
        for handler in handlers {
            handler(&msg);
        }
    }

    /// Hands `msg` to the request it answers; gives it back when none waits for it.
    fn route(&self, msg: Message) -> Option<Message> {
        // A message of a type this client does not know is neither an event
        // nor an answer, whatever its req_id names.
        if matches!(msg, Message::Unknown(_)) {
            return Some(msg);
        }
        let Some(req_id) = msg.req_id().filter(|id| !id.is_empty()).map(str::to_owned) else {
            return Some(msg);
        };
        let mut table = self.table();
        let Some(route) = table.routes.get_mut(&req_id) else {
            return Some(msg);
        };
        if msg.is_event() {
            let last = route.sticky
                && matches!(&msg, Message::ProcReadEvent(e) if e.stream_type == StreamType::KILLED);
            if let Some(events) = &route.events {
                // A receiver that was dropped just does not want events.
                let _ = events.send(msg);
            }
            if last {
                route.finished = true;
                if route.answer.is_none() {
                    table.routes.remove(&req_id);
                }
            }
            return None;
        }
        let Some(answer) = route.answer.take() else {
            // A second final answer to the same request.
            return Some(msg);
        };
        let keep = route.sticky
            && !route.finished
            && match &msg {
                Message::ProcSpawnResponse(r) => r.ok,
                _ => false,
            };
        if !keep {
            table.routes.remove(&req_id);
        }
        drop(table);
        let _ = answer.send(Ok(msg));
        None
    }

    /// Ends the connection: every request still waiting fails with `reason`.
    pub(crate) fn fail_all(&self, reason: &str) {
        let routes = {
            let mut table = self.table();
            if table.closed.is_none() {
                table.closed = Some(reason.to_owned());
            }
            std::mem::take(&mut table.routes)
        };
        if !routes.is_empty() {
            tracing::debug!(pending = routes.len(), "connection ended: {reason}");
        }
        let reason = self.closed_reason().unwrap_or_else(|| reason.to_owned());
        // Mark the connection ended first: whoever sees a failed request then
        // also sees `is_closed()`.
        self.ended.cancel();
        for (_, route) in routes {
            if let Some(answer) = route.answer {
                let _ = answer.send(Err(ClientError::ConnectionClosed(reason.clone())));
            }
        }
    }
}
