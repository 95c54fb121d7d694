//! Errors, and how a failed request is described.

use std::error::Error as StdError;

/// Why a client could not be built or a URL may not be requested.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// rustls refused the configuration.
    #[error("TLS is not available: {0}")]
    Tls(#[source] rustls::Error),
    /// `reqwest` could not build the client.
    #[error("HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// The URL's scheme is neither `http` nor `https`.
    #[error("scheme `{0}` is not supported (http, https)")]
    Scheme(String),
    /// The URL names no host.
    #[error("the URL has no host")]
    NoHost,
    /// The host is not on the allow-list.
    #[error("host `{host}` is not in the HTTP allow-list")]
    NotAllowed {
        /// The host as compared (lowercase, no brackets).
        host: String,
        /// The port the request would connect to.
        port: u16,
    },
}

/// An error and its sources, joined by `": "`; a source whose text the
/// message already contains is left out.
pub fn error_chain(err: &(dyn StdError + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Whether rustls failed somewhere in `err`'s chain (a TLS handshake, a
/// certificate), including inside I/O errors, which wrap the error they carry
/// rather than report it as their source.
pub fn is_tls_failure(err: &(dyn StdError + 'static)) -> bool {
    let mut current = Some(err);
    while let Some(e) = current {
        if e.is::<rustls::Error>() {
            return true;
        }
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            && is_tls_failure(inner)
        {
            return true;
        }
        current = e.source();
    }
    false
}

/// A failed request in words: `connect to HOST:PORT: …` when no connection
/// came about, `TLS handshake with HOST failed: …` when TLS failed, else the
/// error chain. Credentials are not in it unless the URL carries them.
pub fn describe(err: &reqwest::Error) -> String {
    if !err.is_connect() {
        return error_chain(err);
    }
    // The URL is named here; the chain below reqwest's own message says what failed.
    let chain = std::error::Error::source(err).map_or_else(|| err.to_string(), error_chain);
    let (host, port) = err
        .url()
        .map(|u| {
            (
                u.host_str().unwrap_or_default().to_owned(),
                u.port_or_known_default().unwrap_or_default(),
            )
        })
        .unwrap_or_default();
    if is_tls_failure(err) {
        format!("TLS handshake with {host} failed: {chain}")
    } else {
        format!("connect to {host}:{port}: {chain}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn chains_join_sources_once() {
        let io = std::io::Error::other("inner");
        assert_eq!(error_chain(&Outer(io)), "outer: inner");
        let err = HttpError::Tls(rustls::Error::General("no".into()));
        // The source's text is in the message already.
        assert_eq!(
            error_chain(&err),
            "TLS is not available: unexpected error: no"
        );
    }

    #[test]
    fn rustls_errors_are_found_inside_io_errors() {
        let tls = std::io::Error::other(rustls::Error::General("bad".into()));
        assert!(is_tls_failure(&Outer(tls)));
        let twice = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::General("bad".into()),
        ));
        assert!(is_tls_failure(&twice));
        assert!(!is_tls_failure(&Outer(std::io::Error::other("refused"))));
    }
}
