//! The XDP fast path program's own cost per packet, measured by the
//! kernel (`BPF_PROG_TEST_RUN` with a repeat count; needs root), for a
//! forwarded 64 B frame and a miss, with `N` routes in the LPM map
//! (default 1, and 100000 /24s), and for an IPv6 frame (78 B) and an
//! IPv4 frame whose route is a two-member ECMP group (the flow hash). The veth path around the program
//! (skb, generic XDP, veth xmit, the peer's receive) is not in it: see
//! `crates/fib/scripts/bench-dp-veth` (modes `xfast`, `xfastd`).
//!
//! ```text
//! cargo run --release -p io --example xdp_fast_cost [REPEAT]
//! ```

use io::xdp::fast::{FastHop, FastMaps, FastOp, Route4, Route6};

const MAC: [u8; 6] = [2, 0, 0, 0, 1, 0];

fn frame(dst: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&MAC);
    f.extend_from_slice(&[2, 0, 0, 0, 0xa, 0, 0x08, 0x00]);
    let mut ip = vec![0x45, 0, 0, 46, 0, 1, 0x40, 0, 64, 17, 0, 0, 198, 18, 1, 2];
    ip.extend_from_slice(&dst);
    let mut s: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    ip[10..12].copy_from_slice(&(!(s as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.resize(60, 0x41);
    f
}

/// IPv6/UDP to 2001:db8:113::9 (or `2001:db8:ff::9` for a miss).
fn frame6(hit: bool) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&MAC);
    f.extend_from_slice(&[2, 0, 0, 0, 0xa, 0, 0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0, 0, 16, 17, 64]);
    f.extend_from_slice(&0x2001_0db8_0001_0000_0000_0000_0000_0002u128.to_be_bytes());
    let dst: u128 = if hit {
        0x2001_0db8_0113_0000_0000_0000_0000_0009
    } else {
        0x2001_0db8_00ff_0000_0000_0000_0000_0009
    };
    f.extend_from_slice(&dst.to_be_bytes());
    f.extend_from_slice(&[0x30, 0x39, 0x30, 0x39, 0, 16, 0, 0]);
    f.resize(78, 0x41);
    f
}

fn main() -> Result<(), io::IoError> {
    let repeat: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    for routes in [1u32, 100_000] {
        let m = FastMaps::create(routes + 16, 2)?;
        m.set_port(1, 1)?;
        let hop = FastHop {
            slot: 1,
            dmac: [2, 0, 0, 0, 0xb, 0],
            smac: [2, 0, 0, 0, 1, 1],
        };
        let ops: Vec<FastOp> = (0..routes)
            .map(|i| {
                let addr = if i == 0 {
                    0xc612_0200
                } else {
                    0x0a00_0000 + (i << 8)
                };
                FastOp::Set(Route4 { addr, len: 24 }, hop)
            })
            .collect();
        let st = m.apply(&ops);
        let p = m.test_program(MAC)?;
        let fwd = p.time(&frame([198, 18, 2, 9]), repeat)?;
        let miss = p.time(&frame([198, 51, 100, 9]), repeat)?;
        println!(
            "routes={routes} (map writes {st:?}) forwarded_ns={fwd} miss_to_graph_ns={miss} repeat={repeat}"
        );
        let ops6: Vec<FastOp> = (0..routes)
            .map(|i| {
                let addr = if i == 0 {
                    0x2001_0db8_0113_0000_0000_0000_0000_0000
                } else {
                    0x2001_0db8_8000_0000_0000_0000_0000_0000 + (u128::from(i) << 80)
                };
                FastOp::Set6(Route6 { addr, len: 48 }, hop)
            })
            .collect();
        let st6 = m.apply(&ops6);
        let fwd6 = p.time(&frame6(true), repeat)?;
        let miss6 = p.time(&frame6(false), repeat)?;
        println!(
            "routes6={routes} (map writes {st6:?}) ipv6_forwarded_ns={fwd6} ipv6_miss_to_graph_ns={miss6}"
        );
        // The IPv4 route made a two-member group: the flow hash runs.
        m.apply(&[
            FastOp::Member(0, hop),
            FastOp::Member(1, hop),
            FastOp::Set(
                Route4 {
                    addr: 0xc612_0200,
                    len: 24,
                },
                FastHop::group(0, 2),
            ),
        ]);
        let ecmp = p.time(&frame([198, 18, 2, 9]), repeat)?;
        println!("routes={routes} ecmp2_forwarded_ns={ecmp}");
    }
    Ok(())
}
