//! The one leniency of 2025-03-26 discovery. A server of that revision
//! publishes no protected resource metadata and is its own authorization
//! server: its metadata sits at its origin's
//! `/.well-known/oauth-authorization-server`. Some such servers name an
//! issuer under a path of that origin (`https://host/oauth`) while RFC 8414
//! wants the issuer to be the URL the metadata was read from, and rmcp
//! refuses them. The issuer check guards against a mix-up between
//! authorization servers of different parties; an issuer, endpoints and MCP
//! server that all share one origin are one party, so that metadata is
//! taken. Anything that leaves the origin is still refused.

use rmcp::transport::auth::AuthorizationMetadata;

use super::OAuthHttp;
use super::http::MAX_OAUTH_BODY;

/// The origin (`scheme://host:port`) of `url`, or `None` when it has none.
fn origin(url: &str) -> Option<String> {
    let origin = reqwest::Url::parse(url).ok()?.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

/// The authorization server metadata at the origin of `server_url`, when its
/// issuer and endpoints are all on that origin; otherwise why not.
pub(super) async fn same_origin_metadata(
    server_url: &str,
) -> Result<AuthorizationMetadata, String> {
    let base = origin(server_url).ok_or_else(|| format!("`{server_url}` has no origin"))?;
    let well_known = format!("{base}/.well-known/oauth-authorization-server");
    let http = OAuthHttp::new().map_err(|e| a2e_http::error_chain(&e))?;
    let mut response = http
        .stop
        .get(&well_known)
        .send()
        .await
        .map_err(|e| format!("{well_known}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{well_known} answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("{well_known}: {e}"))?
    {
        if body.len().saturating_add(chunk.len()) > MAX_OAUTH_BODY {
            return Err(format!(
                "{well_known} is larger than {MAX_OAUTH_BODY} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    let metadata: AuthorizationMetadata =
        serde_json::from_slice(&body).map_err(|e| format!("{well_known}: {e}"))?;
    let issuer = metadata
        .issuer
        .as_deref()
        .ok_or_else(|| format!("{well_known} names no issuer"))?;
    for (what, url) in [
        ("issuer", issuer),
        (
            "authorization_endpoint",
            metadata.authorization_endpoint.as_str(),
        ),
        ("token_endpoint", metadata.token_endpoint.as_str()),
    ]
    .into_iter()
    .chain(
        metadata
            .registration_endpoint
            .as_deref()
            .map(|r| ("registration_endpoint", r)),
    ) {
        if origin(url).as_deref() != Some(base.as_str()) {
            return Err(format!(
                "its {what} `{url}` is not on the server's origin `{base}`"
            ));
        }
    }
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::origin;

    #[test]
    fn origins_keep_scheme_host_and_port_only() {
        assert_eq!(
            origin("http://127.0.0.1:8080/mcp?x=1").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            origin("https://h.example/a/b").as_deref(),
            Some("https://h.example")
        );
        assert_ne!(
            origin("https://h.example:8443/"),
            origin("https://h.example/")
        );
        assert_eq!(origin("not a url"), None);
        assert_eq!(origin("data:text/plain,x"), None);
    }
}
