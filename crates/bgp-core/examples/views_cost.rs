//! One export round's cost with N views, for an instruction count (the
//! wall time of `benches/views.rs` is too noisy on a shared machine):
//! `valgrind --tool=callgrind --toggle-collect='*RibCore*propagate*'
//! target/release/examples/views_cost N` counts only `propagate`. The
//! table and the round are the bench's: three eBGP peers with the same
//! 20k prefixes, then ROUNDS (default 20) rounds of peer 3 (not the
//! best) re-announcing 1000: `views_cost N [ROUNDS]`; with ROUNDS 0 the
//! count is the initial load's round, to subtract.

use std::time::Duration;

use base::{Instant, Prefix};
use bgp_core::Part;

#[path = "../tests/common/mod.rs"]
mod common;

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn main() {
    let views: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let rounds: u32 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let all: Vec<Prefix> = (0..20_000u32)
        .map(|i| {
            let a = 0x0a00_0000 | (i << 8);
            Prefix::V4(base::Prefix4::new(a, 24).expect("prefix"))
        })
        .collect();
    let mut h = common::Harness::new(Part::WHOLE);
    h.core.want_best = false;
    for n in 1..=3 {
        h.add_peer(n, &[]);
        h.up(at(0), n, &[]);
    }
    for chunk in all.chunks(500) {
        h.announce(at(1), 1, chunk, &[]);
        h.announce(at(1), 2, chunk, &["path=65002,64999"]);
        h.announce(at(1), 3, chunk, &["path=65003,64998"]);
    }
    h.core.propagate(at(1), &mut h.out);
    h.out.clear();
    let sets: [&[&str]; 4] = [&["p1"], &["p2", "p3"], &["p3"], &["p1", "p2", "p3"]];
    for (i, s) in sets.iter().take(views).enumerate() {
        let names: Vec<String> = s.iter().map(|x| x.to_string()).collect();
        h.core.set_view(&format!("v{i}"), &names, |_| {});
    }
    let churn: Vec<Prefix> = all.iter().step_by(20).copied().collect();
    for k in 0..rounds {
        let path = format!("path=65003,{}", 64000 + k);
        h.announce(at(2), 3, &churn, &[path.as_str()]);
        h.core.propagate(at(2), &mut h.out);
        h.out.clear();
    }
    println!("views={views} rounds={rounds} churn={}", churn.len());
}
