//! Ids and labels from documents stay text in every format: markup,
//! quotes, newlines and each format's own syntax are escaped.

use a2e_graph::text::visible;
use a2e_graph::{Format, Graph};
use serde_json::json;

const IMG: &str = "<img src=x onerror=alert(1)>";
const QUOTE: &str = "say \"hi\"\nthen </text><script>alert(2)</script> & 'bye' #quot; |x| `md`";
const DOT_ESCAPE: &str = "back\\slash\\\" ]; n9 -> n0 [label=\"owned";

/// Three documents, one of each kind, whose ids and names are hostile.
fn documents() -> Vec<(&'static str, String, Vec<&'static str>)> {
    let chain = json!({
        "chain_id": IMG,
        "entry_node": IMG,
        "nodes": [
            {"node_id": IMG, "kind": "tool", "name": QUOTE, "next_node": QUOTE},
            {"node_id": QUOTE, "kind": "skill", "name": IMG, "next_node": DOT_ESCAPE},
            {"node_id": DOT_ESCAPE, "kind": "tool", "name": DOT_ESCAPE}
        ]
    });
    let dag = json!({
        "dag_id": QUOTE,
        "tasks": [
            {"task_id": IMG, "capability": QUOTE, "input": {"type": "text", "data": "x"}},
            {"task_id": DOT_ESCAPE, "capability": IMG,
             "input": {"source": {"from_task": IMG, "field": "data"}}}
        ],
        "edges": [{"from": IMG, "to": DOT_ESCAPE}]
    });
    let ontheia = json!({
        "steps": [
            {"id": IMG, "type": "transform", "prompt": "hi"},
            {"id": "q\"<b>\n", "type": "transform", "prompt": format!("${{steps.{IMG}.output}}")}
        ],
        "edges": [{"from": "q\"<b>\n", "to": "output", "map": {"data": "</svg>"}}]
    });
    vec![
        ("chain", chain.to_string(), vec![IMG, QUOTE, DOT_ESCAPE]),
        ("dag", dag.to_string(), vec![IMG, DOT_ESCAPE]),
        ("ontheia", ontheia.to_string(), vec![IMG, "q\"<b>\n"]),
    ]
}

#[test]
fn svg_shows_hostile_ids_as_text() {
    for (what, text, ids) in documents() {
        let graph = Graph::parse(&text).unwrap_or_else(|e| panic!("{what}: {e}"));
        let svg = graph.render(Format::Svg, None).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{what}: {e}\n{svg}"));
        // Only our own elements, and no attribute a browser would run.
        let allowed = [
            "svg", "title", "defs", "marker", "polygon", "rect", "g", "path", "text", "tspan",
        ];
        for el in doc.descendants().filter(|n| n.is_element()) {
            let name = el.tag_name().name();
            assert!(allowed.contains(&name), "{what}: element <{name}>");
            for attr in el.attributes() {
                assert!(
                    !attr.name().starts_with("on"),
                    "{what}: attribute {}",
                    attr.name()
                );
            }
        }
        // Each id is one node, found by its attribute, and its first label
        // line reads as the id (its newline shown as `\n`).
        for id in ids {
            let shown = visible(id);
            let node = doc
                .descendants()
                .find(|n| n.attribute("data-node-id") == Some(&*shown))
                .unwrap_or_else(|| panic!("{what}: no node {id:?}"));
            let first = node
                .descendants()
                .find(|n| n.has_tag_name("tspan"))
                .and_then(|t| t.text())
                .unwrap();
            assert_eq!(first, shown, "{what}");
        }
    }
}

/// The text of a DOT `"…"` string starting right after its opening quote,
/// and the rest after its closing quote.
fn dot_string(s: &str) -> (String, &str) {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                let (_, next) = chars.next().unwrap();
                match next {
                    '"' | '\\' => out.push(next),
                    'n' => out.push('\n'),
                    other => panic!("unexpected escape \\{other} in {s}"),
                }
            }
            '"' => return (out, &s[i + 1..]),
            c => out.push(c),
        }
    }
    panic!("unterminated string: {s}")
}

#[test]
fn dot_strings_hold_hostile_ids_and_end_where_they_should() {
    for (what, text, ids) in documents() {
        let graph = Graph::parse(&text).unwrap();
        let dot = graph.render(Format::Dot, None).unwrap();
        let lines: Vec<&str> = dot.lines().collect();
        // A header of four lines, a line per node and edge, the closing brace.
        assert_eq!(
            lines.len(),
            4 + graph.nodes.len() + graph.edges.len() + 1,
            "{what}: {dot}"
        );
        let mut labels = Vec::new();
        for (i, line) in lines[4..4 + graph.nodes.len()].iter().enumerate() {
            let rest = line
                .strip_prefix(&format!("    n{i} [label=\""))
                .unwrap_or_else(|| panic!("{what}: {line}"));
            let (label, after) = dot_string(rest);
            assert!(
                after.starts_with(", shape=") && after.ends_with("];"),
                "{what}: {line}"
            );
            labels.push(label);
        }
        for id in ids {
            let first_lines: Vec<&str> = labels
                .iter()
                .map(|l| l.split('\n').next().unwrap())
                .collect();
            assert!(
                first_lines.contains(&&*visible(id)),
                "{what}: {id:?} in {labels:?}"
            );
        }
        for line in &lines[4 + graph.nodes.len()..lines.len() - 1] {
            assert!(
                line.starts_with("    n") && line.ends_with(';'),
                "{what}: {line}"
            );
            if let Some(at) = line.find("[label=\"") {
                let (_, after) = dot_string(&line[at + 8..]);
                assert!(
                    after.starts_with(',') || after.starts_with(']'),
                    "{what}: {line}"
                );
            }
        }
    }
}

/// Mermaid's entity codes read back as characters.
fn unmermaid(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('#') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let end = tail.find(';').unwrap();
        out.push(char::from_u32(tail[..end].parse().unwrap()).unwrap());
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn mermaid_labels_hold_hostile_ids_as_text() {
    for (what, text, ids) in documents() {
        let graph = Graph::parse(&text).unwrap();
        let mermaid = graph.render(Format::Mermaid, None).unwrap();
        let lines: Vec<&str> = mermaid.lines().collect();
        assert_eq!(
            lines.len(),
            2 + graph.nodes.len() + graph.edges.len(),
            "{what}: {mermaid}"
        );
        let mut first_lines = Vec::new();
        for (i, line) in lines[2..2 + graph.nodes.len()].iter().enumerate() {
            let rest = line.strip_prefix(&format!("    n{i}")).unwrap();
            let start = rest.find('"').unwrap();
            let end = rest.rfind('"').unwrap();
            let label = &rest[start + 1..end];
            // Nothing in a label can end it or be read as markup.
            assert!(!label.contains(['"', '|', '`']), "{what}: {line}");
            assert!(
                !label.replace("<br/>", "").contains(['<', '>']),
                "{what}: {line}"
            );
            first_lines.push(unmermaid(label.split("<br/>").next().unwrap()));
        }
        for id in ids {
            assert!(
                first_lines.contains(&visible(id).into_owned()),
                "{what}: {id:?}"
            );
        }
        for line in &lines[2 + graph.nodes.len()..] {
            assert!(line.starts_with("    n"), "{what}: {line}");
            if let Some(at) = line.find("|\"") {
                let label = &line[at + 2..line.rfind("\"|").unwrap()];
                assert!(!label.contains(['"', '|', '<', '>']), "{what}: {line}");
            }
        }
        // The title comment is one line.
        assert!(
            lines[0].starts_with("%% ") && lines[1] == "flowchart TD",
            "{what}"
        );
    }
}
