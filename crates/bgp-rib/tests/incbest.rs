//! Incremental best-path selection (`table.rs`) against the full
//! reselection: random sequences of announcements, replacements and
//! withdrawals (ADD-PATH path ids included), peer resets, selection option
//! changes and route-flap damping over random attribute sets, and after
//! every step each prefix's best is the one `bestpath::select_by` finds
//! over all its paths in storage order, as the RIB chose before it became
//! incremental.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use base::{Asn, Instant, Prefix};
use bgp_rib::bestpath::{self, Candidate};
use bgp_rib::{AcceptAll, AttrsBuilder, BestPathConfig, DampParams, PeerConfig, PeerId, RibShard};
use bgp_wire::{AsPath, AttrValue, Community, NextHop, Nlri, Origin, PathAttr};
use proptest::prelude::*;

const PEERS: u16 = 5;
const PREFIXES: [&str; 2] = ["10.0.0.0/8", "2001:db8::/32"];

/// A random attribute set from small domains, so that ties through any
/// step are frequent.
#[derive(Clone, Debug)]
struct A {
    lp: Option<u32>,
    neighbor: u32,
    len: usize,
    origin: u8,
    med: Option<u32>,
    igp: u32,
    originator: Option<u32>,
    clusters: usize,
    llgr: bool,
}

fn arb_attrs() -> impl Strategy<Value = A> {
    (
        prop::option::of(prop::sample::select(vec![100u32, 200])),
        1u32..4,
        1usize..4,
        0u8..3,
        prop::option::of(prop::sample::select(vec![0u32, 5, 10])),
        0u32..3,
        prop::option::of(1u32..3),
        0usize..3,
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(lp, neighbor, len, origin, med, igp, originator, clusters, llgr)| A {
                lp,
                neighbor,
                len,
                origin,
                med,
                igp,
                originator,
                clusters,
                llgr,
            },
        )
}

fn builder(a: &A, v6: bool) -> AttrsBuilder {
    let mut path = vec![Asn(64500 + a.neighbor)];
    path.extend((1..a.len).map(|i| Asn(65000 + i as u32)));
    let origin = match a.origin {
        0 => Origin::Igp,
        1 => Origin::Egp,
        _ => Origin::Incomplete,
    };
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(origin)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(path))),
    ]);
    b.set_next_hop(if v6 {
        NextHop::V6("2001:db8::9".parse().unwrap())
    } else {
        NextHop::V4(Ipv4Addr::new(192, 0, 2, 9))
    });
    if let Some(v) = a.lp {
        b.set_local_pref(v);
    }
    if let Some(v) = a.med {
        b.set_med(v);
    }
    if let Some(o) = a.originator {
        b.set(PathAttr::new(AttrValue::OriginatorId(Ipv4Addr::from(o))));
    }
    if a.clusters > 0 {
        b.set(PathAttr::new(AttrValue::ClusterList(vec![
            Ipv4Addr::new(
                1, 1, 1, 1
            );
            a.clusters
        ])));
    }
    if a.llgr {
        b.set(PathAttr::new(AttrValue::Communities(vec![
            Community::LLGR_STALE,
        ])));
    }
    b.set_igp_metric(a.igp);
    b
}

#[derive(Clone, Debug)]
enum Op {
    Announce {
        peer: u16,
        prefix: usize,
        path_id: u32,
        attrs: A,
    },
    Withdraw {
        peer: u16,
        prefix: usize,
        path_id: u32,
    },
    PeerDown(u16),
    Config(BestPathConfig),
    /// Time passes by this many minutes and damping releases what is due.
    Wait(u64),
}

fn arb_config() -> impl Strategy<Value = BestPathConfig> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(vec![100u32, 150, 300]),
        any::<bool>(),
    )
        .prop_map(|(acm, dmed, worst, lp, rid)| BestPathConfig {
            always_compare_med: acm,
            deterministic_med: dmed,
            missing_med_worst: worst,
            default_local_pref: lp,
            compare_router_id: rid,
            ..BestPathConfig::default()
        })
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0..PEERS, 0..PREFIXES.len(), 0u32..3, arb_attrs()).prop_map(
            |(peer, prefix, path_id, attrs)| Op::Announce { peer, prefix, path_id, attrs }
        ),
        4 => (0..PEERS, 0..PREFIXES.len(), 0u32..3)
            .prop_map(|(peer, prefix, path_id)| Op::Withdraw { peer, prefix, path_id }),
        1 => (0..PEERS).prop_map(Op::PeerDown),
        1 => arb_config().prop_map(Op::Config),
        1 => (1u64..40).prop_map(Op::Wait),
    ]
}

/// Peer `i`: eBGP or iBGP, a router id that may equal another peer's, its
/// own address.
fn peer_cfg(i: u16, ebgp: bool, id: u8) -> PeerConfig {
    PeerConfig {
        asn: Asn(if ebgp { 64500 + u32::from(i) } else { 64999 }),
        bgp_id: Ipv4Addr::new(10, 0, 0, id),
        addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10 + i as u8)),
        ebgp,
        keep_pre_policy: false,
        export: false,
    }
}

/// The full reselection over every stored path, in storage order.
fn full_best(s: &RibShard, prefix: &Prefix, peers: &[PeerConfig]) -> Option<usize> {
    let r = s.lookup(prefix)?;
    let sets: Vec<_> = r
        .paths
        .iter()
        .map(|p| s.attrs(p.attrs).map(|a| *a.summary()))
        .collect();
    let get = |i: usize| {
        let p = r.paths.get(i)?;
        if p.suppressed() {
            return None;
        }
        let cfg = peers.get(usize::from(p.peer.0))?;
        let summary = sets.get(i)?.as_ref()?;
        Some(Candidate {
            summary,
            ebgp: cfg.ebgp,
            peer_bgp_id: u32::from(cfg.bgp_id),
            peer_addr: cfg.addr,
            path_id: p.path_id,
            igp_cost: summary.igp_metric(),
        })
    };
    bestpath::select_by(r.paths.len(), get, s.config())
}

fn run(
    cfg: BestPathConfig,
    kinds: &[(bool, u8)],
    damping: bool,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    run_keys(cfg, kinds, damping, ops, None)
}

/// [`run`] with the shard's selection key table capped at `keys - 1`
/// keys: the paths whose key finds no room are ranked from their sets.
fn run_keys(
    cfg: BestPathConfig,
    kinds: &[(bool, u8)],
    damping: bool,
    ops: &[Op],
    keys: Option<usize>,
) -> Result<(), TestCaseError> {
    let mut s = RibShard::new(cfg);
    if let Some(n) = keys {
        s.limit_sel_keys(n);
    }
    let peers: Vec<PeerConfig> = kinds
        .iter()
        .enumerate()
        .map(|(i, &(ebgp, id))| peer_cfg(i as u16, ebgp, id))
        .collect();
    for (i, p) in peers.iter().enumerate() {
        s.add_peer(PeerId(i as u16), p.clone());
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
        s.enable_damping(params, &mut ch);
        for i in 0..PEERS {
            s.set_peer_damping(PeerId(i), true, &mut ch);
        }
    }
    let prefixes: Vec<Prefix> = PREFIXES.iter().map(|p| p.parse().unwrap()).collect();
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Announce {
                peer,
                prefix,
                path_id,
                attrs,
            } => {
                let n = [Nlri {
                    path_id: Some(*path_id),
                    prefix: prefixes[*prefix],
                }];
                let b = builder(attrs, *prefix == 1);
                s.apply_update(PeerId(*peer), &n, Some(&b), &[], &mut AcceptAll, &mut ch)
                    .unwrap();
            }
            Op::Withdraw {
                peer,
                prefix,
                path_id,
            } => {
                let n = [Nlri {
                    path_id: Some(*path_id),
                    prefix: prefixes[*prefix],
                }];
                s.apply_update(PeerId(*peer), &[], None, &n, &mut AcceptAll, &mut ch)
                    .unwrap();
            }
            Op::PeerDown(p) => s.peer_down(PeerId(*p), &mut ch).unwrap(),
            Op::Config(c) => s.set_config(*c, &mut ch),
            Op::Wait(m) => {
                now = Instant(now.0 + m * 60_000_000_000);
                s.damping_time(now);
                s.damping_due(now, &mut ch);
            }
        }
        for p in &prefixes {
            let got = s.lookup(p).and_then(|r| r.best);
            let want = full_best(&s, p, &peers);
            prop_assert_eq!(got, want, "step {} ({:?}), prefix {}", step, op, p);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// After every step, the best of each prefix is the full
    /// reselection's, under random options and peers.
    #[test]
    fn incremental_best_equals_full_reselection(
        cfg in arb_config(),
        kinds in prop::collection::vec((any::<bool>(), 1u8..4), PEERS as usize),
        damping in prop::bool::weighted(0.3),
        ops in prop::collection::vec(arb_op(), 1..80),
    ) {
        run(cfg, &kinds, damping, &ops)?;
    }

    /// The same with a key table too small for every key (none, or a
    /// few): paths ranked through the table and from their sets mix.
    #[test]
    fn incremental_best_with_a_full_key_table(
        cfg in arb_config(),
        kinds in prop::collection::vec((any::<bool>(), 1u8..4), PEERS as usize),
        ops in prop::collection::vec(arb_op(), 1..80),
        keys in 1usize..6,
    ) {
        run_keys(cfg, &kinds, false, &ops, Some(keys))?;
    }
}

/// The cases the incremental rules single out, one by one, under the
/// default options (non-transitive MED): a MED cycle in the top class,
/// where removing a path that is not the best changes the best.
#[test]
fn med_cycle_in_the_top_class() {
    // A (AS 1, MED 5, router id 3), B (AS 2, router id 2), C (AS 1, MED 10,
    // router id 1): A beats C by MED, B beats A and C beats B by router id.
    let kinds = [(true, 3), (true, 2), (true, 1)];
    let a = |neighbor, med| A {
        lp: None,
        neighbor,
        len: 2,
        origin: 0,
        med,
        igp: 0,
        originator: None,
        clusters: 0,
        llgr: false,
    };
    let ann = |peer, attrs| Op::Announce {
        peer,
        prefix: 0,
        path_id: 0,
        attrs,
    };
    let ops = [
        ann(0, a(1, Some(5))),
        ann(1, a(2, None)),
        ann(2, a(1, Some(10))),
        // The scan A, B, C ends at C; without B it is A.
        Op::Withdraw {
            peer: 1,
            prefix: 0,
            path_id: 0,
        },
        ann(1, a(2, None)),
        // A worse path (longer AS path) changes nothing.
        ann(
            1,
            A {
                len: 3,
                ..a(2, None)
            },
        ),
    ];
    run(BestPathConfig::default(), &kinds, false, &ops).unwrap();
    let no_rid = BestPathConfig {
        compare_router_id: false,
        ..BestPathConfig::default()
    };
    run(no_rid, &kinds, false, &ops).unwrap();
}
