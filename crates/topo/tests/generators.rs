//! Properties of the generators over many seeds, determinism of what they
//! write, and round trips through the formats.

use proptest::prelude::*;
use std::collections::HashSet;
use topo::build::{self, Built, Finish, Kind, Spec};
use topo::flat::Degree;
use topo::format::{brite, caida, Format};
use topo::prefixes::Counts;
use topo::{Graph, Rel};

fn built(kind: Kind, nodes: u32, seed: u64) -> Built {
    let mut b = build::generate(&Spec {
        kind,
        nodes,
        seed,
        ..Spec::default()
    })
    .unwrap();
    build::finish(
        &mut b,
        &Finish {
            annotate: Some(0.0),
            prefixes: Some(Counts::Real),
            seed,
        },
    )
    .unwrap();
    b
}

fn check_well_formed(g: &Graph) {
    let mut pairs = HashSet::new();
    for l in &g.links {
        assert_ne!(l.a, l.b, "self-loop");
        assert!((l.a as usize) < g.nodes.len() && (l.b as usize) < g.nodes.len());
        assert!(pairs.insert((l.a.min(l.b), l.a.max(l.b))), "pair twice");
        assert!(l.latency_us > 0, "latency missing");
        assert_ne!(l.rel, Rel::Unknown);
    }
    let asns: HashSet<u32> = g.nodes.iter().map(|n| n.asn).collect();
    assert_eq!(asns.len(), g.nodes.len(), "AS numbers repeat");
    let prefixes: HashSet<_> = g.nodes.iter().flat_map(|n| n.prefixes.iter()).collect();
    let total: usize = g.nodes.iter().map(|n| n.prefixes.len()).sum();
    assert_eq!(prefixes.len(), total, "a prefix has two origins");
    assert!(g.nodes.iter().all(|n| !n.prefixes.is_empty()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn no_provider_cycles_in_any_generated_graph(seed in any::<u64>(), nodes in 2u32..600) {
        for kind in [Kind::AsRel, Kind::TransitStub, Kind::Waxman, Kind::Ba] {
            // Flat graphs need room for their degrees.
            let n = if matches!(kind, Kind::Waxman | Kind::Ba) { nodes.max(40) } else { nodes };
            let b = built(kind, n, seed);
            prop_assert_eq!(b.graph.provider_cycle(), None, "{:?} seed {}", kind, seed);
            prop_assert_eq!(b.graph.nodes.len(), n as usize);
            check_well_formed(&b.graph);
        }
    }

    #[test]
    fn flat_degree_ranges_hold(seed in any::<u64>(), min in 2u32..8, extra in 0u32..6) {
        let b = build::generate(&Spec {
            nodes: 300,
            degree: Degree::Range { min, max: min + extra },
            seed,
            ..Spec::default()
        })
        .unwrap();
        let d = b.graph.degrees();
        prop_assert!(d.iter().all(|&x| x >= min && x <= min + extra), "{:?}", (d.iter().min(), d.iter().max()));
    }
}

#[test]
fn default_brite_graph_has_1000_nodes_of_degree_10_to_15_and_is_connected() {
    for kind in [Kind::Waxman, Kind::Ba] {
        let b = built(kind, 1000, 1);
        let s = topo::summary::Summary::of(&b.graph);
        assert_eq!(s.nodes, 1000);
        assert!(s.degree_min >= 10 && s.degree_max <= 15, "{kind:?}: {s}");
        assert_eq!(s.components, 1);
        assert!(!s.provider_cycle);
        check_well_formed(&b.graph);
    }
}

#[test]
fn same_seed_same_caida_bytes_other_seed_other_bytes() {
    for kind in [Kind::AsRel, Kind::Waxman, Kind::TransitStub] {
        let a = build::export(&built(kind, 500, 7), Format::Caida).unwrap();
        let b = build::export(&built(kind, 500, 7), Format::Caida).unwrap();
        let c = build::export(&built(kind, 500, 8), Format::Caida).unwrap();
        assert_eq!(a, b, "{kind:?}");
        assert_ne!(a, c, "{kind:?}");
        assert!(a.lines().filter(|l| !l.starts_with('#')).count() > 500);
    }
}

#[test]
fn generated_graphs_round_trip_through_caida_and_brite() {
    for kind in [Kind::AsRel, Kind::Ba, Kind::TransitStub] {
        let b = built(kind, 800, 3);
        let text = build::export(&b, Format::Caida).unwrap();
        let back = caida::parse(&text, "gen.txt").unwrap();
        assert_eq!(back.clique, b.clique);
        // Same links, same ends, same relationships; latency is not in the format.
        let asn = |g: &Graph, i: u32| g.nodes[i as usize].asn;
        let ends = |g: &Graph| -> Vec<(u32, u32, Rel)> {
            g.links
                .iter()
                .map(|l| (asn(g, l.a), asn(g, l.b), l.rel))
                .collect()
        };
        assert_eq!(ends(&back.graph), ends(&b.graph));
        let bt = build::export(&b, Format::Brite).unwrap();
        let bb = brite::parse(&bt, "gen.brite").unwrap();
        let want = b
            .pos
            .clone()
            .unwrap_or_else(|| vec![Default::default(); 800]);
        assert!(
            bb.pos == want,
            "{kind:?}: positions differ after the BRITE round trip"
        );
        let lat = |g: &Graph| -> Vec<(u32, u32, u32)> {
            g.links
                .iter()
                .map(|l| (asn(g, l.a), asn(g, l.b), l.latency_us))
                .collect()
        };
        assert_eq!(lat(&bb.graph), lat(&b.graph));
    }
}

#[test]
fn an_80000_as_relationship_graph_is_generated() {
    let b = build::generate(&Spec {
        kind: Kind::AsRel,
        nodes: 80_000,
        seed: 1,
        ..Spec::default()
    })
    .unwrap();
    let s = topo::summary::Summary::of(&b.graph);
    assert_eq!(s.nodes, 80_000);
    assert_eq!(s.components, 1);
    assert!(!s.provider_cycle);
    // Heavy tail: the biggest AS has thousands of neighbours, most have few.
    assert!(s.degree_max > 1000, "{s}");
    assert!(s.degree_mean < 10.0, "{s}");
}

#[test]
fn oversized_requests_are_errors() {
    for (kind, nodes) in [
        (Kind::Waxman, build::MAX_FLAT_NODES + 1),
        (Kind::AsRel, build::MAX_NODES + 1),
        (Kind::TransitStub, (build::MAX_FLAT_NODES + 1) * 20),
    ] {
        let e = build::generate(&Spec {
            kind,
            nodes,
            ..Spec::default()
        });
        assert!(e.is_err(), "{kind:?} {nodes}");
    }
}
