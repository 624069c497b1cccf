use super::*;
use crate::attrs::AttrsBuilder;
use bgp_wire::{AsPath, AttrValue, Origin, PathAttr};
use std::net::Ipv4Addr;

/// A path description: every field defaults to "neutral".
#[derive(Clone, Debug)]
struct P {
    lp: Option<u32>,
    /// An AS_CONFED_SEQUENCE in front of `path` (RFC 5065), if not empty.
    confed: Vec<u32>,
    path: Vec<u32>,
    origin: Origin,
    med: Option<u32>,
    ebgp: bool,
    igp: u32,
    bgp_id: u32,
    originator: Option<u32>,
    clusters: usize,
    addr: IpAddr,
    path_id: u32,
}

impl Default for P {
    fn default() -> Self {
        P {
            lp: None,
            confed: Vec::new(),
            path: vec![65001, 65100],
            origin: Origin::Igp,
            med: None,
            ebgp: true,
            igp: 0,
            bgp_id: 10,
            originator: None,
            clusters: 0,
            addr: "192.0.2.10".parse().unwrap(),
            path_id: 0,
        }
    }
}

impl P {
    fn summary(&self) -> Summary {
        let mut path = AsPath::from_sequence(self.path.iter().map(|&a| Asn(a)).collect());
        if !self.confed.is_empty() {
            path.segments.insert(
                0,
                bgp_wire::AsSegment {
                    kind: bgp_wire::SegmentType::ConfedSequence,
                    asns: self.confed.iter().map(|&a| Asn(a)).collect(),
                },
            );
        }
        let mut b = AttrsBuilder::from_attrs([
            PathAttr::new(AttrValue::Origin(self.origin)),
            PathAttr::new(AttrValue::AsPath(path)),
        ]);
        if let Some(v) = self.lp {
            b.set_local_pref(v);
        }
        if let Some(v) = self.med {
            b.set_med(v);
        }
        if let Some(o) = self.originator {
            b.set(PathAttr::new(AttrValue::OriginatorId(Ipv4Addr::from(o))));
        }
        if self.clusters > 0 {
            b.set(PathAttr::new(AttrValue::ClusterList(vec![
                Ipv4Addr::new(
                    1, 1, 1, 1
                );
                self.clusters
            ])));
        }
        b.set_igp_metric(self.igp);
        b.encode(&mut Vec::new())
    }
}

fn cand<'a>(p: &P, s: &'a Summary) -> Candidate<'a> {
    Candidate {
        summary: s,
        ebgp: p.ebgp,
        peer_bgp_id: p.bgp_id,
        peer_addr: p.addr,
        path_id: p.path_id,
        igp_cost: s.igp_metric(),
    }
}

/// Asserts that `win` beats `lose` at `expect`, in both argument orders and
/// through `select` in both list orders.
fn check(win: &P, lose: &P, cfg: &BestPathConfig, expect: Step) {
    let (sw, sl) = (win.summary(), lose.summary());
    let (w, l) = (cand(win, &sw), cand(lose, &sl));
    assert_eq!(compare(&w, &l, cfg), (Ordering::Less, expect));
    assert_eq!(compare(&l, &w, cfg), (Ordering::Greater, expect));
    assert_eq!(select(&[w, l], cfg), Some(0));
    assert_eq!(select(&[l, w], cfg), Some(1));
}

fn dflt() -> BestPathConfig {
    BestPathConfig::default()
}

#[test]
fn local_pref_beats_everything_after_it() {
    let w = P {
        lp: Some(200),
        path: vec![1, 2, 3, 4],
        origin: Origin::Incomplete,
        ..P::default()
    };
    check(&w, &P::default(), &dflt(), Step::LocalPref);
    // Missing LOCAL_PREF is the default (100), which beats 99.
    let low = P {
        lp: Some(99),
        ..P::default()
    };
    check(&P::default(), &low, &dflt(), Step::LocalPref);
    let cfg = BestPathConfig {
        default_local_pref: 50,
        ..dflt()
    };
    check(&low, &P::default(), &cfg, Step::LocalPref);
}

#[test]
fn shorter_as_path_wins() {
    let w = P {
        path: vec![7],
        origin: Origin::Incomplete,
        med: Some(1000),
        ..P::default()
    };
    check(&w, &P::default(), &dflt(), Step::AsPathLen);
}

#[test]
fn lower_origin_wins() {
    let w = P {
        origin: Origin::Egp,
        med: Some(50),
        ..P::default()
    };
    let l = P {
        origin: Origin::Incomplete,
        ..P::default()
    };
    check(&w, &l, &dflt(), Step::Origin);
    check(&P::default(), &w, &dflt(), Step::Origin);
}

#[test]
fn med_only_within_one_neighbour_as_unless_always() {
    let w = P {
        med: Some(10),
        ebgp: false,
        ..P::default()
    };
    let l = P {
        med: Some(20),
        ..P::default()
    };
    check(&w, &l, &dflt(), Step::Med);
    // Different neighbour AS: MED is skipped, eBGP decides.
    let l2 = P {
        path: vec![65002, 65100],
        ..l.clone()
    };
    check(&l2, &w, &dflt(), Step::EbgpOverIbgp);
    let always = BestPathConfig {
        always_compare_med: true,
        ..dflt()
    };
    check(&w, &l2, &always, Step::Med);
}

#[test]
fn missing_med_is_zero_or_worst() {
    let with = P {
        med: Some(5),
        ..P::default()
    };
    check(&P::default(), &with, &dflt(), Step::Med);
    let worst = BestPathConfig {
        missing_med_worst: true,
        ..dflt()
    };
    check(&with, &P::default(), &worst, Step::Med);
}

#[test]
fn ebgp_over_ibgp() {
    let w = P {
        igp: 100,
        bgp_id: 99,
        ..P::default()
    };
    let l = P {
        ebgp: false,
        ..P::default()
    };
    check(&w, &l, &dflt(), Step::EbgpOverIbgp);
}

#[test]
fn lower_igp_metric_wins() {
    let w = P {
        igp: 5,
        bgp_id: 99,
        ..P::default()
    };
    let l = P {
        igp: 6,
        ..P::default()
    };
    check(&w, &l, &dflt(), Step::IgpMetric);
}

#[test]
fn lower_router_id_with_originator_id_standing_in() {
    let w = P {
        bgp_id: 1,
        clusters: 3,
        addr: "192.0.2.99".parse().unwrap(),
        ..P::default()
    };
    let l = P {
        bgp_id: 2,
        ..P::default()
    };
    check(&w, &l, &dflt(), Step::RouterId);
    // RFC 4456 §9: ORIGINATOR_ID replaces the peer's id.
    let refl = P {
        bgp_id: 50,
        originator: Some(0),
        ..P::default()
    };
    check(&refl, &w, &dflt(), Step::RouterId);
}

#[test]
fn shorter_cluster_list_wins() {
    let w = P {
        originator: Some(7),
        clusters: 1,
        addr: "192.0.2.200".parse().unwrap(),
        ..P::default()
    };
    let l = P {
        originator: Some(7),
        clusters: 2,
        ..P::default()
    };
    check(&w, &l, &dflt(), Step::ClusterListLen);
}

#[test]
fn lower_peer_address_then_path_id() {
    let w = P {
        addr: "192.0.2.1".parse().unwrap(),
        path_id: 9,
        ..P::default()
    };
    check(&w, &P::default(), &dflt(), Step::PeerAddr);
    let a = P {
        path_id: 1,
        ..P::default()
    };
    let b = P {
        path_id: 2,
        ..P::default()
    };
    check(&a, &b, &dflt(), Step::PathId);
    let (sa, sa2) = (a.summary(), a.summary());
    assert_eq!(
        compare(&cand(&a, &sa), &cand(&a, &sa2), &dflt()),
        (Ordering::Equal, Step::Equal)
    );
    assert_eq!(select(&[], &dflt()), None);
}

/// The classic MED cycle: r1 beats r2 on MED (same neighbour AS), r2 beats
/// r3 and r3 beats r1 on router id (different neighbour AS).
#[test]
fn deterministic_med_removes_order_dependence() {
    let r1 = P {
        med: Some(10),
        bgp_id: 3,
        ..P::default()
    };
    let r2 = P {
        med: Some(20),
        bgp_id: 1,
        addr: "192.0.2.2".parse().unwrap(),
        ..P::default()
    };
    let r3 = P {
        path: vec![65002, 65100],
        med: Some(0),
        bgp_id: 2,
        addr: "192.0.2.3".parse().unwrap(),
        ..P::default()
    };
    let ps = [r1, r2, r3];
    let ss: Vec<Summary> = ps.iter().map(P::summary).collect();
    let perms = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let run = |cfg: &BestPathConfig| -> Vec<usize> {
        perms
            .iter()
            .map(|perm| {
                let c: Vec<Candidate<'_>> = perm.iter().map(|&i| cand(&ps[i], &ss[i])).collect();
                perm[select(&c, cfg).unwrap()]
            })
            .collect()
    };
    let plain = run(&dflt());
    assert!(
        plain.iter().any(|&w| w != plain[0]),
        "the cycle should make a plain scan order dependent: {plain:?}"
    );
    let det = BestPathConfig {
        deterministic_med: true,
        ..dflt()
    };
    // Group AS 65001 → r1 (MED 10); vs r3 on router id 2 < 3 → r3.
    assert_eq!(run(&det), vec![2; 6]);
}

#[test]
fn without_compare_router_id_the_first_ebgp_path_keeps_a_late_tie() {
    let older = BestPathConfig {
        compare_router_id: false,
        ..dflt()
    };
    // Candidates are oldest first. `hi` has the higher router id and a
    // higher address: by router id (the default) the newer `lo` wins.
    let hi = P {
        bgp_id: 20,
        addr: "192.0.2.20".parse().unwrap(),
        ..P::default()
    };
    let lo = P::default();
    let (sh, sl) = (hi.summary(), lo.summary());
    let (h, l) = (cand(&hi, &sh), cand(&lo, &sl));
    assert_eq!(select(&[h, l], &dflt()), Some(1));
    assert_eq!(select(&[h, l], &older), Some(0));
    assert_eq!(select(&[l, h], &older), Some(0));
    // An earlier step still decides: a shorter AS path wins, new or old.
    let short = P {
        path: vec![65001],
        bgp_id: 30,
        ..P::default()
    };
    let ss = short.summary();
    let s = cand(&short, &ss);
    assert_eq!(select(&[h, s], &older), Some(1));
    // Under deterministic MED too.
    let det = BestPathConfig {
        deterministic_med: true,
        ..older
    };
    assert_eq!(select(&[h, l], &det), Some(0));
    // Between iBGP paths the router id still decides (RFC 5004 is about
    // external paths).
    let (hi_i, lo_i) = (
        P {
            ebgp: false,
            ..hi.clone()
        },
        P {
            ebgp: false,
            ..lo.clone()
        },
    );
    let (shi, sli) = (hi_i.summary(), lo_i.summary());
    assert_eq!(
        select(&[cand(&hi_i, &shi), cand(&lo_i, &sli)], &older),
        Some(1)
    );
}

/// RFC 5065 §5.3: confederation segments do not count in the AS_PATH
/// length; the neighbour AS for MED is the first AS after them (so routes
/// from one external AS compare MEDs whichever member ASes they crossed,
/// and paths internal to the confederation compare with local ones); a
/// route from another member AS is internal at the eBGP-over-iBGP step
/// (the caller passes `ebgp` false for it).
#[test]
fn confederation_paths() {
    let member = |confed: &[u32], path: &[u32]| P {
        confed: confed.to_vec(),
        path: path.to_vec(),
        ebgp: false,
        ..P::default()
    };
    // ( 65002 65003 ) 65100 is shorter than 65100 65200.
    let long = P {
        path: vec![65100, 65200],
        ..P::default()
    };
    check(
        &member(&[65002, 65003], &[65100]),
        &long,
        &dflt(),
        Step::AsPathLen,
    );
    // ( 65002 ) 65100 MED 1 against 65100 MED 9: same neighbour AS.
    let w = P {
        med: Some(1),
        ..member(&[65002], &[65100])
    };
    let l = P {
        med: Some(9),
        path: vec![65100],
        ..P::default()
    };
    check(&w, &l, &dflt(), Step::Med);
    // Internal to the confederation vs local: both neighbour "our AS".
    let w = P {
        med: Some(1),
        ..member(&[65002], &[])
    };
    let l = P {
        med: Some(5),
        ..member(&[], &[])
    };
    check(&w, &l, &dflt(), Step::Med);
    // A true eBGP route beats the same route through a member AS.
    let e = P {
        path: vec![65100],
        ..P::default()
    };
    check(&e, &member(&[65002], &[65100]), &dflt(), Step::EbgpOverIbgp);
}

/// Multipath sets (`crate::multipath`): who shares forwarding with the best.
mod multipath_sets {
    use super::*;
    use crate::multipath;
    use proptest::prelude::*;

    fn mp(ebgp: u16, ibgp: u16, relax: bool) -> BestPathConfig {
        BestPathConfig {
            multipath: MultipathConfig {
                ebgp,
                ibgp,
                relax_as_path: relax,
            },
            ..BestPathConfig::default()
        }
    }

    fn peer(n: u8) -> P {
        P {
            bgp_id: u32::from(n),
            addr: IpAddr::from([192, 0, 2, n]),
            ..P::default()
        }
    }

    fn set(ps: &[P], cfg: &BestPathConfig) -> Vec<usize> {
        let ss: Vec<Summary> = ps.iter().map(P::summary).collect();
        let cs: Vec<Candidate<'_>> = ps.iter().zip(&ss).map(|(p, s)| cand(p, s)).collect();
        let best = select(&cs, cfg).expect("best");
        multipath::select(&cs, best, cfg)
    }

    #[test]
    fn equal_ebgp_paths_from_one_as_share() {
        let ps = [peer(3), peer(1), peer(2)];
        // Lowest router id is best, the others follow in tie-break order.
        assert_eq!(set(&ps, &mp(4, 1, false)), vec![1, 2, 0]);
        assert_eq!(set(&ps, &mp(2, 1, false)), vec![1, 2]);
        // Off: the best alone; the iBGP limit does not apply to eBGP.
        assert_eq!(set(&ps, &mp(1, 8, false)), vec![1]);
    }

    #[test]
    fn each_step_before_router_id_separates() {
        let base = peer(1);
        let differ = [
            P {
                lp: Some(90),
                ..peer(2)
            },
            P {
                path: vec![65001, 65100, 65200],
                ..peer(2)
            },
            P {
                origin: Origin::Incomplete,
                ..peer(2)
            },
            P {
                med: Some(5),
                ..peer(2)
            },
            P { igp: 7, ..peer(2) },
        ];
        for d in differ {
            assert_eq!(set(&[base.clone(), d], &mp(8, 8, true)), vec![0]);
        }
        // eBGP best: an iBGP path is never in its set.
        let ibgp = P {
            ebgp: false,
            ..peer(2)
        };
        assert_eq!(set(&[base.clone(), ibgp], &mp(8, 8, true)), vec![0]);
        // ORIGINATOR_ID / CLUSTER_LIST are late tie-breakers: equal.
        let refl = P {
            clusters: 2,
            ..peer(2)
        };
        assert_eq!(set(&[base, refl], &mp(8, 8, false)), vec![0, 1]);
    }

    #[test]
    fn neighbour_as_unless_relaxed() {
        let a = peer(1);
        let b = P {
            path: vec![65002, 65100],
            ..peer(2)
        };
        assert_eq!(set(&[a.clone(), b.clone()], &mp(4, 4, false)), vec![0]);
        assert_eq!(set(&[a.clone(), b.clone()], &mp(4, 4, true)), vec![0, 1]);
        // Relaxed, yet the length must still match.
        let c = P {
            path: vec![65003],
            ..peer(3)
        };
        assert_eq!(set(&[c, a], &mp(4, 4, true)), vec![0]);
    }

    #[test]
    fn ibgp_limit_for_ibgp_best() {
        let ib = |n| P {
            ebgp: false,
            path: vec![],
            ..peer(n)
        };
        let ps = [ib(1), ib(2), ib(3)];
        assert_eq!(set(&ps, &mp(8, 1, false)), vec![0]);
        assert_eq!(set(&ps, &mp(1, 2, false)), vec![0, 1]);
    }

    fn arb_path() -> impl Strategy<Value = P> {
        (
            prop::option::of(99u32..=100),
            prop::sample::select(vec![vec![65001, 65100], vec![65002, 65100], vec![65001]]),
            prop::bool::ANY,
            prop::option::of(0u32..=1),
            prop::bool::ANY,
            0u32..=1,
            1u8..=20,
        )
            .prop_map(|(lp, path, inc, med, ebgp, igp, n)| P {
                lp,
                path,
                origin: if inc { Origin::Incomplete } else { Origin::Igp },
                med,
                ebgp,
                igp,
                ..peer(n)
            })
    }

    proptest! {
        /// The set starts with the best, is never larger than the limit,
        /// holds only paths equal to the best, and leaves an equal path out
        /// only when full.
        #[test]
        fn set_contains_best_and_respects_limit(
            ps in prop::collection::vec(arb_path(), 1..12),
            e in 1u16..6,
            i in 1u16..6,
            relax in prop::bool::ANY,
            det in prop::bool::ANY,
        ) {
            let cfg = BestPathConfig { deterministic_med: det, ..mp(e, i, relax) };
            let ss: Vec<Summary> = ps.iter().map(P::summary).collect();
            let cs: Vec<Candidate<'_>> = ps.iter().zip(&ss).map(|(p, s)| cand(p, s)).collect();
            let best = select(&cs, &cfg).expect("non-empty");
            let got = multipath::select(&cs, best, &cfg);
            prop_assert_eq!(got.first().copied(), Some(best));
            let max = usize::from(if cs[best].ebgp { e } else { i });
            prop_assert!(got.len() <= max);
            let mut uniq = got.clone();
            uniq.sort_unstable();
            uniq.dedup();
            prop_assert_eq!(uniq.len(), got.len());
            for (k, c) in cs.iter().enumerate() {
                let eq = multipath::equal_to_best(&cs[best], c, &cfg);
                if got.contains(&k) {
                    prop_assert!(eq || k == best);
                } else {
                    prop_assert!(!eq || got.len() == max);
                }
            }
        }
    }
}
