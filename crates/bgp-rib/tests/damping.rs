//! Route-flap damping in a shard (RFC 2439): a damped peer's flapping
//! route is suppressed (kept in the Adj-RIB-In, not eligible, another
//! peer's path selected), released at its reuse time, and an undamped
//! peer's flaps count for nothing.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use base::{Asn, Instant, Prefix};
use bgp_rib::{AcceptAll, AttrsBuilder, BestPathConfig, DampParams, PeerConfig, PeerId, RibShard};
use bgp_wire::{AsPath, AttrValue, Nlri, Origin, PathAttr};

fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn attrs(path: &[u32]) -> AttrsBuilder {
    AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
            path.iter().map(|&a| Asn(a)).collect(),
        ))),
        PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 1))),
    ])
}

fn params() -> DampParams {
    DampParams {
        half_life: Duration::from_secs(2),
        reuse: 1000,
        suppress: 2500,
        max_suppress: Duration::from_secs(10),
        ..DampParams::default()
    }
}

/// Peer 1 (damped) has the shorter path; peer 2 (not damped) the longer.
fn shard() -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    let mut ch = Vec::new();
    s.enable_damping(params(), &mut ch);
    for i in 1..=2u8 {
        s.add_peer(
            PeerId(u16::from(i)),
            PeerConfig {
                asn: Asn(65000 + u32::from(i)),
                bgp_id: Ipv4Addr::new(10, 0, 0, i),
                addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, i)),
                ebgp: true,
                keep_pre_policy: false,
                export: false,
            },
        );
    }
    s.set_peer_damping(PeerId(1), true, &mut ch);
    s
}

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn announce(s: &mut RibShard, now: Instant, peer: u16, path: &[u32]) -> Vec<Prefix> {
    s.damping_time(now);
    let mut ch = Vec::new();
    let n = [Nlri::new(pfx("198.18.0.0/24"))];
    s.apply_update(
        PeerId(peer),
        &n,
        Some(&attrs(path)),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    ch
}

fn withdraw(s: &mut RibShard, now: Instant, peer: u16) -> Vec<Prefix> {
    s.damping_time(now);
    let mut ch = Vec::new();
    let n = [Nlri::new(pfx("198.18.0.0/24"))];
    s.apply_update(PeerId(peer), &[], None, &n, &mut AcceptAll, &mut ch)
        .unwrap();
    ch
}

fn best_peer(s: &RibShard) -> Option<u16> {
    Some(s.lookup(&pfx("198.18.0.0/24"))?.best()?.0.peer.0)
}

#[test]
fn flapping_route_suppressed_then_released() {
    let mut s = shard();
    announce(&mut s, at(0), 2, &[65002, 1, 2]);
    announce(&mut s, at(0), 1, &[65001]);
    assert_eq!(best_peer(&s), Some(1));
    // The first announcement is no flap.
    assert!(s
        .damping_state(PeerId(1), pfx("198.18.0.0/24"), 0)
        .is_none());
    withdraw(&mut s, at(100), 1); // 1000
    announce(&mut s, at(200), 1, &[65001]); // ~2000
    assert_eq!(best_peer(&s), Some(1));
    withdraw(&mut s, at(300), 1); // ~3000: suppressed
    let f = s.damping_state(PeerId(1), pfx("198.18.0.0/24"), 0).unwrap();
    assert!(f.suppressed && f.withdrawn, "{f:?}");
    let ch = announce(&mut s, at(400), 1, &[65001]); // ~3900, still suppressed
    assert!(ch.is_empty(), "a suppressed path does not change the best");
    let r = s.lookup(&pfx("198.18.0.0/24")).unwrap();
    assert_eq!(
        r.paths.len(),
        2,
        "the suppressed path stays in the Adj-RIB-In"
    );
    assert!(r
        .paths
        .iter()
        .any(|p| p.peer == PeerId(1) && p.suppressed()));
    assert_eq!(best_peer(&s), Some(2));

    let f = s.damping_state(PeerId(1), pfx("198.18.0.0/24"), 0).unwrap();
    let reuse = f.reuse_at(&params()).unwrap();
    assert_eq!(s.damping_next_deadline(), Some(reuse));
    // ~3900 -> 1000 takes ~2 * log2(3.9) = ~3.9 s after the last flap.
    let wait = reuse.since(at(400)).as_secs_f64();
    assert!((3.5..4.5).contains(&wait), "{wait}");
    let mut ch = Vec::new();
    s.damping_due(Instant::from_nanos(reuse.as_nanos() - 1), &mut ch);
    assert!(ch.is_empty());
    assert_eq!(best_peer(&s), Some(2));
    s.damping_due(reuse, &mut ch);
    assert_eq!(ch, vec![pfx("198.18.0.0/24")]);
    assert_eq!(best_peer(&s), Some(1));
}

#[test]
fn attribute_changes_flap_and_undamped_peers_do_not() {
    let mut s = shard();
    announce(&mut s, at(0), 2, &[65002]);
    for i in 0..10 {
        announce(&mut s, at(i), 2, &[65002, i as u32 + 1]);
        withdraw(&mut s, at(i), 2);
    }
    assert!(s
        .damping_state(PeerId(2), pfx("198.18.0.0/24"), 0)
        .is_none());
    announce(&mut s, at(0), 1, &[65001, 1]);
    for i in 0..6 {
        announce(&mut s, at(10 * i), 1, &[65001, 2 + i as u32]);
    }
    // 5 changes x 500 then one more: 2500 not exceeded until the 6th.
    let f = s.damping_state(PeerId(1), pfx("198.18.0.0/24"), 0).unwrap();
    assert!(f.suppressed && !f.withdrawn, "{f:?}");
    assert_eq!(best_peer(&s), None, "peer 2 withdrew, peer 1 suppressed");
}

#[test]
fn peer_down_and_disable_release() {
    let mut s = shard();
    announce(&mut s, at(0), 2, &[65002, 1, 2]);
    announce(&mut s, at(0), 1, &[65001]);
    for i in 0..3 {
        withdraw(&mut s, at(i * 2 + 1), 1);
        announce(&mut s, at(i * 2 + 2), 1, &[65001]);
    }
    assert_eq!(best_peer(&s), Some(2));
    let mut ch = Vec::new();
    s.disable_damping(&mut ch);
    assert_eq!(ch, vec![pfx("198.18.0.0/24")]);
    assert_eq!(best_peer(&s), Some(1));
    assert!(!s.damping_enabled());
    // Off: flaps are not counted.
    withdraw(&mut s, at(100), 1);
    announce(&mut s, at(101), 1, &[65001]);
    assert!(s
        .damping_state(PeerId(1), pfx("198.18.0.0/24"), 0)
        .is_none());

    let mut s = shard();
    announce(&mut s, at(0), 1, &[65001]);
    for i in 0..3 {
        withdraw(&mut s, at(i * 2 + 1), 1);
        announce(&mut s, at(i * 2 + 2), 1, &[65001]);
    }
    assert!(s
        .damping_state(PeerId(1), pfx("198.18.0.0/24"), 0)
        .is_some());
    s.peer_down(PeerId(1), &mut ch).unwrap();
    assert!(s
        .damping_state(PeerId(1), pfx("198.18.0.0/24"), 0)
        .is_none());
    assert_eq!(s.damping_next_deadline(), None);
}
