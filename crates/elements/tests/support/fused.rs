//! The IPv4 paths compared by `forward.rs` and the `graph_forward` fuzz
//! target: the chain, `Classifier(ip) -> Ip4Forward`,
//! `Classifier(ip checked) -> Ip4Forward`, and the one-pass
//! `Classifier(ip checked) -> Ip4Forward(REWRITE ...)` (tesserad's
//! default), each with the same own-address and ICMP branch, rewrite and
//! output; [`run_frames`] runs frames through one, [`walk`] arbitrary
//! bytes through all four and checks that they agree.
#![allow(dead_code)]

use elements::{AnyElement, Env};
use graph::{Graph, Runner};
use pkt::{MemDevice, Pool};

pub const ROUTES: &str =
    "ROUTE 10.1.0.0/24 0, ROUTE 10.2.0.0/24 1, ROUTE 203.0.113.0/24 10.2.0.2 1";

/// Which IPv4 path a graph has.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Path {
    /// `Classifier(ip) -> CheckIpHeader -> IcmpEcho -> Classifier(local)
    /// -> DecIpTtl -> Ip4Lookup`.
    Chain,
    /// `Classifier(ip) -> Ip4Forward`.
    Forward,
    /// `Classifier(ip checked) -> Ip4Forward`.
    Fused,
    /// `Classifier(ip checked) -> Ip4Forward(REWRITE rw0, REWRITE rw1)`:
    /// resolved neighbours rewritten in the same pass, straight to the
    /// devices (tesserad's default graph).
    OnePass,
}

/// The paths [`walk`] and the property test compare with the chain.
pub const FUSED_PATHS: [Path; 3] = [Path::Forward, Path::Fused, Path::OnePass];

/// The graph for `path`: ports, classifiers, the own-address/ICMP branch
/// (`head`), rewrite and output around the IPv4 path.
pub fn config_for(path: Path) -> String {
    let fused = path != Path::Chain;
    let ip = if matches!(path, Path::Fused | Path::OnePass) {
        "ip checked"
    } else {
        "ip"
    };
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
            "in{i} :: FromDevice(p{i}) -> c{i} :: Classifier({ip}, -); c{i} [1] -> nonip;\n"
        );
    }
    if path == Path::OnePass {
        s += &format!(
            "fwd :: Ip4Forward(ADDR 10.1.0.1, ADDR 10.2.0.1, {ROUTES}, REWRITE rw0, REWRITE rw1);\n\
             c0 [0] -> fwd; c1 [0] -> fwd; fwd [0] -> rw0; fwd [1] -> rw1; fwd [2] -> head;\n\
             fwd [3] -> o0; fwd [4] -> o1;\n"
        );
    } else if fused {
        s += &format!(
            "fwd :: Ip4Forward(ADDR 10.1.0.1, ADDR 10.2.0.1, {ROUTES});\n\
             c0 [0] -> fwd; c1 [0] -> fwd; fwd [0] -> rw0; fwd [1] -> rw1; fwd [2] -> head;\n"
        );
    } else {
        s += "chk :: CheckIpHeader; c0 [0] -> chk; c1 [0] -> chk; chk -> head;\n";
    }
    s
}

pub fn pcap_trip(frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    pkt::pcap::read_frames(&pkt::pcap::to_bytes(frames)).expect("pcap")
}

pub const REASONS: &[&str] = &[
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
pub type Outcome = (Vec<Vec<Vec<u8>>>, Vec<(&'static str, u64)>);

pub fn run_frames(path: Path, batched: bool, frames: &[(usize, Vec<u8>)]) -> Outcome {
    let cfg = config_for(path);
    let mut env = Env::new();
    let g: Graph<AnyElement> =
        Graph::from_str(&cfg, "forward", &mut env, Pool::new(256)).expect("graph builds");
    let devs = vec![MemDevice::new("p0", vec![]), MemDevice::new("p1", vec![])];
    let mut r = Runner::new(g, devs, 64).expect("runner");
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

/// Arbitrary bytes as up to 48 frames (a length byte, then that many
/// bytes; the length byte's low bit is the arrival port, and unless its top
/// bit is set the frame gets an IPv4 Ethernet header first), through the
/// four paths: no panic, and the fused paths send the same frames and
/// drop the same by reason as the chain.
pub fn walk(data: &[u8]) {
    let mut frames = Vec::new();
    let mut rest = data;
    while let Some((&h, tail)) = rest.split_first() {
        let n = usize::from(h & 0x7f).min(tail.len());
        let (body, t) = tail.split_at(n);
        let mut f = Vec::with_capacity(14 + n);
        if h & 0x80 == 0 {
            f.extend_from_slice(&[2, 0, 0, 0, 0, 0x10, 2, 0, 0, 0, 0, 0xa, 8, 0]);
        }
        f.extend_from_slice(body);
        if !f.is_empty() {
            frames.push((usize::from(h & 1), f));
        }
        rest = t;
        if frames.len() == 48 {
            break;
        }
    }
    let (mut chain_out, chain_drops) = run_frames(Path::Chain, true, &frames);
    for o in &mut chain_out {
        o.sort();
    }
    for path in FUSED_PATHS {
        let (mut out, drops) = run_frames(path, true, &frames);
        for o in &mut out {
            o.sort();
        }
        assert_eq!(out, chain_out, "{path:?}: frames sent");
        assert_eq!(drops, chain_drops, "{path:?}: drops by reason");
    }
}
