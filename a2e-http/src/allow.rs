//! Which hosts a client may talk to.

use reqwest::Url;

use crate::error::HttpError;

/// Where a URL points: the scheme, host and port the request would connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Whether the scheme is `https`.
    pub https: bool,
    /// The host, lowercase, without IPv6 brackets or a trailing dot.
    pub host: String,
    /// The port, the scheme's default when the URL names none.
    pub port: u16,
}

impl Target {
    /// The target of `url`; only `http` and `https` URLs with a host have one.
    pub fn of(url: &Url) -> Result<Self, HttpError> {
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            other => return Err(HttpError::Scheme(other.to_owned())),
        };
        let host = url
            .host_str()
            .map(bare_host)
            .filter(|h| !h.is_empty())
            .ok_or(HttpError::NoHost)?;
        let port = url.port().unwrap_or(if https { 443 } else { 80 });
        Ok(Self { https, host, port })
    }
}

/// A host as compared: no brackets, no trailing dot, lowercase.
fn bare_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    host: String,
    port: Option<u16>,
}

impl Entry {
    fn parse(entry: &str) -> Self {
        let entry = entry.trim();
        if let Some(rest) = entry.strip_prefix('[')
            && let Some((host, after)) = rest.split_once(']')
        {
            let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
            return Self {
                host: bare_host(host),
                port,
            };
        }
        match entry.split_once(':') {
            Some((host, port)) if !port.contains(':') => match port.parse() {
                Ok(port) => Self {
                    host: bare_host(host),
                    port: Some(port),
                },
                Err(_) => Self {
                    host: bare_host(entry),
                    port: None,
                },
            },
            _ => Self {
                host: bare_host(entry),
                port: None,
            },
        }
    }
}

/// The hosts requests may go to.
///
/// An entry is a host name or IP address (any port), or `host:port` /
/// `[v6]:port` (that port only). Names compare without case and without a
/// trailing dot; a name does not cover its subdomains. The empty list allows
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostAllowList {
    entries: Vec<Entry>,
}

impl HostAllowList {
    /// A list of `entries`.
    pub fn new<I, S>(entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self {
            entries: entries
                .into_iter()
                .map(|e| Entry::parse(e.as_ref()))
                .collect(),
        }
    }

    /// Whether the list allows nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `host` (as in a URL: IPv6 in brackets or not) on `port` is allowed.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = bare_host(host);
        !host.is_empty()
            && self
                .entries
                .iter()
                .any(|e| e.host == host && e.port.is_none_or(|p| p == port))
    }

    /// The target of `url` when it is `http`/`https` on an allowed host;
    /// [`HttpError::NotAllowed`] when the host is not on the list.
    pub fn check(&self, url: &Url) -> Result<Target, HttpError> {
        let target = Target::of(url)?;
        if self.allows(&target.host, target.port) {
            Ok(target)
        } else {
            Err(HttpError::NotAllowed {
                host: target.host,
                port: target.port,
            })
        }
    }

    /// Whether a request to `url` may be sent (see [`check`](Self::check)).
    pub fn permits(&self, url: &Url) -> bool {
        self.check(url).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn entries_match_a_host_and_an_optional_port() {
        let list = HostAllowList::new(["Example.com", "127.0.0.1:8080", "[::1]", "::2"]);
        assert!(list.allows("example.com", 443));
        assert!(list.allows("EXAMPLE.COM.", 80));
        assert!(list.allows("127.0.0.1", 8080));
        assert!(!list.allows("127.0.0.1", 8081));
        assert!(list.allows("[::1]", 1));
        assert!(list.allows("::2", 1));
        assert!(!list.allows("sub.example.com", 80));
        assert!(!list.allows("", 80));
        assert!(!HostAllowList::default().allows("example.com", 80));
        assert!(HostAllowList::new(Vec::<String>::new()).is_empty());
    }

    #[test]
    fn bracketed_v6_entries_may_name_a_port() {
        let list = HostAllowList::new(["[::1]:9000", " [fe80::1] ", "host:notaport"]);
        assert!(list.allows("::1", 9000));
        assert!(!list.allows("::1", 9001));
        assert!(list.allows("[fe80::1]", 5));
        // Not a port: the whole entry is the name, which no URL host matches.
        assert!(!list.allows("host", 80));
    }

    #[test]
    fn urls_are_checked_on_scheme_host_and_default_port() {
        let list = HostAllowList::new(["api.example.com", "127.0.0.1:8080", "h:443"]);
        let t = list.check(&url("https://API.example.com/v1")).unwrap();
        assert_eq!(
            t,
            Target {
                https: true,
                host: "api.example.com".into(),
                port: 443
            }
        );
        assert!(list.permits(&url("http://127.0.0.1:8080/x")));
        assert!(!list.permits(&url("http://127.0.0.1/x")));
        assert!(list.permits(&url("https://h/")), "443 is https's port");
        assert!(!list.permits(&url("http://h/")), "80 is not 443");
        let err = list.check(&url("http://evil.example/")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "host `evil.example` is not in the HTTP allow-list"
        );
        assert!(matches!(
            list.check(&url("ftp://api.example.com/")),
            Err(HttpError::Scheme(s)) if s == "ftp"
        ));
        assert!(matches!(
            list.check(&url("file:///etc/passwd")),
            Err(HttpError::Scheme(_))
        ));
    }

    #[test]
    fn targets_strip_brackets_and_take_default_ports() {
        let t = Target::of(&url("http://[::1]:9/")).unwrap();
        assert_eq!((t.host.as_str(), t.port, t.https), ("::1", 9, false));
        let t = Target::of(&url("https://H.example./")).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("h.example", 443));
        assert!(matches!(
            Target::of(&url("unix:/run/sock")),
            Err(HttpError::Scheme(_))
        ));
    }
}
