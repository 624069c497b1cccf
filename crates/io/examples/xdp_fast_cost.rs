//! The XDP fast path program's own cost per packet, measured by the
//! kernel (`BPF_PROG_TEST_RUN` with a repeat count; needs root), for a
//! forwarded 64 B frame and a miss, with `N` routes in the LPM map
//! (default 1, and 100000 /24s). The veth path around the program
//! (skb, generic XDP, veth xmit, the peer's receive) is not in it: see
//! `crates/fib/scripts/bench-dp-veth` (modes `xfast`, `xfastd`).
//!
//! ```text
//! cargo run --release -p io --example xdp_fast_cost [REPEAT]
//! ```

use io::xdp::fast::{FastHop, FastMaps, FastOp, Route4};

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
    }
    Ok(())
}
