//! Measures the Poptrie tables on one benchmark table and writes that table
//! and its lookup addresses in `dpdk-test-fib`'s file formats, so that
//! `scripts/bench-lpm` can run DPDK's `rte_lpm`/`rte_fib` on exactly the same
//! routes and destinations in the same run.
//!
//! ```text
//! cargo run --release -p lpm --example lpm_compare -- TABLE OUTDIR
//! ```
//!
//! TABLE is `v4-real` (the jinx full feed, ~497k routes), `v4-synth` (800k
//! synthetic routes, real length mix), `v4-synth1m` (the same with 1M, the
//! size of issue 19's target), `v6` (real route-views6 table padded
//! to 200k) or `churn` (route changes per second through `publish` while a
//! reader looks up; the reader runs on a thread of its own; `churn-new OUTDIR
//! [BATCH] [reader|noreader] [SECS]` runs only ours, one setting, for a
//! profile of the writer). Every figure is
//! also measured, on the same routes and addresses right after ours, for
//! main's structure before the churn branch (`prev_*`, main at e1b99e3,
//! `benches/prev/`) and for the one before issue 19 (`old_*`,
//! `benches/baseline/`). Prints `key=value` lines; cycles are TSC ticks, the
//! unit `dpdk-test-fib` reports, so the two compare without a clock
//! conversion. Lookup figures are the best of 240 passes of 2^16
//! addresses (15 rounds over the 2^20), ours, prev and old measured in
//! turn on the same slice, pass by pass.

#[path = "../tests/common/mod.rs"]
#[allow(clippy::type_complexity)]
mod common;

// The Poptrie before issue 19's IPv6 node groups and batched updates, kept
// verbatim as the same-run baseline (`old_*` keys).
#[path = "../benches/baseline/mod.rs"]
#[allow(
    clippy::all,
    missing_docs,
    rust_2018_idioms,
    unused_imports,
    unused_qualifications,
    dead_code
)]
mod baseline;

// Main's Poptrie before the churn branch (main at e1b99e3), kept
// verbatim as the same-run baseline of its update work (`prev_*` keys).
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
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use lpm::{Lpm, LpmMut, NextHop, Poptrie4, Poptrie6};

/// Lookups per measured pass; a multiple of DPDK's burst of 64.
const N_ADDRS: usize = 1 << 20;
/// Batch size handed to `lookup_batch` (DPDK's `BURST_SZ`).
const BURST: usize = 64;
/// Rounds over all the addresses; each round measures `PASS`-address
/// slices one by one (best of `PASSES * N_ADDRS / PASS` passes per table).
const PASSES: usize = 15;
/// Addresses per measured pass.
const PASS: usize = 1 << 16;

fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Best of `PASSES` rounds over all the addresses, each round one pass of
/// `PASS` addresses per slice, every function in turn on the same slice
/// (so that load on the machine hits them alike; short passes let some
/// of them run undisturbed on a loaded machine): (cycles, ns) per lookup
/// for each. `f(i)` looks up slice `i`.
fn measure(slices: usize, fs: &mut [&mut dyn FnMut(usize)]) -> Vec<(f64, f64)> {
    for f in fs.iter_mut() {
        for i in 0..slices {
            f(i); // warm the caches and the branch predictors
        }
    }
    let n = PASS;
    let mut best = vec![(f64::MAX, f64::MAX); fs.len()];
    for pass in 0..PASSES * slices {
        for (f, b) in fs.iter_mut().zip(best.iter_mut()) {
            let (t0, c0) = (Instant::now(), tsc());
            f(pass % slices);
            let (c1, t1) = (tsc(), t0.elapsed());
            let c = (c1.wrapping_sub(c0)) as f64 / n as f64;
            let ns = t1.as_nanos() as f64 / n as f64;
            if ns < b.1 {
                *b = (c, ns);
            }
        }
    }
    best
}

/// Batched and single lookups of every table over `addrs`, the tables
/// measured in turn on the same slice, pass by pass; prints
/// `LABEL_{batched,single}_*` keys.
fn report<A: Copy>(tables: &[(&str, &dyn Lpm<A>)], addrs: &[A]) {
    let mut outs = vec![vec![None; BURST]; tables.len()];
    let slices: Vec<&[A]> = addrs.chunks_exact(PASS).collect();
    let slices = &slices;
    let batched = {
        let mut fs: Vec<Box<dyn FnMut(usize) + '_>> = tables
            .iter()
            .zip(outs.iter_mut())
            .map(|(&(_, t), out)| {
                Box::new(move |i: usize| {
                    for chunk in slices[i].chunks(BURST) {
                        t.lookup_batch(chunk, out);
                        black_box(&*out);
                    }
                }) as Box<dyn FnMut(usize) + '_>
            })
            .collect();
        let mut refs: Vec<&mut dyn FnMut(usize)> = fs
            .iter_mut()
            .map(|f| &mut **f as &mut dyn FnMut(usize))
            .collect();
        measure(slices.len(), &mut refs)
    };
    let single = {
        let mut fs: Vec<Box<dyn FnMut(usize) + '_>> = tables
            .iter()
            .map(|&(_, t)| {
                Box::new(move |i: usize| {
                    let mut acc = 0u32;
                    for &a in slices[i] {
                        acc = acc.wrapping_add(t.lookup(black_box(a)).map_or(1, |n| n.0));
                    }
                    black_box(acc);
                }) as Box<dyn FnMut(usize) + '_>
            })
            .collect();
        let mut refs: Vec<&mut dyn FnMut(usize)> = fs
            .iter_mut()
            .map(|f| &mut **f as &mut dyn FnMut(usize))
            .collect();
        measure(slices.len(), &mut refs)
    };
    for ((&(label, _), (bc, bns)), (sc, sns)) in tables.iter().zip(batched).zip(single) {
        println!("{label}_batched_cycles={bc:.1} {label}_batched_ns={bns:.2}");
        println!("{label}_single_cycles={sc:.1} {label}_single_ns={sns:.2}");
    }
}

fn write_file(path: &Path, lines: impl Iterator<Item = String>) {
    let f = std::fs::File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut w = std::io::BufWriter::new(f);
    for l in lines {
        writeln!(w, "{l}").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

fn run_v4(name: &str, mut routes: common::Routes4, out: &Path) {
    // rte_lpm cannot hold a default route (the jinx table has one): leave it
    // out of both sides so that they hold the same table.
    routes.retain(|(p, _)| matches!(p.len(), 1..));
    let t0 = Instant::now();
    let t = Poptrie4::from_routes(routes.iter().copied()).expect("build");
    let build = t0.elapsed();
    let t0 = Instant::now();
    let mut inc = Poptrie4::new();
    for &(p, nh) in &routes {
        inc.insert(p, nh).expect("insert");
    }
    let inc_build = t0.elapsed();
    let m = t.memory();
    println!(
        "table={name} routes={} build_ms={:.0} incremental_build_ms={:.0} inserts_per_s={:.0}",
        t.len(),
        build.as_secs_f64() * 1e3,
        inc_build.as_secs_f64() * 1e3,
        routes.len() as f64 / inc_build.as_secs_f64()
    );
    println!(
        "lookup_bytes={} live_node_bytes={} live_leaf_bytes={} control_bytes={}",
        m.lookup, m.live_nodes, m.live_leaves, m.control
    );
    // The control side once a batch has run: it then holds the batch's
    // write log, which the other copy of a publish pair replays. One batch
    // of 10,000 changes of the churn mix (`common::churn4`).
    {
        use lpm::publish::Delta;
        let mut rng = common::XorShift(0x5eed);
        let n = routes.len() as u64;
        let ds: Vec<_> = (0..10_000)
            .map(|_| {
                let (p, nh) = routes[rng.below(n) as usize];
                match rng.below(4) {
                    0 | 1 => Delta::Insert(p, NextHop((nh.0 + 1) & 0xffff)),
                    2 => Delta::Remove(p),
                    _ => Delta::Insert(p, nh),
                }
            })
            .collect();
        // Both built afresh (a clone's vectors have no spare capacity).
        let mut c = Poptrie4::from_routes(routes.iter().copied()).expect("build");
        c.apply_all(&ds).expect("batch");
        let mut q = prev::Poptrie4::from_routes(routes.iter().copied()).expect("build");
        q.apply_all(&ds).expect("batch");
        println!(
            "control_bytes_after_batch={} prev_control_bytes_after_batch={} prev_lookup_bytes={}",
            c.memory().control,
            q.memory().control,
            q.memory().lookup
        );
    }
    write_file(
        &out.join("routes.txt"),
        routes
            .iter()
            .map(|(p, nh)| format!("{}/{} {}", p.masked().addr(), p.len(), nh.0)),
    );
    for (kind, addrs) in [
        ("uniform", common::dests_uniform4(N_ADDRS, 7)),
        ("inroute", common::dests_in4(&routes, N_ADDRS, 8)),
    ] {
        write_file(
            &out.join(format!("ips-{kind}.txt")),
            addrs
                .iter()
                .map(|&a| std::net::Ipv4Addr::from(a).to_string()),
        );
        let prev = prev::Poptrie4::from_routes(routes.iter().copied()).expect("build");
        let old = baseline::Poptrie4::from_routes(routes.iter().copied()).expect("build");
        let (a, b, c) = (
            format!("ours_{kind}"),
            format!("prev_{kind}"),
            format!("old_{kind}"),
        );
        report(&[(&a, &t), (&b, &prev), (&c, &old)], &addrs);
    }
}

fn run_v6(mut routes: common::Routes6, out: &Path) {
    routes.retain(|(p, _)| matches!(p.len(), 1..));
    let t0 = Instant::now();
    let t = Poptrie6::from_routes(routes.iter().copied()).expect("build");
    let build = t0.elapsed();
    let m = t.memory();
    println!(
        "table=v6 routes={} build_ms={:.0}",
        t.len(),
        build.as_secs_f64() * 1e3
    );
    println!(
        "lookup_bytes={} live_node_bytes={} live_leaf_bytes={} control_bytes={}",
        m.lookup, m.live_nodes, m.live_leaves, m.control
    );
    // As in `run_v4`: the control side with a 10,000-change batch's log.
    {
        use lpm::publish::Delta;
        let mut rng = common::XorShift(0x5eed);
        let n = routes.len() as u64;
        let ds: Vec<_> = (0..10_000)
            .map(|_| {
                let (p, nh) = routes[rng.below(n) as usize];
                match rng.below(4) {
                    0 | 1 => Delta::Insert(p, NextHop((nh.0 + 1) & 0xffff)),
                    2 => Delta::Remove(p),
                    _ => Delta::Insert(p, nh),
                }
            })
            .collect();
        let mut c = Poptrie6::from_routes(routes.iter().copied()).expect("build");
        c.apply_all(&ds).expect("batch");
        let mut q = prev::Poptrie6::from_routes(routes.iter().copied()).expect("build");
        q.apply_all(&ds).expect("batch");
        println!(
            "control_bytes_after_batch={} prev_control_bytes_after_batch={}",
            c.memory().control,
            q.memory().control
        );
    }
    write_file(
        &out.join("routes.txt"),
        routes
            .iter()
            .map(|(p, nh)| format!("{}/{} {}", p.masked().addr(), p.len(), nh.0)),
    );
    let addrs = common::dests_in6(&routes, N_ADDRS, 9);
    write_file(
        &out.join("ips-inroute.txt"),
        addrs
            .iter()
            .map(|&a| std::net::Ipv6Addr::from(a).to_string()),
    );
    let prev = prev::Poptrie6::from_routes(routes.iter().copied()).expect("build");
    let old = baseline::Poptrie6::from_routes(routes.iter().copied()).expect("build");
    report(
        &[
            ("ours_inroute", &t),
            ("prev_inroute", &prev),
            ("old_inroute", &old),
        ],
        &addrs,
    );
    let m = prev.memory();
    println!(
        "prev_lookup_bytes={} prev_live_node_bytes={} prev_live_leaf_bytes={} prev_control_bytes={}",
        m.lookup, m.live_nodes, m.live_leaves, m.control
    );
    let m = old.memory();
    println!(
        "old_lookup_bytes={} old_live_node_bytes={} old_live_leaf_bytes={} old_control_bytes={}",
        m.lookup, m.live_nodes, m.live_leaves, m.control
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(which), Some(out)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: lpm_compare v4-real|v4-synth|v4-synth1m|v6|churn|churn-new OUTDIR");
        std::process::exit(2);
    };
    let out = Path::new(out);
    std::fs::create_dir_all(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    match which.as_str() {
        "v4-real" => {
            let (v4, _) = common::load_routes(common::REAL_V4);
            run_v4("v4-real", common::dedup4(v4), out);
        }
        "v4-synth" => {
            let (v4, _) = common::load_routes(common::REAL_V4);
            run_v4("v4-synth", common::synth4(&v4, 800_000, 42), out);
        }
        "v4-synth1m" => {
            let (v4, _) = common::load_routes(common::REAL_V4);
            run_v4("v4-synth1m", common::synth4(&v4, 1_000_000, 42), out);
        }
        "v6" => {
            let (_, v6) = common::load_routes(common::REAL_V6);
            run_v6(common::pad6(&v6, 200_000, 43), out);
        }
        "churn" => {
            let (v4, _) = common::load_routes(common::REAL_V4);
            let v4 = common::dedup4(v4);
            let mut failed = 0;
            for batch in [1_000, 10_000] {
                for reader in [false, true] {
                    for which in ["new", "prev", "old"] {
                        let r = if which == "new" {
                            common::churn4(&v4, batch, 2.0, reader)
                        } else if which == "prev" {
                            let t = prev::Poptrie4::from_routes(v4.iter().copied()).expect("build");
                            common::churn4_with(t, &v4, batch, 2.0, reader)
                        } else {
                            let t =
                                baseline::Poptrie4::from_routes(v4.iter().copied()).expect("build");
                            common::churn4_with(t, &v4, batch, 2.0, reader)
                        };
                        println!(
                            "churn {which} routes={} batch={} reader={reader} changes_per_s={:.0} changes_per_cpu_s={:.0} publishes={} reader_lookups={} reader_misses={}",
                            r.routes, r.batch, r.changes_per_s, r.changes_per_cpu_s, r.publishes, r.lookups, r.misses
                        );
                        failed += r.misses;
                    }
                }
            }
            if failed != 0 {
                std::process::exit(1);
            }
        }
        "churn-new" => {
            // Ours alone, one batch size and reader setting, for a profile
            // of the writer (`perf record`): `churn-new OUT [BATCH] [reader]
            // [SECS]`, default batch 10,000 with the reader for 20 s.
            let arg = |i: usize| args.get(i).map(String::as_str);
            let batch = arg(3).and_then(|x| x.parse().ok()).unwrap_or(10_000);
            let reader = arg(4).is_none_or(|x| x == "reader");
            let secs = arg(5).and_then(|x| x.parse().ok()).unwrap_or(20.0);
            let (v4, _) = common::load_routes(common::REAL_V4);
            let v4 = common::dedup4(v4);
            let r = common::churn4(&v4, batch, secs, reader);
            println!(
                "churn new routes={} batch={} reader={reader} changes_per_s={:.0} changes_per_cpu_s={:.0} publishes={} reader_lookups={} reader_misses={}",
                r.routes, r.batch, r.changes_per_s, r.changes_per_cpu_s, r.publishes, r.lookups, r.misses
            );
            if r.misses != 0 {
                std::process::exit(1);
            }
        }
        other => {
            eprintln!("unknown table {other}");
            std::process::exit(2);
        }
    }
}
