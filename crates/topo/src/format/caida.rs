//! CAIDA's AS-relationship format (serial-1 and serial-2):
//!
//! ```text
//! # input clique: 174 209 286
//! # IXP ASes: 1200 4635
//! 174|3356|0
//! 174|7018|-1|bgp
//! ```
//!
//! `a|b|-1` means `a` is a provider of `b`, `a|b|0` that they peer; a fourth
//! field (serial-2's inference source) is kept only as "present". Nodes are
//! numbered in order of first appearance in the links (the header lists
//! are kept as AS numbers only). The
//! format has no latency: links read have latency 0
//! ([`crate::latency::fill_missing`] gives them one).

use crate::{Graph, Link, Node, ParseError, Rel};
use std::collections::HashMap;
use std::fmt::Write as _;

/// A CAIDA file: the graph plus its header lists (AS numbers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AsRelFile {
    /// The graph.
    pub graph: Graph,
    /// `# input clique:` ASes.
    pub clique: Vec<u32>,
    /// `# IXP ASes:` ASes.
    pub ixps: Vec<u32>,
}

fn asn_list(s: &str, file: &str, line: usize) -> Result<Vec<u32>, ParseError> {
    s.split_whitespace()
        .map(|t| {
            t.parse::<u32>()
                .map_err(|_| ParseError::new(file, line, format!("bad AS number {t:?} in header")))
        })
        .collect()
}

/// Parse.
pub fn parse(text: &str, file: &str) -> Result<AsRelFile, ParseError> {
    let mut out = AsRelFile::default();
    let mut ids: HashMap<u32, u32> = HashMap::new();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut id = |g: &mut Graph, asn: u32| -> u32 {
        *ids.entry(asn).or_insert_with(|| {
            g.nodes.push(Node {
                asn,
                prefixes: Vec::new(),
            });
            (g.nodes.len() - 1) as u32
        })
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(c) = l.strip_prefix('#') {
            let c = c.trim_start();
            if let Some(rest) = c.strip_prefix("input clique:") {
                out.clique = asn_list(rest, file, line)?;
            } else if let Some(rest) = c.strip_prefix("IXP ASes:") {
                out.ixps = asn_list(rest, file, line)?;
            }
            continue;
        }
        let f: Vec<&str> = l.split('|').collect();
        if f.len() < 3 || f.len() > 4 {
            return Err(ParseError::new(
                file,
                line,
                format!("expected a|b|rel or a|b|rel|source, got {} fields", f.len()),
            ));
        }
        let num = |s: &str| -> Result<u32, ParseError> {
            s.trim()
                .parse::<u32>()
                .map_err(|_| ParseError::new(file, line, format!("bad AS number {s:?}")))
        };
        let (a, b) = match (f.first(), f.get(1)) {
            (Some(a), Some(b)) => (num(a)?, num(b)?),
            _ => return Err(ParseError::new(file, line, "missing AS numbers")),
        };
        let rel = match f.get(2).map(|s| s.trim()) {
            Some("-1") => Rel::ProviderCustomer,
            Some("0") => Rel::Peer,
            Some(r) => {
                return Err(ParseError::new(
                    file,
                    line,
                    format!("relationship {r:?}: expected -1 (provider-customer) or 0 (peer)"),
                ))
            }
            None => return Err(ParseError::new(file, line, "missing relationship")),
        };
        if a == b {
            return Err(ParseError::new(
                file,
                line,
                format!("AS{a} linked to itself"),
            ));
        }
        let (ia, ib) = (id(&mut out.graph, a), id(&mut out.graph, b));
        if let Some(first) = seen.insert(crate::util::pair(ia, ib), line) {
            return Err(ParseError::new(
                file,
                line,
                format!("AS{a} and AS{b} already linked at line {first}"),
            ));
        }
        out.graph.links.push(Link {
            a: ia,
            b: ib,
            rel,
            latency_us: 0,
        });
    }
    Ok(out)
}

/// Write: the header comments (when the lists are not empty), then one line
/// per link in link order. Links with [`Rel::Unknown`] are written as peers
/// (the format has no "unknown").
pub fn write(g: &Graph, clique: &[u32], ixps: &[u32]) -> String {
    let mut s = String::with_capacity(g.links.len() * 16 + 64);
    let list = |s: &mut String, what: &str, v: &[u32]| {
        if !v.is_empty() {
            s.push_str(what);
            for a in v {
                let _ = write!(s, " {a}");
            }
            s.push('\n');
        }
    };
    list(&mut s, "# input clique:", clique);
    list(&mut s, "# IXP ASes:", ixps);
    let asn = |i: u32| g.nodes.get(i as usize).map(|n| n.asn).unwrap_or(0);
    for l in &g.links {
        let r = if l.rel == Rel::ProviderCustomer {
            -1
        } else {
            0
        };
        let _ = writeln!(s, "{}|{}|{}", asn(l.a), asn(l.b), r);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "# source:topology|BGP|20140501\n\
        # input clique: 174 209\n\
        # IXP ASes: 1200\n\
        174|209|0\n\
        174|7018|-1|bgp\n\
        \n\
        7018|65000|-1\n";

    #[test]
    fn small_fixture() {
        let f = parse(SMALL, "x.txt").unwrap();
        assert_eq!(f.clique, vec![174, 209]);
        assert_eq!(f.ixps, vec![1200]);
        let asns: Vec<u32> = f.graph.nodes.iter().map(|n| n.asn).collect();
        assert_eq!(asns, vec![174, 209, 7018, 65000]);
        let l: Vec<(u32, u32, Rel)> = f.graph.links.iter().map(|l| (l.a, l.b, l.rel)).collect();
        assert_eq!(
            l,
            vec![
                (0, 1, Rel::Peer),
                (0, 2, Rel::ProviderCustomer),
                (2, 3, Rel::ProviderCustomer)
            ]
        );
        let back = parse(&write(&f.graph, &f.clique, &f.ixps), "y").unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn errors_carry_the_line() {
        for (text, line, what) in [
            ("1|2|0\n1|x|0\n", 2, "bad AS number"),
            ("1|2\n", 1, "fields"),
            ("# c\n1|2|1\n", 2, "relationship"),
            ("1|1|0\n", 1, "itself"),
            ("1|2|0\n\n2|1|-1\n", 3, "line 1"),
            ("# input clique: 1 q\n", 1, "header"),
            ("1|2|0|a|b\n", 1, "fields"),
        ] {
            let e = parse(text, "f.txt").unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("f.txt:{line}: ")));
            assert!(e.msg.contains(what), "{text:?}: {e}");
        }
    }
}
