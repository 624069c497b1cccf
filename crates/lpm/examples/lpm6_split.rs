//! Where an IPv6 lookup's time goes, without hardware counters (the 2 vCPU
//! VM has none): batched ns per lookup over 2^20 in-route destinations of
//! the 200k IPv6 table, in slices of 2^16 (`cold`: most node and leaf reads
//! miss the caches)
//! and over the first 2^10 of them repeated (`hot`: everything cached, so
//! the figure is the instruction cost), ours and `benches/prev/` measured
//! pass by pass in turn. Also the share of destinations by the length of
//! the route they match, and the table's memory.
//!
//! ```text
//! cargo run --profile bench -p lpm --example lpm6_split
//! ```

#[path = "../tests/common/mod.rs"]
#[allow(clippy::type_complexity)]
mod common;

#[path = "../benches/prev/mod.rs"]
#[allow(
    clippy::all,
    missing_docs,
    rust_2018_idioms,
    unused_imports,
    unused_qualifications,
    dead_code
)]
mod prev;

use std::hint::black_box;
use std::time::Instant;

use lpm::{Lpm, Poptrie6};

const BURST: usize = 64;

/// Best ns per lookup of each table over slices of `slice` addresses of
/// `addrs`, `passes` passes (pass `p` on slice `p mod slices`), the tables
/// in turn on each pass (as `lpm_compare` measures).
fn best(tables: &[&dyn Lpm<u128>], addrs: &[u128], slice: usize, passes: usize) -> Vec<f64> {
    let mut out = vec![None; BURST];
    let mut best = vec![f64::MAX; tables.len()];
    let slices: Vec<&[u128]> = addrs.chunks(slice).collect();
    for p in 0..passes {
        let s = slices[p % slices.len()];
        for (t, b) in tables.iter().zip(best.iter_mut()) {
            let t0 = Instant::now();
            for c in s.chunks(BURST) {
                t.lookup_batch(c, &mut out);
                black_box(&out);
            }
            *b = b.min(t0.elapsed().as_nanos() as f64 / s.len() as f64);
        }
    }
    best
}

fn main() {
    let (_, v6) = common::load_routes(common::REAL_V6);
    let mut routes = common::pad6(&v6, 200_000, 43);
    routes.retain(|(p, _)| matches!(p.len(), 1..));
    let ours = Poptrie6::from_routes(routes.iter().copied()).expect("build");
    let old = prev::Poptrie6::from_routes(routes.iter().copied()).expect("build");
    let m = ours.memory();
    println!(
        "ours lookup_bytes={} live_node_bytes={} live_leaf_bytes={} control_bytes={}",
        m.lookup, m.live_nodes, m.live_leaves, m.control
    );
    let m = old.memory();
    println!(
        "prev lookup_bytes={} live_node_bytes={} live_leaf_bytes={} control_bytes={}",
        m.lookup, m.live_nodes, m.live_leaves, m.control
    );
    let addrs = common::dests_in6(&routes, 1 << 20, 9);
    // The length of the route each destination matches.
    let mut by_len = std::collections::BTreeMap::<u8, usize>::new();
    let set: std::collections::HashSet<(u128, u8)> = routes
        .iter()
        .map(|(p, _)| (p.masked().addr_bits(), p.len()))
        .collect();
    for &a in addrs.iter().take(1 << 14) {
        let l = (0..=128u8)
            .rev()
            .find(|&l| set.contains(&(a & base::mask6(l), l)))
            .unwrap_or(0);
        *by_len.entry(l).or_default() += 1;
    }
    let shares: Vec<String> = by_len
        .iter()
        .map(|(l, n)| format!("/{l}:{:.1}%", *n as f64 * 100.0 / (1 << 14) as f64))
        .collect();
    println!("matched_len {}", shares.join(" "));
    // How many /18 direct slots and /32s hold longer routes: what a
    // direct stage at /18 -> /32 or /32 -> /48 would have to allocate.
    let mut s18 = std::collections::HashSet::new();
    let mut s32 = std::collections::HashSet::new();
    let mut s40 = std::collections::HashSet::new();
    for (p, _) in &routes {
        let a = p.masked().addr_bits();
        if p.len() > 18 {
            s18.insert(a >> 110);
        }
        if p.len() > 32 {
            s32.insert(a >> 96);
        }
        if p.len() > 40 {
            s40.insert(a >> 88);
        }
    }
    println!(
        "slots18_with_longer={} slash32_with_longer={} slash40_with_longer={}",
        s18.len(),
        s32.len(),
        s40.len()
    );
    let tables: [&dyn Lpm<u128>; 2] = [&ours, &old];
    let cold = best(&tables, &addrs, 1 << 16, 160);
    let hot_set = &addrs[..1 << 10];
    let hot = best(&tables, hot_set, 1 << 10, 4000);
    println!(
        "cold_ns ours={:.2} prev={:.2} ours/prev={:.3}",
        cold[0],
        cold[1],
        cold[0] / cold[1]
    );
    println!(
        "hot_ns ours={:.2} prev={:.2} ours/prev={:.3}",
        hot[0],
        hot[1],
        hot[0] / hot[1]
    );
}
