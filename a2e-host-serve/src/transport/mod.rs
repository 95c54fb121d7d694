//! Transports: how sessions reach agents.
//!
//! Imports run one way: `http` and `ws` use the shared server state of `net`
//! (which holds the HTTP session table of `http_sessions` and the pacing of
//! `limits`, and the list of open sessions of `open_sessions`); [`routes`]
//! here composes the two protocols' routes (the live view's join them in
//! `a2e_host::compose`, above both).

pub mod http;
mod http_sessions;
mod limits;
pub mod net;
mod open_sessions;
pub mod stdio;
pub mod ws;

pub use open_sessions::SessionView;

use std::sync::Arc;

use axum::Router;

use net::{NetState, Protocols};

/// The routes of the enabled protocols, waiting for their state.
pub fn routes(state: &NetState, protocols: Protocols) -> Router<Arc<NetState>> {
    let mut router = Router::new();
    if protocols.ws {
        router = router.merge(ws::routes());
    }
    if protocols.http {
        router = router.merge(http::routes(state));
    }
    if protocols.ws || protocols.http {
        router = router.route("/metrics", axum::routing::get(net::metrics));
    }
    router
}
