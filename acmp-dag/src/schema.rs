//! JSON Schemas (draft 2020-12) of the wire types, generated with schemars.

use serde_json::Value;

use crate::{
    AcmpCapabilities, AcmpError, Cancel, Dag, Heartbeat, InputChunk, InvokeParams, InvokeResult,
    StreamChunk, Task, TaskState,
};

fn schema<T: schemars::JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

/// Every wire type's schema, as `(file stem, schema)`; the stems name files such as
/// `acmp.task.json`.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("acmp.task", schema::<Task>()),
        ("acmp.dag", schema::<Dag>()),
        ("acmp.taskState", schema::<TaskState>()),
        ("acmp.invoke", schema::<InvokeParams>()),
        ("acmp.result", schema::<InvokeResult>()),
        ("acmp.error", schema::<AcmpError>()),
        ("acmp.inputChunk", schema::<InputChunk>()),
        ("acmp.streamChunk", schema::<StreamChunk>()),
        ("acmp.heartbeat", schema::<Heartbeat>()),
        ("acmp.cancel", schema::<Cancel>()),
        ("acmp.capabilities", schema::<AcmpCapabilities>()),
    ]
}
