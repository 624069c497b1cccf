//! Graceful restart helper (RFC 4724 §4.2): stale marking, clearing by
//! re-announcement, sweeping; and ROUTE-REFRESH re-sending.

use std::net::{IpAddr, Ipv4Addr};

use base::{Afi, Asn, Prefix};
use bgp_rib::{
    AcceptAll, AttrsBuilder, BestPathConfig, PathEntry, PeerConfig, PeerId, Rib, RibError, RibShard,
};
use bgp_wire::{AsPath, AttrValue, Community, NextHop, Nlri, Origin, PathAttr};

fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn cfg(i: u16, export: bool) -> PeerConfig {
    PeerConfig {
        asn: Asn(64500 + u32::from(i)),
        bgp_id: Ipv4Addr::new(10, 0, 0, i as u8 + 1),
        addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, i as u8 + 1)),
        ebgp: true,
        keep_pre_policy: true,
        export,
    }
}

fn attrs(path: &[u32]) -> AttrsBuilder {
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
            path.iter().map(|&a| Asn(a)).collect(),
        ))),
    ]);
    b.set_next_hop(NextHop::V4(Ipv4Addr::new(192, 0, 2, 9)));
    b
}

fn announce(s: &mut RibShard, peer: u16, prefixes: &[&str], path: &[u32], ch: &mut Vec<Prefix>) {
    let n: Vec<Nlri> = prefixes.iter().map(|p| Nlri::new(pfx(p))).collect();
    s.apply_update(
        PeerId(peer),
        &n,
        Some(&attrs(path)),
        &[],
        &mut AcceptAll,
        ch,
    )
    .unwrap();
}

fn best_peer(s: &RibShard, p: &str) -> Option<PeerId> {
    s.lookup(&pfx(p))?.best().map(|(e, _)| e.peer)
}

/// Peer 0 (restarting) has the best paths; peer 1 a longer one for 10/8.
fn setup() -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    s.add_peer(PeerId(0), cfg(0, true));
    s.add_peer(PeerId(1), cfg(1, true));
    let mut ch = Vec::new();
    announce(
        &mut s,
        0,
        &["10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8", "2001:db8::/32"],
        &[64500],
        &mut ch,
    );
    announce(&mut s, 1, &["10.0.0.0/8"], &[64501, 1, 2], &mut ch);
    s.export_changes(&ch, &mut AcceptAll);
    s
}

#[test]
fn path_entry_stays_twelve_bytes() {
    assert_eq!(std::mem::size_of::<PathEntry>(), 12);
}

#[test]
fn stale_routes_are_kept_and_still_selected() {
    let mut s = setup();
    // Peer 0 has the best path everywhere: nothing goes back to it.
    assert_eq!(s.peer_counts(PeerId(1)).unwrap().advertised, 4);
    assert!(s.drain_updates(PeerId(0)).is_empty());
    let mut ch = Vec::new();
    announce(&mut s, 1, &["13.0.0.0/8"], &[64501], &mut ch);
    s.export_changes(&ch, &mut AcceptAll);
    assert_eq!(s.peer_counts(PeerId(0)).unwrap().advertised, 1);
    assert!(s.pre_policy(PeerId(0), &pfx("10.0.0.0/8"), 0).is_some());
    assert_eq!(s.mark_stale(PeerId(0)), Ok(4));
    assert_eq!(s.stale_count(PeerId(0)), 4);
    assert_eq!(s.stale_count(PeerId(1)), 0);
    assert_eq!(s.path_count(), 6);
    // Still the best: stale paths stay usable (RFC 4724 §4.2).
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(PeerId(0)));
    let r = s.lookup(&pfx("10.0.0.0/8")).unwrap();
    assert!(r.best().unwrap().0.stale());
    // The session is gone: its Adj-RIB-Out and pre-policy routes too.
    let c = s.peer_counts(PeerId(0)).unwrap();
    assert_eq!(c.advertised, 0);
    assert_eq!(c.accepted, 4);
    assert!(s.pre_policy(PeerId(0), &pfx("10.0.0.0/8"), 0).is_none());
    assert_eq!(
        s.mark_stale(PeerId(9)),
        Err(RibError::UnknownPeer(PeerId(9)))
    );
}

#[test]
fn reannounced_routes_survive_the_sweep() {
    let mut s = setup();
    s.mark_stale(PeerId(0)).unwrap();
    let mut ch = Vec::new();
    // Same attributes for 11/8 (duplicate path in the table), new ones
    // for 12/8; 10/8 and the IPv6 route are not re-announced.
    announce(&mut s, 0, &["11.0.0.0/8"], &[64500], &mut ch);
    assert!(ch.is_empty(), "clearing the flag is not a best change");
    announce(&mut s, 0, &["12.0.0.0/8"], &[64500, 7], &mut ch);
    assert_eq!(ch, vec![pfx("12.0.0.0/8")]);
    assert_eq!(s.stale_count(PeerId(0)), 2);
    ch.clear();
    assert_eq!(s.sweep_stale(PeerId(0), &mut ch), Ok(2));
    ch.sort();
    assert_eq!(ch, vec![pfx("10.0.0.0/8"), pfx("2001:db8::/32")]);
    // 10/8 falls back to peer 1; the IPv6 route is gone.
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(PeerId(1)));
    assert!(s.lookup(&pfx("2001:db8::/32")).is_none());
    assert_eq!(best_peer(&s, "11.0.0.0/8"), Some(PeerId(0)));
    assert_eq!(s.stale_count(PeerId(0)), 0);
    assert_eq!(s.path_count(), 3);
    assert_eq!(s.peer_counts(PeerId(0)).unwrap().accepted, 2);
    // Peer 1 is told about both changes.
    s.export_changes(&ch, &mut AcceptAll);
    let b = s.drain_updates(PeerId(1));
    assert_eq!(b.withdraw.len(), 2, "{b:?}");
    // A second sweep finds nothing.
    ch.clear();
    assert_eq!(s.sweep_stale(PeerId(0), &mut ch), Ok(0));
    assert!(ch.is_empty());
}

#[test]
fn end_of_rib_sweeps_one_family() {
    let mut s = setup();
    s.mark_stale(PeerId(0)).unwrap();
    let mut ch = Vec::new();
    assert_eq!(s.sweep_stale_afi(PeerId(0), Afi::Ipv6, &mut ch), Ok(1));
    assert_eq!(ch, vec![pfx("2001:db8::/32")]);
    assert_eq!(s.stale_count(PeerId(0)), 3);
    // Through the sharded RIB.
    let mut rib = Rib::new(3, BestPathConfig::default());
    rib.add_peer(PeerId(0), cfg(0, false));
    let n: Vec<Nlri> = (0..50u32)
        .map(|i| Nlri::new(Prefix::V4(base::Prefix4::new(i << 24, 8).unwrap())))
        .collect();
    rib.apply_update(
        PeerId(0),
        &n,
        Some(&attrs(&[1])),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert_eq!(rib.mark_stale(PeerId(0)), Ok(50));
    assert_eq!(rib.stale_count(PeerId(0)), 50);
    rib.apply_update(
        PeerId(0),
        &n[..10],
        Some(&attrs(&[1])),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    ch.clear();
    assert_eq!(rib.sweep_stale_afi(PeerId(0), Afi::Ipv6, &mut ch), Ok(0));
    assert_eq!(rib.sweep_stale(PeerId(0), &mut ch), Ok(40));
    assert_eq!(ch.len(), 40);
    assert_eq!(rib.path_count(), 10);
}

#[test]
fn families_not_in_the_capability_are_flushed_at_once() {
    // Peer 0 listed only IPv4 in its graceful restart capability: its IPv6
    // route goes now, the IPv4 ones stay stale (RFC 4724 §4.2).
    let mut s = setup();
    let mut ch = Vec::new();
    assert_eq!(
        s.mark_stale_families(PeerId(0), &[Afi::Ipv4], &mut ch),
        Ok(3)
    );
    assert_eq!(ch, vec![pfx("2001:db8::/32")]);
    assert!(s.lookup(&pfx("2001:db8::/32")).is_none());
    assert_eq!(s.stale_count(PeerId(0)), 3);
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(PeerId(0)));
    assert_eq!(s.peer_counts(PeerId(0)).unwrap().accepted, 3);
    // Nothing listed: everything goes, 10/8 falls back to peer 1.
    let mut s = setup();
    ch.clear();
    assert_eq!(s.mark_stale_families(PeerId(0), &[], &mut ch), Ok(0));
    ch.sort();
    assert_eq!(ch.len(), 4, "{ch:?}");
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(PeerId(1)));
    assert_eq!(s.path_count(), 1);
    // Through the sharded RIB, both families kept.
    let mut rib = Rib::new(2, BestPathConfig::default());
    rib.add_peer(PeerId(0), cfg(0, false));
    let n: Vec<Nlri> = ["10.0.0.0/8", "2001:db8::/32"]
        .iter()
        .map(|p| Nlri::new(pfx(p)))
        .collect();
    rib.apply_update(
        PeerId(0),
        &n,
        Some(&attrs(&[1])),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    ch.clear();
    let both = [Afi::Ipv4, Afi::Ipv6];
    assert_eq!(rib.mark_stale_families(PeerId(0), &both, &mut ch), Ok(2));
    assert!(ch.is_empty());
    assert_eq!(
        rib.mark_stale_families(PeerId(9), &both, &mut ch),
        Err(RibError::UnknownPeer(PeerId(9)))
    );
}

fn communities_of(s: &RibShard, p: &str, peer: u16) -> Vec<Community> {
    let r = s.lookup(&pfx(p)).unwrap();
    let (_, set) = r.iter().find(|(e, _)| e.peer == PeerId(peer)).unwrap();
    let b = set.to_builder();
    match b
        .get(bgp_wire::consts::attr_type::COMMUNITIES)
        .map(|a| &a.value)
    {
        Some(AttrValue::Communities(c)) => c.clone(),
        _ => Vec::new(),
    }
}

#[test]
fn long_lived_stale_paths_get_llgr_stale_and_lose_selection() {
    let mut s = setup();
    let mut ch = Vec::new();
    // 11/8 again from peer 0, now with NO_LLGR (RFC 9494).
    let mut b = attrs(&[64500]);
    b.set(PathAttr::new(AttrValue::Communities(vec![
        Community(65000 << 16 | 1),
        Community::NO_LLGR,
    ])));
    let n = [Nlri::new(pfx("11.0.0.0/8"))];
    s.apply_update(PeerId(0), &n, Some(&b), &[], &mut AcceptAll, &mut ch)
        .unwrap();
    s.mark_stale(PeerId(0)).unwrap();
    ch.clear();
    assert_eq!(s.enter_llgr(PeerId(0), Afi::Ipv4, &mut ch), Ok((2, 1)));
    ch.sort();
    // 10/8: peer 1's longer path now wins; 11/8 is gone; 12/8 keeps its
    // only (stale) path, whose attributes changed.
    assert_eq!(
        ch,
        vec![pfx("10.0.0.0/8"), pfx("11.0.0.0/8"), pfx("12.0.0.0/8")]
    );
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(PeerId(1)));
    assert!(s.lookup(&pfx("11.0.0.0/8")).is_none());
    assert_eq!(best_peer(&s, "12.0.0.0/8"), Some(PeerId(0)));
    assert_eq!(
        communities_of(&s, "12.0.0.0/8", 0),
        vec![Community::LLGR_STALE]
    );
    let r = s.lookup(&pfx("12.0.0.0/8")).unwrap();
    assert!(r.best().unwrap().1.summary().llgr_stale());
    assert_eq!(communities_of(&s, "10.0.0.0/8", 1), vec![]);
    // IPv6 was not touched; the IPv4 paths are still stale (End-of-RIB
    // or the long-lived timer sweeps them).
    assert_eq!(s.stale_count(PeerId(0)), 3);
    assert!(communities_of(&s, "2001:db8::/32", 0).is_empty());
    assert_eq!(s.path_count(), 4);
    assert_eq!(s.peer_counts(PeerId(0)).unwrap().accepted, 3);
    // A second pass changes nothing but keeps one LLGR_STALE.
    ch.clear();
    assert_eq!(s.enter_llgr(PeerId(0), Afi::Ipv4, &mut ch), Ok((2, 0)));
    assert_eq!(
        communities_of(&s, "12.0.0.0/8", 0),
        vec![Community::LLGR_STALE]
    );
    // Re-announced without the community: fresh and preferred again.
    ch.clear();
    announce(&mut s, 0, &["10.0.0.0/8"], &[64500], &mut ch);
    assert_eq!(best_peer(&s, "10.0.0.0/8"), Some(PeerId(0)));
    // A route received with LLGR_STALE is least preferred too.
    let mut b = attrs(&[64501]);
    b.set(PathAttr::new(AttrValue::Communities(vec![
        Community::LLGR_STALE,
    ])));
    let n = [Nlri::new(pfx("13.0.0.0/8"))];
    s.apply_update(PeerId(1), &n, Some(&b), &[], &mut AcceptAll, &mut ch)
        .unwrap();
    announce(&mut s, 0, &["13.0.0.0/8"], &[64500, 1, 2, 3], &mut ch);
    assert_eq!(best_peer(&s, "13.0.0.0/8"), Some(PeerId(0)));
    assert_eq!(
        s.enter_llgr(PeerId(9), Afi::Ipv4, &mut ch),
        Err(RibError::UnknownPeer(PeerId(9)))
    );
}

#[test]
fn resend_all_queues_the_adj_rib_out_again() {
    let mut s = setup();
    let first = s.drain_updates(PeerId(1));
    assert_eq!(
        first.announce.iter().map(|(_, v)| v.len()).sum::<usize>(),
        4
    );
    assert!(s.drain_updates(PeerId(1)).is_empty());
    s.resend_all(PeerId(1));
    s.export_full(PeerId(1), &mut AcceptAll).unwrap();
    assert_eq!(s.drain_updates(PeerId(1)), first);
}
