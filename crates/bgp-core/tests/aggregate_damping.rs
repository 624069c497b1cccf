//! The RIB core's aggregation and route-flap damping: what the sessions
//! are sent, with time passed in.

mod common;

use std::time::Duration;

use base::Instant;
use bgp_core::{Aggregate, Part};
use bgp_rib::{DampParams, PeerId};
use common::{prefix, Harness};

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn two_peers(words1: &[&str]) -> Harness {
    let mut h = Harness::new(Part::WHOLE);
    h.add_peer(1, words1);
    h.add_peer(2, &[]);
    h.up(at(0), 1, &[]);
    h.up(at(0), 2, &[]);
    h.core.propagate(at(0), &mut h.out);
    h.drain(&[]);
    h
}

fn to_p2(s: &str) -> Vec<&str> {
    s.lines().filter(|l| l.contains("-> p2")).collect()
}

#[test]
fn summary_only_aggregate_follows_its_contributors() {
    let mut h = two_peers(&[]);
    h.core.set_aggregates(vec![Aggregate {
        prefix: prefix("198.19.16.0/22"),
        summary_only: true,
        as_set: false,
    }]);
    let (a, b) = (prefix("198.19.16.0/24"), prefix("198.19.17.0/24"));
    h.announce(at(1), 1, &[a, b], &["path=65001,7"]);
    h.core.propagate(at(1), &mut h.out);
    let s = h.drain(&[]);
    let sent = to_p2(&s).join("\n");
    assert!(sent.contains("198.19.16.0/22"), "{s}");
    assert!(
        !sent.contains("198.19.16.0/24") && !sent.contains("198.19.17.0/24"),
        "{s}"
    );
    let (cfg, list) = h
        .core
        .aggregate_contributors(&prefix("198.19.16.0/22"))
        .unwrap();
    assert!(cfg.summary_only);
    assert_eq!(list, vec![a, b]);
    // The aggregate is in the Loc-RIB with ATOMIC_AGGREGATE + AGGREGATOR.
    let r = h.core.rib.lookup(&prefix("198.19.16.0/22")).unwrap();
    let (_, set) = r.best().unwrap();
    let b_ = set.to_builder();
    let kinds: Vec<String> = b_
        .attrs()
        .iter()
        .map(|a| format!("{:?}", a.value))
        .collect();
    assert!(kinds.iter().any(|k| k == "AtomicAggregate"), "{kinds:?}");
    assert!(
        kinds.iter().any(|k| k.starts_with("Aggregator")),
        "{kinds:?}"
    );

    h.withdraw(at(2), 1, &[a]);
    h.core.propagate(at(2), &mut h.out);
    let s = h.drain(&[]);
    assert!(
        to_p2(&s).is_empty(),
        "one contributor left, nothing changes: {s}"
    );
    h.withdraw(at(3), 1, &[b]);
    h.core.propagate(at(3), &mut h.out);
    let s = h.drain(&[]);
    assert!(
        to_p2(&s).join("\n").contains("198.19.16.0/22"),
        "withdrawn: {s}"
    );
    assert!(h.core.rib.lookup(&prefix("198.19.16.0/22")).is_none());

    // Removing the aggregates lets the contributors out again.
    h.announce(at(4), 1, &[a], &[]);
    h.core.propagate(at(4), &mut h.out);
    h.drain(&[]);
    h.core.set_aggregates(Vec::new());
    h.core.propagate(at(5), &mut h.out);
    let s = h.drain(&[]).to_string();
    let sent = to_p2(&s).join("\n");
    assert!(
        sent.contains("198.19.16.0/24") && sent.contains("198.19.16.0/22"),
        "{s}"
    );
}

#[test]
fn damping_suppresses_and_tick_releases() {
    let mut h = two_peers(&["damp"]);
    h.core.set_damping(Some(DampParams {
        half_life: Duration::from_secs(2),
        reuse: 1000,
        suppress: 2500,
        max_suppress: Duration::from_secs(8),
        ..DampParams::default()
    }));
    assert!(h.core.damping_enabled());
    let p = prefix("198.19.7.0/24");
    h.announce(at(0), 1, &[p], &[]);
    for i in 0..2 {
        h.withdraw(at(10 + 20 * i), 1, &[p]);
        h.announce(at(20 + 20 * i), 1, &[p], &[]);
    }
    h.withdraw(at(50), 1, &[p]);
    h.announce(at(60), 1, &[p], &[]);
    h.core.propagate(at(60), &mut h.out);
    h.drain(&[]);
    let f = h.core.rib.damping_state(PeerId(1), p, 0).unwrap();
    assert!(f.suppressed, "{f:?}");
    assert!(h.core.rib.lookup(&p).unwrap().best().is_none());
    let reuse = h.core.next_deadline().expect("the reuse time");
    assert_eq!(
        Some(reuse),
        f.reuse_at(h.core.rib.damping_params().unwrap())
    );
    h.core
        .tick(Instant::from_nanos(reuse.as_nanos() - 1), &mut h.out);
    h.core
        .propagate(Instant::from_nanos(reuse.as_nanos() - 1), &mut h.out);
    assert!(to_p2(&h.drain(&[])).is_empty());
    h.core.tick(reuse, &mut h.out);
    h.core.propagate(reuse, &mut h.out);
    let s = h.drain(&[]);
    assert!(
        to_p2(&s).join("\n").contains("198.19.7.0/24"),
        "released: {s}"
    );
    assert!(h.core.rib.lookup(&p).unwrap().best().is_some());
    // Off: released for good, no histories.
    h.core.set_damping(None);
    assert!(!h.core.damping_enabled());
}

/// RFC 5065 §5: an AS_SET aggregate of routes from another member AS keeps
/// the member ASes in an AS_CONFED_SET, so that they never reach a true
/// external peer (which sees the identifier and the external ASes only).
#[test]
fn confederation_members_stay_out_of_the_aggregate_as_set() {
    let mut h = Harness::new(Part::WHOLE);
    h.add_peer(1, &["as=65002", "cid=64512", "member"]);
    h.add_peer(2, &["as=65100", "cid=64512"]);
    h.up(at(0), 1, &[]);
    h.up(at(0), 2, &[]);
    h.core.propagate(at(0), &mut h.out);
    h.drain(&[]);
    h.core.set_aggregates(vec![Aggregate {
        prefix: prefix("198.19.16.0/22"),
        summary_only: true,
        as_set: true,
    }]);
    let (a, b) = (prefix("198.19.16.0/24"), prefix("198.19.17.0/24"));
    h.announce(at(1), 1, &[a], &["cpath=65002", "path=65300"]);
    h.announce(at(1), 1, &[b], &["cpath=65002,65003", "path=65301"]);
    h.core.propagate(at(1), &mut h.out);
    let s = h.drain(&[]);
    let sent = to_p2(&s).join("\n");
    assert!(
        sent.contains("198.19.16.0/22 origin IGP path [64512 65300 65301]"),
        "{s}"
    );
    let to_p1: Vec<&str> = s.lines().filter(|l| l.contains("-> p1")).collect();
    assert!(
        to_p1
            .join("\n")
            .contains("path [(65000) (65002 65003) 65300 65301]"),
        "{s}"
    );
}
