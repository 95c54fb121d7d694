//! DPoP (RFC 9449, the MCP extension SEP-1932): tokens bound to a key of the
//! host's. The token request carries a proof of the key (added by
//! [`OAuthHttp`](super::OAuthHttp) to every token request while a key is
//! set), the authorization server binds the token to it (`token_type:
//! "DPoP"`), and every request to the server presents the token with the
//! `DPoP` scheme and a fresh proof bound to the request's method, URL and
//! token. A server that wants a nonce in the proofs says so with
//! `use_dpop_nonce` and a `DPoP-Nonce` header; the request is made again
//! with it, once.
//!
//! The key lives beside the token file (`NAME.dpop.p8`, mode 0600) and goes
//! with the token: a token without a key file is a bearer token.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::http::{HeaderName, HeaderValue};
use futures::stream::BoxStream;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::json;

use super::jws::{KeyError, SigningKey, jti, now, sha256_b64};

/// The header of a proof.
pub const DPOP: &str = "dpop";
/// The header a server gives its nonce in.
pub const DPOP_NONCE: &str = "dpop-nonce";

/// How long the request that learns a server's nonce may take.
const PROBE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A DPoP key with the nonces its servers asked for.
#[derive(Debug)]
pub struct DpopKey {
    key: SigningKey,
    /// The authorization server's nonce.
    token_nonce: Mutex<Option<String>>,
    /// The MCP server's nonce.
    server_nonce: Mutex<Option<String>>,
}

fn get(slot: &Mutex<Option<String>>) -> Option<String> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

fn set(slot: &Mutex<Option<String>>, nonce: &str) {
    *slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(nonce.to_owned());
}

impl DpopKey {
    /// A new key.
    pub fn generate() -> Result<Self, KeyError> {
        SigningKey::generate().map(Self::from)
    }

    /// The key kept beside `token_file`, if there is one.
    pub fn load(token_file: &Path) -> Result<Option<Arc<Self>>, KeyError> {
        match std::fs::read(key_file(token_file)) {
            Ok(der) => Ok(Some(Arc::new(SigningKey::from_pkcs8(&der)?.into()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Keeps the key beside `token_file`.
    pub fn save(&self, token_file: &Path) -> std::io::Result<()> {
        super::store::write_private(&key_file(token_file), self.key.pkcs8())
    }

    /// A proof for a `method` request to `url`, presenting `token` (none:
    /// a token request), with the nonce its server asked for.
    pub fn proof(&self, method: &str, url: &str, token: Option<&str>) -> Result<String, KeyError> {
        // The target URI without its query and fragment (RFC 9449 §4.2).
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let mut claims = serde_json::Map::new();
        claims.insert("jti".into(), json!(jti()));
        claims.insert("htm".into(), json!(method));
        claims.insert("htu".into(), json!(htu));
        claims.insert("iat".into(), json!(now()));
        let nonce = match token {
            Some(token) => {
                claims.insert("ath".into(), json!(sha256_b64(token)));
                get(&self.server_nonce)
            }
            None => get(&self.token_nonce),
        };
        if let Some(nonce) = nonce {
            claims.insert("nonce".into(), json!(nonce));
        }
        self.key.sign(
            json!({"typ": "dpop+jwt", "jwk": self.key.public_jwk()}),
            &claims.into(),
        )
    }

    /// Notes the authorization server's nonce.
    pub fn token_nonce(&self, nonce: &str) {
        set(&self.token_nonce, nonce);
    }
}

impl From<SigningKey> for DpopKey {
    fn from(key: SigningKey) -> Self {
        Self {
            key,
            token_nonce: Mutex::new(None),
            server_nonce: Mutex::new(None),
        }
    }
}

/// Where the DPoP key of the tokens in `token_file` is kept.
pub fn key_file(token_file: &Path) -> PathBuf {
    token_file.with_extension("dpop.p8")
}

/// Whether an error body or challenge asks for a nonce.
pub fn asks_nonce(text: &str) -> bool {
    text.contains("use_dpop_nonce")
}

/// The HTTP client of a mounted server whose token is DPoP-bound: the token
/// that [`AuthClient`](rmcp::transport::auth::AuthClient) hands down goes
/// out with the `DPoP` scheme and a proof. Without a key it passes through.
#[derive(Clone)]
pub struct Dpop {
    inner: reqwest::Client,
    key: Option<Arc<DpopKey>>,
}

type Stream = BoxStream<'static, Result<rmcp_sse::Sse, SseError>>;
type HttpError = StreamableHttpError<reqwest::Error>;

/// Whether `result` is a server's demand for a nonce.
fn nonce_asked<T>(result: &Result<T, HttpError>) -> bool {
    matches!(result, Err(e) if e.auth_challenge().is_some_and(asks_nonce))
}

impl Dpop {
    /// `inner`, with `key` (none: bearer tokens).
    pub fn new(inner: reqwest::Client, key: Option<Arc<DpopKey>>) -> Self {
        Self { inner, key }
    }

    /// The token and headers of one request.
    fn present(
        &self,
        method: &str,
        uri: &str,
        token: Option<String>,
        mut headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(Option<String>, HashMap<HeaderName, HeaderValue>), HttpError> {
        let (Some(key), Some(token)) = (&self.key, &token) else {
            return Ok((token, headers));
        };
        let bad = |e: String| HttpError::Auth(AuthError::InternalError(format!("DPoP: {e}")));
        let proof = key
            .proof(method, uri, Some(token))
            .map_err(|e| bad(e.to_string()))?;
        let value = |v: String| HeaderValue::try_from(v).map_err(|e| bad(e.to_string()));
        headers.insert(
            axum::http::header::AUTHORIZATION,
            value(format!("DPoP {token}"))?,
        );
        headers.insert(HeaderName::from_static(DPOP), value(proof)?);
        Ok((None, headers))
    }

    /// Learns the server's nonce after its demand for one: a harmless
    /// `ping` with a proof draws the `DPoP-Nonce` header (the challenge
    /// itself reaches this layer without its headers). `true` when a new
    /// nonce was learnt and the request is worth making again.
    async fn learned_nonce(
        &self,
        uri: &str,
        token: Option<&str>,
        headers: &HashMap<HeaderName, HeaderValue>,
    ) -> bool {
        let (Some(key), Some(token)) = (&self.key, token) else {
            return false;
        };
        let Ok(proof) = key.proof("POST", uri, Some(token)) else {
            return false;
        };
        let mut probe = self
            .inner
            .post(uri)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("DPoP {token}"))
            .header(DPOP, proof)
            .body(r#"{"jsonrpc":"2.0","id":"dpop-nonce","method":"ping"}"#);
        for (name, value) in headers {
            let own = ["mcp-name", "mcp-method"];
            if !own.iter().any(|o| name.as_str().eq_ignore_ascii_case(o)) {
                probe = probe.header(name, value);
            }
        }
        let probe = probe.header("mcp-method", "ping").timeout(PROBE_LIMIT);
        let Ok(response) = probe.send().await else {
            return false;
        };
        let nonce = response
            .headers()
            .get(DPOP_NONCE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match nonce {
            Some(nonce) if get(&key.server_nonce).as_deref() != Some(&nonce) => {
                set(&key.server_nonce, &nonce);
                true
            }
            _ => false,
        }
    }
}

impl StreamableHttpClient for Dpop {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let send = |message: ClientJsonRpcMessage| {
            let headers = custom_headers.clone();
            let (uri, session_id, token) = (uri.clone(), session_id.clone(), auth_header.clone());
            async move {
                let (token, headers) = self.present("POST", &uri, token, headers)?;
                self.inner
                    .post_message_with_response_limits(
                        uri, message, session_id, token, headers, limits,
                    )
                    .await
            }
        };
        let first = send(message.clone()).await;
        if nonce_asked(&first)
            && self
                .learned_nonce(&uri, auth_header.as_deref(), &custom_headers)
                .await
        {
            return send(message).await;
        }
        first
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let (token, headers) = self.present("DELETE", &uri, auth_header, custom_headers)?;
        self.inner
            .delete_session(uri, session_id, token, headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Stream, HttpError> {
        let send = || {
            let (token, headers) =
                self.present("GET", &uri, auth_header.clone(), custom_headers.clone())?;
            Ok::<_, HttpError>(self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                headers,
            ))
        };
        let first = send()?.await;
        if nonce_asked(&first)
            && self
                .learned_nonce(&uri, auth_header.as_deref(), &custom_headers)
                .await
        {
            return send()?.await;
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn claims(proof: &str) -> serde_json::Value {
        let part = proof.split('.').nth(1).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn proofs_bind_method_url_token_and_nonce_and_the_key_is_kept_privately() {
        let key = DpopKey::generate().unwrap();
        let a = claims(
            &key.proof("POST", "https://s.test/mcp?x=1#f", Some("tok"))
                .unwrap(),
        );
        assert_eq!(a["htm"], "POST");
        assert_eq!(a["htu"], "https://s.test/mcp");
        assert_eq!(a["ath"], sha256_b64("tok"));
        assert!(a.get("nonce").is_none());
        let b = claims(
            &key.proof("POST", "https://s.test/mcp", Some("tok"))
                .unwrap(),
        );
        assert_ne!(a["jti"], b["jti"], "every proof is fresh");
        key.token_nonce("n-as");
        set(&key.server_nonce, "n-rs");
        let t = claims(&key.proof("POST", "https://as.test/token", None).unwrap());
        assert_eq!(t["nonce"], "n-as");
        assert!(t.get("ath").is_none());
        assert_eq!(
            claims(&key.proof("GET", "https://s.test/mcp", Some("tok")).unwrap())["nonce"],
            "n-rs"
        );

        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("svc.json");
        assert!(DpopKey::load(&tokens).unwrap().is_none());
        key.save(&tokens).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(key_file(&tokens))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let back = DpopKey::load(&tokens).unwrap().unwrap();
        assert_eq!(back.key.public_jwk(), key.key.public_jwk());
    }
}
