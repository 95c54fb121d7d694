//! How an agent is authenticated to (proto `SecurityScheme` and its variants,
//! `OAuthFlows` and its flows, `SecurityRequirement`, `StringList`; spec
//! §4.5). The schemes follow OpenAPI 3.2's Security Scheme Object, but in
//! v1.0 a scheme is a oneof keyed by its kind (`httpAuthSecurityScheme`…),
//! not an object with a `type` field.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::{is_false, nullable, proto_oneof};

/// Which schemes a client must satisfy, each with its scopes (proto
/// `SecurityRequirement`): `{"schemes": {"google": {"list": ["openid"]}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SecurityRequirement {
    /// `schemes`: scheme name (a key of the card's `securitySchemes`) to the
    /// scopes it needs.
    #[serde(default, deserialize_with = "nullable")]
    pub schemes: BTreeMap<String, StringList>,
}

impl SecurityRequirement {
    /// A requirement of one scheme with scopes.
    pub fn scheme(name: impl Into<String>, scopes: Vec<String>) -> Self {
        SecurityRequirement {
            schemes: BTreeMap::from([(name.into(), StringList { list: scopes })]),
        }
    }
}

/// A list of strings (proto `StringList`): `{"list": [...]}` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct StringList {
    /// `list`: the strings.
    #[serde(default, deserialize_with = "nullable")]
    pub list: Vec<String>,
}

proto_oneof! {
    /// One authentication scheme (proto `SecurityScheme`): an object with
    /// exactly one of `apiKeySecurityScheme`, `httpAuthSecurityScheme`,
    /// `oauth2SecurityScheme`, `openIdConnectSecurityScheme`,
    /// `mtlsSecurityScheme`.
    pub enum SecurityScheme via SecuritySchemeWire {
        /// `apiKeySecurityScheme`: an API key in a header, query or cookie.
        ApiKey(ApiKeySecurityScheme) as api_key = "apiKeySecurityScheme" | "api_key_security_scheme",
        /// `httpAuthSecurityScheme`: HTTP authentication (Bearer, Basic…).
        HttpAuth(HttpAuthSecurityScheme) as http_auth = "httpAuthSecurityScheme" | "http_auth_security_scheme",
        /// `oauth2SecurityScheme`: OAuth 2.0.
        OAuth2(OAuth2SecurityScheme) as oauth2 = "oauth2SecurityScheme" | "oauth2_security_scheme",
        /// `openIdConnectSecurityScheme`: OpenID Connect.
        OpenIdConnect(OpenIdConnectSecurityScheme) as open_id_connect = "openIdConnectSecurityScheme" | "open_id_connect_security_scheme",
        /// `mtlsSecurityScheme`: mutual TLS.
        MutualTls(MutualTlsSecurityScheme) as mtls = "mtlsSecurityScheme" | "mtls_security_scheme",
    }
}

impl SecurityScheme {
    /// HTTP Bearer authentication, with an optional token format hint (`JWT`).
    pub fn bearer(bearer_format: Option<&str>) -> Self {
        SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            description: String::new(),
            scheme: "Bearer".to_owned(),
            bearer_format: bearer_format.unwrap_or_default().to_owned(),
        })
    }

    /// An API key in a header (`location` `header`) of the given name.
    pub fn api_key_header(name: impl Into<String>) -> Self {
        SecurityScheme::ApiKey(ApiKeySecurityScheme {
            description: String::new(),
            location: "header".to_owned(),
            name: name.into(),
        })
    }
}

/// An API key (proto `APIKeySecurityScheme`): `location` and `name` required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ApiKeySecurityScheme {
    /// `description`: optional.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// `location`: `query`, `header` or `cookie`.
    #[serde(default, deserialize_with = "nullable")]
    pub location: String,
    /// `name`: the header, query or cookie parameter's name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
}

/// HTTP authentication (proto `HTTPAuthSecurityScheme`): `scheme` required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// `description`: optional.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// `scheme`: the `Authorization` scheme (RFC 7235), e.g. `Bearer`.
    #[serde(default, deserialize_with = "nullable")]
    pub scheme: String,
    /// `bearerFormat`: a hint of the token's format, e.g. `JWT`.
    #[serde(
        default,
        alias = "bearer_format",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub bearer_format: String,
}

/// OAuth 2.0 (proto `OAuth2SecurityScheme`): `flows` required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// `description`: optional.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// `flows`: the supported flow.
    pub flows: OAuthFlows,
    /// `oauth2MetadataUrl`: the authorization server's RFC 8414 metadata.
    #[serde(
        default,
        alias = "oauth2_metadata_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub oauth2_metadata_url: String,
}

/// OpenID Connect (proto `OpenIdConnectSecurityScheme`): `openIdConnectUrl`
/// required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// `description`: optional.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// `openIdConnectUrl`: the provider's discovery document.
    #[serde(default, alias = "open_id_connect_url", deserialize_with = "nullable")]
    pub open_id_connect_url: String,
}

/// Mutual TLS (proto `MutualTlsSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MutualTlsSecurityScheme {
    /// `description`: optional.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
}

proto_oneof! {
    /// The OAuth 2.0 flow a scheme supports (proto `OAuthFlows`): exactly one
    /// of `authorizationCode`, `clientCredentials`, `implicit` (deprecated),
    /// `password` (deprecated), `deviceCode`.
    pub enum OAuthFlows via OAuthFlowsWire {
        /// `authorizationCode`.
        AuthorizationCode(AuthorizationCodeOAuthFlow) as authorization_code = "authorizationCode" | "authorization_code",
        /// `clientCredentials`.
        ClientCredentials(ClientCredentialsOAuthFlow) as client_credentials = "clientCredentials" | "client_credentials",
        /// `implicit`: deprecated, use the authorization code flow with PKCE.
        Implicit(ImplicitOAuthFlow) as implicit = "implicit",
        /// `password`: deprecated.
        Password(PasswordOAuthFlow) as password = "password",
        /// `deviceCode` (RFC 8628).
        DeviceCode(DeviceCodeOAuthFlow) as device_code = "deviceCode" | "device_code",
    }
}

/// The authorization code flow (proto `AuthorizationCodeOAuthFlow`):
/// `authorizationUrl`, `tokenUrl`, `scopes` required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCodeOAuthFlow {
    /// `authorizationUrl`.
    #[serde(default, alias = "authorization_url", deserialize_with = "nullable")]
    pub authorization_url: String,
    /// `tokenUrl`.
    #[serde(default, alias = "token_url", deserialize_with = "nullable")]
    pub token_url: String,
    /// `refreshUrl`: optional.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// `scopes`: scope name to description.
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
    /// `pkceRequired`: PKCE (RFC 7636) is required.
    #[serde(
        default,
        alias = "pkce_required",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub pkce_required: bool,
}

/// The client credentials flow (proto `ClientCredentialsOAuthFlow`):
/// `tokenUrl` and `scopes` required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsOAuthFlow {
    /// `tokenUrl`.
    #[serde(default, alias = "token_url", deserialize_with = "nullable")]
    pub token_url: String,
    /// `refreshUrl`: optional.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// `scopes`: scope name to description.
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}

/// The implicit flow (proto `ImplicitOAuthFlow`, deprecated).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImplicitOAuthFlow {
    /// `authorizationUrl`.
    #[serde(
        default,
        alias = "authorization_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub authorization_url: String,
    /// `refreshUrl`.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// `scopes`: scope name to description; may be empty.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub scopes: BTreeMap<String, String>,
}

/// The resource owner password flow (proto `PasswordOAuthFlow`, deprecated).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordOAuthFlow {
    /// `tokenUrl`.
    #[serde(
        default,
        alias = "token_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub token_url: String,
    /// `refreshUrl`.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// `scopes`: scope name to description; may be empty.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub scopes: BTreeMap<String, String>,
}

/// The device code flow (proto `DeviceCodeOAuthFlow`, RFC 8628):
/// `deviceAuthorizationUrl`, `tokenUrl`, `scopes` required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCodeOAuthFlow {
    /// `deviceAuthorizationUrl`.
    #[serde(
        default,
        alias = "device_authorization_url",
        deserialize_with = "nullable"
    )]
    pub device_authorization_url: String,
    /// `tokenUrl`.
    #[serde(default, alias = "token_url", deserialize_with = "nullable")]
    pub token_url: String,
    /// `refreshUrl`: optional.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// `scopes`: scope name to description.
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}
