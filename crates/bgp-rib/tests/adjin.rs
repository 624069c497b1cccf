//! The pre-policy Adj-RIB-In stored as a difference: unchanged routes share
//! their path's set, rejected or modified ones keep their own entry, and
//! `pre_policy` / `reimport` see every route either way.

use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix};
use bgp_rib::{AcceptAll, AttrsBuilder, BestPathConfig, PeerConfig, PeerId, RibShard, Verdict};
use bgp_wire::{AsPath, AttrValue, Nlri, Origin, PathAttr};

fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn nlri(s: &str) -> Nlri {
    Nlri::new(pfx(s))
}

fn attrs(med: u32) -> AttrsBuilder {
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![Asn(65001)]))),
        PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 200))),
    ]);
    b.set_med(med);
    b.mark_clean();
    b
}

fn shard(keep: bool) -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    s.add_peer(
        PeerId(0),
        PeerConfig {
            asn: Asn(65001),
            bgp_id: Ipv4Addr::new(10, 0, 0, 1),
            addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            ebgp: true,
            keep_pre_policy: keep,
            export: false,
        },
    );
    s
}

const P: PeerId = PeerId(0);

fn pre_med(s: &RibShard, p: &str) -> Option<u32> {
    s.pre_policy(P, &pfx(p), 0)?.summary().med()
}

fn post_med(s: &RibShard, p: &str) -> Option<u32> {
    s.lookup(&pfx(p))?.best()?.1.summary().med()
}

/// Accepts 10/8 as is, sets MED 99 on 11/8, rejects 12/8.
fn mixed(p: &Prefix, b: &mut AttrsBuilder) -> Verdict {
    if *p == pfx("11.0.0.0/8") {
        b.set_med(99);
    } else if *p == pfx("12.0.0.0/8") {
        return Verdict::Reject;
    }
    Verdict::Accept
}

fn load(s: &mut RibShard) {
    let mut ch = Vec::new();
    let ps = [nlri("10.0.0.0/8"), nlri("11.0.0.0/8"), nlri("12.0.0.0/8")];
    s.apply_update(P, &ps, Some(&attrs(5)), &[], &mut mixed, &mut ch)
        .unwrap();
}

#[test]
fn only_rejected_or_modified_routes_keep_an_entry() {
    let mut s = shard(true);
    load(&mut s);
    assert_eq!(s.pre_policy_kept(P), 2, "11/8 modified, 12/8 rejected");
    assert_eq!(pre_med(&s, "10.0.0.0/8"), Some(5));
    assert_eq!(pre_med(&s, "11.0.0.0/8"), Some(5));
    assert_eq!(post_med(&s, "11.0.0.0/8"), Some(99));
    assert_eq!(pre_med(&s, "12.0.0.0/8"), Some(5));
    assert!(s.lookup(&pfx("12.0.0.0/8")).is_none());
    assert_eq!(pre_med(&s, "13.0.0.0/8"), None);
    // Re-announced and now left alone by policy: the entry goes.
    let mut ch = Vec::new();
    s.apply_update(
        P,
        &[nlri("11.0.0.0/8")],
        Some(&attrs(6)),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    assert_eq!(s.pre_policy_kept(P), 1);
    assert_eq!(pre_med(&s, "11.0.0.0/8"), Some(6));
    // Withdrawn: gone from both.
    s.apply_update(P, &[], None, &[nlri("12.0.0.0/8")], &mut AcceptAll, &mut ch)
        .unwrap();
    assert_eq!(s.pre_policy_kept(P), 0);
    assert_eq!(pre_med(&s, "12.0.0.0/8"), None);
}

#[test]
fn without_the_store_nothing_is_kept() {
    let mut s = shard(false);
    load(&mut s);
    assert!(!s.pre_policy_complete(P));
    assert_eq!(s.pre_policy_kept(P), 0);
    assert_eq!(pre_med(&s, "10.0.0.0/8"), None);
    assert_eq!(pre_med(&s, "12.0.0.0/8"), None);
}

#[test]
fn reimport_sees_unchanged_modified_and_rejected_routes() {
    let mut s = shard(true);
    load(&mut s);
    // New policy: reject 10/8, set MED 7 on everything else.
    let mut next = |p: &Prefix, b: &mut AttrsBuilder| {
        if *p == pfx("10.0.0.0/8") {
            return Verdict::Reject;
        }
        b.set_med(7);
        Verdict::Accept
    };
    let mut ch = Vec::new();
    s.reimport(P, &mut next, &mut ch).unwrap();
    assert!(s.lookup(&pfx("10.0.0.0/8")).is_none());
    assert_eq!(post_med(&s, "11.0.0.0/8"), Some(7));
    assert_eq!(post_med(&s, "12.0.0.0/8"), Some(7));
    for p in ["10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8"] {
        assert_eq!(pre_med(&s, p), Some(5), "{p}");
    }
    assert_eq!(s.pre_policy_kept(P), 3);
    assert_eq!(s.peer_counts(P).unwrap().received, 3);
    // Back to accepting everything unchanged: no entries left.
    s.reimport(P, &mut AcceptAll, &mut ch).unwrap();
    assert_eq!(s.pre_policy_kept(P), 0);
    for p in ["10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8"] {
        assert_eq!(post_med(&s, p), Some(5), "{p}");
        assert_eq!(pre_med(&s, p), Some(5), "{p}");
    }
    // One set left, held by the three paths only.
    assert_eq!(s.interner().len(), 1);
    s.peer_down(P, &mut ch).unwrap();
    assert!(s.interner().is_empty(), "every reference released");
}

#[test]
fn store_switched_on_later_trusts_only_its_entries() {
    let mut s = shard(false);
    load(&mut s);
    // 11/8's path holds the post-policy set (MED 99): not pre-policy.
    let mut cfg = s.peer(P).unwrap().clone();
    cfg.keep_pre_policy = true;
    s.add_peer(P, cfg);
    assert!(!s.pre_policy_complete(P));
    assert_eq!(pre_med(&s, "11.0.0.0/8"), None);
    assert_eq!(pre_med(&s, "10.0.0.0/8"), None);
    let mut ch = Vec::new();
    s.reimport(P, &mut AcceptAll, &mut ch).unwrap();
    assert_eq!(post_med(&s, "11.0.0.0/8"), Some(99), "not re-imported");
    // After a flush the store is complete again.
    s.peer_down(P, &mut ch).unwrap();
    assert!(s.pre_policy_complete(P));
    load(&mut s);
    assert_eq!(pre_med(&s, "10.0.0.0/8"), Some(5));
    assert_eq!(pre_med(&s, "11.0.0.0/8"), Some(5));
}

#[test]
fn reimport_prefix_touches_only_that_prefix_and_every_path_id() {
    let mut s = shard(true);
    load(&mut s);
    // ADD-PATH: two more paths of 12/8 with ids 7 and 9, both rejected.
    let mut ch = Vec::new();
    let ids = [
        Nlri {
            path_id: Some(7),
            ..nlri("12.0.0.0/8")
        },
        Nlri {
            path_id: Some(9),
            ..nlri("12.0.0.0/8")
        },
    ];
    s.apply_update(P, &ids, Some(&attrs(5)), &[], &mut mixed, &mut ch)
        .unwrap();
    assert!(s.lookup(&pfx("12.0.0.0/8")).is_none());
    // A policy that now accepts everything with MED 8, applied to 12/8 only.
    let mut next = |_: &Prefix, b: &mut AttrsBuilder| {
        b.set_med(8);
        Verdict::Accept
    };
    ch.clear();
    s.reimport_prefix(P, pfx("12.0.0.0/8"), &mut next, &mut ch)
        .unwrap();
    assert_eq!(ch, vec![pfx("12.0.0.0/8")]);
    assert_eq!(s.lookup(&pfx("12.0.0.0/8")).unwrap().iter().count(), 3);
    assert_eq!(post_med(&s, "12.0.0.0/8"), Some(8));
    // The others keep what the old policy gave them.
    assert_eq!(post_med(&s, "10.0.0.0/8"), Some(5));
    assert_eq!(post_med(&s, "11.0.0.0/8"), Some(99));
    // And back: rejected again, all three paths.
    s.reimport_prefix(P, pfx("12.0.0.0/8"), &mut mixed, &mut ch)
        .unwrap();
    assert!(s.lookup(&pfx("12.0.0.0/8")).is_none());
    assert_eq!(s.peer_counts(P).unwrap().received, 5);
    // A prefix the peer never sent: nothing happens.
    ch.clear();
    s.reimport_prefix(P, pfx("13.0.0.0/8"), &mut next, &mut ch)
        .unwrap();
    assert!(ch.is_empty());
    s.peer_down(P, &mut ch).unwrap();
    assert!(s.interner().is_empty(), "every reference released");
}

#[test]
fn filtered_is_what_import_rejected_as_received() {
    let mut s = shard(true);
    load(&mut s);
    let mut got = Vec::new();
    assert!(s.for_each_filtered(P, |p, pid, set| got.push((*p, pid, set.summary().med()))));
    // 11/8 was accepted (modified): not filtered; 12/8 rejected, MED as sent.
    assert_eq!(got, vec![(pfx("12.0.0.0/8"), 0, Some(5))]);
    // Withdrawn: no longer filtered.
    let mut ch = Vec::new();
    s.apply_update(P, &[], None, &[nlri("12.0.0.0/8")], &mut mixed, &mut ch)
        .unwrap();
    let mut n = 0;
    assert!(s.for_each_filtered(P, |_, _, _| n += 1));
    assert_eq!(n, 0);
    // Without the store the answer is unknown, not empty.
    let mut s = shard(false);
    load(&mut s);
    assert!(!s.for_each_filtered(P, |_, _, _| panic!("nothing is kept")));
}
