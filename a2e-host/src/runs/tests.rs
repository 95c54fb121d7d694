//! Tests of durable chain runs.
