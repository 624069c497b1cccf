//! Reordering with and without flow affinity under VLB (RouteBricks:
//! 0.15 % with its avoidance, 5.5 % without; spec §1.3), on three cluster
//! nodes in one process over loopback UDP (threads, real sockets; see
//! `tests/common/fabric_dev.rs`).
//!
//! Node 0 sends `FLOWS` UDP flows of `PER_FLOW` packets each, interleaved,
//! all to node 2's port 1, in VLB (about a third through node 1, the rest
//! direct). Node 2 records the arrival order; a packet is reordered when
//! its flow already delivered a later sequence number (RouteBricks'
//! metric: the share of packets that arrive out of order). Runs each mode
//! `RUNS` times (timing differs between runs; the draws are seeded).
//!
//! Run: `cargo run --release -p elements --example fabric_reorder`.

#[path = "../tests/common/fabric_dev.rs"]
mod fabric_dev;

use pkt::{build, Mac};

const FLOWS: u16 = 64;
const PER_FLOW: u32 = 100;
const RUNS: usize = 3;

fn input() -> Vec<Vec<u8>> {
    let (a, r) = (Mac([2, 0, 0, 0, 1, 2]), Mac([2, 0, 0, 0, 0, 1]));
    let mut v = Vec::new();
    for seq in 0..PER_FLOW {
        for f in 0..FLOWS {
            v.push(build::udp4(
                r,
                a,
                [198, 18, 1, 2],
                [198, 18, 3, 2],
                64,
                2000 + f,
                9,
                &seq.to_be_bytes(),
            ));
        }
    }
    v
}

/// (delivered, reordered) at the egress.
fn reordering(out: &[Vec<u8>]) -> (usize, usize) {
    let mut top = vec![None::<u32>; usize::from(FLOWS)];
    let mut late = 0;
    for f in out {
        let (Some(p), Some(s)) = (f.get(34..36), f.get(42..46)) else {
            continue;
        };
        let flow = usize::from(u16::from_be_bytes([p[0], p[1]]).wrapping_sub(2000));
        let seq = u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
        let Some(t) = top.get_mut(flow) else { continue };
        match *t {
            Some(m) if seq < m => late += 1,
            _ => *t = Some(seq),
        }
    }
    (out.len(), late)
}

fn main() {
    // Flows whose 4-way affinity set (cluster::lb) holds more than four
    // of them evict each other, and so lose affinity.
    let first: Vec<Vec<u8>> = input().into_iter().take(usize::from(FLOWS)).collect();
    let sets: Vec<usize> = first
        .iter()
        .map(|f| (pkt::hdr::flow::flow_hash(f) as usize & (cluster::lb::AFFINITY_SLOTS - 1)) / 4)
        .collect();
    let crowded = sets
        .iter()
        .filter(|s| sets.iter().filter(|t| t == s).count() > 4)
        .count();
    println!("{FLOWS} flows, {crowded} of them in an overfull affinity set");
    let t = std::time::Instant::now();
    println!("mode        affinity packing run delivered  via    reordered");
    for (mode, affinity, packing) in [
        ("vlb", false, 1),
        ("vlb", true, 1),
        ("vlb", false, 8),
        ("vlb", true, 8),
        ("direct", false, 8),
    ] {
        for run in 0..RUNS {
            let [r0, _, r2] = fabric_dev::run_cluster(mode, packing, affinity, input());
            let (n, late) = reordering(r2.sent_on("ext1"));
            println!(
                "{mode:<11} {affinity:<8} {packing:<7} {run:<3} {n:<10} {:<6} {late} ({:.2} %)",
                r0.counter("e", "via"),
                100.0 * late as f64 / n.max(1) as f64
            );
        }
    }
    println!("{RUNS} x 5 runs in {:.1} s", t.elapsed().as_secs_f64());
}
