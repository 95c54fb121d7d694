//! Credentials that never print: [`Secret`] and the scrubbing of texts that might echo one.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// What a secret reads as in any `Debug` output or scrubbed text.
pub const REDACTED: &str = "[REDACTED]";

/// A credential (API key, header value). `Debug` prints [`REDACTED`]; there is no
/// `Display` and no `Serialize`, so it cannot slip into an event or a log by accident.
/// The value is read only through [`Secret::expose`], where a request header is built.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for building a request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the credential is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every occurrence of this secret replaced by [`REDACTED`]. Empty and very
    /// short secrets (under 4 bytes) are left alone: replacing them would mangle ordinary text.
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, REDACTED)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

/// Scrubs every secret of `secrets` from `text`.
pub(crate) fn scrub_all<'a>(text: &str, secrets: impl IntoIterator<Item = &'a Secret>) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        out = secret.scrub(&out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("sk-test-FAKE-KEY-1234");
        assert_eq!(format!("{s:?}"), REDACTED);
        assert_eq!(format!("{:?}", Some(&s)), format!("Some({REDACTED})"));
    }

    #[test]
    fn scrub_replaces_every_occurrence() {
        let s = Secret::new("sk-abcdef");
        assert_eq!(
            s.scrub("key sk-abcdef and sk-abcdef!"),
            "key [REDACTED] and [REDACTED]!"
        );
        assert_eq!(Secret::new("ab").scrub("abc"), "abc");
    }
}
