//! The grants a machine gets its tokens with, no person involved, beyond
//! rmcp's client-secret client credentials: client credentials with a
//! `private_key_jwt` assertion (RFC 7523 §2.2), workload identity (a
//! platform's JWT as an RFC 7523 `jwt-bearer` grant, SEP-1933) and
//! enterprise-managed authorization (ID token → ID-JAG at the identity
//! provider → access token, SEP-990, on rmcp's `enterprise` module). Each
//! error the authorization server gives is reported as it is, never retried
//! with another grant.

use std::path::Path;
use std::sync::Arc;

use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAssertion, EmaClientAssertionProvider,
    EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationMetadata, CredentialStore, StoredCredentials,
};
use serde_json::{Value, json};

use super::jws::{SigningKey, jti, now};
use super::{ClientAuth, FileCredentialStore, Grant, OAuthConfig, OAuthHttp, failed};
use crate::error::McpError;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long a client assertion is good for.
const ASSERTION_LIFETIME_SECS: u64 = 60;

/// Gets a token for `url` with `oauth`'s machine grant (discovery from
/// `challenge`) and stores it in `token_file`.
pub(super) async fn machine(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    token_file: &Path,
    challenge: Option<&str>,
    http: Arc<OAuthHttp>,
) -> Result<(), McpError> {
    let what = match oauth.grant {
        Grant::ClientCredentials => "client credentials",
        Grant::JwtBearer => "workload identity",
        Grant::Enterprise => "enterprise authorization",
        Grant::AuthorizationCode => "authorization",
    };
    let fail = |e: &dyn std::fmt::Display| failed(server, what, e);
    preflight(oauth).map_err(|e| fail(&e))?;
    let manager = AuthorizationManager::new_with_oauth_http_client(url, http.clone())
        .await
        .map_err(|e| fail(&e))?;
    let metadata = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| fail(&e))?
        .metadata;
    // rmcp's enterprise exchange takes bearer tokens only.
    let key = match oauth.grant {
        Grant::Enterprise => None,
        _ => super::dpop_key(oauth, &metadata).map_err(|e| fail(&e))?,
    };
    http.set_dpop(key.clone());
    let issuer = metadata
        .issuer
        .clone()
        .unwrap_or_else(|| metadata.token_endpoint.clone());
    let mut common = vec![("resource", url.to_owned())];
    if !oauth.scopes.is_empty() {
        common.push(("scope", oauth.scopes.join(" ")));
    }
    let client_id = oauth.client_id.clone();
    let endpoint = metadata.token_endpoint.as_str();
    let token = match oauth.grant {
        Grant::ClientCredentials => {
            let id = client_id
                .clone()
                .ok_or_else(|| fail(&"needs `client_id`"))?;
            let key = private_key(oauth).map_err(|e| fail(&e))?;
            let form = || {
                let mut form = common.clone();
                form.extend([
                    ("grant_type", "client_credentials".to_owned()),
                    ("client_id", id.clone()),
                    ("client_assertion_type", CLIENT_ASSERTION_TYPE.to_owned()),
                    ("client_assertion", client_assertion(&key, &id, &issuer)?),
                ]);
                Ok(form)
            };
            post_form(http.as_ref(), endpoint, form)
                .await
                .map_err(|e| fail(&e))?
        }
        Grant::JwtBearer => {
            let form = || {
                let mut form = common.clone();
                form.extend([
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", workload_jwt(oauth)?),
                ]);
                if let Some(id) = &client_id {
                    form.push(("client_id", id.clone()));
                }
                Ok(form)
            };
            post_form(http.as_ref(), endpoint, form)
                .await
                .map_err(|e| fail(&e))?
        }
        Grant::Enterprise => enterprise(url, oauth, &metadata, &issuer, http.as_ref())
            .await
            .map_err(|e| fail(&e))?,
        Grant::AuthorizationCode => return Err(fail(&"needs a person's consent")),
    };
    let granted = token
        .get("scope")
        .and_then(Value::as_str)
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let response = serde_json::from_value(token)
        .map_err(|e| fail(&format!("the token response is not one ({e})")))?;
    let credentials = StoredCredentials::new(
        client_id.unwrap_or_default(),
        Some(response),
        granted,
        Some(now()),
    )
    .with_issuer(Some(issuer));
    FileCredentialStore::new(token_file.to_path_buf())
        .save(credentials)
        .await
        .map_err(|e| fail(&e))?;
    super::keep_dpop_key(key.as_deref(), token_file)
        .await
        .map_err(|e| fail(&e))
}

/// What the grant needs from the configuration and the environment, checked
/// before any request goes out.
fn preflight(oauth: &OAuthConfig) -> Result<(), String> {
    let needs_id = || {
        oauth
            .client_id
            .as_ref()
            .map(|_| ())
            .ok_or_else(|| "needs `client_id`".to_owned())
    };
    match oauth.grant {
        Grant::ClientCredentials => needs_id().and_then(|()| private_key(oauth).map(|_| ())),
        Grant::JwtBearer => workload_jwt(oauth).map(|_| ()),
        Grant::Enterprise => {
            needs_id()?;
            if oauth.dpop == Some(true) {
                return Err(
                    "`grant = \"enterprise\"` takes bearer tokens only: no `dpop = true`".into(),
                );
            }
            let idp = oauth
                .idp
                .as_ref()
                .ok_or("`grant = \"enterprise\"` needs `[oauth.idp]`")?;
            std::env::var(&idp.id_token_env)
                .map(|_| ())
                .map_err(|_| format!("`{}` is not set", idp.id_token_env))
        }
        Grant::AuthorizationCode => Ok(()),
    }
}

/// The key of `client_auth = "private_key_jwt"`.
fn private_key(oauth: &OAuthConfig) -> Result<SigningKey, String> {
    if oauth.client_auth != ClientAuth::PrivateKeyJwt {
        return Err("client credentials with a secret go through rmcp".to_owned());
    }
    let var = oauth
        .private_key_env
        .as_deref()
        .ok_or("`client_auth = \"private_key_jwt\"` needs `private_key_env`")?;
    let pem = std::env::var(var).map_err(|_| format!("`{var}` is not set"))?;
    SigningKey::from_pem(&pem).map_err(|e| format!("the key in `{var}`: {e}"))
}

/// A client assertion: the client (`iss`, `sub`) to `audience`, short-lived.
fn client_assertion(key: &SigningKey, client_id: &str, audience: &str) -> Result<String, String> {
    let iat = now();
    key.sign(
        json!({"typ": "JWT"}),
        &json!({"iss": client_id, "sub": client_id, "aud": audience, "iat": iat,
            "exp": iat + ASSERTION_LIFETIME_SECS, "jti": jti()}),
    )
    .map_err(|e| e.to_string())
}

/// The workload's JWT, read anew (a platform may have rotated it).
fn workload_jwt(oauth: &OAuthConfig) -> Result<String, String> {
    let jwt = match (&oauth.assertion_env, &oauth.assertion_file) {
        (Some(var), _) => std::env::var(var).map_err(|_| format!("`{var}` is not set"))?,
        (None, Some(file)) => std::fs::read_to_string(file)
            .map_err(|e| format!("reading `{}`: {e}", file.display()))?,
        (None, None) => {
            return Err(
                "`grant = \"jwt_bearer\"` needs `assertion_env` or `assertion_file`".into(),
            );
        }
    };
    Ok(jwt.trim().to_owned())
}

/// A token endpoint's answer to a form: the token, or its error as given.
/// The form is made anew for a second request when the authorization server
/// asks for a DPoP nonce, so that an assertion in it goes out once.
async fn post_form(
    http: &OAuthHttp,
    endpoint: &str,
    form: impl Fn() -> Result<Vec<(&'static str, String)>, String>,
) -> Result<Value, String> {
    let mut again = http.has_dpop();
    let response = loop {
        let body = serde_urlencoded::to_string(form()?).map_err(|e| e.to_string())?;
        let request = axum::http::Request::post(endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body.into_bytes())
            .map_err(|e| e.to_string())?;
        let response = http
            .send(request, false, None, false)
            .await
            .map_err(|e| e.to_string())?;
        let nonce_asked = response.status() == axum::http::StatusCode::BAD_REQUEST
            && super::dpop::asks_nonce(&String::from_utf8_lossy(response.body()));
        if again && nonce_asked {
            again = false;
            continue;
        }
        break response;
    };
    let status = response.status();
    let answer: Value = serde_json::from_slice(response.body()).unwrap_or(Value::Null);
    if !status.is_success() || answer.get("access_token").is_none() {
        let field = |name| answer.get(name).and_then(Value::as_str);
        let error = field("error").unwrap_or("no token");
        let detail = field("error_description").unwrap_or_default();
        return Err(
            format!("the token endpoint refused ({status}): {error} {detail}")
                .trim_end()
                .to_owned(),
        );
    }
    Ok(answer)
}

/// Signs client assertions for rmcp's enterprise exchange.
struct Assertions {
    key: SigningKey,
}

#[async_trait::async_trait]
impl EmaClientAssertionProvider for Assertions {
    async fn create_assertion(
        &self,
        server: &EmaAuthorizationServer,
    ) -> Result<EmaClientAssertion, Box<dyn std::error::Error + Send + Sync>> {
        client_assertion(&self.key, &server.client_id, &server.issuer)
            .map(EmaClientAssertion::new)
            .map_err(Into::into)
    }
}

fn secret_basic(var: &str) -> Result<EmaClientAuthentication, String> {
    let secret = std::env::var(var).map_err(|_| format!("`{var}` is not set"))?;
    Ok(EmaClientAuthentication::ClientSecretBasic(
        oauth2::ClientSecret::new(secret),
    ))
}

/// The enterprise exchange: the ID token for an ID-JAG at the identity
/// provider, the ID-JAG for an access token at the server's authorization
/// server (`issuer`).
async fn enterprise(
    url: &str,
    oauth: &OAuthConfig,
    metadata: &AuthorizationMetadata,
    issuer: &str,
    http: &OAuthHttp,
) -> Result<Value, String> {
    let idp = oauth
        .idp
        .as_ref()
        .ok_or("`grant = \"enterprise\"` needs `[oauth.idp]`")?;
    let id_token = std::env::var(&idp.id_token_env)
        .map_err(|_| format!("`{}` is not set", idp.id_token_env))?;
    let mut at_idp = EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id);
    if let Some(var) = &idp.client_secret_env {
        at_idp = at_idp.with_client_authentication(secret_basic(var)?);
    }
    let client_id = oauth
        .client_id
        .as_deref()
        .ok_or("`grant = \"enterprise\"` needs `client_id`")?;
    let mut at_server = EmaAuthorizationServer::new(issuer, &metadata.token_endpoint, client_id);
    at_server = match (oauth.client_auth, &oauth.client_secret_env) {
        (ClientAuth::PrivateKeyJwt, _) => {
            let key = private_key(oauth)?;
            at_server.with_client_authentication(EmaClientAuthentication::JwtAssertion(Arc::new(
                Assertions { key },
            )))
        }
        (ClientAuth::ClientSecret, Some(var)) => {
            at_server.with_client_authentication(secret_basic(var)?)
        }
        (ClientAuth::ClientSecret, None) => at_server,
    };
    let token = EmaExchangeRequest::new_with_id_token(at_idp, at_server, url, &id_token)
        .with_scopes(oauth.scopes.iter().cloned())
        .exchange(http, http)
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = serde_json::Map::new();
    answer.insert("access_token".into(), json!(token.access_token.secret()));
    answer.insert("token_type".into(), json!("Bearer"));
    if let Some(lifetime) = token.expires_in {
        answer.insert("expires_in".into(), json!(lifetime.as_secs()));
    }
    if !token.scopes.is_empty() {
        let mut scopes: Vec<&str> = token.scopes.iter().map(String::as_str).collect();
        scopes.sort_unstable();
        answer.insert("scope".into(), json!(scopes.join(" ")));
    }
    Ok(answer.into())
}
