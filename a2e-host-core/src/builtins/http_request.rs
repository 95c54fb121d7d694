//! `http_request`: one HTTP exchange with an allowed host.
//!
//! Sent with the client set-up every A2E crate shares (`a2e-http`: reqwest on
//! rustls with the ring provider and Mozilla's root certificates, no client
//! certificates, no proxy from the environment). The URL's host must be in
//! `http.allow_hosts`: an entry is a host name or IP address (any port), or
//! `host:port` / `[v6]:port` (that port only); comparison ignores case.
//! Redirects (301, 302, 303, 307, 308) are followed up to [`MAX_REDIRECTS`]
//! times while the target is `http`/`https` on an allowed host; a redirect
//! elsewhere is not followed and comes back as the response it is (3xx with
//! its `location` header). 303, and 301/302 after a POST, continue as GET
//! without a body. The response body is read up to `http.body_max_bytes`.
//! With telemetry on, the request carries the call's W3C trace context
//! (`traceparent`, `tracestate`) unless the caller set `traceparent` itself.

use std::sync::OnceLock;
use std::time::Duration;

use a2e_http::{ClientOptions, HostAllowList, HttpError, Pool, RedirectPolicy, Redirects};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::hints::ToolHints;
use super::text::{self, Encoding};
use super::tool::{Builtin, Done, Env, Spec};
use crate::error::{HostError, HostResult};
use crate::plugin::CallContext;

/// An HTTP method `http_request` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
#[allow(missing_docs)]
pub enum HttpMethod {
    #[default]
    Get,
    Post,
    Put,
    Delete,
    Patch,
    Head,
}

impl HttpMethod {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Head => "HEAD",
        }
    }
}

/// `http_request`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HttpRequestArgs {
    /// http:// or https:// URL.
    pub url: String,
    /// HTTP method (default GET).
    pub method: Option<HttpMethod>,
    /// Request headers (name → value).
    pub headers: Option<Map<String, Value>>,
    /// Request body.
    pub body: Option<String>,
    /// Seconds for the whole exchange (default: host setting).
    pub timeout: Option<u64>,
    /// `text` (default: UTF-8, invalid bytes replaced and labelled utf-8-lossy) or `base64` (exact bytes).
    pub encoding: Option<Encoding>,
}

/// `http_request`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct HttpRequestOutput {
    /// HTTP status
    pub status: u16,
    /// Response headers (lower-case names)
    pub headers: Map<String, Value>,
    /// Response body (capped)
    pub body: String,
    /// utf-8, utf-8-lossy or base64
    #[schemars(extend("x-unlisted" = true))]
    pub encoding: &'static str,
    /// The URL that answered, after redirects
    #[schemars(extend("x-unlisted" = true))]
    pub url: String,
    /// Redirects followed
    #[schemars(extend("x-unlisted" = true))]
    pub redirects: usize,
    /// The body was cut at the cap
    #[schemars(extend("x-unlisted" = true))]
    pub truncated: bool,
}

/// The `http_request` tool.
pub(crate) struct HttpRequest;

impl Builtin for HttpRequest {
    const SPEC: Spec = Spec {
        name: "http_request",
        description: "Make an HTTP request to an allowed host and return status, headers and body",
        tags: &["network", "http"],
        idempotent: false,
        // A PUT or DELETE changes what the server holds.
        hints: ToolHints::new("HTTP request").destructive().open_world(),
    };

    type Args = HttpRequestArgs;
    type Output = HttpRequestOutput;

    async fn run(
        env: &Env,
        args: HttpRequestArgs,
        ctx: &CallContext,
    ) -> HostResult<Done<HttpRequestOutput>> {
        http_request(env, args, ctx).await
    }
}

/// Most redirects followed for one request.
pub const MAX_REDIRECTS: usize = 5;

/// Request headers the tool sets itself; values given for them are ignored.
const MANAGED_HEADERS: &[&str] = &["host", "content-length", "transfer-encoding", "connection"];

const USER_AGENT: &str = concat!("a2e-host/", env!("CARGO_PKG_VERSION"));

/// Whether `host` (as in a URL, IPv6 in brackets or not) on `port` is allowed
/// by the entries of `http.allow_hosts`.
pub fn host_allowed(allow: &[String], host: &str, port: u16) -> bool {
    HostAllowList::new(allow).allows(host, port)
}

/// The one client of the tool: it follows no redirect by itself (the policy
/// checks every hop) and keeps no idle connection past a call.
fn client() -> HostResult<&'static reqwest::Client> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            ClientOptions::default()
                .redirects(Redirects::None)
                .pool(Pool::None)
                .user_agent(USER_AGENT)
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| HostError::Runtime(e.clone()))
}

/// The URL, or the argument error naming what is wrong with it.
fn parse_url(url: &str, allow: &HostAllowList) -> HostResult<Url> {
    let url = Url::parse(url).map_err(|e| HostError::invalid_argument("url", e))?;
    match allow.check(&url) {
        Ok(_) => Ok(url),
        Err(e @ HttpError::NotAllowed { .. }) => Err(HostError::Denied(e.to_string())),
        Err(e) => Err(HostError::invalid_argument("url", e)),
    }
}

async fn read_body(resp: &mut reqwest::Response, cap: usize) -> HostResult<(Vec<u8>, bool)> {
    let mut buf: Vec<u8> = Vec::new();
    while let Some(data) = resp.chunk().await.map_err(|e| {
        HostError::Tool(format!(
            "request to {} failed: reading the body failed: {}",
            resp.url(),
            a2e_http::describe(&e)
        ))
    })? {
        let room = cap.saturating_sub(buf.len());
        if data.len() > room {
            buf.extend_from_slice(data.get(..room).unwrap_or_default());
            return Ok((buf, true));
        }
        buf.extend_from_slice(&data);
    }
    Ok((buf, false))
}

fn header_map_json(headers: &HeaderMap) -> Map<String, Value> {
    let mut out: Map<String, Value> = Map::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match out.get_mut(name.as_str()) {
            Some(Value::String(existing)) => {
                existing.push_str(", ");
                existing.push_str(&value);
            }
            _ => {
                out.insert(name.as_str().to_owned(), Value::String(value));
            }
        }
    }
    out
}

fn request_headers(headers: Option<&Map<String, Value>>) -> HostResult<HeaderMap> {
    let Some(map) = headers else {
        return Ok(HeaderMap::new());
    };
    let mut out = HeaderMap::new();
    let mut violations = Vec::new();
    for (name, value) in map {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                violations.push(format!("headers.{name}: expected a string"));
                continue;
            }
        };
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&text),
        ) {
            (Ok(n), Ok(v)) => {
                if !MANAGED_HEADERS.contains(&n.as_str()) {
                    out.append(n, v);
                }
            }
            _ => violations.push(format!("headers.{name}: not a valid header")),
        }
    }
    if violations.is_empty() {
        Ok(out)
    } else {
        Err(HostError::schema(violations))
    }
}

/// The call's W3C trace context as `traceparent` / `tracestate` headers
/// (the `execute_tool http_request` span's), unless the caller gave a
/// `traceparent` of its own: the server can join the trace.
fn trace_headers(headers: &mut HeaderMap) {
    if headers.contains_key("traceparent") {
        return;
    }
    if let Some(trace) = a2e_telemetry::TraceContext::current() {
        trace.to_headers(headers);
    }
}

async fn http_request(
    config: &Env,
    args: HttpRequestArgs,
    ctx: &CallContext,
) -> HostResult<Done<HttpRequestOutput>> {
    let allow = HostAllowList::new(&config.http.allow_hosts);
    let url = parse_url(&args.url, &allow)?;
    let method_name = args.method.unwrap_or_default().as_str();
    let method = Method::from_bytes(method_name.as_bytes())
        .map_err(|e| HostError::invalid_argument("method", e))?;
    let mut headers = request_headers(args.headers.as_ref())?;
    trace_headers(&mut headers);
    let base64 = args.encoding == Some(Encoding::Base64);
    let timeout_secs = args
        .timeout
        .filter(|t| *t > 0)
        .unwrap_or(config.http.timeout_secs);
    let mut timeout = Duration::from_secs(timeout_secs.clamp(1, a2e_chain::MAX_TIMEOUT_SECS));
    if let Some(left) = ctx.remaining() {
        timeout = timeout.min(left);
    }
    let cap = config.http.body_max_bytes;
    let client = client()?;
    let request = client
        .request(method, url.clone())
        .headers(headers)
        .body(args.body.unwrap_or_default())
        .build()
        .map_err(|e| HostError::invalid_argument("url", a2e_http::error_chain(&e)))?;
    let policy = RedirectPolicy::new(allow, MAX_REDIRECTS);

    let exchange = async {
        let followed = policy.send(client, request).await.map_err(|e| {
            let to = e.url().unwrap_or(&url);
            HostError::Tool(format!(
                "request to {to} failed: {}",
                a2e_http::describe(&e)
            ))
        })?;
        let mut response = followed.response;
        let headers = header_map_json(response.headers());
        let (bytes, truncated) = read_body(&mut response, cap).await?;
        Ok::<_, HostError>((response, headers, bytes, truncated, followed.redirects))
    };

    let (response, headers, bytes, truncated, redirects) = tokio::select! {
        done = tokio::time::timeout(timeout, exchange) => match done {
            Ok(result) => result?,
            Err(_) => return Err(HostError::Timeout(timeout.as_secs_f64().ceil() as u64)),
        },
        _ = ctx.cancel.cancelled() => return Err(HostError::Cancelled),
    };
    let status = response.status();
    let final_url = response.url().to_string();
    let (content, encoding) = text::encode(&bytes, base64);
    let summary = format!("{method_name} {final_url} → {status}");
    let data = HttpRequestOutput {
        status: status.as_u16(),
        headers,
        body: content,
        encoding,
        url: final_url,
        redirects,
        truncated,
    };
    Ok(Done::new(data).summary(summary).truncated(truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn allow_list_matches_host_and_optional_port() {
        let list = allow(&["Example.com", "127.0.0.1:8080", "[::1]", "::2"]);
        assert!(host_allowed(&list, "example.com", 443));
        assert!(host_allowed(&list, "EXAMPLE.COM.", 80));
        assert!(host_allowed(&list, "127.0.0.1", 8080));
        assert!(!host_allowed(&list, "127.0.0.1", 8081));
        assert!(host_allowed(&list, "[::1]", 1));
        assert!(host_allowed(&list, "::2", 1));
        assert!(!host_allowed(&list, "sub.example.com", 80));
        assert!(!host_allowed(&list, "", 80));
        assert!(!host_allowed(&[], "example.com", 80));
    }

    #[test]
    fn urls_are_http_or_https_on_an_allowed_host() {
        let list = HostAllowList::new(["h.example", "::1"]);
        let code = |url: &str| parse_url(url, &list).unwrap_err().code();
        assert_eq!(code("ftp://h.example/x").as_str(), "schema_violation");
        assert_eq!(code("not a url").as_str(), "schema_violation");
        assert_eq!(code("https://elsewhere.example/").as_str(), "tool_denied");
        assert!(parse_url("https://H.example/", &list).is_ok());
        assert!(parse_url("http://[::1]:9/", &list).is_ok());
    }
}
