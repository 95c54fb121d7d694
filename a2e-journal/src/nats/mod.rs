//! The journal on NATS JetStream.
