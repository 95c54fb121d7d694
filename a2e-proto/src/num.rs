//! Lenient integers: JSON does not tell `30` from `30.0`, and senders such as
//! Python may write either. Integer fields accept a float with no fractional
//! part that fits the field's type; anything else is refused as usual.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, Unexpected, Visitor};

struct IntVisitor<T>(PhantomData<T>);

fn fit<T: TryFrom<i128>, E: de::Error>(v: i128, unexpected: Unexpected<'_>) -> Result<T, E> {
    T::try_from(v).map_err(|_| {
        E::invalid_value(
            unexpected,
            &format!("an integer in range for {}", std::any::type_name::<T>()).as_str(),
        )
    })
}

impl<'de, T: TryFrom<i128>> Visitor<'de> for IntVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        fit(i128::from(v), Unexpected::Signed(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        fit(i128::from(v), Unexpected::Unsigned(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        // 2^96 bounds every integer type used on the wire and is exact in f64.
        const LIMIT: f64 = 79_228_162_514_264_337_593_543_950_336.0;
        if v.is_finite() && v.fract() == 0.0 && v.abs() < LIMIT {
            fit(v as i128, Unexpected::Float(v))
        } else {
            Err(E::invalid_type(Unexpected::Float(v), &self))
        }
    }
}

/// An integer field that also accepts `30.0`.
pub(crate) fn int<'de, D: Deserializer<'de>, T: TryFrom<i128>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(IntVisitor(PhantomData))
}

struct OptVisitor<T>(PhantomData<T>);

impl<'de, T: TryFrom<i128>> Visitor<'de> for OptVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        int(d).map(Some)
    }
}

/// An optional integer field that also accepts `30.0`.
pub(crate) fn opt_int<'de, D: Deserializer<'de>, T: TryFrom<i128>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    d.deserialize_option(OptVisitor(PhantomData))
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize, Debug)]
    struct S {
        #[serde(deserialize_with = "super::int")]
        a: u32,
        #[serde(default, deserialize_with = "super::opt_int")]
        b: Option<i64>,
    }

    #[test]
    fn whole_floats_are_integers() {
        let s: S = serde_json::from_str(r#"{"a": 30.0, "b": -2.0}"#).unwrap();
        assert_eq!((s.a, s.b), (30, Some(-2)));
        let s: S = serde_json::from_str(r#"{"a": 7, "b": null}"#).unwrap();
        assert_eq!((s.a, s.b), (7, None));
        let s: S = serde_json::from_str(r#"{"a": 7}"#).unwrap();
        assert_eq!(s.b, None);
    }

    #[test]
    fn fractions_negatives_and_overflow_are_refused() {
        let e = serde_json::from_str::<S>(r#"{"a": 30.5}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("floating point `30.5`"), "{e}");
        assert!(serde_json::from_str::<S>(r#"{"a": -1}"#).is_err());
        assert!(serde_json::from_str::<S>(r#"{"a": 4294967296}"#).is_err());
        assert!(serde_json::from_str::<S>(r#"{"a": "3"}"#).is_err());
    }
}
