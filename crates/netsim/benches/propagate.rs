//! Full propagation of a random relationship graph's prefixes with MRAI
//! (30 s, jittered) and the default processing delays: simulated message
//! events per second of wall time. One iteration = build, start, run to
//! quiescence. `NETSIM_BENCH_ASES` / `NETSIM_BENCH_PREFIXES` change the size,
//! `NETSIM_BENCH_THREADS` the worker threads (default 1).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use netsim::{gen, Scenario, Sim, SimConfig};

fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bench(c: &mut Criterion) {
    let ases = size("NETSIM_BENCH_ASES", 200);
    let prefixes = size("NETSIM_BENCH_PREFIXES", 1000) as u32;
    let threads = size("NETSIM_BENCH_THREADS", 1);
    let cfg = SimConfig {
        threads,
        ..SimConfig::default()
    };
    let mut g = gen::random(ases, 1);
    gen::assign_latencies(&mut g, 2000, 40_000, 1);
    gen::assign_prefixes(&mut g, prefixes, 1);
    // Messages per run, for the throughput figure.
    let mut s = Sim::new(&g, cfg.clone());
    s.start(&Scenario::default()).unwrap_or_default();
    s.run_to_end(u64::MAX, &mut ());
    let msgs = s.messages();
    eprintln!(
        "{ases} ASes, {prefixes} prefixes, {threads} threads: {msgs} messages, {} events, {} paths, {:.1} s simulated, windows {:?}",
        s.events(),
        s.path_count(),
        s.now_ns() as f64 / 1e9,
        s.windows()
    );
    let mut grp = c.benchmark_group("propagate");
    grp.sample_size(10);
    grp.throughput(Throughput::Elements(msgs));
    grp.bench_function(format!("{ases}x{prefixes}x{threads}t"), |b| {
        b.iter(|| {
            let mut s = Sim::new(&g, cfg.clone());
            s.start(&Scenario::default()).unwrap_or_default();
            s.run_to_end(u64::MAX, &mut ());
            s.messages()
        })
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
