//! What a benchmark prints: one JSON object per line, figures rounded to
//! the digits that mean something, and ratios against a peer measured in the
//! same run, with the target a ratio must meet where it has one.

use serde_json::{Value, json};

/// `x` rounded to `digits` decimal digits.
pub fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Prints `line` as one JSON line on stdout.
pub fn emit(line: &Value) {
    println!("{line}");
}

/// Adds the fields of the object `extra` to the object `line` (a field of
/// both takes `extra`'s value); anything but two objects is left as it is.
pub fn extend(line: &mut Value, extra: Value) {
    if let (Some(line), Value::Object(extra)) = (line.as_object_mut(), extra) {
        line.extend(extra);
    }
}

/// What a ratio must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// At least this (ours over a limit: a share of it).
    AtLeast(f64),
    /// At most this (ours over a peer or an ideal: a cost).
    AtMost(f64),
}

/// The line of ratio `name`: its value to two digits, and with a target,
/// the target and whether the rounded value meets it:
///
/// ```text
/// {"ratio":"sequential_vs_raw","value":0.71,"target":">= 0.6","met":true}
/// ```
pub fn ratio(name: &str, value: f64, target: Option<Target>) -> Value {
    let value = round(value, 2);
    match target {
        Some(Target::AtLeast(t)) => {
            json!({"ratio": name, "value": value, "target": format!(">= {t}"), "met": value >= t})
        }
        Some(Target::AtMost(t)) => {
            json!({"ratio": name, "value": value, "target": format!("<= {t}"), "met": value <= t})
        }
        None => json!({"ratio": name, "value": value}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding() {
        assert_eq!(round(0.714_9, 2), 0.71);
        assert_eq!(round(1234.56, 0), 1235.0);
        assert_eq!(round(12.345_67, 1), 12.3);
    }

    #[test]
    fn a_ratio_is_met_on_its_rounded_value() {
        let line = ratio("sequential_vs_raw", 0.597, Some(Target::AtLeast(0.6)));
        assert_eq!(
            line,
            json!({"ratio": "sequential_vs_raw", "value": 0.6, "target": ">= 0.6", "met": true})
        );
        let line = ratio("map_vs_ideal", 1.42, Some(Target::AtMost(1.3)));
        assert_eq!(line["met"], false);
        assert_eq!(line["target"], "<= 1.3");
        assert_eq!(
            ratio("events_vs_none", 1.234, None),
            json!({"ratio": "events_vs_none", "value": 1.23})
        );
    }

    #[test]
    fn extend_adds_fields() {
        let mut line = json!({"figure": "x", "ms": 1.0});
        extend(&mut line, json!({"nodes": 1000, "ms": 2.0}));
        assert_eq!(line, json!({"figure": "x", "ms": 2.0, "nodes": 1000}));
    }
}
