//! Telemetry of an ACMP DAG run by the real `a2e` binary: `a2e run` on the
//! example text pipeline exports one trace — the DAG's `invoke_workflow`, a
//! span per task under it, and each task's tool call under its task.

use crate::otlp_support;

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry_proto::tonic::trace::v1::Span;
use otlp_support::{attr, hex, named, receiver, wait_for};

#[test]
fn a_dag_run_is_one_trace_with_a_span_per_task_over_its_tool_call() {
    let (endpoint, got, _runtime) = receiver();
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["run", "../dags/text-pipeline.json", "--root", "."])
        .current_dir(&workspace)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tasks = [
        "task_split",
        "task_stats_a",
        "task_stats_b",
        "task_stats_c",
        "task_aggregate",
    ];
    assert!(
        wait_for(&got, Duration::from_secs(10), |r| {
            named(&r.spans, "invoke_workflow dag_text_pipeline").len() == 1
                && r.spans
                    .iter()
                    .filter(|s| s.name.starts_with("acmp_task "))
                    .count()
                    == tasks.len()
        }),
        "spans did not arrive: {:?}",
        got.lock()
            .unwrap()
            .spans
            .iter()
            .map(|s| &s.name)
            .collect::<Vec<_>>()
    );
    let got = got.lock().unwrap();
    let workflow = named(&got.spans, "invoke_workflow dag_text_pipeline")[0];
    assert_eq!(
        attr(&workflow.attributes, "a2e.workflow.kind").as_deref(),
        Some("acmp")
    );
    let by_id: HashMap<String, &Span> = got
        .spans
        .iter()
        .filter(|s| s.name.starts_with("acmp_task "))
        .map(|s| (attr(&s.attributes, "a2e.node.id").unwrap_or_default(), s))
        .collect();
    for task in tasks {
        let span = by_id
            .get(task)
            .unwrap_or_else(|| panic!("no span for {task}: {:?}", by_id.keys()));
        assert_eq!(span.parent_span_id, workflow.span_id, "{task}");
        assert_eq!(hex(&span.trace_id), hex(&workflow.trace_id), "{task}");
    }
    // Each task's call (four tools and a skill) hangs under its task's span.
    for (call, task) in [
        ("execute_tool split_text", "task_split"),
        ("invoke_agent aggregate_stats", "task_aggregate"),
    ] {
        let spans = named(&got.spans, call);
        assert_eq!(spans.len(), 1, "{call}");
        assert_eq!(spans[0].parent_span_id, by_id[task].span_id, "{call}");
    }
    let stats = named(&got.spans, "execute_tool text_stats");
    assert_eq!(stats.len(), 3);
    let mut parents: Vec<&Vec<u8>> = stats.iter().map(|s| &s.parent_span_id).collect();
    parents.sort();
    let mut expected: Vec<&Vec<u8>> = ["task_stats_a", "task_stats_b", "task_stats_c"]
        .iter()
        .map(|t| &by_id[*t].span_id)
        .collect();
    expected.sort();
    assert_eq!(parents, expected);
}
