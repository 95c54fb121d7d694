//! The HTTP+SSE transport's sessions, by id: shared by the server state and the
//! HTTP routes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use super::limits::RateLimit;
use crate::session::Session;

/// An event on its way to a stream, with its id: the message's JSON text.
pub(crate) type Numbered = (u64, bytes::Bytes);

/// A stream attaching to a session: where to send, and the last event id it saw.
pub(crate) type Attach = (mpsc::Sender<Numbered>, Option<u64>);

/// HTTP sessions by id.
#[derive(Default)]
pub(crate) struct Registry(Mutex<HashMap<String, Arc<HttpSession>>>);

impl Registry {
    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    pub(crate) fn insert(&self, session: Arc<HttpSession>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.session.id().to_owned(), session);
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }
}

/// One HTTP session: the session, the way to attach a stream to it, its rate limit.
pub(crate) struct HttpSession {
    pub(crate) session: Arc<Session>,
    pub(crate) attach: mpsc::Sender<Attach>,
    pub(crate) limit: tokio::sync::Mutex<RateLimit>,
    /// A stream is attached (as far as the host knows: a stream whose
    /// connection died counts until the server notices).
    pub(crate) attached: std::sync::atomic::AtomicBool,
}

impl HttpSession {
    /// Whether an event stream is attached.
    pub(crate) fn stream_attached(&self) -> bool {
        self.attached.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub(crate) fn set_attached(&self, on: bool) {
        self.attached.store(on, std::sync::atomic::Ordering::SeqCst);
    }
}
