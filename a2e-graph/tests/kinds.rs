//! What each document gives: the edge kinds and labels, in the model and in
//! each format.

use std::time::Duration;

use a2e_graph::{EdgeKind, Format, Graph, NodeRun, NodeState, RunStates};
use serde_json::json;

/// `(from, to, kind, label)` of every edge.
fn edges(graph: &Graph) -> Vec<(String, String, EdgeKind, String)> {
    graph
        .edges
        .iter()
        .map(|e| {
            (
                graph.nodes[e.from].id.clone(),
                graph.nodes[e.to].id.clone(),
                e.kind,
                e.label.clone(),
            )
        })
        .collect()
}

fn e(from: &str, to: &str, kind: EdgeKind, label: &str) -> (String, String, EdgeKind, String) {
    (from.into(), to.into(), kind, label.into())
}

#[test]
fn a_chain_draws_order_branches_maps_fallbacks_and_reads() {
    let graph = Graph::parse(
        &json!({
            "chain_id": "kinds",
            "entry_node": "list",
            "nodes": [
                {"node_id": "list", "kind": "proc", "name": "ls", "next_node": "each", "input": {"cmd": ["ls"]},
                 "on_error": "recover"},
                {"node_id": "recover", "kind": "skill", "name": "explain"},
                {"node_id": "each", "kind": "map", "items_path": "list.output.lines",
                 "map_node": "stat", "next_node": "big"},
                {"node_id": "stat", "kind": "tool", "name": "stat",
                 "input_map": {"path": "item", "root": "list.output.cwd"}},
                {"node_id": "big", "kind": "branch",
                 "condition": "length(each.output) > `10`", "true_node": "warn"},
                {"node_id": "warn", "kind": "tool", "name": "notify", "on_error": "skip",
                 "input_map": {"count": "length(each.output)", "first": "each.output[0]",
                               "dir": "list.output.cwd"}}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let captions: Vec<(&str, &str)> = graph
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), n.caption.as_str()))
        .collect();
    assert_eq!(
        captions,
        [
            // A node's `on_error` shows on it.
            ("list", "proc ls · on_error → recover"),
            ("recover", "skill explain"),
            ("each", "map"),
            ("stat", "tool stat"),
            ("big", "branch"),
            ("warn", "tool notify · on_error skip")
        ]
    );
    assert_eq!(
        edges(&graph),
        [
            e("list", "each", EdgeKind::Next, ""),
            e("list", "recover", EdgeKind::Fallback, "on_error"),
            e("each", "big", EdgeKind::Next, ""),
            e("each", "stat", EdgeKind::Map, "each"),
            e("big", "warn", EdgeKind::True, "true"),
            // Reads, one edge per pair with every key that reads it.
            e("list", "each", EdgeKind::Data, "items_path"),
            e("list", "stat", EdgeKind::Data, "root"),
            e("each", "big", EdgeKind::Data, "condition"),
            e("each", "warn", EdgeKind::Data, "count, first"),
            e("list", "warn", EdgeKind::Data, "dir"),
        ]
    );
    let mermaid = graph.render(Format::Mermaid, None).unwrap();
    assert!(
        mermaid.contains(r#"    n0 -.->|"on_error"| n1"#),
        "{mermaid}"
    );
    assert!(mermaid.contains(r#"    n2 ==>|"each"| n3"#), "{mermaid}");
    let dot = graph.render(Format::Dot, None).unwrap();
    assert!(dot.contains(r##"n0 -> n1 [label="on_error", style=dashed, color="#b91c1c"];"##));
    // In the SVG, pairs of nodes with several edges are drawn once.
    let svg = graph.render(Format::Svg, None).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let drawn: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("edge ")))
        .collect();
    assert_eq!(drawn.len(), 8);
    let list_each = drawn
        .iter()
        .find(|n| {
            n.attribute("data-from") == Some("list") && n.attribute("data-to") == Some("each")
        })
        .unwrap();
    assert_eq!(list_each.attribute("class"), Some("edge edge-next"));
    assert_eq!(
        list_each
            .children()
            .find(|c| c.has_tag_name("title"))
            .unwrap()
            .text(),
        Some("list → each: items_path")
    );
    assert_eq!(
        svg.matches("class=\"edge edge-fallback\"").count(),
        1,
        "{svg}"
    );
}

#[test]
fn a_dag_draws_references_and_streams() {
    let graph = Graph::parse(
        &json!({
            "dag_id": "dag_stream",
            "tasks": [
                {"task_id": "talk", "capability": "transcribe", "input": {"type": "text", "data": "x"}},
                {"task_id": "live", "capability": "translate", "input": {"source": {"from_task": "talk"}}},
                {"task_id": "part", "capability": "summarise",
                 "input": {"source": {"from_task": "talk", "field": "data.text"}}},
                {"task_id": "both", "capability": "merge",
                 "input": {"source": {"from_tasks": ["live", "part"]}}}
            ],
            "edges": [
                {"from": "talk", "to": "live", "stream_eligible": true},
                {"from": "talk", "to": "part", "stream_eligible": true},
                {"from": "live", "to": "both"},
                {"from": "part", "to": "both"}
            ]
        })
        .to_string(),
    )
    .unwrap();
    assert_eq!(graph.nodes[1].caption, "translate");
    assert_eq!(
        edges(&graph),
        [
            e("talk", "live", EdgeKind::Stream, "stream"),
            e("talk", "part", EdgeKind::Data, "data.text, stream ignored"),
            e("live", "both", EdgeKind::Data, ""),
            e("part", "both", EdgeKind::Data, ""),
        ]
    );
    assert!(
        graph
            .render(Format::Mermaid, None)
            .unwrap()
            .contains(r#"n0 ==>|"stream"| n1"#)
    );
    let dot = graph.render(Format::Dot, None).unwrap();
    assert!(
        dot.contains(r##"n0 -> n1 [label="stream", style=bold, penwidth=2, color="#1d4ed8"];"##)
    );
    let svg = graph.render(Format::Svg, None).unwrap();
    assert_eq!(svg.matches("class=\"edge edge-stream\"").count(), 1);
}

#[test]
fn an_ontheia_chain_draws_order_blocks_cases_and_data() {
    let graph = Graph::parse(
        &json!({
            "steps": [
                {"id": "ask", "type": "llm", "prompt": "${input}"},
                {"id": "pick", "type": "router", "input": "${steps.ask.output}", "cases": [
                    {"when": "a", "steps": [
                        {"id": "a1", "type": "tool", "server": "a2e", "tool": "glob"},
                        {"id": "a2", "type": "delay", "delay_ms": 5}
                    ]},
                    {"when": true, "steps": []}
                ], "default": [{"id": "d", "type": "agent", "agent_id": "helper"}]},
                {"id": "both", "type": "parallel", "steps": [
                    {"id": "p1", "type": "rest_call", "url": "http://x"},
                    {"id": "again", "type": "retry", "count": 2, "steps": [
                        {"id": "r1", "type": "memory_write", "params": {"namespace": "n", "content": "${steps.a1.data}"}}
                    ]}
                ]}
            ],
            "edges": [
                {"from": "input", "to": "ask"},
                {"from": "ask", "to": "both", "map": {"data.x": "x", "output": "y"}}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let ids: Vec<(&str, &str)> = graph
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), n.caption.as_str()))
        .collect();
    assert_eq!(
        ids,
        [
            ("input", "chain input"),
            ("ask", "llm"),
            ("pick", "router"),
            ("a1", "tool a2e/glob"),
            ("a2", "delay 5 ms"),
            ("d", "agent helper"),
            ("both", "parallel"),
            ("p1", "rest_call"),
            ("again", "retry ×2"),
            ("r1", "memory_write"),
        ]
    );
    assert_eq!(
        edges(&graph),
        [
            e("ask", "pick", EdgeKind::Next, ""),
            e("pick", "both", EdgeKind::Next, ""),
            e("pick", "a1", EdgeKind::Case, "a"),
            e("a1", "a2", EdgeKind::Next, ""),
            e("pick", "d", EdgeKind::Default, "default"),
            e("both", "p1", EdgeKind::Nested, "parallel"),
            e("both", "again", EdgeKind::Nested, "parallel"),
            e("again", "r1", EdgeKind::Nested, "retry"),
            e("input", "ask", EdgeKind::Data, ""),
            e("ask", "both", EdgeKind::Data, "data.x → x, output → y"),
            e("ask", "pick", EdgeKind::Data, "input"),
            e("a1", "r1", EdgeKind::Data, "params"),
        ]
    );
    // Each nested block is a cluster, inside the one it sits in; an empty
    // case has none.
    let clusters: Vec<(&str, Option<&str>, Vec<&str>)> = graph
        .clusters
        .iter()
        .map(|c| {
            (
                c.label.as_str(),
                c.parent.map(|p| graph.clusters[p].label.as_str()),
                c.nodes
                    .iter()
                    .map(|&n| graph.nodes[n].id.as_str())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        clusters,
        [
            ("pick: a", None, vec!["a1", "a2"]),
            ("pick: default", None, vec!["d"]),
            ("both parallel", None, vec!["p1", "again"]),
            ("again retry", Some("both parallel"), vec!["r1"]),
        ]
    );
    let dot = graph.render(Format::Dot, None).unwrap();
    assert!(
        dot.contains(
            "    subgraph cluster_2 {\n        label=\"both parallel\"; style=\"rounded,dashed\"; \
             color=\"#94a3b8\"; fontsize=10;\n        n7 [label=\"p1\\nrest_call\", shape=box];\n        \
             n8 [label=\"again\\nretry ×2\", shape=hexagon];\n        subgraph cluster_3 {\n            \
             label=\"again retry\";"
        ),
        "{dot}"
    );
    let mermaid = graph.render(Format::Mermaid, None).unwrap();
    assert!(
        mermaid.contains("    subgraph c2 [\"both parallel\"]\n        n7[\"p1<br/>rest_call\"]\n        n8{{\"again<br/>retry ×2\"}}\n        subgraph c3 [\"again retry\"]\n            n9[\"r1<br/>memory_write\"]\n        end\n    end\n"),
        "{mermaid}"
    );
}

#[test]
fn a_run_colours_the_nodes_and_labels_them_with_durations() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/chains/digest.json"
    ))
    .unwrap();
    let graph = Graph::parse(&text).unwrap();
    let mut run = RunStates::new();
    let ms = |n| Some(Duration::from_millis(n));
    run.insert("find".into(), NodeRun::new(NodeState::Done, ms(12)));
    run.insert(
        "read_all".into(),
        NodeRun::new(NodeState::Failed, ms(1_500)),
    );
    run.insert("todos".into(), NodeRun::new(NodeState::Done, ms(3)));
    run.insert("check".into(), NodeRun::new(NodeState::Running, None));
    run.insert(
        "report_clean".into(),
        NodeRun::new(NodeState::Skipped, None),
    );
    run.insert(
        "not-in-the-chain".into(),
        NodeRun::new(NodeState::Done, ms(1)),
    );

    let svg = graph.render(Format::Svg, Some(&run)).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let state = |id: &str| {
        let node = doc
            .descendants()
            .find(|n| n.attribute("data-node-id") == Some(id))
            .unwrap();
        let lines: Vec<&str> = node
            .descendants()
            .filter(|n| n.has_tag_name("tspan"))
            .filter_map(|t| t.text())
            .collect();
        let fill = node
            .children()
            .find(|c| c.has_tag_name("rect") || c.has_tag_name("polygon"))
            .and_then(|r| r.attribute("fill"))
            .unwrap()
            .to_owned();
        (
            node.attribute("data-state").unwrap().to_owned(),
            lines.last().unwrap().to_string(),
            fill,
        )
    };
    assert_eq!(
        state("find"),
        ("done".into(), "done · 12 ms".into(), "#dcfce7".into())
    );
    assert_eq!(
        state("read_all"),
        ("failed".into(), "failed · 1.50 s".into(), "#fee2e2".into())
    );
    assert_eq!(
        state("check"),
        ("running".into(), "running".into(), "#dbeafe".into())
    );
    assert_eq!(state("report_clean").0, "skipped");
    assert_eq!(
        state("read"),
        ("not-reached".into(), "not-reached".into(), "#ffffff".into())
    );
    assert!(!svg.contains("not-in-the-chain"));

    let dot = graph.render(Format::Dot, Some(&run)).unwrap();
    assert!(dot.contains(r##"n0 [label="find\ntool glob\ndone · 12 ms", shape=box, fillcolor="#dcfce7", color="#15803d"];"##), "{dot}");
    let mermaid = graph.render(Format::Mermaid, Some(&run)).unwrap();
    assert!(
        mermaid.contains(r#"n1{{"read_all<br/>map<br/>failed · 1.50 s"}}"#),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("    classDef done fill:#dcfce7,stroke:#15803d\n    class n0,n3 done\n"),
        "{mermaid}"
    );
    assert!(mermaid.contains("class n2,n5 notReached"), "{mermaid}");
    // Without a run, no state at all.
    let plain = graph.render(Format::Svg, None).unwrap();
    assert!(!plain.contains("data-state"));
}

#[test]
fn a_maps_items_show_on_its_template_with_their_count() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/chains/digest.json"
    ))
    .unwrap();
    let graph = Graph::parse(&text).unwrap();
    // A chain reports a map's items as `template[index]`; `read` is the
    // template of `read_all`.
    let mut run = RunStates::new();
    run.insert("read_all".into(), NodeRun::new(NodeState::Done, None));
    for i in 0..3 {
        run.insert(format!("read[{i}]"), NodeRun::new(NodeState::Done, None));
    }
    let svg = graph.render(Format::Svg, Some(&run)).unwrap();
    assert!(
        svg.contains(r#"state-done" data-state="done" data-node-id="read""#),
        "{svg}"
    );
    assert!(svg.contains(">done · 3/3 done</tspan>"), "{svg}");
    let dot = graph.render(Format::Dot, Some(&run)).unwrap();
    assert!(
        dot.contains(r"read\ntool read_file\ndone · 3/3 done"),
        "{dot}"
    );

    run.insert("read[3]".into(), NodeRun::new(NodeState::Running, None));
    let mermaid = graph.render(Format::Mermaid, Some(&run)).unwrap();
    assert!(
        mermaid.contains("read<br/>tool read_file<br/>running · 3/4 done"),
        "{mermaid}"
    );
}
