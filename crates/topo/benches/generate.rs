//! Generation times: the 80,000-AS relationship graph, the default BRITE
//! 1000-node graph, and picking the vantage point in it.

use criterion::{criterion_group, criterion_main, Criterion};
use topo::build::{self, Kind, Spec};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("topo");
    g.sample_size(10);
    g.bench_function("as-rel 80000", |b| {
        b.iter(|| {
            build::generate(&Spec {
                kind: Kind::AsRel,
                nodes: 80_000,
                ..Spec::default()
            })
        })
    });
    g.bench_function("waxman 1000 degree 10-15", |b| {
        b.iter(|| build::generate(&Spec::default()))
    });
    let w = build::generate(&Spec::default()).unwrap();
    g.bench_function("pick degree 12 in waxman 1000", |b| {
        b.iter(|| topo::centrality::pick(&w.graph, 12))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
