//! The HTTP client setup the A2E crates share, so that every outgoing request
//! is made the same way.
//!
//! * [`ClientOptions`] / [`client`]: a `reqwest` client on rustls with the
//!   `ring` provider and the webpki roots ([`tls_config`], built once per
//!   process), with the [`Redirects`] it follows itself, its connection reuse
//!   ([`Pool`]), whether the proxy variables apply, and its `User-Agent`.
//! * [`HostAllowList`]: the hosts (and ports) requests may go to, and the
//!   [`Target`] a URL connects to.
//! * [`RedirectPolicy`]: redirects followed hop by hop, each hop checked
//!   against an allow-list; a redirect elsewhere comes back unfollowed.
//! * [`Backoff`] / [`retry_after`]: the wait between attempts, exponential
//!   with a cap, a server's `Retry-After` honoured within its own cap.
//! * [`describe`] / [`error_chain`]: a failed request in words (`connect to
//!   …`, `TLS handshake with … failed`).
//!
//! This crate depends on no other A2E crate.
//!
//! ```
//! use std::time::Duration;
//!
//! use a2e_http::{Backoff, ClientOptions, HostAllowList, Pool, RedirectPolicy};
//! use reqwest::{Method, StatusCode, Url};
//!
//! // A client that follows no redirects by itself and opens a connection per request.
//! let client = ClientOptions::default()
//!     .pool(Pool::None)
//!     .user_agent("example/1.0")
//!     .build()?;
//!
//! // Requests may go to api.example.com (any port) and to port 8080 of the loopback.
//! let allow = HostAllowList::new(["api.example.com", "127.0.0.1:8080"]);
//! assert!(allow.permits(&Url::parse("https://API.example.com/v1/chat")?));
//! assert!(!allow.permits(&Url::parse("http://127.0.0.1:9090/")?));
//! let refused = allow.check(&Url::parse("http://169.254.169.254/latest")?);
//! assert_eq!(
//!     refused.unwrap_err().to_string(),
//!     "host `169.254.169.254` is not in the HTTP allow-list"
//! );
//!
//! // Redirects are followed only while they stay on the list.
//! let policy = RedirectPolicy::new(allow, 5);
//! let from = Url::parse("https://api.example.com/v1/old")?;
//! let hop = policy.next_hop(StatusCode::SEE_OTHER, &Method::POST, &from, Some("new"), 0);
//! let hop = hop.expect("same host");
//! assert_eq!(hop.url.as_str(), "https://api.example.com/v1/new");
//! assert_eq!(hop.method, Method::GET, "303 continues as GET");
//! let away = Some("http://169.254.169.254/");
//! assert!(policy.next_hop(StatusCode::FOUND, &Method::GET, &from, away, 0).is_none());
//!
//! // Waits between attempts: 0.5 s, 1 s, 2 s, … at most 8 s; Retry-After at most 30 s.
//! let backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(8))
//!     .with_max_retry_after(Duration::from_secs(30));
//! assert_eq!(backoff.delay(2), Duration::from_secs(2));
//! assert_eq!(backoff.delay(10), Duration::from_secs(8));
//! assert_eq!(backoff.delay_after(0, Some(Duration::from_secs(600))), Duration::from_secs(30));
//! # let _ = client;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod allow;
mod backoff;
mod client;
mod error;
mod redirect;

pub use allow::{HostAllowList, Target};
pub use backoff::{Backoff, retry_after};
pub use client::{ClientOptions, Pool, Redirects, client, tls_config};
pub use error::{HttpError, describe, error_chain, is_tls_failure};
pub use redirect::{Followed, Hop, RedirectPolicy};
