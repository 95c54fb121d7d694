//! The HTTP client of every OAuth request.

use std::time::Duration;

use futures::StreamExt;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

/// Most bytes of an OAuth response (metadata, registration, tokens).
pub(super) const MAX_OAUTH_BODY: usize = 1024 * 1024;

/// Most redirects an OAuth request follows (when it may follow any).
const MAX_OAUTH_REDIRECTS: usize = 5;

/// The HTTP client of every OAuth request, built by `a2e-http` as every
/// outgoing client of the workspace is (one that follows redirects, for the
/// requests that may, and one that does not).
pub struct OAuthHttp {
    follow: reqwest::Client,
    pub(super) stop: reqwest::Client,
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
        })
    }
}

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> OAuthHttpClientError {
    Box::new(e)
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let timeout = request.timeout;
            let mut req = reqwest::Request::try_from(request.request).map_err(boxed)?;
            *req.timeout_mut() = timeout.or(Some(Duration::from_secs(30)));
            let response = client.execute(req).await.map_err(boxed)?;
            let mut builder = axum::http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
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
            builder.body(body).map_err(boxed)
        })
    }
}
