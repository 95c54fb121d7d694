//! The live view: a read-only web page at `/ui` on the WebSocket and HTTP
//! listeners of `a2e serve`, showing the sessions open (agent, transport,
//! calls in flight; a stdio session served beside the listener too), the
//! durable runs (running and recent) drawn by
//! `a2e-graph` with each node's state updated as the run goes, a node's
//! detail (input, output, error, attempts, duration, trace id), the event
//! log with filters, and the catalog of tools and skills with their schemas.
//!
//! | route | what |
//! |---|---|
//! | `GET /ui` | the page (`GET /ui?token=…` once: sets a cookie, redirects) |
//! | `GET /ui/app.js`, `/ui/app.css` | its script and style |
//! | `GET /ui/api/overview` | sessions, recent runs, whether the journal and telemetry are on |
//! | `GET /ui/api/catalog` | tools and skills with their schemas |
//! | `GET /ui/api/runs/{id}` | one run: nodes, records, events, its graph as SVG |
//! | `GET /ui/events` | Server-Sent Events: the host's live feed and the sessions |
//!
//! **Access.** Every route needs the listener's bearer token when one is
//! configured (401 otherwise), the same as the wire. A browser cannot send
//! a header when it opens a page, so `/ui?token=TOKEN` (checked like the
//! header) answers with an `HttpOnly`, `SameSite=Strict` cookie for `/ui`
//! and a redirect to `/ui`, which drops the token from the address bar.
//! The loopback rule of the listener holds: a non-loopback address needs a
//! token.
//!
//! **Safety.** Everything is embedded in the binary (no CDN, no network at
//! run time). Every response carries a strict Content-Security-Policy (no
//! inline script or style, nothing from other origins, no framing); the
//! script shows every value with `textContent` and copies the server's SVG
//! element by element through an allow-list.
//!
//! **Actions.** Approving or denying a call that waits for a decision,
//! cancelling a run and forking one from a node are `POST`s under `/ui/api/runs/{id}/` (`actions.rs`),
//! each refused without the token (401), from another origin (the `Origin`
//! header must name this listener: 403), or without the CSRF token of the
//! page's session (`X-CSRF-Token`, the HMAC of the page's session cookie
//! under a key of this process, fetched from `GET /ui/api/csrf`: 403).
//!
//! Runs come from the host's run journal (`[journal]`), or from the
//! bounded memory a host keeps with it off
//! ([`keep_in_memory`](a2e_host_runs::keep_in_memory)); without either the
//! runs panel says so. A node's detail shows what it was called with and
//! its call's span as journaled with its start. Live updates come from the
//! host's [`LiveFeed`](a2e_host_core::live::LiveFeed).

mod actions;
mod api;
mod stream;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde::Deserialize;

use crate::session::token_matches;
use crate::transport::net::NetState;

pub use api::node_states;

/// The cookie that carries the token for the page's own requests.
const COOKIE: &str = "a2e_ui";

/// The cookie of a page's session, to which its CSRF token is bound.
const SESSION_COOKIE: &str = "a2e_ui_session";

/// A fresh key for the CSRF tokens of this process's pages.
pub(crate) fn fresh_key() -> ring::hmac::Key {
    let rng = ring::rand::SystemRandom::new();
    ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &rng).unwrap_or_else(|_| {
        // No randomness from the system: a key from the clock and the
        // process id still differs per process (and the token check still
        // needs the page's session cookie).
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        ring::hmac::Key::new(ring::hmac::HMAC_SHA256, seed.as_bytes())
    })
}

/// The value of cookie `name` in `headers`.
pub(crate) fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

/// The Content-Security-Policy of every response of the view.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const PAGE: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

/// Bytes of the page, its script and its style together.
pub const PAGE_BYTES: usize = PAGE.len() + SCRIPT.len() + STYLE.len();

/// The view's routes.
pub fn routes() -> Router<Arc<NetState>> {
    Router::new()
        .route("/ui", get(page))
        .route("/ui/", get(page))
        .route("/ui/app.js", get(script))
        .route("/ui/app.css", get(style))
        .route("/ui/api/overview", get(api::overview))
        .route("/ui/api/catalog", get(api::catalog))
        .route("/ui/api/runs/{id}", get(api::run))
        .route("/ui/events", get(stream::events))
        .route("/ui/api/csrf", get(actions::csrf))
        .route("/ui/api/waiting", get(actions::waiting))
        .route("/ui/api/runs/{id}/approve", post(actions::approve))
        .route("/ui/api/runs/{id}/deny", post(actions::deny))
        .route("/ui/api/runs/{id}/cancel", post(actions::cancel))
        .route("/ui/api/runs/{id}/fork", post(actions::fork))
}

/// Whether the request may see the view: the bearer header, or the cookie
/// `/ui?token=` set (always, when no token is configured).
pub(crate) fn allowed(state: &NetState, headers: &HeaderMap) -> bool {
    if state.authorized(headers) {
        return true;
    }
    let expected = &state.host.config().auth_token;
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .filter_map(|b64| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(b64)
                .ok()
        })
        .filter_map(|bytes| String::from_utf8(bytes).ok())
        .any(|presented| token_matches(expected, &presented))
}

/// The headers every response of the view carries.
pub(crate) fn guarded(mut resp: Response) -> Response {
    let headers = resp.headers_mut();
    let set = |headers: &mut HeaderMap, name, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        CONTENT_SECURITY_POLICY,
    );
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    if !headers.contains_key(header::CACHE_CONTROL) {
        set(headers, header::CACHE_CONTROL, "no-store");
    }
    resp
}

/// 401, with how to get in.
pub(crate) fn unauthorized() -> Response {
    guarded(
        (
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token (open /ui?token=TOKEN once)\n",
        )
            .into_response(),
    )
}

#[derive(Deserialize)]
struct PageQuery {
    token: Option<String>,
}

/// `GET /ui`.
async fn page(
    State(state): State<Arc<NetState>>,
    headers: HeaderMap,
    Query(query): Query<PageQuery>,
) -> Response {
    if let Some(token) = query.token {
        let expected = &state.host.config().auth_token;
        if !expected.is_empty() && !token_matches(expected, &token) {
            return unauthorized();
        }
        let mut resp = (StatusCode::SEE_OTHER, [(header::LOCATION, "/ui")]).into_response();
        if !expected.is_empty() {
            let value = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.as_bytes());
            let cookie = format!("{COOKIE}={value}; Path=/ui; HttpOnly; SameSite=Strict");
            if let Ok(cookie) = HeaderValue::from_str(&cookie) {
                resp.headers_mut().insert(header::SET_COOKIE, cookie);
            }
        }
        return guarded(resp);
    }
    let mut resp = asset(&state, &headers, PAGE, "text/html; charset=utf-8");
    // A page without a session gets one: its CSRF token is bound to it.
    let mut id = [0u8; 16];
    if resp.status() == StatusCode::OK
        && cookie(&headers, SESSION_COOKIE).is_none()
        && ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut id).is_ok()
    {
        let value = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id);
        let cookie = format!("{SESSION_COOKIE}={value}; Path=/ui; HttpOnly; SameSite=Strict");
        if let Ok(cookie) = HeaderValue::from_str(&cookie) {
            resp.headers_mut().append(header::SET_COOKIE, cookie);
        }
    }
    resp
}

/// `GET /ui/app.js`.
async fn script(State(state): State<Arc<NetState>>, headers: HeaderMap) -> Response {
    asset(&state, &headers, SCRIPT, "text/javascript; charset=utf-8")
}

/// `GET /ui/app.css`.
async fn style(State(state): State<Arc<NetState>>, headers: HeaderMap) -> Response {
    asset(&state, &headers, STYLE, "text/css; charset=utf-8")
}

fn asset(
    state: &NetState,
    headers: &HeaderMap,
    body: &'static str,
    kind: &'static str,
) -> Response {
    if !allowed(state, headers) {
        return unauthorized();
    }
    guarded(([(header::CONTENT_TYPE, kind)], body).into_response())
}
