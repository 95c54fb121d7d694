//! The sessions a server has open, for the live view: each session's id,
//! transport and opening time. An entry lives as long as its [`Listed`]
//! guard, which the transport holds for the session's life.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::session::Session;

/// The open sessions, by id.
#[derive(Default)]
pub(crate) struct OpenSessions(Arc<Mutex<BTreeMap<String, Entry>>>);

struct Entry {
    session: Weak<Session>,
    transport: &'static str,
    opened_ms: u64,
}

/// One open session as the live view shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionView {
    /// The session id.
    pub id: String,
    /// The agent it acts for (empty before its handshake).
    pub agent: String,
    /// `ws`, `http` or `stdio`.
    pub transport: &'static str,
    /// Requests in flight.
    pub in_flight: usize,
    /// When it opened (ms since the Unix epoch).
    pub opened_ms: u64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl OpenSessions {
    /// Lists `session` (of `transport`) until the returned guard drops.
    pub(crate) fn list(&self, session: &Arc<Session>, transport: &'static str) -> Listed {
        let id = session.id().to_owned();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                id.clone(),
                Entry {
                    session: Arc::downgrade(session),
                    transport,
                    opened_ms: now_ms(),
                },
            );
        Listed {
            id,
            map: Arc::downgrade(&self.0),
        }
    }

    /// Every open session, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<SessionView> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<SessionView> = map
            .iter()
            .filter_map(|(id, e)| {
                let session = e.session.upgrade()?;
                Some(SessionView {
                    id: id.clone(),
                    agent: session.host().identity(id).agent_id.to_string(),
                    transport: e.transport,
                    in_flight: session.in_flight(),
                    opened_ms: e.opened_ms,
                })
            })
            .collect();
        out.sort_by(|a, b| a.opened_ms.cmp(&b.opened_ms).then(a.id.cmp(&b.id)));
        out
    }
}

/// Keeps a session listed; unlists it when dropped.
pub(crate) struct Listed {
    id: String,
    map: Weak<Mutex<BTreeMap<String, Entry>>>,
}

impl Drop for Listed {
    fn drop(&mut self) {
        if let Some(map) = self.map.upgrade() {
            map.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.id);
        }
    }
}
