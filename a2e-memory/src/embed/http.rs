//! One JSON POST to an embeddings endpoint, sent with the client set-up every
//! A2E crate shares (`a2e-http`: reqwest on rustls, Mozilla's roots).

use std::sync::OnceLock;

use a2e_http::{ClientOptions, Pool, Redirects, Target};
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};

/// A parsed endpoint.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) url: Url,
}

impl Endpoint {
    /// `base_url` + `path`, checked: `http` or `https` with a host.
    pub(crate) fn parse(base_url: &str, path: &str) -> Result<Self, String> {
        let base = base_url.trim_end_matches('/');
        let url = Url::parse(&format!("{base}{path}"))
            .map_err(|e| format!("base_url is not a URL: {e}"))?;
        Target::of(&url).map_err(|e| format!("base_url: {e}"))?;
        Ok(Self { url })
    }
}

/// The client of every embedder: no redirects, connections kept for the next
/// batch.
fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            ClientOptions::default()
                .redirects(Redirects::None)
                .pool(Pool::Reuse)
                .user_agent(concat!("a2e-memory/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The status and at most `max_body` bytes of the body of one POST.
pub(crate) async fn post_json(
    endpoint: &Endpoint,
    bearer: Option<&str>,
    body: Vec<u8>,
    max_body: usize,
) -> Result<(u16, Vec<u8>), String> {
    let mut request = client()?
        .post(endpoint.url.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(key) = bearer {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|_| "the api key contains characters not allowed in a header".to_owned())?;
        value.set_sensitive(true);
        request = request.header(AUTHORIZATION, value);
    }
    let mut response = request.send().await.map_err(|e| a2e_http::describe(&e))?;
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("response body: {}", a2e_http::describe(&e)))?
    {
        if bytes.len().saturating_add(chunk.len()) > max_body {
            return Err(format!("response body (limit {max_body} bytes): larger"));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((status, bytes))
}
