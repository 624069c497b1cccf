//! Hand-checked small topologies: the final RIBs equal answers worked out
//! by hand from the decision process (LOCAL_PREF, AS-path length, MED,
//! router ID) and the Gao-Rexford export rules.

mod common;

use common::*;
use netsim::{Graph, NodeId, Scenario};
use topo::Rel;

#[test]
fn line_routes_follow_the_line() {
    // 0 - 1 - 2 - 3, no relationships: everything is exported.
    let g = Graph {
        nodes: nodes(4),
        links: (0..3).map(|i| link(i, i + 1, Rel::Unknown)).collect(),
    };
    let s = run(&g, instant_config(), &Scenario::default());
    for x in 0..4usize {
        for o in 0..4usize {
            // The hops from x towards o, excluding x itself.
            let hops: Vec<usize> = if o >= x {
                (x + 1..=o).collect()
            } else {
                (o..x).rev().collect()
            };
            assert_eq!(path(&s, x, o), Some(asns(&hops)), "{x} -> {o}");
        }
    }
}

#[test]
fn ring_takes_the_short_way_and_breaks_ties_by_router_id() {
    // A ring of 4: the opposite node is two hops either way; the
    // neighbour with the lower BGP Identifier (lower index) wins.
    let g = Graph {
        nodes: nodes(4),
        links: (0..4).map(|i| link(i, (i + 1) % 4, Rel::Unknown)).collect(),
    };
    let s = run(&g, instant_config(), &Scenario::default());
    assert_eq!(path(&s, 0, 2), Some(asns(&[1, 2])));
    assert_eq!(path(&s, 2, 0), Some(asns(&[1, 0])));
    assert_eq!(path(&s, 1, 3), Some(asns(&[0, 3])));
    assert_eq!(path(&s, 3, 1), Some(asns(&[0, 1])));
    assert_eq!(path(&s, 0, 3), Some(asns(&[3])));
    // A ring of 5 has no ties: two hops the short way round.
    let g = Graph {
        nodes: nodes(5),
        links: (0..5).map(|i| link(i, (i + 1) % 5, Rel::Unknown)).collect(),
    };
    let s = run(&g, instant_config(), &Scenario::default());
    assert_eq!(path(&s, 0, 2), Some(asns(&[1, 2])));
    assert_eq!(path(&s, 0, 3), Some(asns(&[4, 3])));
    assert_eq!(path(&s, 3, 0), Some(asns(&[4, 0])));
}

#[test]
fn clique_of_peers_does_not_reexport_peer_routes() {
    let mut links = Vec::new();
    for a in 0..4 {
        for b in a + 1..4 {
            links.push(link(a, b, Rel::Peer));
        }
    }
    let g = Graph {
        nodes: nodes(4),
        links,
    };
    let s = run(&g, instant_config(), &Scenario::default());
    for x in 0..4usize {
        let all = s.all_paths(x as NodeId);
        for o in 0..4usize {
            let held: Vec<_> = all.iter().filter(|r| r.prefix == prefix_of(o)).collect();
            // Exactly one path: the origin's own announcement (peer routes
            // are not passed on to other peers).
            assert_eq!(held.len(), 1, "{x} holds {held:?}");
            let want = if x == o { vec![] } else { asns(&[o]) };
            assert_eq!(held[0].as_path, want);
            if x != o {
                assert_eq!(held[0].local_pref, Some(200));
            }
        }
    }
}

/// A (0) above B (1) and C (2), both above D (3), plus `extra`.
fn diamond(ab: Rel, extra: Vec<topo::Link>, direct_cd: bool, direct_bd: bool) -> Graph {
    let mut links = vec![link(0, 1, ab), link(0, 2, Rel::ProviderCustomer)];
    if direct_bd {
        links.push(link(1, 3, Rel::ProviderCustomer));
    }
    if direct_cd {
        links.push(link(2, 3, Rel::ProviderCustomer));
    }
    links.extend(extra);
    Graph {
        nodes: nodes(5),
        links,
    }
}

#[test]
fn diamond_ties_lengths_local_pref_and_med() {
    // Equal LOCAL_PREF and length: router ID, B (lower) wins.
    let g = diamond(Rel::ProviderCustomer, vec![], true, true);
    let s = run(&g, instant_config(), &Scenario::default());
    assert_eq!(path(&s, 0, 3), Some(asns(&[1, 3])));
    let r = s.best_routes(0);
    let d = r.iter().find(|r| r.prefix == prefix_of(3)).unwrap();
    assert_eq!(d.local_pref, Some(300));
    assert_eq!(d.from, Some(1));

    // B's side is one AS longer (B - E - D): the shorter path via C wins
    // despite C's higher router ID.
    let g = diamond(
        Rel::ProviderCustomer,
        vec![
            link(1, 4, Rel::ProviderCustomer),
            link(4, 3, Rel::ProviderCustomer),
        ],
        true,
        false,
    );
    let s = run(&g, instant_config(), &Scenario::default());
    assert_eq!(path(&s, 0, 3), Some(asns(&[2, 3])));
    assert_eq!(path(&s, 1, 3), Some(asns(&[4, 3])));

    // A-B is a peer link and C's side is longer (C - E - D): the customer
    // route (LOCAL_PREF 300) beats the shorter peer route (200).
    let g = diamond(
        Rel::Peer,
        vec![
            link(2, 4, Rel::ProviderCustomer),
            link(4, 3, Rel::ProviderCustomer),
        ],
        false,
        true,
    );
    let s = run(&g, instant_config(), &Scenario::default());
    assert_eq!(path(&s, 0, 3), Some(asns(&[2, 4, 3])));
    let held = s.all_paths(0);
    let lps: Vec<_> = held
        .iter()
        .filter(|r| r.prefix == prefix_of(3))
        .map(|r| (r.from, r.local_pref))
        .collect();
    assert_eq!(lps, vec![(Some(1), Some(200)), (Some(2), Some(300))]);
    // B learned A's prefix from its peer A, so B does not pass it to...
    // nobody but its customer D: D has A's prefix via B or C, and E has it.
    assert!(path(&s, 4, 0).is_some());

    // MED: B sends MED 50, C sends MED 10. MED is only compared between
    // routes from the same neighbour AS by default, so B still wins on
    // router ID; with always-compare-med the lower MED (C) wins.
    let g = diamond(Rel::ProviderCustomer, vec![], true, true);
    for (always, want, med) in [(false, 1usize, 50u32), (true, 2, 10)] {
        let cfg = netsim::SimConfig {
            always_compare_med: always,
            ..instant_config()
        };
        let mut s = netsim::Sim::new(&g, cfg);
        s.set_export_med(1, 0, 50);
        s.set_export_med(2, 0, 10);
        s.start(&Scenario::default()).unwrap();
        s.run_to_end(u64::MAX, &mut ());
        let r = s.best_routes(0);
        let d = r.iter().find(|r| r.prefix == prefix_of(3)).unwrap();
        assert_eq!(d.from, Some(want as NodeId), "always_compare_med={always}");
        assert_eq!(d.med, Some(med));
        assert_eq!(d.as_path, asns(&[want, 3]));
    }
}
