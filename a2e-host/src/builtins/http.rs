//! `http_request`: one HTTP/1.1 exchange with an allowed host.
//!
//! Built on hyper's HTTP/1 client connection over a tokio TCP stream; `https`
//! goes through rustls (ring provider, Mozilla's root certificates from
//! `webpki-roots`, no client certificates). The URL's host must be in
//! `http.allow_hosts`: an entry is a host name or IP address (any port), or
//! `host:port` / `[v6]:port` (that port only); comparison ignores case.
//! Redirects (301, 302, 303, 307, 308) are followed up to [`MAX_REDIRECTS`]
//! times while the target is `http`/`https` on an allowed host; a redirect
//! elsewhere is not followed and comes back as the response it is (3xx with
//! its `location` header). 303, and 301/302 after a POST, continue as GET
//! without a body. The response body is read up to `http.body_max_bytes`.
//! With telemetry on, the request carries the call's W3C trace context
//! (`traceparent`, `tracestate`) unless the caller set `traceparent` itself.

use std::error::Error as StdError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_util::task::AbortOnDropHandle;

use super::args::*;
use super::text;
use crate::config::HostConfig;
use crate::error::{HostError, HostResult};
use crate::plugin::{CallContext, ToolOutput};

/// Most redirects followed for one request.
pub const MAX_REDIRECTS: usize = 5;

/// Request headers the tool sets itself; values given for them are ignored.
const MANAGED_HEADERS: &[&str] = &["host", "content-length", "transfer-encoding", "connection"];

const USER_AGENT: &str = concat!("a2e-host/", env!("CARGO_PKG_VERSION"));

fn bare_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// An allow-list entry as `(host, port)`.
fn split_entry(entry: &str) -> (String, Option<u16>) {
    let entry = entry.trim();
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return (bare_host(host), port);
    }
    match entry.split_once(':') {
        Some((host, port)) if !port.contains(':') => match port.parse() {
            Ok(port) => (bare_host(host), Some(port)),
            Err(_) => (bare_host(entry), None),
        },
        _ => (bare_host(entry), None),
    }
}

/// Whether `host` (as in a URL, IPv6 in brackets or not) on `port` is allowed.
pub fn host_allowed(allow: &[String], host: &str, port: u16) -> bool {
    let host = bare_host(host);
    !host.is_empty()
        && allow.iter().any(|entry| {
            let (h, p) = split_entry(entry);
            h == host && p.is_none_or(|p| p == port)
        })
}

struct Target {
    uri: Uri,
    https: bool,
    host: String,
    port: u16,
}

fn target(uri: Uri) -> Result<Target, String> {
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        Some(other) => return Err(format!("scheme `{other}` is not supported (http, https)")),
        None => return Err("the URL has no scheme (http, https)".into()),
    };
    let host = uri
        .host()
        .map(bare_host)
        .filter(|h| !h.is_empty())
        .ok_or("the URL has no host")?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    Ok(Target {
        uri,
        https,
        host,
        port,
    })
}

fn redirect_uri(base: &Uri, location: &str) -> Option<Uri> {
    if let Ok(uri) = location.parse::<Uri>()
        && uri.scheme().is_some()
        && uri.authority().is_some()
    {
        return Some(uri);
    }
    let scheme = base.scheme_str()?;
    let authority = base.authority()?.as_str();
    let text = if let Some(rest) = location.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if location.starts_with('/') {
        format!("{scheme}://{authority}{location}")
    } else {
        let path = base.path();
        let dir = path.rfind('/').and_then(|i| path.get(..=i)).unwrap_or("/");
        format!("{scheme}://{authority}{dir}{location}")
    };
    text.parse().ok()
}

fn error_chain(e: &(dyn StdError + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

fn tls_connector() -> Result<TlsConnector, String> {
    static CONFIG: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
            ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
                .map_err(|e| format!("TLS is not available: {e}"))
        })
        .clone()
        .map(TlsConnector::from)
}

type Sent = (Response<Incoming>, AbortOnDropHandle<()>);

async fn send_on<T>(io: T, req: Request<Full<Bytes>>) -> Result<Sent, String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| error_chain(&e))?;
    let driver = AbortOnDropHandle::new(tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "http connection ended with an error");
        }
    }));
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| error_chain(&e))?;
    Ok((resp, driver))
}

async fn send(
    target: &Target,
    method: &Method,
    headers: &[(HeaderName, HeaderValue)],
    body: Bytes,
) -> Result<Sent, String> {
    let authority = target
        .uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_else(|| target.host.clone());
    let path = target
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let mut builder = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(header::HOST, authority)
        .header(header::USER_AGENT, USER_AGENT);
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    let req = builder
        .body(Full::new(body))
        .map_err(|e| format!("invalid request: {e}"))?;
    let tcp = TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("cannot connect to {}:{}: {e}", target.host, target.port))?;
    if target.https {
        let server = ServerName::try_from(target.host.clone())
            .map_err(|e| format!("invalid TLS server name `{}`: {e}", target.host))?;
        let tls = tls_connector()?
            .connect(server, tcp)
            .await
            .map_err(|e| format!("TLS handshake with {} failed: {e}", target.host))?;
        send_on(TokioIo::new(tls), req).await
    } else {
        send_on(TokioIo::new(tcp), req).await
    }
}

async fn read_body(resp: Response<Incoming>, cap: usize) -> Result<(Vec<u8>, bool), String> {
    let mut body = resp.into_body();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the body failed: {}", error_chain(&e)))?;
        if let Ok(data) = frame.into_data() {
            let room = cap.saturating_sub(buf.len());
            if data.len() > room {
                buf.extend_from_slice(data.get(..room).unwrap_or_default());
                return Ok((buf, true));
            }
            buf.extend_from_slice(&data);
        }
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

fn request_headers(
    headers: Option<&Map<String, Value>>,
) -> HostResult<Vec<(HeaderName, HeaderValue)>> {
    let Some(map) = headers else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
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
                    out.push((n, v));
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
fn trace_headers(headers: &mut Vec<(HeaderName, HeaderValue)>) {
    if headers
        .iter()
        .any(|(name, _)| name.as_str() == "traceparent")
    {
        return;
    }
    let Some(trace) = a2e_telemetry::TraceContext::current() else {
        return;
    };
    headers.retain(|(name, _)| name.as_str() != "tracestate");
    trace.inject(|name, value| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.push((HeaderName::from_static(name), value));
        }
    });
}

/// Runs `http_request`: `{status, headers, body, encoding, url, redirects}`.
pub(crate) async fn http_request(
    config: &HostConfig,
    args: HttpRequestArgs,
    ctx: &CallContext,
) -> HostResult<ToolOutput> {
    let url = args.url.as_str();
    let uri: Uri = url
        .parse()
        .map_err(|e| HostError::schema(vec![format!("url: {e}")]))?;
    let first = target(uri).map_err(|e| HostError::schema(vec![format!("url: {e}")]))?;
    if !host_allowed(&config.http.allow_hosts, &first.host, first.port) {
        return Err(HostError::Denied(format!(
            "host `{}` is not in the HTTP allow-list",
            first.host
        )));
    }
    let method_name = args.method.unwrap_or_default().as_str();
    let method = Method::from_bytes(method_name.as_bytes())
        .map_err(|e| HostError::schema(vec![format!("method: {e}")]))?;
    let mut headers = request_headers(args.headers.as_ref())?;
    trace_headers(&mut headers);
    let body = Bytes::from(args.body.unwrap_or_default());
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
    let allow = &config.http.allow_hosts;

    let exchange = async {
        let mut current = first;
        let mut method = method;
        let mut body = body;
        let mut redirects = 0usize;
        loop {
            let (resp, _driver) = send(&current, &method, &headers, body.clone())
                .await
                .map_err(|e| HostError::Tool(format!("request to {} failed: {e}", current.uri)))?;
            let status = resp.status();
            let next = if status.is_redirection() && redirects < MAX_REDIRECTS {
                resp.headers()
                    .get(header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| redirect_uri(&current.uri, l))
                    .and_then(|u| target(u).ok())
            } else {
                None
            };
            let follow = matches!(
                status,
                StatusCode::MOVED_PERMANENTLY
                    | StatusCode::FOUND
                    | StatusCode::SEE_OTHER
                    | StatusCode::TEMPORARY_REDIRECT
                    | StatusCode::PERMANENT_REDIRECT
            );
            if let (true, Some(next)) = (follow, next) {
                if host_allowed(allow, &next.host, next.port) {
                    if status == StatusCode::SEE_OTHER
                        || (method == Method::POST
                            && matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND))
                    {
                        if method != Method::HEAD {
                            method = Method::GET;
                        }
                        body = Bytes::new();
                    }
                    redirects += 1;
                    current = next;
                    continue;
                }
                tracing::warn!(host = %next.host, "redirect to a host outside the allow-list not followed");
            }
            let headers = header_map_json(resp.headers());
            let (bytes, truncated) = read_body(resp, cap)
                .await
                .map_err(|e| HostError::Tool(format!("request to {} failed: {e}", current.uri)))?;
            return Ok::<_, HostError>((status, headers, bytes, truncated, current.uri, redirects));
        }
    };

    let (status, headers, bytes, truncated, final_uri, redirects) = tokio::select! {
        done = tokio::time::timeout(timeout, exchange) => match done {
            Ok(result) => result?,
            Err(_) => return Err(HostError::Timeout(timeout.as_secs_f64().ceil() as u64)),
        },
        _ = ctx.cancel.cancelled() => return Err(HostError::Cancelled),
    };
    let (content, encoding) = text::encode(&bytes, base64);
    Ok(ToolOutput {
        data: json!({
            "status": status.as_u16(),
            "headers": headers,
            "body": content,
            "encoding": encoding,
            "url": final_uri.to_string(),
            "redirects": redirects,
            "truncated": truncated,
        }),
        summary: Value::String(format!("{method_name} {final_uri} → {status}")),
        truncated,
        exit_code: None,
    })
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
    fn redirect_locations_resolve_against_the_base() {
        let base: Uri = "http://h:1/a/b?q".parse().unwrap();
        let r = |l: &str| redirect_uri(&base, l).unwrap().to_string();
        assert_eq!(r("/x"), "http://h:1/x");
        assert_eq!(r("c"), "http://h:1/a/c");
        assert_eq!(r("//other/p"), "http://other/p");
        assert_eq!(r("https://z/p"), "https://z/p");
    }

    #[test]
    fn only_http_and_https() {
        assert!(target("ftp://h/x".parse().unwrap()).is_err());
        let t = target("https://H.example/".parse().unwrap()).unwrap();
        assert!(t.https);
        assert_eq!((t.host.as_str(), t.port), ("h.example", 443));
        let t = target("http://[::1]:9/".parse().unwrap()).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9));
    }
}
