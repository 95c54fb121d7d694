//! Where the SVG puts things, checked geometrically on every example
//! document (and a chain of long edges): no edge passes through a node that is not one of its ends, and
//! an Ontheia chain's nested blocks are drawn as clusters around their steps.

use std::path::{Path, PathBuf};

use a2e_graph::{Format, Graph};

/// Every `*.json` under `examples/{chains,dags,ontheia}`.
fn examples() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = Vec::new();
    for dir in ["chains", "dags", "ontheia"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn svg_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let graph = Graph::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    graph.render(Format::Svg, None).unwrap()
}

/// A chain whose later nodes read many earlier ones: long edges that pass
/// beside the nodes of every rank they cross.
fn reads_far_back() -> String {
    let nodes: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            let reads: serde_json::Map<String, serde_json::Value> = (0..i)
                .filter(|j| (i + j) % 3 == 0)
                .map(|j| (format!("k{j}"), format!("n{j}.output").into()))
                .collect();
            let mut node = serde_json::json!({
                "node_id": format!("n{i}"), "kind": "tool", "name": format!("tool_{i}"),
                "input_map": reads,
            });
            if i < 9 {
                node["next_node"] = format!("n{}", i + 1).into();
            }
            node
        })
        .collect();
    serde_json::json!({"chain_id": "far", "entry_node": "n0", "nodes": nodes}).to_string()
}

type P = (f64, f64);

/// A box: left, top, right, bottom.
#[derive(Debug, Clone, Copy)]
struct Box4(f64, f64, f64, f64);

fn num(s: &str) -> f64 {
    s.parse().unwrap_or_else(|_| panic!("not a number: {s}"))
}

/// The box of a node group's outline (a rect, or a diamond's polygon).
fn node_box(node: roxmltree::Node<'_, '_>) -> Box4 {
    let shape = node
        .children()
        .find(|c| c.has_tag_name("rect") || c.has_tag_name("polygon"))
        .unwrap();
    if shape.has_tag_name("rect") {
        let (x, y) = (
            num(shape.attribute("x").unwrap()),
            num(shape.attribute("y").unwrap()),
        );
        let (w, h) = (
            num(shape.attribute("width").unwrap()),
            num(shape.attribute("height").unwrap()),
        );
        return Box4(x, y, x + w, y + h);
    }
    let points: Vec<P> = shape
        .attribute("points")
        .unwrap()
        .split(' ')
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (num(x), num(y))
        })
        .collect();
    let xs = points.iter().map(|p| p.0);
    let ys = points.iter().map(|p| p.1);
    Box4(
        xs.clone().fold(f64::MAX, f64::min),
        ys.clone().fold(f64::MAX, f64::min),
        xs.fold(f64::MIN, f64::max),
        ys.fold(f64::MIN, f64::max),
    )
}

/// The points an SVG path passes through: its straight segments' ends, and
/// its Bézier curves (`C`, `S`) sampled finely enough to follow them.
fn polyline(d: &str) -> Vec<P> {
    let tokens: Vec<&str> = d.split([' ', ',']).filter(|t| !t.is_empty()).collect();
    let mut out: Vec<P> = Vec::new();
    let (mut cur, mut last_control) = ((0.0, 0.0), None::<P>);
    let mut i = 0;
    let take = |i: &mut usize| {
        let p = (num(tokens[*i]), num(tokens[*i + 1]));
        *i += 2;
        p
    };
    let mut command = "M";
    while i < tokens.len() {
        if tokens[i].chars().all(char::is_alphabetic) {
            command = tokens[i];
            i += 1;
        }
        match command {
            "M" | "L" => {
                cur = take(&mut i);
                last_control = None;
                out.push(cur);
            }
            "C" | "S" => {
                let c1 = if command == "C" {
                    take(&mut i)
                } else {
                    let c = last_control.unwrap_or(cur);
                    (2.0 * cur.0 - c.0, 2.0 * cur.1 - c.1)
                };
                let (c2, end) = (take(&mut i), take(&mut i));
                for k in 1..=48 {
                    let t = f64::from(k) / 48.0;
                    let u = 1.0 - t;
                    let at = |a: f64, b: f64, c: f64, d: f64| {
                        u * u * u * a + 3.0 * u * u * t * b + 3.0 * u * t * t * c + t * t * t * d
                    };
                    out.push((at(cur.0, c1.0, c2.0, end.0), at(cur.1, c1.1, c2.1, end.1)));
                }
                cur = end;
                last_control = Some(c2);
            }
            other => panic!("path command {other} in {d}"),
        }
    }
    out
}

/// Whether the segment a–b passes through the inside of `r` (Liang–Barsky
/// clipping; touching the outline does not count).
fn crosses(a: P, b: P, r: Box4) -> bool {
    let inset = 1.0;
    let (l, t, rr, bb) = (r.0 + inset, r.1 + inset, r.2 - inset, r.3 - inset);
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - l),
        (dx, rr - a.0),
        (-dy, a.1 - t),
        (dy, bb - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return false;
            }
        } else {
            let s = q / p;
            if p < 0.0 {
                lo = lo.max(s);
            } else {
                hi = hi.min(s);
            }
        }
    }
    lo < hi
}

#[test]
fn the_segment_check_sees_a_line_through_a_box() {
    let r = Box4(10.0, 10.0, 20.0, 20.0);
    assert!(crosses((0.0, 15.0), (30.0, 15.0), r));
    assert!(crosses((15.0, 0.0), (15.0, 12.0), r));
    assert!(!crosses((0.0, 0.0), (30.0, 5.0), r));
    assert!(!crosses((0.0, 10.0), (30.0, 10.0), r), "along the outline");
    let curve = polyline("M 0 0 C 0 10, 10 10, 10 0 S 20 -10, 20 0");
    assert_eq!(curve.len(), 97);
    assert_eq!(curve.last(), Some(&(20.0, 0.0)));
}

#[test]
fn no_edge_of_an_example_passes_through_a_node_that_is_not_its_end() {
    let mut through = Vec::new();
    let far = reads_far_back();
    let svgs = examples()
        .into_iter()
        .map(|p| (p.display().to_string(), svg_of(&p)))
        .chain([(
            "reads far back".to_owned(),
            Graph::parse(&far)
                .unwrap()
                .render(Format::Svg, None)
                .unwrap(),
        )]);
    for (path, svg) in svgs {
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let nodes: Vec<(&str, Box4)> = doc
            .descendants()
            .filter(|n| n.has_tag_name("g") && n.attribute("data-node-id").is_some())
            .map(|n| (n.attribute("data-node-id").unwrap(), node_box(n)))
            .collect();
        for edge in doc
            .descendants()
            .filter(|n| n.has_tag_name("g") && n.attribute("data-from").is_some())
        {
            let (from, to) = (
                edge.attribute("data-from").unwrap(),
                edge.attribute("data-to").unwrap(),
            );
            let d = edge
                .children()
                .find(|c| c.has_tag_name("path"))
                .and_then(|p| p.attribute("d"))
                .unwrap();
            let points = polyline(d);
            for (id, r) in nodes.iter().filter(|(id, _)| *id != from && *id != to) {
                if points.windows(2).any(|w| crosses(w[0], w[1], *r)) {
                    through.push(format!("{path}: {from} → {to} through {id}: {d}"));
                }
            }
        }
    }
    assert!(through.is_empty(), "{through:#?}");
}

#[test]
fn nested_blocks_are_outlined_round_their_steps_and_no_other() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ontheia/control-flow.json");
    let graph = Graph::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let svg = graph.render(Format::Svg, None).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let nodes: Vec<(&str, Box4)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("data-node-id").is_some())
        .map(|n| (n.attribute("data-node-id").unwrap(), node_box(n)))
        .collect();
    let clusters: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("cluster"))
        .collect();
    let labels: Vec<&str> = clusters
        .iter()
        .map(|c| c.attribute("data-cluster").unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "route: weather",
            "route: news",
            "route: default",
            "gather parallel",
            "count loop",
            "settle_retry retry",
            "check: ${steps.settle_retry.data.attempts} == 2",
            "check: default"
        ]
    );
    let within = |inner: Box4, outer: Box4| {
        inner.0 >= outer.0 && inner.1 >= outer.1 && inner.2 <= outer.2 && inner.3 <= outer.3
    };
    let overlap = |a: Box4, b: Box4| a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
    for (cluster, label) in clusters.iter().zip(&labels) {
        let outline: Vec<Box4> = cluster
            .children()
            .filter(|c| c.has_tag_name("rect"))
            .map(|r| node_box_of_rect(r))
            .collect();
        assert!(!outline.is_empty(), "{label}");
        let k = graph
            .clusters
            .iter()
            .position(|c| c.label == *label)
            .unwrap();
        let members: Vec<&str> = graph
            .cluster_members(k)
            .iter()
            .map(|&n| graph.nodes[n].id.as_str())
            .collect();
        for (id, b) in &nodes {
            if members.contains(id) {
                assert!(
                    outline.iter().any(|o| within(*b, *o)),
                    "{label}: {id} outside"
                );
            } else {
                assert!(
                    !outline.iter().any(|o| overlap(*b, *o)),
                    "{label}: claims {id}"
                );
            }
        }
    }
    // Behind the nodes: the clusters come first.
    assert!(svg.find("class=\"clusters\"").unwrap() < svg.find("class=\"nodes\"").unwrap());
}

fn node_box_of_rect(r: roxmltree::Node<'_, '_>) -> Box4 {
    let v = |a: &str| num(r.attribute(a).unwrap());
    Box4(v("x"), v("y"), v("x") + v("width"), v("y") + v("height"))
}
