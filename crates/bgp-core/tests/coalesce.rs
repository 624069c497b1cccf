//! Coalescing best-path changes before export (issue 17): a session whose
//! writer still holds unwritten bytes above [`RibCore::refill_below`] gets
//! nothing new; its changes wait as prefixes, so a prefix that changed
//! several times meanwhile goes out once, in its latest state.
//!
//! * Property: whatever the interleaving of route changes, export rounds
//!   and partial writes, the routes a client ends up with are those of a
//!   client that was sent every change at once (the earlier behaviour,
//!   `refill_below = OUT_QUEUE_LIMIT`, writing everything after every
//!   input).
//! * Counted: three feeders announcing the same prefixes while the client
//!   is busy: fewer UPDATEs reach it than without coalescing, same end
//!   state.
//!
//! [`RibCore::refill_below`]: bgp_core::RibCore::refill_below

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use base::{Instant, Prefix};
use bgp_core::OUT_QUEUE_LIMIT;
use bgp_wire::{Message, ParseCtx};
use common::Harness;
use proptest::prelude::*;

const CLIENT: u16 = 4;

/// The client's view of what it was sent: prefix -> attributes (as text),
/// and the UPDATE messages it read.
#[derive(Default)]
struct Client {
    routes: BTreeMap<Prefix, String>,
    updates: usize,
}

impl Client {
    fn read(&mut self, bytes: &[u8]) {
        let ctx = ParseCtx::legacy().with_four_octet_asn(true);
        let mut rest = bytes;
        while !rest.is_empty() {
            let (m, len) = Message::parse(rest, ctx).expect("whole messages");
            if let Message::Update(u) = m {
                if u.end_of_rib().is_some() {
                    rest = &rest[len..];
                    continue;
                }
                let u = u.to_owned().expect("update");
                self.updates += 1;
                for w in &u.withdrawn {
                    self.routes.remove(&w.prefix);
                }
                let attrs = format!("{:?}", u.attributes);
                for n in &u.nlri {
                    self.routes.insert(n.prefix, attrs.clone());
                }
            }
            rest = &rest[len..];
        }
    }
}

/// Three feeders (their own export rejects: only the client listens) and
/// the client, all up.
fn setup(refill_below: u64) -> Harness {
    let now = Instant(0);
    let mut h = Harness::new(bgp_core::Part::WHOLE);
    h.core.refill_below = refill_below;
    for f in 1..=3 {
        h.add_peer(f, &["export=reject"]);
        h.up(now, f, &[]);
    }
    h.add_peer(CLIENT, &[]);
    h.up(now, CLIENT, &[]);
    h.core.propagate(now, &mut h.out);
    h
}

/// Hands the client what the last rounds produced; its queued bytes stay
/// counted (nothing written yet).
fn take(h: &mut Harness, c: &mut Client) {
    let sent = h.handed_to(CLIENT);
    c.read(&sent);
    h.out.notes.clear();
    h.out.best.clear();
    h.out.samples.clear();
}

/// The client writes everything; rounds run until nothing is left.
fn settle(h: &mut Harness, c: &mut Client) {
    let now = Instant(0);
    for _ in 0..1000 {
        h.status(CLIENT)
            .out_queued_bytes
            .store(0, Ordering::Relaxed);
        h.core.propagate(now, &mut h.out);
        take(h, c);
        if !h.core.export_backlog()
            && h.status(CLIENT).out_queued_bytes.load(Ordering::Relaxed) == 0
        {
            return;
        }
    }
    panic!("the client's backlog never emptied");
}

#[derive(Clone, Debug)]
enum Op {
    /// Feeder announces a prefix with one of a few AS paths.
    Announce(u16, u8, u8),
    Withdraw(u16, u8),
    /// An export round.
    Round,
    /// The client's writer writes this many bytes.
    Write(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u16..=3, 0u8..24, 0u8..3).prop_map(|(f, p, v)| Op::Announce(f, p, v)),
        1 => (1u16..=3, 0u8..24).prop_map(|(f, p)| Op::Withdraw(f, p)),
        2 => Just(Op::Round),
        2 => (0u16..400).prop_map(Op::Write),
    ]
}

fn pfx(i: u8) -> Prefix {
    common::prefix(&format!("10.0.{i}.0/24"))
}

fn apply(h: &mut Harness, o: &Op) {
    let now = Instant(0);
    match *o {
        Op::Announce(f, p, v) => {
            let path = match v {
                0 => format!("path={}", 65000 + f),
                1 => format!("path={},7,8", 65000 + f),
                _ => format!("path={},9", 65000 + f),
            };
            h.announce(now, f, &[pfx(p)], &[&path]);
        }
        Op::Withdraw(f, p) => h.withdraw(now, f, &[pfx(p)]),
        Op::Round | Op::Write(_) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn coalescing_keeps_every_clients_final_routes(
        ops in proptest::collection::vec(op(), 1..120),
        refill in prop_oneof![Just(1u64), Just(60), Just(300)],
    ) {
        let now = Instant(0);
        // Every change at once: a round and a full write after each input.
        let mut eager = setup(OUT_QUEUE_LIMIT);
        let mut ce = Client::default();
        // Coalescing: a low refill mark (the daemon's is a quarter of the
        // queue limit), rounds and writes when the ops say.
        let mut lazy = setup(refill);
        let mut cl = Client::default();
        for o in &ops {
            apply(&mut eager, o);
            eager.status(CLIENT).out_queued_bytes.store(0, Ordering::Relaxed);
            eager.core.propagate(now, &mut eager.out);
            take(&mut eager, &mut ce);
            apply(&mut lazy, o);
            match *o {
                Op::Round => {
                    lazy.core.propagate(now, &mut lazy.out);
                    take(&mut lazy, &mut cl);
                }
                Op::Write(n) => {
                    lazy.status(CLIENT).unqueue(u64::from(n));
                }
                _ => {}
            }
        }
        settle(&mut eager, &mut ce);
        settle(&mut lazy, &mut cl);
        prop_assert_eq!(&cl.routes, &ce.routes);
        // Coalescing never sends more than the eager client read, bar
        // withdrawals of prefixes whose announcement was itself coalesced
        // away (at most one per prefix and round of the ops).
        prop_assert!(cl.updates <= ce.updates + ops.len(), "{} > {} + {}", cl.updates, ce.updates, ops.len());
    }
}

/// 6000 prefixes, each with an attribute set of its own (about 330 kB of
/// UPDATEs, above the default refill mark), announced by feeder 1, then
/// with a shorter path by feeder 2, then shorter again by feeder 3, while
/// the client has not written what it was first sent.
fn three_feeds(refill_below: u64) -> Client {
    let now = Instant(0);
    let mut h = setup(refill_below);
    let mut c = Client::default();
    let prefixes: Vec<Prefix> = (0..6000u32)
        .map(|i| common::prefix(&format!("10.{}.{}.0/24", i / 256, i % 256)))
        .collect();
    for f in 1..=3u16 {
        for (i, p) in prefixes.iter().enumerate() {
            let mut path = vec![(65000 + f).to_string(), (100_000 + i).to_string()];
            path.extend(std::iter::repeat_n("7".to_string(), usize::from(3 - f)));
            h.announce(now, f, &[*p], &[&format!("path={}", path.join(","))]);
        }
        h.core.propagate(now, &mut h.out);
        take(&mut h, &mut c);
    }
    settle(&mut h, &mut c);
    assert_eq!(c.routes.len(), prefixes.len());
    c
}

#[test]
fn a_busy_client_gets_each_prefix_once_more_not_once_per_feed() {
    let eager = three_feeds(OUT_QUEUE_LIMIT);
    let coalesced = three_feeds(bgp_core::OUT_QUEUE_LOW);
    eprintln!(
        "UPDATEs read by the client: {} without coalescing, {} with",
        eager.updates, coalesced.updates
    );
    assert_eq!(coalesced.routes, eager.routes, "same final routes");
    // Without coalescing every feed reaches the client: 3 x 6000. With it
    // the first feed goes out (the queue was empty), the next two wait
    // and go out once, in the last feed's state.
    assert_eq!(eager.updates, 18_000);
    assert_eq!(coalesced.updates, 12_000);
}
