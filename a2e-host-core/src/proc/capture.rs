//! Output capture: stdout and stderr read line by line with per-stream byte caps.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::mpsc;

/// Longest line passed on at once; a longer line is split into pieces of this size.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Which output stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl StreamKind {
    /// `stdout` or `stderr`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }
}

/// One line of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Where it came from.
    pub stream: StreamKind,
    /// The text, without its line ending; invalid UTF-8 replaced by U+FFFD.
    pub text: String,
    /// Whether a newline ended it (false for a last unterminated line and for
    /// the leading pieces of a line split at [`MAX_LINE_BYTES`]).
    pub newline: bool,
}

/// Reads `reader` to its end and sends each line tagged with `stream` on `tx`.
/// Lines are split at [`MAX_LINE_BYTES`]. When the receiver is gone the rest is
/// read and dropped, so the writer never blocks on a full pipe.
pub async fn forward_lines<R: AsyncRead + Unpin>(
    reader: R,
    stream: StreamKind,
    tx: mpsc::Sender<Line>,
) -> io::Result<()> {
    let mut reader = BufReader::new(reader);
    let mut line: Vec<u8> = Vec::new();
    let mut open = true;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if !line.is_empty() && open {
                let _ = tx.send(make_line(stream, &line, false)).await;
            }
            return Ok(());
        }
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        let window = buf.get(..room.min(buf.len())).unwrap_or(buf);
        let (taken, complete) = match window.iter().position(|b| *b == b'\n') {
            Some(i) => {
                line.extend_from_slice(window.get(..i).unwrap_or_default());
                (i + 1, true)
            }
            None => {
                line.extend_from_slice(window);
                (window.len(), false)
            }
        };
        reader.consume(taken);
        if complete || line.len() >= MAX_LINE_BYTES {
            if open && tx.send(make_line(stream, &line, complete)).await.is_err() {
                open = false;
            }
            line.clear();
        }
    }
}

fn make_line(stream: StreamKind, bytes: &[u8], newline: bool) -> Line {
    let bytes = if newline {
        bytes.strip_suffix(b"\r").unwrap_or(bytes)
    } else {
        bytes
    };
    Line {
        stream,
        text: String::from_utf8_lossy(bytes).into_owned(),
        newline,
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn prefix_at_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// What one stream may pass on and what of it is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The kept text (lines joined as they came, each newline kept).
    pub text: String,
    /// Whether the stream went past its cap.
    pub truncated: bool,
    /// Bytes passed on so far.
    pub bytes: usize,
    cap: Option<usize>,
    keep: bool,
}

impl Captured {
    /// A budget of `cap` bytes (`None`: no limit), keeping the text when `keep`.
    pub fn new(cap: Option<usize>, keep: bool) -> Self {
        Self {
            cap,
            keep,
            ..Self::default()
        }
    }

    /// Takes in a line: the part of it within the cap, or `None` once the cap is reached.
    pub fn admit(&mut self, mut line: Line) -> Option<Line> {
        if self.truncated {
            return None;
        }
        let need = line.text.len() + usize::from(line.newline);
        if let Some(cap) = self.cap {
            let room = cap.saturating_sub(self.bytes);
            if need > room {
                self.truncated = true;
                let cut = prefix_at_boundary(&line.text, room).len();
                if cut == 0 {
                    return None;
                }
                line.text.truncate(cut);
                line.newline = false;
            }
        }
        self.bytes += line.text.len() + usize::from(line.newline);
        if self.keep {
            self.text.push_str(&line.text);
            if line.newline {
                self.text.push('\n');
            }
        }
        Some(line)
    }
}
