//! Ip4Forward against the chain it replaces (ADR 0003): the same frames
//! through `CheckIpHeader -> IcmpEcho -> Classifier(local) -> DecIpTtl ->
//! Ip4Lookup` and through `Ip4Forward`, each with the same EtherRewrite
//! and ICMP path behind, must leave byte for byte the same on every port,
//! with the same drops by reason name. Inputs and outputs go through pcap
//! files like the golden tests.
//!
//! The property test does the same for random frames (bad headers,
//! options, TTL 0-2, own, local and unrouted destinations, bad sources,
//! VLAN tags, IPv6, ARP, truncation, flipped bytes) through four graphs:
//! the chain, `Classifier(ip) -> Ip4Forward`, the fully fused
//! `Classifier(ip checked) -> Ip4Forward` (one header parse), and the
//! one-pass `Ip4Forward(REWRITE ...)` that also rewrites the MAC of
//! resolved neighbours (tesserad's default built-in graph).

#[path = "support/fused.rs"]
mod fused;

use fused::*;
use pkt::hdr::arp::ARP_REQUEST;
use pkt::hdr::ether::BROADCAST;
use pkt::{build, Mac};

const R0: Mac = Mac([2, 0, 0, 0, 0, 0x10]);
const R1: Mac = Mac([2, 0, 0, 0, 0, 0x11]);
const HA: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
const HB: Mac = Mac([2, 0, 0, 0, 0, 0xb]);
const A4: [u8; 4] = [10, 1, 0, 2];
const B4: [u8; 4] = [10, 2, 0, 2];

/// (input port, frame).
fn script() -> Vec<(usize, Vec<u8>)> {
    let mut bad_sum = build::udp4(R0, HA, A4, [203, 0, 113, 5], 64, 1, 2, b"bad checksum");
    bad_sum[24] ^= 0xff;
    let mut short = build::udp4(R0, HA, A4, B4, 64, 1, 2, b"short");
    short.truncate(30);
    vec![
        (
            0,
            build::udp4(R0, HA, A4, [203, 0, 113, 5], 64, 1, 2, b"via B"),
        ),
        (0, build::udp4(R0, HA, A4, B4, 64, 1, 2, b"connected B")),
        (1, build::udp4(R1, HB, B4, A4, 9, 3, 4, b"back to A")),
        (0, build::udp4(R0, HA, A4, B4, 1, 1, 2, b"ttl 1")),
        (0, build::udp4(R0, HA, A4, B4, 2, 1, 2, b"ttl 2")),
        (
            0,
            build::ping4(R0, HA, A4, [10, 1, 0, 1], 64, 7, 1, b"echo"),
        ),
        (
            0,
            build::ping4(R0, HA, A4, [10, 2, 0, 1], 1, 7, 2, b"echo ttl 1"),
        ),
        (0, build::udp4(R0, HA, A4, [10, 2, 0, 1], 64, 1, 2, b"to R")),
        (
            0,
            build::udp4(R0, HA, A4, [198, 51, 100, 1], 64, 1, 2, b"no route"),
        ),
        (0, bad_sum),
        (
            0,
            build::udp4(R0, HA, [127, 0, 0, 1], B4, 64, 1, 2, b"bad src"),
        ),
        (0, build::udp4(R0, HA, A4, [255; 4], 64, 1, 2, b"broadcast")),
        (
            0,
            build::udp4(R0, HA, A4, [224, 0, 0, 5], 64, 1, 2, b"mcast"),
        ),
        (0, short),
        (
            0,
            build::arp(
                BROADCAST,
                HA,
                ARP_REQUEST,
                HA,
                A4,
                Mac::default(),
                [10, 1, 0, 1],
            ),
        ),
    ]
}

fn run(path: Path, batched: bool) -> Outcome {
    run_frames(path, batched, &script())
}

#[test]
fn ip4forward_matches_the_chain_byte_for_byte() {
    for (batched, path) in [true, false]
        .into_iter()
        .flat_map(|b| FUSED_PATHS.map(|p| (b, p)))
    {
        let (chain_out, chain_drops) = run(Path::Chain, batched);
        let (fused_out, fused_drops) = run(path, batched);
        // The script exercises every branch.
        assert_eq!(
            chain_out[0].len(),
            4,
            "to A: back, time exceeded, 2 echo replies"
        );
        assert_eq!(chain_out[1].len(), 3, "to B: via B, connected, ttl 2");
        for k in 0..2 {
            let (mut f, mut c) = (fused_out[k].clone(), chain_out[k].clone());
            if batched {
                // In one poll, frames of different paths (forwarded, echo
                // replies, ICMP errors) may meet a port in another order.
                f.sort();
                c.sort();
            }
            assert_eq!(f.len(), c.len(), "{path:?}: port {k} (batched {batched})");
            for (i, (f, c)) in f.iter().zip(&c).enumerate() {
                assert_eq!(
                    f, c,
                    "{path:?}: port {k} frame {i} differs (batched {batched})"
                );
            }
        }
        assert_eq!(
            fused_drops, chain_drops,
            "{path:?}: drops by reason ({batched})"
        );
        let get = |n: &str| chain_drops.iter().find(|d| d.0 == n).map_or(0, |d| d.1);
        assert_eq!(get("no_route"), 1);
        assert_eq!(get("bad_ip_checksum"), 1);
        assert_eq!(get("bad_ip_source"), 1);
        assert_eq!(get("bad_ip_header"), 1);
        assert_eq!(get("discarded"), 4, "to R, broadcast, multicast, ARP");
    }
}

/// IPv4 checksum of the header at `l3` recomputed after an edit.
fn fix_sum(f: &mut [u8], l3: usize) {
    let hl = usize::from(f[l3] & 0x0f) * 4;
    if f.len() < l3 + hl.max(20) {
        return;
    }
    f[l3 + 10] = 0;
    f[l3 + 11] = 0;
    let c = pkt::checksum::checksum(&f[l3..l3 + hl.max(20)]);
    f[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
}

/// One random frame from the generator's choices (all small integers, so
/// proptest shrinks them).
#[allow(clippy::too_many_arguments)]
fn frame(
    kind: u8,
    dst: u8,
    src: u8,
    ttl: u8,
    opts: u8,
    edit: u8,
    at: usize,
    x: u8,
) -> (usize, Vec<u8>) {
    let dst4 = match dst % 9 {
        0 => [10, 1, 0, 2],
        1 => [10, 2, 0, 2],
        2 => [203, 0, 113, x],
        3 => [10, 1, 0, 1],
        4 => [10, 2, 0, 1],
        5 => [224, 0, 0, x],
        6 => [255; 4],
        7 => [198, 51, 100, x],
        _ => [x, x.wrapping_mul(7), 3, x ^ 0x55],
    };
    let src4 = match src % 6 {
        0 | 1 => A4,
        2 => [0, 1, 2, 3],
        3 => [127, 0, 0, 1],
        4 => [224 + (x % 32), 0, 0, 1],
        _ => [x | 1, 2, 3, 4],
    };
    let ttl = match ttl % 6 {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 64,
        4 => 255,
        _ => x,
    };
    let port = usize::from(x & 1);
    let mut f = match kind % 8 {
        0..=2 => build::udp4(R0, HA, src4, dst4, ttl, 1, 2, b"random payload"),
        3 => build::ping4(R0, HA, src4, dst4, ttl, 7, 1, b"echo"),
        4 => {
            let mut d6 = [0u8; 16];
            d6[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            d6[15] = x;
            build::udp6(
                R0,
                HA,
                &[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                &d6,
                ttl,
                1,
                2,
                b"six",
            )
        }
        5 => build::arp(BROADCAST, HA, ARP_REQUEST, HA, A4, Mac::default(), dst4),
        6 => {
            // One VLAN tag (802.1Q) in front of the IPv4 header.
            let mut f = build::udp4(R0, HA, src4, dst4, ttl, 1, 2, b"tagged");
            f.splice(12..12, [0x81, 0x00, 0x00, x & 0x0f]);
            f
        }
        _ => build::tcp4(R0, HA, src4, dst4, ttl, 1, 2, 0x02, b"tcp"),
    };
    let is4 = matches!(kind % 8, 0..=3 | 6 | 7);
    let l3 = if kind % 8 == 6 { 18 } else { 14 };
    if is4 && opts % 4 == 1 {
        // IPv4 options (IHL 6 to 15): NOPs and an end of list, checksum
        // and total length fixed.
        let words = 1 + usize::from(opts / 4) % 10;
        let ins = l3 + 20;
        f.splice(
            ins..ins,
            std::iter::repeat_n(1u8, words * 4 - 1).chain([0u8]),
        );
        f[l3] = 0x40 | (5 + words as u8);
        let tl = u16::from_be_bytes([f[l3 + 2], f[l3 + 3]]) + (words * 4) as u16;
        f[l3 + 2..l3 + 4].copy_from_slice(&tl.to_be_bytes());
        fix_sum(&mut f, l3);
    }
    match edit % 8 {
        // A flipped byte anywhere in the first 64 (header fields,
        // checksum, Ethernet type, addresses).
        1 => {
            let i = at % f.len().min(64);
            f[i] ^= x | 1;
        }
        // Truncated.
        2 => f.truncate(at % f.len()),
        // A bad field with a good checksum: version, IHL or total length.
        3 if is4 => {
            match x % 3 {
                0 => f[l3] = (x & 0xf0) | (f[l3] & 0x0f),
                1 => f[l3] = 0x40 | (x & 0x0f),
                _ => f[l3 + 2..l3 + 4].copy_from_slice(&(u16::from(x) * 16).to_be_bytes()),
            }
            fix_sum(&mut f, l3);
        }
        _ => {}
    }
    (port, f)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 256,
        ..Default::default()
    })]

    /// The fused paths forward and drop exactly what the chain does, on
    /// random frames: the same bytes on every port, the same drops by
    /// reason.
    #[test]
    fn fused_paths_match_the_chain_on_random_frames(
        spec in proptest::collection::vec(
            (0u8..8, 0u8..9, 0u8..6, 0u8..6, 0u8..40, 0u8..8, 0usize..200, proptest::prelude::any::<u8>()),
            1..48,
        ),
        batched in proptest::prelude::any::<bool>(),
    ) {
        let frames: Vec<(usize, Vec<u8>)> = spec
            .iter()
            .map(|&(k, d, s, t, o, e, a, x)| frame(k, d, s, t, o, e, a, x))
            .filter(|(_, f)| !f.is_empty())
            .collect();
        let (mut chain_out, chain_drops) = run_frames(Path::Chain, batched, &frames);
        for path in FUSED_PATHS {
            let (mut out, drops) = run_frames(path, batched, &frames);
            for k in 0..2 {
                // Different paths (forwarded, replies, ICMP errors) may meet
                // a port in another order within one poll.
                out[k].sort();
                chain_out[k].sort();
                proptest::prop_assert_eq!(&out[k], &chain_out[k], "{:?}: port {}", path, k);
            }
            proptest::prop_assert_eq!(&drops, &chain_drops, "{:?}: drops by reason", path);
        }
    }
}

#[test]
fn the_generator_reaches_every_outcome() {
    // Control for the property test: its frames do reach every branch.
    let mut frames = Vec::new();
    for k in 0..8u8 {
        for d in 0..9u8 {
            for s in 0..6u8 {
                for e in [0u8, 1, 3] {
                    frames.push(frame(k, d, s, d % 6, s * 4 + 1, e, 19, 13 + k));
                }
            }
        }
    }
    let (out, drops) = run_frames(Path::Fused, false, &frames);
    let get = |n: &str| drops.iter().find(|d| d.0 == n).map_or(0, |d| d.1);
    assert!(
        out[0].len() + out[1].len() > 50,
        "forwarded {}",
        out[0].len() + out[1].len()
    );
    for r in [
        "bad_ip_header",
        "bad_ip_checksum",
        "bad_ip_source",
        "no_route",
        "discarded",
    ] {
        assert!(get(r) > 0, "no drop as {r}: {drops:?}");
    }
    // TTL 1 and 0 frames got time-exceeded errors.
    let time_exceeded = |f: &&Vec<u8>| f.len() > 34 && f[23] == 1 && f[34] == 11;
    assert!(
        out.iter().flatten().any(|f| time_exceeded(&f)),
        "no ICMP time exceeded"
    );
    // Frames with options and VLAN-tagged frames were forwarded.
    let options = |f: &&Vec<u8>| f.len() > 14 && f[12..14] == [8, 0] && f[14] > 0x45;
    assert!(
        out.iter().flatten().any(|f| options(&f)),
        "no options forwarded"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 128,
        ..Default::default()
    })]

    /// The `graph_forward` fuzz target's walk on random bytes (the fuzzer
    /// runs it far longer; this keeps it compiling and honest).
    #[test]
    fn fuzz_walk_on_random_bytes(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
        walk(&data);
    }
}

#[test]
fn fuzz_seeds_forward() {
    // The committed seeds of the `graph_forward` fuzz target are frames the
    // router forwards (so the fuzzer starts from the forwarding path).
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/graph_forward");
    for name in ["forwarded", "vlan"] {
        let data = std::fs::read(dir.join(name)).expect("seed");
        walk(&data);
    }
    let data = std::fs::read(dir.join("forwarded")).expect("seed");
    let n = usize::from(data[0]);
    let mut f = vec![2, 0, 0, 0, 0, 0x10, 2, 0, 0, 0, 0, 0xa, 8, 0];
    f.extend_from_slice(&data[1..1 + n]);
    let (out, _) = run_frames(Path::Fused, true, &[(0, f)]);
    assert_eq!(
        out[1].len(),
        1,
        "the first seed frame is forwarded to port 1"
    );
}

/// The one-pass path shares the EtherRewrite's neighbour table: a packet
/// to an unresolved gateway goes through the EtherRewrite (ARP request,
/// hold queue); once the reply is learned, the held packet leaves and the
/// next ones are rewritten by Ip4Forward itself and go straight to the
/// device (the EtherRewrite's input sees no more of them), with the same
/// bytes as the EtherRewrite writes. A bad REWRITE name is refused.
#[test]
fn one_pass_rewrite_follows_the_neighbour_table() {
    use graph::{Graph, Runner};
    use pkt::hdr::arp::ARP_REPLY;
    use pkt::{MemDevice, Pool};
    const HC: Mac = Mac([2, 0, 0, 0, 0, 0xc]);
    // Port 1's ARP goes to rw1 (the shared graphs discard non-IP).
    let cfg = config_for(Path::OnePass).replace(
        "c1 :: Classifier(ip checked, -); c1 [1] -> nonip;",
        "c1 :: Classifier(ip checked, arp, -); c1 [1] -> [1] rw1; c1 [2] -> nonip;",
    );
    assert!(cfg.contains("c1 [1] -> [1] rw1"), "{cfg}");
    let mut env = elements::Env::new();
    let g: Graph<elements::AnyElement> =
        Graph::from_str(&cfg, "onepass", &mut env, Pool::new(256)).expect("graph builds");
    let devs = vec![MemDevice::new("p0", vec![]), MemDevice::new("p1", vec![])];
    let mut r = Runner::new(g, devs, 64).expect("runner");
    // 10.2.0.3 is connected on port 1 and not in the table.
    let to_c = |n: u8| build::udp4(R0, HA, A4, [10, 2, 0, 3], 64, 1, 2, &[n; 8]);
    let rw_in = |r: &Runner<elements::AnyElement, MemDevice>| r.graph.stats_of("rw1").unwrap().rx;
    r.devices_mut()[0].inject(to_c(1));
    r.poll();
    let sent = r.devices_mut()[1].take_sent();
    assert_eq!(sent.len(), 1, "an ARP request, the packet held");
    assert_eq!(&sent[0][12..14], &[8, 6]);
    assert_eq!(rw_in(&r), 1, "the packet went to rw1");
    // The reply: learned, the held packet leaves through rw1.
    let rep = build::arp(R1, HC, ARP_REPLY, HC, [10, 2, 0, 3], R1, [10, 2, 0, 1]);
    r.devices_mut()[1].inject(rep);
    r.poll();
    let held = r.devices_mut()[1].take_sent();
    assert_eq!(held.len(), 1);
    let seen = rw_in(&r);
    // Now resolved: rewritten in Ip4Forward's pass, rw1 not involved.
    for n in 2..6 {
        r.devices_mut()[0].inject(to_c(n));
    }
    r.poll();
    let direct = r.devices_mut()[1].take_sent();
    assert_eq!(direct.len(), 4);
    assert_eq!(rw_in(&r), seen, "rw1 saw none of them");
    for f in direct.iter().chain(&held) {
        assert_eq!(&f[0..6], &HC.0, "to C's MAC");
        assert_eq!(&f[6..12], &R1.0, "from port 1's MAC");
        assert_eq!(f[22], 63, "TTL decremented once");
    }
    assert_eq!(direct[0][14..34], held[0][14..34], "the same IP header");
    let fwd = r.graph.stats_of("fwd").unwrap();
    assert_eq!(fwd.rx, 5);
    assert_eq!(fwd.tx, 5);
    // C moves to another MAC (a new reply): the shared table and its
    // cache follow at once, no packet leaves with the old MAC.
    const HD: Mac = Mac([2, 0, 0, 0, 0, 0xd]);
    let rep = build::arp(R1, HD, ARP_REPLY, HD, [10, 2, 0, 3], R1, [10, 2, 0, 1]);
    r.devices_mut()[1].inject(rep);
    r.poll();
    r.devices_mut()[0].inject(to_c(7));
    r.poll();
    let moved = r.devices_mut()[1].take_sent();
    assert_eq!(moved.len(), 1);
    assert_eq!(&moved[0][0..6], &HD.0, "to C's new MAC");
    // A REWRITE naming no EtherRewrite declared before is an error.
    let bad = cfg.replace("REWRITE rw1", "REWRITE rw9");
    let Err(e) = Graph::<elements::AnyElement>::from_str(
        &bad,
        "onepass",
        &mut elements::Env::new(),
        Pool::new(16),
    ) else {
        panic!("a REWRITE of an unknown element was accepted");
    };
    assert!(e.to_string().contains("no EtherRewrite 'rw9'"), "{e}");
}
