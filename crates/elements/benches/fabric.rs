//! The cluster fabric's packing gain (seed 004 Tab. 2.1: 64 B frames, 2
//! nodes, 1328 kpps packed vs 714 kpps unpacked, x1.86) and its light-load
//! latency (Fig 2.10: the same with and without packing), on loopback UDP.
//!
//! Two nodes in one thread: node 0 runs `FromDevice(ext0) ->
//! FabricEncap(TO 1) -> ToDevice(fabric)` over a cycling in-memory port of
//! 4096 distinct 60-byte UDP frames (64 B on the wire); node 1 runs
//! `FromDevice(fabric) -> FabricDecap -> ToDevice(ext0)` (output
//! discarded). Each iteration is one poll of node 0 (a burst of frames
//! in, datagrams out through the real socket) and node 1's polls until
//! the burst has left its external port.
//!
//! * `saturated/PACKING`: 32-frame bursts, packing degree 1 (off), 2, 4,
//!   8, 16, 29 (seed 004 Fig 2.9: the rate climbs with the degree).
//! * `light/PACKING`: one frame per poll, the round trip of one frame.
//!
//! Run: `cargo bench -p elements --bench fabric`.

use std::net::SocketAddr;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elements::{AnyElement, Env};
use graph::{Graph, Runner};
use io::fabric::FabricDevice;
use pkt::{build, Device, Mac, MemDevice, Pool, TxMode};

#[path = "../tests/common/fabric_dev.rs"]
mod fabric_dev;
use fabric_dev::Dev;

fn frames() -> Vec<Vec<u8>> {
    let (a, r) = (Mac([2, 0, 0, 0, 1, 2]), Mac([2, 0, 0, 0, 0, 1]));
    (0..4096u32)
        .map(|i| {
            let d = [198, 18, 3, (i % 250) as u8 + 1];
            build::udp4(
                r,
                a,
                [198, 18, 1, 2],
                d,
                64,
                1000 + (i / 250) as u16,
                9,
                &[0; 18],
            )
        })
        .collect()
}

struct Pair {
    a: Runner<AnyElement, Dev>,
    b: Runner<AnyElement, Dev>,
}

impl Pair {
    fn new(packing: usize, burst: usize) -> Pair {
        let lo: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let mut fa = FabricDevice::bind("fabric", lo, &[]).expect("bind");
        let mut fb = FabricDevice::bind("fabric", lo, &[]).expect("bind");
        fa.set_peer(1, fb.local_addr().expect("b")).expect("peer");
        fb.set_peer(0, fa.local_addr().expect("a")).expect("peer");
        let ca = format!(
            "FromDevice(ext0) -> FabricEncap(NODE 0, NODES 2, PACKING {packing}, TO 1, PORT 0) -> ToDevice(fabric);"
        );
        let cb = "FromDevice(fabric) -> d :: FabricDecap(NODE 1, PORTS 1); d[0] -> ToDevice(ext0); d[1] -> ToDevice(fabric);";
        let mut env = Env::new();
        let ga = Graph::from_str(&ca, "a.click", &mut env, Pool::new(4096)).expect("graph a");
        let gb = Graph::from_str(cb, "b.click", &mut env, Pool::new(4096)).expect("graph b");
        let ext_a = MemDevice::cycling("ext0", frames());
        let ext_b = MemDevice::new("ext0", vec![]).with_tx_mode(TxMode::Discard);
        Pair {
            a: Runner::new(ga, vec![Dev::Mem(ext_a), Dev::Fab(fa)], burst).expect("a"),
            b: Runner::new(gb, vec![Dev::Mem(ext_b), Dev::Fab(fb)], burst).expect("b"),
        }
    }

    fn delivered(&self) -> u64 {
        self.b.devices().first().map_or(0, |d| d.stats().tx)
    }

    /// One burst from node 0's port to node 1's port.
    fn step(&mut self, burst: u64) {
        let want = self.delivered() + burst;
        self.a.poll();
        // Loopback delivery completes within the send call in practice;
        // bound the wait anyway so a lost datagram cannot hang the bench.
        for _ in 0..10_000 {
            self.b.poll();
            if self.delivered() >= want {
                return;
            }
        }
        panic!("lost frames: {} of {want}", self.delivered());
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("fabric/saturated");
    g.throughput(Throughput::Elements(32));
    for packing in [1usize, 2, 4, 8, 16, 29] {
        let mut p = Pair::new(packing, 32);
        g.bench_function(format!("packing_{packing}"), |b| b.iter(|| p.step(32)));
    }
    g.finish();
    let mut g = c.benchmark_group("fabric/light");
    g.throughput(Throughput::Elements(1));
    for packing in [1usize, 16] {
        let mut p = Pair::new(packing, 1);
        g.bench_function(format!("packing_{packing}"), |b| b.iter(|| p.step(1)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
