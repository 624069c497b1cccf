//! Next-hop tracking in a shard: unresolved and unreachable next hops make
//! paths ineligible (RFC 4271 §9.1.2.1), the tracked cost decides step
//! §9.1.2.2 e, and a next-hop change reselects only the prefixes through
//! it.

use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix};
use bgp_rib::{
    AcceptAll, AttrsBuilder, BestPathConfig, NexthopWatch, NhState, PeerConfig, PeerId, RibShard,
};
use bgp_wire::{AsPath, AttrValue, Nlri, Origin, PathAttr};

fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn attrs(nh: &str) -> AttrsBuilder {
    let IpAddr::V4(a) = ip(nh) else { panic!() };
    AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![Asn(65001)]))),
        PathAttr::new(AttrValue::NextHop(a)),
    ])
}

/// Two iBGP peers; peer 1 has the lower router id (wins the tie after
/// step e).
fn shard(track: bool) -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    if track {
        s.enable_nexthop_tracking();
    }
    for i in 1..=2u8 {
        s.add_peer(
            PeerId(u16::from(i)),
            PeerConfig {
                asn: Asn(65000),
                bgp_id: Ipv4Addr::new(10, 0, 0, i),
                addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, i)),
                ebgp: false,
                keep_pre_policy: false,
                export: false,
            },
        );
    }
    s
}

fn announce(s: &mut RibShard, peer: u16, prefixes: &[&str], nh: &str) -> Vec<Prefix> {
    let n: Vec<Nlri> = prefixes.iter().map(|p| Nlri::new(pfx(p))).collect();
    let mut ch = Vec::new();
    s.apply_update(
        PeerId(peer),
        &n,
        Some(&attrs(nh)),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    ch
}

fn best_peer(s: &RibShard, p: &str) -> Option<u16> {
    Some(s.lookup(&pfx(p))?.best()?.0.peer.0)
}

fn watch(s: &mut RibShard) -> Vec<NexthopWatch> {
    let mut w = Vec::new();
    s.drain_nexthop_watch(&mut w);
    w
}

fn up(cost: u32) -> NhState {
    NhState {
        reachable: true,
        igp_cost: cost,
    }
}

const DOWN: NhState = NhState {
    reachable: false,
    igp_cost: 0,
};

#[test]
fn unresolved_next_hop_is_not_eligible_until_reported_reachable() {
    let mut s = shard(true);
    announce(&mut s, 1, &["10.0.0.0/8", "11.0.0.0/8"], "198.18.1.1");
    assert_eq!(best_peer(&s, "10.0.0.0/8"), None);
    assert_eq!(
        watch(&mut s),
        vec![NexthopWatch {
            nexthop: ip("198.18.1.1"),
            track: true
        }]
    );
    let mut ch = Vec::new();
    s.nexthop_update(ip("198.18.1.1"), up(5), &mut ch);
    ch.sort();
    assert_eq!(ch, vec![pfx("10.0.0.0/8"), pfx("11.0.0.0/8")]);
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(1));
    // The same state again changes nothing.
    let mut ch = Vec::new();
    s.nexthop_update(ip("198.18.1.1"), up(5), &mut ch);
    assert!(ch.is_empty());
    // Unreachable: no best any more.
    s.nexthop_update(ip("198.18.1.1"), DOWN, &mut ch);
    assert_eq!(ch.len(), 2);
    assert_eq!(best_peer(&s, "11.0.0.0/8"), None);
    // The last path through it gone: stop tracking.
    let mut ch = Vec::new();
    let w: Vec<Nlri> = ["10.0.0.0/8", "11.0.0.0/8"]
        .iter()
        .map(|p| Nlri::new(pfx(p)))
        .collect();
    s.apply_update(PeerId(1), &[], None, &w, &mut AcceptAll, &mut ch)
        .unwrap();
    assert_eq!(
        watch(&mut s),
        vec![NexthopWatch {
            nexthop: ip("198.18.1.1"),
            track: false
        }]
    );
    assert_eq!(s.nexthops().count(), 0);
}

#[test]
fn igp_cost_decides_and_a_change_flips_the_best_path() {
    let mut s = shard(true);
    announce(&mut s, 1, &["10.0.0.0/8"], "198.18.1.1");
    announce(&mut s, 2, &["10.0.0.0/8", "12.0.0.0/8"], "198.18.2.1");
    let mut ch = Vec::new();
    s.nexthop_update(ip("198.18.1.1"), up(20), &mut ch);
    s.nexthop_update(ip("198.18.2.1"), up(10), &mut ch);
    // Peer 2 is cheaper although peer 1 has the lower router id.
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(2));
    let mut ch = Vec::new();
    s.nexthop_update(ip("198.18.2.1"), up(30), &mut ch);
    ch.sort();
    // Only the prefixes through that next hop were looked at; 12/8 has no
    // other path, so only 10/8 changed.
    assert_eq!(ch, vec![pfx("10.0.0.0/8")]);
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(1));
    // Next hop 1 unreachable: peer 2 again, even at the higher cost.
    let mut ch = Vec::new();
    s.nexthop_update(ip("198.18.1.1"), DOWN, &mut ch);
    assert_eq!(ch, vec![pfx("10.0.0.0/8")]);
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(2));
    // Peer 2 down: its next hop is untracked, 10/8 falls back to nothing
    // (peer 1's path is there but unreachable).
    let mut ch = Vec::new();
    s.peer_down(PeerId(2), &mut ch).unwrap();
    assert_eq!(best_peer(&s, "10.0.0.0/8"), None);
    let w = watch(&mut s);
    assert!(w.contains(&NexthopWatch {
        nexthop: ip("198.18.2.1"),
        track: false
    }));
    let info: Vec<_> = s.nexthops().collect();
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].nexthop, ip("198.18.1.1"));
    assert_eq!(info[0].prefixes, 1);
    assert_eq!(info[0].state, Some(DOWN));
}

#[test]
fn replacing_a_path_moves_it_between_next_hops() {
    let mut s = shard(true);
    announce(&mut s, 1, &["10.0.0.0/8"], "198.18.1.1");
    let mut ch = Vec::new();
    s.nexthop_update(ip("198.18.1.1"), up(1), &mut ch);
    watch(&mut s);
    announce(&mut s, 1, &["10.0.0.0/8"], "198.18.3.1");
    assert_eq!(
        watch(&mut s),
        vec![
            NexthopWatch {
                nexthop: ip("198.18.1.1"),
                track: false
            },
            NexthopWatch {
                nexthop: ip("198.18.3.1"),
                track: true
            }
        ]
    );
    assert_eq!(best_peer(&s, "10.0.0.0/8"), None);
    s.nexthop_update(ip("198.18.3.1"), up(1), &mut ch);
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(1));
}

#[test]
fn without_tracking_every_next_hop_is_reachable() {
    let mut s = shard(false);
    announce(&mut s, 2, &["10.0.0.0/8"], "198.18.2.1");
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(2));
    announce(&mut s, 1, &["10.0.0.0/8"], "198.18.1.1");
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(1));
    assert!(watch(&mut s).is_empty());
    let mut ch = Vec::new();
    s.nexthop_update(ip("198.18.1.1"), DOWN, &mut ch);
    assert!(ch.is_empty());
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(1));
}

#[test]
fn graceful_restart_sweep_keeps_the_index_exact() {
    let mut s = shard(true);
    announce(&mut s, 1, &["10.0.0.0/8", "11.0.0.0/8"], "198.18.1.1");
    announce(&mut s, 2, &["10.0.0.0/8"], "198.18.1.1");
    let mut ch = Vec::new();
    s.nexthop_update(ip("198.18.1.1"), up(1), &mut ch);
    watch(&mut s);
    let count = |s: &RibShard| {
        s.nexthops()
            .map(|n| (n.nexthop, n.prefixes))
            .collect::<Vec<_>>()
    };
    assert_eq!(count(&s), vec![(ip("198.18.1.1"), 2)]);
    // Peer 1 restarts: its paths are kept stale, it re-announces 10/8 only
    // (through another next hop) and the sweep removes 11/8.
    s.mark_stale(PeerId(1)).unwrap();
    announce(&mut s, 1, &["10.0.0.0/8"], "198.18.3.1");
    let mut ch = Vec::new();
    s.sweep_stale(PeerId(1), &mut ch).unwrap();
    assert_eq!(best_peer(&s, "11.0.0.0/8"), None);
    let mut c = count(&s);
    c.sort();
    // 198.18.1.1: peer 2's 10/8 only; 198.18.3.1: peer 1's 10/8.
    assert_eq!(c, vec![(ip("198.18.1.1"), 1), (ip("198.18.3.1"), 1)]);
    assert_eq!(
        watch(&mut s),
        vec![NexthopWatch {
            nexthop: ip("198.18.3.1"),
            track: true
        }]
    );
    // Everything gone: nothing tracked, every next hop released.
    s.peer_down(PeerId(1), &mut ch).unwrap();
    s.peer_down(PeerId(2), &mut ch).unwrap();
    assert_eq!(s.nexthops().count(), 0);
    let mut w = watch(&mut s);
    w.sort_by_key(|w| w.nexthop);
    assert_eq!(
        w,
        vec![
            NexthopWatch {
                nexthop: ip("198.18.1.1"),
                track: false
            },
            NexthopWatch {
                nexthop: ip("198.18.3.1"),
                track: false
            }
        ]
    );
}
