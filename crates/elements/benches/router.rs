//! Whole-graph forwarding benchmark (issue 4: "whole graph from memory
//! batches ... on 64 B packets, one core: at least 20 Mpps").
//!
//! The graph: FromDevice -> Classifier -> CheckIpHeader -> Ip4Lookup over
//! the full IPv4 table of the RouteViews jinx RIB (497k prefixes, from
//! `/work/shared/data/mrt/`, in a `Poptrie4` read through the lock-free
//! `lpm::publish` handle, one read section per batch) -> DecIpTtl ->
//! EtherRewrite (static neighbours) -> ToDevice. Input: 4096 distinct
//! 64-byte UDP frames (60 bytes + FCS) to random hosts inside the table's
//! prefixes, replayed from memory; output discarded. The baseline in the
//! same run is the cost of the device copy alone (FromDevice -> ToDevice).
//!
//! `ip4_fused_64B` runs the same table and frames through the fused path
//! of the daemon's fast graph: FromDevice -> Classifier(ip checked, -)
//! (the header check fused into the classifier) -> Ip4Forward (TTL and
//! lookup in one element) -> EtherRewrite -> ToDevice; `ip4_full_table_64B`
//! keeps the unfused chain above, for the comparison in the same run.
//! `ip4_onepass_64B` is tesserad's default built-in graph: the fused path
//! with the MAC rewrite in Ip4Forward's pass (`REWRITE rw0, REWRITE rw1`:
//! the resolved neighbours of the EtherRewrites, shared), straight to the
//! ToDevice.
//!
//! Run: `cargo bench -p elements --bench router`.

use std::path::PathBuf;

use base::thread_cpu_time;
use base::Prefix;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elements::{AnyElement, Env, NextHopTable, NhEntry};
use graph::{Graph, Runner};
use lpm::publish::left_right;
use lpm::{LpmMut, NextHop, Poptrie4};
use mrt::{Body, MrtReader};
use pkt::{build, Device, Mac, MemDevice, Pool};

const POLLS: u64 = 64;
const BURST: usize = 256;

fn mrt_file(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt");
    assert!(
        d.is_dir(),
        "shared MRT data missing: expected {} (see /work/shared/data/mrt/README.md)",
        d.display()
    );
    d.join(name)
}

/// The IPv4 prefixes of the jinx full-table RIB.
fn full_table() -> Vec<base::Prefix4> {
    let path = mrt_file("routeviews.route-views.jinx.ribs.1401487200.bz2");
    let mut r = MrtReader::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut v = Vec::new();
    while let Some(rec) = r.next_record() {
        let Ok(rec) = rec else { break };
        if let Body::Rib(rib) = rec.body {
            if let Prefix::V4(p) = rib.prefix {
                v.push(p);
            }
        }
    }
    v
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

const GW: [[u8; 4]; 4] = [[10, 0, 1, 2], [10, 0, 1, 3], [10, 0, 2, 2], [10, 0, 2, 3]];

/// The unfused chain (see the crate doc).
const CHAIN: &str = "
        in0 :: FromDevice(eth0); out0 :: ToDevice(eth0); out1 :: ToDevice(eth1);
        c :: Classifier(ip, -);
        rt :: Ip4Lookup(TABLE fib, PORTS 2);
        rw0 :: EtherRewrite(MAC 02:00:00:00:00:01, IP 10.0.1.1,
                            NEIGH 10.0.1.2 02:00:00:00:01:02, NEIGH 10.0.1.3 02:00:00:00:01:03);
        rw1 :: EtherRewrite(MAC 02:00:00:00:00:02, IP 10.0.2.1,
                            NEIGH 10.0.2.2 02:00:00:00:02:02, NEIGH 10.0.2.3 02:00:00:00:02:03);
        in0 -> c; c [1] -> Discard;
        c [0] -> CheckIpHeader -> rt;
        rt [0] -> DecIpTtl -> rw0 -> out0;
        rt [1] -> DecIpTtl -> rw1 -> out1;
    ";

/// The fused path: one header parse in the classifier, then Ip4Forward.
const FUSED: &str = "
        in0 :: FromDevice(eth0); out0 :: ToDevice(eth0); out1 :: ToDevice(eth1);
        c :: Classifier(ip checked, -);
        fwd :: Ip4Forward(ADDR 10.0.1.1, ADDR 10.0.2.1, TABLE fib, PORTS 2);
        rw0 :: EtherRewrite(MAC 02:00:00:00:00:01, IP 10.0.1.1,
                            NEIGH 10.0.1.2 02:00:00:00:01:02, NEIGH 10.0.1.3 02:00:00:00:01:03);
        rw1 :: EtherRewrite(MAC 02:00:00:00:00:02, IP 10.0.2.1,
                            NEIGH 10.0.2.2 02:00:00:00:02:02, NEIGH 10.0.2.3 02:00:00:00:02:03);
        in0 -> c; c [1] -> Discard;
        c [0] -> fwd; fwd [2] -> Discard;
        fwd [0] -> rw0 -> out0;
        fwd [1] -> rw1 -> out1;
    ";

/// The one-pass path: Ip4Forward also rewrites the MAC of resolved
/// neighbours (tesserad's default).
const ONEPASS: &str = "
        in0 :: FromDevice(eth0); out0 :: ToDevice(eth0); out1 :: ToDevice(eth1);
        c :: Classifier(ip checked, -);
        rw0 :: EtherRewrite(MAC 02:00:00:00:00:01, IP 10.0.1.1,
                            NEIGH 10.0.1.2 02:00:00:00:01:02, NEIGH 10.0.1.3 02:00:00:00:01:03);
        rw1 :: EtherRewrite(MAC 02:00:00:00:00:02, IP 10.0.2.1,
                            NEIGH 10.0.2.2 02:00:00:00:02:02, NEIGH 10.0.2.3 02:00:00:00:02:03);
        fwd :: Ip4Forward(ADDR 10.0.1.1, ADDR 10.0.2.1, TABLE fib, PORTS 2,
                          REWRITE rw0, REWRITE rw1);
        in0 -> c; c [1] -> Discard;
        c [0] -> fwd; fwd [2] -> Discard;
        fwd [0] -> rw0 -> out0; fwd [3] -> out0;
        fwd [1] -> rw1 -> out1; fwd [4] -> out1;
    ";

fn router(
    prefixes: &[base::Prefix4],
    frames: Vec<Vec<u8>>,
    cfg: &str,
    pool: Pool,
) -> Result<Runner<AnyElement, MemDevice>, graph::ConfigError> {
    let mut t = Poptrie4::new();
    for (i, p) in prefixes.iter().enumerate() {
        t.insert(*p, NextHop((i % 4) as u32)).expect("insert");
    }
    let w = left_right(t);
    let mut nh = NextHopTable::new();
    for (i, g) in GW.iter().enumerate() {
        let mut gw = [0u8; 16];
        gw[..4].copy_from_slice(g);
        nh.set(
            NextHop(i as u32),
            NhEntry {
                port: (i / 2) as u16,
                gw,
                tag: 0,
            },
        );
    }
    let mut env = Env::new();
    env.add_table4("fib", Box::new(w.reader()), nh);
    // The writer half is dropped: the table stays alive through the reader.
    drop(w);
    let g = Graph::from_str(cfg, "bench.click", &mut env, pool)?;
    Ok(Runner::new(
        g,
        vec![
            MemDevice::cycling("eth0", frames),
            MemDevice::cycling("eth1", vec![]),
        ],
        BURST,
    )
    .unwrap())
}

fn frames(prefixes: &[base::Prefix4], n: usize) -> Vec<Vec<u8>> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let (rm, am) = (Mac([2, 0, 0, 0, 0, 1]), Mac([2, 0, 0, 0, 1, 2]));
    (0..n)
        .map(|_| {
            let p = prefixes[(r.next() % prefixes.len() as u64) as usize];
            let host = (r.next() as u32)
                .checked_shr(u32::from(p.len()))
                .unwrap_or(0);
            let dst = (p.masked().addr_bits() | host).to_be_bytes();
            build::udp4(rm, am, [10, 0, 1, 2], dst, 64, 1000, 2000, &[0; 18])
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let prefixes = full_table();
    assert!(prefixes.len() > 400_000, "expected a full table");
    let fr = frames(&prefixes, 4096);
    assert_eq!(fr[0].len(), 60, "64-byte frames on the wire");
    let mut r = router(&prefixes, fr.clone(), CHAIN, Pool::new(4096)).expect("chain graph");
    // None when built against an older `elements` without the fused
    // classifier test (to compare builds in one session).
    let mut f = router(&prefixes, fr.clone(), FUSED, Pool::new(4096))
        .map_err(|e| eprintln!("fused graph not built: {e}"))
        .ok();
    // None before `Ip4Forward(REWRITE ...)` existed.
    let mut one = router(&prefixes, fr.clone(), ONEPASS, Pool::new(4096))
        .map_err(|e| eprintln!("one-pass graph not built: {e}"))
        .ok();
    // The fused graph over 2112-byte buffers: a stride that is not a power
    // of two spreads the packets' headers over the L1 cache's sets (with
    // 2048-byte buffers every header maps to the same few sets). Only
    // measured in the CPU table (AF_XDP's aligned UMEM needs 2048).
    let mut f2112 = Pool::with_geometry(4096, 2112, 128)
        .ok()
        .and_then(|pool| router(&prefixes, fr.clone(), FUSED, pool).ok());
    let mut base = {
        let mut env = Env::new();
        let g = Graph::from_str(
            "FromDevice(eth0) -> ToDevice(eth0);",
            "base.click",
            &mut env,
            Pool::new(4096),
        )
        .unwrap();
        Runner::new(g, vec![MemDevice::cycling("eth0", fr.clone())], BURST).unwrap()
    };
    // Warm up and check that both graphs forward (not drop) them, the
    // same packets to the same ports.
    for _ in 0..POLLS {
        r.poll();
        if let Some(f) = f.as_mut() {
            f.poll();
        }
        if let Some(f) = one.as_mut() {
            f.poll();
        }
    }
    let sent =
        |r: &Runner<AnyElement, MemDevice>| r.devices()[0].stats().tx + r.devices()[1].stats().tx;
    let fwd = sent(&r);
    assert!(
        fwd * 10 >= r.stats().rx * 9,
        "most packets must be forwarded: {fwd} of {}",
        r.stats().rx
    );
    for f in [&f, &one].into_iter().flatten() {
        assert_eq!(
            (sent(f), f.devices()[1].stats().tx),
            (fwd, r.devices()[1].stats().tx),
            "the fused graphs forward the same packets to the same ports"
        );
    }
    if let Some(f) = &one {
        // Every packet was rewritten in Ip4Forward's pass.
        let rw = |n| f.graph.stats_of(n).map_or(0, |s| s.rx);
        assert_eq!(rw("rw0") + rw("rw1"), 0, "the EtherRewrites saw no packet");
    }

    let mut g = c.benchmark_group("router");
    g.throughput(Throughput::Elements(POLLS * BURST as u64));
    g.bench_function("ip4_full_table_64B", |b| {
        b.iter(|| {
            for _ in 0..POLLS {
                r.poll();
            }
        })
    });
    if let Some(f) = f.as_mut() {
        g.bench_function("ip4_fused_64B", |b| {
            b.iter(|| {
                for _ in 0..POLLS {
                    f.poll();
                }
            })
        });
    }
    if let Some(f) = one.as_mut() {
        g.bench_function("ip4_onepass_64B", |b| {
            b.iter(|| {
                for _ in 0..POLLS {
                    f.poll();
                }
            })
        });
    }
    g.bench_function("baseline_device_copy_only", |b| {
        b.iter(|| {
            for _ in 0..POLLS {
                base.poll();
            }
        })
    });
    g.finish();
    let mut graphs = vec![("chain", &mut r)];
    if let Some(f) = f.as_mut() {
        graphs.push(("fused", f));
    }
    if let Some(f) = one.as_mut() {
        graphs.push(("onepass", f));
    }
    if let Some(f) = f2112.as_mut() {
        graphs.push(("fused2112", f));
    }
    graphs.push(("baseline", &mut base));
    cpu_table(&mut graphs);
}

/// Mpps per CPU second of this thread (not wall time: the machine is
/// shared, and a core's throughput is what the target is about), the
/// graphs taking turns, `ROUNDS` rounds of `CPU_POLLS` polls each; prints
/// each round and the median.
fn cpu_table(graphs: &mut [(&str, &mut Runner<AnyElement, MemDevice>)]) {
    const ROUNDS: usize = 7;
    const CPU_POLLS: u64 = 4000;
    // `ROUTER_ONLY=NAME` measures that graph alone (to `perf record` one
    // graph: `router --bench none` with it set skips criterion's runs).
    let only = std::env::var("ROUTER_ONLY").ok();
    let skip = |name: &str| only.as_deref().is_some_and(|o| o != name);
    let mut res = vec![Vec::with_capacity(ROUNDS); graphs.len()];
    for _ in 0..ROUNDS {
        for ((name, r), out) in graphs.iter_mut().zip(res.iter_mut()) {
            if skip(name) {
                continue;
            }
            let rx0 = r.stats().rx;
            let c0 = thread_cpu_time().unwrap_or_default().as_secs_f64();
            for _ in 0..CPU_POLLS {
                r.poll();
            }
            let dt = thread_cpu_time().unwrap_or_default().as_secs_f64() - c0;
            out.push((r.stats().rx - rx0) as f64 / dt / 1e6);
        }
    }
    println!(
        "Mpps per CPU second ({ROUNDS} rounds of {CPU_POLLS} polls of {BURST}, taking turns):"
    );
    for ((name, _), v) in graphs.iter().zip(res.iter_mut()) {
        if v.is_empty() {
            continue;
        }
        let rounds: Vec<String> = v.iter().map(|x| format!("{x:.2}")).collect();
        v.sort_by(f64::total_cmp);
        println!(
            "  {name:>8}: median {:.2}  rounds {}",
            v[ROUNDS / 2],
            rounds.join(" ")
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
