//! What the configuration of one server's OAuth says: how tokens are
//! obtained and where they are kept.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How the host gets its tokens for a server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person's consent in a browser (PKCE authorization code).
    #[default]
    AuthorizationCode,
    /// The host's own client credentials (`client_id`, authenticated with
    /// the secret in `client_secret_env` or, with `client_auth =
    /// "private_key_jwt"`, a JWT signed with the key in `private_key_env`),
    /// no person involved (SEP-1046).
    ClientCredentials,
    /// Workload identity (SEP-1933): a JWT the platform gives the workload
    /// (`assertion_env` or `assertion_file`, read anew for every token)
    /// presented as an RFC 7523 `jwt-bearer` grant.
    JwtBearer,
    /// Enterprise-managed authorization (SEP-990): the user's ID token from
    /// the enterprise identity provider (`[oauth.idp]`) exchanged there for
    /// an identity assertion (ID-JAG), which the server's authorization
    /// server exchanges for an access token.
    Enterprise,
}

/// How the host authenticates itself at a token endpoint with its own client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// The secret in `client_secret_env` (HTTP Basic or in the body).
    #[default]
    ClientSecret,
    /// A short-lived JWT signed with the ES256 key in `private_key_env`
    /// (RFC 7523 `private_key_jwt`).
    PrivateKeyJwt,
}

impl ClientAuth {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The enterprise identity provider of `grant = "enterprise"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdpConfig {
    /// The identity provider's issuer.
    pub issuer: String,
    /// Its token endpoint (where the ID token is exchanged).
    pub token_endpoint: String,
    /// This client's id there.
    pub client_id: String,
    /// The environment variable holding this client's secret there (none: a
    /// public client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// The environment variable holding the user's ID token.
    pub id_token_env: String,
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
    /// How the host's own client authenticates at the token endpoint.
    #[serde(default, skip_serializing_if = "ClientAuth::is_default")]
    pub client_auth: ClientAuth,
    /// The environment variable holding the PEM (PKCS#8, P-256) key of
    /// `client_auth = "private_key_jwt"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_env: Option<String>,
    /// The environment variable holding the workload's JWT (`jwt_bearer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion_env: Option<String>,
    /// The file holding the workload's JWT (`jwt_bearer`; a platform that
    /// rotates it rewrites the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion_file: Option<PathBuf>,
    /// The enterprise identity provider (`enterprise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idp: Option<IdpConfig>,
    /// Sender-constrained tokens (DPoP, RFC 9449): `true` always, `false`
    /// never; unset, when the authorization server advertises ES256 for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop: Option<bool>,
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
