//! Views (`bgp_rib::view`): the best path among a set of source peers is
//! the Loc-RIB's decision process run on those peers' paths only.
//!
//! * With every peer in the set, a view answers the Loc-RIB best and its
//!   multipath set, for random RIBs and random selection options.
//! * With a subset, it answers what a second RIB, with the same peers
//!   registered but fed only the subset's UPDATEs in the same order,
//!   selects (same import results: no import policy here, so each stored
//!   path is the announcement).

use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix};
use bgp_rib::{
    AcceptAll, AttrsBuilder, BestPathConfig, MultipathConfig, PeerConfig, PeerId, PeerSet, Rib,
};
use bgp_wire::{AsPath, AttrValue, NextHop, Nlri, Origin, PathAttr};
use proptest::prelude::*;

const PEERS: u16 = 5;
const PREFIXES: u8 = 6;

fn prefix(i: u8) -> Prefix {
    format!("198.18.{i}.0/24").parse().expect("prefix")
}

/// One peer: its AS (a few share one, for MED and multipath), eBGP or
/// iBGP, router id.
#[derive(Clone, Debug)]
struct Peer {
    asn: u32,
    ebgp: bool,
    id: u8,
}

/// One UPDATE from `peer` for prefix `prefix`: an announcement with these
/// attributes, or a withdrawal.
#[derive(Clone, Debug)]
struct Op {
    peer: u16,
    prefix: u8,
    announce: Option<Attrs>,
}

#[derive(Clone, Debug)]
struct Attrs {
    local_pref: u32,
    path_len: u8,
    first_as: u32,
    med: Option<u32>,
    origin: u8,
    nh: u8,
}

fn peer_strategy() -> impl Strategy<Value = Peer> {
    (0u32..3, any::<bool>(), 1u8..250).prop_map(|(asn, ebgp, id)| Peer {
        asn: 65001 + asn,
        ebgp,
        id,
    })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let attrs = (
        prop_oneof![Just(100u32), Just(200)],
        1u8..4,
        0u32..3,
        proptest::option::of(0u32..3),
        0u8..2,
        1u8..4,
    )
        .prop_map(|(local_pref, path_len, first_as, med, origin, nh)| Attrs {
            local_pref,
            path_len,
            first_as,
            med,
            origin,
            nh,
        });
    (
        1..=PEERS,
        0..PREFIXES,
        proptest::option::weighted(0.8, attrs),
    )
        .prop_map(|(peer, prefix, announce)| Op {
            peer,
            prefix,
            announce,
        })
}

fn config_strategy() -> impl Strategy<Value = BestPathConfig> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        1u16..4,
        1u16..4,
        any::<bool>(),
    )
        .prop_map(|(acm, dmed, mmw, crid, ebgp, ibgp, relax)| BestPathConfig {
            always_compare_med: acm,
            deterministic_med: dmed,
            missing_med_worst: mmw,
            compare_router_id: crid,
            multipath: MultipathConfig {
                ebgp,
                ibgp,
                relax_as_path: relax,
            },
            ..BestPathConfig::default()
        })
}

fn peer_config(i: u16, p: &Peer) -> PeerConfig {
    PeerConfig {
        asn: Asn(if p.ebgp { p.asn } else { 65000 }),
        bgp_id: Ipv4Addr::new(10, 0, 0, p.id),
        addr: IpAddr::V4(Ipv4Addr::new(127, 0, 1, i as u8)),
        ebgp: p.ebgp,
        keep_pre_policy: false,
        export: false,
    }
}

fn builder(peer: u16, p: &Peer, a: &Attrs) -> AttrsBuilder {
    let asn = if p.ebgp { p.asn } else { 65000 + a.first_as };
    let mut seq = vec![Asn(asn)];
    seq.extend((1..a.path_len).map(|k| Asn(64512 + u32::from(k))));
    let origin = if a.origin == 0 {
        Origin::Igp
    } else {
        Origin::Incomplete
    };
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(origin)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(seq))),
    ]);
    b.set_next_hop(NextHop::V4(Ipv4Addr::new(127, 0, peer as u8, a.nh)));
    b.set_local_pref(a.local_pref);
    if let Some(m) = a.med {
        b.set_med(m);
    }
    b
}

fn rib(cfg: BestPathConfig, shards: usize, peers: &[Peer]) -> Rib {
    let mut r = Rib::new(shards, cfg);
    for (i, p) in peers.iter().enumerate() {
        let id = i as u16 + 1;
        r.add_peer(PeerId(id), peer_config(id, p));
    }
    r
}

fn feed(r: &mut Rib, peers: &[Peer], ops: &[Op], only: &PeerSet) {
    let mut changed = Vec::new();
    for op in ops.iter().filter(|o| only.contains(PeerId(o.peer))) {
        let n = [Nlri::new(prefix(op.prefix))];
        let p = &peers[usize::from(op.peer - 1)];
        let res = match &op.announce {
            Some(a) => {
                let b = builder(op.peer, p, a);
                r.apply_update(
                    PeerId(op.peer),
                    &n,
                    Some(&b),
                    &[],
                    &mut AcceptAll,
                    &mut changed,
                )
            }
            None => r.apply_update(PeerId(op.peer), &[], None, &n, &mut AcceptAll, &mut changed),
        };
        res.expect("update applied");
    }
}

/// A selection as (peer, next hop) pairs, the best first: comparable
/// between two RIBs (indices are not).
fn named(r: &Rib, p: &Prefix, idx: &[usize]) -> Vec<(PeerId, Option<NextHop>)> {
    let Some(route) = r.lookup(p) else {
        return Vec::new();
    };
    idx.iter()
        .map(|&i| {
            let e = route.paths[i];
            let nh = route
                .iter()
                .find(|(x, _)| x.peer == e.peer && x.path_id == e.path_id)
                .and_then(|(_, a)| a.next_hop());
            (e.peer, nh)
        })
        .collect()
}

/// The Loc-RIB's own answer: the best, then the multipath set's others.
fn loc_rib(r: &Rib, p: &Prefix) -> Vec<usize> {
    let Some(best) = r.lookup(p).and_then(|x| x.best) else {
        return Vec::new();
    };
    let mp = r.shards()[0].config().multipath.enabled();
    if mp {
        r.multipath(p)
    } else {
        vec![best]
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn view_of_every_peer_is_the_loc_rib(
        peers in proptest::collection::vec(peer_strategy(), PEERS as usize),
        ops in proptest::collection::vec(op_strategy(), 0..40),
        cfg in config_strategy(),
        shards in 1usize..3,
    ) {
        let all: PeerSet = (1..=PEERS).map(PeerId).collect();
        let mut r = rib(cfg, shards, &peers);
        feed(&mut r, &peers, &ops, &all);
        for i in 0..PREFIXES {
            let p = prefix(i);
            let mut got = Vec::new();
            r.best_among(&p, &all, &mut got);
            prop_assert_eq!(&got, &loc_rib(&r, &p), "prefix {}", p);
        }
    }

    #[test]
    fn view_of_a_subset_is_a_rib_fed_only_that_subset(
        peers in proptest::collection::vec(peer_strategy(), PEERS as usize),
        ops in proptest::collection::vec(op_strategy(), 0..40),
        cfg in config_strategy(),
        subset in proptest::collection::vec(any::<bool>(), PEERS as usize),
        shards in 1usize..3,
    ) {
        let all: PeerSet = (1..=PEERS).map(PeerId).collect();
        let set: PeerSet = (1..=PEERS)
            .filter(|i| subset[usize::from(i - 1)])
            .map(PeerId)
            .collect();
        let mut full = rib(cfg, shards, &peers);
        feed(&mut full, &peers, &ops, &all);
        let mut only = rib(cfg, shards, &peers);
        feed(&mut only, &peers, &ops, &set);
        for i in 0..PREFIXES {
            let p = prefix(i);
            let mut got = Vec::new();
            full.best_among(&p, &set, &mut got);
            prop_assert_eq!(
                named(&full, &p, &got),
                named(&only, &p, &loc_rib(&only, &p)),
                "prefix {}", p
            );
        }
    }
}

/// The empty set selects nothing; a set naming a peer with no path for
/// the prefix adds nothing.
#[test]
fn empty_and_absent_sets_select_nothing() {
    let peers = vec![
        Peer {
            asn: 65001,
            ebgp: true,
            id: 1,
        };
        PEERS as usize
    ];
    let mut r = rib(BestPathConfig::default(), 1, &peers);
    let a = Attrs {
        local_pref: 100,
        path_len: 1,
        first_as: 0,
        med: None,
        origin: 0,
        nh: 1,
    };
    let ops = [Op {
        peer: 1,
        prefix: 0,
        announce: Some(a),
    }];
    feed(&mut r, &peers, &ops, &(1..=PEERS).map(PeerId).collect());
    let mut out = Vec::new();
    r.best_among(&prefix(0), &PeerSet::new(), &mut out);
    assert!(out.is_empty());
    r.best_among(
        &prefix(0),
        &[PeerId(2), PeerId(3)].into_iter().collect(),
        &mut out,
    );
    assert!(out.is_empty());
    r.best_among(&prefix(0), &[PeerId(1)].into_iter().collect(), &mut out);
    assert_eq!(out, vec![0]);
    assert!(PeerSet::new().is_empty());
}
