//! Small parsers for configuration values: `key=value` lists, numbers, URLs.

use std::collections::BTreeMap;

use percent_encoding::percent_decode_str;

use crate::error::ConfigError;

/// A `key1=value1,key2=value2` list as `OTEL_RESOURCE_ATTRIBUTES` and
/// `OTEL_EXPORTER_OTLP_HEADERS` spell it: values percent-decoded, blanks
/// around keys and values trimmed, empty members skipped.
pub(crate) fn parse_key_values(
    var: &'static str,
    value: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut out = BTreeMap::new();
    for member in value.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let Some((key, val)) = member.split_once('=') else {
            return Err(ConfigError::Invalid {
                source_name: var,
                value: member.to_owned(),
                reason: "expected `key=value`".into(),
            });
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(ConfigError::Invalid {
                source_name: var,
                value: member.to_owned(),
                reason: "the key is empty".into(),
            });
        }
        let decoded =
            percent_decode_str(val.trim())
                .decode_utf8()
                .map_err(|_| ConfigError::Invalid {
                    source_name: var,
                    value: key.to_owned(),
                    reason: "the value is not UTF-8 once percent-decoded".into(),
                })?;
        out.insert(key.to_owned(), decoded.into_owned());
    }
    Ok(out)
}

/// A whole number of milliseconds (or a count).
pub(crate) fn parse_u64(var: &'static str, value: &str) -> Result<u64, ConfigError> {
    value
        .trim()
        .parse()
        .map_err(|e: std::num::ParseIntError| ConfigError::Invalid {
            source_name: var,
            value: value.to_owned(),
            reason: e.to_string(),
        })
}

/// `true` or `false`, any case.
pub(crate) fn parse_bool(var: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ConfigError::Invalid {
            source_name: var,
            value: value.to_owned(),
            reason: "expected `true` or `false`".into(),
        }),
    }
}

/// An `http` or `https` URL with a host.
pub(crate) fn parse_url(name: &'static str, value: &str) -> Result<String, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        source_name: name,
        value: value.to_owned(),
        reason,
    };
    let uri: http::Uri = value
        .trim()
        .parse()
        .map_err(|e: http::uri::InvalidUri| invalid(e.to_string()))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(invalid("expected an http:// or https:// URL".into())),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("the URL names no host".into()));
    }
    Ok(value.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_decode_and_reject_members_without_equals() {
        let map = parse_key_values("V", " a = 1 ,, b=x%2Cy ").unwrap();
        assert_eq!(map["a"], "1");
        assert_eq!(map["b"], "x,y");
        assert!(parse_key_values("V", "=1").is_err());
        assert!(parse_key_values("V", "a").is_err());
        assert!(parse_key_values("V", "a=%FF").is_err());
    }

    #[test]
    fn urls_need_a_scheme_and_a_host() {
        assert!(parse_url("endpoint", "http://h:1/p").is_ok());
        assert!(parse_url("endpoint", "https://h").is_ok());
        assert!(parse_url("endpoint", "ftp://h").is_err());
        assert!(parse_url("endpoint", "h:4318").is_err());
        assert!(parse_url("endpoint", "not a url").is_err());
    }
}
