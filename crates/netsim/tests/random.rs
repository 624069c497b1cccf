//! Random relationship graphs: the simulated final RIBs equal an
//! independent Gao-Rexford route computation, and every path is
//! valley-free.

mod common;

use std::collections::HashMap;

use common::*;
use netsim::{NodeId, Scenario, Sim, SimConfig};

/// Every node's best path per origin index.
fn table(s: &Sim, n: usize) -> Vec<HashMap<usize, Vec<u32>>> {
    let by_prefix: HashMap<_, usize> = (0..n).map(|i| (prefix_of(i), i)).collect();
    (0..n)
        .map(|x| {
            s.best_routes(x as NodeId)
                .into_iter()
                .filter_map(|r| Some((*by_prefix.get(&r.prefix)?, r.as_path)))
                .collect()
        })
        .collect()
}

fn check_against_reference(n: usize, seed: u64, cfg: SimConfig) {
    let g = random_graph(n, seed);
    let s = run(&g, cfg, &Scenario::default());
    let t = table(&s, n);
    let mut routes = 0;
    for o in 0..n {
        let want = reference(&g, o);
        for x in 0..n {
            let got = t[x].get(&o);
            assert_eq!(
                got,
                want[x].as_ref(),
                "seed {seed}: AS{} towards AS{}",
                BASE_ASN + x as u32,
                BASE_ASN + o as u32
            );
            routes += usize::from(got.is_some());
        }
    }
    // The graph is connected through providers: everyone reaches everyone.
    assert_eq!(routes, n * n, "seed {seed}");
}

#[test]
fn without_mrai_and_delays_final_ribs_equal_the_reference() {
    for seed in [1, 2, 3] {
        check_against_reference(200, seed, instant_config());
    }
}

#[test]
fn with_mrai_jitter_and_delays_the_stable_state_is_the_same() {
    // Gao-Rexford policies have one stable state: MRAI, jitter and
    // processing delays change the way there, not the end.
    for seed in [4, 5] {
        let cfg = SimConfig {
            seed,
            ..SimConfig::default()
        };
        check_against_reference(120, seed, cfg);
    }
}

#[test]
fn split_over_two_threads_the_stable_state_is_the_same() {
    for seed in [6, 7] {
        let cfg = SimConfig {
            seed,
            threads: 2,
            ..SimConfig::default()
        };
        check_against_reference(150, seed, cfg);
    }
}

#[test]
fn every_path_in_every_final_rib_is_valley_free() {
    for seed in 10..16 {
        let n = 80;
        let g = random_graph(n, seed);
        let cfg = SimConfig {
            seed,
            mrai: std::time::Duration::from_secs(5),
            ..SimConfig::default()
        };
        let s = run(&g, cfg, &Scenario::default());
        let mut checked = 0;
        for x in 0..n {
            // Every path held, not only the best: nothing that violates the
            // export rules was ever sent.
            for r in s.all_paths(x as NodeId) {
                assert!(
                    valley_free(&g, x, &r.as_path),
                    "seed {seed}: AS{} holds {:?} for {}",
                    BASE_ASN + x as u32,
                    r.as_path,
                    r.prefix
                );
                checked += 1;
            }
        }
        assert!(checked > n * n, "seed {seed}: only {checked} paths");
    }
}

#[test]
fn valley_free_check_catches_a_valley() {
    // The checker itself: 0 is the provider of 1 and 2, which peer.
    // Up then down, or one peer hop, is fine; anything after a peer hop or
    // a down hop other than down is a valley.
    let g = netsim::Graph {
        nodes: nodes(3),
        links: vec![
            link(0, 1, topo::Rel::ProviderCustomer),
            link(0, 2, topo::Rel::ProviderCustomer),
            link(1, 2, topo::Rel::Peer),
        ],
    };
    assert!(valley_free(&g, 1, &asns(&[0, 2])));
    assert!(valley_free(&g, 1, &asns(&[2])));
    assert!(valley_free(&g, 0, &asns(&[2])));
    // 2 -> 1 over the peer link, then up to 0.
    assert!(!valley_free(&g, 0, &asns(&[1, 2])));
    // 0 -> 1 down, then across the peer link to 2.
    assert!(!valley_free(&g, 2, &asns(&[1, 0])));
}

#[test]
fn the_thread_split_keeps_short_links_inside_parts() {
    // A ring of 40 ASes: pairs (2i, 2i+1) joined by 0.5 ms links, pairs
    // joined to the next by 20 ms links. Splitting AS x into part x % 2
    // would cut every 0.5 ms link (window 0.5 ms); the partition keeps
    // them inside parts, so the window is 20 ms.
    let n = 40u32;
    let mut links = Vec::new();
    for i in 0..n {
        let j = (i + 1) % n;
        let mut l = link(i, j, topo::Rel::Peer);
        l.latency_us = if i % 2 == 0 { 500 } else { 20_000 };
        links.push(l);
    }
    let g = netsim::Graph {
        nodes: nodes(n as usize),
        links,
    };
    for threads in [2, 4] {
        let s = Sim::new(
            &g,
            SimConfig {
                threads,
                ..SimConfig::default()
            },
        );
        assert_eq!(s.threads(), threads);
        assert_eq!(s.window_ns(), 20_000_000, "{threads} threads");
    }
    let s = Sim::new(&g, SimConfig::default());
    assert_eq!((s.threads(), s.window_ns()), (1, 0));
}
