//! The order a peer's pending changes are drained in (issue 17, scenario
//! (c10); `Pending` in `src/adjout.rs`): oldest first, so that a drain
//! step of a large backlog holds prefixes queued together (neighbours of
//! one export round, mostly from the same received UPDATEs) and packs
//! them into few UPDATEs. Taken in hash order, a step was a random sample
//! of the backlog and nearly every prefix went out in an UPDATE of its
//! own; these tests fail that way.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix, Prefix4};
use bgp_rib::{AcceptAll, AttrsBuilder, BestPathConfig, PeerConfig, PeerId, RibShard};
use bgp_wire::{AsPath, AttrValue, Nlri, Origin, PathAttr};

/// Runs of this many neighbouring prefixes share an attribute set.
const RUN: u32 = 16;
/// Attribute sets (runs) in the table.
const SETS: u32 = 256;
/// Prefixes taken per drain step.
const STEP: usize = 256;

fn peer_cfg(i: u16) -> PeerConfig {
    PeerConfig {
        asn: Asn(65000 + u32::from(i)),
        bgp_id: Ipv4Addr::new(10, 0, 0, i as u8 + 1),
        addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, i as u8 + 1)),
        ebgp: true,
        keep_pre_policy: false,
        export: i == 1,
    }
}

/// A set per run: the AS path differs.
fn attrs(set: u32) -> AttrsBuilder {
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![
            Asn(65000),
            Asn(64512 + set),
        ]))),
        PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 200))),
    ]);
    b.mark_clean();
    b
}

/// The `k`-th /24 of 198.18.0.0/15 (k < 512).
fn p24(k: u32) -> Prefix {
    Prefix::V4(Prefix4::new(0xc612_0000 | (k << 8), 24).unwrap())
}

/// Peer 0 announces `prefixes` in runs of [`RUN`] per set (set = index /
/// RUN, offset by `first_set`), one UPDATE per run; returns the changes.
fn announce(s: &mut RibShard, prefixes: &[Prefix], first_set: u32) -> Vec<Prefix> {
    let mut ch = Vec::new();
    for (i, run) in prefixes.chunks(RUN as usize).enumerate() {
        let n: Vec<Nlri> = run.iter().map(|p| Nlri::new(*p)).collect();
        let b = attrs(first_set + i as u32);
        s.apply_update(PeerId(0), &n, Some(&b), &[], &mut AcceptAll, &mut ch)
            .unwrap();
    }
    ch.sort_unstable();
    ch.dedup();
    ch
}

fn shard() -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    s.add_peer(PeerId(0), peer_cfg(0));
    s.add_peer(PeerId(1), peer_cfg(1));
    s
}

#[test]
fn a_backlog_drains_in_steps_of_whole_runs() {
    let mut s = shard();
    let all: Vec<Prefix> = (0..RUN * SETS / 8).map(p24).collect();
    // Several export rounds before the first drain: a backlog, as behind
    // a socket slower than the RIB.
    let mut seen = HashSet::new();
    for (r, part) in all.chunks(all.len() / 4).enumerate() {
        let ch = announce(&mut s, part, (r * part.len()) as u32 / RUN);
        s.export_changes(&ch, &mut AcceptAll);
    }
    assert_eq!(s.pending_updates(PeerId(1)), all.len());
    let mut steps = 0;
    loop {
        let b = s.drain_updates_max(PeerId(1), STEP);
        if b.is_empty() {
            break;
        }
        steps += 1;
        let n: usize = b.announce.iter().map(|(_, v)| v.len()).sum();
        assert_eq!(n, STEP.min(all.len() - seen.len()));
        // Whole runs: one group (one UPDATE) per RUN prefixes; in hash
        // order nearly every prefix was a group of its own.
        assert_eq!(b.announce.len(), n / RUN as usize, "step {steps}");
        for (_, v) in &b.announce {
            assert_eq!(v.len(), RUN as usize);
            for p in v {
                assert!(seen.insert(*p), "{p} drained twice");
            }
        }
    }
    assert_eq!(seen.len(), all.len());
    assert_eq!(steps, all.len() / STEP);
}

#[test]
fn older_changes_drain_first_whatever_their_prefix() {
    let mut s = shard();
    // Round 1 queues the upper half of the range, round 2 the lower half:
    // round 1's prefixes leave first.
    let upper: Vec<Prefix> = (256..512).map(p24).collect();
    let lower: Vec<Prefix> = (0..256).map(p24).collect();
    let ch = announce(&mut s, &upper, 0);
    s.export_changes(&ch, &mut AcceptAll);
    let ch = announce(&mut s, &lower, 100);
    s.export_changes(&ch, &mut AcceptAll);
    let first = s.drain_updates_max(PeerId(1), 256);
    let got: HashSet<Prefix> = first
        .announce
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    assert_eq!(got, upper.iter().copied().collect::<HashSet<_>>());
    // A prefix changed again while pending keeps its place and is sent
    // once, in its state at drain time.
    let ch = announce(&mut s, &lower[..RUN as usize], 200);
    s.export_changes(&ch, &mut AcceptAll);
    assert_eq!(s.pending_updates(PeerId(1)), lower.len());
    let rest = s.drain_updates_max(PeerId(1), 1024);
    let n: usize = rest.announce.iter().map(|(_, v)| v.len()).sum();
    assert_eq!(n, lower.len());
    assert_eq!(rest.announce.len(), lower.len() / RUN as usize);
    assert!(s.drain_updates_max(PeerId(1), 1024).is_empty());
}
