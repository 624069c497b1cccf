//! Shard behaviour through the public API: updates, withdrawals, policy,
//! counts, peer down, export packing, and order-independence properties.

use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix};
use bgp_rib::{
    AcceptAll, AttrsBuilder, BestPathConfig, ExportPolicy, ExportVerdict, PeerConfig, PeerId, Rib,
    RibShard, Verdict,
};
use bgp_wire::consts::attr_type as at;
use bgp_wire::{AsPath, AttrValue, Community, Nlri, Origin, PathAttr};
use proptest::prelude::*;

fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn nlri(s: &str) -> Nlri {
    Nlri::new(pfx(s))
}

fn peer_cfg(i: u16, ebgp: bool) -> PeerConfig {
    PeerConfig {
        asn: Asn(65000 + u32::from(i)),
        bgp_id: Ipv4Addr::new(10, 0, 0, i as u8 + 1),
        addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, i as u8 + 1)),
        ebgp,
        keep_pre_policy: false,
        export: false,
    }
}

fn attrs(path: &[u32], med: Option<u32>) -> AttrsBuilder {
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
            path.iter().map(|&a| Asn(a)).collect(),
        ))),
        PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 200))),
    ]);
    if let Some(m) = med {
        b.set_med(m);
    }
    b.mark_clean();
    b
}

fn shard_with_peers(n: u16) -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    for i in 0..n {
        s.add_peer(PeerId(i), peer_cfg(i, true));
    }
    s
}

#[test]
fn announce_replace_withdraw_and_best_changes() {
    let mut s = shard_with_peers(2);
    let mut ch = Vec::new();
    let a = attrs(&[65000, 1, 2], None);
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8"), nlri("10.1.0.0/16")],
        Some(&a),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert_eq!(ch, vec![pfx("10.0.0.0/8"), pfx("10.1.0.0/16")]);
    assert_eq!(s.interner().len(), 1, "both prefixes share one set");
    // Peer 1 offers a shorter path for 10/8 only.
    ch.clear();
    let b = attrs(&[65001, 2], None);
    s.apply_update(
        PeerId(1),
        &[nlri("10.0.0.0/8")],
        Some(&b),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert_eq!(ch, vec![pfx("10.0.0.0/8")]);
    let r = s.lookup(&pfx("10.0.0.0/8")).unwrap();
    assert_eq!(r.paths.len(), 2);
    assert_eq!(r.best().unwrap().0.peer, PeerId(1));
    // A non-best path change does not change the best.
    ch.clear();
    let a2 = attrs(&[65000, 1, 2, 3], None);
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8")],
        Some(&a2),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert!(ch.is_empty(), "{ch:?}");
    // Duplicate announcement: no change, no leak.
    s.apply_update(
        PeerId(1),
        &[nlri("10.0.0.0/8")],
        Some(&b),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert!(ch.is_empty());
    assert_eq!(s.interner().len(), 3);
    // Withdraw the best: falls back to peer 0. Host bits are ignored.
    s.apply_update(
        PeerId(1),
        &[],
        None,
        &[nlri("10.255.0.0/8")],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert_eq!(ch, vec![pfx("10.0.0.0/8")]);
    let r = s.lookup(&pfx("10.0.0.0/8")).unwrap();
    assert_eq!(r.best().unwrap().0.peer, PeerId(0));
    assert_eq!(r.best().unwrap().1.summary().as_path_len(), 4);
    assert_eq!(s.interner().len(), 2, "peer 1's set was freed");
    assert_eq!(s.path_count(), 2);
    assert_eq!(s.prefix_count(), 2);
    // Withdraw everything: prefixes disappear and sets are freed.
    ch.clear();
    s.apply_update(
        PeerId(0),
        &[],
        None,
        &[nlri("10.0.0.0/8"), nlri("10.1.0.0/16")],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert_eq!(ch.len(), 2);
    assert_eq!(s.prefix_count(), 0);
    assert!(s.interner().is_empty());
    // Withdrawing what is not there changes nothing.
    ch.clear();
    s.apply_update(
        PeerId(0),
        &[],
        None,
        &[nlri("10.0.0.0/8")],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert!(ch.is_empty());
}

#[test]
fn errors_for_caller_mistakes() {
    let mut s = shard_with_peers(1);
    let mut ch = Vec::new();
    assert_eq!(
        s.apply_update(PeerId(7), &[], None, &[], &mut AcceptAll, &mut ch),
        Err(bgp_rib::RibError::UnknownPeer(PeerId(7)))
    );
    assert_eq!(
        s.apply_update(
            PeerId(0),
            &[nlri("10.0.0.0/8")],
            None,
            &[],
            &mut AcceptAll,
            &mut ch
        ),
        Err(bgp_rib::RibError::MissingAttributes)
    );
    let h = s.intern(&attrs(&[1], None));
    s.release(h);
    assert_eq!(
        s.apply_interned(PeerId(0), &[nlri("10.0.0.0/8")], h, &[], &mut ch),
        Err(bgp_rib::RibError::DeadHandle(h))
    );
}

#[test]
fn ebgp_local_pref_is_ignored_and_policy_can_set_it() {
    let mut s = shard_with_peers(2);
    let mut ch = Vec::new();
    // RFC 4271 §5.1.5: LOCAL_PREF from an eBGP peer is ignored.
    let mut a = attrs(&[65000, 9, 9, 9], None);
    a.set_local_pref(500);
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8")],
        Some(&a),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    let b = attrs(&[65001], None);
    s.apply_update(
        PeerId(1),
        &[nlri("10.0.0.0/8")],
        Some(&b),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    let r = s.lookup(&pfx("10.0.0.0/8")).unwrap();
    assert_eq!(r.best().unwrap().0.peer, PeerId(1));
    assert_eq!(
        r.iter()
            .find(|(p, _)| p.peer == PeerId(0))
            .unwrap()
            .1
            .summary()
            .local_pref(),
        None
    );
    // Import policy that raises LOCAL_PREF for peer 0's long path.
    let mut pol = |p: &Prefix, b: &mut AttrsBuilder| {
        if p.len() == 8 && b.get(at::AS_PATH).is_some() {
            b.set_local_pref(300);
        }
        Verdict::Accept
    };
    ch.clear();
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8")],
        Some(&a),
        &[],
        &mut pol,
        &mut ch,
    )
    .unwrap();
    assert_eq!(ch, vec![pfx("10.0.0.0/8")]);
    let (best, set) = s.lookup(&pfx("10.0.0.0/8")).unwrap().best().unwrap();
    assert_eq!(best.peer, PeerId(0));
    assert_eq!(set.summary().local_pref(), Some(300));
}

#[test]
fn rejected_routes_count_as_received_and_withdraw_accepted_ones() {
    let mut s = shard_with_peers(1);
    let mut ch = Vec::new();
    let a = attrs(&[65000], None);
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8"), nlri("192.168.0.0/16")],
        Some(&a),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    let mut no_rfc1918 = |p: &Prefix, _: &mut AttrsBuilder| {
        if p.to_string().starts_with("192.168.") {
            Verdict::Reject
        } else {
            Verdict::Accept
        }
    };
    ch.clear();
    s.apply_update(
        PeerId(0),
        &[nlri("192.168.0.0/16"), nlri("192.168.1.0/24")],
        Some(&a),
        &[],
        &mut no_rfc1918,
        &mut ch,
    )
    .unwrap();
    // The previously accepted route is implicitly withdrawn.
    assert_eq!(ch, vec![pfx("192.168.0.0/16")]);
    let c = s.peer_counts(PeerId(0)).unwrap();
    assert_eq!((c.received, c.accepted), (3, 1));
    s.apply_update(
        PeerId(0),
        &[],
        None,
        &[nlri("192.168.1.0/24")],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert_eq!(s.peer_counts(PeerId(0)).unwrap().received, 2);
}

#[test]
fn pre_policy_and_reimport() {
    let mut s = RibShard::new(BestPathConfig::default());
    let mut cfg = peer_cfg(0, true);
    cfg.keep_pre_policy = true;
    s.add_peer(PeerId(0), cfg);
    let mut ch = Vec::new();
    let a = attrs(&[65000], Some(5));
    let mut reject_all = |_: &Prefix, _: &mut AttrsBuilder| Verdict::Reject;
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8")],
        Some(&a),
        &[],
        &mut reject_all,
        &mut ch,
    )
    .unwrap();
    assert!(s.lookup(&pfx("10.0.0.0/8")).is_none());
    assert_eq!(
        s.pre_policy(PeerId(0), &pfx("10.0.0.0/8"), 0)
            .unwrap()
            .summary()
            .med(),
        Some(5)
    );
    s.reimport(PeerId(0), &mut AcceptAll, &mut ch).unwrap();
    assert_eq!(ch, vec![pfx("10.0.0.0/8")]);
    assert!(s.lookup(&pfx("10.0.0.0/8")).is_some());
    let mut ch2 = Vec::new();
    s.peer_down(PeerId(0), &mut ch2).unwrap();
    assert_eq!(ch2, vec![pfx("10.0.0.0/8")]);
    assert!(s.interner().is_empty(), "pre-policy references released");
}

#[test]
fn peer_down_removes_only_that_peer() {
    let mut s = shard_with_peers(3);
    let mut ch = Vec::new();
    for i in 0..3u16 {
        let a = attrs(&vec![65000 + u32::from(i); 3 - i as usize], None);
        let ps: Vec<Nlri> = (0..50u32)
            .map(|k| {
                Nlri::new(Prefix::V4(
                    base::Prefix4::new(k << 16 | 0x0a00_0000, 16).unwrap(),
                ))
            })
            .filter(|n| i != 2 || n.prefix.to_string() != "10.0.0.0/16")
            .collect();
        s.apply_update(PeerId(i), &ps, Some(&a), &[], &mut AcceptAll, &mut ch)
            .unwrap();
    }
    assert_eq!(s.path_count(), 149);
    ch.clear();
    s.peer_down(PeerId(2), &mut ch).unwrap();
    // Peer 2 (shortest path) was best on 49 prefixes.
    assert_eq!(ch.len(), 49);
    assert_eq!(s.path_count(), 100);
    assert_eq!(s.peer_counts(PeerId(2)).unwrap().accepted, 0);
    for r in s.iter() {
        assert_eq!(r.best().unwrap().0.peer, PeerId(1));
    }
    assert_eq!(s.interner().len(), 2);
}

#[test]
fn add_path_ids_are_separate_paths() {
    let mut s = shard_with_peers(1);
    let mut ch = Vec::new();
    let p = pfx("10.0.0.0/8");
    s.apply_update(
        PeerId(0),
        &[Nlri::with_path_id(p, 1)],
        Some(&attrs(&[65000, 5], None)),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    s.apply_update(
        PeerId(0),
        &[Nlri::with_path_id(p, 2)],
        Some(&attrs(&[65000], None)),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    let r = s.lookup(&p).unwrap();
    assert_eq!(r.paths.len(), 2);
    assert_eq!(r.best().unwrap().0.path_id, 2);
    s.apply_update(
        PeerId(0),
        &[],
        None,
        &[Nlri::with_path_id(p, 2)],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert_eq!(s.lookup(&p).unwrap().best().unwrap().0.path_id, 1);
}

struct AddCommunity;
impl ExportPolicy for AddCommunity {
    fn export(&mut self, to: PeerId, _: &Prefix, _: PeerId, a: &bgp_rib::AttrSet) -> ExportVerdict {
        if to == PeerId(3) {
            let mut b = a.to_builder();
            b.set(PathAttr::new(AttrValue::Communities(vec![Community(1)])));
            ExportVerdict::Replace(b)
        } else {
            ExportVerdict::Accept
        }
    }
}

#[test]
fn export_packs_by_attribute_set_and_sends_deltas() {
    let mut s = RibShard::new(BestPathConfig::default());
    for i in 0..4u16 {
        let mut c = peer_cfg(i, i != 1);
        c.export = i >= 2;
        s.add_peer(PeerId(i), c);
    }
    let mut ch = Vec::new();
    let a = attrs(&[65000, 1], None);
    let b = attrs(&[65000, 2], None);
    let pa: Vec<Nlri> = (0..10u32)
        .map(|k| {
            Nlri::new(Prefix::V4(
                base::Prefix4::new(0x0a00_0000 | k << 8, 24).unwrap(),
            ))
        })
        .collect();
    let pb: Vec<Nlri> = (0..5u32)
        .map(|k| {
            Nlri::new(Prefix::V4(
                base::Prefix4::new(0x0b00_0000 | k << 8, 24).unwrap(),
            ))
        })
        .collect();
    s.apply_update(PeerId(0), &pa, Some(&a), &[], &mut AcceptAll, &mut ch)
        .unwrap();
    s.apply_update(PeerId(0), &pb, Some(&b), &[], &mut AcceptAll, &mut ch)
        .unwrap();
    s.export_changes(&ch, &mut AddCommunity);
    let batch = s.drain_updates(PeerId(2));
    assert_eq!(batch.announce.len(), 2, "two attribute sets → two groups");
    let mut sizes: Vec<usize> = batch.announce.iter().map(|(_, v)| v.len()).collect();
    sizes.sort();
    assert_eq!(sizes, vec![5, 10]);
    assert!(batch.withdraw.is_empty());
    // Peer 3 gets rewritten sets, still two groups.
    let b3 = s.drain_updates(PeerId(3));
    assert_eq!(b3.announce.len(), 2);
    let (h, _) = &b3.announce[0];
    assert!(s.attrs(*h).unwrap().find(at::COMMUNITIES).is_some());
    // Nothing queued twice; peers without export get nothing.
    assert!(s.drain_updates(PeerId(2)).is_empty());
    assert!(s.drain_updates(PeerId(0)).is_empty());
    // Re-exporting unchanged prefixes queues nothing for peer 2; peer 3
    // loses its rewritten community, so all 15 are re-announced to it.
    s.export_changes(&ch, &mut AcceptAll);
    assert!(s.drain_updates(PeerId(2)).is_empty());
    let b3 = s.drain_updates(PeerId(3));
    assert_eq!(b3.announce.iter().map(|(_, v)| v.len()).sum::<usize>(), 15);
    // A withdrawal reaches the exporting peers.
    ch.clear();
    s.apply_update(PeerId(0), &[], None, &pb[..2], &mut AcceptAll, &mut ch)
        .unwrap();
    s.export_changes(&ch, &mut AcceptAll);
    let w = s.drain_updates(PeerId(2));
    assert_eq!(w.withdraw.len(), 2);
    assert!(w.announce.is_empty());
    assert_eq!(s.drain_updates(PeerId(3)).withdraw, w.withdraw);
    assert_eq!(s.peer_counts(PeerId(2)).unwrap().advertised, 13);
    // Not echoed back: peer 2 becomes best for a prefix → withdrawn to it.
    ch.clear();
    s.apply_update(
        PeerId(2),
        &pa[..1],
        Some(&attrs(&[65002], None)),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    s.export_changes(&ch, &mut AcceptAll);
    assert_eq!(s.drain_updates(PeerId(2)).withdraw, vec![pa[0].prefix]);
    assert_eq!(s.drain_updates(PeerId(3)).announce.len(), 1);
    // Full export to a fresh peer sends the whole table.
    let mut c = peer_cfg(5, true);
    c.export = true;
    s.add_peer(PeerId(5), c);
    s.export_full(PeerId(5), &mut AcceptAll).unwrap();
    let full = s.drain_updates(PeerId(5));
    let n: usize = full.announce.iter().map(|(_, v)| v.len()).sum();
    assert_eq!(n, 13);
    assert_eq!(full.announce.len(), 3);
}

#[test]
fn ibgp_routes_are_not_sent_to_ibgp_peers() {
    let mut s = RibShard::new(BestPathConfig::default());
    let mut c0 = peer_cfg(0, false);
    c0.export = true;
    let mut c1 = peer_cfg(1, false);
    c1.export = true;
    let mut c2 = peer_cfg(2, true);
    c2.export = true;
    s.add_peer(PeerId(0), c0);
    s.add_peer(PeerId(1), c1);
    s.add_peer(PeerId(2), c2);
    let mut ch = Vec::new();
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8")],
        Some(&attrs(&[], None)),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    s.export_changes(&ch, &mut AcceptAll);
    assert!(s.drain_updates(PeerId(1)).is_empty());
    assert_eq!(s.drain_updates(PeerId(2)).announce.len(), 1);
}

#[test]
fn sharded_rib_matches_one_shard() {
    let mut one = Rib::new(1, BestPathConfig::default());
    let mut four = Rib::new(4, BestPathConfig::default());
    for i in 0..3u16 {
        one.add_peer(PeerId(i), peer_cfg(i, true));
        four.add_peer(PeerId(i), peer_cfg(i, true));
    }
    let (mut c1, mut c4) = (Vec::new(), Vec::new());
    for i in 0..3u16 {
        let a = attrs(
            &[65000 + u32::from(i), u32::from(i) * 7 % 3],
            Some(u32::from(i)),
        );
        let ps: Vec<Nlri> = (0..200u32)
            .filter(|k| k % (u32::from(i) + 1) == 0)
            .map(|k| Nlri::new(Prefix::V4(base::Prefix4::new(k << 12, 20).unwrap())))
            .collect();
        one.apply_update(PeerId(i), &ps, Some(&a), &[], &mut AcceptAll, &mut c1)
            .unwrap();
        four.apply_update(PeerId(i), &ps, Some(&a), &[], &mut AcceptAll, &mut c4)
            .unwrap();
    }
    c1.sort();
    c4.sort();
    assert_eq!(c1, c4);
    assert_eq!(one.prefix_count(), 200);
    assert_eq!(four.prefix_count(), 200);
    assert!(four.shards().iter().all(|s| s.prefix_count() > 20));
    for r in one.iter() {
        let r4 = four.lookup(&r.prefix).unwrap();
        assert_eq!(r.best().unwrap().0.peer, r4.best().unwrap().0.peer);
    }
    assert_eq!(one.peer_counts(PeerId(1)), four.peer_counts(PeerId(1)));
    assert_eq!(four.peer_counts(PeerId(1)).unwrap().accepted, 100);
}

/// A path for the property tests: which peer (and path id) and the fields
/// that decide selection.
#[derive(Clone, Debug)]
struct Gen {
    peer: u16,
    path_id: u32,
    lp: Option<u32>,
    path: Vec<u32>,
    med: Option<u32>,
}

fn gen_path() -> impl Strategy<Value = Gen> {
    (
        0u16..6,
        0u32..2,
        prop::option::of(99u32..=101),
        prop::collection::vec(1u32..4, 1..4),
        prop::option::of(0u32..3),
    )
        .prop_map(|(peer, path_id, lp, path, med)| Gen {
            peer,
            path_id,
            lp,
            path,
            med,
        })
}

fn build(paths: &[Gen], order: &[usize], cfg: BestPathConfig) -> RibShard {
    let mut s = RibShard::new(cfg);
    for i in 0..6u16 {
        // A mix of eBGP and iBGP peers so LOCAL_PREF matters.
        s.add_peer(PeerId(i), peer_cfg(i, i % 2 == 0));
    }
    let mut ch = Vec::new();
    for &i in order {
        let g = &paths[i];
        let mut a = attrs(&g.path, g.med);
        if let Some(lp) = g.lp {
            a.set_local_pref(lp);
        }
        let n = Nlri::with_path_id(pfx("10.0.0.0/8"), g.path_id);
        s.apply_update(PeerId(g.peer), &[n], Some(&a), &[], &mut AcceptAll, &mut ch)
            .unwrap();
    }
    s
}

fn best_of(s: &RibShard) -> Option<(PeerId, u32)> {
    let (p, _) = s.lookup(&pfx("10.0.0.0/8"))?.best()?;
    Some((p.peer, p.path_id))
}

proptest! {
    /// With deterministic MED, the best does not depend on arrival order.
    #[test]
    fn best_is_independent_of_insertion_order(
        paths in prop::collection::vec(gen_path(), 1..10),
        seed in any::<u64>(),
    ) {
        // Later announcements of the same (peer, path id) replace earlier
        // ones; keep only the first of each so every order stores the same.
        let mut seen = std::collections::HashSet::new();
        let paths: Vec<Gen> = paths.into_iter().filter(|g| seen.insert((g.peer, g.path_id))).collect();
        let fwd: Vec<usize> = (0..paths.len()).collect();
        let mut shuffled = fwd.clone();
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let rev: Vec<usize> = fwd.iter().rev().copied().collect();
        let cfg = BestPathConfig { deterministic_med: true, ..BestPathConfig::default() };
        let a = best_of(&build(&paths, &fwd, cfg));
        prop_assert_eq!(a, best_of(&build(&paths, &rev, cfg)));
        prop_assert_eq!(a, best_of(&build(&paths, &shuffled, cfg)));
    }

    /// Withdrawing a path that is not the best never changes the best.
    /// This needs a total order, so MED is compared always: under
    /// deterministic MED, removing a group's MED winner can promote a
    /// group member that wins on a later step against the other groups.
    #[test]
    fn removing_a_non_best_path_keeps_the_best(
        paths in prop::collection::vec(gen_path(), 2..10),
        pick in any::<prop::sample::Index>(),
    ) {
        let mut seen = std::collections::HashSet::new();
        let paths: Vec<Gen> = paths.into_iter().filter(|g| seen.insert((g.peer, g.path_id))).collect();
        let order: Vec<usize> = (0..paths.len()).collect();
        let cfg = BestPathConfig { always_compare_med: true, ..BestPathConfig::default() };
        let mut s = build(&paths, &order, cfg);
        let best = best_of(&s).unwrap();
        let victim = &paths[pick.index(paths.len())];
        if (PeerId(victim.peer), victim.path_id) != best {
            let mut ch = Vec::new();
            let n = Nlri::with_path_id(pfx("10.0.0.0/8"), victim.path_id);
            s.apply_update(PeerId(victim.peer), &[], None, &[n], &mut AcceptAll, &mut ch).unwrap();
            prop_assert!(ch.is_empty());
            prop_assert_eq!(best_of(&s), Some(best));
            prop_assert_eq!(s.path_count(), paths.len() - 1);
        }
    }
}

/// Peer 3's export is "reject all" when `closed`, accept otherwise.
struct Gate {
    closed: bool,
}
impl ExportPolicy for Gate {
    fn export(&mut self, to: PeerId, _: &Prefix, _: PeerId, _: &bgp_rib::AttrSet) -> ExportVerdict {
        if to == PeerId(3) && self.closed {
            ExportVerdict::Reject
        } else {
            ExportVerdict::Accept
        }
    }
    fn rejects_all(&self, to: PeerId) -> bool {
        to == PeerId(3) && self.closed
    }
}

/// A reject-all target is skipped while its Adj-RIB-Out is empty, but a
/// target that still holds routes when its policy turns to reject-all
/// gets every withdrawal, and one that turns to accept gets the table.
#[test]
fn reject_all_targets_are_skipped_only_while_nothing_was_sent() {
    let mut s = RibShard::new(BestPathConfig::default());
    for i in 0..4u16 {
        let mut c = peer_cfg(i, true);
        c.export = i >= 2;
        s.add_peer(PeerId(i), c);
    }
    let ps: Vec<Nlri> = (0..15u32)
        .map(|k| {
            Nlri::new(Prefix::V4(
                base::Prefix4::new(0x0a00_0000 | k << 8, 24).unwrap(),
            ))
        })
        .collect();
    let mut ch = Vec::new();
    s.apply_update(
        PeerId(0),
        &ps,
        Some(&attrs(&[65000, 1], None)),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    let mut gate = Gate { closed: true };
    s.export_changes(&ch, &mut gate);
    assert_eq!(s.drain_updates(PeerId(2)).announce[0].1.len(), 15);
    assert!(s.drain_updates(PeerId(3)).is_empty(), "reject-all: nothing");
    assert_eq!(s.peer_counts(PeerId(3)).unwrap().advertised, 0);
    // Opened (a reload): the full export sends the table.
    gate.closed = false;
    s.export_full(PeerId(3), &mut gate).unwrap();
    let n: usize = s
        .drain_updates(PeerId(3))
        .announce
        .iter()
        .map(|(_, v)| v.len())
        .sum();
    assert_eq!(n, 15);
    // Closed again with routes out: changes and the full export withdraw.
    gate.closed = true;
    s.export_changes(&ch[..5], &mut gate);
    assert_eq!(s.drain_updates(PeerId(3)).withdraw.len(), 5);
    s.export_full(PeerId(3), &mut gate).unwrap();
    assert_eq!(s.drain_updates(PeerId(3)).withdraw.len(), 10);
    assert_eq!(s.peer_counts(PeerId(3)).unwrap().advertised, 0);
    // Empty again: further changes are skipped and queue nothing.
    s.export_changes(&ch, &mut gate);
    assert!(s.drain_updates(PeerId(3)).is_empty());
}

/// A best path whose attributes change only in LOCAL_PREF (an import
/// policy change, re-run over the Adj-RIB-In) encodes alike towards eBGP,
/// where LOCAL_PREF is not sent: nothing is queued for an eBGP peer, while
/// an iBGP peer, which is sent LOCAL_PREF, gets the change.
#[test]
fn local_pref_only_changes_are_not_resent_to_ebgp_peers() {
    let mut s = RibShard::new(BestPathConfig::default());
    // Peer 0: the eBGP source; 1: an eBGP target; 2: an iBGP target.
    for (i, ebgp) in [(0u16, true), (1, true), (2, false)] {
        let mut c = peer_cfg(i, ebgp);
        c.export = i > 0;
        s.add_peer(PeerId(i), c);
    }
    let a = attrs(&[65000, 7], None);
    let lp = |v: u32| {
        move |_: &Prefix, b: &mut AttrsBuilder| {
            b.set_local_pref(v);
            Verdict::Accept
        }
    };
    let mut ch = Vec::new();
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8")],
        Some(&a),
        &[],
        &mut lp(200),
        &mut ch,
    )
    .unwrap();
    s.export_changes(&ch, &mut AcceptAll);
    assert_eq!(s.drain_updates(PeerId(1)).announce.len(), 1);
    assert_eq!(s.drain_updates(PeerId(2)).announce.len(), 1);
    ch.clear();
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8")],
        Some(&a),
        &[],
        &mut lp(250),
        &mut ch,
    )
    .unwrap();
    assert_eq!(ch, vec![pfx("10.0.0.0/8")], "the best path changed");
    s.export_changes(&ch, &mut AcceptAll);
    assert!(
        s.drain_updates(PeerId(1)).is_empty(),
        "an eBGP peer was sent an UPDATE that differs only in LOCAL_PREF"
    );
    let i = s.drain_updates(PeerId(2));
    assert_eq!(i.announce.len(), 1, "the iBGP peer gets the new LOCAL_PREF");
    let (h, _) = &i.announce[0];
    assert_eq!(s.attrs(*h).unwrap().summary().local_pref(), Some(250));
    // What the eBGP peer's Adj-RIB-Out holds is the current set, so a
    // later real change is still a delta against it.
    assert_eq!(
        s.adj_out(PeerId(1), &pfx("10.0.0.0/8"))
            .and_then(|a| a.summary().local_pref()),
        Some(250)
    );
    ch.clear();
    s.apply_update(
        PeerId(0),
        &[nlri("10.0.0.0/8")],
        Some(&attrs(&[65000, 8], None)),
        &[],
        &mut lp(250),
        &mut ch,
    )
    .unwrap();
    s.export_changes(&ch, &mut AcceptAll);
    assert_eq!(s.drain_updates(PeerId(1)).announce.len(), 1);
}
