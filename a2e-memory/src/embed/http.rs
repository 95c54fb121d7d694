//! One JSON POST over HTTP/1.1, plain or TLS (rustls, Mozilla's roots).

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::Uri;
use hyper::client::conn::http1;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue, USER_AGENT};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

/// A parsed endpoint.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) uri: Uri,
    host: String,
    port: u16,
    tls: bool,
}

impl Endpoint {
    /// `base_url` + `/embeddings`, checked.
    pub(crate) fn parse(base_url: &str, path: &str) -> Result<Self, String> {
        let base = base_url.trim_end_matches('/');
        let uri: Uri = format!("{base}{path}")
            .parse()
            .map_err(|e| format!("base_url is not a URL: {e}"))?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            Some(other) => return Err(format!("base_url scheme `{other}` is not http or https")),
            None => return Err("base_url has no scheme (http:// or https://)".into()),
        };
        let host = uri.host().ok_or("base_url has no host")?.to_owned();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        Ok(Self {
            uri,
            host,
            port,
            tls,
        })
    }
}

fn tls_connector() -> Result<TlsConnector, String> {
    let roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// The status and at most `max_body` bytes of the body of one POST.
pub(crate) async fn post_json(
    endpoint: &Endpoint,
    bearer: Option<&str>,
    body: Vec<u8>,
    max_body: usize,
) -> Result<(u16, Bytes), String> {
    let tcp = TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(|e| format!("connect to {}:{}: {e}", endpoint.host, endpoint.port))?;
    let _ = tcp.set_nodelay(true);
    if endpoint.tls {
        let name = ServerName::try_from(endpoint.host.clone())
            .map_err(|e| format!("tls server name: {e}"))?;
        let stream = tls_connector()?
            .connect(name, tcp)
            .await
            .map_err(|e| format!("tls handshake with {}: {e}", endpoint.host))?;
        exchange(stream, endpoint, bearer, body, max_body).await
    } else {
        exchange(tcp, endpoint, bearer, body, max_body).await
    }
}

async fn exchange<S>(
    stream: S,
    endpoint: &Endpoint,
    bearer: Option<&str>,
    body: Vec<u8>,
    max_body: usize,
) -> Result<(u16, Bytes), String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("http handshake: {e}"))?;
    let driver = tokio::spawn(conn);
    let host = match (endpoint.tls, endpoint.port) {
        (true, 443) | (false, 80) => endpoint.host.clone(),
        (_, port) => format!("{}:{port}", endpoint.host),
    };
    let mut req = hyper::Request::post(endpoint.uri.clone())
        .header(HOST, host)
        .header(CONTENT_TYPE, "application/json")
        .header(
            USER_AGENT,
            concat!("a2e-memory/", env!("CARGO_PKG_VERSION")),
        );
    if let Some(key) = bearer {
        let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|_| "the api key contains characters not allowed in a header".to_owned())?;
        value.set_sensitive(true);
        req = req.header(AUTHORIZATION, value);
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("request: {e}"))?;
    let result = async {
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| format!("send: {e}"))?;
        let status = resp.status().as_u16();
        let bytes = Limited::new(resp.into_body(), max_body)
            .collect()
            .await
            .map_err(|e| format!("response body (limit {max_body} bytes): {e}"))?
            .to_bytes();
        Ok((status, bytes))
    }
    .await;
    driver.abort();
    result
}
