//! What views cost an export round (`bgp_core::views`): three eBGP peers
//! hold the same 20k prefixes; one round is peer 3 (not the best)
//! re-announcing 1000 of them with a new AS path, then `propagate`. With
//! no view, the round is the Loc-RIB's (nothing collected for views);
//! with views, each looks at the 1000 changed prefixes. Variants: 0, 1
//! and 4 views; the differences are the figure (docs/BENCHMARKS.md).

use std::time::Duration;

use base::{Instant, Prefix};
use bgp_core::Part;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

#[path = "../tests/common/mod.rs"]
mod common;

use common::Harness;

const PREFIXES: u32 = 20_000;
const CHURN: usize = 1000;

fn prefixes() -> Vec<Prefix> {
    (0..PREFIXES)
        .map(|i| {
            let a = 0x0a00_0000 | (i << 8);
            format!("{}.{}.{}.0/24", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff)
                .parse()
                .expect("prefix")
        })
        .collect()
}

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn setup(views: usize, all: &[Prefix]) -> Harness {
    let mut h = Harness::new(Part::WHOLE);
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
    h.drain(&[]);
    let sets: [&[&str]; 4] = [&["p1"], &["p2", "p3"], &["p3"], &["p1", "p2", "p3"]];
    for (i, s) in sets.iter().take(views).enumerate() {
        let names: Vec<String> = s.iter().map(|x| x.to_string()).collect();
        h.core.set_view(&format!("v{i}"), &names, |_| {});
    }
    h
}

fn bench(c: &mut Criterion) {
    let all = prefixes();
    let churn: Vec<Prefix> = all.iter().step_by(all.len() / CHURN).copied().collect();
    let mut g = c.benchmark_group("views_round");
    g.throughput(Throughput::Elements(churn.len() as u64));
    for views in [0usize, 1, 2, 3, 4] {
        let mut h = setup(views, &all);
        let mut k = 0u64;
        g.bench_function(format!("{views}_views"), |b| {
            b.iter_batched(
                || {
                    k += 1;
                    format!("path=65003,{}", 64000 + k % 500)
                },
                |path| {
                    h.announce(at(2), 3, &churn, &[path.as_str()]);
                    h.core.propagate(at(2), &mut h.out);
                    h.out.clear();
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
