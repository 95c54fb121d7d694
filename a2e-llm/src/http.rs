//! The HTTP side shared by both providers: one `reqwest` client with rustls on `ring`,
//! retries with exponential backoff on 429/5xx honouring `Retry-After` within a cap, a
//! per-request deadline, cancellation that drops the response (closing its connection),
//! bounded body reads, and a small Server-Sent Events reader.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde::Deserialize;
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

    /// The wait before retry number `attempt` (0-based), given the server's `Retry-After`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(Duration::from_millis(self.max_retry_after_ms));
        }
        let factor = 1u64.checked_shl(attempt.min(32)).unwrap_or(u64::MAX);
        Duration::from_millis(
            self.initial_backoff_ms
                .saturating_mul(factor)
                .min(self.max_backoff_ms),
        )
    }
}

/// Parses `Retry-After` given in seconds (the HTTP-date form falls back to backoff).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 86_400.0)
        .map(Duration::from_secs_f64)
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

/// A shared `reqwest` client: rustls with the `ring` provider and the webpki roots.
pub(crate) fn build_client() -> Result<reqwest::Client, LlmError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LlmError::Invalid(format!("TLS is not available: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        // No idle-reaper timer: a stale pooled connection is found closed when reused (and
        // a transport error is retried), and no background timer wakes an idle process.
        .pool_idle_timeout(None)
        .build()
        .map_err(|e| LlmError::Invalid(format!("HTTP client: {e}")))
}

impl Transport {
    pub fn scrub(&self, text: &str) -> String {
        scrub_all(text, &self.secrets)
    }

    fn transport_error(&self, err: &reqwest::Error) -> LlmError {
        let mut text = err.to_string();
        let mut source = std::error::Error::source(err);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        LlmError::Transport {
            provider: self.provider.to_string(),
            message: self.scrub(&text),
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
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
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

/// Reads Server-Sent Events from a response, one at a time, with a bound per event.
pub(crate) struct SseReader {
    response: reqwest::Response,
    buffer: Vec<u8>,
    done: bool,
    total: usize,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: Vec::new(),
            done: false,
            total: 0,
        }
    }

    /// The next event, or `None` at the end of the stream.
    pub async fn next(&mut self, transport: &Transport) -> Result<Option<SseEvent>, LlmError> {
        loop {
            if let Some(event) = take_event(&mut self.buffer) {
                match event {
                    Some(event) => return Ok(Some(event)),
                    None => continue,
                }
            }
            if self.done {
                let rest = std::mem::take(&mut self.buffer);
                if rest.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                let mut rest = rest;
                rest.extend_from_slice(b"\n\n");
                return Ok(take_event(&mut rest).flatten());
            }
            if self.buffer.len() > MAX_EVENT_BYTES {
                return Err(LlmError::TooLarge {
                    provider: transport.provider.to_string(),
                    limit: MAX_EVENT_BYTES,
                });
            }
            match self
                .response
                .chunk()
                .await
                .map_err(|e| transport.transport_error(&e))?
            {
                Some(chunk) => {
                    self.total = self.total.saturating_add(chunk.len());
                    if self.total > MAX_STREAM_BYTES {
                        return Err(LlmError::TooLarge {
                            provider: transport.provider.to_string(),
                            limit: MAX_STREAM_BYTES,
                        });
                    }
                    self.buffer.extend_from_slice(&chunk);
                }
                None => self.done = true,
            }
        }
    }
}

/// Takes one event block off the front of `buffer`: `None` when no complete block is
/// there yet, `Some(None)` for a block without data (comments, keep-alives).
fn take_event(buffer: &mut Vec<u8>) -> Option<Option<SseEvent>> {
    let (end, sep) = find_block_end(buffer)?;
    let block: Vec<u8> = buffer.drain(..end + sep).take(end).collect();
    let text = String::from_utf8_lossy(&block);
    let mut event = SseEvent::default();
    let mut has_data = false;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => event.event = value.to_owned(),
            "data" => {
                if has_data {
                    event.data.push('\n');
                }
                event.data.push_str(value);
                has_data = true;
            }
            _ => {}
        }
    }
    Some(has_data.then_some(event))
}

/// Where the first blank line is: (index of the block's end, separator length).
fn find_block_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < buffer.len() {
        if buffer[i] == b'\n' {
            if buffer.get(i + 1) == Some(&b'\n') {
                return Some((i, 2));
            }
            if buffer.get(i + 1) == Some(&b'\r') && buffer.get(i + 2) == Some(&b'\n') {
                return Some((i, 3));
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_blocks_split_on_blank_lines_with_lf_or_crlf() {
        let mut buf =
            b"event: a\ndata: 1\ndata: 2\n\n: keepalive\n\ndata: x\r\n\r\ndata: partial".to_vec();
        let first = take_event(&mut buf).unwrap().unwrap();
        assert_eq!(first.event, "a");
        assert_eq!(first.data, "1\n2");
        assert_eq!(take_event(&mut buf), Some(None));
        let third = take_event(&mut buf).unwrap().unwrap();
        assert_eq!(third.data, "x");
        assert_eq!(take_event(&mut buf), None);
        assert_eq!(buf, b"data: partial");
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
