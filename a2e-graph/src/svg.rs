//! SVG, laid out in-process: `layout-rs` places the nodes and routes the
//! edges (a Sugiyama layout, top to bottom), and this module writes the
//! picture from the positions it reports. `layout-rs`'s own SVG writer is not
//! used: the markup here is ours, so every value from the document is
//! escaped with [`crate::text::xml`], and every node and edge is a group a
//! page can find (`g.node[data-node-id]`, `g.edge[data-from][data-to]`).
//! Edges go round the nodes they do not connect ([`crate::route`]), and
//! nested blocks are outlined behind their nodes (`g.cluster[data-cluster]`,
//! [`crate::outline`]).
//!
//! Colours are presentation attributes, not a `<style>` element, so that the
//! picture shows as it is under a strict Content-Security-Policy.

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};

use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::format::{ClipHandle, RenderBackend};
use layout::core::geometry::Point;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;

use crate::error::GraphError;
use crate::model::{Edge, EdgeKind, Graph, Shape};
use crate::outline::{self, Outline};
use crate::route::{NodeBox, num, route};
use crate::run::{self, RunStates};
use crate::text::{visible, xml};

/// The most places an SVG is laid out for: nodes, plus one for every rank
/// an edge passes without a node there and for every edge label (the
/// layout's own cost grows with the square of them and more: see the crate
/// README for measured times).
pub const MAX_SVG_CELLS: usize = 1_000;

/// Font size of node labels, in pixels.
const FONT: f64 = 12.0;
/// Font size of edge labels, in pixels.
const LABEL_FONT: f64 = 11.0;
/// Width of a character, estimated (no font metrics at hand).
const CHAR_WIDTH: f64 = 7.2;
/// Height of a label line.
const LINE_HEIGHT: f64 = 16.0;
/// Space around the picture.
const MARGIN: f64 = 12.0;

/// The graph as an SVG document; with `run`, nodes coloured by state and
/// labelled with their durations. Refused when the graph has more than
/// [`MAX_SVG_CELLS`] places to lay out.
pub fn to_svg(graph: &Graph, run: Option<&RunStates>) -> Result<String, GraphError> {
    // A map's items count on their template.
    let folded = run::folded(graph, run);
    let run = folded.as_ref();
    let edges = graph.merged_edges();
    let cells = layout_cells(graph.nodes.len(), &edges);
    if cells > MAX_SVG_CELLS {
        return Err(GraphError::TooLarge {
            nodes: graph.nodes.len(),
            edges: edges.len(),
            cells,
            limit: MAX_SVG_CELLS,
        });
    }
    let labels: Vec<Vec<String>> = graph
        .nodes
        .iter()
        .map(|node| {
            let mut lines = vec![
                visible(&node.id).into_owned(),
                visible(&node.caption).into_owned(),
            ];
            if let Some(note) = run::look(&node.id, run).note {
                lines.push(note);
            }
            lines
        })
        .collect();
    let shapes: Vec<Shape> = graph.nodes.iter().map(|n| n.shape).collect();
    let mut placed = lay_out(&labels, &shapes, &edges)?;
    route_edges(&mut placed, &edges);
    let outlines = outline::outlines(graph, &placed.nodes);
    for p in outline::corners(&outlines) {
        placed.grow(p);
    }
    Ok(write_svg(graph, run, &labels, &edges, &placed, &outlines))
}

/// How many places the layout will arrange: the nodes, and on every edge one
/// for its label and one for each rank it crosses. Ranks are longest paths
/// from the sources (a labelled edge two ranks long, since its label takes
/// one), edges that close a cycle turned round as the layout does.
pub(crate) fn layout_cells(nodes: usize, edges: &[Edge]) -> usize {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for (j, e) in edges.iter().enumerate() {
        if let Some(list) = out.get_mut(e.from) {
            list.push(j);
        }
    }
    // Depth first, without recursion: the order nodes finish in, and the
    // edges that lead back to a node still open.
    let (mut state, mut finished) = (vec![0u8; nodes], Vec::with_capacity(nodes));
    let mut back = vec![false; edges.len()];
    for start in 0..nodes {
        if state.get(start) != Some(&0) {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        if let Some(s) = state.get_mut(start) {
            *s = 1;
        }
        while let Some((n, k)) = stack.pop() {
            let next = out.get(n).and_then(|l| l.get(k)).copied();
            let Some(j) = next else {
                if let Some(s) = state.get_mut(n) {
                    *s = 2;
                }
                finished.push(n);
                continue;
            };
            stack.push((n, k + 1));
            let to = edges.get(j).map_or(n, |e| e.to);
            match state.get(to) {
                Some(0) => {
                    if let Some(s) = state.get_mut(to) {
                        *s = 1;
                    }
                    stack.push((to, 0));
                }
                Some(1) => {
                    if let Some(b) = back.get_mut(j) {
                        *b = true;
                    }
                }
                _ => {}
            }
        }
    }
    // Longest paths, in topological order (the reverse of finishing), with
    // back edges turned round.
    let mut rank = vec![0usize; nodes];
    let mut incoming: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nodes];
    for (j, e) in edges.iter().enumerate() {
        let len = if e.label.is_empty() { 1 } else { 2 };
        let (from, to) = if back.get(j) == Some(&true) {
            (e.to, e.from)
        } else {
            (e.from, e.to)
        };
        if from != to
            && let Some(list) = incoming.get_mut(to)
        {
            list.push((from, len));
        }
    }
    let mut position = vec![0usize; nodes];
    for (p, &n) in finished.iter().rev().enumerate() {
        if let Some(slot) = position.get_mut(n) {
            *slot = p;
        }
    }
    for &n in finished.iter().rev() {
        let best = incoming
            .get(n)
            .into_iter()
            .flatten()
            .filter(|(from, _)| position.get(*from) < position.get(n))
            .map(|&(from, len)| rank.get(from).copied().unwrap_or(0) + len)
            .max()
            .unwrap_or(0);
        if let Some(r) = rank.get_mut(n) {
            *r = best;
        }
    }
    let mut cells = nodes;
    for e in edges {
        let (a, b) = (
            rank.get(e.from).copied().unwrap_or(0),
            rank.get(e.to).copied().unwrap_or(0),
        );
        cells = cells.saturating_add(
            a.abs_diff(b)
                .saturating_sub(1)
                .max(usize::from(!e.label.is_empty())),
        );
    }
    cells
}

/// Where the layout put everything.
#[derive(Debug, Default)]
struct Placed {
    /// Each node's top-left corner and size, by node index.
    nodes: Vec<Option<(Point, Point)>>,
    /// Each edge's points as `layout-rs` gives them, by merged-edge index.
    paths: Vec<Option<Vec<(Point, Point)>>>,
    /// Each edge's path (`d`), by merged-edge index.
    edges: Vec<Option<String>>,
    /// Edge labels: the middle of their place and the text.
    labels: Vec<(Point, String)>,
    /// The corners of everything drawn.
    min: Option<Point>,
    max: Option<Point>,
}

impl Placed {
    fn grow(&mut self, p: Point) {
        let min = self.min.get_or_insert(p);
        min.x = min.x.min(p.x);
        min.y = min.y.min(p.y);
        let max = self.max.get_or_insert(p);
        max.x = max.x.max(p.x);
        max.y = max.y.max(p.y);
    }
}

/// Collects what `layout-rs` draws: node boxes and edge paths by the
/// handles we gave them (`n3`, `e5`), and the edge labels it places.
struct Collect<'a> {
    placed: &'a mut Placed,
    /// The next text is the label of the node just drawn (ours is written
    /// instead).
    node_text_next: bool,
}

fn handle(properties: Option<&str>, prefix: char) -> Option<usize> {
    properties?.strip_prefix(prefix)?.parse().ok()
}

impl RenderBackend for Collect<'_> {
    fn draw_rect(
        &mut self,
        xy: Point,
        size: Point,
        _look: &StyleAttr,
        properties: Option<String>,
        _clip: Option<ClipHandle>,
    ) {
        if let Some(i) = handle(properties.as_deref(), 'n')
            && let Some(slot) = self.placed.nodes.get_mut(i)
        {
            *slot = Some((xy, size));
            self.placed.grow(xy);
            self.placed.grow(xy.add(size));
            self.node_text_next = true;
        }
    }

    fn draw_line(&mut self, _: Point, _: Point, _: &StyleAttr, _: Option<String>) {}

    fn draw_circle(&mut self, _: Point, _: Point, _: &StyleAttr, _: Option<String>) {}

    fn draw_text(&mut self, xy: Point, text: &str, _look: &StyleAttr) {
        if std::mem::take(&mut self.node_text_next) {
            return;
        }
        let half = Point::new(text.chars().count() as f64 * CHAR_WIDTH / 2.0, LINE_HEIGHT);
        self.placed.grow(xy.sub(half));
        self.placed.grow(xy.add(half));
        self.placed.labels.push((xy, text.to_owned()));
    }

    fn draw_arrow(
        &mut self,
        path: &[(Point, Point)],
        _dashed: bool,
        _head: (bool, bool),
        _look: &StyleAttr,
        properties: Option<String>,
        _text: &str,
    ) {
        self.node_text_next = false;
        let Some(j) = handle(properties.as_deref(), 'e') else {
            return;
        };
        for p in path {
            self.placed.grow(p.0);
            self.placed.grow(p.1);
        }
        if let Some(slot) = self.placed.paths.get_mut(j) {
            *slot = Some(path.to_vec());
        }
    }

    fn create_clip(&mut self, _: Point, _: Point, _: usize) -> ClipHandle {
        0
    }
}

/// Runs the layout; a panic inside the layout crate becomes an error.
fn lay_out(
    labels: &[Vec<String>],
    graph_shapes: &[Shape],
    edges: &[Edge],
) -> Result<Placed, GraphError> {
    let mut placed = Placed {
        nodes: vec![None; labels.len()],
        paths: vec![None; edges.len()],
        ..Placed::default()
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut vg = VisualGraph::new(Orientation::TopToBottom);
        // Its self-check after every edge costs a search of the graph each.
        vg.dag.set_validate(false);
        let look = StyleAttr::new(Color::fast("black"), 1, None, 0, FONT as usize);
        let handles: Vec<_> = labels
            .iter()
            .enumerate()
            .map(|(i, lines)| {
                let text = lines.join("\n");
                let size = node_size(lines, graph_shapes.get(i).copied());
                let shape = ShapeKind::Box(text);
                let elem = Element::create_with_properties(
                    shape,
                    look.clone(),
                    Orientation::TopToBottom,
                    size,
                    format!("n{i}"),
                );
                vg.add_node(elem)
            })
            .collect();
        // Edge labels are sized from this font: about a character's width.
        let label_look = StyleAttr::new(Color::fast("black"), 1, None, 0, 7);
        for (j, e) in edges.iter().enumerate() {
            let (Some(&from), Some(&to)) = (handles.get(e.from), handles.get(e.to)) else {
                continue;
            };
            let arrow = Arrow::with_properties(
                LineEndKind::None,
                LineEndKind::Arrow,
                LineStyleKind::Normal,
                &visible(&e.label),
                &label_look,
                format!("e{j}"),
                &None,
                &None,
            );
            vg.add_edge(arrow, from, to);
        }
        let mut collect = Collect {
            placed: &mut placed,
            node_text_next: false,
        };
        vg.do_it(false, false, false, &mut collect);
    }));
    match result {
        Ok(()) => Ok(placed),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic in the layout".to_owned());
            Err(GraphError::Layout(what))
        }
    }
}

/// Each edge's path, going round the nodes that are not its ends.
fn route_edges(placed: &mut Placed, edges: &[Edge]) {
    let boxes: Vec<(usize, NodeBox)> = placed
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.map(|b| (i, b)))
        .collect();
    let paths = std::mem::take(&mut placed.paths);
    placed.edges = paths
        .iter()
        .zip(edges)
        .map(|(path, e)| {
            let (d, detours) = route(path.as_deref()?, &boxes, (e.from, e.to))?;
            for p in detours {
                placed.grow(p);
            }
            Some(d)
        })
        .collect();
}

/// The size of a node box for its label lines.
fn node_size(lines: &[String], shape: Option<Shape>) -> Point {
    let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(1);
    // A diamond's points take room from the text.
    let extra = if shape == Some(Shape::Diamond) {
        24.0
    } else {
        0.0
    };
    let width = (widest as f64 * CHAR_WIDTH + 24.0 + extra).max(64.0);
    let height = lines.len() as f64 * LINE_HEIGHT + 14.0;
    Point::new(width, height)
}

/// The colour, width and dash pattern of an edge.
fn edge_style(kind: EdgeKind) -> (&'static str, f64, Option<&'static str>) {
    match kind {
        EdgeKind::Data => ("#64748b", 1.5, Some("6,4")),
        EdgeKind::Fallback => ("#b91c1c", 1.5, Some("6,4")),
        EdgeKind::Stream => ("#1d4ed8", 3.0, None),
        EdgeKind::Map => ("#334155", 3.0, None),
        EdgeKind::True => ("#15803d", 1.5, None),
        EdgeKind::False => ("#b91c1c", 1.5, None),
        _ => ("#334155", 1.5, None),
    }
}

/// Every colour an edge may have, for one arrow head each.
const EDGE_COLOURS: [&str; 5] = ["#334155", "#64748b", "#1d4ed8", "#15803d", "#b91c1c"];

fn write_svg(
    graph: &Graph,
    run: Option<&RunStates>,
    labels: &[Vec<String>],
    edges: &[Edge],
    placed: &Placed,
    outlines: &[Outline],
) -> String {
    let min = placed.min.unwrap_or(Point::zero());
    let max = placed.max.unwrap_or(Point::zero());
    let (x0, y0) = (min.x - MARGIN, min.y - MARGIN);
    let (w, h) = (max.x - min.x + 2.0 * MARGIN, max.y - min.y + 2.0 * MARGIN);
    let title = xml(&graph.title());
    let mut out = String::with_capacity(1024 + graph.nodes.len() * 512);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"a2e-graph\" role=\"img\" \
         aria-label=\"{title}\" width=\"{}\" height=\"{}\" viewBox=\"{} {} {} {}\" \
         font-family=\"Helvetica, Arial, sans-serif\">\n<title>{title}</title>\n<defs>\n",
        num(w),
        num(h),
        num(x0),
        num(y0),
        num(w),
        num(h)
    );
    for colour in EDGE_COLOURS {
        let _ = writeln!(
            out,
            "<marker id=\"a2e-arrow-{}\" markerWidth=\"10\" markerHeight=\"7\" refX=\"10\" \
             refY=\"3.5\" orient=\"auto\" markerUnits=\"userSpaceOnUse\"><polygon points=\"0 0, 10 3.5, 0 7\" fill=\"{colour}\"/></marker>",
            colour.trim_start_matches('#')
        );
    }
    out.push_str("</defs>\n<rect class=\"background\" x=\"");
    let _ = writeln!(
        out,
        "{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
        num(x0),
        num(y0),
        num(w),
        num(h)
    );
    outline::write(&mut out, graph, outlines);
    out.push_str("<g class=\"edges\">\n");
    for (e, d) in edges.iter().zip(&placed.edges) {
        let Some(d) = d else { continue };
        let (Some(from), Some(to)) = (graph.node(e.from), graph.node(e.to)) else {
            continue;
        };
        let (colour, width, dash) = edge_style(e.kind);
        let (from, to) = (xml(&from.id), xml(&to.id));
        let _ = write!(
            out,
            "<g class=\"edge edge-{}\" data-from=\"{from}\" data-to=\"{to}\"><title>{from} → {to}",
            e.kind.as_str()
        );
        if !e.label.is_empty() {
            let _ = write!(out, ": {}", xml(&e.label));
        }
        let _ = write!(
            out,
            "</title><path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"{width}\""
        );
        if let Some(dash) = dash {
            let _ = write!(out, " stroke-dasharray=\"{dash}\"");
        }
        let _ = writeln!(
            out,
            " marker-end=\"url(#a2e-arrow-{})\"/></g>",
            colour.trim_start_matches('#')
        );
    }
    out.push_str("</g>\n<g class=\"nodes\">\n");
    for ((node, lines), at) in graph.nodes.iter().zip(labels).zip(&placed.nodes) {
        let Some((xy, size)) = at else { continue };
        let look = run::look(&node.id, run);
        let id = xml(&node.id);
        let _ = write!(out, "<g class=\"node kind-{}", xml(&node.kind));
        if let Some(state) = look.state {
            let _ = write!(out, " state-{state}\" data-state=\"{state}");
        }
        let _ = write!(
            out,
            "\" data-node-id=\"{id}\"><title>{id}: {}</title>",
            xml(&node.caption)
        );
        shape(&mut out, node.shape, *xy, *size, look.fill, look.line);
        let cx = xy.x + size.x / 2.0;
        let top = xy.y + size.y / 2.0 - (lines.len() as f64 - 1.0) * LINE_HEIGHT / 2.0;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" dominant-baseline=\"middle\" \
             font-size=\"{FONT}\" fill=\"#0f172a\">",
            num(cx),
            num(top)
        );
        for (k, line) in lines.iter().enumerate() {
            let dy = if k == 0 { 0.0 } else { LINE_HEIGHT };
            let weight = if k == 0 { " font-weight=\"bold\"" } else { "" };
            let _ = write!(
                out,
                "<tspan x=\"{}\" dy=\"{}\"{weight}>{}</tspan>",
                num(cx),
                num(dy),
                xml(line)
            );
        }
        out.push_str("</text></g>\n");
    }
    out.push_str("</g>\n<g class=\"edge-labels\">\n");
    for (at, text) in &placed.labels {
        let _ = writeln!(
            out,
            "<text class=\"edge-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" \
             dominant-baseline=\"middle\" font-size=\"{LABEL_FONT}\" fill=\"#475569\" \
             stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">{}</text>",
            num(at.x),
            num(at.y),
            xml(text)
        );
    }
    out.push_str("</g>\n</svg>\n");
    out
}

/// A node's outline in its box.
fn shape(out: &mut String, shape: Shape, xy: Point, size: Point, fill: &str, line: &str) {
    let (x, y, w, h) = (xy.x, xy.y, size.x, size.y);
    let paint = format!("fill=\"{fill}\" stroke=\"{line}\" stroke-width=\"1.5\"");
    let rect = |out: &mut String, rx: f64, inset: f64, paint: &str| {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"{}\" {paint}/>",
            num(x + inset),
            num(y + inset),
            num(w - 2.0 * inset),
            num(h - 2.0 * inset),
            num(rx)
        );
    };
    match shape {
        Shape::Box => rect(out, 3.0, 0.0, &paint),
        Shape::Rounded => rect(out, 10.0, 0.0, &paint),
        Shape::Stadium => rect(out, h / 2.0, 0.0, &paint),
        Shape::Hexagon => {
            rect(out, 3.0, 0.0, &paint);
            rect(
                out,
                2.0,
                3.5,
                &format!("fill=\"none\" stroke=\"{line}\" stroke-width=\"1\""),
            );
        }
        Shape::Diamond => {
            let tip = (h / 2.0).min(16.0);
            let _ = write!(
                out,
                "<polygon points=\"{},{} {},{} {},{} {},{} {},{} {},{}\" {paint}/>",
                num(x + tip),
                num(y),
                num(x + w - tip),
                num(y),
                num(x + w),
                num(y + h / 2.0),
                num(x + w - tip),
                num(y + h),
                num(x + tip),
                num(y + h),
                num(x),
                num(y + h / 2.0)
            );
        }
    }
}
