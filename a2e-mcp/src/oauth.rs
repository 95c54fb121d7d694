//! OAuth 2.1 for Streamable HTTP servers, as the MCP authorization spec gives
//! it, on rmcp's `auth` module: protected resource metadata discovery (from
//! the server's `WWW-Authenticate` challenge, then the path-based and root
//! well-known locations), authorization server metadata (OAuth and OpenID
//! Connect, with the 2025-03-26 fallbacks), client registration (a
//! pre-registered client, a client ID metadata document, or dynamic
//! registration), PKCE authorization code with a loopback redirect, scope
//! selection and step-up, refresh.
//!
//! Tokens live in a file of their own per server (mode 0600, see
//! [`FileCredentialStore`]); they never appear in logs, events or errors.
//! The first consent needs a person: `a2e mcp login SERVER` prints the
//! authorization URL (and opens it with `$BROWSER` when that is set), waits
//! for the redirect on a loopback port and stores the tokens. A mounted
//! server without tokens fails to start with an error saying to log in,
//! unless `$BROWSER` is set (then the same flow runs inline).
//!
//! A machine client needs no person: with `grant = "client_credentials"`
//! (the MCP extension for it, SEP-1046) the host gets its token from the
//! authorization server with its own `client_id` and secret (HTTP Basic when
//! the server advertises only that, else in the request body), and gets a new
//! one the same way when it expires.

use std::path::Path;
use std::time::Duration;

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, OAuthState,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::error::McpError;

mod config;
mod dpop;
mod grants;
mod http;
mod jws;
mod legacy;
mod probe;
mod store;

pub use config::{ClientAuth, Grant, IdpConfig, OAuthConfig, default_token_file};
pub use dpop::{Dpop, DpopKey};
pub use http::OAuthHttp;
pub use probe::challenge;
use probe::scopes_to_ask;
pub use store::FileCredentialStore;

/// How long the loopback redirect is waited for.
pub const CONSENT_LIMIT: Duration = Duration::from_secs(300);

fn oauth_http(server: &str) -> Result<Arc<OAuthHttp>, McpError> {
    OAuthHttp::new()
        .map(Arc::new)
        .map_err(|e| failed(server, "HTTP client", a2e_http::error_chain(&e)))
}

/// A new DPoP key when `oauth` wants tokens bound to one at the
/// authorization server of `metadata` (see [`OAuthConfig::dpop`]).
fn dpop_key(
    oauth: &OAuthConfig,
    metadata: &rmcp::transport::auth::AuthorizationMetadata,
) -> Result<Option<Arc<DpopKey>>, jws::KeyError> {
    let offered = || {
        metadata
            .additional_fields
            .get("dpop_signing_alg_values_supported")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|algs| algs.iter().any(|a| a == "ES256"))
    };
    if oauth.dpop.unwrap_or_else(offered) {
        DpopKey::generate().map(|k| Some(Arc::new(k)))
    } else {
        Ok(None)
    }
}

/// Keeps `key` beside `token_file` when the stored token is bound to it
/// (`token_type` DPoP), and removes an older key otherwise.
async fn keep_dpop_key(key: Option<&DpopKey>, token_file: &Path) -> Result<(), String> {
    use oauth2::TokenResponse;
    use rmcp::transport::auth::CredentialStore;
    let stored = FileCredentialStore::new(token_file.to_path_buf())
        .load()
        .await
        .map_err(|e| e.to_string())?;
    let bound = stored
        .and_then(|c| c.token_response)
        .is_some_and(|t| t.token_type().as_ref().eq_ignore_ascii_case("dpop"));
    match key {
        Some(key) if bound => key.save(token_file).map_err(|e| e.to_string()),
        _ => match std::fs::remove_file(dpop::key_file(token_file)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.to_string()),
            _ => Ok(()),
        },
    }
}

fn failed(server: &str, what: &str, e: impl std::fmt::Display) -> McpError {
    McpError::Init {
        server: server.to_owned(),
        reason: format!("OAuth {what}: {e}"),
    }
}

/// What requests to an authorized server go out with.
pub struct Authorization {
    /// The authorization manager, with the stored credentials loaded.
    pub manager: AuthorizationManager,
    /// Whether there were stored credentials.
    pub stored: bool,
    /// The DPoP key the stored token is bound to (none: a bearer token).
    pub dpop: Option<Arc<DpopKey>>,
}

/// The [`Authorization`] of `url` from what `token_file` holds.
pub async fn manager(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    token_file: &Path,
) -> Result<Authorization, McpError> {
    let http = oauth_http(server)?;
    let dpop = DpopKey::load(token_file).map_err(|e| failed(server, "DPoP key", e))?;
    http.set_dpop(dpop.clone());
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, http)
        .await
        .map_err(|e| failed(server, "setup", e))?;
    manager.set_credential_store(FileCredentialStore::new(token_file.to_path_buf()));
    let _ = oauth;
    let stored = manager
        .initialize_from_store()
        .await
        .map_err(|e| failed(server, "token store", e))?;
    Ok(Authorization {
        manager,
        stored,
        dpop,
    })
}

/// Where the authorization URL goes: printed, and handed to `$BROWSER`.
pub fn show_url(server: &str, url: &str) {
    eprintln!("To authorize a2e for the MCP server `{server}`, open:\n  {url}");
    if let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        let _ = std::process::Command::new(browser)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// Whether an authorization can run without `a2e mcp login` (`$BROWSER` set).
pub fn can_consent_inline() -> bool {
    std::env::var_os("BROWSER").is_some_and(|b| !b.is_empty())
}

/// Runs the authorization code flow for `url`: discovery from `challenge`
/// (with the one 2025-03-26 leniency of `oauth/legacy.rs`),
/// registration, the authorization URL shown ([`show_url`]), the redirect
/// awaited on a loopback port, the code exchanged and the tokens stored in
/// `token_file`.
pub async fn authorize(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    token_file: &Path,
    challenge: Option<String>,
) -> Result<(), McpError> {
    match (oauth.grant, oauth.client_auth) {
        (Grant::AuthorizationCode, _) => {}
        (Grant::ClientCredentials, ClientAuth::ClientSecret) => {
            // rmcp's exchange: bearer tokens, so no key of an earlier grant stays.
            client_credentials(server, url, oauth, token_file).await?;
            return keep_dpop_key(None, token_file)
                .await
                .map_err(|e| failed(server, "DPoP key", e));
        }
        _ => {
            let http = oauth_http(server)?;
            return grants::machine(server, url, oauth, token_file, challenge.as_deref(), http)
                .await;
        }
    }
    let listener = TcpListener::bind(("127.0.0.1", oauth.redirect_port))
        .await
        .map_err(|e| failed(server, "redirect listener", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| failed(server, "redirect listener", e))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let http = oauth_http(server)?;
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, http.clone())
        .await
        .map_err(|e| failed(server, "setup", e))?;
    manager.set_credential_store(FileCredentialStore::new(token_file.to_path_buf()));
    // What an earlier authorization left: its scopes are asked again with the
    // challenged ones (the union, SEP-2350), and its authorization server is
    // known, so that a server that moved to another one is registered with
    // anew (SEP-2352).
    if let Err(e) = manager.initialize_from_store().await {
        tracing::debug!(server, "stored OAuth credentials not used: {e}");
    }
    let metadata = match manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
    {
        Ok(resolution) => resolution.metadata,
        Err(e @ AuthError::AuthorizationServerMismatch { .. }) => legacy::same_origin_metadata(url)
            .await
            .map_err(|why| failed(server, "authorization", format!("{e} ({why})")))?,
        Err(e) => return Err(failed(server, "authorization", e)),
    };
    let dpop = dpop_key(oauth, &metadata).map_err(|e| failed(server, "DPoP key", e))?;
    http.set_dpop(dpop.clone());
    manager.set_metadata(metadata);
    let mut request = AuthorizationRequest::new(redirect).with_client_name("a2e");
    let scopes = scopes_to_ask(oauth, token_file, challenge.as_deref()).await;
    if !scopes.is_empty() {
        request = request.with_scopes(scopes.iter().map(String::as_str));
    }
    if let Some(id) = &oauth.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = client_secret(server, oauth)? {
            request = request.with_client_secret(secret);
        }
    }
    if let Some(doc) = &oauth.client_metadata_url {
        request = request.with_client_metadata_url(doc.clone());
    }
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| failed(server, "authorization", e))?;
    show_url(server, session.get_authorization_url());
    let (code, csrf, issuer) = tokio::time::timeout(CONSENT_LIMIT, wait_for_redirect(&listener))
        .await
        .map_err(|_| failed(server, "consent", "no redirect came back within 5 minutes"))?
        .map_err(|e| failed(server, "redirect", e))?;
    session
        .handle_callback_with_issuer(&code, &csrf, issuer.as_deref())
        .await
        .map_err(|e| failed(server, "token exchange", e))?;
    keep_dpop_key(dpop.as_deref(), token_file)
        .await
        .map_err(|e| failed(server, "DPoP key", e))
}

/// The pre-registered client's secret, read from `client_secret_env`.
fn client_secret(server: &str, oauth: &OAuthConfig) -> Result<Option<String>, McpError> {
    let Some(var) = &oauth.client_secret_env else {
        return Ok(None);
    };
    std::env::var(var)
        .map(Some)
        .map_err(|_| failed(server, "client secret", format!("`{var}` is not set")))
}

/// The client credentials grant for `url`: metadata discovery, then a token
/// request with the client's id and secret for the resource `url`; the token
/// is stored in `token_file`.
async fn client_credentials(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    token_file: &Path,
) -> Result<(), McpError> {
    let what = "client credentials";
    let client_id = oauth.client_id.clone().ok_or_else(|| {
        failed(
            server,
            what,
            "`grant = \"client_credentials\"` needs `client_id`",
        )
    })?;
    let client_secret = client_secret(server, oauth)?.ok_or_else(|| {
        failed(
            server,
            what,
            "`grant = \"client_credentials\"` needs `client_secret_env`",
        )
    })?;
    let mut state = OAuthState::new_with_oauth_http_client(url, oauth_http(server)?)
        .await
        .map_err(|e| failed(server, "setup", e))?;
    if let OAuthState::Unauthorized(manager) = &mut state {
        manager.set_credential_store(FileCredentialStore::new(token_file.to_path_buf()));
    }
    let config = ClientCredentialsConfig::ClientSecret {
        client_id,
        client_secret,
        scopes: oauth.scopes.clone(),
        resource: Some(url.to_owned()),
    };
    state
        .authenticate_client_credentials(config)
        .await
        .map_err(|e| failed(server, what, e))
}

/// Serves the loopback redirect once: `(code, state, iss)`.
async fn wait_for_redirect(
    listener: &TcpListener,
) -> Result<(String, String, Option<String>), String> {
    loop {
        let (mut socket, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 8192];
        let mut read = 0;
        while read < buf.len() {
            let n = socket
                .read(buf.get_mut(read..).unwrap_or_default())
                .await
                .map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            read += n;
            if buf
                .get(..read)
                .is_some_and(|b| b.windows(4).any(|w| w == b"\r\n\r\n"))
            {
                break;
            }
        }
        let head = String::from_utf8_lossy(buf.get(..read).unwrap_or_default()).into_owned();
        let target = head
            .lines()
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .unwrap_or("/");
        let parsed = rmcp::transport::auth::AuthorizationCallback::from_redirect_url(&format!(
            "http://127.0.0.1{target}"
        ));
        let (status, text) = match &parsed {
            Ok(_) => ("200 OK", "a2e is authorized. You can close this window."),
            Err(_) => ("400 Bad Request", "This is not an authorization redirect."),
        };
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        );
        let _ = socket.write_all(response.as_bytes()).await;
        let _ = socket.shutdown().await;
        if let Ok(cb) = parsed {
            return Ok((cb.code, cb.csrf_token, cb.issuer));
        }
    }
}

/// Keeps [`AuthorizationSession`] in this module's vocabulary for docs.
#[doc(hidden)]
pub type Session = AuthorizationSession;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn machine_grants_name_what_they_miss_before_any_request() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        // Nothing listens on port 9: each error comes from the configuration.
        let url = "http://127.0.0.1:9/mcp";
        let cases = [
            (
                serde_json::json!({"grant": "client_credentials", "client_auth": "private_key_jwt",
                    "client_id": "c"}),
                "private_key_env",
            ),
            (
                serde_json::json!({"grant": "client_credentials", "client_auth": "private_key_jwt",
                    "client_id": "c", "private_key_env": "A2E_TEST_NO_SUCH_KEY"}),
                "A2E_TEST_NO_SUCH_KEY",
            ),
            (serde_json::json!({"grant": "jwt_bearer"}), "assertion_env"),
            (
                serde_json::json!({"grant": "jwt_bearer", "assertion_file": "/nonexistent/jwt"}),
                "/nonexistent/jwt",
            ),
            (
                serde_json::json!({"grant": "enterprise", "client_id": "c"}),
                "[oauth.idp]",
            ),
            (
                serde_json::json!({"grant": "enterprise", "client_id": "c", "idp": {
                    "issuer": "https://idp.test", "token_endpoint": "https://idp.test/token",
                    "client_id": "i", "id_token_env": "A2E_TEST_NO_ID_TOKEN"}}),
                "A2E_TEST_NO_ID_TOKEN",
            ),
        ];
        for (config, named) in cases {
            let oauth: OAuthConfig = serde_json::from_value(config.clone()).unwrap();
            assert!(!oauth.needs_consent(), "{config}");
            let e = authorize("svc", url, &oauth, &file, None)
                .await
                .unwrap_err()
                .to_string();
            assert!(e.contains(named), "{config}: {e}");
            assert!(!file.exists());
        }
    }

    #[tokio::test]
    async fn client_credentials_need_an_id_and_a_secret_and_no_consent() {
        let oauth: OAuthConfig =
            serde_json::from_value(serde_json::json!({"grant": "client_credentials"})).unwrap();
        assert_eq!(oauth.grant, Grant::ClientCredentials);
        assert!(!oauth.needs_consent());
        assert!(OAuthConfig::default().needs_consent());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        let url = "http://127.0.0.1:9/mcp";
        let e = authorize("svc", url, &oauth, &file, None)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("needs `client_id`"), "{e}");
        let oauth = OAuthConfig {
            client_id: Some("machine".into()),
            client_secret_env: Some("A2E_TEST_SECRET_THAT_IS_NOT_SET".into()),
            ..oauth
        };
        let e = authorize("svc", url, &oauth, &file, None)
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("`A2E_TEST_SECRET_THAT_IS_NOT_SET` is not set"),
            "{e}"
        );
        let bad = serde_json::from_value::<OAuthConfig>(serde_json::json!({"grant": "password"}))
            .unwrap_err();
        assert!(bad.to_string().contains("password"), "{bad}");
    }

    #[tokio::test]
    async fn the_redirect_is_read_from_the_loopback() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let browser = tokio::spawn(async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET /favicon.ico HTTP/1.1\r\n\r\n")
                .await
                .unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out).await;
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET /callback?code=abc&state=xyz HTTP/1.1\r\nhost: x\r\n\r\n")
                .await
                .unwrap();
            let mut ok = String::new();
            let _ = s.read_to_string(&mut ok).await;
            (out, ok)
        });
        let got = wait_for_redirect(&listener).await.unwrap();
        assert_eq!(got, ("abc".into(), "xyz".into(), None));
        let (bad, ok) = browser.await.unwrap();
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    }
}
