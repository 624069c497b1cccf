//! Pull export (docs/adr/0004): a flush encodes no more than the room left
//! in the session's queue of encoded bytes ([`bgp_core::OUT_QUEUE_LIMIT`]);
//! the rest stays queued as prefixes and goes out, in full and with the
//! End-of-RIB last, as the session drains.

mod common;

use std::sync::atomic::Ordering;

use std::collections::BTreeSet;

use base::{Instant, Prefix};
use bgp_core::{Output, Part, PeerEntry, OUT_QUEUE_LIMIT, OUT_QUEUE_LOW};
use bgp_rib::PeerId;
use bgp_wire::{Message, ParseCtx};
use common::Harness;

/// 20000 attribute sets (AS paths 65001 100000..119999) of 20 /32s each: 400k prefixes,
/// about 3 MB of UPDATEs, several times what the queue may hold.
fn load(h: &mut Harness, now: Instant) -> usize {
    let part = h.core.part;
    let mut n = 0;
    for i in 0u32..20_000 {
        let prefixes: Vec<Prefix> = (0..20u32)
            .map(|j| {
                let k = i * 20 + j;
                let a = std::net::Ipv4Addr::new(10, (k >> 16) as u8, (k >> 8) as u8, k as u8);
                // /32s keep every prefix distinct (k < 2^24).
                Prefix::new(std::net::IpAddr::V4(a), 32).expect("prefix")
            })
            // A part of a split RIB gets its own prefixes (as the runtime
            // splits each batch).
            .filter(|p| part.owns(p))
            .collect();
        if prefixes.is_empty() {
            continue;
        }
        n += prefixes.len();
        h.announce(now, 1, &prefixes, &[&format!("path=65001,{}", 100_000 + i)]);
    }
    n
}

/// What one round handed peer `p`: (bytes, prefixes announced, End-of-RIB
/// seen, with nothing after it). The session writes nothing: its queued
/// bytes stay counted.
fn take(h: &mut Harness, p: u16) -> (usize, usize, bool) {
    let (bytes, prefixes, eors) = take_prefixes(h, p);
    assert!(eors <= 1, "one End-of-RIB");
    (bytes, prefixes.len(), eors == 1)
}

#[test]
fn a_slow_session_gets_its_table_in_parts_with_the_end_of_rib_last() {
    let now = Instant(0);
    let mut h = Harness::new(bgp_core::Part::WHOLE);
    h.add_peer(1, &[]);
    h.add_peer(2, &[]);
    h.up(now, 1, &[]);
    h.core.propagate(now, &mut h.out);
    let total = load(&mut h, now);
    h.core.propagate(now, &mut h.out);
    h.out.out.clear();
    // Peer 2 comes up with the table in place: the whole table, then its
    // End-of-RIB.
    h.up(now, 2, &[]);
    h.core.propagate(now, &mut h.out);
    let (b, mut got, eor) = take(&mut h, 2);
    assert!(b > 0 && got > 0 && !eor, "first part, no End-of-RIB yet");
    assert!(h.core.export_backlog());
    // The first part fills the room (one step of 1024 prefixes may go
    // beyond it), far from the whole table.
    assert!(
        b as u64 <= OUT_QUEUE_LIMIT + 200_000,
        "{b} bytes handed over"
    );
    assert!(got < total / 2, "{got} of {total}");
    let queued = h.status(2).out_queued_bytes.load(Ordering::Relaxed);
    assert_eq!(queued, b as u64);
    // Nothing more while the queue is full.
    h.core.propagate(now, &mut h.out);
    assert_eq!(take(&mut h, 2), (0, 0, false));
    // The writer drains; it reports the crossing of the low mark once.
    assert!(h.status(2).unqueue(queued - OUT_QUEUE_LOW + 1));
    assert!(!h.status(2).unqueue(1));
    let mut rounds = 1;
    let mut seen_eor = false;
    while !seen_eor {
        h.status(2).out_queued_bytes.store(0, Ordering::Relaxed);
        h.core.propagate(now, &mut h.out);
        let (b, n, eor) = take(&mut h, 2);
        assert!(b > 0, "a round with room always makes progress");
        got += n;
        seen_eor = eor;
        rounds += 1;
        assert!(rounds < 100, "bounded");
    }
    assert_eq!(got, total, "every prefix once, the End-of-RIB last");
    assert!(!h.core.export_backlog());
    assert!(rounds >= 3, "{rounds} parts");
}

/// Two RIB parts of one daemon, each with sessions `peers`: the same
/// sessions (meta and status) in both parts.
fn two_parts_of_sessions(peers: impl IntoIterator<Item = u16>) -> Vec<Harness> {
    let mut hs: Vec<Harness> = (0..2)
        .map(|index| Harness::new(Part { index, count: 2 }))
        .collect();
    let (first, rest) = hs.split_at_mut(1);
    for n in peers {
        first[0].add_peer(n, &[]);
        let meta = first[0].meta(n).clone();
        let st = first[0].status(n).clone();
        rest[0]
            .core
            .insert_peer(PeerId(n), PeerEntry::new(meta.clone(), st.clone()));
        rest[0].metas.push((n, meta));
        rest[0].statuses.push((n, st));
    }
    hs
}

/// Hands over what the last round gave peer `p` and returns the prefixes
/// announced in it, in order, and the End-of-RIBs seen.
fn take_prefixes(h: &mut Harness, p: u16) -> (usize, Vec<Prefix>, usize) {
    let ctx = ParseCtx::legacy().with_four_octet_asn(true);
    let (mut prefixes, mut eors) = (Vec::new(), 0);
    let sent = h.handed_to(p);
    let bytes = sent.len();
    let mut rest = &sent[..];
    while !rest.is_empty() {
        let (m, len) = Message::parse(rest, ctx).expect("whole messages");
        if let Message::Update(u) = m {
            if u.end_of_rib().is_some() {
                eors += 1;
            } else {
                assert_eq!(eors, 0, "nothing after this part's End-of-RIB");
                let u = u.to_owned().expect("update");
                prefixes.extend(u.nlri.iter().map(|n| n.prefix));
            }
        }
        rest = &rest[len..];
    }
    h.out.clear();
    (bytes, prefixes, eors)
}

/// Two RIB parts (two shard threads in the daemon) export to one session
/// and read one count of its unwritten bytes. Both may flush before
/// either's bytes are counted: each hands over at most the room (one
/// drain step beyond it), and the table arrives
/// whole, every prefix once, each part's End-of-RIB after its prefixes.
#[test]
fn two_parts_of_one_session_each_fill_at_most_the_room() {
    let now = Instant(0);
    let mut hs = two_parts_of_sessions([1u16, 2]);
    let mut total = 0;
    for h in &mut hs {
        h.up(now, 1, &[]);
        h.core.propagate(now, &mut h.out);
        total += load(h, now);
        h.core.propagate(now, &mut h.out);
        h.out.clear();
    }
    assert_eq!(total, 400_000);
    for h in &mut hs {
        h.up(now, 2, &[]);
    }
    // Both parts flush against the same empty queue, then hand over.
    for h in &mut hs {
        h.core.propagate(now, &mut h.out);
    }
    let mut got = BTreeSet::new();
    let mut first_round = 0;
    for h in &mut hs {
        let (b, p, eors) = take_prefixes(h, 2);
        assert!(b > 0 && eors == 0, "a first part, no End-of-RIB yet");
        first_round += b;
        got.extend(p);
    }
    // One drain step (1024 prefixes, here about 40 KB) per part may go
    // beyond the room; the parts do not see each other's bytes.
    assert!(
        first_round as u64 <= 2 * (OUT_QUEUE_LIMIT + 64 * 1024),
        "{first_round} bytes handed over in one round by two parts"
    );
    let queued = hs[0].status(2).out_queued_bytes.load(Ordering::Relaxed);
    assert_eq!(queued, first_round as u64);
    // The writer drains; every prefix arrives once, each part's
    // End-of-RIB after its last prefix.
    let mut count = got.len();
    let mut eors = 0;
    let mut rounds = 0;
    while eors < 2 {
        hs[0].status(2).out_queued_bytes.store(0, Ordering::Relaxed);
        let mut round = 0;
        for h in &mut hs {
            h.core.propagate(now, &mut h.out);
        }
        for h in &mut hs {
            let (b, p, e) = take_prefixes(h, 2);
            round += b;
            count += p.len();
            got.extend(p);
            eors += e;
        }
        assert!(round > 0, "a round with room always makes progress");
        assert!(round as u64 <= 2 * (OUT_QUEUE_LIMIT + 64 * 1024), "{round}");
        rounds += 1;
        assert!(rounds < 1000, "bounded");
    }
    assert_eq!(count, total, "no prefix twice");
    assert_eq!(got.len(), total, "every prefix");
    assert!(hs.iter().all(|h| !h.core.export_backlog()));
}

/// One attribute set per prefix (scenario (c30)'s unique paths, which do
/// not pack): `n` /32s with AS paths 65001 200000.., about 65 bytes of
/// UPDATE each.
/// The `k`-th host route of 11.0.0.0/8.
fn host_prefix(k: u32) -> Prefix {
    let a = std::net::Ipv4Addr::new(11, (k >> 16) as u8, (k >> 8) as u8, k as u8);
    Prefix::new(std::net::IpAddr::V4(a), 32).expect("prefix")
}

fn load_unique(h: &mut Harness, now: Instant, n: u32) -> usize {
    let part = h.core.part;
    let mut count = 0;
    for k in 0..n {
        let p = host_prefix(k);
        if !part.owns(&p) {
            continue;
        }
        count += 1;
        h.announce(now, 1, &[p], &[&format!("path=65001,{}", 200_000 + k)]);
    }
    count
}

/// More than [`bgp_core::CROWDED_SESSIONS`] busy sessions over two RIB
/// parts (scenario (c30): 31 sessions, 2 shard threads): each part fills
/// only its share of a session's room, so both parts together hand a
/// session about [`OUT_QUEUE_LIMIT`] per round, not one limit each; every
/// session still gets every prefix once, each part's End-of-RIB last.
#[test]
fn crowded_sessions_get_one_limit_from_all_parts_together() {
    use bgp_core::CROWDED_SESSIONS;
    const STEP: u64 = 80 * 1024;
    let receivers = CROWDED_SESSIONS as u16 + 1;
    let now = Instant(0);
    let mut hs = two_parts_of_sessions(1..=receivers + 1);
    let mut total = 0;
    for h in &mut hs {
        h.up(now, 1, &[]);
        h.core.propagate(now, &mut h.out);
        // 40k prefixes, about 2.6 MB of UPDATEs per session: more than
        // one limit per part.
        total += load_unique(h, now, 40_000);
        h.core.propagate(now, &mut h.out);
        h.out.clear();
    }
    assert_eq!(total, 40_000);
    for h in &mut hs {
        for n in 2..=receivers + 1 {
            h.up(now, n, &[]);
        }
    }
    for h in &mut hs {
        h.core.propagate(now, &mut h.out);
    }
    let mut got: Vec<(BTreeSet<Prefix>, usize, usize)> =
        (0..=receivers + 1).map(|_| Default::default()).collect();
    let mut first_round = vec![0u64; usize::from(receivers) + 2];
    for h in &mut hs {
        for (n, (b, p, e)) in take_each(h, receivers + 1).into_iter().enumerate() {
            first_round[n] += b as u64;
            got[n].1 += p.len();
            got[n].0.extend(p);
            got[n].2 += e;
        }
    }
    for (n, &b) in first_round.iter().enumerate().skip(2) {
        assert!(b > 0, "session {n} starved");
        assert!(
            b <= OUT_QUEUE_LIMIT + 2 * STEP,
            "session {n}: {b} bytes from two parts in one round"
        );
    }
    // The writers drain; every session gets its table.
    let mut rounds = 0;
    while got.iter().skip(2).any(|g| g.2 < 2) {
        for h in &hs {
            for n in 2..=receivers + 1 {
                h.status(n).out_queued_bytes.store(0, Ordering::Relaxed);
            }
        }
        for h in &mut hs {
            h.core.propagate(now, &mut h.out);
        }
        for h in &mut hs {
            for (n, (_, p, e)) in take_each(h, receivers + 1).into_iter().enumerate() {
                got[n].1 += p.len();
                got[n].0.extend(p);
                got[n].2 += e;
            }
        }
        rounds += 1;
        assert!(rounds < 1000, "bounded");
    }
    for (n, (set, count, eors)) in got.iter().enumerate().skip(2) {
        assert_eq!((set.len(), *count, *eors), (total, total, 2), "session {n}");
    }
}

/// [`take_prefixes`] for every peer 0..=`last` at once, by peer id.
fn take_each(h: &mut Harness, last: u16) -> Vec<(usize, Vec<Prefix>, usize)> {
    let mut by_peer: Vec<Vec<Output>> = (0..=last).map(|_| Vec::new()).collect();
    for o in std::mem::take(&mut h.out.out) {
        if let Output::Send { peer, .. } = &o {
            if let Some(v) = by_peer.get_mut(usize::from(peer.0)) {
                v.push(o);
            }
        }
    }
    let mut each = Vec::new();
    for (n, outs) in by_peer.into_iter().enumerate() {
        h.out.out = outs;
        each.push(take_prefixes(h, n as u16));
    }
    each
}

/// A core wants its export round once [`bgp_core::NEW_PREFIX_ROUND`]
/// best-path changes of new prefixes wait (`RibCore::round_due`, which the
/// RIB thread obeys instead of its pacer): nearly all new with few
/// sessions, at least half with more than [`bgp_core::CROWDED_SESSIONS`]
/// busy ones; changes of known prefixes are left to the pacer however
/// many wait.
#[test]
fn a_core_wants_its_round_of_new_prefixes_at_a_size() {
    use bgp_core::{CROWDED_SESSIONS, NEW_PREFIX_ROUND};
    for receivers in [1, CROWDED_SESSIONS as u16 + 1] {
        let crowded = usize::from(receivers) > CROWDED_SESSIONS;
        let now = Instant(0);
        let mut hs = two_parts_of_sessions(1..=receivers + 1);
        // The part that owns the prefixes below (11.0.0.0/20).
        let first = host_prefix(0);
        let owner = usize::from(!hs[0].core.part.owns(&first));
        let h = &mut hs[owner];
        for n in 1..=receivers + 1 {
            h.up(now, n, &[]);
        }
        h.core.propagate(now, &mut h.out);
        // A table nobody reads: every receiver keeps bytes unwritten.
        let loaded = load_unique(h, now, 4_000);
        assert!(loaded > NEW_PREFIX_ROUND, "{loaded}");
        h.core.propagate(now, &mut h.out);
        assert_eq!(h.core.pending_changes(), 0);
        assert!(!h.core.round_due(), "nothing waits");
        // New prefixes (11.0.16.0 and up): one change each.
        let mut changed = 0;
        for k in 4_096..8_096u32 {
            let p = host_prefix(k);
            if !h.core.part.owns(&p) {
                continue;
            }
            assert_eq!(
                h.core.round_due(),
                changed >= NEW_PREFIX_ROUND,
                "{receivers} receivers, {changed} changes"
            );
            h.announce(now, 1, &[p], &[&format!("path=65001,{}", 200_000 + k)]);
            changed += 1;
            assert_eq!(h.core.pending_changes(), changed);
        }
        assert!(changed >= NEW_PREFIX_ROUND, "{changed}");
        assert!(h.core.round_due(), "{receivers} receivers");
        // Known prefixes changing (a longer path): left to the pacer,
        // which coalesces them, however many wait.
        h.core.propagate(now, &mut h.out);
        let mut changed = 0;
        for k in 0..4_000u32 {
            let p = host_prefix(k);
            if !h.core.part.owns(&p) {
                continue;
            }
            h.announce(
                now,
                1,
                &[p],
                &[&format!("path=65001,65009,{}", 200_000 + k)],
            );
            changed += 1;
        }
        assert_eq!(h.core.pending_changes(), changed);
        assert!(changed >= NEW_PREFIX_ROUND);
        assert!(!h.core.round_due(), "{receivers} receivers, known prefixes");
        // Mixed: due once the new prefixes are at least 7/8 of what waits,
        // or half in a crowded core.
        let cases = [
            (1_000, 1_000, crowded),
            (1_000, 1_001, false),
            (875, 125, true),
            (874, 126, crowded),
        ];
        for (i, (new_n, known_n, due)) in cases.into_iter().enumerate() {
            h.core.propagate(now, &mut h.out);
            let owned = |k: &u32| h.core.part.owns(&host_prefix(*k));
            // New prefixes: each case its own (11.1.0.0, 11.2.0.0, ...).
            let from = 65_536 * (i as u32 + 1);
            let new: Vec<u32> = (from..).filter(owned).take(new_n).collect();
            let known: Vec<u32> = (0..4_000).filter(owned).take(known_n).collect();
            for k in known {
                let path = format!("path=65001,{},{}", 65_100 + i, 200_000 + k);
                h.announce(now, 1, &[host_prefix(k)], &[path.as_str()]);
            }
            for k in new {
                let path = format!("path=65001,{}", 300_000 + k);
                h.announce(now, 1, &[host_prefix(k)], &[path.as_str()]);
            }
            assert_eq!(h.core.pending_changes(), new_n + known_n);
            assert_eq!(
                h.core.round_due(),
                due,
                "{receivers} receivers: {new_n} new, {known_n} known"
            );
        }
    }
}
