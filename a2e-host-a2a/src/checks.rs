//! What a request must bring before its body is read: the bearer token of
//! `auth_token` (every operation needs it when the host has one; the Agent
//! Card is public and says so in its `securitySchemes`), a JSON body, and
//! a protocol version this agent speaks (`A2A-Version`; absent means 0.3).

use a2a_proto::{A2aError, ErrorKind};
use axum::http::HeaderMap;
use subtle::ConstantTimeEq;

/// The scheme's name on the card.
pub(crate) const SCHEME: &str = "bearer";

/// `Ok` when `headers` carry the host's token (or it has none).
pub(crate) fn check(expected: &str, headers: &HeaderMap) -> Result<(), Refused> {
    if expected.is_empty() {
        return Ok(());
    }
    let presented = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let (a, b) = (expected.as_bytes(), presented.as_bytes());
    if a.len() == b.len() && bool::from(a.ct_eq(b)) {
        Ok(())
    } else {
        Err(Refused)
    }
}

/// A request without the host's token: HTTP 401 with a challenge.
#[derive(Debug)]
pub(crate) struct Refused;

impl Refused {
    /// What the client is told (no detail of the token).
    pub fn error(&self) -> A2aError {
        A2aError::new(
            ErrorKind::InvalidRequest,
            "this agent needs its bearer token (Authorization: Bearer …)",
        )
    }
}

/// `Ok` when the request's `A2A-Version` is one this agent speaks (1.0;
/// absent or empty means 0.3, which it does not).
pub(crate) fn version(headers: &HeaderMap) -> Result<(), A2aError> {
    let header = headers
        .get(a2a_proto::VERSION_HEADER)
        .and_then(|v| v.to_str().ok());
    let asked = a2a_proto::headers::requested_version(header);
    if asked == a2a_proto::PROTOCOL_VERSION || asked == "1" {
        return Ok(());
    }
    Err(A2aError::new(
        ErrorKind::VersionNotSupported,
        format!(
            "A2A-Version {asked} is not supported: this agent speaks {}",
            a2a_proto::PROTOCOL_VERSION
        ),
    ))
}

/// `Ok` when the request's body is JSON (`application/json` or
/// `application/a2a+json`).
pub(crate) fn json_body(headers: &HeaderMap) -> Result<(), A2aError> {
    let content_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if essence == a2a_proto::headers::MEDIA_TYPE_JSON
        || essence == a2a_proto::headers::MEDIA_TYPE_A2A_JSON
    {
        return Ok(());
    }
    Err(A2aError::new(
        ErrorKind::ContentTypeNotSupported,
        format!(
            "a request's body must be application/json (or application/a2a+json), not `{content_type}`"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn a_token_is_needed_only_when_the_host_has_one() {
        assert!(check("", &headers(&[])).is_ok());
        assert!(check("s3cret", &headers(&[("authorization", "Bearer s3cret")])).is_ok());
        assert!(check("s3cret", &headers(&[("authorization", "Bearer s3cre")])).is_err());
        assert!(check("s3cret", &headers(&[])).is_err());
        assert!(
            !check("s3cret", &headers(&[]))
                .unwrap_err()
                .error()
                .message
                .contains("s3cret")
        );
    }

    #[test]
    fn version_and_content_type_are_checked_by_name() {
        assert!(version(&headers(&[("a2a-version", "1.0")])).is_ok());
        let absent = version(&headers(&[])).unwrap_err();
        assert_eq!(absent.kind, ErrorKind::VersionNotSupported);
        assert!(absent.message.contains("0.3"), "{}", absent.message);
        assert!(
            json_body(&headers(&[(
                "content-type",
                "application/json; charset=utf-8"
            )]))
            .is_ok()
        );
        assert!(json_body(&headers(&[("content-type", "application/a2a+json")])).is_ok());
        let text = json_body(&headers(&[("content-type", "text/plain")])).unwrap_err();
        assert_eq!(text.kind, ErrorKind::ContentTypeNotSupported);
    }
}
