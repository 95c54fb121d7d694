//! Turning bytes (file contents, response bodies) into JSON text.
//!
//! Two encodings can be asked for:
//! - `text` (the default): valid UTF-8 comes back as it is, labelled
//!   `"encoding": "utf-8"`; anything else is decoded lossily (invalid
//!   sequences become U+FFFD) and labelled `"encoding": "utf-8-lossy"`, so a
//!   caller knows the text is not byte-exact;
//! - `base64`: the exact bytes in standard base64 with padding, labelled
//!   `"encoding": "base64"`.

use schemars::JsonSchema;
use serde::Deserialize;

/// How bytes come back: `text` (UTF-8, invalid bytes replaced and labelled
/// `utf-8-lossy`) or `base64` (the exact bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// UTF-8 text (the default).
    #[default]
    Text,
    /// The exact bytes, base64-encoded.
    Base64,
}

/// Bytes as JSON text: `(content, encoding label)`.
pub fn encode(bytes: &[u8], base64: bool) -> (String, &'static str) {
    if base64 {
        return (to_base64(bytes), "base64");
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_owned(), "utf-8"),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), "utf-8-lossy"),
    }
}

/// How many bytes of `bytes` to keep so that a cut does not split a UTF-8
/// sequence at its end: drops an incomplete trailing sequence (at most 3
/// bytes), and keeps everything when the bytes are not UTF-8 anyway.
pub fn utf8_cut(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() && bytes.len() - e.valid_up_to() < 4 => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

/// Standard base64 with padding (RFC 4648 §4).
pub fn to_base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(to_base64(plain.as_bytes()), encoded);
        }
        assert_eq!(to_base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn text_labels_lossy_decoding() {
        assert_eq!(encode(b"hi", false), ("hi".to_owned(), "utf-8"));
        assert_eq!(
            encode(b"a\xffb", false),
            ("a\u{fffd}b".to_owned(), "utf-8-lossy")
        );
        assert_eq!(encode(b"a\xffb", true), ("Yf9i".to_owned(), "base64"));
    }

    #[test]
    fn cuts_back_an_incomplete_trailing_sequence() {
        let s = "aé".as_bytes();
        assert_eq!(utf8_cut(s), 3);
        assert_eq!(utf8_cut(&s[..2]), 1);
        assert_eq!(utf8_cut(b"\xff\xff"), 2);
    }
}
