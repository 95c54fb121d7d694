//! Creating the streams and KV buckets the JetStream store uses.

use async_nats::jetstream::{self, kv, stream};

use super::nats_err;
use crate::error::Result;

/// Opens the bucket, creating it when missing.
///
/// The bucket's stream is created here, in the layout the KV API uses
/// (`KV_<bucket>`, subjects `$KV.<bucket>.>`, roll-ups allowed, deletes
/// denied, direct gets, one message per subject per history entry),
/// rather than with `create_key_value`: that asks for the account's
/// information first, whose answer from nats-server 2.9 lacks fields the
/// client requires (`reserved_memory`, `reserved_storage`).
pub(crate) async fn bucket(js: &jetstream::Context, config: kv::Config) -> Result<kv::Store> {
    let name = config.bucket.clone();
    if let Ok(store) = js.get_key_value(&name).await {
        return Ok(store);
    }
    js.get_or_create_stream(stream::Config {
        name: format!("KV_{name}"),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: config.history.max(1),
        max_age: config.max_age,
        max_bytes: config.max_bytes,
        storage: config.storage,
        num_replicas: config.num_replicas.max(1),
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: stream::DiscardPolicy::New,
        ..Default::default()
    })
    .await
    .map_err(|e| nats_err(format!("create bucket {name}"), e))?;
    js.get_key_value(&name)
        .await
        .map_err(|e| nats_err(format!("open bucket {name}"), e))
}

pub(crate) async fn get_stream(
    js: &jetstream::Context,
    config: stream::Config,
) -> Result<stream::Stream> {
    let name = config.name.clone();
    js.get_or_create_stream(config)
        .await
        .map_err(|e| nats_err(format!("create stream {name}"), e))
}

pub(crate) async fn stream_of(js: &jetstream::Context, bucket: &str) -> Result<stream::Stream> {
    js.get_stream(format!("KV_{bucket}"))
        .await
        .map_err(|e| nats_err(format!("open stream KV_{bucket}"), e))
}
