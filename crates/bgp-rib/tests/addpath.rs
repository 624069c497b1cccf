//! ADD-PATH send (RFC 7911): the multi-path Adj-RIB-Out through the public
//! API. Path identifiers stay with their path, vanished paths are withdrawn
//! by identifier, identifiers are not reused before the withdrawal is
//! drained, best-N follows the decision process, the propagation rules and
//! export policy apply per path, and peers without ADD-PATH are unaffected.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix};
use bgp_rib::{
    AcceptAll, AddPathSend, AttrSet, AttrsBuilder, BestPathConfig, ExportBatch, ExportPolicy,
    ExportVerdict, PathSelection, PeerConfig, PeerId, PeerRole, Propagation, RibShard,
};
use bgp_wire::{AsPath, AttrValue, Community, Nlri, Origin, PathAttr};

// Sources: 0, 1, 2, 5 (eBGP, AS 65000 + id), 6 (iBGP). Targets: 3 with
// ADD-PATH, 4 without.
const A: PeerId = PeerId(0);
const B: PeerId = PeerId(1);
const C: PeerId = PeerId(2);
const AP: PeerId = PeerId(3);
const PLAIN: PeerId = PeerId(4);
const D: PeerId = PeerId(5);
const IBGP: PeerId = PeerId(6);
const LOCAL: Asn = Asn(64999);

fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn peer_cfg(i: u16) -> PeerConfig {
    let ebgp = PeerId(i) != IBGP;
    PeerConfig {
        asn: if ebgp {
            Asn(65000 + u32::from(i))
        } else {
            LOCAL
        },
        bgp_id: Ipv4Addr::new(10, 0, 0, i as u8 + 1),
        addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, i as u8 + 1)),
        ebgp,
        keep_pre_policy: false,
        export: PeerId(i) == AP || PeerId(i) == PLAIN,
    }
}

/// A path of `len` ASes starting with `first`, with `med`.
fn attrs(first: u32, len: usize, med: u32) -> AttrsBuilder {
    let mut asns = vec![Asn(first)];
    asns.extend((1..len).map(|k| Asn(100 + k as u32)));
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(asns))),
        PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 200))),
    ]);
    b.set_med(med);
    b.mark_clean();
    b
}

fn all_v4_v6() -> AddPathSend {
    AddPathSend {
        ipv4_unicast: true,
        ipv6_unicast: true,
        select: PathSelection::All,
    }
}

fn shard(ap: AddPathSend) -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    for i in 0..7 {
        s.add_peer(PeerId(i), peer_cfg(i));
    }
    s.set_add_path_send(AP, Some(ap)).unwrap();
    s
}

/// `peer` announces `prefix` with a path of `len` ASes (and `med`);
/// returns the prefixes whose best changed.
fn announce(s: &mut RibShard, peer: PeerId, prefix: &str, len: usize, med: u32) -> Vec<Prefix> {
    let mut ch = Vec::new();
    let a = attrs(65000 + u32::from(peer.0), len, med);
    s.apply_update(
        peer,
        &[Nlri::new(pfx(prefix))],
        Some(&a),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    ch
}

fn withdraw(s: &mut RibShard, peer: PeerId, prefix: &str) -> Vec<Prefix> {
    let mut ch = Vec::new();
    s.apply_update(
        peer,
        &[],
        None,
        &[Nlri::new(pfx(prefix))],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    ch
}

/// The first AS of a set's AS_PATH: which source a path came from.
fn origin_peer(set: &AttrSet) -> PeerId {
    match set.to_builder().get(bgp_wire::consts::attr_type::AS_PATH) {
        Some(PathAttr {
            value: AttrValue::AsPath(p),
            ..
        }) => PeerId((p.segments[0].asns[0].0 - 65000) as u16),
        _ => panic!("no AS_PATH"),
    }
}

/// Announced (prefix, id) → source peer, and withdrawn (prefix, id).
type Sent = (BTreeMap<(Prefix, u32), PeerId>, Vec<(Prefix, u32)>);

fn sent(s: &RibShard, b: &ExportBatch) -> Sent {
    assert!(b.announce.is_empty() && b.withdraw.is_empty(), "{b:?}");
    let mut m = BTreeMap::new();
    for (h, v) in &b.announce_paths {
        let from = origin_peer(s.attrs(*h).expect("live handle"));
        for &(p, id) in v {
            assert!(m.insert((p, id), from).is_none(), "duplicate {p} id {id}");
        }
    }
    (m, b.withdraw_paths.clone())
}

fn drain(s: &mut RibShard, peer: PeerId) -> Sent {
    let b = s.drain_updates(peer);
    sent(s, &b)
}

fn export(s: &mut RibShard, ch: &[Prefix]) {
    s.export_changes(ch, &mut AcceptAll);
}

#[test]
fn three_paths_change_one_withdraw_one() {
    let p = pfx("10.0.0.0/8");
    let mut s = shard(all_v4_v6());
    let mut ch = announce(&mut s, A, "10.0.0.0/8", 2, 0);
    ch.extend(announce(&mut s, B, "10.0.0.0/8", 3, 0));
    ch.extend(announce(&mut s, C, "10.0.0.0/8", 4, 0));
    export(&mut s, &ch);
    let (m, w) = drain(&mut s, AP);
    let ids: BTreeMap<PeerId, u32> = m.iter().map(|(&(_, id), &src)| (src, id)).collect();
    assert_eq!(m.len(), 3, "{m:?}");
    assert!(w.is_empty());
    assert_eq!(ids.keys().copied().collect::<Vec<_>>(), vec![A, B, C]);
    let mut v: Vec<u32> = ids.values().copied().collect();
    v.sort();
    assert_eq!(v, vec![1, 2, 3], "identifiers start at 1 and are distinct");
    assert_eq!(s.adj_out_paths(AP, &p).len(), 3);
    assert_eq!(s.peer_counts(AP).unwrap().advertised, 3);
    // The peer without ADD-PATH gets the best path only.
    let plain = s.drain_updates(PLAIN);
    assert_eq!(plain.announce.len(), 1);
    assert!(plain.announce_paths.is_empty() && plain.withdraw_paths.is_empty());
    assert_eq!(origin_peer(s.attrs(plain.announce[0].0).unwrap()), A);

    // B's path changes (still not best): re-announced under its identifier;
    // the best did not change, so the plain peer hears nothing.
    let ch = announce(&mut s, B, "10.0.0.0/8", 3, 50);
    assert!(ch.is_empty(), "best unchanged");
    assert!(s.path_changes_pending());
    export(&mut s, &ch);
    assert!(!s.path_changes_pending());
    let (m, w) = drain(&mut s, AP);
    assert_eq!(m.into_iter().collect::<Vec<_>>(), vec![((p, ids[&B]), B)]);
    assert!(w.is_empty());
    assert!(s.drain_updates(PLAIN).is_empty());

    // C withdraws: withdrawn by its identifier, nothing else moves.
    let ch = withdraw(&mut s, C, "10.0.0.0/8");
    export(&mut s, &ch);
    let (m, w) = drain(&mut s, AP);
    assert!(m.is_empty());
    assert_eq!(w, vec![(p, ids[&C])]);
    assert!(s.drain_updates(PLAIN).is_empty());
    assert_eq!(s.peer_counts(AP).unwrap().advertised, 2);
}

#[test]
fn identifier_not_reused_before_its_withdrawal_is_sent() {
    let p = pfx("10.0.0.0/8");
    let mut s = shard(all_v4_v6());
    let mut ch = announce(&mut s, A, "10.0.0.0/8", 2, 0);
    ch.extend(announce(&mut s, B, "10.0.0.0/8", 3, 0));
    export(&mut s, &ch);
    let (m, _) = drain(&mut s, AP);
    let id_b = m
        .iter()
        .find(|(_, &src)| src == B)
        .map(|(k, _)| k.1)
        .unwrap();
    // B leaves and D arrives before anything is drained: D must not take
    // B's identifier (B is still advertised until the withdrawal goes out).
    let mut ch = withdraw(&mut s, B, "10.0.0.0/8");
    ch.extend(announce(&mut s, D, "10.0.0.0/8", 4, 0));
    export(&mut s, &ch);
    let (m, w) = drain(&mut s, AP);
    assert_eq!(w, vec![(p, id_b)]);
    let (&(_, id_d), &src) = m.iter().next().unwrap();
    assert_eq!((m.len(), src), (1, D));
    assert_ne!(id_d, id_b);
    // Once drained, the identifier is free again.
    let ch = announce(&mut s, B, "10.0.0.0/8", 5, 0);
    export(&mut s, &ch);
    let (m, _) = drain(&mut s, AP);
    assert_eq!(m.into_iter().collect::<Vec<_>>(), vec![((p, id_b), B)]);
}

#[test]
fn source_peer_down_withdraws_only_its_paths() {
    let p = pfx("10.0.0.0/8");
    let q = pfx("10.1.0.0/16");
    let mut s = shard(all_v4_v6());
    let mut ch = Vec::new();
    for (peer, len) in [(A, 2), (B, 3), (C, 4)] {
        ch.extend(announce(&mut s, peer, "10.0.0.0/8", len, 0));
        ch.extend(announce(&mut s, peer, "10.1.0.0/16", 6 - len, 0));
    }
    export(&mut s, &ch);
    let (m, _) = drain(&mut s, AP);
    assert_eq!(m.len(), 6);
    let id = |pr: Prefix, src: PeerId| {
        m.iter()
            .find(|(k, &v)| k.0 == pr && v == src)
            .map(|(k, _)| k.1)
            .unwrap()
    };
    s.drain_updates(PLAIN);
    // A is best for p, C for q. A goes down: p's best changes, q's does
    // not; A's two paths are withdrawn, no other path is re-sent.
    let mut ch = Vec::new();
    s.peer_down(A, &mut ch).unwrap();
    assert_eq!(ch, vec![p]);
    export(&mut s, &ch);
    let (m2, mut w) = drain(&mut s, AP);
    w.sort();
    assert!(m2.is_empty(), "survivors keep their identifiers: {m2:?}");
    let mut want = vec![(p, id(p, A)), (q, id(q, A))];
    want.sort();
    assert_eq!(w, want);
    // The plain peer gets p's new best (B).
    let plain = s.drain_updates(PLAIN);
    assert_eq!(plain.announce.len(), 1);
    assert_eq!(plain.announce[0].1, vec![p]);
    assert_eq!(origin_peer(s.attrs(plain.announce[0].0).unwrap()), B);
    let left: Vec<u32> = s.adj_out_paths(AP, &p).iter().map(|x| x.0).collect();
    assert_eq!(left, {
        let mut v = vec![id(p, B), id(p, C)];
        v.sort();
        v
    });
}

#[test]
fn best_n_follows_the_decision_process() {
    let p = pfx("10.0.0.0/8");
    let mut s = shard(AddPathSend {
        select: PathSelection::Best(2),
        ..all_v4_v6()
    });
    let mut ch = announce(&mut s, C, "10.0.0.0/8", 4, 0);
    ch.extend(announce(&mut s, B, "10.0.0.0/8", 3, 0));
    ch.extend(announce(&mut s, A, "10.0.0.0/8", 2, 0));
    export(&mut s, &ch);
    let (m, _) = drain(&mut s, AP);
    let srcs: Vec<PeerId> = m.values().copied().collect();
    assert_eq!(m.len(), 2);
    assert!(srcs.contains(&A) && srcs.contains(&B), "{m:?}");
    let id_b = m.iter().find(|(_, &v)| v == B).map(|(k, _)| k.1).unwrap();
    // C's path becomes second best (shorter than B's): C in, B out.
    let ch = announce(&mut s, C, "10.0.0.0/8", 2, 0);
    assert!(ch.is_empty(), "A stays best (lower peer address)");
    export(&mut s, &ch);
    let (m, w) = drain(&mut s, AP);
    assert_eq!(m.values().copied().collect::<Vec<_>>(), vec![C]);
    assert_eq!(w, vec![(p, id_b)]);
    // A withdraws: B is back in the top two.
    let ch = withdraw(&mut s, A, "10.0.0.0/8");
    export(&mut s, &ch);
    let (m, w) = drain(&mut s, AP);
    assert_eq!(m.values().copied().collect::<Vec<_>>(), vec![B]);
    assert_eq!(w.len(), 1);
    let got: Vec<PeerId> = s
        .adj_out_paths(AP, &p)
        .iter()
        .map(|(_, set)| origin_peer(set))
        .collect();
    assert_eq!(got.len(), 2);
    assert!(got.contains(&B) && got.contains(&C));
}

#[test]
fn families_without_add_path_get_the_best_only() {
    let mut s = shard(AddPathSend {
        ipv6_unicast: false,
        ..all_v4_v6()
    });
    let mut ch = Vec::new();
    for (peer, len) in [(A, 2), (B, 3)] {
        ch.extend(announce(&mut s, peer, "10.0.0.0/8", len, 0));
        ch.extend(announce(&mut s, peer, "2001:db8::/32", len, 0));
    }
    export(&mut s, &ch);
    let (m, _) = drain(&mut s, AP);
    let v6: Vec<_> = m
        .iter()
        .filter(|(k, _)| k.0 == pfx("2001:db8::/32"))
        .collect();
    assert_eq!(v6.len(), 1);
    assert_eq!(*v6[0].1, A);
    assert_eq!(m.len(), 3);
}

/// Rejects routes from B, tags routes from C with a community.
struct PerPath;

impl ExportPolicy for PerPath {
    fn export(&mut self, _: PeerId, _: &Prefix, from: PeerId, set: &AttrSet) -> ExportVerdict {
        match from {
            B => ExportVerdict::Reject,
            C => {
                let mut b = set.to_builder();
                b.set(PathAttr::new(AttrValue::Communities(vec![Community(7)])));
                ExportVerdict::Replace(b)
            }
            _ => ExportVerdict::Accept,
        }
    }
}

#[test]
fn export_policy_and_split_horizon_apply_per_path() {
    let p = pfx("10.0.0.0/8");
    let mut s = shard(all_v4_v6());
    let mut ch = Vec::new();
    for (peer, len) in [(A, 2), (B, 3), (C, 4), (AP, 5)] {
        ch.extend(announce(&mut s, peer, "10.0.0.0/8", len, 0));
    }
    s.export_changes(&ch, &mut PerPath);
    let b = s.drain_updates(AP);
    let (m, _) = sent(&s, &b);
    // B rejected by policy, AP's own path not echoed back.
    assert_eq!(m.values().copied().collect::<Vec<_>>(), vec![A, C]);
    let tagged = b
        .announce_paths
        .iter()
        .filter(|(h, _)| s.attrs(*h).unwrap().find(8).is_some())
        .count();
    assert_eq!(tagged, 1, "C's path rewritten, A's untouched");
    assert_eq!(s.adj_out_paths(AP, &p).len(), 2);

    // iBGP target, plain RFC 4271 §9.2 (no reflection): the iBGP-learned
    // path is not sent even though it is the best; the eBGP ones are.
    let mut s = RibShard::new(BestPathConfig::default());
    for i in 0..7 {
        let mut c = peer_cfg(i);
        if PeerId(i) == AP {
            c.ebgp = false;
            c.asn = LOCAL;
        }
        s.add_peer(PeerId(i), c);
    }
    s.set_add_path_send(AP, Some(all_v4_v6())).unwrap();
    let mut ch = announce(&mut s, IBGP, "10.0.0.0/8", 1, 0);
    ch.extend(announce(&mut s, A, "10.0.0.0/8", 3, 0));
    export(&mut s, &ch);
    let best = s.lookup(&p).unwrap().best().unwrap().0.peer;
    assert_eq!(best, IBGP);
    let (m, _) = drain(&mut s, AP);
    assert_eq!(m.values().copied().collect::<Vec<_>>(), vec![A]);
}

#[test]
fn propagation_rules_apply_per_path() {
    // NO_EXPORT on one path: that path is not sent to the eBGP target.
    let mut s = shard(all_v4_v6());
    let mut ch = announce(&mut s, A, "10.0.0.0/8", 2, 0);
    let mut b = attrs(65001, 3, 0);
    b.set(PathAttr::new(AttrValue::Communities(vec![
        Community::NO_EXPORT,
    ])));
    s.apply_update(
        B,
        &[Nlri::new(pfx("10.0.0.0/8"))],
        Some(&b),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    let role = |i: u16| {
        Some(PeerRole {
            ebgp: PeerId(i) != IBGP,
            confed: false,
            rr_client: false,
            rs_client: false,
            role: None,
            bgp_id: Ipv4Addr::new(10, 0, 0, i as u8 + 1),
        })
    };
    let mut prop = Propagation {
        router_id: Ipv4Addr::new(10, 9, 9, 9),
        cluster_id: Ipv4Addr::new(10, 9, 9, 9),
        roles: (0..7).map(role).collect(),
        inner: AcceptAll,
    };
    s.export_changes(&ch, &mut prop);
    let (m, _) = drain(&mut s, AP);
    assert_eq!(m.values().copied().collect::<Vec<_>>(), vec![A]);
}

#[test]
fn resend_mode_switch_and_no_leaks() {
    let p = pfx("10.0.0.0/8");
    let mut s = shard(all_v4_v6());
    let mut ch = announce(&mut s, A, "10.0.0.0/8", 2, 0);
    ch.extend(announce(&mut s, B, "10.0.0.0/8", 3, 0));
    export(&mut s, &ch);
    let first = s.drain_updates(AP);
    s.drain_updates(PLAIN);
    // ROUTE-REFRESH: the same paths under the same identifiers.
    s.resend_all(AP);
    assert_eq!(s.drain_updates(AP), first);
    // Back to one path: the Adj-RIB-Out starts empty in the new mode.
    s.set_add_path_send(AP, None).unwrap();
    assert_eq!(s.add_path_send(AP), None);
    assert!(s.adj_out_paths(AP, &p).is_empty());
    s.export_full(AP, &mut AcceptAll).unwrap();
    let b = s.drain_updates(AP);
    assert_eq!(b.announce.len(), 1);
    assert!(b.announce_paths.is_empty());
    // Non-best changes are no longer tracked without ADD-PATH peers.
    let ch = announce(&mut s, B, "10.0.0.0/8", 3, 9);
    assert!(ch.is_empty() && !s.path_changes_pending());
    // Everything gone: every reference released.
    s.set_add_path_send(AP, Some(all_v4_v6())).unwrap();
    s.export_full(AP, &mut AcceptAll).unwrap();
    assert_eq!(s.adj_out_paths(AP, &p).len(), 2);
    for peer in [A, B, AP, PLAIN] {
        s.peer_down(peer, &mut Vec::new()).unwrap();
    }
    assert_eq!(s.interner().len(), 0, "a reference leaked");
}
