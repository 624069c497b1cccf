//! Origin classes (`netsim::fast`): the routes computed per origin equal
//! the final best routes of the message-level simulation, where every AS
//! is a `RibCore` exchanging real UPDATEs, on random relationship graphs
//! (with and without MRAI), and the expansion over prefixes counts each
//! class once per prefix.

mod common;

use std::collections::HashMap;

use common::*;
use netsim::fast::{run_all, Classes};
use netsim::{NodeId, Scenario, SimConfig};

fn check(n: usize, seed: u64, cfg: SimConfig) {
    let g = random_graph(n, seed);
    let s = run(&g, cfg, &Scenario::default());
    let c = Classes::new(&g).unwrap();
    let mut w = c.work();
    // Per AS: prefix -> best path, prefix -> every path held from a
    // neighbour (collected once: the Sim's accessors copy whole tables).
    type Paths = HashMap<base::Prefix, Vec<Vec<u32>>>;
    let mut best: Vec<HashMap<base::Prefix, Vec<u32>>> = Vec::new();
    let mut held: Vec<Paths> = Vec::new();
    for x in 0..n {
        best.push(
            s.best_routes(x as NodeId)
                .into_iter()
                .map(|r| (r.prefix, r.as_path))
                .collect(),
        );
        let mut h: Paths = HashMap::new();
        for r in s.all_paths(x as NodeId) {
            if r.from.is_some() {
                h.entry(r.prefix).or_default().push(r.as_path);
            }
        }
        for v in h.values_mut() {
            v.sort();
        }
        held.push(h);
    }
    let mut compared = 0;
    for o in 0..n {
        c.propagate(o as NodeId, &mut w);
        let p = prefix_of(o);
        for x in 0..n {
            let to_asns = |v: &[NodeId]| v.iter().map(|&y| BASE_ASN + y).collect::<Vec<u32>>();
            let got = w.path(x as NodeId).map(|v| to_asns(&v));
            assert_eq!(
                got.as_ref(),
                best[x].get(&p),
                "seed {seed}: AS{} towards AS{}",
                BASE_ASN + x as u32,
                BASE_ASN + o as u32
            );
            // Every path held, not only the best.
            let mut got_held: Vec<Vec<u32>> = c
                .held(&w, x as NodeId)
                .into_iter()
                .map(|(_, _, v)| to_asns(&v))
                .collect();
            got_held.sort();
            let empty = Vec::new();
            assert_eq!(
                &got_held,
                held[x].get(&p).unwrap_or(&empty),
                "seed {seed}: paths AS{} holds towards AS{}",
                BASE_ASN + x as u32,
                BASE_ASN + o as u32
            );
            compared += 1;
        }
    }
    assert_eq!(compared, n * n);
}

#[test]
fn origin_classes_equal_the_message_level_final_ribs() {
    for seed in [1, 2, 3] {
        check(200, seed, instant_config());
    }
}

#[test]
fn origin_classes_equal_the_message_level_final_ribs_with_mrai() {
    let cfg = SimConfig {
        seed: 9,
        ..SimConfig::default()
    };
    check(120, 9, cfg);
}

#[test]
fn totals_expand_each_class_by_its_prefixes_on_any_thread_count() {
    let mut g = random_graph(150, 4);
    // Origin 0 gets three prefixes, 1 none: classes, not prefixes, are
    // computed.
    g.nodes[0].prefixes.push(prefix_of(500));
    g.nodes[0].prefixes.push(prefix_of(501));
    g.nodes[1].prefixes.clear();
    let (t1, tab1) = run_all(&g, 1, &[5, 7], &|_| {}).unwrap();
    let (t3, tab3) = run_all(&g, 3, &[5, 7], &|_| {}).unwrap();
    assert_eq!(t1, t3);
    assert_eq!(tab1, tab3);
    assert_eq!(t1.classes, 149);
    assert_eq!(t1.prefixes, 151);
    // Connected through providers: every AS reaches every origin.
    assert_eq!(t1.routes, 151 * 150);
    assert_eq!(t1.unreachable, 0);
    assert_eq!(t1.path_len[0], 151, "own routes");
    assert_eq!(t1.by_role.iter().sum::<u64>() + 151, t1.routes);
    assert_eq!(tab1[0].len(), 149);
    // Unknown relationships are refused, not guessed.
    let mut u = g.clone();
    u.links[0].rel = topo::Rel::Unknown;
    assert!(Classes::new(&u).is_err());
}
