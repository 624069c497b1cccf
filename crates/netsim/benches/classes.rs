//! Origin classes (`netsim::fast`, `tessera sim run --origin-classes`) on
//! `topo`'s AS-relationship graph, one prefix per origin: every origin's
//! stable routes at every AS. `NETSIM_BENCH_ASES` (default 20,000) and
//! `NETSIM_BENCH_THREADS` (default 1) change the size and the threads; the
//! untimed setup run prints the totals and its wall time (with
//! `--bench nomatch` only that run happens: the 80,000-AS figure).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use topo::build::{self, Finish, Kind, Spec};
use topo::prefixes::Counts;

fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bench(c: &mut Criterion) {
    let ases = size("NETSIM_BENCH_ASES", 20_000);
    let threads = size("NETSIM_BENCH_THREADS", 1);
    let Ok(mut b) = build::generate(&Spec {
        kind: Kind::AsRel,
        nodes: ases as u32,
        ..Spec::default()
    }) else {
        return;
    };
    let fin = Finish {
        annotate: Some(0.0),
        prefixes: Some(Counts::PerOrigin(1)),
        seed: 1,
    };
    if build::finish(&mut b, &fin).is_err() {
        return;
    }
    let g = b.graph;
    let t0 = std::time::Instant::now();
    let Ok((t, _)) = netsim::fast::run_all(&g, threads, &[], &|_| {}) else {
        return;
    };
    let wall = t0.elapsed().as_secs_f64();
    eprintln!(
        "{ases} ASes, {} links, {threads} threads: {} classes, {} (AS, prefix) routes, {} unreachable, {wall:.2} s wall ({:.0} routes/s)",
        g.links.len(),
        t.classes,
        t.routes,
        t.unreachable,
        t.routes as f64 / wall.max(1e-9)
    );
    let mut grp = c.benchmark_group("classes");
    grp.sample_size(10);
    grp.throughput(Throughput::Elements(t.routes));
    grp.bench_function(format!("as-rel-{ases}x{threads}t"), |b| {
        b.iter(|| netsim::fast::run_all(&g, threads, &[], &|_| {}).map(|r| r.0.routes))
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
