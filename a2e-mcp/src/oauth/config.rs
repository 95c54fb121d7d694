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
