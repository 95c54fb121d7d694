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

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use futures::StreamExt;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, CredentialStore, OAuthHttpClient, OAuthHttpClientError,
    OAuthHttpClientFuture, OAuthHttpRedirectPolicy, OAuthHttpRequest, OAuthState,
    StoredCredentials,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::error::McpError;

mod legacy;
mod probe;

pub use probe::challenge;
use probe::scopes_to_ask;

/// How long the loopback redirect is waited for.
pub const CONSENT_LIMIT: Duration = Duration::from_secs(300);

/// How the host gets its tokens for a server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person's consent in a browser (PKCE authorization code).
    #[default]
    AuthorizationCode,
    /// The host's own client credentials (`client_id` and the secret in
    /// `client_secret_env`), no person involved.
    ClientCredentials,
}

impl Grant {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// OAuth for one server (`oauth = { … }` in its config). Every field is
/// optional: without a client the host registers itself (a client ID
/// metadata document when `client_metadata_url` is set and the server
/// supports it, else dynamic registration).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// How tokens are obtained (a person's consent by default).
    #[serde(default, skip_serializing_if = "Grant::is_default")]
    pub grant: Grant,
    /// Scopes to ask for (by default those the server's challenge or metadata name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// A pre-registered client's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The environment variable holding a pre-registered client's secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// The HTTPS URL of this client's metadata document (used as its client id
    /// where the authorization server supports that).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// The loopback port of the redirect (0: any free port).
    #[serde(default)]
    pub redirect_port: u16,
    /// Where the tokens are kept (the host sets its data directory's
    /// `mcp-oauth/NAME.json` when this is not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
}

impl OAuthConfig {
    /// Whether getting a token needs a person's consent (a browser).
    pub fn needs_consent(&self) -> bool {
        self.grant == Grant::AuthorizationCode
    }

    /// The token file, or `default` when none is configured.
    pub fn token_file_or(&self, default: &Path) -> PathBuf {
        self.token_file
            .clone()
            .unwrap_or_else(|| default.to_path_buf())
    }
}

/// The token file of server `name` under a host's data directory.
pub fn default_token_file(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("mcp-oauth").join(format!("{name}.json"))
}

/// Credentials in a file only its owner may read (0600), replaced atomically.
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    path: PathBuf,
}

impl FileCredentialStore {
    /// The store at `path`.
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!("token store: {e}"))
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match tokio::fs::read(&self.path).await {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(store_error),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(store_error(e)),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let bytes = serde_json::to_vec(&credentials).map_err(store_error)?;
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.write(&bytes))
            .await
            .map_err(store_error)?
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match tokio::fs::remove_file(&self.path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }
}

/// Most bytes of an OAuth response (metadata, registration, tokens).
const MAX_OAUTH_BODY: usize = 1024 * 1024;

/// Most redirects an OAuth request follows (when it may follow any).
const MAX_OAUTH_REDIRECTS: usize = 5;

/// The HTTP client of every OAuth request, built by `a2e-http` as every
/// outgoing client of the workspace is (one that follows redirects, for the
/// requests that may, and one that does not).
pub struct OAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
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

fn oauth_http(server: &str) -> Result<Arc<dyn OAuthHttpClient>, McpError> {
    OAuthHttp::new()
        .map(|c| Arc::new(c) as Arc<dyn OAuthHttpClient>)
        .map_err(|e| failed(server, "HTTP client", a2e_http::error_chain(&e)))
}

fn failed(server: &str, what: &str, e: impl std::fmt::Display) -> McpError {
    McpError::Init {
        server: server.to_owned(),
        reason: format!("OAuth {what}: {e}"),
    }
}

/// An authorization manager for `url` with the stored credentials loaded:
/// `true` when there are credentials.
pub async fn manager(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    token_file: &Path,
) -> Result<(AuthorizationManager, bool), McpError> {
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, oauth_http(server)?)
        .await
        .map_err(|e| failed(server, "setup", e))?;
    manager.set_credential_store(FileCredentialStore::new(token_file.to_path_buf()));
    let _ = oauth;
    let stored = manager
        .initialize_from_store()
        .await
        .map_err(|e| failed(server, "token store", e))?;
    Ok((manager, stored))
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
    if oauth.grant == Grant::ClientCredentials {
        return client_credentials(server, url, oauth, token_file).await;
    }
    let listener = TcpListener::bind(("127.0.0.1", oauth.redirect_port))
        .await
        .map_err(|e| failed(server, "redirect listener", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| failed(server, "redirect listener", e))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, oauth_http(server)?)
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
    Ok(())
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
    async fn tokens_are_stored_for_the_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = default_token_file(dir.path(), "svc");
        let store = FileCredentialStore::new(path.clone());
        assert!(store.load().await.unwrap().is_none());
        let creds = StoredCredentials::new("client-1".into(), None, vec!["read".into()], None);
        store.save(creds).await.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let back = store.load().await.unwrap().unwrap();
        assert_eq!(back.client_id, "client-1");
        assert!(!format!("{back:?}").contains("access_token"));
        store.clear().await.unwrap();
        assert!(store.load().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn client_credentials_need_an_id_and_a_secret_and_no_consent() {
        let oauth: OAuthConfig =
            serde_json::from_value(serde_json::json!({"grant": "client_credentials"})).unwrap();
        assert_eq!(oauth.grant, Grant::ClientCredentials);
        assert!(!oauth.needs_consent());
        assert!(OAuthConfig::default().needs_consent());
        let file = tempfile::tempdir().unwrap().path().join("t.json");
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
