//! Building a `reqwest` client: TLS, redirects, connection reuse, proxies.

use std::sync::{Arc, OnceLock};

use crate::error::HttpError;

/// Which redirects the client follows by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirects {
    /// None: a 3xx comes back as the response it is. Use this with
    /// [`RedirectPolicy::send`](crate::RedirectPolicy::send), which follows
    /// redirects itself and checks each hop against an allow-list.
    None,
    /// Up to this many, to any host (`reqwest`'s own rules).
    Limited(usize),
}

/// Whether connections are kept for later requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// Idle connections are kept, without a timer reaping them: a connection
    /// the server closed is found closed when it is next used, and nothing
    /// wakes an idle process.
    Reuse,
    /// Every request opens its own connection, closed when the response is
    /// read or dropped.
    None,
}

/// How a client is set up. The TLS side is always the same: rustls with the
/// `ring` provider, the webpki (Mozilla) roots, TLS 1.2 and 1.3, no client
/// certificates, and no process-wide crypto provider needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOptions {
    /// Redirects followed by the client itself.
    pub redirects: Redirects,
    /// Connection reuse.
    pub pool: Pool,
    /// Whether `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` apply. When not,
    /// every request goes straight to the host it names.
    pub proxy_from_env: bool,
    /// The `User-Agent` of every request (none when `None`).
    pub user_agent: Option<String>,
}

impl Default for ClientOptions {
    /// No redirects, no reuse, no proxy, no user agent.
    fn default() -> Self {
        Self {
            redirects: Redirects::None,
            pool: Pool::None,
            proxy_from_env: false,
            user_agent: None,
        }
    }
}

impl ClientOptions {
    /// The same options with redirects followed by the client.
    pub fn redirects(mut self, redirects: Redirects) -> Self {
        self.redirects = redirects;
        self
    }

    /// The same options with connection reuse set.
    pub fn pool(mut self, pool: Pool) -> Self {
        self.pool = pool;
        self
    }

    /// The same options with the proxy variables honoured or not.
    pub fn proxy_from_env(mut self, yes: bool) -> Self {
        self.proxy_from_env = yes;
        self
    }

    /// The same options with a `User-Agent`.
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = Some(agent.into());
        self
    }

    /// Builds the client.
    pub fn build(&self) -> Result<reqwest::Client, HttpError> {
        let mut builder = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .redirect(match self.redirects {
                Redirects::None => reqwest::redirect::Policy::none(),
                Redirects::Limited(max) => reqwest::redirect::Policy::limited(max),
            })
            .pool_idle_timeout(None);
        if self.pool == Pool::None {
            builder = builder.pool_max_idle_per_host(0);
        }
        if !self.proxy_from_env {
            builder = builder.no_proxy();
        }
        if let Some(agent) = &self.user_agent {
            builder = builder.user_agent(agent.as_str());
        }
        builder.build().map_err(HttpError::Client)
    }
}

/// Builds a client with `options` (the same as [`ClientOptions::build`]).
pub fn client(options: &ClientOptions) -> Result<reqwest::Client, HttpError> {
    options.build()
}

/// The rustls client configuration every client here uses: the `ring`
/// provider, safe default protocol versions, the webpki roots, no client
/// authentication. Built once per process; each call returns a copy.
pub fn tls_config() -> Result<rustls::ClientConfig, HttpError> {
    static CONFIG: OnceLock<Result<rustls::ClientConfig, rustls::Error>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            Ok(rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()?
                .with_root_certificates(roots)
                .with_no_client_auth())
        })
        .clone()
        .map_err(HttpError::Tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_set_builds() {
        for redirects in [Redirects::None, Redirects::Limited(10)] {
            for pool in [Pool::Reuse, Pool::None] {
                for proxy in [false, true] {
                    let options = ClientOptions::default()
                        .redirects(redirects)
                        .pool(pool)
                        .proxy_from_env(proxy)
                        .user_agent("a2e-http-test/1");
                    options.build().unwrap();
                }
            }
        }
    }

    #[test]
    fn the_tls_config_is_ring_without_client_certificates() {
        let config = tls_config().unwrap();
        assert!(!config.client_auth_cert_resolver.has_certs());
        let ring = rustls::crypto::ring::default_provider();
        assert_eq!(
            config.crypto_provider().cipher_suites,
            ring.cipher_suites,
            "the ring provider's suites"
        );
    }

    #[test]
    fn a_bad_user_agent_is_an_error() {
        let err = ClientOptions::default()
            .user_agent("bad\nagent")
            .build()
            .unwrap_err();
        assert!(matches!(err, HttpError::Client(_)), "{err}");
    }
}
