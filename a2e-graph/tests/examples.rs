//! Every example document of the workspace, drawn: the Mermaid and DOT text
//! as snapshots, the SVG parsed back as XML with its nodes and edges counted.

use std::path::{Path, PathBuf};

use a2e_graph::{Format, Graph};

/// Every `*.json` under `examples/{chains,dags,ontheia}`, in name order.
fn examples() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = Vec::new();
    for dir in ["chains", "dags", "ontheia"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for path in files {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((format!("{dir}-{stem}"), path));
        }
    }
    out
}

fn graph(path: &Path) -> Graph {
    let text = std::fs::read_to_string(path).unwrap();
    Graph::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn mermaid_and_dot_of_every_example() {
    let examples = examples();
    assert!(examples.len() >= 5, "examples found: {examples:?}");
    for (name, path) in &examples {
        let graph = graph(path);
        insta::assert_snapshot!(
            format!("{name}.mermaid"),
            graph.render(Format::Mermaid, None).unwrap()
        );
        insta::assert_snapshot!(
            format!("{name}.dot"),
            graph.render(Format::Dot, None).unwrap()
        );
    }
}

/// The groups of one class in an SVG, by their `data-*` attribute.
fn groups<'a>(doc: &'a roxmltree::Document<'a>, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| {
            n.has_tag_name("g")
                && n.attribute("class")
                    .is_some_and(|c| c.split(' ').next() == Some(class))
        })
        .collect()
}

#[test]
fn the_svg_of_every_example_is_xml_with_a_group_per_node_and_edge() {
    for (name, path) in &examples() {
        let graph = graph(path);
        let svg = graph.render(Format::Svg, None).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg", "{name}");
        let nodes = groups(&doc, "node");
        let edges = groups(&doc, "edge");
        assert_eq!(nodes.len(), graph.nodes.len(), "{name}: nodes");
        assert_eq!(edges.len(), graph.merged_edges().len(), "{name}: edges");
        // Each node once, by its id; each edge between two drawn nodes.
        let ids: Vec<&str> = nodes
            .iter()
            .map(|n| n.attribute("data-node-id").unwrap())
            .collect();
        for node in &graph.nodes {
            assert_eq!(
                ids.iter().filter(|i| **i == node.id).count(),
                1,
                "{name}: {}",
                node.id
            );
        }
        for edge in &edges {
            for end in ["data-from", "data-to"] {
                assert!(ids.contains(&edge.attribute(end).unwrap()), "{name}: {end}");
            }
            let path = edge.children().find(|c| c.has_tag_name("path")).unwrap();
            assert!(path.attribute("d").unwrap().starts_with("M "), "{name}");
        }
        // Laid out: no two node boxes at the same place.
        let mut corners: Vec<(String, String)> = nodes
            .iter()
            .map(|n| {
                let shape = n
                    .children()
                    .find(|c| c.has_tag_name("rect") || c.has_tag_name("polygon"))
                    .unwrap();
                match shape.tag_name().name() {
                    "rect" => (
                        shape.attribute("x").unwrap().to_owned(),
                        shape.attribute("y").unwrap().to_owned(),
                    ),
                    _ => (shape.attribute("points").unwrap().to_owned(), String::new()),
                }
            })
            .collect();
        corners.sort();
        corners.dedup();
        assert_eq!(corners.len(), nodes.len(), "{name}: overlapping nodes");
    }
}

/// The counts of the examples as they are written, so that a change in what
/// the builders draw shows here as well as in the snapshots.
#[test]
fn the_examples_have_the_nodes_and_edges_their_documents_declare() {
    let counts: Vec<(String, usize, usize)> = examples()
        .iter()
        .map(|(name, path)| {
            let g = graph(path);
            (name.clone(), g.nodes.len(), g.edges.len())
        })
        .collect();
    let get = |n: &str| {
        counts
            .iter()
            .find(|c| c.0 == n)
            .map(|c| (c.1, c.2))
            .unwrap()
    };
    // digest: 7 nodes; next (todos→check), true, false, map, and the reads
    // find→read_all (items_path), read_all→report_todos (content).
    assert_eq!(get("chains-digest"), (7, 6));
    // text-pipeline: 5 tasks, 6 edges.
    assert_eq!(get("dags-text-pipeline"), (5, 6));
}
