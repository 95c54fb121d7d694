//! `chain/event` lines written straight from the state that produced them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::chains::ChainPhase;

/// What every line starts with, up to the id's digits.
const OPEN: &[u8] = b"{\"type\":\"chain/event\",\"id\":\"";

/// Writes the `chain/event` lines of one chain request straight from the
/// state that produced them: the same NDJSON line as the
/// [`ChainEvent`](crate::ChainEvent) with these fields (see the test),
/// without copying the output or building a [`crate::Message`]. The request
/// id is encoded once; the fixed parts of the line are written as they are.
/// The host encodes a streaming chain's events with it where they happen.
///
/// Event ids are 32 lowercase hex digits, as every message id: 16 random to
/// the writer, then a count of its events (unique without drawing random
/// bits per event). `ts` is written from the clock's seconds and
/// microseconds, the number a float of them would print as; the clock is
/// read from the CPU's time-stamp counter, anchored to the system clock
/// once a second.
#[derive(Debug)]
pub struct ChainEventWriter {
    /// `req_id` as a JSON string.
    req_id: Vec<u8>,
    /// The first 16 digits of every id, random to this writer.
    id_prefix: [u8; 16],
    /// The part between `ts` and `node_id`'s value:
    /// `,"req_id":"…","node_id":`.
    middle: Vec<u8>,
    /// Events written.
    count: u64,
    /// Where `ts` comes from.
    clock: WallClock,
}

impl Clone for ChainEventWriter {
    /// A writer for the same request, with ids of its own.
    fn clone(&self) -> Self {
        Self::from_json_id(self.req_id.clone())
    }
}

impl ChainEventWriter {
    /// The writer for the events of request `req_id`.
    pub fn new(req_id: &str) -> Self {
        Self::from_json_id(json_string(req_id))
    }

    fn from_json_id(req_id: Vec<u8>) -> Self {
        let mut middle = b",\"req_id\":".to_vec();
        middle.extend_from_slice(&req_id);
        middle.extend_from_slice(b",\"node_id\":");
        Self {
            req_id,
            id_prefix: hex16(uuid::Uuid::new_v4().as_u64_pair().0),
            middle,
            count: 0,
            clock: WallClock::new(),
        }
    }

    /// Calibrates the counter `ts` is read from, once per process, so that
    /// no event waits for it. `quanta` spins until its estimate settles:
    /// about 0.6 ms, longer when the thread is often interrupted (7 ms once
    /// in twelve starts on a 2-core machine, ~40 ms under a 20 kHz
    /// profiler), never past its 200 ms cap.
    pub fn calibrate() {
        let _ = quanta::Instant::now();
    }

    /// Appends one event, with a fresh id and made now, as one NDJSON line
    /// (ending in `\n`) to `out`; the time written as its `ts` (since the
    /// Unix epoch), for a caller that batches lines by age.
    pub fn write_line(&mut self, out: &mut Vec<u8>, event: &ChainEventFields<'_>) -> Duration {
        let count = self.count;
        self.count = self.count.wrapping_add(1);
        let now = self.clock.now();
        // Room for all but the output: one growth check for the fixed parts.
        out.reserve(self.middle.len() + event.node_id.len() + event.error.len() + 192);
        out.extend_from_slice(OPEN);
        out.extend_from_slice(&self.id_prefix);
        // The count's 16 digits: with the prefix's, the id's 32.
        out.extend_from_slice(&hex16(count));
        out.extend_from_slice(b"\",\"version\":\"");
        out.extend_from_slice(crate::PROTOCOL_VERSION.as_bytes());
        out.extend_from_slice(b"\",\"ts\":");
        write_seconds(out, now);
        out.extend_from_slice(&self.middle);
        write_str(out, event.node_id);
        out.extend_from_slice(b",\"phase\":");
        // The phases a chain reports on every node, as constants.
        match event.phase.as_str() {
            "start" => out.extend_from_slice(b"\"start\""),
            "done" => out.extend_from_slice(b"\"done\""),
            other => write_str(out, other),
        }
        if event.output.is_null() {
            out.extend_from_slice(b",\"output\":null,\"error\":");
        } else {
            out.extend_from_slice(b",\"output\":");
            write_json(out, event.output);
            out.extend_from_slice(b",\"error\":");
        }
        if event.error.is_empty() {
            out.extend_from_slice(b"\"\",\"seq\":");
        } else {
            write_str(out, event.error);
            out.extend_from_slice(b",\"seq\":");
        }
        out.extend_from_slice(itoa::Buffer::new().format(event.seq).as_bytes());
        out.extend_from_slice(b"}\n");
        now
    }
}

/// The wall clock (time since the Unix epoch) at a fraction of the cost of
/// reading it: the system's clock is read once, then the CPU's time-stamp
/// counter (about 10 ns a read against 35 for the system's clock; `quanta`
/// calibrates it, and falls back to the system's monotonic clock where the
/// counter is unfit) measures the time since. Read again each
/// [`WallClock::ANCHOR_AGE`], so that the two clocks never drift apart by
/// more than the counter drifts in that time (microseconds), and a step of
/// the system's clock shows within it.
#[derive(Debug, Clone)]
struct WallClock {
    /// The system's clock at `at`.
    wall: Duration,
    /// The counter when `wall` was read.
    at: quanta::Instant,
}

impl WallClock {
    /// How long one reading of the system's clock serves.
    const ANCHOR_AGE: Duration = Duration::from_secs(1);

    fn new() -> Self {
        Self {
            at: quanta::Instant::now(),
            wall: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        }
    }

    /// The time since the Unix epoch.
    fn now(&mut self) -> Duration {
        let since = quanta::Instant::now().saturating_duration_since(self.at);
        if since >= Self::ANCHOR_AGE {
            *self = Self::new();
            return self.wall;
        }
        self.wall + since
    }
}

/// `value`'s 16 lowercase hex digits, most significant first.
fn hex16(value: u64) -> [u8; 16] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (i, digit) in out.iter_mut().enumerate() {
        let nibble = (value >> (60 - 4 * i)) & 0xf;
        *digit = DIGITS.get(nibble as usize).copied().unwrap_or(b'0');
    }
    out
}

/// `s` as a JSON string: quoted as it is when nothing in it needs an escape
/// (ids, phases, most messages), else through serde_json.
fn write_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        write_json(out, s);
    }
}

/// What changes from one `chain/event` to the next, borrowed.
#[derive(Debug, Clone)]
pub struct ChainEventFields<'a> {
    /// The node concerned.
    pub node_id: &'a str,
    /// The phase.
    pub phase: &'a ChainPhase,
    /// The node's output (`null` unless `done`).
    pub output: &'a Value,
    /// The error message (empty unless `error`).
    pub error: &'a str,
    /// 0, 1, 2, … per chain request.
    pub seq: u64,
}

/// `since` (the Unix epoch) in seconds with microseconds, appended as a
/// JSON number: `secs.micros` without trailing zeros (`secs.0` on the
/// second), which is how the float of that instant prints (a microsecond is
/// wider than the float's step at today's seconds), without formatting a
/// float.
fn write_seconds(out: &mut Vec<u8>, since: Duration) {
    out.extend_from_slice(itoa::Buffer::new().format(since.as_secs()).as_bytes());
    out.push(b'.');
    let mut micros = since.subsec_micros();
    if micros == 0 {
        out.push(b'0');
        return;
    }
    let mut digits = [b'0'; 6];
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + u8::try_from(micros % 10).unwrap_or(0);
        micros /= 10;
    }
    let end = digits.iter().rposition(|d| *d != b'0').map_or(0, |i| i + 1);
    out.extend_from_slice(digits.get(..end).unwrap_or_default());
}

/// `value` as JSON, appended to `out`. Strings, numbers, a phase and a
/// `Value` always serialise (a `Value`'s keys are strings): nothing to fail.
fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(&mut *out, value);
}

fn json_string(value: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 2);
    write_json(&mut out, value);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chains::ChainEvent;

    #[test]
    fn a_written_event_is_the_line_of_the_owned_one() {
        let output = serde_json::json!({"x": [1, "two\n", {"y": null}], "z": 1.5});
        let mut writer = ChainEventWriter::new("req-\u{e9}\"\u{1}");
        for (phase, output, error) in [
            (ChainPhase::DONE, output, ""),
            (ChainPhase::START, Value::Null, ""),
            (
                ChainPhase::ERROR,
                Value::Null,
                "it \"failed\"\tbadly\u{7f}\u{2028}",
            ),
            (ChainPhase::new("later"), Value::Bool(true), "\u{0}\u{1f}\\"),
        ] {
            let fields = ChainEventFields {
                node_id: "node[3]\r",
                phase: &phase,
                output: &output,
                error,
                seq: 41,
            };
            let mut line = b"before\n".to_vec();
            writer.write_line(&mut line, &fields);
            let back = crate::decode(&line[7..line.len() - 1]).unwrap();
            let crate::Message::ChainEvent(back) = back else {
                panic!("not a chain/event: {back:?}");
            };
            let owned = ChainEvent {
                req_id: "req-\u{e9}\"\u{1}".into(),
                node_id: "node[3]\r".into(),
                phase: phase.clone(),
                output: output.clone(),
                error: error.into(),
                seq: 41,
                id: back.id.clone(),
                ts: back.ts,
                ..ChainEvent::default()
            };
            assert_eq!(back, owned);
            assert_eq!(back.id.len(), 32);
            // Byte for byte the line the message encodes to.
            let mut expected = b"before\n".to_vec();
            expected.extend(crate::Message::from(owned).to_json());
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8_lossy(&line),
                String::from_utf8_lossy(&expected)
            );
        }
    }

    #[test]
    fn event_ids_are_unique_hex_and_ts_is_now() {
        let mut writer = ChainEventWriter::new("r");
        let mut other = writer.clone();
        let fields = ChainEventFields {
            node_id: "n",
            phase: &ChainPhase::START,
            output: &Value::Null,
            error: "",
            seq: 0,
        };
        let mut ids = std::collections::HashSet::new();
        for w in [&mut writer, &mut other] {
            for _ in 0..100 {
                let mut line = Vec::new();
                w.write_line(&mut line, &fields);
                let crate::Message::ChainEvent(event) =
                    crate::decode(&line[..line.len() - 1]).unwrap()
                else {
                    panic!("not a chain/event");
                };
                assert_eq!(event.id.len(), 32);
                assert!(
                    event
                        .id
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                );
                assert!(ids.insert(event.id), "ids repeat");
                assert!(
                    (crate::envelope::now() - event.ts).abs() < 5.0,
                    "{}",
                    event.ts
                );
            }
        }
        // The clock's microseconds print as the float of them does.
        for (micros, text) in [
            (0, "1764621234.0"),
            (1, "1764621234.000001"),
            (10, "1764621234.00001"),
            (120_000, "1764621234.12"),
            (999_999, "1764621234.999999"),
            (123_456, "1764621234.123456"),
        ] {
            let mut out = Vec::new();
            write_seconds(
                &mut out,
                std::time::Duration::new(1_764_621_234, micros * 1000 + 999),
            );
            assert_eq!(String::from_utf8_lossy(&out), text);
            let parsed: f64 = serde_json::from_slice(&out).unwrap();
            assert_eq!(serde_json::to_vec(&parsed).unwrap(), out, "{micros}");
        }
    }

    #[test]
    fn the_wall_clock_counts_from_its_anchor_and_reanchors_once_old() {
        let system = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        // Within its age, a reading is the anchor plus the counter's time.
        let mut clock = WallClock {
            wall: Duration::from_secs(7),
            at: quanta::Instant::now(),
        };
        let read = clock.now();
        assert!(
            read >= Duration::from_secs(7) && read < Duration::from_secs(8),
            "{read:?}"
        );
        // Past it, the system's clock is read again.
        let mut clock = WallClock {
            wall: Duration::from_secs(7),
            at: quanta::Instant::now()
                .checked_sub(WallClock::ANCHOR_AGE * 2)
                .unwrap(),
        };
        let before = system();
        let read = clock.now();
        assert!(
            read >= before && read <= system(),
            "{read:?} against {before:?}"
        );
        assert!(clock.now() >= read);
        // A fresh clock reads what the system's clock reads, and never goes back.
        let mut clock = WallClock::new();
        let mut last = Duration::ZERO;
        for _ in 0..1000 {
            let before = system();
            let read = clock.now();
            let after = system();
            assert!(read >= last, "went back: {read:?} after {last:?}");
            let slack = Duration::from_millis(5);
            assert!(read + slack >= before && read <= after + slack, "{read:?}");
            last = read;
        }
    }
}
