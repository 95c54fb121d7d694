//! The HTTP side shared by both providers: one `reqwest` client (built by `a2e-http`),
//! retries with exponential backoff on 429/5xx honouring `Retry-After` within a cap, a
//! per-request deadline, cancellation that drops the response (closing its connection),
//! bounded body reads, and Server-Sent Events (parsed by `sse-stream`) within size bounds.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2e_http::{Backoff, ClientOptions, Pool, Redirects, error_chain, retry_after};
use bytes::Bytes;
use futures::stream::{self, Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde::Deserialize;
use sse_stream::{Sse, SseByteStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::LlmError;
use crate::secret::{Secret, scrub_all};

/// Most bytes of a non-streamed answer.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Most bytes of one streamed answer.
pub const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;
/// Most bytes of one Server-Sent Event.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;
/// Most bytes of an error body quoted in an error.
const MAX_ERROR_BODY: usize = 2048;

/// When and how often a failed request (429, 5xx, transport error) is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Wait before the first retry, in milliseconds; doubled for each later one.
    pub initial_backoff_ms: u64,
    /// Longest wait computed by backoff, in milliseconds.
    pub max_backoff_ms: u64,
    /// Longest wait a server's `Retry-After` may impose, in milliseconds.
    pub max_retry_after_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff_ms: 500,
            max_backoff_ms: 8_000,
            max_retry_after_ms: 30_000,
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The backoff this policy describes.
    pub fn backoff(&self) -> Backoff {
        Backoff::new(
            Duration::from_millis(self.initial_backoff_ms),
            Duration::from_millis(self.max_backoff_ms),
        )
        .with_max_retry_after(Duration::from_millis(self.max_retry_after_ms))
    }

    /// The wait before retry number `attempt` (0-based), given the server's `Retry-After`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        self.backoff().delay_after(attempt, retry_after)
    }
}

/// The HTTP client of one provider.
#[derive(Clone)]
pub(crate) struct Transport {
    pub client: reqwest::Client,
    pub provider: Arc<str>,
    pub timeout: Option<Duration>,
    pub retry: RetryPolicy,
    pub secrets: Vec<Secret>,
}

/// The providers' shared `reqwest` client (see `a2e-http`): idle connections kept without
/// a reaper timer (a stale one is found closed when reused, and a transport error is
/// retried; no background timer wakes an idle process), redirects followed as `reqwest`
/// does, the proxy variables honoured.
pub(crate) fn build_client() -> Result<reqwest::Client, LlmError> {
    ClientOptions::default()
        .pool(Pool::Reuse)
        .redirects(Redirects::Limited(10))
        .proxy_from_env(true)
        .build()
        .map_err(|e| LlmError::Invalid(e.to_string()))
}

/// `base` with `extra` set over it; an entry that is not a valid header is
/// left out. Borrowed as it is when there is nothing to add.
pub(crate) fn with_headers<'a>(
    base: &'a HeaderMap,
    extra: &[(&str, &str)],
) -> std::borrow::Cow<'a, HeaderMap> {
    if extra.is_empty() {
        return std::borrow::Cow::Borrowed(base);
    }
    let mut headers = base.clone();
    for (name, value) in extra {
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            reqwest::header::HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    }
    std::borrow::Cow::Owned(headers)
}

impl Transport {
    pub fn scrub(&self, text: &str) -> String {
        scrub_all(text, &self.secrets)
    }

    fn transport_error(&self, err: &(dyn std::error::Error + 'static)) -> LlmError {
        LlmError::Transport {
            provider: self.provider.to_string(),
            message: self.scrub(&error_chain(err)),
        }
    }

    /// Runs `work` under `deadline` and `cancel`; dropping `work` drops any response it holds.
    pub async fn guard<T>(
        &self,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
        work: impl Future<Output = Result<T, LlmError>>,
    ) -> Result<T, LlmError> {
        let timed = async {
            match deadline {
                Some(at) => match tokio::time::timeout_at(at, work).await {
                    Ok(result) => result,
                    Err(_) => Err(LlmError::Timeout {
                        provider: self.provider.to_string(),
                        after: self.timeout.unwrap_or_default(),
                    }),
                },
                None => work.await,
            }
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(LlmError::Cancelled),
            result = timed => result,
        }
    }

    /// POSTs `body` to `url`, retrying per the policy. Returns the successful response and
    /// the deadline its body must be read by.
    pub async fn post(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &[u8],
        cancel: &CancellationToken,
    ) -> Result<(reqwest::Response, Option<Instant>), LlmError> {
        let mut attempt: u32 = 0;
        loop {
            let deadline = self.timeout.map(|t| Instant::now() + t);
            let sent = self
                .guard(deadline, cancel, async {
                    let response = self
                        .client
                        .post(url)
                        .headers(headers.clone())
                        .body(body.to_vec())
                        .send()
                        .await
                        .map_err(|e| self.transport_error(&e))?;
                    let status = response.status();
                    if status.is_success() {
                        return Ok(Ok(response));
                    }
                    let wait = retry_after(response.headers());
                    let text = read_bounded(response, MAX_ERROR_BODY).await;
                    Ok(Err((
                        LlmError::Status {
                            provider: self.provider.to_string(),
                            status: status.as_u16(),
                            body: self.scrub(&text),
                        },
                        wait,
                    )))
                })
                .await;
            let (error, wait) = match sent {
                Ok(Ok(response)) => return Ok((response, deadline)),
                Ok(Err((error, wait))) => (error, wait),
                Err(error @ LlmError::Transport { .. }) => (error, None),
                Err(error) => return Err(error),
            };
            if !error.is_retryable() || attempt >= self.retry.max_retries {
                return Err(error);
            }
            let delay = self.retry.delay(attempt, wait);
            tracing::warn!(
                provider = %self.provider,
                attempt = attempt + 1,
                delay_ms = delay.as_millis() as u64,
                "retrying model request: {error}"
            );
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(LlmError::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
            attempt += 1;
        }
    }

    /// Reads the whole body (bounded) of a successful response.
    pub async fn body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, LlmError> {
        let mut out = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(&e))?
        {
            if out.len().saturating_add(chunk.len()) > MAX_BODY_BYTES {
                return Err(LlmError::TooLarge {
                    provider: self.provider.to_string(),
                    limit: MAX_BODY_BYTES,
                });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    pub fn malformed(&self, message: impl AsRef<str>) -> LlmError {
        LlmError::Malformed {
            provider: self.provider.to_string(),
            message: self.scrub(message.as_ref()),
        }
    }
}

/// The start of a body as text, for error messages (never fails).
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> String {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(chunk.get(..chunk.len().min(room)).unwrap_or_default());
        if out.len() >= limit {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One Server-Sent Event.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field (empty when absent).
    pub event: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

/// Why the bytes of a stream stopped before `sse-stream` parsed them.
#[derive(Debug, thiserror::Error)]
enum Cut {
    #[error("an event over {0} bytes")]
    Event(usize),
    #[error("a stream over {0} bytes")]
    Stream(usize),
    #[error(transparent)]
    Body(Box<dyn std::error::Error + Send + Sync>),
}

/// The size bounds of a stream, applied to its bytes before they are parsed: the whole
/// stream, and one event block (from one blank line to the next, field names included).
#[derive(Debug)]
struct Bounds {
    max_event: usize,
    max_stream: usize,
    total: usize,
    event: usize,
    /// The current line has a byte other than its line end.
    in_line: bool,
    /// The last byte was a CR (a following LF ends the same line).
    after_cr: bool,
}

impl Bounds {
    fn new(max_event: usize, max_stream: usize) -> Self {
        Self {
            max_event,
            max_stream,
            total: 0,
            event: 0,
            in_line: false,
            after_cr: false,
        }
    }

    fn admit(&mut self, chunk: &[u8]) -> Result<(), Cut> {
        self.total = self.total.saturating_add(chunk.len());
        if self.total > self.max_stream {
            return Err(Cut::Stream(self.max_stream));
        }
        for &byte in chunk {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.in_line {
                        self.event += 1;
                    } else {
                        // A blank line: the event block ends.
                        self.event = 0;
                    }
                    self.in_line = false;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.event += 1;
                    self.in_line = true;
                    self.after_cr = false;
                }
            }
            if self.event > self.max_event {
                return Err(Cut::Event(self.max_event));
            }
        }
        Ok(())
    }
}

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Reads Server-Sent Events from a response, one at a time (`sse-stream` parses them),
/// within [`MAX_EVENT_BYTES`] per event and [`MAX_STREAM_BYTES`] in all. A last event
/// the server did not end with a blank line is still read. Dropping the reader drops the
/// response, which closes its connection.
pub(crate) struct SseReader {
    events: Events,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        Self::from_chunks(
            response.bytes_stream(),
            Bounds::new(MAX_EVENT_BYTES, MAX_STREAM_BYTES),
        )
    }

    fn from_chunks<S, E>(chunks: S, bounds: Bounds) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let bounded = chunks.scan(bounds, |bounds, chunk| {
            let checked = match chunk {
                Ok(chunk) => bounds.admit(&chunk).map(|()| chunk),
                Err(e) => Err(Cut::Body(Box::new(e))),
            };
            std::future::ready(Some(checked))
        });
        // The parser drops an unterminated last block; a blank line at the end keeps it.
        let ended = bounded.chain(stream::once(std::future::ready(Ok(Bytes::from_static(
            b"\n\n",
        )))));
        Self {
            events: Box::pin(SseByteStream::new(ended)),
        }
    }

    /// The next event, or `None` at the end of the stream. Blocks without data (comments,
    /// keep-alives, `id:`/`retry:` alone) are skipped.
    pub async fn next(&mut self, transport: &Transport) -> Result<Option<SseEvent>, LlmError> {
        loop {
            let sse = match self.events.next().await {
                None => return Ok(None),
                Some(Ok(sse)) => sse,
                Some(Err(sse_stream::Error::Body(e))) => {
                    return Err(match e.downcast::<Cut>() {
                        Ok(cut) => match *cut {
                            Cut::Event(limit) | Cut::Stream(limit) => LlmError::TooLarge {
                                provider: transport.provider.to_string(),
                                limit,
                            },
                            Cut::Body(e) => transport.transport_error(&*e),
                        },
                        Err(e) => transport.transport_error(&*e),
                    });
                }
                Some(Err(e)) => return Err(transport.malformed(format!("event stream: {e}"))),
            };
            if let Some(data) = sse.data {
                return Ok(Some(SseEvent {
                    event: sse.event.unwrap_or_default(),
                    data,
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport() -> Transport {
        Transport {
            client: build_client().unwrap(),
            provider: Arc::from("p"),
            timeout: None,
            retry: RetryPolicy::none(),
            secrets: Vec::new(),
        }
    }

    fn reader(chunks: &[&'static [u8]], bounds: Bounds) -> SseReader {
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            chunks.iter().map(|c| Ok(Bytes::from_static(c))).collect();
        SseReader::from_chunks(stream::iter(chunks), bounds)
    }

    async fn read_all(mut reader: SseReader) -> Result<Vec<(String, String)>, LlmError> {
        let t = transport();
        let mut out = Vec::new();
        while let Some(e) = reader.next(&t).await? {
            out.push((e.event, e.data));
        }
        Ok(out)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(e, d)| ((*e).to_owned(), (*d).to_owned()))
            .collect()
    }

    #[tokio::test]
    async fn sse_blocks_split_on_blank_lines_with_lf_or_crlf() {
        let chunks: &[&[u8]] = &[
            b"event: a\ndata: 1\nda",
            b"ta: 2\n\n: keepalive\n\nid: 7\n\ndata: x\r",
            b"\n\r\ndata: partial",
        ];
        let events = read_all(reader(chunks, Bounds::new(1024, 4096)))
            .await
            .unwrap();
        assert_eq!(events, pairs(&[("a", "1\n2"), ("", "x"), ("", "partial")]));
    }

    #[tokio::test]
    async fn an_event_over_its_bound_is_refused_and_small_ones_pass() {
        // Many small events pass a small per-event bound.
        let many: &[&[u8]] = &[&b"data: 12345\n\n"[..]; 50];
        let events = read_all(reader(many, Bounds::new(16, 4096))).await.unwrap();
        assert_eq!(events.len(), 50);
        // One block of 17 bytes does not, even split over chunks and lines.
        let big: &[&[u8]] = &[b"data: 1234\n", b"data: 5\n\n"];
        let err = read_all(reader(big, Bounds::new(16, 4096)))
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::TooLarge { limit: 16, .. }), "{err}");
        let crlf: &[&[u8]] = &[b"data: 1234\r\n\r\n", b"data: 5678\r\r"];
        let events = read_all(reader(crlf, Bounds::new(12, 4096))).await.unwrap();
        assert_eq!(events, pairs(&[("", "1234"), ("", "5678")]));
    }

    #[tokio::test]
    async fn a_stream_over_its_bound_is_refused() {
        let many: &[&[u8]] = &[&b"data: 12345\n\n"[..]; 10];
        let err = read_all(reader(many, Bounds::new(1024, 100)))
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::TooLarge { limit: 100, .. }),
            "{err}"
        );
    }

    #[tokio::test]
    async fn body_errors_are_transport_errors_and_bad_utf8_is_malformed() {
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"data: 1\n\n")),
            Err(std::io::Error::other("reset by peer")),
        ];
        let mut r = SseReader::from_chunks(stream::iter(chunks), Bounds::new(64, 64));
        let t = transport();
        assert_eq!(r.next(&t).await.unwrap().unwrap().data, "1");
        let err = r.next(&t).await.unwrap_err();
        assert!(
            matches!(&err, LlmError::Transport { message, .. } if message.contains("reset by peer")),
            "{err}"
        );
        let bad: &[&[u8]] = &[b"data: \xff\xfe\n\n"];
        let err = read_all(reader(bad, Bounds::new(64, 64)))
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Malformed { .. }), "{err}");
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_retry_after_is_capped() {
        let p = RetryPolicy {
            max_retries: 5,
            initial_backoff_ms: 100,
            max_backoff_ms: 350,
            max_retry_after_ms: 1_000,
        };
        assert_eq!(p.delay(0, None), Duration::from_millis(100));
        assert_eq!(p.delay(1, None), Duration::from_millis(200));
        assert_eq!(p.delay(2, None), Duration::from_millis(350));
        assert_eq!(p.delay(40, None), Duration::from_millis(350));
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3600))),
            Duration::from_secs(1)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_millis(20))),
            Duration::from_millis(20)
        );
    }
}
