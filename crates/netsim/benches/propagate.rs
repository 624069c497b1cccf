//! Full propagation of a topology's prefixes with MRAI (30 s, jittered)
//! and the default processing delays: simulated message events per second
//! of wall time. One iteration = build, start, run to quiescence. The
//! topology is `topo`'s seeds' graph (BRITE Waxman, degree 10-15,
//! relationships by degree rank) or, with `NETSIM_BENCH_MODEL=as-rel`, its
//! AS-relationship generator; prefixes are `topo`'s (a total shared out by
//! real origin counts, real lengths). `NETSIM_BENCH_ASES` /
//! `NETSIM_BENCH_PREFIXES` change the size, `NETSIM_BENCH_THREADS` the
//! worker threads (default 1).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use netsim::{Scenario, Sim, SimConfig};
use topo::build::{self, Finish, Kind, Spec};
use topo::prefixes::Counts;

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
    let kind = match std::env::var("NETSIM_BENCH_MODEL").as_deref() {
        Ok("as-rel") => Kind::AsRel,
        _ => Kind::Waxman,
    };
    let cfg = SimConfig {
        threads,
        ..SimConfig::default()
    };
    let Ok(mut b) = build::generate(&Spec {
        kind,
        nodes: ases as u32,
        ..Spec::default()
    }) else {
        return;
    };
    let fin = Finish {
        annotate: Some(0.0),
        prefixes: Some(Counts::Total(prefixes)),
        seed: 1,
    };
    if build::finish(&mut b, &fin).is_err() {
        return;
    }
    let g = b.graph;
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
