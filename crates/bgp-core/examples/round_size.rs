//! What the size of an export round costs a RIB core that imports new
//! prefixes (`bgp_core::NEW_PREFIX_ROUND`): one eBGP peer announces N
//! unique /24s in a scattered order (3 a received UPDATE, one attribute
//! set each) and a second peer, the monitor, is exported to, its writer
//! taking everything; an export round runs every R best-path changes.
//! Prints the thread's CPU time per prefix for each R, the sizes
//! interleaved over the reps:
//! `taskset -c 1 target/release/examples/round_size [N] [REPS] [R,R,...]`.
//! Before `NEW_PREFIX_ROUND` applied to every core, a RIB thread that
//! lagged behind its input ran rounds of up to `MAX_CHANGED` (32k).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use base::{Instant, Prefix};
use bgp_core::{DecodedUpdate, Part, RibInput};
use bgp_rib::PeerId;

#[path = "../tests/common/mod.rs"]
mod common;

/// The time of every call: nothing here depends on it (no MRAI, no
/// deferral).
const NOW: Instant = Instant::ZERO;

fn run(updates: &[DecodedUpdate], round: usize) -> (f64, usize) {
    let mut h = common::Harness::with_peers_up(Part::WHOLE, NOW, &[1, 2]);
    h.core.want_best = false;
    let cpu = base::thread_cpu_time().expect("thread CPU clock");
    let mut sent = 0usize;
    // A round, then the monitor's writer takes all it was handed.
    let mut flush = |h: &mut common::Harness| {
        h.core.propagate(NOW, &mut h.out);
        sent += h.handed_to(2).len();
        h.status(2).out_queued_bytes.store(0, Ordering::Relaxed);
    };
    for u in updates {
        h.core.handle(
            NOW,
            RibInput::Updates {
                peer: PeerId(1),
                updates: vec![u.clone()],
            },
            &mut h.out,
        );
        if h.core.pending_changes() >= round {
            flush(&mut h);
        }
    }
    // What the last rounds left queued for want of room.
    for _ in 0..10_000 {
        flush(&mut h);
        if !h.core.export_backlog() {
            break;
        }
    }
    let spent = base::thread_cpu_time().expect("thread CPU clock") - cpu;
    (spent.as_secs_f64(), sent)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u32 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let reps: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let sizes: Vec<usize> = args
        .get(2)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![512, 2048, 8192, 32768]);
    // Unique /24s in a scattered order (as a generator's table walks them).
    let mut prefixes: Vec<Prefix> = (0..n)
        .map(|i| {
            let a = (0x01_0000 + i) << 8;
            Prefix::V4(base::Prefix4::new(a, 24).expect("prefix"))
        })
        .collect();
    // Distinct by construction; an odd multiplier is a bijection, so the
    // order is a permutation of them.
    prefixes.sort_unstable_by_key(|p| match p {
        Prefix::V4(q) => q.addr_bits().wrapping_mul(0x2545_f491),
        Prefix::V6(_) => 0,
    });
    let h = common::Harness::with_peers_up(Part::WHOLE, NOW, &[1, 2]);
    let meta = h.meta(1).clone();
    let updates: Vec<DecodedUpdate> = prefixes
        .chunks(3)
        .enumerate()
        .map(|(i, c)| {
            let path = format!("path=65001,{},{}", 100 + i % 5000, 200_000 + i);
            let a = common::attrs(1, &meta, &[path.as_str()]);
            DecodedUpdate {
                attrs: Some(Arc::new(a)),
                announce: c.iter().map(|p| bgp_wire::Nlri::new(*p)).collect(),
                withdraw: Vec::new(),
                end_of_rib: None,
                multicast: Default::default(),
            }
        })
        .collect();
    println!(
        "{} prefixes in {} UPDATEs; CPU ns per prefix, rounds every R changes",
        prefixes.len(),
        updates.len()
    );
    let mut res: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    let mut bytes = vec![0; sizes.len()];
    for _ in 0..reps {
        for (i, &r) in sizes.iter().enumerate() {
            let (s, sent) = run(&updates, r);
            res[i].push(s * 1e9 / prefixes.len() as f64);
            bytes[i] = sent;
        }
    }
    for (i, r) in sizes.iter().enumerate() {
        let mut v = res[i].clone();
        v.sort_by(f64::total_cmp);
        println!(
            "R {r:>6}: median {:.0} ns/prefix (min {:.0}, max {:.0}), {} bytes to the monitor",
            v[v.len() / 2],
            v[0],
            v[v.len() - 1],
            bytes[i]
        );
    }
}
