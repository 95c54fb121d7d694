//! The HTTP client of every OAuth request.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

use super::dpop::{DPOP, DPOP_NONCE, DpopKey, asks_nonce};

/// Most bytes of an OAuth response (metadata, registration, tokens).
pub(super) const MAX_OAUTH_BODY: usize = 1024 * 1024;

/// Most redirects an OAuth request follows (when it may follow any).
const MAX_OAUTH_REDIRECTS: usize = 5;

/// The HTTP client of every OAuth request, built by `a2e-http` as every
/// outgoing client of the workspace is (one that follows redirects, for the
/// requests that may, and one that does not). While a DPoP key is set, every
/// token request carries a proof of it (and is made again, once, with the
/// nonce the authorization server asks for).
pub struct OAuthHttp {
    follow: reqwest::Client,
    pub(super) stop: reqwest::Client,
    dpop: Mutex<Option<Arc<DpopKey>>>,
}

impl OAuthHttp {
    /// The two clients.
    pub fn new() -> Result<Self, a2e_http::HttpError> {
        let options = a2e_http::ClientOptions::default()
            .user_agent(concat!("a2e-mcp/", env!("CARGO_PKG_VERSION")));
        Ok(Self {
            follow: options
                .clone()
                .redirects(a2e_http::Redirects::Limited(MAX_OAUTH_REDIRECTS))
                .build()?,
            stop: options.build()?,
            dpop: Mutex::new(None),
        })
    }

    /// Binds the tokens of later token requests to `key`.
    pub fn set_dpop(&self, key: Option<Arc<DpopKey>>) {
        *self
            .dpop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = key;
    }

    /// Whether a DPoP key is set.
    pub(super) fn has_dpop(&self) -> bool {
        self.dpop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
    }

    /// The DPoP key for `request`: set, and `request` is a token request (a
    /// form with a `grant_type`).
    fn dpop_for(&self, parts: &axum::http::request::Parts, body: &[u8]) -> Option<Arc<DpopKey>> {
        let form = parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
        let grant = body.windows(11).any(|w| w == b"grant_type=");
        if parts.method != axum::http::Method::POST || !form || !grant {
            return None;
        }
        self.dpop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> OAuthHttpClientError {
    Box::new(e)
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let follow = !matches!(request.redirect_policy, OAuthHttpRedirectPolicy::Stop);
        Box::pin(self.send(request.request, follow, request.timeout, true))
    }
}

impl OAuthHttp {
    /// Sends `request` (following redirects when `follow`), bounded by
    /// `timeout` (30 s when none is given). With `again_for_nonce`, a token
    /// request the authorization server answers with `use_dpop_nonce` is
    /// sent again, once, with its nonce (a request whose body holds a
    /// single-use assertion is made anew by its caller instead).
    pub(super) async fn send(
        &self,
        request: axum::http::Request<Vec<u8>>,
        follow: bool,
        timeout: Option<Duration>,
        again_for_nonce: bool,
    ) -> Result<axum::http::Response<Vec<u8>>, OAuthHttpClientError> {
        {
            let client = if follow { &self.follow } else { &self.stop };
            let timeout = timeout.or(Some(Duration::from_secs(30)));
            let (parts, body) = request.into_parts();
            let url = reqwest::Url::parse(&parts.uri.to_string()).map_err(boxed)?;
            let dpop = self.dpop_for(&parts, &body);
            let mut retried = !again_for_nonce;
            loop {
                let mut req = reqwest::Request::new(parts.method.clone(), url.clone());
                *req.headers_mut() = parts.headers.clone();
                *req.body_mut() = Some(body.clone().into());
                *req.timeout_mut() = timeout;
                if let Some(key) = &dpop {
                    let proof = key
                        .proof("POST", url.as_str(), None)
                        .map_err(std::io::Error::other)
                        .map_err(boxed)?;
                    let proof = reqwest::header::HeaderValue::try_from(proof).map_err(boxed)?;
                    req.headers_mut().insert(DPOP, proof);
                }
                let response = client.execute(req).await.map_err(boxed)?;
                let status = response.status();
                let nonce = response
                    .headers()
                    .get(DPOP_NONCE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let mut builder = axum::http::Response::builder()
                    .status(status)
                    .version(response.version());
                for (name, value) in response.headers() {
                    builder = builder.header(name, value);
                }
                let body = read_body(response).await?;
                if let (Some(key), Some(nonce)) = (&dpop, &nonce) {
                    key.token_nonce(nonce);
                    let again = status == reqwest::StatusCode::BAD_REQUEST
                        && asks_nonce(&String::from_utf8_lossy(&body));
                    if again && !retried {
                        retried = true;
                        continue;
                    }
                }
                return builder.body(body).map_err(boxed);
            }
        }
    }
}

/// A response's body, at most [`MAX_OAUTH_BODY`] bytes.
async fn read_body(response: reqwest::Response) -> Result<Vec<u8>, OAuthHttpClientError> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(boxed)?;
        if body.len().saturating_add(chunk.len()) > MAX_OAUTH_BODY {
            return Err(boxed(std::io::Error::other(format!(
                "OAuth response larger than {MAX_OAUTH_BODY} bytes"
            ))));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
