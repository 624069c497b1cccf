//! Throughput of the UPDATE pipeline modes without sockets (Tessera issue
//! 5): N peers x M shared prefixes of decoded UPDATEs (competing AS paths
//! and MEDs, ~8 prefixes per UPDATE) pushed through each mode by one
//! feeder thread per peer (standing in for the session threads, which
//! split batches by shard in the sharded mode), until every peer has been
//! handed its export. The RIB threads, split, export and encoding are the
//! daemon's own (`bgp_speaker::inproc`).
//!
//! `cargo bench -p bgp-speaker --bench pipeline`; `PIPE_PEERS` and
//! `PIPE_PREFIXES` change N and M (default 10 x 20000).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use base::{Asn, Prefix, Prefix4};
use bgp_rib::AttrsBuilder;
use bgp_speaker::inproc::{FakePeer, InProc};
use bgp_speaker::msg::DecodedUpdate;
use bgp_speaker::pipeline::Mode;
use bgp_wire::{AsPath, AttrValue, NextHop, Nlri, Origin, PathAttr};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Peer `p`'s table: every prefix, in UPDATEs of 8 sharing one set.
fn table(p: usize, asn: u32, m: usize) -> Vec<Vec<DecodedUpdate>> {
    let mut ups = Vec::new();
    for (k, chunk) in (0..m as u32).collect::<Vec<_>>().chunks(8).enumerate() {
        let k = k as u32;
        let mut b = AttrsBuilder::new();
        b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
        let len = 1 + (k + p as u32) % 4;
        let mut path = vec![Asn(asn)];
        path.extend((0..len).map(|j| Asn(64900 + (j * 13 + k) % 50)));
        b.set(PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
            path,
        ))));
        b.set_next_hop(NextHop::V4(Ipv4Addr::new(10, 255, 0, p as u8 + 1)));
        b.set_med((k * 31 + p as u32 * 7) % 100);
        b.mark_clean();
        let announce = chunk
            .iter()
            .map(|&i| {
                let a = 0x0a00_0000 | (i << 8);
                Nlri::new(Prefix::V4(Prefix4::new(a, 24).expect("valid")))
            })
            .collect();
        ups.push(DecodedUpdate {
            attrs: Some(b),
            announce,
            withdraw: Vec::new(),
            end_of_rib: None,
        });
    }
    // Session batches of up to 256 UPDATEs.
    ups.chunks(256).map(<[DecodedUpdate]>::to_vec).collect()
}

/// One load: start, bring every peer up, push every table from one thread
/// per peer, wait for the export to be handed over. Returns the time from
/// the first push to the last hand-over.
fn load(mode: Mode, peers: &[FakePeer], tables: &[Vec<Vec<DecodedUpdate>>]) -> Duration {
    let ip = InProc::start(mode, peers).expect("start");
    for i in 0..peers.len() {
        ip.up(i);
    }
    ip.settle().expect("settle");
    let inputs: Vec<Vec<Vec<DecodedUpdate>>> = tables.to_vec();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for (i, batches) in inputs.into_iter().enumerate() {
            let tx = ip.sender();
            s.spawn(move || {
                for updates in batches {
                    tx.blocking_send(bgp_speaker::msg::RibInput::Updates {
                        peer: InProc::id(i),
                        updates,
                    });
                }
            });
        }
    });
    ip.settle().expect("settle");
    let dt = t0.elapsed();
    // Check the work was done (outside the timed part).
    let routes = ip.loc_rib().map(|r| r.len()).unwrap_or(0);
    assert_eq!(
        routes,
        tables.first().map_or(0, |t| t
            .iter()
            .map(|b| b.iter().map(|u| u.announce.len()).sum::<usize>())
            .sum())
    );
    for i in 0..peers.len() {
        let _ = ip.take_output(i);
    }
    ip.shutdown();
    dt
}

fn modes(c: &mut Criterion) {
    let n = env("PIPE_PEERS", 10);
    let m = env("PIPE_PREFIXES", 20_000);
    let peers: Vec<FakePeer> = (0..n).map(FakePeer::nth).collect();
    let tables: Vec<Vec<Vec<DecodedUpdate>>> = peers
        .iter()
        .enumerate()
        .map(|(i, p)| table(i, p.asn, m))
        .collect();
    let mut g = c.benchmark_group("pipeline");
    g.sample_size(10);
    g.throughput(Throughput::Elements((n * m) as u64));
    let mut cases = vec![("sequential".to_string(), Mode::Sequential)];
    for t in [1, 2, 4, 8] {
        cases.push((format!("sharded/{t}"), Mode::Sharded(t)));
    }
    for (name, mode) in cases {
        g.bench_function(&name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| load(mode, &peers, &tables)).sum())
        });
    }
    g.finish();
}

criterion_group!(benches, modes);
criterion_main!(benches);
