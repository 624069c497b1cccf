//! Issue 17, ADR 0006's premise: when a received UPDATE is cut between
//! two RIB parts, each part encodes its half towards a session with the
//! same path attribute bytes, so a join by attribute bytes (per session,
//! before or at the writer) can put the halves back into one UPDATE.

mod common;

use base::Instant;
use bgp_core::Part;
use bgp_wire::{Message, ParseCtx};
use common::*;

/// Path attribute bytes and NLRI count of every UPDATE with NLRI in
/// `bytes`.
fn updates(mut bytes: &[u8]) -> Vec<(Vec<u8>, usize)> {
    let ctx = ParseCtx::legacy().with_four_octet_asn(true);
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let (m, len) = Message::parse(bytes, ctx).expect("whole messages");
        bytes = &bytes[len..];
        if let Message::Update(u) = m {
            let n = u.nlri().count();
            if n > 0 {
                out.push((u.attributes_raw().to_vec(), n));
            }
        }
    }
    out
}

#[test]
fn the_parts_encode_a_cut_update_with_equal_attribute_bytes() {
    let now = Instant(0);
    // Eight /24s in distinct /20 blocks: both parts of two own some.
    let all: Vec<_> = (0..8u32)
        .map(|i| {
            let a = std::net::Ipv4Addr::from(0xc612_0000u32 + (i << 12) * 3);
            prefix(&format!("{a}/24"))
        })
        .collect();
    let mut per_part = Vec::new();
    for index in 0..2 {
        let mut h = Harness::with_peers_up(Part { index, count: 2 }, now, &[1, 2]);
        let mine: Vec<_> = all
            .iter()
            .copied()
            .filter(|p| bgp_rib::shard_for(p, 2) == index)
            .collect();
        assert!(!mine.is_empty(), "part {index} owns none of the prefixes");
        h.announce(now, 1, &mine, &["comm=65000:1", "path=65001,64999"]);
        h.core.propagate(now, &mut h.out);
        let sent = h.handed_to(2);
        let u = updates(&sent);
        assert_eq!(u.len(), 1, "part {index}: one UPDATE for its half");
        assert_eq!(u[0].1, mine.len());
        per_part.push(u[0].0.clone());
    }
    assert_eq!(
        per_part[0], per_part[1],
        "the two halves' path attributes differ on the wire"
    );
}
