//! Edge paths that go round the nodes they do not connect.
//!
//! `layout-rs` places an edge's points (its ends, and a point on each rank
//! it crosses) well, but joins them with Bézier curves that can cut through
//! a node beside them: a long edge leaving a node sideways may sweep across
//! the next rank. Each piece of an edge's path is checked against every node
//! box but its ends'; a piece that enters one is drawn instead as straight
//! lines that pass beside the box, on the side nearer the line, and those
//! lines are checked the same way, a bounded number of times.

use std::fmt::Write as _;

use layout::core::geometry::Point;

/// Space kept between a detour and the box it goes round.
const CLEARANCE: f64 = 8.0;

/// How many boxes one piece of a path may go round.
const MAX_DETOURS: usize = 8;

/// A node's box: its top-left corner and its size.
pub(crate) type NodeBox = (Point, Point);

/// One piece of a path, from the end of the one before.
#[derive(Debug, Clone, Copy)]
enum Piece {
    /// A cubic Bézier curve: two control points and its end.
    Curve(Point, Point, Point),
    /// A straight line to a point.
    Line(Point),
}

/// The SVG path (`d`) of an edge from `layout-rs`'s points (the exit vector
/// from the first point, then the entry vector into each next point), going
/// round every box of `boxes` (index, box) whose index is not in `ends`.
/// Also returns the points of the detours it made (for the picture's size).
pub(crate) fn route(
    path: &[(Point, Point)],
    boxes: &[(usize, NodeBox)],
    ends: (usize, usize),
) -> Option<(String, Vec<Point>)> {
    let (first, second) = (path.first()?, path.get(1)?);
    let others: Vec<NodeBox> = boxes
        .iter()
        .filter(|(i, _)| *i != ends.0 && *i != ends.1)
        .map(|(_, b)| *b)
        .collect();
    // The curves as layout-rs means them: `M p0 C c1 c2 p1 S c p …`, where
    // each `S` reflects the control point before it.
    let mut curves = vec![(first.1, second.0, second.1)];
    for p in path.iter().skip(2) {
        let (at, before) = curves
            .last()
            .map(|c| (c.2, c.1))
            .unwrap_or((first.0, first.0));
        let reflected = Point::new(2.0 * at.x - before.x, 2.0 * at.y - before.y);
        curves.push((reflected, p.0, p.1));
    }
    let mut pieces = Vec::new();
    let mut detours = Vec::new();
    let mut at = first.0;
    for (c1, c2, end) in curves {
        let curve = [at, c1, c2, end];
        if others.iter().any(|b| polyline_enters(&sample(&curve), *b)) {
            let mut points = vec![at, end];
            detour(&mut points, &others);
            let inner = points.get(1..points.len().saturating_sub(1)).unwrap_or(&[]);
            detours.extend_from_slice(inner);
            pieces.extend(points.iter().skip(1).map(|p| Piece::Line(*p)));
        } else {
            pieces.push(Piece::Curve(c1, c2, end));
        }
        at = end;
    }
    let mut d = format!("M {} {}", num(first.0.x), num(first.0.y));
    for piece in pieces {
        let _ = match piece {
            Piece::Curve(c1, c2, end) => write!(
                d,
                " C {} {}, {} {}, {} {}",
                num(c1.x),
                num(c1.y),
                num(c2.x),
                num(c2.y),
                num(end.x),
                num(end.y)
            ),
            Piece::Line(end) => write!(d, " L {} {}", num(end.x), num(end.y)),
        };
    }
    Some((d, detours))
}

/// A coordinate with at most two decimals.
pub(crate) fn num(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    if r == 0.0 {
        "0".to_owned()
    } else {
        r.to_string()
    }
}

/// Points along a cubic curve, its ends included.
fn sample(c: &[Point; 4]) -> Vec<Point> {
    const STEPS: u32 = 32;
    let [a, b, cc, d] = *c;
    (0..=STEPS)
        .map(|k| {
            let t = f64::from(k) / f64::from(STEPS);
            let u = 1.0 - t;
            let at = |a: f64, b: f64, c: f64, d: f64| {
                u * u * u * a + 3.0 * u * u * t * b + 3.0 * u * t * t * c + t * t * t * d
            };
            Point::new(at(a.x, b.x, cc.x, d.x), at(a.y, b.y, cc.y, d.y))
        })
        .collect()
}

fn polyline_enters(points: &[Point], b: NodeBox) -> bool {
    points.windows(2).any(|w| match w {
        [p, q] => enters(*p, *q, b).is_some(),
        _ => false,
    })
}

/// Where along the segment p–q (0 to 1) it first enters the inside of box
/// `b`; `None` when it does not (running along the outline does not count).
fn enters(p: Point, q: Point, b: NodeBox) -> Option<f64> {
    // Liang–Barsky clipping against the box shrunk by a pixel.
    let (l, t) = (b.0.x + 1.0, b.0.y + 1.0);
    let (r, bottom) = (b.0.x + b.1.x - 1.0, b.0.y + b.1.y - 1.0);
    let (dx, dy) = (q.x - p.x, q.y - p.y);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for (s, d) in [
        (-dx, p.x - l),
        (dx, r - p.x),
        (-dy, p.y - t),
        (dy, bottom - p.y),
    ] {
        if s == 0.0 {
            if d < 0.0 {
                return None;
            }
        } else if s < 0.0 {
            lo = lo.max(d / s);
        } else {
            hi = hi.min(d / s);
        }
    }
    (lo < hi).then_some(lo)
}

fn inside(p: Point, b: NodeBox) -> bool {
    p.x > b.0.x && p.x < b.0.x + b.1.x && p.y > b.0.y && p.y < b.0.y + b.1.y
}

/// Puts points between those of `points` (a polyline) until no segment
/// enters a box of `boxes`, going round the first box each segment enters
/// at most [`MAX_DETOURS`] times.
fn detour(points: &mut Vec<Point>, boxes: &[NodeBox]) {
    let mut k = 0;
    let mut added = 0;
    while let (Some(&p), Some(&q)) = (points.get(k), points.get(k + 1)) {
        let hit = boxes
            .iter()
            .filter_map(|b| enters(p, q, *b).map(|t| (t, *b)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let Some((_, b)) = hit.filter(|_| added < MAX_DETOURS) else {
            k += 1;
            continue;
        };
        // Past the box along its side nearer where the line crosses it: by
        // its two corners on that side (outside them by the clearance), in
        // the order the line travels; the other side when a corner there is
        // inside another box. A line that runs across rather than down
        // passes over the box instead.
        let (l, t) = (b.0.x - CLEARANCE, b.0.y - CLEARANCE);
        let (r, bottom) = (b.0.x + b.1.x + CLEARANCE, b.0.y + b.1.y + CLEARANCE);
        let free = |ws: &[Point; 2]| !ws.iter().any(|w| boxes.iter().any(|o| inside(*w, *o)));
        let pair = if (q.y - p.y).abs() >= (q.x - p.x).abs() * 0.1 {
            let mid = b.0.y + b.1.y / 2.0;
            let x_at = p.x + (q.x - p.x) * (mid - p.y) / (q.y - p.y);
            let side = |x: f64| {
                if q.y >= p.y {
                    [Point::new(x, t), Point::new(x, bottom)]
                } else {
                    [Point::new(x, bottom), Point::new(x, t)]
                }
            };
            let (near, far) = if x_at < b.0.x + b.1.x / 2.0 {
                (side(l), side(r))
            } else {
                (side(r), side(l))
            };
            if free(&near) { near } else { far }
        } else if q.x >= p.x {
            [Point::new(l, t), Point::new(r, t)]
        } else {
            [Point::new(r, t), Point::new(l, t)]
        };
        points.splice(k + 1..k + 1, pair);
        added += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(x: f64, y: f64) -> Point {
        Point::new(x, y)
    }

    #[test]
    fn a_segment_enters_a_box_it_crosses_not_one_it_runs_along() {
        let b = (pt(10.0, 10.0), pt(10.0, 10.0));
        assert!(enters(pt(0.0, 15.0), pt(30.0, 15.0), b).is_some());
        assert!(enters(pt(0.0, 10.0), pt(30.0, 10.0), b).is_none());
        assert!(enters(pt(0.0, 0.0), pt(5.0, 30.0), b).is_none());
    }

    #[test]
    fn a_line_through_a_box_goes_round_it_on_the_nearer_side() {
        let b = (pt(0.0, 40.0), pt(40.0, 20.0));
        let mut points = vec![pt(30.0, 0.0), pt(30.0, 100.0)];
        detour(&mut points, &[b]);
        let at: Vec<(f64, f64)> = points.iter().map(|p| (p.x, p.y)).collect();
        assert_eq!(at, [(30.0, 0.0), (48.0, 32.0), (48.0, 68.0), (30.0, 100.0)]);
        assert!(points.windows(2).all(|w| enters(w[0], w[1], b).is_none()));
    }

    #[test]
    fn a_clear_edge_keeps_its_curve_and_a_blocked_one_is_rerouted() {
        let path = [
            (pt(0.0, 0.0), pt(0.0, 30.0)),
            (pt(0.0, 70.0), pt(0.0, 100.0)),
        ];
        let (d, detours) = route(&path, &[], (0, 1)).unwrap();
        assert_eq!(d, "M 0 0 C 0 30, 0 70, 0 100");
        assert!(detours.is_empty());
        let blocked = [(2, (pt(-10.0, 40.0), pt(30.0, 20.0)))];
        let (d, detours) = route(&path, &blocked, (0, 1)).unwrap();
        assert_eq!(d, "M 0 0 L -18 32 L -18 68 L 0 100");
        assert_eq!(detours.len(), 2);
        // An end of the edge is no obstacle.
        let (d, _) = route(&path, &blocked, (2, 1)).unwrap();
        assert!(d.contains(" C "), "{d}");
    }
}
