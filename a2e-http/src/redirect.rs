//! Following redirects hop by hop, each hop checked against an allow-list.

use reqwest::header::LOCATION;
use reqwest::{Method, StatusCode, Url};

use crate::allow::HostAllowList;

/// A response and the redirects followed to get it.
#[derive(Debug)]
pub struct Followed {
    /// The last response: not a followed redirect.
    pub response: reqwest::Response,
    /// How many redirects were followed.
    pub redirects: usize,
}

/// The next request after a redirect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// Where it goes.
    pub url: Url,
    /// With which method.
    pub method: Method,
    /// Whether the body is dropped.
    pub drop_body: bool,
}

/// Redirects followed only while they stay on allowed hosts.
///
/// 301, 302, 303, 307 and 308 are followed, up to `max` times, while the
/// `Location` resolves to an `http`/`https` URL on an allowed host. A
/// redirect elsewhere (or past `max`, or without a usable `Location`) is not
/// followed: it comes back as the response it is, 3xx and `location` header
/// included. 303, and 301/302 after a POST, continue as GET (HEAD stays HEAD)
/// without a body; 307 and 308 keep the method and the body. The request's
/// headers go with every hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectPolicy {
    allow: HostAllowList,
    max: usize,
}

impl RedirectPolicy {
    /// Follows up to `max` redirects within `allow`.
    pub fn new(allow: HostAllowList, max: usize) -> Self {
        Self { allow, max }
    }

    /// The allow-list every hop is checked against.
    pub fn allow_list(&self) -> &HostAllowList {
        &self.allow
    }

    /// The most redirects followed.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The hop after a response of `status` with `location` to a request
    /// `method` `from`, when it is to be followed; `followed` counts the
    /// redirects taken so far.
    pub fn next_hop(
        &self,
        status: StatusCode,
        method: &Method,
        from: &Url,
        location: Option<&str>,
        followed: usize,
    ) -> Option<Hop> {
        let followable = matches!(
            status,
            StatusCode::MOVED_PERMANENTLY
                | StatusCode::FOUND
                | StatusCode::SEE_OTHER
                | StatusCode::TEMPORARY_REDIRECT
                | StatusCode::PERMANENT_REDIRECT
        );
        if !followable || followed >= self.max {
            return None;
        }
        let url = from.join(location?).ok()?;
        if let Err(e) = self.allow.check(&url) {
            tracing::warn!(to = %url, "redirect not followed: {e}");
            return None;
        }
        let as_get = status == StatusCode::SEE_OTHER
            || (*method == Method::POST
                && matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND));
        let method = if as_get && *method != Method::HEAD {
            Method::GET
        } else {
            method.clone()
        };
        Some(Hop {
            url,
            method,
            drop_body: as_get,
        })
    }

    /// Sends `request` with `client`, following redirects by this policy.
    ///
    /// The first URL is not checked here (check it with
    /// [`HostAllowList::check`] first, to tell the caller why); `client` must
    /// not follow redirects itself ([`Redirects::None`](crate::Redirects::None)).
    /// A request whose body cannot be copied (a stream) is not redirected.
    pub async fn send(
        &self,
        client: &reqwest::Client,
        request: reqwest::Request,
    ) -> Result<Followed, reqwest::Error> {
        let mut request = request;
        let mut redirects = 0;
        loop {
            let again = request.try_clone();
            let method = request.method().clone();
            let response = client.execute(request).await?;
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok());
            let hop = self.next_hop(
                response.status(),
                &method,
                response.url(),
                location,
                redirects,
            );
            let (Some(hop), Some(mut next)) = (hop, again) else {
                return Ok(Followed {
                    response,
                    redirects,
                });
            };
            *next.url_mut() = hop.url;
            *next.method_mut() = hop.method;
            if hop.drop_body {
                *next.body_mut() = None;
            }
            redirects += 1;
            request = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RedirectPolicy {
        RedirectPolicy::new(HostAllowList::new(["h", "other"]), 5)
    }

    fn hop(status: u16, method: Method, location: &str) -> Option<Hop> {
        let from = Url::parse("http://h:1/a/b?q").unwrap();
        policy().next_hop(
            StatusCode::from_u16(status).unwrap(),
            &method,
            &from,
            Some(location),
            0,
        )
    }

    #[test]
    fn locations_resolve_against_the_request_url() {
        let to = |l: &str| hop(302, Method::GET, l).unwrap().url.to_string();
        assert_eq!(to("/x"), "http://h:1/x");
        assert_eq!(to("c"), "http://h:1/a/c");
        assert_eq!(to("//other/p"), "http://other/p");
        assert_eq!(to("https://h/p"), "https://h/p");
    }

    #[test]
    fn hops_off_the_list_or_off_http_are_not_taken() {
        assert_eq!(hop(302, Method::GET, "http://elsewhere/x"), None);
        assert_eq!(hop(302, Method::GET, "ftp://h/x"), None);
        assert_eq!(hop(302, Method::GET, "http://[::1/"), None, "not a URL");
        assert_eq!(hop(300, Method::GET, "/x"), None, "300 is not followed");
        assert_eq!(hop(304, Method::GET, "/x"), None);
        assert_eq!(hop(200, Method::GET, "/x"), None);
        let from = Url::parse("http://h/").unwrap();
        let p = policy();
        assert_eq!(
            p.next_hop(StatusCode::FOUND, &Method::GET, &from, None, 0),
            None
        );
        assert!(
            p.next_hop(StatusCode::FOUND, &Method::GET, &from, Some("/"), 4)
                .is_some()
        );
        assert_eq!(
            p.next_hop(StatusCode::FOUND, &Method::GET, &from, Some("/"), 5),
            None,
            "the fifth was the last"
        );
    }

    #[test]
    fn methods_change_as_browsers_do() {
        let h = |status, method| {
            let h = hop(status, method, "/x").unwrap();
            (h.method, h.drop_body)
        };
        assert_eq!(h(303, Method::POST), (Method::GET, true));
        assert_eq!(h(303, Method::PUT), (Method::GET, true));
        assert_eq!(h(303, Method::HEAD), (Method::HEAD, true));
        assert_eq!(h(301, Method::POST), (Method::GET, true));
        assert_eq!(h(302, Method::POST), (Method::GET, true));
        assert_eq!(h(302, Method::PUT), (Method::PUT, false));
        assert_eq!(h(307, Method::POST), (Method::POST, false));
        assert_eq!(h(308, Method::PUT), (Method::PUT, false));
    }
}
