//! Ip4Forward against the chain it replaces (ADR 0003): the same frames
//! through `CheckIpHeader -> IcmpEcho -> Classifier(local) -> DecIpTtl ->
//! Ip4Lookup` and through `Ip4Forward`, each with the same EtherRewrite
//! and ICMP path behind, must leave byte for byte the same on every port,
//! with the same drops by reason name. Inputs and outputs go through pcap
//! files like the golden tests.

use elements::{AnyElement, Env};
use graph::{Graph, Runner};
use pkt::hdr::arp::ARP_REQUEST;
use pkt::hdr::ether::BROADCAST;
use pkt::{build, Mac, MemDevice, Pool};

const R0: Mac = Mac([2, 0, 0, 0, 0, 0x10]);
const R1: Mac = Mac([2, 0, 0, 0, 0, 0x11]);
const HA: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
const HB: Mac = Mac([2, 0, 0, 0, 0, 0xb]);
const A4: [u8; 4] = [10, 1, 0, 2];
const B4: [u8; 4] = [10, 2, 0, 2];

const ROUTES: &str = "ROUTE 10.1.0.0/24 0, ROUTE 10.2.0.0/24 1, ROUTE 203.0.113.0/24 10.2.0.2 1";

/// The shared part: ports, classifiers, the own-address/ICMP branch
/// (`head`), rewrite and output. `ip4` is where each port's IPv4 enters.
fn config(fused: bool) -> String {
    let mut s = format!(
        "rt :: Ip4Lookup({ROUTES});\n\
         mine :: Discard;\n\
         ttl :: DecIpTtl(SRC 10.1.0.1 10.2.0.1); ttl [0] -> rt; ttl [1] -> rt;\n\
         local :: Classifier(30/0a010001, 30/0a020001, 30/e00000, 30/ffffffff, -);\n\
         local [0] -> mine; local [1] -> mine; local [2] -> mine; local [3] -> mine;\n\
         local [4] -> ttl;\n\
         head :: IcmpEcho(ADDR 10.1.0.1, ADDR 10.2.0.1); head [0] -> rt; head [1] -> local;\n\
         rw0 :: EtherRewrite(MAC {R0m}, IP 10.1.0.1, NEIGH 10.1.0.2 {HAm});\n\
         rw1 :: EtherRewrite(MAC {R1m}, IP 10.2.0.1, NEIGH 10.2.0.2 {HBm});\n\
         rt [0] -> rw0; rt [1] -> rw1;\n\
         o0 :: ToDevice(p0); o1 :: ToDevice(p1); rw0 -> o0; rw1 -> o1;\n\
         nonip :: Discard;\n",
        R0m = "02:00:00:00:00:10",
        R1m = "02:00:00:00:00:11",
        HAm = "02:00:00:00:00:0a",
        HBm = "02:00:00:00:00:0b",
    );
    for i in 0..2 {
        s += &format!(
            "in{i} :: FromDevice(p{i}) -> c{i} :: Classifier(ip, -); c{i} [1] -> nonip;\n"
        );
    }
    if fused {
        s += &format!(
            "fwd :: Ip4Forward(ADDR 10.1.0.1, ADDR 10.2.0.1, {ROUTES});\n\
             c0 [0] -> fwd; c1 [0] -> fwd; fwd [0] -> rw0; fwd [1] -> rw1; fwd [2] -> head;\n"
        );
    } else {
        s += "chk :: CheckIpHeader; c0 [0] -> chk; c1 [0] -> chk; chk -> head;\n";
    }
    s
}

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

fn pcap_trip(frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    pkt::pcap::read_frames(&pkt::pcap::to_bytes(frames)).expect("pcap")
}

const REASONS: &[&str] = &[
    "bad_ether",
    "bad_ip_header",
    "bad_ip_checksum",
    "bad_ip_source",
    "no_route",
    "ttl_expired",
    "icmp_suppressed",
    "discarded",
    "unresolved",
    "no_match",
    "unconnected",
    "overflow",
    "unprocessed",
    "no_buffer",
    "tx_full",
];

/// Output frames per port and drops per reason, in one batch per port
/// (`batched`) or one packet per poll.
/// Frames sent per port, and drops per reason name.
type Outcome = (Vec<Vec<Vec<u8>>>, Vec<(&'static str, u64)>);

fn run(fused: bool, batched: bool) -> Outcome {
    let cfg = config(fused);
    let mut env = Env::new();
    let g: Graph<AnyElement> =
        Graph::from_str(&cfg, "forward", &mut env, Pool::new(256)).expect("graph builds");
    let devs = vec![MemDevice::new("p0", vec![]), MemDevice::new("p1", vec![])];
    let mut r = Runner::new(g, devs, 64).expect("runner");
    let frames: Vec<(usize, Vec<u8>)> = script();
    let read = pcap_trip(&frames.iter().map(|f| f.1.clone()).collect::<Vec<_>>());
    for ((port, _), f) in frames.iter().zip(read) {
        r.devices_mut()[*port].inject(f);
        if !batched {
            r.poll();
        }
    }
    for _ in 0..4 {
        r.poll();
    }
    let out = (0..2)
        .map(|k| pcap_trip(&r.devices_mut()[k].take_sent()))
        .collect();
    let drops = REASONS.iter().map(|n| (*n, r.graph.dropped(n))).collect();
    (out, drops)
}

#[test]
fn ip4forward_matches_the_chain_byte_for_byte() {
    for batched in [true, false] {
        let (chain_out, chain_drops) = run(false, batched);
        let (fused_out, fused_drops) = run(true, batched);
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
            assert_eq!(f.len(), c.len(), "port {k} (batched {batched})");
            for (i, (f, c)) in f.iter().zip(&c).enumerate() {
                assert_eq!(f, c, "port {k} frame {i} differs (batched {batched})");
            }
        }
        assert_eq!(fused_drops, chain_drops, "drops by reason ({batched})");
        let get = |n: &str| chain_drops.iter().find(|d| d.0 == n).map_or(0, |d| d.1);
        assert_eq!(get("no_route"), 1);
        assert_eq!(get("bad_ip_checksum"), 1);
        assert_eq!(get("bad_ip_source"), 1);
        assert_eq!(get("bad_ip_header"), 1);
        assert_eq!(get("discarded"), 4, "to R, broadcast, multicast, ARP");
    }
}
