//! Selection options at shard level: changing them re-runs selection and
//! reports the prefixes whose best changed; `compare_router_id = false`
//! keeps the eBGP path received first (RFC 5004), where an update with new
//! attributes counts as received anew.

use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix};
use bgp_rib::{AcceptAll, AttrsBuilder, BestPathConfig, PeerConfig, PeerId, RibShard};
use bgp_wire::{AsPath, AttrValue, NextHop, Nlri, Origin, PathAttr};

fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

/// Peer `i`: AS 64500 + i, router id 10.0.0.(10 - i) (a higher peer
/// number has the lower router id), eBGP.
fn peer(i: u16) -> PeerConfig {
    PeerConfig {
        asn: Asn(64500 + u32::from(i)),
        bgp_id: Ipv4Addr::new(10, 0, 0, 10 - i as u8),
        addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, i as u8 + 1)),
        ebgp: true,
        keep_pre_policy: false,
        export: false,
    }
}

fn attrs(asn: u32, med: Option<u32>, community: u32) -> AttrsBuilder {
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![Asn(asn)]))),
        PathAttr::new(AttrValue::Communities(vec![bgp_wire::Community(community)])),
    ]);
    b.set_next_hop(NextHop::V4(Ipv4Addr::new(192, 0, 2, 9)));
    if let Some(m) = med {
        b.set_med(m);
    }
    b
}

fn announce(s: &mut RibShard, p: u16, med: Option<u32>, community: u32) -> Vec<Prefix> {
    let mut ch = Vec::new();
    let n = [Nlri::new(pfx("10.0.0.0/8"))];
    let a = attrs(64500 + u32::from(p), med, community);
    s.apply_update(PeerId(p), &n, Some(&a), &[], &mut AcceptAll, &mut ch)
        .unwrap();
    ch
}

fn best(s: &RibShard) -> PeerId {
    s.lookup(&pfx("10.0.0.0/8"))
        .and_then(|r| r.best())
        .map(|(e, _)| e.peer)
        .expect("a best path")
}

fn shard(cfg: BestPathConfig, peers: u16) -> RibShard {
    let mut s = RibShard::new(cfg);
    for i in 1..=peers {
        s.add_peer(PeerId(i), peer(i));
    }
    s
}

#[test]
fn compare_router_id_off_keeps_the_oldest_ebgp_path() {
    let older = BestPathConfig {
        compare_router_id: false,
        ..BestPathConfig::default()
    };
    // Peer 1 first, then peer 2 with the lower router id: tied up to (f).
    let mut s = shard(BestPathConfig::default(), 2);
    announce(&mut s, 1, None, 1);
    announce(&mut s, 2, None, 1);
    assert_eq!(best(&s), PeerId(2), "router id decides by default");
    let mut ch = Vec::new();
    s.set_config(older, &mut ch);
    assert_eq!(best(&s), PeerId(1), "the older path wins without router id");
    assert_eq!(ch, vec![pfx("10.0.0.0/8")], "the change is reported");
    // Peer 1 sends new attributes: it is now the newer path.
    assert_eq!(announce(&mut s, 1, None, 2), vec![pfx("10.0.0.0/8")]);
    assert_eq!(best(&s), PeerId(2));
    // Back to router ids: peer 2 (lower id) stays best, nothing changes.
    let mut ch = Vec::new();
    s.set_config(BestPathConfig::default(), &mut ch);
    assert_eq!(best(&s), PeerId(2));
    assert!(ch.is_empty());
}

#[test]
fn changing_med_options_reselects() {
    // Peer 1 (AS 64501) MED 50, peer 2 (AS 64502) MED 10, peer 3 (AS
    // 64503) no MED. Different neighbour ASes: MED is not compared and the
    // lowest router id (peer 3) wins.
    let mut s = shard(BestPathConfig::default(), 3);
    announce(&mut s, 1, Some(50), 1);
    announce(&mut s, 2, Some(10), 1);
    announce(&mut s, 3, None, 1);
    assert_eq!(best(&s), PeerId(3));
    // always_compare_med: a missing MED is 0, so peer 3 still wins, at the
    // MED step now.
    let mut ch = Vec::new();
    let always = BestPathConfig {
        always_compare_med: true,
        ..BestPathConfig::default()
    };
    s.set_config(always, &mut ch);
    assert_eq!(best(&s), PeerId(3));
    assert!(ch.is_empty());
    // ... and with a missing MED the worst, peer 2's MED 10 wins.
    let worst = BestPathConfig {
        missing_med_worst: true,
        ..always
    };
    s.set_config(worst, &mut ch);
    assert_eq!(best(&s), PeerId(2));
    assert_eq!(ch, vec![pfx("10.0.0.0/8")]);
}
