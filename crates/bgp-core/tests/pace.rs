//! Export round pacing ([`bgp_core::RoundPacer`], issue 17 scenario (h)):
//! a [`bgp_core::RibCore`] driven on a virtual clock the way the daemon's
//! RIB thread drives it (`bgp_speaker::rib::run`: apply what has arrived,
//! run an export round when the pacer allows, otherwise wait for more
//! input or the pacer's deadline), with modelled costs for applying an
//! UPDATE and for a round.
//!
//! * A sparse trickle (one UPDATE every 2 ms, cheap rounds) is exported
//!   as it comes; a dense one (every 200 µs) waits at most
//!   [`bgp_core::ROUND_FLOOR`]. Under the earlier fixed 5 ms spacing these
//!   changes waited 2-2.5 ms on average.
//! * A load (three feeders announcing the same prefixes, one UPDATE every
//!   10 µs, rounds costing 100 µs plus 2 µs a change) is still coalesced:
//!   each prefix goes out about once, not three times, and an expensive
//!   round is followed by the whole [`bgp_core::ROUND_MIN`].

mod common;

use std::collections::HashMap;
use std::time::Duration;

use base::{Instant, Prefix};
use bgp_core::{Output, RoundPacer, ROUND_FLOOR, ROUND_MIN};
use bgp_wire::{Message, ParseCtx};
use common::Harness;

const CLIENT: u16 = 9;

/// One arrival: at time `t` (ns), feeder `f` announces `p` with an AS path
/// of `len` hops.
struct Arrival {
    t: u64,
    f: u16,
    p: Prefix,
    len: usize,
}

/// What the client received: per prefix announced, the latency from the
/// prefix's latest arrival; and the rounds (start, end, cost).
#[derive(Default)]
struct Run {
    latencies: Vec<Duration>,
    announced: usize,
    rounds: Vec<(u64, u64, Duration)>,
}

fn prefix(i: usize) -> Prefix {
    common::prefix(&format!("10.{}.{}.0/24", i / 256, i % 256))
}

/// Drives `arrivals` (in time order) through a core with feeders 1..=3 and
/// one client, the RIB thread's loop on a virtual clock.
fn drive(
    arrivals: &[Arrival],
    apply_cost: Duration,
    round_cost: impl Fn(usize) -> Duration,
) -> Run {
    let mut h = Harness::new(bgp_core::Part::WHOLE);
    for f in 1..=3 {
        h.add_peer(f, &["export=reject"]);
        h.up(Instant(0), f, &[]);
    }
    h.add_peer(CLIENT, &[]);
    h.up(Instant(0), CLIENT, &[]);
    h.core.propagate(Instant(0), &mut h.out);
    h.out.out.clear();

    let mut pacer = RoundPacer::new();
    let mut now: u64 = 1_000_000;
    let mut dirty = false;
    let mut last_arrival: HashMap<Prefix, u64> = HashMap::new();
    let mut run = Run::default();
    let mut next = 0;
    let ns = |d: Duration| u64::try_from(d.as_nanos()).expect("short durations");
    loop {
        let arrival_t = arrivals.get(next).map(|a| a.t);
        // Waiting: a round when the pacer's deadline comes before the
        // next input; otherwise sleep until the input.
        if dirty {
            let due = pacer.due().map_or(now, |d| d.as_nanos()).max(now);
            if arrival_t.is_none_or(|t| due < t.max(now)) {
                now = due;
                let changes = h.core.pending_changes();
                let start = now;
                h.core.propagate(Instant(now), &mut h.out);
                let cost = round_cost(changes);
                now += ns(cost);
                pacer.round_done(Instant(now), cost);
                run.rounds.push((start, now, cost));
                dirty = false;
                collect(&mut h, now, &last_arrival, &mut run);
                continue;
            }
        }
        let Some(t) = arrival_t else { break };
        now = now.max(t);
        // A burst: everything that has arrived by now.
        while let Some(a) = arrivals.get(next).filter(|a| a.t <= now) {
            let path: Vec<String> = (0..a.len).map(|k| (64600 + k).to_string()).collect();
            let path = format!("path={}", path.join(","));
            h.announce(Instant(now), a.f, &[a.p], &[&path]);
            last_arrival.insert(a.p, a.t);
            now += ns(apply_cost);
            next += 1;
        }
        dirty = true;
        if pacer.ready(Instant(now)) {
            let changes = h.core.pending_changes();
            let start = now;
            h.core.propagate(Instant(now), &mut h.out);
            let cost = round_cost(changes);
            now += ns(cost);
            pacer.round_done(Instant(now), cost);
            run.rounds.push((start, now, cost));
            dirty = false;
            collect(&mut h, now, &last_arrival, &mut run);
        }
    }
    run
}

/// The client reads what the round produced at `now`.
fn collect(h: &mut Harness, now: u64, last: &HashMap<Prefix, u64>, run: &mut Run) {
    let ctx = ParseCtx::legacy().with_four_octet_asn(true);
    for o in h.out.out.drain(..) {
        let Output::Send { peer, bytes, .. } = o else {
            continue;
        };
        if peer.0 != CLIENT {
            continue;
        }
        let buf: Vec<u8> = bytes.iter().flat_map(|b| b.iter().copied()).collect();
        let mut rest = &buf[..];
        while !rest.is_empty() {
            let (m, len) = Message::parse(rest, ctx).expect("whole messages");
            if let Message::Update(u) = m {
                let u = u.to_owned().expect("update");
                for n in &u.nlri {
                    run.announced += 1;
                    let t = last.get(&n.prefix).expect("a prefix that arrived");
                    run.latencies.push(Duration::from_nanos(now - t));
                }
            }
            rest = &rest[len..];
        }
    }
    h.out.notes.clear();
    h.out.best.clear();
    h.out.samples.clear();
}

fn quantile(v: &[Duration], q: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) as f64 * q) as usize]
}

#[test]
fn sparse_trickle_is_exported_at_once() {
    // One UPDATE every 2 ms, a fresh prefix each: input less often than
    // ROUND_FLOOR never waits for a round.
    let arrivals: Vec<Arrival> = (0..300)
        .map(|i| Arrival {
            t: 2_000_000 + i as u64 * 2_000_000,
            f: 1,
            p: prefix(i),
            len: 2,
        })
        .collect();
    let run = drive(&arrivals, Duration::from_micros(20), |n| {
        Duration::from_micros(10 + n as u64)
    });
    assert_eq!(run.announced, 300, "every prefix reached the client");
    let max = quantile(&run.latencies, 1.0);
    // Apply (20 µs) plus one round (11 µs), nothing on top. The fixed
    // 5 ms spacing made these wait up to 4 ms (median 2 ms).
    assert!(max <= Duration::from_micros(40), "max {max:?}");
    assert_eq!(run.rounds.len(), 300, "one round per UPDATE");
}

#[test]
fn dense_trickle_waits_at_most_the_floor() {
    // One UPDATE every 200 µs (scenario (h)'s rate per shard is a few
    // thousand a second), cheap rounds.
    let arrivals: Vec<Arrival> = (0..500)
        .map(|i| Arrival {
            t: 2_000_000 + i as u64 * 200_000,
            f: 1,
            p: prefix(i),
            len: 2,
        })
        .collect();
    let run = drive(&arrivals, Duration::from_micros(20), |n| {
        Duration::from_micros(10 + n as u64)
    });
    assert_eq!(run.announced, 500, "every prefix reached the client");
    let p50 = quantile(&run.latencies, 0.5);
    let max = quantile(&run.latencies, 1.0);
    // Rounds every ROUND_FLOOR: a change waits half of it on average. The
    // fixed 5 ms spacing gave a median of about 2.5 ms here.
    assert!(p50 <= Duration::from_micros(700), "p50 {p50:?}");
    assert!(
        max <= ROUND_FLOOR + Duration::from_micros(100),
        "max {max:?}"
    );
    // About one round per ROUND_FLOOR over the 100 ms, not one per UPDATE.
    assert!(
        run.rounds.len() <= 110,
        "{} rounds for 500 UPDATEs in 100 ms",
        run.rounds.len()
    );
}

#[test]
fn load_is_coalesced_and_spaced() {
    // Three feeders announce the same 2000 prefixes, one UPDATE every
    // 10 µs, each later path shorter (it wins): a round per UPDATE would
    // send every prefix three times.
    let mut arrivals = Vec::new();
    for i in 0..2000 {
        for f in 1..=3u16 {
            arrivals.push(Arrival {
                t: 2_000_000 + (i as u64 * 3 + u64::from(f) - 1) * 10_000,
                f,
                p: prefix(i),
                len: 5 - usize::from(f),
            });
        }
    }
    let run = drive(&arrivals, Duration::from_micros(5), |n| {
        Duration::from_micros(100 + 2 * n as u64)
    });
    // Every prefix out, in its last state, about once.
    assert!(
        run.announced >= 2000 && run.announced <= 2200,
        "{} prefixes announced to the client for 2000",
        run.announced
    );
    // The rule itself: each round starts no earlier than the spacing the
    // one before earned, and an expensive round earns all of ROUND_MIN.
    for w in run.rounds.windows(2) {
        let (_, end, cost) = w[0];
        let (start, _, _) = w[1];
        let gap = Duration::from_nanos(start - end);
        assert!(
            gap >= RoundPacer::spacing_for(cost),
            "gap {gap:?} after {cost:?}"
        );
        if cost >= ROUND_MIN / bgp_core::ROUND_COST_FACTOR {
            assert!(gap >= ROUND_MIN, "gap {gap:?} after an expensive round");
        }
    }
    // Fewer rounds than UPDATEs by far.
    assert!(run.rounds.len() < 100, "{} rounds", run.rounds.len());
}

#[test]
fn expensive_round_then_trickle_recovers() {
    let mut p = RoundPacer::new();
    // A table load's round: 3 ms of work.
    p.round_done(Instant::from_nanos(10_000_000), Duration::from_millis(3));
    assert_eq!(p.spacing(), ROUND_MIN);
    assert!(!p.ready(Instant::from_nanos(14_000_000)));
    assert_eq!(
        p.wait(Instant::from_nanos(14_000_000)),
        Duration::from_millis(1)
    );
    assert!(p.ready(Instant::from_nanos(15_000_000)));
    // Then a cheap one: the next may follow ROUND_FLOOR later.
    p.round_done(Instant::from_nanos(15_010_000), Duration::from_micros(10));
    assert_eq!(p.spacing(), ROUND_FLOOR);
    assert!(!p.ready(Instant::from_nanos(15_900_000)));
    assert!(p.ready(Instant::from_nanos(16_010_000)));
}
