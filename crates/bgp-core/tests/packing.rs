//! Packing after a backlog (issue 17, scenario (c10)): the prefixes of one
//! received UPDATE share an attribute set but are often spread over the
//! address space. An export round queues its changes for each peer in the
//! order they arrived (`arrival_order` in `core.rs`) and peers drain
//! their queues oldest first (`Pending` in bgp-rib's `adjout.rs`), a
//! `DRAIN_STEP` at a time, so each received UPDATE goes out as one
//! UPDATE again. In prefix order (or hash order) the three prefixes of
//! each UPDATE here fell into different steps and went out one by one.

mod common;

use base::{Instant, Prefix};
use bgp_wire::{Message, ParseCtx};
use common::Harness;

/// UPDATEs of three /24s each, far apart (20.x, 80.x, 140.x), each with
/// its own AS path: 3000 UPDATEs, 9000 prefixes, several drain steps.
const UPDATES: u32 = 3000;

fn load(h: &mut Harness, now: Instant) {
    for i in 0..UPDATES {
        let prefixes: Vec<Prefix> = [20u8, 80, 140]
            .iter()
            .map(|&a| {
                let ip = std::net::Ipv4Addr::new(a, (i >> 8) as u8, i as u8, 0);
                Prefix::new(std::net::IpAddr::V4(ip), 24).expect("prefix")
            })
            .collect();
        h.announce(now, 1, &prefixes, &[&format!("path=65001,{}", 100_000 + i)]);
    }
}

/// UPDATE messages and prefixes handed to peer `p` (End-of-RIB aside).
fn take(h: &mut Harness, p: u16) -> (usize, usize) {
    let ctx = ParseCtx::legacy().with_four_octet_asn(true);
    let (mut msgs, mut prefixes) = (0, 0);
    let sent = h.handed_to(p);
    let mut rest = &sent[..];
    while !rest.is_empty() {
        let (m, len) = Message::parse(rest, ctx).expect("whole messages");
        if let Message::Update(u) = m {
            if u.end_of_rib().is_none() {
                let n = u.to_owned().expect("update").nlri.len();
                if n > 0 {
                    msgs += 1;
                    prefixes += n;
                }
            }
        }
        rest = &rest[len..];
    }
    h.out.notes.clear();
    h.out.best.clear();
    (msgs, prefixes)
}

#[test]
fn a_backlog_goes_out_one_update_per_received_update() {
    let now = Instant(0);
    let mut h = Harness::with_peers_up(bgp_core::Part::WHOLE, now, &[1, 2]);
    // The whole load before one export round: a backlog of 9000 changes.
    load(&mut h, now);
    h.core.propagate(now, &mut h.out);
    let (msgs, prefixes) = take(&mut h, 2);
    assert_eq!(prefixes, 3 * UPDATES as usize, "every prefix, in one flush");
    // A drain step boundary may cut one received UPDATE in two: at most
    // one extra message per step of 1024 prefixes. One prefix per
    // message (9000) is what prefix order gave.
    assert!(
        msgs <= UPDATES as usize + 9,
        "{msgs} UPDATEs for {UPDATES} received"
    );
}
