//! The checks the fuzz targets (`fuzz/fuzz_targets/topo_*.rs`) run on each
//! input, here so that unit tests run them too: parse, never panic, and
//! either return a consistent graph or an error whose line lies inside the
//! text.

use crate::format::{brite, caida, gml};
use crate::{Graph, ParseError};
use std::collections::HashSet;

fn consistent(g: &Graph) {
    let n = g.nodes.len();
    let mut pairs = HashSet::new();
    for l in &g.links {
        assert!((l.a as usize) < n && (l.b as usize) < n, "link to no node");
        assert_ne!(l.a, l.b, "self-loop");
        assert!(pairs.insert(crate::util::pair(l.a, l.b)), "pair twice");
    }
    let asns: HashSet<u32> = g.nodes.iter().map(|x| x.asn).collect();
    assert_eq!(asns.len(), n, "AS number twice");
}

fn error_inside(e: &ParseError, text: &str, file: &str) {
    let lines = text.split('\n').count().max(1);
    assert_eq!(e.file, file);
    assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line);
    assert!(!e.msg.is_empty());
    assert!(e.to_string().starts_with(&format!("{file}:{}: ", e.line)));
}

/// CAIDA: what parses must write back to text that parses to the same file.
pub fn check_caida(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match caida::parse(&text, "fuzz.txt") {
        Ok(f) => {
            consistent(&f.graph);
            let back = caida::parse(&caida::write(&f.graph, &f.clique, &f.ixps), "again.txt");
            assert_eq!(back.as_ref().map(|b| &b.graph), Ok(&f.graph), "round trip");
        }
        Err(e) => error_inside(&e, &text, "fuzz.txt"),
    }
}

/// BRITE: positions for every node; what is written parses again with the
/// same links.
pub fn check_brite(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match brite::parse(&text, "fuzz.brite") {
        Ok(f) => {
            consistent(&f.graph);
            assert_eq!(f.pos.len(), f.graph.nodes.len());
            let back = brite::parse(&brite::write(&f.graph, Some(&f.pos)), "again.brite");
            match back {
                Ok(b) => {
                    let ends = |g: &Graph| -> Vec<(u32, u32)> {
                        g.links.iter().map(|l| (l.a, l.b)).collect()
                    };
                    assert_eq!(ends(&b.graph), ends(&f.graph), "round trip links");
                }
                Err(e) => panic!("own output refused: {e}"),
            }
        }
        Err(e) => error_inside(&e, &text, "fuzz.brite"),
    }
}

/// GML.
pub fn check_gml(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match gml::parse(&text, "fuzz.gml") {
        Ok(g) => consistent(&g),
        Err(e) => error_inside(&e, &text, "fuzz.gml"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::Rng;

    /// A small in-process fuzz loop: mutate fixtures byte by byte and run
    /// the checks (the real fuzzing is `scripts/fuzz topo_caida` etc.).
    #[test]
    fn mutated_fixtures_never_panic() {
        type Check = fn(&[u8]);
        let fixtures: [(&str, Check); 3] = [
            ("# input clique: 1 2\n# IXP ASes: 9\n1|2|0\n1|3|-1|bgp\n3|4|-1\n", check_caida),
            (
                "Topology: ( 2 Nodes, 1 Edges )\nNodes: ( 2 )\n0 1.5 2 1 1 7 AS_NODE\n1 3 4 1 1 -1 RT_NODE\n\nEdges: ( 1 )\n0 0 1 1.0 0.25 10 -1 -1 E_RT U\n",
                check_brite,
            ),
            (
                "graph [\n node [ id 0 Latitude 1 Longitude 2 ]\n node [ id 1 ]\n edge [ source 0 target 1 ]\n]\n",
                check_gml,
            ),
        ];
        let alphabet = b"0123456789|-# \n[]\".:ABNEodgeintraphsucly";
        let mut rng = Rng::new(42);
        for (fixture, check) in fixtures {
            check(fixture.as_bytes());
            for _ in 0..3000 {
                let mut d = fixture.as_bytes().to_vec();
                for _ in 0..1 + rng.below(4) {
                    let i = rng.below(d.len() as u64) as usize;
                    match rng.below(3) {
                        0 => d[i] = alphabet[rng.below(alphabet.len() as u64) as usize],
                        1 => {
                            d.remove(i);
                        }
                        _ => d.insert(i, alphabet[rng.below(alphabet.len() as u64) as usize]),
                    }
                    if d.is_empty() {
                        break;
                    }
                }
                check(&d);
            }
        }
    }
}
