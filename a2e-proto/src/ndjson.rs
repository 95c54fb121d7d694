//! NDJSON framing for byte streams: one compact JSON message per `\n`-terminated line.
//!
//! [`NdjsonCodec`] is a [`tokio_util::codec`] decoder and encoder. It strips a
//! trailing `\r` and a leading UTF-8 BOM, skips blank lines, and never holds
//! more than the maximum line length: an over-long line is reported once as
//! [`Frame::TooLong`] and discarded up to the next newline, after which the
//! stream goes on. Its state lives in the codec and the read buffer, so
//! polling a `FramedRead` inside `select!` loses nothing when cancelled.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde::Serialize;
use tokio_util::codec::{Decoder, Encoder};

use crate::decode::DEFAULT_MAX_BYTES;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One item read from an NDJSON stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A non-blank line, without its terminator, CR or BOM.
    Line(Bytes),
    /// A line longer than the limit was dropped; the stream resumes at the next newline.
    TooLong {
        /// The limit it broke.
        limit: usize,
    },
}

/// I/O failure of the codec.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The underlying stream failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// A message could not be serialized.
    #[error("cannot serialize message: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// NDJSON decoder/encoder with a maximum line length.
#[derive(Debug, Clone)]
pub struct NdjsonCodec {
    max_len: usize,
    /// Bytes of the buffer already searched for a newline.
    scanned: usize,
    /// Dropping the rest of an over-long line.
    discarding: bool,
}

impl Default for NdjsonCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_BYTES)
    }
}

impl NdjsonCodec {
    /// A codec refusing lines longer than `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        Self {
            max_len,
            scanned: 0,
            discarding: false,
        }
    }

    /// The maximum line length.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    fn clean(mut line: BytesMut) -> Option<Bytes> {
        if line.last() == Some(&b'\n') {
            line.truncate(line.len() - 1);
        }
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.starts_with(BOM) {
            line.advance(BOM.len());
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            Some(line.freeze())
        }
    }
}

impl Decoder for NdjsonCodec {
    type Item = Frame;
    type Error = CodecError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        loop {
            let newline = buf
                .get(self.scanned..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
                .map(|i| i + self.scanned);
            match newline {
                Some(at) => {
                    self.scanned = 0;
                    let line = buf.split_to(at + 1);
                    if self.discarding {
                        self.discarding = false;
                        continue;
                    }
                    // The terminator, a CR and a BOM do not count towards the limit.
                    if line.len().saturating_sub(1) > self.max_len + BOM.len() + 1 {
                        return Ok(Some(Frame::TooLong {
                            limit: self.max_len,
                        }));
                    }
                    match Self::clean(line) {
                        Some(l) if l.len() > self.max_len => {
                            return Ok(Some(Frame::TooLong {
                                limit: self.max_len,
                            }));
                        }
                        Some(l) => return Ok(Some(Frame::Line(l))),
                        None => continue,
                    }
                }
                None if self.discarding => {
                    buf.clear();
                    self.scanned = 0;
                    return Ok(None);
                }
                None if buf.len() > self.max_len + BOM.len() + 1 => {
                    buf.clear();
                    self.scanned = 0;
                    self.discarding = true;
                    return Ok(Some(Frame::TooLong {
                        limit: self.max_len,
                    }));
                }
                None => {
                    self.scanned = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        self.scanned = 0;
        if self.discarding || buf.is_empty() {
            buf.clear();
            self.discarding = false;
            return Ok(None);
        }
        let rest = buf.split();
        match Self::clean(rest) {
            Some(l) if l.len() > self.max_len => Ok(Some(Frame::TooLong {
                limit: self.max_len,
            })),
            Some(l) => Ok(Some(Frame::Line(l))),
            None => Ok(None),
        }
    }
}

/// Appends whatever is written to a buffer: the serializer's many small
/// writes each become one `extend_from_slice` (`bytes`' own writer goes
/// through the general `BufMut` path per write, which costs more per small
/// write).
struct Extend<'a>(&'a mut BytesMut);

impl std::io::Write for Extend<'_> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<T: Serialize> Encoder<T> for NdjsonCodec {
    type Error = CodecError;

    fn encode(&mut self, item: T, dst: &mut BytesMut) -> Result<(), CodecError> {
        // Straight into the output buffer: no line of its own to copy.
        let start = dst.len();
        if let Err(e) = serde_json::to_writer(Extend(dst), &item) {
            // Nothing of a message that failed to encode goes out.
            dst.truncate(start);
            return Err(e.into());
        }
        dst.put_u8(b'\n');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(codec: &mut NdjsonCodec, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(f) = codec.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        while let Some(f) = codec.decode_eof(&mut buf).unwrap() {
            out.push(f);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn splits_strips_and_skips() {
        let mut c = NdjsonCodec::new(100);
        let got = frames(
            &mut c,
            &[b"\xEF\xBB\xBF{\"a\":1}\r\n\n  \n{\"b\"", b":2}\n{\"c\":3}"],
        );
        assert_eq!(
            got,
            vec![line("{\"a\":1}"), line("{\"b\":2}"), line("{\"c\":3}")]
        );
    }

    #[test]
    fn over_long_line_is_reported_once_and_stream_resyncs() {
        let mut c = NdjsonCodec::new(8);
        let long = vec![b'x'; 50];
        let got = frames(
            &mut c,
            &[b"{\"a\":1}\n", &long, &long, b"tail\n{\"b\":2}\n"],
        );
        assert_eq!(
            got,
            vec![
                line("{\"a\":1}"),
                Frame::TooLong { limit: 8 },
                line("{\"b\":2}")
            ]
        );
    }

    #[test]
    fn encoder_writes_one_line() {
        let mut c = NdjsonCodec::default();
        let mut dst = BytesMut::new();
        c.encode(serde_json::json!({"text": "a\nb"}), &mut dst)
            .unwrap();
        assert_eq!(&dst[..], b"{\"text\":\"a\\nb\"}\n");
    }

    #[test]
    fn a_message_that_fails_to_encode_leaves_nothing_behind() {
        let mut c = NdjsonCodec::default();
        let mut dst = BytesMut::from(&b"{\"a\":1}\n"[..]);
        // JSON object keys must be strings: this map fails midway.
        let bad: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        assert!(c.encode(bad, &mut dst).is_err());
        assert_eq!(&dst[..], b"{\"a\":1}\n");
        c.encode(serde_json::json!(2), &mut dst).unwrap();
        assert_eq!(&dst[..], b"{\"a\":1}\n2\n");
    }
}
