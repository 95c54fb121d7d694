//! The envelope every message shares: type tag, id, version, timestamp, and
//! the request/response correlation traits.

use std::fmt;
use std::marker::PhantomData;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// A message type with a fixed wire `type` string.
pub trait WireType {
    /// The `type` field on the wire, e.g. `tool/call/req`.
    const TYPE: &'static str;
}

/// A zero-sized `type` field: serializes as `M::TYPE` and accepts only that string.
pub struct TypeTag<M>(PhantomData<fn() -> M>);

impl<M> TypeTag<M> {
    /// The tag (there is only one value).
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<M> Default for TypeTag<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M> Clone for TypeTag<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for TypeTag<M> {}

impl<M> PartialEq for TypeTag<M> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<M> Eq for TypeTag<M> {}

impl<M: WireType> fmt::Debug for TypeTag<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", M::TYPE)
    }
}

impl<M: WireType> Serialize for TypeTag<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(M::TYPE)
    }
}

impl<'de, M: WireType> Deserialize<'de> for TypeTag<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let found = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        if found == M::TYPE {
            Ok(Self::new())
        } else {
            Err(serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&found),
                &M::TYPE,
            ))
        }
    }
}

#[cfg(feature = "schema")]
impl<M: WireType> schemars::JsonSchema for TypeTag<M> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("TypeTag")
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Owned(format!("TypeTag<{}>", M::TYPE))
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "const": M::TYPE })
    }
}

#[cfg(feature = "arbitrary")]
impl<M: WireType + 'static> proptest::arbitrary::Arbitrary for TypeTag<M> {
    type Parameters = ();
    type Strategy = proptest::strategy::Just<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        proptest::strategy::Just(Self::new())
    }
}

/// A fresh message id: a random UUID (v4) in its 32-hex-digit form.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A fresh message id written into `buf` (no allocation): the same form as
/// [`new_id`]'s.
pub fn new_id_in(buf: &mut [u8; 32]) -> &str {
    uuid::Uuid::new_v4().simple().encode_lower(buf)
}

/// A fresh chain id: 8 hex digits.
pub fn new_chain_id() -> String {
    let mut id = new_id();
    id.truncate(8);
    id
}

/// The default `version` field.
pub fn default_version() -> String {
    PROTOCOL_VERSION.to_owned()
}

/// Now, as Unix epoch seconds.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A request: a message whose `id` responses echo in `req_id`.
pub trait Request {
    /// This request's id.
    fn id(&self) -> &str;
}

/// A response or event: a message that names the request it answers.
pub trait Response: Sized {
    /// The id of the request this answers.
    fn req_id(&self) -> &str;
    /// Sets the id of the request this answers.
    fn set_req_id(&mut self, req_id: String);

    /// A default response of this type with `req_id` filled from `req`.
    ///
    /// ```
    /// use a2e_proto::{Response, ToolListRequest, ToolListResponse};
    /// let req = ToolListRequest::default();
    /// let resp = ToolListResponse::for_request(&req);
    /// assert_eq!(resp.req_id, req.id);
    /// ```
    fn for_request(req: &impl Request) -> Self
    where
        Self: Default,
    {
        let mut resp = Self::default();
        resp.set_req_id(req.id().to_owned());
        resp
    }
}

/// Serde helper: `true`.
pub(crate) fn yes() -> bool {
    true
}
