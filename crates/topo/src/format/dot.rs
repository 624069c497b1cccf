//! GraphViz output: an undirected graph whose nodes are AS numbers.
//! Customer-provider links are drawn as arrows from provider to customer,
//! peerings dashed, unknown relationships plain; labels give latency in ms.

use crate::{Graph, Rel};
use std::fmt::Write as _;

/// Write a graph as GraphViz `dot` text.
pub fn write(g: &Graph) -> String {
    let mut s = String::with_capacity(32 + g.nodes.len() * 12 + g.links.len() * 48);
    s.push_str("graph topo {\n  node [shape=circle];\n");
    for n in &g.nodes {
        let _ = writeln!(
            s,
            "  {} [label=\"AS{}\\n{} pfx\"];",
            n.asn,
            n.asn,
            n.prefixes.len()
        );
    }
    let asn = |i: u32| g.nodes.get(i as usize).map(|n| n.asn).unwrap_or(0);
    for l in &g.links {
        let style = match l.rel {
            Rel::ProviderCustomer => "dir=forward",
            Rel::Peer => "style=dashed",
            Rel::Unknown => "color=gray40",
        };
        let _ = writeln!(
            s,
            "  {} -- {} [{style}, label=\"{:.1}\"];",
            asn(l.a),
            asn(l.b),
            f64::from(l.latency_us) / 1000.0
        );
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Link, Node};

    #[test]
    fn small_graph() {
        let g = Graph {
            nodes: vec![
                Node {
                    asn: 10,
                    prefixes: vec![],
                },
                Node {
                    asn: 20,
                    prefixes: vec![],
                },
                Node {
                    asn: 30,
                    prefixes: vec![],
                },
            ],
            links: vec![
                Link {
                    a: 0,
                    b: 1,
                    rel: Rel::ProviderCustomer,
                    latency_us: 1500,
                },
                Link {
                    a: 1,
                    b: 2,
                    rel: Rel::Peer,
                    latency_us: 200,
                },
            ],
        };
        let d = write(&g);
        assert!(d.starts_with("graph topo {"));
        assert!(
            d.contains("  10 -- 20 [dir=forward, label=\"1.5\"];"),
            "{d}"
        );
        assert!(
            d.contains("  20 -- 30 [style=dashed, label=\"0.2\"];"),
            "{d}"
        );
        assert_eq!(d.matches(" -- ").count(), 2);
        assert!(d.trim_end().ends_with('}'));
    }
}
