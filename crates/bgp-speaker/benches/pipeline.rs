//! Throughput of the UPDATE pipeline modes without sockets (Tessera issue
//! 5): N peers x M shared prefixes of decoded UPDATEs (competing AS paths
//! and MEDs, ~8 prefixes per UPDATE) pushed through each mode by one
//! feeder thread per peer (standing in for the session threads, which
//! split batches by shard in the sharded mode), until every peer has been
//! handed its export. The RIB threads, split, export and encoding are the
//! daemon's own (`testkit::inproc`).
//!
//! `cargo bench -p bgp-speaker --bench pipeline`; `PIPE_PEERS` and
//! `PIPE_PREFIXES` change N and M (default 10 x 20000).

use bgp_speaker::msg::DecodedUpdate;
use bgp_speaker::pipeline::{Locks, Mode};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use testkit::inproc::{shared_table, timed_load, FakePeer};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn modes(c: &mut Criterion) {
    let n = env("PIPE_PEERS", 10);
    let m = env("PIPE_PREFIXES", 20_000);
    let peers: Vec<FakePeer> = (0..n).map(FakePeer::nth).collect();
    let tables: Vec<Vec<Vec<DecodedUpdate>>> = peers
        .iter()
        .enumerate()
        .map(|(i, p)| shared_table(i, p.asn, m, 8))
        .collect();
    let mut g = c.benchmark_group("pipeline");
    g.sample_size(10);
    g.throughput(Throughput::Elements((n * m) as u64));
    let mut cases = vec![
        ("sequential".to_string(), Mode::Sequential),
        ("per-peer".to_string(), Mode::PerPeer(Locks::Stripes)),
        ("per-peer-fine".to_string(), Mode::PerPeer(Locks::Fine)),
    ];
    for t in [1, 2, 4, 8] {
        cases.push((format!("sharded/{t}"), Mode::Sharded(t)));
        cases.push((
            format!("worker-pool/{t}"),
            Mode::WorkerPool(t, Locks::Stripes),
        ));
        cases.push((
            format!("worker-pool-fine/{t}"),
            Mode::WorkerPool(t, Locks::Fine),
        ));
    }
    for (name, mode) in cases {
        g.bench_function(&name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| timed_load(mode, &peers, &tables)).sum())
        });
    }
    g.finish();
}

criterion_group!(benches, modes);
criterion_main!(benches);
