//! Update groups (docs/adr/0005): peers whose export policy names the same
//! group key share one Adj-RIB-Out. The property test runs the same random
//! sequence of route changes, export rounds, partial and full drains,
//! session downs and ups, graceful restart, route refresh, policy changes
//! and ADD-PATH switches on two shards whose policies give the same
//! verdicts, one naming groups and one not (every peer keeps its own
//! table, the representation before groups): every drained batch, every
//! peer's Adj-RIB-Out and counters must be the same.

use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix};
use bgp_rib::{
    AddPathSend, AttrSet, AttrsBuilder, BestPathConfig, ExportBatch, ExportPolicy, ExportVerdict,
    PathSelection, PeerConfig, PeerId, RibShard,
};
use bgp_wire::consts::attr_type as at;
use bgp_wire::{AsPath, AttrValue, Nlri, Origin, PathAttr};
use proptest::prelude::*;

const PEERS: u16 = 6;
/// Peers from this id on are iBGP.
const FIRST_IBGP: u16 = 4;

fn prefixes() -> Vec<Prefix> {
    [
        "198.18.0.0/24",
        "198.18.1.0/24",
        "199.18.2.0/24",
        "199.18.3.0/24",
        "198.19.0.0/16",
        "10.0.0.0/8",
        "2001:db8::/32",
        "2001:db8:1::/48",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect()
}

/// Attribute sets: 2 is 0 with LOCAL_PREF (the same on the wire towards
/// eBGP), 1 and 4 carry a MED (class 2 strips it).
fn attrs(i: usize, v6: bool) -> AttrsBuilder {
    let (path, med, lp): (&[u32], Option<u32>, Option<u32>) = match i % 6 {
        0 => (&[64500, 2], None, None),
        1 => (&[64500, 2], Some(10), None),
        2 => (&[64500, 2], None, Some(200)),
        3 => (&[64501], None, None),
        4 => (&[64502, 4, 5], Some(5), None),
        _ => (&[64503], None, Some(50)),
    };
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
            path.iter().map(|&a| Asn(a)).collect(),
        ))),
    ]);
    b.set_next_hop(if v6 {
        bgp_wire::NextHop::V6("2001:db8::1".parse().unwrap())
    } else {
        bgp_wire::NextHop::V4(Ipv4Addr::new(198, 18, 0, 1))
    });
    if let Some(m) = med {
        b.set_med(m);
    }
    if let Some(l) = lp {
        b.set_local_pref(l);
    }
    b.mark_clean();
    b
}

/// Export by class: 0 accept, 1 reject every prefix whose first octet is
/// odd (looks at the prefix), 2 strip MED (a rewrite), 3 reject all.
#[derive(Clone)]
struct ByClass {
    class: Vec<u8>,
    groups: bool,
}

impl ExportPolicy for ByClass {
    fn export(&mut self, to: PeerId, prefix: &Prefix, _: PeerId, set: &AttrSet) -> ExportVerdict {
        match self.class[to.0 as usize] {
            0 => ExportVerdict::Accept,
            1 => match prefix {
                Prefix::V4(p) if p.addr().octets()[0] % 2 == 1 => ExportVerdict::Reject,
                _ => ExportVerdict::Accept,
            },
            2 if set.summary().med().is_some() => {
                let mut b = set.to_builder();
                b.remove(at::MULTI_EXIT_DISC);
                ExportVerdict::Replace(b)
            }
            2 => ExportVerdict::Accept,
            _ => ExportVerdict::Reject,
        }
    }
    fn prefix_independent(&self, to: PeerId) -> bool {
        self.class[to.0 as usize] != 1
    }
    fn rejects_all(&self, to: PeerId) -> bool {
        self.class[to.0 as usize] == 3
    }
    fn export_group(&self, to: PeerId) -> Option<u64> {
        self.groups.then(|| u64::from(self.class[to.0 as usize]))
    }
}

/// A shard whose peers all share one export class, in update groups, each
/// given its full table (empty here).
fn one_group() -> (RibShard, ByClass) {
    let mut s = shard();
    let mut p = ByClass {
        class: vec![0; PEERS as usize],
        groups: true,
    };
    for i in 0..PEERS {
        s.export_full(PeerId(i), &mut p).unwrap();
    }
    (s, p)
}

fn shard() -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    for i in 0..PEERS {
        s.add_peer(
            PeerId(i),
            PeerConfig {
                asn: Asn(65000 + u32::from(i)),
                bgp_id: Ipv4Addr::new(10, 0, 0, i as u8 + 1),
                addr: IpAddr::V4(Ipv4Addr::new(198, 18, 9, i as u8 + 1)),
                ebgp: i < FIRST_IBGP,
                keep_pre_policy: false,
                export: true,
            },
        );
    }
    s
}

#[derive(Clone, Debug)]
enum Op {
    Announce {
        peer: u16,
        prefix: usize,
        set: usize,
    },
    Withdraw {
        peer: u16,
        prefix: usize,
    },
    Export,
    Drain {
        peer: u16,
        max: usize,
    },
    Down {
        peer: u16,
    },
    Stale {
        peer: u16,
    },
    Sweep {
        peer: u16,
    },
    Full {
        peer: u16,
    },
    Refresh {
        peer: u16,
    },
    Class {
        peer: u16,
        class: u8,
    },
    AddPath {
        peer: u16,
        on: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let peer = 0..PEERS;
    let prefix = 0..prefixes().len();
    prop_oneof![
        8 => (peer.clone(), prefix.clone(), 0..6usize)
            .prop_map(|(peer, prefix, set)| Op::Announce { peer, prefix, set }),
        3 => (peer.clone(), prefix).prop_map(|(peer, prefix)| Op::Withdraw { peer, prefix }),
        4 => Just(Op::Export),
        4 => (peer.clone(), prop_oneof![Just(1usize), Just(2), Just(5), Just(usize::MAX)])
            .prop_map(|(peer, max)| Op::Drain { peer, max }),
        1 => peer.clone().prop_map(|peer| Op::Down { peer }),
        1 => peer.clone().prop_map(|peer| Op::Stale { peer }),
        1 => peer.clone().prop_map(|peer| Op::Sweep { peer }),
        1 => peer.clone().prop_map(|peer| Op::Full { peer }),
        1 => peer.clone().prop_map(|peer| Op::Refresh { peer }),
        2 => (peer.clone(), 0..4u8).prop_map(|(peer, class)| Op::Class { peer, class }),
        1 => (peer, any::<bool>()).prop_map(|(peer, on)| Op::AddPath { peer, on }),
    ]
}

/// A batch with its handles resolved to the sets' bytes (the two shards
/// number their sets alike only by chance).
type Resolved = (
    Vec<(Vec<u8>, Vec<Prefix>)>,
    Vec<Prefix>,
    Vec<(Vec<u8>, Vec<(Prefix, u32)>)>,
    Vec<(Prefix, u32)>,
);

fn resolve(s: &RibShard, b: &ExportBatch) -> Resolved {
    let raw = |h| s.attrs(h).map(|a| a.raw().to_vec()).unwrap_or_default();
    let mut ann: Vec<_> = b
        .announce
        .iter()
        .map(|(h, v)| (raw(*h), v.clone()))
        .collect();
    ann.sort();
    let mut paths: Vec<_> = (b.announce_paths.iter())
        .map(|(h, v)| (raw(*h), v.clone()))
        .collect();
    paths.sort();
    (ann, b.withdraw.clone(), paths, b.withdraw_paths.clone())
}

/// Both shards' views of every peer: Adj-RIB-Out contents, counters and
/// the number of changes pending.
fn check_same(a: &RibShard, b: &RibShard) -> Result<(), TestCaseError> {
    for i in 0..PEERS {
        let p = PeerId(i);
        prop_assert_eq!(a.peer_counts(p), b.peer_counts(p), "counts of peer {}", i);
        prop_assert_eq!(
            a.pending_updates(p),
            b.pending_updates(p),
            "pending of peer {}",
            i
        );
        for x in prefixes() {
            let ra: Vec<_> = (a.adj_out_paths(p, &x).into_iter())
                .map(|(id, s)| (id, s.raw().to_vec()))
                .collect();
            let rb: Vec<_> = (b.adj_out_paths(p, &x).into_iter())
                .map(|(id, s)| (id, s.raw().to_vec()))
                .collect();
            prop_assert_eq!(ra, rb, "Adj-RIB-Out of peer {} for {}", i, x);
        }
    }
    Ok(())
}

fn run(ops: &[Op], class: &[u8]) -> Result<usize, TestCaseError> {
    let pfx = prefixes();
    let mut grouped = shard();
    let mut private = shard();
    let mut pg = ByClass {
        class: class.to_vec(),
        groups: true,
    };
    let mut pp = ByClass {
        class: class.to_vec(),
        groups: false,
    };
    // Every session comes up first.
    for i in 0..PEERS {
        grouped.export_full(PeerId(i), &mut pg).unwrap();
        private.export_full(PeerId(i), &mut pp).unwrap();
    }
    let (mut cg, mut cp) = (Vec::new(), Vec::new());
    let mut grouped_rounds = 0;
    for op in ops {
        match *op {
            Op::Announce { peer, prefix, set } => {
                let x = pfx[prefix];
                let b = attrs(set, matches!(x, Prefix::V6(_)));
                let n = [Nlri::new(x)];
                let mut acc = bgp_rib::AcceptAll;
                grouped
                    .apply_update(PeerId(peer), &n, Some(&b), &[], &mut acc, &mut cg)
                    .unwrap();
                private
                    .apply_update(PeerId(peer), &n, Some(&b), &[], &mut acc, &mut cp)
                    .unwrap();
            }
            Op::Withdraw { peer, prefix } => {
                let n = [Nlri::new(pfx[prefix])];
                let mut acc = bgp_rib::AcceptAll;
                grouped
                    .apply_update(PeerId(peer), &[], None, &n, &mut acc, &mut cg)
                    .unwrap();
                private
                    .apply_update(PeerId(peer), &[], None, &n, &mut acc, &mut cp)
                    .unwrap();
            }
            Op::Export => {
                prop_assert_eq!(&cg, &cp);
                grouped.export_changes(&cg, &mut pg);
                private.export_changes(&cp, &mut pp);
                cg.clear();
                cp.clear();
                if grouped.update_groups().iter().any(|g| g.len() > 1) {
                    grouped_rounds += 1;
                }
            }
            Op::Drain { peer, max } => {
                let x = grouped.drain_updates_max(PeerId(peer), max);
                let y = private.drain_updates_max(PeerId(peer), max);
                prop_assert_eq!(
                    resolve(&grouped, &x),
                    resolve(&private, &y),
                    "drain of peer {}",
                    peer
                );
            }
            Op::Down { peer } => {
                grouped.peer_down(PeerId(peer), &mut cg).unwrap();
                private.peer_down(PeerId(peer), &mut cp).unwrap();
            }
            Op::Stale { peer } => {
                grouped.mark_stale(PeerId(peer)).unwrap();
                private.mark_stale(PeerId(peer)).unwrap();
            }
            Op::Sweep { peer } => {
                grouped.sweep_stale(PeerId(peer), &mut cg).unwrap();
                private.sweep_stale(PeerId(peer), &mut cp).unwrap();
            }
            Op::Full { peer } => {
                grouped.export_full(PeerId(peer), &mut pg).unwrap();
                private.export_full(PeerId(peer), &mut pp).unwrap();
            }
            Op::Refresh { peer } => {
                grouped.resend_all(PeerId(peer));
                private.resend_all(PeerId(peer));
                grouped.export_full(PeerId(peer), &mut pg).unwrap();
                private.export_full(PeerId(peer), &mut pp).unwrap();
            }
            Op::Class { peer, class } => {
                pg.class[peer as usize] = class;
                pp.class[peer as usize] = class;
                grouped.export_full(PeerId(peer), &mut pg).unwrap();
                private.export_full(PeerId(peer), &mut pp).unwrap();
            }
            Op::AddPath { peer, on } => {
                let cfg = on.then_some(AddPathSend {
                    ipv4_unicast: true,
                    ipv6_unicast: true,
                    select: PathSelection::All,
                });
                grouped.set_add_path_send(PeerId(peer), cfg).unwrap();
                private.set_add_path_send(PeerId(peer), cfg).unwrap();
                grouped.export_full(PeerId(peer), &mut pg).unwrap();
                private.export_full(PeerId(peer), &mut pp).unwrap();
            }
        }
        check_same(&grouped, &private)?;
    }
    // Whatever is left, drained in full, is the same too.
    grouped.export_changes(&cg, &mut pg);
    private.export_changes(&cp, &mut pp);
    for i in 0..PEERS {
        let x = grouped.drain_updates(PeerId(i));
        let y = private.drain_updates(PeerId(i));
        prop_assert_eq!(resolve(&grouped, &x), resolve(&private, &y));
    }
    check_same(&grouped, &private)?;
    Ok(grouped_rounds)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Grouped peers export exactly what peers with their own table do.
    #[test]
    fn groups_export_what_private_tables_export(
        ops in prop::collection::vec(op(), 1..80),
        class in prop::collection::vec(0..4u8, PEERS as usize),
    ) {
        run(&ops, &class)?;
    }
}

/// The property test is not vacuous: with every peer accepting, the eBGP
/// peers share one group, the iBGP ones another, and rounds run grouped.
#[test]
fn peers_with_one_key_share_a_table() {
    let ops = [
        Op::Announce {
            peer: 0,
            prefix: 0,
            set: 1,
        },
        Op::Announce {
            peer: 1,
            prefix: 1,
            set: 0,
        },
        Op::Export,
        Op::Drain {
            peer: 2,
            max: usize::MAX,
        },
    ];
    let rounds = run(&ops, &[0; PEERS as usize]).unwrap();
    assert_eq!(rounds, 1);
    let (mut s, mut p) = one_group();
    let mut g = s.update_groups();
    g.sort();
    assert_eq!(
        g,
        vec![
            (0..FIRST_IBGP).map(PeerId).collect::<Vec<_>>(),
            (FIRST_IBGP..PEERS).map(PeerId).collect()
        ]
    );
    // A full table towards four eBGP peers: one table, no private ones.
    let mut ch = Vec::new();
    let n: Vec<Nlri> = (0..1000u32)
        .map(|i| {
            Nlri::new(Prefix::V4(
                base::Prefix4::new(0xC600_0000 | i << 8, 24).unwrap(),
            ))
        })
        .collect();
    s.apply_update(
        PeerId(0),
        &n,
        Some(&attrs(0, false)),
        &[],
        &mut bgp_rib::AcceptAll,
        &mut ch,
    )
    .unwrap();
    s.export_changes(&ch, &mut p);
    for i in 0..PEERS {
        assert_eq!(
            s.adj_out_heap_bytes(PeerId(i)).0,
            0,
            "peer {i} keeps no table"
        );
    }
    assert!(s.shared_adj_out_heap_bytes() > 1000 * 12);
    // Peer 0 is the source: not sent its own routes; the others are.
    assert_eq!(s.peer_counts(PeerId(0)).unwrap().advertised, 0);
    assert_eq!(s.peer_counts(PeerId(1)).unwrap().advertised, 1000);
    assert_eq!(s.pending_updates(PeerId(3)), 1000);
    // Peer 1 changes policy: it moves to the key of its new policy with
    // what it was sent (alone there: a private table), and the others see
    // nothing.
    for i in 0..PEERS {
        s.drain_updates(PeerId(i));
    }
    p.class[1] = 1;
    s.export_full(PeerId(1), &mut p).unwrap();
    assert!(s.adj_out_heap_bytes(PeerId(1)).0 > 0, "a private table now");
    let b = s.drain_updates(PeerId(1));
    assert!(b.announce.is_empty());
    assert_eq!(b.withdraw.len(), 0, "198.x: even first octet, kept");
    assert_eq!(s.pending_updates(PeerId(2)), 0);
    assert_eq!(s.peer_counts(PeerId(1)).unwrap().advertised, 1000);
    // Down and up again, alone with its key: a lone peer keeps a private
    // table (9-byte slots, a group's 10-13) until a second peer of the
    // key comes; then its table becomes the group's.
    s.peer_down(PeerId(1), &mut ch).unwrap();
    s.export_full(PeerId(1), &mut p).unwrap();
    assert!(s.adj_out_heap_bytes(PeerId(1)).0 > 0);
    assert!(!s.update_groups().iter().any(|g| g.contains(&PeerId(1))));
    assert_eq!(s.peer_counts(PeerId(1)).unwrap().advertised, 1000);
    assert_eq!(s.drain_updates(PeerId(1)).announce.len(), 1);
    p.class[2] = 1;
    s.peer_down(PeerId(2), &mut ch).unwrap();
    s.export_full(PeerId(2), &mut p).unwrap();
    assert_eq!(
        s.adj_out_heap_bytes(PeerId(1)).0,
        0,
        "its table is the group's"
    );
    assert!(s.update_groups().contains(&vec![PeerId(1), PeerId(2)]));
    assert_eq!(s.peer_counts(PeerId(1)).unwrap().advertised, 1000);
    assert_eq!(s.peer_counts(PeerId(2)).unwrap().advertised, 1000);
    assert_eq!(s.pending_updates(PeerId(1)), 0, "nothing re-sent to it");
}

/// A group's IPv4 slots widen (8, 16, 32 member bits) as members with
/// higher bits join, also after the table holds routes: 40 eBGP peers
/// of one key (a group of 32 and one of 8) joining in steps between
/// announcements, MED rewrites and withdrawals export exactly what 40
/// private tables do.
#[test]
fn wide_groups_export_what_private_tables_export() {
    const N: u16 = 40;
    let new = || {
        let mut s = RibShard::new(BestPathConfig::default());
        for i in 0..N {
            s.add_peer(
                PeerId(i),
                PeerConfig {
                    asn: Asn(65000 + u32::from(i)),
                    bgp_id: Ipv4Addr::new(10, 0, 0, i as u8 + 1),
                    addr: IpAddr::V4(Ipv4Addr::new(198, 18, 9, i as u8 + 1)),
                    ebgp: true,
                    keep_pre_policy: false,
                    export: true,
                },
            );
        }
        s
    };
    let (mut grouped, mut private) = (new(), new());
    let mut pg = ByClass {
        class: vec![2; N as usize],
        groups: true,
    };
    let mut pp = ByClass {
        groups: false,
        ..pg.clone()
    };
    let nlri = |lo: u32, hi: u32| -> Vec<Nlri> {
        (lo..hi)
            .map(|i| {
                Nlri::new(Prefix::V4(
                    base::Prefix4::new(0xC600_0000 | i << 8, 24).unwrap(),
                ))
            })
            .collect()
    };
    let all: Vec<Prefix> = nlri(0, 300).iter().map(|n| n.prefix).collect();
    let same = |g: &mut RibShard, p: &mut RibShard, up: u16| {
        for i in 0..up {
            let (a, b) = (g.drain_updates(PeerId(i)), p.drain_updates(PeerId(i)));
            let count = |b: &ExportBatch| b.announce.iter().map(|(_, v)| v.len()).sum::<usize>();
            assert_eq!(count(&a), count(&b), "peer {i} announcements");
            assert_eq!(a.withdraw, b.withdraw, "peer {i} withdrawals");
            assert_eq!(
                g.peer_counts(PeerId(i)),
                p.peer_counts(PeerId(i)),
                "peer {i}"
            );
            for x in &all {
                assert_eq!(
                    g.adj_out(PeerId(i), x),
                    p.adj_out(PeerId(i), x),
                    "peer {i} {x}"
                );
            }
        }
    };
    let mut up = 0;
    let mut ch = Vec::new();
    for (step, joined) in [(0u32, 3u16), (1, 12), (2, 20), (3, 33), (4, 40)] {
        for i in up..joined {
            grouped.export_full(PeerId(i), &mut pg).unwrap();
            private.export_full(PeerId(i), &mut pp).unwrap();
        }
        up = joined;
        same(&mut grouped, &mut private, up);
        // Peer `step` announces a range (MED on odd steps: rewritten),
        // and withdraws part of the previous step's.
        let from = PeerId(step as u16);
        for (s, pol) in [(&mut grouped, &mut pg), (&mut private, &mut pp)] {
            ch.clear();
            let lo = step * 50;
            s.apply_update(
                from,
                &nlri(lo, lo + 100),
                Some(&attrs(step as usize, false)),
                &[],
                &mut bgp_rib::AcceptAll,
                &mut ch,
            )
            .unwrap();
            if step > 0 {
                let w: Vec<Nlri> = nlri(lo - 50, lo - 25);
                let prev = PeerId(step as u16 - 1);
                s.apply_update(prev, &[], None, &w, &mut bgp_rib::AcceptAll, &mut ch)
                    .unwrap();
            }
            s.export_changes(&ch, pol);
        }
        same(&mut grouped, &mut private, up);
        assert!(grouped.peer_counts(PeerId(up - 1)).unwrap().advertised > 0);
    }
    let mut g = grouped.update_groups();
    g.sort_by_key(Vec::len);
    assert_eq!(g.iter().map(Vec::len).collect::<Vec<_>>(), vec![8, 32]);
    // A high-bit member goes down: the others keep their routes.
    for (s, pol) in [(&mut grouped, &mut pg), (&mut private, &mut pp)] {
        ch.clear();
        s.peer_down(PeerId(31), &mut ch).unwrap();
        s.export_changes(&ch, pol);
    }
    same(&mut grouped, &mut private, N);
}

/// A member with an override, then a group export that folds it back
/// (issue 17: a member's override table is probed only when it is not
/// empty, and the group's entry is read and written with one probe).
/// Peer 2 comes back up while a change of the prefix has not reached
/// peers 1 and 3: its full export gives it the new set as an override.
/// The next export round gives the whole group the new set: peer 2's
/// override folds into its bit without a second announcement, the
/// others are queued, and a withdrawal then reaches everyone. The same
/// operations on private tables give the same batches and Adj-RIBs-Out.
#[test]
fn an_override_folds_back_into_the_group() {
    let x: Prefix = "198.18.0.0/24".parse().unwrap();
    let (mut s, mut p) = one_group();
    let announce = |s: &mut RibShard, set: usize, ch: &mut Vec<Prefix>| {
        let n = [Nlri::new(x)];
        let b = attrs(set, false);
        s.apply_update(PeerId(0), &n, Some(&b), &[], &mut bgp_rib::AcceptAll, ch)
            .unwrap();
    };
    let raw = |s: &RibShard, i: u16| s.adj_out(PeerId(i), &x).map(|a| a.raw().to_vec());
    let mut ch = Vec::new();
    announce(&mut s, 0, &mut ch);
    s.export_changes(&ch, &mut p);
    ch.clear();
    for i in 0..PEERS {
        s.drain_updates(PeerId(i));
    }
    let old = raw(&s, 1).expect("peer 1 was sent the first set");
    // The second set (another AS_PATH: not the same on the wire), not
    // exported yet; peer 2 flaps and is exported to alone.
    announce(&mut s, 3, &mut ch);
    assert_eq!(ch, vec![x]);
    let mut gone = Vec::new();
    s.peer_down(PeerId(2), &mut gone).unwrap();
    assert!(gone.is_empty(), "peer 2 announced nothing");
    s.export_full(PeerId(2), &mut p).unwrap();
    assert!(s.update_groups().iter().any(|g| g.contains(&PeerId(2))));
    let new = raw(&s, 2).expect("peer 2 has the new set");
    assert_ne!(new, old);
    assert_eq!(raw(&s, 1), Some(old.clone()), "peer 1 still has the old");
    assert_eq!(raw(&s, 3), Some(old));
    assert!(s.adj_out_heap_bytes(PeerId(2)).0 > 0, "an override");
    assert_eq!(s.peer_counts(PeerId(2)).unwrap().advertised, 1);
    let b = s.drain_updates(PeerId(2));
    assert_eq!(b.announce.len(), 1);
    assert_eq!(b.announce[0].1, vec![x]);
    // The round that brings the change to the group folds it back.
    s.export_changes(&ch, &mut p);
    for i in 1..=3 {
        assert_eq!(raw(&s, i), Some(new.clone()), "peer {i}");
        assert_eq!(s.peer_counts(PeerId(i)).unwrap().advertised, 1, "peer {i}");
    }
    assert_eq!(s.pending_updates(PeerId(2)), 0, "peer 2 has it already");
    assert_eq!(s.pending_updates(PeerId(1)), 1);
    assert_eq!(s.pending_updates(PeerId(3)), 1);
    assert_eq!(s.pending_updates(PeerId(0)), 0, "the source");
    for i in 0..PEERS {
        s.drain_updates(PeerId(i));
    }
    // A withdrawal reaches every member, peer 2 included: what it has is
    // its bit now, not an override.
    ch.clear();
    let w = [Nlri::new(x)];
    s.apply_update(PeerId(0), &[], None, &w, &mut bgp_rib::AcceptAll, &mut ch)
        .unwrap();
    s.export_changes(&ch, &mut p);
    for i in 1..=3 {
        assert_eq!(raw(&s, i), None, "peer {i}");
        assert_eq!(s.peer_counts(PeerId(i)).unwrap().advertised, 0, "peer {i}");
        assert_eq!(s.drain_updates(PeerId(i)).withdraw, vec![x], "peer {i}");
    }
    // The same operations on private tables: the same batches and
    // Adj-RIBs-Out after every step (`run`).
    let ops = [
        Op::Announce {
            peer: 0,
            prefix: 0,
            set: 0,
        },
        Op::Export,
        Op::Drain {
            peer: 2,
            max: usize::MAX,
        },
        Op::Announce {
            peer: 0,
            prefix: 0,
            set: 3,
        },
        Op::Down { peer: 2 },
        Op::Full { peer: 2 },
        Op::Drain {
            peer: 2,
            max: usize::MAX,
        },
        Op::Export,
        Op::Drain {
            peer: 2,
            max: usize::MAX,
        },
        Op::Withdraw { peer: 0, prefix: 0 },
        Op::Export,
    ];
    assert!(run(&ops, &[0; PEERS as usize]).unwrap() > 0);
}
