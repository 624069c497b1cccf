//! TopologyZoo's GML (Graph Modelling Language) files:
//!
//! ```text
//! graph [
//!   node [ id 0 label "Seattle" Latitude 47.6 Longitude -122.33 ]
//!   node [ id 1 label "Denver" Latitude 39.74 Longitude -104.98 ]
//!   edge [ source 0 target 1 LinkLabel "OC-192" ]
//! ]
//! ```
//!
//! Each node becomes an AS numbered `id + 1`. A link's latency is the
//! great-circle distance between its ends at 200 km/ms when both have
//! `Latitude` and `Longitude`, else 0 (filled later). Zoo graphs are
//! multigraphs with the odd self-loop: repeated edges after the first and
//! self-loops are dropped. Other keys and nested lists (`graphics [...]`)
//! are read and ignored; lists nest at most 32 deep.

use crate::{Graph, Link, Node, ParseError, Rel};
use std::collections::{HashMap, HashSet};

const MAX_DEPTH: usize = 32;

#[derive(Debug)]
enum Tok<'a> {
    Key(&'a str),
    Num(f64),
    Str,
    Open,
    Close,
}

fn tokens<'a>(text: &'a str, file: &str) -> Result<Vec<(Tok<'a>, usize)>, ParseError> {
    let mut out = Vec::new();
    let mut line = 1usize;
    let b = text.as_bytes();
    let mut i = 0usize;
    while let Some(&c) = b.get(i) {
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'#' => {
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            b'[' => {
                out.push((Tok::Open, line));
                i += 1;
            }
            b']' => {
                out.push((Tok::Close, line));
                i += 1;
            }
            b'"' => {
                let start = line;
                i += 1;
                loop {
                    match b.get(i) {
                        None => return Err(ParseError::new(file, start, "unterminated string")),
                        Some(b'"') => break,
                        Some(b'\n') => line += 1,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                out.push((Tok::Str, start));
            }
            _ => {
                let s = i;
                while b.get(i).is_some_and(|&c| {
                    !matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'[' | b']' | b'"')
                }) {
                    i += 1;
                }
                let w = text.get(s..i).unwrap_or("");
                if w.is_empty() {
                    i += 1;
                    continue;
                }
                let first = w.as_bytes().first().copied().unwrap_or(b'0');
                if first.is_ascii_alphabetic() || first == b'_' {
                    if !w.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                        return Err(ParseError::new(file, line, format!("bad key {w:?}")));
                    }
                    out.push((Tok::Key(w), line));
                } else {
                    match w.parse::<f64>() {
                        Ok(v) if v.is_finite() => out.push((Tok::Num(v), line)),
                        _ => return Err(ParseError::new(file, line, format!("bad value {w:?}"))),
                    }
                }
            }
        }
    }
    Ok(out)
}

#[derive(Default)]
struct Item {
    line: usize,
    id: Option<f64>,
    source: Option<f64>,
    target: Option<f64>,
    lat: Option<f64>,
    lon: Option<f64>,
}

/// Parse a GML file.
pub fn parse(text: &str, file: &str) -> Result<Graph, ParseError> {
    let toks = tokens(text, file)?;
    // Walk key/value pairs with an explicit stack of open lists: the path of
    // keys tells a node's `id` from an edge's `source`.
    let mut path: Vec<&str> = Vec::new();
    let mut nodes: Vec<Item> = Vec::new();
    let mut edges: Vec<Item> = Vec::new();
    let mut saw_graph = false;
    let mut it = toks.iter().peekable();
    while let Some((t, line)) = it.next() {
        let line = *line;
        match t {
            Tok::Close => {
                if path.pop().is_none() {
                    return Err(ParseError::new(file, line, "unbalanced ]"));
                }
            }
            Tok::Key(k) => {
                let Some((v, vline)) = it.next() else {
                    return Err(ParseError::new(
                        file,
                        line,
                        format!("key {k} without a value"),
                    ));
                };
                match v {
                    Tok::Open => {
                        if path.len() >= MAX_DEPTH {
                            return Err(ParseError::new(file, *vline, "lists nested too deep"));
                        }
                        match (path.as_slice(), *k) {
                            ([], "graph") => saw_graph = true,
                            (["graph"], "node") => nodes.push(Item {
                                line,
                                ..Item::default()
                            }),
                            (["graph"], "edge") => edges.push(Item {
                                line,
                                ..Item::default()
                            }),
                            _ => {}
                        }
                        path.push(k);
                    }
                    Tok::Num(x) => {
                        let slot = match (path.as_slice(), *k) {
                            (["graph", "node"], "id") => nodes.last_mut().map(|n| &mut n.id),
                            (["graph", "node"], "Latitude") => nodes.last_mut().map(|n| &mut n.lat),
                            (["graph", "node"], "Longitude") => {
                                nodes.last_mut().map(|n| &mut n.lon)
                            }
                            (["graph", "edge"], "source") => {
                                edges.last_mut().map(|e| &mut e.source)
                            }
                            (["graph", "edge"], "target") => {
                                edges.last_mut().map(|e| &mut e.target)
                            }
                            _ => None,
                        };
                        if let Some(s) = slot {
                            if s.is_some() {
                                return Err(ParseError::new(
                                    file,
                                    line,
                                    format!("{k} given twice"),
                                ));
                            }
                            *s = Some(*x);
                        }
                    }
                    Tok::Str => {}
                    Tok::Key(_) | Tok::Close => {
                        return Err(ParseError::new(
                            file,
                            *vline,
                            format!("key {k} without a value"),
                        ))
                    }
                }
            }
            Tok::Num(_) | Tok::Str | Tok::Open => {
                return Err(ParseError::new(file, line, "expected a key"))
            }
        }
    }
    if let Some(open) = path.last() {
        let last = toks.last().map(|t| t.1).unwrap_or(1);
        return Err(ParseError::new(
            file,
            last,
            format!("list {open} not closed"),
        ));
    }
    if !saw_graph {
        return Err(ParseError::new(file, 1, "no graph [ ... ] in the file"));
    }
    let int_id = |v: Option<f64>, what: &str, line: usize| -> Result<u32, ParseError> {
        match v {
            Some(x) if (0.0..4.0e9).contains(&x) && x.fract() == 0.0 => Ok(x as u32),
            Some(x) => Err(ParseError::new(file, line, format!("bad {what} {x}"))),
            None => Err(ParseError::new(file, line, format!("{what} missing"))),
        }
    };
    let mut g = Graph::default();
    let mut ids: HashMap<u32, u32> = HashMap::new();
    let mut geo = Vec::new();
    for n in &nodes {
        let id = int_id(n.id, "node id", n.line)?;
        let asn = id
            .checked_add(1)
            .ok_or_else(|| ParseError::new(file, n.line, "node id out of range"))?;
        if ids.insert(id, g.nodes.len() as u32).is_some() {
            return Err(ParseError::new(
                file,
                n.line,
                format!("node id {id} used twice"),
            ));
        }
        g.nodes.push(Node {
            asn,
            prefixes: Vec::new(),
        });
        geo.push(n.lat.zip(n.lon));
    }
    let mut seen = HashSet::new();
    for e in &edges {
        let s = int_id(e.source, "edge source", e.line)?;
        let t = int_id(e.target, "edge target", e.line)?;
        let node = |v: u32| {
            ids.get(&v)
                .copied()
                .ok_or_else(|| ParseError::new(file, e.line, format!("edge to unknown node {v}")))
        };
        let (a, b) = (node(s)?, node(t)?);
        if a == b || !seen.insert(crate::util::pair(a, b)) {
            continue;
        }
        let lat = match (
            geo.get(a as usize).copied().flatten(),
            geo.get(b as usize).copied().flatten(),
        ) {
            (Some(x), Some(y)) => crate::latency::from_lat_lon(x, y),
            _ => 0,
        };
        g.links.push(Link {
            a,
            b,
            rel: Rel::Unknown,
            latency_us: lat,
        });
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZOO: &str = r#"graph [
  DateObtained "3/02/11"
  directed 0
  node [
    id 0
    label "Seattle"
    Latitude 47.60621
    Longitude -122.33207
  ]
  node [
    id 1
    label "Denver"
    Latitude 39.73915
    Longitude -104.9847
    graphics [ x 1 y 2 ]
  ]
  node [
    id 2
    label "Nowhere"
  ]
  edge [
    source 0
    target 1
    LinkLabel "OC-192"
  ]
  edge [ source 1 target 0 ]
  edge [ source 2 target 2 ]
  edge [
    source 1
    target 2
  ]
]
"#;

    #[test]
    fn zoo_fixture() {
        let g = parse(ZOO, "z.gml").unwrap();
        let asns: Vec<u32> = g.nodes.iter().map(|n| n.asn).collect();
        assert_eq!(asns, vec![1, 2, 3]);
        let l: Vec<(u32, u32)> = g.links.iter().map(|l| (l.a, l.b)).collect();
        assert_eq!(l, vec![(0, 1), (1, 2)]);
        // Seattle-Denver is about 1640 km: about 8.2 ms.
        assert!(
            (7_800..8_600).contains(&g.links[0].latency_us),
            "{:?}",
            g.links[0]
        );
        assert_eq!(g.links[1].latency_us, 0);
    }

    #[test]
    fn errors_carry_the_line() {
        for (text, line, what) in [
            (
                "graph [\n node [ id 0 ]\n edge [ source 0\n target 9 ]\n]\n",
                3,
                "unknown node",
            ),
            ("graph [\n node [ id x-1 ]\n]\n", 2, "bad key"),
            ("graph [\n node [ id 0 ]\n node [ id 0 ]\n]\n", 3, "twice"),
            ("graph [\n node [ label \"a\n", 2, "unterminated"),
            ("graph [\n node [ id 0 ]\n", 2, "not closed"),
            ("graph [ ]\n]\n", 2, "unbalanced"),
            ("graph [\n node [ id 1.5 ]\n]\n", 2, "bad node id"),
            ("graph [\n 5\n]\n", 2, "expected a key"),
            ("node [ id 0 ]\n", 1, "no graph"),
        ] {
            let e = parse(text, "f.gml").unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.msg.contains(what), "{text:?}: {e}");
        }
        let deep = "graph [".to_string() + &" a [".repeat(40) + &"]".repeat(41);
        assert!(parse(&deep, "d").unwrap_err().msg.contains("deep"));
    }
}
