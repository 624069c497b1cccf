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
    load_sets(h, now, 20_000)
}

/// The first `sets` attribute sets of [`load`]'s table.
fn load_sets(h: &mut Harness, now: Instant, sets: u32) -> usize {
    let part = h.core.part;
    let mut n = 0;
    for i in 0u32..sets {
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
/// seen, End-of-RIB after the last announcement of the buffer). The
/// session writes nothing: its queued bytes stay counted.
fn take(h: &mut Harness, p: u16) -> (usize, usize, bool) {
    let ctx = ParseCtx::legacy().with_four_octet_asn(true);
    let (mut bytes, mut prefixes, mut eor) = (0, 0, false);
    let outs: Vec<Output> = h.out.out.drain(..).collect();
    for o in outs {
        let Output::Send {
            peer,
            bytes: b,
            markers,
        } = o
        else {
            continue;
        };
        if peer.0 != p {
            continue;
        }
        let mut sent = Vec::new();
        h.status(p)
            .hand_over(b, markers, |b| sent.extend_from_slice(&b));
        bytes += sent.len();
        let mut rest = &sent[..];
        while !rest.is_empty() {
            let (m, len) = Message::parse(rest, ctx).expect("whole messages");
            if let Message::Update(u) = m {
                if u.end_of_rib().is_some() {
                    assert!(!eor, "one End-of-RIB");
                    eor = true;
                } else {
                    assert!(!eor, "nothing after the End-of-RIB");
                    prefixes += u.to_owned().expect("update").nlri.len();
                }
            }
            rest = &rest[len..];
        }
    }
    h.out.notes.clear();
    h.out.best.clear();
    (bytes, prefixes, eor)
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

/// Hands over what the last round gave peer `p` and returns the prefixes
/// announced in it, in order, and the End-of-RIBs seen.
fn take_prefixes(h: &mut Harness, p: u16) -> (usize, Vec<Prefix>, usize) {
    let ctx = ParseCtx::legacy().with_four_octet_asn(true);
    let (mut bytes, mut prefixes, mut eors) = (0, Vec::new(), 0);
    for o in std::mem::take(&mut h.out.out) {
        let Output::Send {
            peer,
            bytes: b,
            markers,
        } = o
        else {
            continue;
        };
        if peer.0 != p {
            continue;
        }
        let mut sent = Vec::new();
        h.status(p)
            .hand_over(b, markers, |b| sent.extend_from_slice(&b));
        bytes += sent.len();
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
    let mut hs: Vec<Harness> = (0..2)
        .map(|index| Harness::new(Part { index, count: 2 }))
        .collect();
    let (first, rest) = hs.split_at_mut(1);
    for n in [1u16, 2] {
        first[0].add_peer(n, &[]);
        // The same session (status) in the second part.
        let meta = first[0].meta(n).clone();
        let st = first[0].status(n).clone();
        rest[0]
            .core
            .insert_peer(PeerId(n), PeerEntry::new(meta.clone(), st.clone()));
        rest[0].metas.push((n, meta));
        rest[0].statuses.push((n, st));
    }
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

/// Many slow sessions (issue 17, scenario (c30): every peer receives the
/// table and reads slower than the RIB encodes) share
/// [`bgp_core::OUT_QUEUE_BUDGET`]: each is handed at most its share
/// ([`bgp_core::session_queue_limit`], one drain step beyond it), none is
/// starved, its writer is told to wake the RIB at a quarter of its share,
/// and each still gets the whole table, every prefix once, End-of-RIB
/// last. With the budget lifted (`u64::MAX`) every session may fill the
/// whole [`OUT_QUEUE_LIMIT`] again, several times the budget in all.
#[test]
fn many_slow_sessions_share_the_budget_of_unwritten_bytes() {
    use bgp_core::{session_queue_limit, OUT_QUEUE_BUDGET, OUT_QUEUE_FLOOR};
    const RECEIVERS: u16 = 12;
    const STEP: u64 = 64 * 1024;
    let first_round = |budget: u64| {
        let now = Instant(0);
        let mut h = Harness::new(bgp_core::Part::WHOLE);
        h.core.queue_budget = budget;
        for n in 1..=RECEIVERS + 1 {
            h.add_peer(n, &[]);
        }
        h.up(now, 1, &[]);
        h.core.propagate(now, &mut h.out);
        // 160k prefixes, about 1.2 MB of UPDATEs per session.
        let total = load_sets(&mut h, now, 8_000);
        h.core.propagate(now, &mut h.out);
        h.out.clear();
        for n in 2..=RECEIVERS + 1 {
            h.up(now, n, &[]);
        }
        h.core.propagate(now, &mut h.out);
        let got: Vec<(u64, Vec<Prefix>)> = take_each(&mut h, RECEIVERS + 1)
            .into_iter()
            .skip(2)
            .map(|(b, p, eors)| {
                assert_eq!(eors, 0, "no End-of-RIB in the first part");
                (b as u64, p)
            })
            .collect();
        (h, total, got)
    };

    // The earlier bound: each of the 12 sessions fills about 1 MiB.
    let (_, _, old) = first_round(u64::MAX);
    let old_sum: u64 = old.iter().map(|(b, _)| b).sum();
    assert!(
        old_sum > 2 * OUT_QUEUE_BUDGET,
        "{old_sum} bytes without the budget"
    );

    let (mut h, total, got) = first_round(OUT_QUEUE_BUDGET);
    let limit = session_queue_limit(OUT_QUEUE_BUDGET, RECEIVERS as usize);
    assert!(
        limit < OUT_QUEUE_LIMIT && limit >= OUT_QUEUE_FLOOR,
        "{limit}"
    );
    let sum: u64 = got.iter().map(|(b, _)| b).sum();
    for (i, (b, _)) in got.iter().enumerate() {
        assert!(*b > 0, "session {} starved", i + 2);
        assert!(
            *b <= limit + STEP,
            "session {}: {b} bytes, limit {limit}",
            i + 2
        );
    }
    assert!(
        sum <= OUT_QUEUE_BUDGET + u64::from(RECEIVERS) * STEP,
        "{sum} bytes handed over in one round"
    );
    // The writer wakes the RIB at a quarter of the session's bound.
    let st = h.status(2).clone();
    assert_eq!(st.out_low_mark.load(Ordering::Relaxed), limit / 4);
    let queued = st.out_queued_bytes.load(Ordering::Relaxed);
    assert!(st.unqueue(queued - limit / 4 + 1), "crossing reported");
    assert!(!st.unqueue(1), "once");

    // Writers drain; every session gets the whole table, every prefix
    // once, with its End-of-RIB last, and never more than its bound at a
    // time.
    let mut counts: Vec<(BTreeSet<Prefix>, usize, usize)> = got
        .into_iter()
        .map(|(_, p)| (p.iter().copied().collect(), p.len(), 0))
        .collect();
    let mut rounds = 0;
    while counts.iter().any(|c| c.2 == 0) {
        for n in 2..=RECEIVERS + 1 {
            h.status(n).out_queued_bytes.store(0, Ordering::Relaxed);
        }
        h.core.propagate(now_of(rounds), &mut h.out);
        let each = take_each(&mut h, RECEIVERS + 1);
        for (n, (b, p, eors)) in each.into_iter().enumerate().skip(2) {
            let c = &mut counts[n - 2];
            assert!(b as u64 <= OUT_QUEUE_LIMIT + STEP, "{b}");
            assert!(c.2 == 0 || p.is_empty(), "nothing after the End-of-RIB");
            c.1 += p.len();
            c.0.extend(p);
            c.2 += eors;
        }
        rounds += 1;
        assert!(rounds < 1000, "bounded");
    }
    for (i, (set, n, eors)) in counts.iter().enumerate() {
        assert_eq!(
            (set.len(), *n, *eors),
            (total, total, 1),
            "session {}",
            i + 2
        );
    }
    assert!(!h.core.export_backlog());
}

fn now_of(round: u32) -> Instant {
    Instant(u64::from(round) * 1_000_000)
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
