//! Where the updates of a subscribed resource go: a session's client
//! (`resources/subscribe`, before MCP 2026-07-28) or a `subscriptions/listen`
//! stream (2026-07-28), which tags each notification with its subscription.

use rmcp::service::SubscriptionSink;
use tokio_util::sync::CancellationToken;

use super::client::ClientLink;

/// Where `notifications/resources/updated` of one subscribed resource go.
#[derive(Debug, Clone)]
pub enum ResourceUpdates {
    /// A session's client, while its connection lasts.
    Session(ClientLink),
    /// A `subscriptions/listen` stream, until `ends` fires (the stream ended).
    Listen {
        /// The stream's sink (its filter applied, its id on every notification).
        sink: SubscriptionSink,
        /// Fires when the stream ends.
        ends: CancellationToken,
    },
}

impl ResourceUpdates {
    /// Sends `notifications/resources/updated` for `uri`; `false` when no
    /// one listens any more.
    pub async fn updated(&self, uri: &str) -> bool {
        match self {
            Self::Session(client) => client.resource_updated(uri).await,
            Self::Listen { sink, ends } => {
                !ends.is_cancelled() && sink.notify_resource_updated(uri).await.is_ok()
            }
        }
    }

    /// Whether no one listens any more.
    pub fn is_closed(&self) -> bool {
        match self {
            Self::Session(client) => client.is_closed(),
            Self::Listen { ends, .. } => ends.is_cancelled(),
        }
    }

    /// Ends when a stream ends (never for a session's client, whose end
    /// [`is_closed`](Self::is_closed) tells).
    pub async fn ended(&self) {
        match self {
            Self::Session(_) => std::future::pending().await,
            Self::Listen { ends, .. } => ends.cancelled().await,
        }
    }
}
