//! The route counts the RIB keeps as routes change (`counted.rs`: paths
//! and prefixes per family, per peer its paths and the prefixes it holds
//! the best path of) against a fresh walk of the table, the way
//! `show route count` and `show protocols` computed them before (issue
//! 17): after every step of random sequences of announcements,
//! withdrawals (ADD-PATH path ids included), import policy rejecting and
//! rewriting routes and its re-evaluation (a policy reload), peer resets,
//! graceful restart (stale marking per session and per family, sweeps,
//! LLGR), enhanced route refresh, route-flap damping, next-hop tracking
//! and selection option changes, over a RIB of two shards.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use base::{Afi, Asn, Instant, Prefix};
use bgp_rib::{
    AttrsBuilder, BestPathConfig, DampParams, NhState, PeerConfig, PeerId, Rib, RibShard, Verdict,
};
use bgp_wire::{AsPath, AttrValue, Community, NextHop, Nlri, Origin, PathAttr};
use proptest::prelude::*;

/// Peer 0 stands for the static pseudo-peer of the daemon (it is only a
/// peer id to the RIB).
const PEERS: u16 = 5;
const PREFIXES: [&str; 6] = [
    "10.0.0.0/8",
    "10.1.0.0/16",
    "192.0.2.0/24",
    "198.51.100.0/24",
    "2001:db8::/32",
    "2001:db8:1::/48",
];
/// Next hops the routes use, per family; their reachability changes.
const NEXT_HOPS: usize = 2;

#[derive(Clone, Debug)]
struct A {
    lp: Option<u32>,
    neighbor: u32,
    len: usize,
    med: Option<u32>,
    nh: usize,
    no_llgr: bool,
}

fn arb_attrs() -> impl Strategy<Value = A> {
    (
        prop::option::of(prop::sample::select(vec![100u32, 200])),
        1u32..4,
        1usize..4,
        prop::option::of(prop::sample::select(vec![0u32, 10])),
        0..NEXT_HOPS,
        prop::bool::weighted(0.2),
    )
        .prop_map(|(lp, neighbor, len, med, nh, no_llgr)| A {
            lp,
            neighbor,
            len,
            med,
            nh,
            no_llgr,
        })
}

fn is_v4(p: &Prefix) -> bool {
    matches!(p, Prefix::V4(_))
}

fn nh_v4(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(192, 0, 2, 100 + i as u8)
}

fn nh_v6(i: usize) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0, 1 + i as u16)
}

fn builder(a: &A, v6: bool) -> AttrsBuilder {
    let mut path = vec![Asn(64500 + a.neighbor)];
    path.extend((1..a.len).map(|i| Asn(65000 + i as u32)));
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(path))),
    ]);
    b.set_next_hop(if v6 {
        NextHop::V6(nh_v6(a.nh))
    } else {
        NextHop::V4(nh_v4(a.nh))
    });
    if let Some(v) = a.lp {
        b.set_local_pref(v);
    }
    if let Some(v) = a.med {
        b.set_med(v);
    }
    if a.no_llgr {
        b.set(PathAttr::new(AttrValue::Communities(vec![
            Community::NO_LLGR,
        ])));
    }
    b
}

/// Import policies: 0 accepts everything unchanged, 1 rejects every
/// third prefix of the pool, 2 rewrites LOCAL_PREF of the IPv4 routes
/// (a new set per route) and rejects `192.0.2.0/24`.
fn policy(kind: u8) -> impl FnMut(&Prefix, &mut AttrsBuilder) -> Verdict {
    move |p: &Prefix, b: &mut AttrsBuilder| {
        let i = PREFIXES
            .iter()
            .position(|s| s.parse::<Prefix>().ok() == Some(*p))
            .unwrap_or(0);
        match kind {
            1 if i % 3 == 0 => Verdict::Reject,
            2 if i == 2 => Verdict::Reject,
            2 if is_v4(p) => {
                b.set_local_pref(300);
                Verdict::Accept
            }
            _ => Verdict::Accept,
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Announce {
        peer: u16,
        prefixes: Vec<usize>,
        path_id: u32,
        attrs: A,
    },
    Withdraw {
        peer: u16,
        prefixes: Vec<usize>,
        path_id: u32,
    },
    /// The peer's import policy changes and its routes are re-evaluated.
    Reimport {
        peer: u16,
        policy: u8,
    },
    PeerDown(u16),
    /// The session went down with graceful restart (RFC 4724).
    MarkStale(u16),
    /// The same, keeping only the listed families stale.
    MarkStaleFamilies {
        peer: u16,
        v4: bool,
        v6: bool,
    },
    SweepStale(u16),
    SweepStaleAfi(u16, bool),
    /// Enhanced route refresh's BoRR (RFC 7313).
    MarkStaleAfi(u16, bool),
    /// Long-lived graceful restart (RFC 9494).
    EnterLlgr(u16, bool),
    Config(BestPathConfig),
    /// Time passes (minutes); damping releases what is due.
    Wait(u64),
    /// Damping on or off for a peer.
    PeerDamping(u16, bool),
    /// A next hop's reachability or cost changes (with tracking on).
    Nexthop {
        v6: bool,
        nh: usize,
        reachable: bool,
        cost: u32,
    },
}

fn arb_config() -> impl Strategy<Value = BestPathConfig> {
    (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(acm, dmed, worst, rid)| BestPathConfig {
            always_compare_med: acm,
            deterministic_med: dmed,
            missing_med_worst: worst,
            compare_router_id: rid,
            ..BestPathConfig::default()
        },
    )
}

fn arb_op() -> impl Strategy<Value = Op> {
    let prefixes = prop::collection::vec(0..PREFIXES.len(), 1..4);
    prop_oneof![
        16 => (0..PEERS, prefixes.clone(), 0u32..2, arb_attrs()).prop_map(
            |(peer, prefixes, path_id, attrs)| Op::Announce { peer, prefixes, path_id, attrs }
        ),
        5 => (0..PEERS, prefixes, 0u32..2)
            .prop_map(|(peer, prefixes, path_id)| Op::Withdraw { peer, prefixes, path_id }),
        2 => (0..PEERS, 0u8..3).prop_map(|(peer, policy)| Op::Reimport { peer, policy }),
        1 => (0..PEERS).prop_map(Op::PeerDown),
        1 => (0..PEERS).prop_map(Op::MarkStale),
        1 => (0..PEERS, any::<bool>(), any::<bool>())
            .prop_map(|(peer, v4, v6)| Op::MarkStaleFamilies { peer, v4, v6 }),
        1 => (0..PEERS).prop_map(Op::SweepStale),
        1 => (0..PEERS, any::<bool>()).prop_map(|(p, v6)| Op::SweepStaleAfi(p, v6)),
        1 => (0..PEERS, any::<bool>()).prop_map(|(p, v6)| Op::MarkStaleAfi(p, v6)),
        1 => (0..PEERS, any::<bool>()).prop_map(|(p, v6)| Op::EnterLlgr(p, v6)),
        1 => arb_config().prop_map(Op::Config),
        1 => (1u64..40).prop_map(Op::Wait),
        1 => (0..PEERS, any::<bool>()).prop_map(|(p, on)| Op::PeerDamping(p, on)),
        2 => (any::<bool>(), 0..NEXT_HOPS, prop::bool::weighted(0.7), 0u32..3).prop_map(
            |(v6, nh, reachable, cost)| Op::Nexthop { v6, nh, reachable, cost }
        ),
    ]
}

fn peer_cfg(i: u16, ebgp: bool) -> PeerConfig {
    PeerConfig {
        asn: Asn(if ebgp { 64500 + u32::from(i) } else { 64999 }),
        bgp_id: Ipv4Addr::new(10, 0, 0, 1 + i as u8),
        addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10 + i as u8)),
        ebgp,
        keep_pre_policy: true,
        export: false,
    }
}

fn afi(v6: bool) -> Afi {
    if v6 {
        Afi::Ipv6
    } else {
        Afi::Ipv4
    }
}

/// What `show route count` and `show protocols` used to compute per
/// query: one walk of the table. Per family (prefixes, paths); per peer
/// (paths, prefixes whose best path is the peer's).
struct Walk {
    family: [(u64, u64); 2],
    per_peer: Vec<(u64, u64)>,
}

fn walk(s: &RibShard) -> Walk {
    let mut w = Walk {
        family: [(0, 0); 2],
        per_peer: vec![(0, 0); PEERS as usize],
    };
    for r in s.iter() {
        let f = usize::from(!is_v4(&r.prefix));
        w.family[f].0 += 1;
        w.family[f].1 += r.paths.len() as u64;
        for (i, p) in r.paths.iter().enumerate() {
            let c = &mut w.per_peer[usize::from(p.peer.0)];
            c.0 += 1;
            if r.best == Some(i) {
                c.1 += 1;
            }
        }
        // `show protocols` read the best through its attribute set.
        assert_eq!(
            r.best().map(|(p, _)| p.peer),
            r.best.map(|i| r.paths[i].peer),
            "{}: a best path with a dead attribute set",
            r.prefix
        );
    }
    w
}

fn check(rib: &Rib, step: usize, op: &Op) -> Result<(), TestCaseError> {
    let mut total = Walk {
        family: [(0, 0); 2],
        per_peer: vec![(0, 0); PEERS as usize],
    };
    for (n, s) in rib.shards().iter().enumerate() {
        let w = walk(s);
        prop_assert_eq!(
            s.family_counts(),
            w.family,
            "shard {} after step {} ({:?})",
            n,
            step,
            op
        );
        prop_assert_eq!(
            s.path_count() as u64,
            w.family[0].1 + w.family[1].1,
            "shard {} after step {}",
            n,
            step
        );
        for (i, want) in w.per_peer.iter().enumerate() {
            let c = s.peer_counts(PeerId(i as u16)).unwrap();
            prop_assert_eq!(
                (c.accepted, c.best),
                *want,
                "shard {}, peer {} after step {} ({:?})",
                n,
                i,
                step,
                op
            );
            total.per_peer[i].0 += want.0;
            total.per_peer[i].1 += want.1;
        }
        for (t, f) in total.family.iter_mut().zip(w.family) {
            t.0 += f.0;
            t.1 += f.1;
        }
    }
    prop_assert_eq!(rib.family_counts(), total.family);
    for (i, want) in total.per_peer.iter().enumerate() {
        let c = rib.peer_counts(PeerId(i as u16)).unwrap();
        prop_assert_eq!((c.accepted, c.best), *want, "whole RIB, peer {}", i);
    }
    Ok(())
}

fn run(
    cfg: BestPathConfig,
    ebgp: &[bool],
    damping: bool,
    tracking: bool,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut rib = Rib::new(2, cfg);
    if tracking {
        rib.enable_nexthop_tracking();
    }
    for (i, &e) in ebgp.iter().enumerate() {
        rib.add_peer(PeerId(i as u16), peer_cfg(i as u16, e));
    }
    let mut ch = Vec::new();
    let mut now = Instant::ZERO;
    if damping {
        let params = DampParams {
            half_life: Duration::from_secs(5 * 60),
            reuse: 800,
            suppress: 1500,
            max_suppress: Duration::from_secs(20 * 60),
            ..DampParams::default()
        };
        rib.enable_damping(params, &mut ch);
        for i in 0..PEERS {
            rib.set_peer_damping(PeerId(i), true, &mut ch);
        }
    }
    if tracking {
        // Every next hop starts reachable.
        for i in 0..NEXT_HOPS {
            for ip in [IpAddr::V4(nh_v4(i)), IpAddr::V6(nh_v6(i))] {
                let st = NhState {
                    reachable: true,
                    igp_cost: 1,
                };
                rib.nexthop_update(ip, st, &mut ch);
            }
        }
    }
    let pool: Vec<Prefix> = PREFIXES.iter().map(|p| p.parse().unwrap()).collect();
    let mut policies = vec![0u8; PEERS as usize];
    for (step, op) in ops.iter().enumerate() {
        ch.clear();
        match op {
            Op::Announce {
                peer,
                prefixes,
                path_id,
                attrs,
            } => {
                // One UPDATE per family, as MP_REACH and NLRI carry them.
                for v6 in [false, true] {
                    let n: Vec<Nlri> = prefixes
                        .iter()
                        .map(|&i| pool[i])
                        .filter(|p| is_v4(p) != v6)
                        .map(|prefix| Nlri {
                            path_id: Some(*path_id),
                            prefix,
                        })
                        .collect();
                    if n.is_empty() {
                        continue;
                    }
                    let mut imp = policy(policies[usize::from(*peer)]);
                    rib.apply_update(
                        PeerId(*peer),
                        &n,
                        Some(&builder(attrs, v6)),
                        &[],
                        &mut imp,
                        &mut ch,
                    )
                    .unwrap();
                }
            }
            Op::Withdraw {
                peer,
                prefixes,
                path_id,
            } => {
                let n: Vec<Nlri> = prefixes
                    .iter()
                    .map(|&i| Nlri {
                        path_id: Some(*path_id),
                        prefix: pool[i],
                    })
                    .collect();
                let mut imp = policy(policies[usize::from(*peer)]);
                rib.apply_update(PeerId(*peer), &[], None, &n, &mut imp, &mut ch)
                    .unwrap();
            }
            Op::Reimport { peer, policy: k } => {
                policies[usize::from(*peer)] = *k;
                for s in rib.shards_mut() {
                    s.reimport(PeerId(*peer), &mut policy(*k), &mut ch).unwrap();
                }
            }
            Op::PeerDown(p) => rib.peer_down(PeerId(*p), &mut ch).unwrap(),
            Op::MarkStale(p) => {
                rib.mark_stale(PeerId(*p)).unwrap();
            }
            Op::MarkStaleFamilies { peer, v4, v6 } => {
                let keep: Vec<Afi> = [(*v4, Afi::Ipv4), (*v6, Afi::Ipv6)]
                    .iter()
                    .filter(|k| k.0)
                    .map(|k| k.1)
                    .collect();
                rib.mark_stale_families(PeerId(*peer), &keep, &mut ch)
                    .unwrap();
            }
            Op::SweepStale(p) => {
                rib.sweep_stale(PeerId(*p), &mut ch).unwrap();
            }
            Op::SweepStaleAfi(p, v6) => {
                rib.sweep_stale_afi(PeerId(*p), afi(*v6), &mut ch).unwrap();
            }
            Op::MarkStaleAfi(p, v6) => {
                rib.mark_stale_afi(PeerId(*p), afi(*v6)).unwrap();
            }
            Op::EnterLlgr(p, v6) => {
                rib.enter_llgr(PeerId(*p), afi(*v6), &mut ch).unwrap();
            }
            Op::Config(c) => rib.set_config(*c, &mut ch),
            Op::Wait(m) => {
                now = Instant(now.0 + m * 60_000_000_000);
                rib.damping_time(now);
                rib.damping_due(now, &mut ch);
            }
            Op::PeerDamping(p, on) => {
                if damping {
                    rib.set_peer_damping(PeerId(*p), *on, &mut ch);
                }
            }
            Op::Nexthop {
                v6,
                nh,
                reachable,
                cost,
            } => {
                let ip = if *v6 {
                    IpAddr::V6(nh_v6(*nh))
                } else {
                    IpAddr::V4(nh_v4(*nh))
                };
                let st = NhState {
                    reachable: *reachable,
                    igp_cost: *cost,
                };
                rib.nexthop_update(ip, st, &mut ch);
            }
        }
        check(&rib, step, op)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// After every step the kept counts equal a walk of the table.
    #[test]
    fn counts_equal_a_walk(
        cfg in arb_config(),
        ebgp in prop::collection::vec(any::<bool>(), PEERS as usize),
        damping in prop::bool::weighted(0.3),
        tracking in prop::bool::weighted(0.3),
        ops in prop::collection::vec(arb_op(), 1..80),
    ) {
        run(cfg, &ebgp, damping, tracking, &ops)?;
    }
}

/// A hand-made sequence through every kind of change, so that the test
/// fails loudly if the counts stop moving at all (a walk of an empty
/// table equals counters that never move).
#[test]
fn counts_move_with_the_routes() {
    let a = |neighbor, lp| A {
        lp,
        neighbor,
        len: 2,
        med: None,
        nh: 0,
        no_llgr: false,
    };
    let ann = |peer, prefixes: &[usize], attrs| Op::Announce {
        peer,
        prefixes: prefixes.to_vec(),
        path_id: 0,
        attrs,
    };
    let ops = [
        ann(1, &[0, 1, 4], a(1, None)),
        ann(2, &[0, 4], a(2, Some(200))),
        Op::MarkStale(2),
        Op::EnterLlgr(2, false),
        Op::SweepStale(2),
        Op::PeerDown(1),
    ];
    // iBGP peers: LOCAL_PREF is kept.
    run(BestPathConfig::default(), &[false; 5], false, false, &ops).unwrap();
    let mut rib = Rib::new(2, BestPathConfig::default());
    for i in 0..PEERS {
        rib.add_peer(PeerId(i), peer_cfg(i, false));
    }
    // The same steps by hand, reading the counters after each.
    let mut ch = Vec::new();
    let pool: Vec<Prefix> = PREFIXES.iter().map(|p| p.parse().unwrap()).collect();
    let ann_rib = |rib: &mut Rib, peer: u16, ps: &[usize], lp: Option<u32>, ch: &mut Vec<_>| {
        for v6 in [false, true] {
            let n: Vec<Nlri> = ps
                .iter()
                .map(|&i| Nlri::new(pool[i]))
                .filter(|n| is_v4(&n.prefix) != v6)
                .collect();
            if !n.is_empty() {
                let b = builder(&a(u32::from(peer), lp), v6);
                rib.apply_update(PeerId(peer), &n, Some(&b), &[], &mut policy(0), ch)
                    .unwrap();
            }
        }
    };
    let best = |rib: &Rib, p: u16| rib.peer_counts(PeerId(p)).unwrap().best;
    ann_rib(&mut rib, 1, &[0, 1, 4], None, &mut ch);
    assert_eq!(best(&rib, 1), 3);
    assert_eq!(rib.family_counts(), [(2, 2), (1, 1)]);
    // LOCAL_PREF 200 wins 10/8 and 2001:db8::/32 from peer 1.
    ann_rib(&mut rib, 2, &[0, 4], Some(200), &mut ch);
    assert_eq!((best(&rib, 1), best(&rib, 2)), (1, 2));
    assert_eq!(rib.family_counts(), [(2, 3), (1, 2)]);
    // LLGR_STALE makes peer 2's IPv4 path least preferred.
    rib.mark_stale(PeerId(2)).unwrap();
    rib.enter_llgr(PeerId(2), Afi::Ipv4, &mut ch).unwrap();
    assert_eq!((best(&rib, 1), best(&rib, 2)), (2, 1));
    rib.sweep_stale(PeerId(2), &mut ch).unwrap();
    assert_eq!((best(&rib, 1), best(&rib, 2)), (3, 0));
    assert_eq!(rib.family_counts(), [(2, 2), (1, 1)]);
    rib.peer_down(PeerId(1), &mut ch).unwrap();
    assert_eq!(best(&rib, 1), 0);
    assert_eq!(rib.family_counts(), [(0, 0), (0, 0)]);
}
