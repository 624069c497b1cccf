//! LPM benchmarks (issue 4): ns per lookup, batched and single, on the real
//! ~497k-route IPv4 table, an 800k synthetic IPv4 table with the real length
//! mix, and a 200k IPv6 table (real route-views6 routes padded with
//! synthetic ones); build time; FIB churn through `lpm::publish` while a
//! reader thread looks up. The naive reference table is measured in the same
//! run as the baseline. Table sizes and memory go to stderr.
//!
//! `cargo bench -p lpm --bench lookup`; `scripts/bench-lpm` adds the DPDK
//! comparison on the same routes and destinations.

#[path = "../tests/common/mod.rs"]
#[allow(clippy::type_complexity)]
mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};

use lpm::reference::Reference4;
use lpm::{Lpm, LpmMut, Poptrie4, Poptrie6};

/// Destinations per measured iteration.
const N: usize = 1 << 16;
/// Batch handed to `lookup_batch`, as a forwarding worker would.
const BURST: usize = 64;

fn lookups<A: Copy, T: Lpm<A>>(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    t: &T,
    addrs: &[A],
) {
    g.throughput(Throughput::Elements(addrs.len() as u64));
    g.bench_function(format!("batched/{name}"), |b| {
        let mut out = vec![None; BURST];
        b.iter(|| {
            for c in addrs.chunks(BURST) {
                t.lookup_batch(c, &mut out);
                black_box(&out);
            }
        })
    });
    g.bench_function(format!("single/{name}"), |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &a in addrs {
                acc = acc.wrapping_add(t.lookup(black_box(a)).map_or(1, |n| n.0));
            }
            acc
        })
    });
}

fn memory(name: &str, routes: usize, m: lpm::MemoryUsage) {
    eprintln!(
        "{name}: {routes} routes; lookup structures {:.1} MiB (live nodes {:.1} MiB, live leaves {:.1} MiB), control {:.1} MiB",
        m.lookup as f64 / 1048576.0,
        m.live_nodes as f64 / 1048576.0,
        m.live_leaves as f64 / 1048576.0,
        m.control as f64 / 1048576.0
    );
}

fn quick(g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(20);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));
}

fn bench(c: &mut Criterion) {
    let (v4, _) = common::load_routes(common::REAL_V4);
    let v4 = common::dedup4(v4);
    let (_, v6) = common::load_routes(common::REAL_V6);
    let synth = common::synth4(&v4, 800_000, 42);
    let v6 = common::pad6(&v6, 200_000, 43);

    let real = Poptrie4::from_routes(v4.iter().copied()).expect("build");
    memory("v4 real", real.len(), real.memory());
    let mut g = c.benchmark_group("lpm_v4_real");
    quick(&mut g);
    lookups(&mut g, "uniform", &real, &common::dests_uniform4(N, 7));
    lookups(&mut g, "inroute", &real, &common::dests_in4(&v4, N, 8));
    // Baseline in the same run: the naive reference (33 hash probes).
    let mut reference = Reference4::default();
    for &(p, nh) in &v4 {
        reference.insert(p, nh).expect("insert");
    }
    let few = common::dests_in4(&v4, 4096, 8);
    g.throughput(Throughput::Elements(few.len() as u64));
    g.bench_function("single/inroute_reference", |b| {
        b.iter(|| {
            few.iter()
                .filter(|&&a| reference.lookup(a).is_some())
                .count()
        })
    });
    g.finish();
    drop(reference);

    let st = Poptrie4::from_routes(synth.iter().copied()).expect("build");
    memory("v4 synthetic", st.len(), st.memory());
    let mut g = c.benchmark_group("lpm_v4_synth800k");
    quick(&mut g);
    lookups(&mut g, "uniform", &st, &common::dests_uniform4(N, 7));
    lookups(&mut g, "inroute", &st, &common::dests_in4(&synth, N, 8));
    g.finish();
    drop(st);

    let t6 = Poptrie6::from_routes(v6.iter().copied()).expect("build");
    memory("v6", t6.len(), t6.memory());
    let mut g = c.benchmark_group("lpm_v6_200k");
    quick(&mut g);
    lookups(&mut g, "inroute", &t6, &common::dests_in6(&v6, N, 9));
    g.finish();
    drop(t6);

    let mut g = c.benchmark_group("lpm_build");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(v4.len() as u64));
    g.bench_function("v4_real_bulk", |b| {
        b.iter(|| Poptrie4::from_routes(v4.iter().copied()).expect("build"))
    });
    g.bench_function("v4_real_incremental", |b| {
        b.iter(|| {
            let mut t = Poptrie4::new();
            for &(p, nh) in &v4 {
                t.insert(p, nh).expect("insert");
            }
            t
        })
    });
    g.throughput(Throughput::Elements(v6.len() as u64));
    g.bench_function("v6_200k_bulk", |b| {
        b.iter(|| Poptrie6::from_routes(v6.iter().copied()).expect("build"))
    });
    g.finish();
}

/// FIB churn: not a criterion loop (the reader thread and the publication
/// protocol are the thing measured), so it reports changes/s itself and
/// fails the bench if a lookup missed during an update.
fn churn(_c: &mut Criterion) {
    let (v4, _) = common::load_routes(common::REAL_V4);
    let v4 = common::dedup4(v4);
    for batch in [100, 1_000, 10_000] {
        let r = common::churn4(&v4, batch, 2.0, true);
        eprintln!(
            "lpm_churn/batch {batch}: {:.0} changes/s through publish ({} publishes), reader {} lookups, {} failed",
            r.changes_per_s, r.publishes, r.lookups, r.misses
        );
        assert_eq!(r.misses, 0, "lookups failed during the update");
    }
}

criterion_group!(benches, bench, churn);
criterion_main!(benches);
