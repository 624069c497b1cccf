//! BRITE's `.brite` output format:
//!
//! ```text
//! Topology: ( 3 Nodes, 2 Edges )
//! Model (1 - RTWaxman):  3 1000 100 1 2 0.15 0.2 1 1 10.0 1024.0
//!
//! Nodes: ( 3 )
//! 0  235.00  440.00  1  1  -1  RT_NODE
//! ...
//!
//! Edges: ( 2 )
//! 0  0  1  144.46  0.49  10.00  -1  -1  E_RT  U
//! ```
//!
//! Node lines: id, x, y, in-degree, out-degree, AS id, type. Edge lines:
//! id, from, to, length, delay (ms), bandwidth, AS from, AS to, type,
//! direction. A node is an AS: its number is the AS-id column for `AS_NODE`
//! lines (what [`write()`] produces) and `id + 1` otherwise (router-level
//! files, where the column is -1 or shared). BRITE has no relationships:
//! links read are [`Rel::Unknown`], and [`write()`] drops them.

use crate::flat::Flat;
use crate::{Graph, Link, Node, ParseError, Point, Rel};
use std::collections::HashMap;
use std::fmt::Write as _;

#[derive(PartialEq)]
enum Section {
    Head,
    Nodes,
    Edges,
}

/// Parse a `.brite` file into a graph with plane positions.
pub fn parse(text: &str, file: &str) -> Result<Flat, ParseError> {
    let mut g = Graph::default();
    let mut pos = Vec::new();
    let mut ids: HashMap<i64, u32> = HashMap::new();
    let mut asns: HashMap<u32, usize> = HashMap::new();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut section = Section::Head;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if l.starts_with("Topology:") || l.starts_with("Model") {
            continue;
        }
        if l.starts_with("Nodes:") {
            section = Section::Nodes;
            continue;
        }
        if l.starts_with("Edges:") {
            section = Section::Edges;
            continue;
        }
        let err = |m: String| ParseError::new(file, line, m);
        let f: Vec<&str> = l.split_whitespace().collect();
        let int = |k: usize, what: &str| -> Result<i64, ParseError> {
            let s = f.get(k).ok_or_else(|| err(format!("missing {what}")))?;
            s.parse::<i64>()
                .map_err(|_| err(format!("bad {what} {s:?}")))
        };
        let real = |k: usize, what: &str| -> Result<f64, ParseError> {
            let s = f.get(k).ok_or_else(|| err(format!("missing {what}")))?;
            match s.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(err(format!("bad {what} {s:?}"))),
            }
        };
        match section {
            Section::Head => return Err(err(format!("unexpected line before Nodes: {l:?}"))),
            Section::Nodes => {
                let id = int(0, "node id")?;
                let (x, y) = (real(1, "x")?, real(2, "y")?);
                let as_node = f.get(6) == Some(&"AS_NODE");
                let asn = if as_node {
                    let a = int(5, "AS id")?;
                    u32::try_from(a)
                        .ok()
                        .filter(|&a| a > 0)
                        .ok_or_else(|| err(format!("bad AS number {a}")))?
                } else {
                    u32::try_from(id)
                        .ok()
                        .and_then(|v| v.checked_add(1))
                        .ok_or_else(|| err(format!("node id {id} out of range")))?
                };
                let n = g.nodes.len() as u32;
                if ids.insert(id, n).is_some() {
                    return Err(err(format!("node {id} listed twice")));
                }
                if let Some(first) = asns.insert(asn, line) {
                    return Err(err(format!("AS{asn} already a node at line {first}")));
                }
                g.nodes.push(Node {
                    asn,
                    prefixes: Vec::new(),
                });
                pos.push(Point { x, y });
            }
            Section::Edges => {
                let _id = int(0, "edge id")?;
                let node = |k: usize, what: &str| -> Result<u32, ParseError> {
                    let v = int(k, what)?;
                    ids.get(&v)
                        .copied()
                        .ok_or_else(|| err(format!("{what} {v} is not a node")))
                };
                let (a, b) = (node(1, "from")?, node(2, "to")?);
                let delay = real(4, "delay")?;
                if a == b {
                    return Err(err("link from a node to itself".into()));
                }
                if !(0.0..=4.0e6).contains(&delay) {
                    return Err(err(format!("delay {delay} ms out of range")));
                }
                if let Some(first) = seen.insert(crate::util::pair(a, b), line) {
                    return Err(err(format!("nodes already linked at line {first}")));
                }
                g.links.push(Link {
                    a,
                    b,
                    rel: Rel::Unknown,
                    latency_us: (delay * 1000.0).round() as u32,
                });
            }
        }
    }
    Ok(Flat { graph: g, pos })
}

/// Write a graph as a `.brite` file (AS-level: `AS_NODE`/`E_AS`, AS id =
/// AS number, bandwidth 10). Without positions every node is at (0, 0) and
/// lengths are 0.
pub fn write(g: &Graph, pos: Option<&[Point]>) -> String {
    let mut s = String::with_capacity(64 + g.nodes.len() * 40 + g.links.len() * 60);
    let deg = g.degrees();
    let at = |i: u32| {
        pos.and_then(|p| p.get(i as usize))
            .copied()
            .unwrap_or_default()
    };
    let asn = |i: u32| g.nodes.get(i as usize).map(|n| n.asn).unwrap_or(0);
    let _ = writeln!(
        s,
        "Topology: ( {} Nodes, {} Edges )",
        g.nodes.len(),
        g.links.len()
    );
    let _ = writeln!(s, "Model (0 - tessera sim topo): {}\n", g.nodes.len());
    let _ = writeln!(s, "Nodes: ( {} )", g.nodes.len());
    for (i, n) in g.nodes.iter().enumerate() {
        let p = at(i as u32);
        let d = deg.get(i).copied().unwrap_or(0);
        let _ = writeln!(
            s,
            "{i}\t{:.2}\t{:.2}\t{d}\t{d}\t{}\tAS_NODE",
            p.x, p.y, n.asn
        );
    }
    let _ = writeln!(s, "\nEdges: ( {} )", g.links.len());
    for (i, l) in g.links.iter().enumerate() {
        let len = at(l.a).dist(at(l.b));
        let _ = writeln!(
            s,
            "{i}\t{}\t{}\t{len:.2}\t{:.3}\t10.00\t{}\t{}\tE_AS\tU",
            l.a,
            l.b,
            f64::from(l.latency_us) / 1000.0,
            asn(l.a),
            asn(l.b)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const BRITE: &str = "Topology: ( 3 Nodes, 2 Edges )
Model (1 - RTWaxman):  3 1000 100 1  2  0.15000 0.20000 1 1 10.0 1024.0

Nodes: ( 3 )
0\t235.00\t440.00\t1\t1\t-1\tRT_NODE
1\t300.00\t440.00\t2\t2\t-1\tRT_NODE
7\t300.00\t500.00\t1\t1\t-1\tRT_NODE

Edges: ( 2 )
0\t0\t1\t65.00\t0.22\t10.00\t-1\t-1\tE_RT\tU
1\t1\t7\t60.00\t0.20\t10.00\t-1\t-1\tE_RT\tU
";

    #[test]
    fn brite_fixture_and_round_trip() {
        let f = parse(BRITE, "t.brite").unwrap();
        let asns: Vec<u32> = f.graph.nodes.iter().map(|n| n.asn).collect();
        assert_eq!(asns, vec![1, 2, 8]);
        assert_eq!(f.pos[2], Point { x: 300.0, y: 500.0 });
        let l: Vec<(u32, u32, u32)> = f
            .graph
            .links
            .iter()
            .map(|l| (l.a, l.b, l.latency_us))
            .collect();
        assert_eq!(l, vec![(0, 1, 220), (1, 2, 200)]);
        let back = parse(&write(&f.graph, Some(&f.pos)), "u.brite").unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn errors_carry_the_line() {
        for (text, line, what) in [
            ("Nodes: (1)\n0 1 x\n", 2, "bad y"),
            ("Nodes: (1)\n0 1 1\n0 2 2\n", 3, "twice"),
            (
                "Nodes: (1)\n0 1 1\nEdges: (1)\n0 0 5 1 1\n",
                4,
                "not a node",
            ),
            ("Nodes: (1)\n0 1 1\nEdges: (1)\n0 0 0 1 1\n", 4, "itself"),
            (
                "Nodes: (1)\n0 1 1\n1 1 1\nEdges: (1)\n0 0 1 1 1\n1 1 0 1 1\n",
                6,
                "line 5",
            ),
            (
                "Nodes: (1)\n0 1 1\n1 1 1\nEdges: (1)\n0 0 1 1 nan\n",
                5,
                "delay",
            ),
            ("hello\n", 1, "before Nodes"),
            ("Nodes: (1)\n0 1 1 1 1 0 AS_NODE\n", 2, "AS number"),
        ] {
            let e = parse(text, "f.brite").unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.msg.contains(what), "{text:?}: {e}");
        }
    }
}
