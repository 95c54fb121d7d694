//! The client's reading: lines found in place in one large buffer and lent
//! out, instead of each copied into a `String` (checked as UTF-8 on the
//! way) and searched with `str::contains`.
//!
//! The client's own cost lands in every figure it takes, so it reads as
//! little as it can (a prebuilt [`memchr::memmem::Finder`], no copy): what
//! the figures measure is the peers, not the client's searching.

use std::io::{self, Read};

/// Lines of `inner`, each lent until the next is asked for.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Where the next line starts.
    start: usize,
    /// End of the bytes read.
    end: usize,
    /// Bytes from `start` known to hold no newline.
    scanned: usize,
}

impl<R: Read> LineReader<R> {
    /// Reads `inner` into a buffer of `capacity` bytes (grown for a longer
    /// line).
    pub fn new(inner: R, capacity: usize) -> Self {
        Self {
            inner,
            buf: vec![0; capacity.max(1)],
            start: 0,
            end: 0,
            scanned: 0,
        }
    }

    /// The next line without its newline; `None` once the input has ended
    /// (a last line without a newline is still returned).
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        loop {
            let from = self.start + self.scanned;
            if let Some(at) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let line = self.start..from + at;
                self.start = from + at + 1;
                self.scanned = 0;
                return Ok(Some(&self.buf[line]));
            }
            self.scanned = self.end - self.start;
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let read = self.inner.read(&mut self.buf[self.end..])?;
            if read == 0 {
                if self.start == self.end {
                    return Ok(None);
                }
                let line = self.start..self.end;
                self.start = self.end;
                self.scanned = 0;
                return Ok(Some(&self.buf[line]));
            }
            self.end += read;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes `step` at a time.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn all_lines(bytes: &[u8], step: usize, capacity: usize) -> Vec<Vec<u8>> {
        let mut reader = LineReader::new(Trickle { bytes, step }, capacity);
        let mut lines = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            lines.push(line.to_vec());
        }
        lines
    }

    #[test]
    fn lines_come_whole_however_the_input_is_cut() {
        let long = "x".repeat(100);
        let input = format!("a\n\nbc\n{long}\nlast");
        let expected: Vec<Vec<u8>> = input.split('\n').map(|l| l.as_bytes().to_vec()).collect();
        for step in [1, 2, 3, 7, 64, 1000] {
            for capacity in [1, 4, 16, 4096] {
                assert_eq!(
                    all_lines(input.as_bytes(), step, capacity),
                    expected,
                    "step {step}, capacity {capacity}"
                );
            }
        }
    }

    #[test]
    fn a_final_newline_ends_the_last_line_and_nothing_more_follows() {
        assert_eq!(
            all_lines(b"one\ntwo\n", 3, 4),
            vec![b"one".to_vec(), b"two".to_vec()]
        );
        assert!(all_lines(b"", 3, 4).is_empty());
    }
}
