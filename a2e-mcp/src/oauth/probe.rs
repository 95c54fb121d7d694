//! What a server's first answer says about its authorization: the challenge
//! of an unauthenticated request, and the scopes an authorization asks for.

use std::path::Path;

use rmcp::transport::auth::CredentialStore;

use super::{FileCredentialStore, OAuthConfig};

/// The `WWW-Authenticate` challenge of the server's answer to an
/// unauthenticated first request (`None` when it needs no authorization):
/// `server/discover` at MCP 2026-07-28, then `initialize` at
/// [`PROTOCOL_VERSION`](crate::protocol::PROTOCOL_VERSION) for a server
/// that refuses the first for another reason (it does not know it).
pub async fn challenge(client: &reqwest::Client, url: &str) -> Option<String> {
    let client_info = serde_json::json!({"name": "a2e-mcp", "version": env!("CARGO_PKG_VERSION")});
    let modern = rmcp::model::ProtocolVersion::V_2026_07_28.to_string();
    let discover = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": modern,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": client_info}}});
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": crate::protocol::PROTOCOL_VERSION.to_string(),
        "capabilities": {}, "clientInfo": client_info}});
    for (body, version) in [(discover, Some(modern.as_str())), (initialize, None)] {
        let mut request = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(version) = version {
            request = request
                .header("mcp-protocol-version", version)
                .header("mcp-method", "server/discover");
        }
        let Ok(response) = request.body(body.to_string()).send().await else {
            return None;
        };
        if response.status() == reqwest::StatusCode::UNAUTHORIZED
            || response.status() == reqwest::StatusCode::FORBIDDEN
        {
            let header = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            return Some(header.unwrap_or_else(|| "Bearer".to_owned()));
        }
        if response.status().is_success() {
            return None;
        }
    }
    None
}

/// The scopes an authorization asks for: the configured ones; on a challenge
/// that names scopes (a step-up), those with the scopes an earlier
/// authorization was granted (the union, SEP-2350: a step-up adds to what
/// the client may do, it does not trade one scope for another). Empty: the
/// scopes are chosen from the challenge and the server's metadata.
pub(super) async fn scopes_to_ask(
    oauth: &OAuthConfig,
    token_file: &Path,
    challenge: Option<&str>,
) -> Vec<String> {
    let challenged = challenge.map(challenged_scopes).unwrap_or_default();
    if challenged.is_empty() {
        return oauth.scopes.clone();
    }
    let granted = match FileCredentialStore::new(token_file.to_path_buf())
        .load()
        .await
    {
        Ok(Some(stored)) => stored.granted_scopes,
        _ => Vec::new(),
    };
    if granted.is_empty() && oauth.scopes.is_empty() {
        return Vec::new();
    }
    let mut scopes: Vec<String> = Vec::new();
    for scope in oauth.scopes.iter().chain(&granted).chain(&challenged) {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    scopes
}

/// The scopes a `WWW-Authenticate` challenge names (its `scope="…"`).
fn challenged_scopes(challenge: &str) -> Vec<String> {
    let Some(at) = challenge.find("scope=\"") else {
        return Vec::new();
    };
    let rest = &challenge[at + "scope=\"".len()..];
    let value = rest.split('"').next().unwrap_or_default();
    value.split_whitespace().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_names_its_scopes() {
        let header = r#"Bearer scope="mcp:write mcp:read", resource_metadata="http://x/y", error="insufficient_scope""#;
        assert_eq!(challenged_scopes(header), ["mcp:write", "mcp:read"]);
        assert!(challenged_scopes("Bearer error=\"insufficient_scope\"").is_empty());
    }

    #[tokio::test]
    async fn a_step_up_asks_for_what_was_granted_and_what_is_challenged() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.json");
        let store = FileCredentialStore::new(file.clone());
        let stored = rmcp::transport::auth::StoredCredentials::new(
            "client".into(),
            None,
            vec!["mcp:basic".into(), "mcp:write".into()],
            None,
        );
        store.save(stored).await.unwrap();
        let oauth = OAuthConfig::default();
        let asked =
            scopes_to_ask(&oauth, &file, Some(r#"Bearer scope="mcp:admin mcp:write""#)).await;
        assert_eq!(asked, ["mcp:basic", "mcp:write", "mcp:admin"]);
        // No challenge naming scopes: the configured ones (none: the SDK chooses).
        assert!(
            scopes_to_ask(&oauth, &file, Some("Bearer"))
                .await
                .is_empty()
        );
    }
}
