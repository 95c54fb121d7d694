//! Redirects re-checked hop by hop, and failures described, against small
//! HTTP servers on 127.0.0.1.

use std::sync::{Arc, Mutex};

use a2e_http::{ClientOptions, HostAllowList, RedirectPolicy, Redirects, describe};
use reqwest::{Method, Url};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as a server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    body: String,
}

struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn url(&self, path: &str) -> Url {
        Url::parse(&format!("http://127.0.0.1:{}{path}", self.port)).unwrap()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn reply(status: &str, location: Option<&str>, body: &str) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(to) = location {
        head.push_str(&format!("Location: {to}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    head.into_bytes()
}

async fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.first() == Some(&0x16) {
            // A TLS ClientHello: answer in plain text, which the client refuses.
            return Some(Seen {
                method: "TLS".into(),
                path: String::new(),
                body: String::new(),
            });
        }
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut first = head.lines().next()?.split(' ');
    Some(Seen {
        method: first.next()?.to_owned(),
        path: first.next()?.to_owned(),
        body: String::from_utf8_lossy(&buf[end..]).into_owned(),
    })
}

/// A server whose paths answer: `/to?URL` redirects (302) to URL, `/303`,
/// `/307` to `/echo`, `/echo` answers `METHOD BODY`, `/loop` to itself, the
/// rest `200 here PATH`.
async fn server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let Some(req) = read_request(&mut stream).await else {
                    return;
                };
                log.lock().unwrap().push(req.clone());
                let response = match req.path.split_once('?') {
                    Some(("/to", to)) => reply("302 Found", Some(to), ""),
                    _ => match req.path.as_str() {
                        "/303" => reply("303 See Other", Some("/echo"), ""),
                        "/307" => reply("307 Temporary Redirect", Some("/echo"), ""),
                        "/loop" => reply("302 Found", Some("/loop"), ""),
                        "/echo" => reply("200 OK", None, &format!("{} {}", req.method, req.body)),
                        path => reply("200 OK", None, &format!("here {path}")),
                    },
                };
                let _ = stream.write_all(&response).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Server { port, seen }
}

fn plain_client() -> reqwest::Client {
    ClientOptions::default().build().unwrap()
}

async fn send(
    policy: &RedirectPolicy,
    method: Method,
    url: Url,
    body: &str,
) -> (u16, usize, String, String) {
    let client = plain_client();
    let request = client
        .request(method, url)
        .body(body.to_owned())
        .build()
        .unwrap();
    let followed = policy.send(&client, request).await.unwrap();
    let status = followed.response.status().as_u16();
    let url = followed.response.url().to_string();
    let text = followed.response.text().await.unwrap();
    (status, followed.redirects, url, text)
}

#[tokio::test]
async fn each_hop_is_checked_against_the_allow_list() {
    let a = server().await;
    let b = server().await;
    // Only server a's port is allowed; b runs on the same address, another port.
    let policy = RedirectPolicy::new(HostAllowList::new([format!("127.0.0.1:{}", a.port)]), 5);

    let on_list = format!("/to?{}", a.url("/arrived"));
    let (status, redirects, url, body) = send(&policy, Method::GET, a.url(&on_list), "").await;
    assert_eq!((status, redirects), (200, 1));
    assert_eq!(url, a.url("/arrived").to_string());
    assert_eq!(body, "here /arrived");

    // a → a (allowed) → b (not allowed): the second redirect comes back as it is.
    let to_b = format!("/to?{}", b.url("/never"));
    let two_hops = format!("/to?{}", a.url(&to_b));
    let (status, redirects, url, _) = send(&policy, Method::GET, a.url(&two_hops), "").await;
    assert_eq!((status, redirects), (302, 1));
    assert_eq!(url, a.url(&to_b).to_string());
    assert!(b.seen().is_empty(), "nothing reached the other port");

    // The same address under another name is another host.
    let renamed = format!("/to?http://localhost:{}/x", a.port);
    let (status, redirects, _, _) = send(&policy, Method::GET, a.url(&renamed), "").await;
    assert_eq!((status, redirects), (302, 0));

    // A scheme other than http(s) is not followed.
    let (status, _, _, _) = send(&policy, Method::GET, a.url("/to?file:///etc/passwd"), "").await;
    assert_eq!(status, 302);
}

#[tokio::test]
async fn redirects_stop_at_the_limit_and_keep_or_drop_the_body() {
    let a = server().await;
    let policy = RedirectPolicy::new(HostAllowList::new(["127.0.0.1"]), 3);

    let (status, redirects, _, _) = send(&policy, Method::GET, a.url("/loop"), "").await;
    assert_eq!((status, redirects), (302, 3));
    assert_eq!(a.seen().len(), 4, "the first request and three redirects");

    let (_, _, _, body) = send(&policy, Method::PUT, a.url("/307"), "kept").await;
    assert_eq!(body, "PUT kept", "307 keeps method and body");
    let (_, _, _, body) = send(&policy, Method::POST, a.url("/303"), "dropped").await;
    assert_eq!(body, "GET ", "303 continues as GET without a body");
    let post_302 = format!("/to?{}", a.url("/echo"));
    let (_, _, _, body) = send(&policy, Method::POST, a.url(&post_302), "dropped").await;
    assert_eq!(body, "GET ");
    let (_, _, _, body) = send(&policy, Method::PUT, a.url(&post_302), "kept").await;
    assert_eq!(
        body, "PUT kept",
        "302 after anything but POST keeps the method"
    );
}

#[tokio::test]
async fn clients_follow_by_themselves_only_when_told() {
    let a = server().await;
    let hop = format!("/to?{}", a.url("/there"));
    let response = plain_client().get(a.url(&hop)).send().await.unwrap();
    assert_eq!(response.status(), 302);
    let following = ClientOptions::default()
        .redirects(Redirects::Limited(2))
        .build()
        .unwrap();
    let response = following.get(a.url(&hop)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "here /there");
}

#[tokio::test]
async fn the_user_agent_is_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let head = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        let _ = stream.write_all(&reply("204 No Content", None, "")).await;
        String::from_utf8_lossy(&buf[..n]).to_lowercase()
    });
    let client = ClientOptions::default()
        .user_agent("a2e-http-test/7")
        .build()
        .unwrap();
    let response = client
        .get(format!("http://127.0.0.1:{port}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    assert!(head.await.unwrap().contains("user-agent: a2e-http-test/7"));
}

#[tokio::test]
async fn failures_say_whether_connecting_or_tls_failed() {
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let err = plain_client()
        .get(format!("http://127.0.0.1:{closed}/"))
        .send()
        .await
        .unwrap_err();
    let text = describe(&err);
    assert!(
        text.starts_with(&format!("connect to 127.0.0.1:{closed}: ")),
        "{text}"
    );

    let plain = server().await;
    let err = plain_client()
        .get(format!("https://127.0.0.1:{}/", plain.port))
        .send()
        .await
        .unwrap_err();
    let text = describe(&err);
    assert!(
        text.starts_with("TLS handshake with 127.0.0.1 failed: "),
        "{text}"
    );
    assert_eq!(plain.seen()[0].method, "TLS");
}
