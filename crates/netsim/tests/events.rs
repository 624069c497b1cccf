//! Scenario events: link failure and repair, withdrawal and
//! re-announcement, hijack, leak, session reset, flaps, the worm surge,
//! and MRAI pacing as seen by a receiver.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use netsim::{Action, Event, NodeId, Observer, Scenario, Sim, SimConfig};
use topo::Rel;

const S: u64 = 1_000_000_000;

fn ev(at_s: u64, action: Action) -> Event {
    Event {
        at: Duration::from_secs(at_s),
        action,
    }
}

fn started(g: &netsim::Graph, cfg: SimConfig, events: Vec<Event>) -> Sim {
    let mut s = Sim::new(g, cfg);
    s.start(&Scenario { events }).unwrap();
    s
}

#[test]
fn link_failure_reroutes_and_repair_restores() {
    // A (0) above B (1) and C (2), both above D (3).
    let g = netsim::Graph {
        nodes: nodes(4),
        links: vec![
            link(0, 1, Rel::ProviderCustomer),
            link(0, 2, Rel::ProviderCustomer),
            link(1, 3, Rel::ProviderCustomer),
            link(2, 3, Rel::ProviderCustomer),
        ],
    };
    let (b, d) = (BASE_ASN + 1, BASE_ASN + 3);
    let mut s = started(
        &g,
        SimConfig::default(),
        vec![
            ev(100, Action::LinkDown(b, d)),
            ev(200, Action::LinkUp(b, d)),
        ],
    );
    s.run_to_end(99 * S, &mut ());
    assert_eq!(path(&s, 0, 3), Some(asns(&[1, 3])));
    assert_eq!(path(&s, 1, 3), Some(asns(&[3])));
    s.run_to_end(199 * S, &mut ());
    assert_eq!(path(&s, 0, 3), Some(asns(&[2, 3])));
    assert_eq!(path(&s, 1, 3), Some(asns(&[0, 2, 3])));
    assert_eq!(path(&s, 3, 1), Some(asns(&[2, 0, 1])));
    s.run_to_end(u64::MAX, &mut ());
    assert_eq!(path(&s, 0, 3), Some(asns(&[1, 3])));
    assert_eq!(path(&s, 1, 3), Some(asns(&[3])));
    let st = s.stats();
    assert_eq!(st.len(), 3);
    assert!(st[1].updates > 0 && st[1].convergence() > Duration::ZERO);
    assert!(st[2].updates > 0);
}

#[test]
fn withdrawal_removes_the_prefix_everywhere_and_reannouncement_restores_it() {
    let g = netsim::Graph {
        nodes: nodes(4),
        links: (0..3).map(|i| link(i, i + 1, Rel::Unknown)).collect(),
    };
    let o = BASE_ASN;
    let mut s = started(
        &g,
        SimConfig::default(),
        vec![
            ev(50, Action::Withdraw(o, prefix_of(0))),
            ev(200, Action::Announce(o, prefix_of(0))),
        ],
    );
    s.run_to_end(49 * S, &mut ());
    assert!((0..4).all(|x| path(&s, x, 0).is_some()));
    s.run_to_end(199 * S, &mut ());
    assert!((0..4).all(|x| path(&s, x, 0).is_none()));
    assert!((0..4).all(|x| path(&s, x, 1).is_some()));
    s.run_to_end(u64::MAX, &mut ());
    assert_eq!(path(&s, 3, 0), Some(asns(&[2, 1, 0])));
}

#[test]
fn hijack_captures_the_ases_closer_to_the_hijacker() {
    // 0 - 1 - 2 - 3 - 4; 4 originates 0's prefix.
    let g = netsim::Graph {
        nodes: nodes(5),
        links: (0..4).map(|i| link(i, i + 1, Rel::Unknown)).collect(),
    };
    let mut s = started(
        &g,
        SimConfig::default(),
        vec![ev(50, Action::Hijack(BASE_ASN + 4, prefix_of(0)))],
    );
    s.run_to_end(49 * S, &mut ());
    assert_eq!(path(&s, 3, 0), Some(asns(&[2, 1, 0])));
    s.run_to_end(u64::MAX, &mut ());
    assert_eq!(path(&s, 4, 0), Some(vec![]));
    assert_eq!(path(&s, 3, 0), Some(asns(&[4])));
    // Two hops either way: the lower router ID (towards the origin) wins.
    assert_eq!(path(&s, 2, 0), Some(asns(&[1, 0])));
    assert_eq!(path(&s, 1, 0), Some(asns(&[0])));
}

#[test]
fn route_leak_makes_a_provider_prefer_the_leaked_valley() {
    // A (0) above B (1) and C (2); D (3) is a customer of both B and C.
    let g = netsim::Graph {
        nodes: nodes(4),
        links: vec![
            link(0, 1, Rel::ProviderCustomer),
            link(0, 2, Rel::ProviderCustomer),
            link(1, 3, Rel::ProviderCustomer),
            link(2, 3, Rel::ProviderCustomer),
        ],
    };
    let mut s = started(
        &g,
        SimConfig::default(),
        vec![ev(100, Action::Leak(BASE_ASN + 3))],
    );
    s.run_to_end(99 * S, &mut ());
    let before = path(&s, 2, 1).unwrap();
    assert_eq!(before, asns(&[0, 1]));
    assert!(valley_free(&g, 2, &before));
    s.run_to_end(u64::MAX, &mut ());
    // C now prefers the customer route through the leaker D.
    let after = path(&s, 2, 1).unwrap();
    assert_eq!(after, asns(&[3, 1]));
    assert!(!valley_free(&g, 2, &after));
}

#[test]
fn session_reset_resends_the_tables_and_converges_to_the_same_ribs() {
    let n = 30;
    let g = random_graph(n, 21);
    let l = g.links[0];
    let (a, b) = (BASE_ASN + l.a, BASE_ASN + l.b);
    let mut s = started(
        &g,
        SimConfig::default(),
        vec![ev(1000, Action::SessionReset(a, b))],
    );
    s.run_to_end(999 * S, &mut ());
    let before: Vec<_> = (0..n).map(|x| s.best_routes(x as NodeId)).collect();
    s.run_to_end(u64::MAX, &mut ());
    let after: Vec<_> = (0..n).map(|x| s.best_routes(x as NodeId)).collect();
    assert_eq!(before, after);
    let st = &s.stats()[1];
    // Both ends re-send their whole table: at least one UPDATE each way,
    // carrying at least as many prefixes as the smaller end exports.
    assert!(st.updates >= 2, "{st:?}");
    assert!(st.prefixes >= 2, "{st:?}");
}

#[test]
fn flaps_and_the_worm_surge_multiply_updates() {
    let mut g = random_graph(60, 33);
    // 20 prefixes per AS, so that the surge's flaps hit distinct prefixes.
    for (i, n) in g.nodes.iter_mut().enumerate() {
        n.prefixes
            .extend((1..20).map(|k| format!("100.{i}.{k}.0/24").parse::<base::Prefix>().unwrap()));
    }
    let updates = |rate: f64| {
        let s = run(
            &g,
            SimConfig {
                seed: 3,
                ..SimConfig::default()
            },
            &Scenario {
                events: vec![ev(
                    1000,
                    Action::Surge {
                        duration: Duration::from_secs(60),
                        rate,
                        hold: Duration::from_secs(90),
                    },
                )],
            },
        );
        (s.stats()[1].updates, s.stats()[1].prefixes)
    };
    let (low, high) = (updates(0.2), updates(2.0));
    // MRAI packs more of the changes into each UPDATE as the rate grows,
    // so messages grow less than prefixes do.
    assert!(low.0 > 0 && high.0 > low.0, "{low:?} {high:?}");
    assert!(
        high.1 > 4 * low.1,
        "surge at 2/s: {high:?}, at 0.2/s: {low:?}"
    );

    let o = BASE_ASN + 59;
    let flaps = |count: u32| {
        let s = run(
            &g,
            SimConfig::default(),
            &Scenario {
                events: vec![ev(
                    1000,
                    Action::Flap {
                        asn: o,
                        prefix: prefix_of(59),
                        period: Duration::from_secs(100),
                        count,
                    },
                )],
            },
        );
        // The prefix is back everywhere at the end.
        assert!((0..60).all(|x| path(&s, x, 59).is_some()));
        s.stats()[1].updates
    };
    let (one, three) = (flaps(1), flaps(3));
    assert!(
        one > 0 && three >= 2 * one,
        "1 flap: {one}, 3 flaps: {three}"
    );
}

/// UPDATE receive times per (receiver, sender).
#[derive(Default)]
struct Times(HashMap<(NodeId, NodeId), Vec<u64>>);

impl Observer for Times {
    fn received(&mut self, t: u64, at: NodeId, from: NodeId, msg: &[u8]) {
        if msg[18] == 2 {
            self.0.entry((at, from)).or_default().push(t);
        }
    }
}

fn gaps(cfg: SimConfig) -> Vec<u64> {
    let n = 40;
    let g = random_graph(n, 8);
    let mut s = Sim::new(&g, cfg);
    for x in 0..n {
        s.trace(x as NodeId);
    }
    let events = (0..5)
        .map(|k| {
            ev(
                500 + 7 * k,
                Action::Flap {
                    asn: BASE_ASN + 30 + k as u32,
                    prefix: prefix_of(30 + k as usize),
                    period: Duration::from_secs(3),
                    count: 4,
                },
            )
        })
        .collect();
    s.start(&Scenario { events }).unwrap();
    let mut t = Times::default();
    s.run_to_end(u64::MAX, &mut t);
    let mut v = Vec::new();
    for times in t.0.values() {
        for w in times.windows(2) {
            if w[1] != w[0] {
                v.push(w[1] - w[0]);
            }
        }
    }
    v
}

#[test]
fn mrai_spaces_updates_on_each_session_with_jitter() {
    let g = gaps(SimConfig::default());
    assert!(g.len() > 50, "only {} gaps", g.len());
    // Every gap is at least 0.75 x 30 s (one flush per interval).
    let min = *g.iter().min().unwrap();
    assert!(min >= 22_500_000_000, "gap {min} ns");
    // Jitter: some intervals are shorter than the full 30 s.
    assert!(g.iter().any(|&x| x < 29_000_000_000));
    // Without MRAI the same flaps give gaps far below 22.5 s.
    let g0 = gaps(SimConfig {
        mrai: Duration::ZERO,
        ..SimConfig::default()
    });
    assert!(g0.iter().any(|&x| x < 5_000_000_000));
}
