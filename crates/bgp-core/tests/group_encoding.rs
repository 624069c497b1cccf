//! One encoding per update group (issue 17): members of an update group
//! whose sessions encode alike get the same UPDATE buffers.
//!
//! * Property: random peers (export accept, reject or a named policy,
//!   route-server client or not, own AS or shared), route sequences, slow
//!   and fast readers, policy changes and session resets, run on a core
//!   that shares encodings and on one that encodes per peer
//!   (`RibCore::share_encodings` off): every peer receives the same bytes
//!   from both, and they decode as whole BGP messages.
//! * The sharing is real: several accept-all receivers of one table are
//!   handed the very same buffers (same address), and the encoding counter
//!   stays at one per batch while the send counter counts every member.

mod common;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use base::{Instant, Prefix};
use bgp_core::{Bytes, Output, Part, OUT_QUEUE_LIMIT};
use bgp_rib::PeerId;
use bgp_wire::{Message, MpNlri, ParseCtx};
use common::*;
use proptest::prelude::*;

/// Peers 1 and 2 feed routes; every peer (feeders included) receives.
const PEERS: u16 = 7;

#[derive(Clone, Debug)]
enum Step {
    Up(u16),
    Down(u16),
    Announce {
        peer: u16,
        set: u8,
        path: u8,
    },
    /// `n` prefixes in one UPDATE (several drain steps of 1024).
    Bulk {
        peer: u16,
        n: u16,
        path: u8,
    },
    Withdraw {
        peer: u16,
        set: u8,
    },
    /// A new export policy for `peer` (0 accept, 1 reject, 2 named).
    Policy {
        peer: u16,
        export: u8,
    },
    /// The peer's writer stops (its queue looks almost full) or drains.
    Slow(u16),
    Fast(u16),
    Propagate,
}

fn step() -> impl Strategy<Value = Step> {
    let peer = 1..=PEERS;
    let feeder = 1u16..=2;
    prop_oneof![
        peer.clone().prop_map(Step::Up),
        peer.clone().prop_map(Step::Down),
        (feeder.clone(), any::<u8>(), 0u8..3).prop_map(|(peer, set, path)| Step::Announce {
            peer,
            set,
            path
        }),
        (feeder.clone(), 1u16..2500, 0u8..3).prop_map(|(peer, n, path)| Step::Bulk {
            peer,
            n,
            path
        }),
        (feeder, any::<u8>()).prop_map(|(peer, set)| Step::Withdraw { peer, set }),
        (peer.clone(), 0u8..3).prop_map(|(peer, export)| Step::Policy { peer, export }),
        peer.clone().prop_map(Step::Slow),
        peer.prop_map(Step::Fast),
        Just(Step::Propagate),
        Just(Step::Propagate),
    ]
}

/// How each receiver is configured: export (0 accept, 1 reject, 2
/// named), route-server client, and AS (0: its own, else shared 64999).
type PeerSetup = (u8, bool, u8);

fn policy(export: u8) -> &'static [&'static str] {
    match export {
        1 => &["export=reject"],
        2 => &["export=no-invalid"],
        _ => &[],
    }
}

fn small(set: u8) -> Vec<Prefix> {
    (0..8u32)
        .filter(|i| set & (1 << i) != 0)
        .map(|i| {
            prefix(&format!(
                "{}/24",
                Ipv4Addr::from(0xc612_0000u32 + (i << 12))
            ))
        })
        .collect()
}

fn bulk(n: u16) -> Vec<Prefix> {
    (0..u32::from(n))
        .map(|i| prefix(&format!("{}/24", Ipv4Addr::from(0x0a00_0000u32 + (i << 8)))))
        .collect()
}

/// One core and what each peer received.
struct Side {
    h: Harness,
    stream: BTreeMap<u16, Vec<u8>>,
    slow: [bool; PEERS as usize + 1],
    /// Buffers handed to sessions, for the address check.
    bufs: Vec<(u16, Bytes)>,
}

impl Side {
    fn new(share: bool, setup: &[PeerSetup]) -> Side {
        // Two RIB shards in the core: batches come from each.
        let mut h = Harness::new(Part::WHOLE);
        h.core = bgp_core::RibCore::new(
            settings(),
            2,
            Part::WHOLE,
            std::time::SystemTime::UNIX_EPOCH,
        );
        h.core.share_encodings = share;
        for n in 1..=PEERS {
            let (export, rs, asn) = setup[usize::from(n - 1)];
            let as_word = format!(
                "as={}",
                if asn == 0 {
                    65000 + u32::from(n)
                } else {
                    64999
                }
            );
            let mut words: Vec<&str> = policy(export).to_vec();
            if n > 2 {
                words.push(&as_word);
            }
            h.add_peer(n, &words);
            if rs {
                if let Some(e) = h.core.peer_mut(PeerId(n)) {
                    e.meta.rs_client = true;
                }
            }
        }
        Side {
            h,
            stream: BTreeMap::new(),
            slow: [false; PEERS as usize + 1],
            bufs: Vec::new(),
        }
    }

    fn deliver(&mut self) {
        for o in std::mem::take(&mut self.h.out.out) {
            let p = o.peer().0;
            let Output::Send { bytes, markers, .. } = o else {
                continue;
            };
            let st = self.h.status(p).clone();
            let s = self.stream.entry(p).or_default();
            let bufs = &mut self.bufs;
            st.hand_over(bytes, markers, |b| {
                s.extend_from_slice(&b);
                bufs.push((p, b));
            });
            // The writer: a slow one keeps its queue almost full.
            let q = if self.slow[usize::from(p)] {
                OUT_QUEUE_LIMIT - 64
            } else {
                0
            };
            st.out_queued_bytes.store(q, Ordering::Relaxed);
        }
        self.h.out.clear();
    }

    fn apply(&mut self, now: Instant, s: &Step) {
        match *s {
            Step::Up(n) => {
                if self.h.core.peer(PeerId(n)).is_some_and(|e| e.up.is_none()) {
                    self.stream.entry(n).or_default().extend_from_slice(b"UP");
                    self.h.up(now, n, &["v6"]);
                }
            }
            Step::Down(n) => {
                if self.h.core.peer(PeerId(n)).is_some_and(|e| e.up.is_some()) {
                    self.h.down(now, n, false);
                }
            }
            Step::Announce { peer, set, path } => {
                if self.is_up(peer) {
                    let w = format!(
                        "path={},{}",
                        65000 + u32::from(peer),
                        64600 + u32::from(path)
                    );
                    self.h.announce(now, peer, &small(set), &[w.as_str()]);
                }
            }
            Step::Bulk { peer, n, path } => {
                if self.is_up(peer) {
                    let w = format!(
                        "path={},{}",
                        65000 + u32::from(peer),
                        64700 + u32::from(path)
                    );
                    self.h.announce(now, peer, &bulk(n), &[w.as_str()]);
                }
            }
            Step::Withdraw { peer, set } => {
                if self.is_up(peer) {
                    self.h.withdraw(now, peer, &small(set));
                }
            }
            Step::Policy { peer, export } => {
                let new = peer_meta(peer, policy(export)).export;
                if let Some(e) = self.h.core.peer_mut(PeerId(peer)) {
                    e.meta.export = new;
                }
                self.h.core.export_full(PeerId(peer));
            }
            Step::Slow(n) => self.slow[usize::from(n)] = true,
            Step::Fast(n) => {
                self.slow[usize::from(n)] = false;
                self.h
                    .status(n)
                    .out_queued_bytes
                    .store(0, Ordering::Relaxed);
            }
            Step::Propagate => self.h.core.propagate(now, &mut self.h.out),
        }
        self.deliver();
    }

    fn is_up(&self, n: u16) -> bool {
        self.h.core.peer(PeerId(n)).is_some_and(|e| e.up.is_some())
    }
}

/// Decodes a peer's stream (sessions separated by "UP"), checking that it
/// is whole messages; returns the routes of its last session.
fn routes(p: u16, stream: &[u8]) -> Result<BTreeMap<Prefix, String>, TestCaseError> {
    let ctx = ParseCtx::legacy().with_four_octet_asn(true);
    let mut table = BTreeMap::new();
    let mut rest = stream;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(b"UP") {
            table.clear();
            rest = r;
            continue;
        }
        let (m, len) = Message::parse(rest, ctx)
            .map_err(|e| TestCaseError::fail(format!("p{p}: undecodable: {e}")))?;
        rest = &rest[len..];
        let Message::Update(u) = m else { continue };
        let o = u
            .to_owned()
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let attrs = format!("{:?}", o.attributes);
        let mut gone = o.withdrawn.clone();
        let mut new = o.nlri.clone();
        for a in &o.attributes {
            match &a.value {
                bgp_wire::AttrValue::MpReach(r) => {
                    if let MpNlri::Prefixes(x) = &r.nlri {
                        new.extend(x.iter().copied());
                    }
                }
                bgp_wire::AttrValue::MpUnreach(r) => {
                    if let MpNlri::Prefixes(x) = &r.withdrawn {
                        gone.extend(x.iter().copied());
                    }
                }
                _ => {}
            }
        }
        for x in gone {
            table.remove(&x.prefix);
        }
        for x in new {
            table.insert(x.prefix, attrs.clone());
        }
    }
    Ok(table)
}

fn setup() -> impl Strategy<Value = Vec<PeerSetup>> {
    proptest::collection::vec((0u8..3, any::<bool>(), 0u8..2), PEERS as usize)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn shared_encoding_sends_what_per_peer_encoding_sends(
        setup in setup(),
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let mut shared = Side::new(true, &setup);
        let mut alone = Side::new(false, &setup);
        let mut now = Instant::from_secs(1);
        let ups: Vec<Step> = (1..=PEERS).map(Step::Up).collect();
        for s in ups.iter().chain(&steps).chain([Step::Fast(1), Step::Propagate].iter()) {
            now = now + Duration::from_millis(10);
            shared.apply(now, s);
            alone.apply(now, s);
        }
        // Every reader drains: both cores send the rest.
        for n in 1..=PEERS {
            shared.apply(now, &Step::Fast(n));
            alone.apply(now, &Step::Fast(n));
        }
        for _ in 0..8 {
            shared.apply(now, &Step::Propagate);
            alone.apply(now, &Step::Propagate);
        }
        for n in 1..=PEERS {
            let a = shared.stream.get(&n).cloned().unwrap_or_default();
            let b = alone.stream.get(&n).cloned().unwrap_or_default();
            let (ra, rb) = (routes(n, &a)?, routes(n, &b)?);
            prop_assert!(ra == rb, "p{}: different routes ({} vs {})", n, ra.len(), rb.len());
            prop_assert!(a == b, "p{}: different bytes ({} vs {})", n, a.len(), b.len());
        }
        let (cs, ca) = (&shared.h.core.counters, &alone.h.core.counters);
        prop_assert_eq!(cs.encoding_sends, ca.encoding_sends);
        prop_assert_eq!(ca.encodings, ca.encoding_sends);
        prop_assert!(cs.encodings <= ca.encodings);
    }
}

/// Four accept-all eBGP receivers of one feeder, three of them
/// route-server clients in ASes of their own and one not: the three
/// share every buffer (the same memory), the fourth (AS prepend) gets its
/// own; the counters say so.
#[test]
fn group_members_get_the_same_buffers() {
    let setup: Vec<PeerSetup> = vec![
        (1, false, 0),
        (1, false, 0),
        (0, true, 0),
        (0, true, 0),
        (0, true, 0),
        (0, false, 0),
        (1, false, 0),
    ];
    let mut side = Side::new(true, &setup);
    let now = Instant::from_secs(1);
    for n in 1..=PEERS {
        side.apply(now, &Step::Up(n));
    }
    // End-of-RIB (each session's own marker) out of the way.
    side.apply(now, &Step::Propagate);
    side.bufs.clear();
    let before = side.h.core.counters.clone();
    side.apply(
        now,
        &Step::Bulk {
            peer: 1,
            n: 2500,
            path: 0,
        },
    );
    side.apply(now, &Step::Propagate);
    let c = &side.h.core.counters;
    let (enc, sends) = (
        c.encodings - before.encodings,
        c.encoding_sends - before.encoding_sends,
    );
    // 2500 prefixes in two RIB shards: at least 2 batches per receiver.
    let of = |p: u16| -> Vec<&Bytes> {
        side.bufs
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, b)| b)
            .collect()
    };
    let (p3, p4, p5, p6) = (of(3), of(4), of(5), of(6));
    assert!(p3.len() >= 2, "{}", p3.len());
    assert_eq!(p3.len(), p4.len());
    assert_eq!(p3.len(), p5.len());
    for ((a, b), c) in p3.iter().zip(&p4).zip(&p5) {
        assert_eq!(a.as_ptr(), b.as_ptr(), "p3 and p4 share the buffer");
        assert_eq!(a.as_ptr(), c.as_ptr(), "p3 and p5 share the buffer");
    }
    for (a, d) in p3.iter().zip(&p6) {
        assert_ne!(a.as_ptr(), d.as_ptr(), "p6 prepends our AS: its own");
        assert_ne!(&a[..], &d[..]);
    }
    // p6 is alone in its class: its batches go out in one buffer.
    assert_eq!(p6.len(), 1);
    // Three sends per shared encoding, one per own.
    let shared_batches = p3.len() as u64;
    assert_eq!(sends, 4 * shared_batches, "{sends} sends");
    assert_eq!(enc, 2 * shared_batches, "{enc} encodings");
    let table = routes(3, side.stream.get(&3).map_or(&[][..], |v| v)).expect("decodes");
    assert_eq!(table.len(), 2500);
}
