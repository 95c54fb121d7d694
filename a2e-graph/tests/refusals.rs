//! Invalid documents are refused with the errors `a2e validate` gives: the
//! same parse (`a2e-document`) and the same validation functions.

use a2e_graph::{DocumentError, Format, Graph, GraphError, parse_document};
use serde_json::json;

#[test]
fn a_chain_with_a_cycle_is_refused_with_the_engines_error() {
    let text = json!({
        "entry_node": "a",
        "nodes": [
            {"node_id": "a", "kind": "tool", "name": "t", "input_map": {"x": "b.output"}},
            {"node_id": "b", "kind": "tool", "name": "t", "input_map": {"y": "a.output"}}
        ]
    })
    .to_string();
    let err = Graph::parse(&text).unwrap_err();
    let a2e_document::Document::Chain(req) = parse_document(&text, None).unwrap() else {
        panic!("not a chain")
    };
    let expected = a2e_chain::validate(&req, &a2e_chain::ChainConfig::default()).unwrap_err();
    match &err {
        GraphError::Chain(e) => assert_eq!(e, &expected),
        other => panic!("{other:?}"),
    }
    assert_eq!(err.to_string(), expected.to_string());
    assert!(err.to_string().starts_with("chain has a cycle: "), "{err}");
    assert_eq!(err.chain_code(), Some(a2e_proto::ErrorCode::CHAIN_CYCLE));
}

#[test]
fn a_chain_naming_an_unknown_node_is_refused_naming_node_and_field() {
    let text = r#"{"entry_node": "a", "nodes": [
        {"node_id": "a", "kind": "tool", "name": "t", "next_node": "nowhere"}]}"#;
    let err = Graph::parse(text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "node `a`: `next_node` names unknown node `nowhere`"
    );
    assert_eq!(
        err.chain_code(),
        Some(a2e_proto::ErrorCode::SCHEMA_VIOLATION)
    );
}

#[test]
fn a_dag_whose_reference_has_no_edge_is_refused_with_the_validators_report() {
    let dag: acmp_dag::Dag = serde_json::from_value(json!({
        "dag_id": "d",
        "tasks": [
            {"task_id": "a", "capability": "c", "input": {"type": "text", "data": "x"}},
            {"task_id": "b", "capability": "c", "input": {"source": {"from_task": "a"}}}
        ],
        "edges": []
    }))
    .unwrap();
    let expected = acmp_dag::ValidatedDag::new(dag.clone(), &acmp_dag::ValidationLimits::default())
        .unwrap_err();
    let err = a2e_graph::dag::dag_graph(&dag, &acmp_dag::ValidationLimits::default()).unwrap_err();
    match &err {
        GraphError::Dag(report) => assert_eq!(report, &expected),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().starts_with("invalid DAG: "), "{err}");
    // Through the text, the same.
    let via_text = Graph::parse(&serde_json::to_string(&dag).unwrap()).unwrap_err();
    assert_eq!(via_text.to_string(), expected.to_string());
}

#[test]
fn an_invalid_ontheia_chain_is_refused_with_every_rule_it_breaks() {
    let text = r#"{"steps": [{"id": "l", "type": "loop", "count": 99, "steps": []}]}"#;
    let err = Graph::parse(text).unwrap_err();
    let expected = ontheia::parse(text).unwrap_err();
    match &err {
        GraphError::Document(DocumentError::Ontheia(e)) => assert_eq!(e, &expected),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!("not a valid Ontheia chain: {expected}")
    );
    // A typed document is validated too.
    let mut doc =
        ontheia::parse(r#"{"steps": [{"id": "t", "type": "delay", "delay_ms": 0}]}"#).unwrap();
    doc.edges.push(ontheia::Edge {
        from: "t".into(),
        to: "missing".into(),
        map: None,
    });
    let err = a2e_graph::ontheia::ontheia_graph(&doc).unwrap_err();
    assert!(matches!(err, GraphError::Ontheia(_)), "{err:?}");
    assert!(err.to_string().contains("unknown_step"), "{err}");
}

#[test]
fn a_file_that_is_no_document_is_refused_as_a2e_validate_refuses_it() {
    for (text, expected) in [
        ("{", "not valid JSON: "),
        ("[]", "a document must be a JSON object"),
        (r#"{"foo": 1}"#, "not a document the host runs: "),
        (r#"{"nodes": []}"#, "a chain needs at least one node"),
        (
            r#"{"tasks": [], "dag": 1}"#,
            "unknown top-level key for an ACMP DAG: `dag`",
        ),
    ] {
        let err = Graph::parse(text).unwrap_err();
        assert!(matches!(err, GraphError::Document(_)), "{err:?}");
        assert!(err.to_string().starts_with(expected), "{text}: {err}");
        assert_eq!(
            err.to_string(),
            parse_document(text, None).unwrap_err().to_string()
        );
    }
}

#[test]
fn too_large_a_graph_for_an_svg_is_refused_but_dot_and_mermaid_draw_it() {
    // Every node reads every earlier one: far more places than the limit.
    let nodes: Vec<_> = (0..60)
        .map(|i| {
            let reads: serde_json::Map<String, serde_json::Value> = (0..i)
                .map(|j| (format!("k{j}"), json!(format!("n{j}.output"))))
                .collect();
            json!({"node_id": format!("n{i}"), "kind": "tool", "name": "t", "input_map": reads})
        })
        .collect();
    let text = json!({"entry_node": "n0", "nodes": nodes}).to_string();
    let graph = Graph::parse(&text).unwrap();
    let err = graph.render(Format::Svg, None).unwrap_err();
    match err {
        GraphError::TooLarge {
            nodes,
            edges,
            cells,
            limit,
        } => {
            assert_eq!((nodes, edges), (60, 60 * 59 / 2));
            assert!(
                cells > limit && limit == a2e_graph::MAX_SVG_CELLS,
                "{cells}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        graph
            .render(Format::Dot, None)
            .unwrap()
            .matches(" -> ")
            .count(),
        60 * 59 / 2
    );
    assert_eq!(
        graph
            .render(Format::Mermaid, None)
            .unwrap()
            .matches(" -.->")
            .count(),
        60 * 59 / 2
    );
}
