//! Helpers of the suite: round trips through the wire types.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes `json` as `T` and encodes it again: the result must be `json`
/// itself (field order aside), so nothing is lost, added or respelled.
pub fn exact<T: Serialize + DeserializeOwned + std::fmt::Debug>(json: &str) -> T {
    let original: Value = serde_json::from_str(json).expect("example is JSON");
    let typed: T = a2a_proto::decode(json.as_bytes()).expect("example decodes");
    let again = serde_json::to_value(&typed).expect("encodes");
    assert_eq!(again, original, "round trip changed the JSON of {typed:#?}");
    typed
}

/// Decodes `json` as `T`, encodes and decodes again: the second decoding
/// equals the first (for examples that leave out fields this crate always
/// writes, or carry fields it ignores).
pub fn stable<T>(json: &str) -> T
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let typed: T = a2a_proto::decode(json.as_bytes()).expect("example decodes");
    let encoded = serde_json::to_vec(&typed).expect("encodes");
    let again: T = a2a_proto::decode(&encoded).expect("re-decodes");
    assert_eq!(again, typed);
    typed
}
