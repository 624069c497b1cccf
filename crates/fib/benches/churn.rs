//! FIB churn while forwarding (issue 4): the real ~500k-route IPv4 table
//! is moved, whole, back and forth between two gateways on two ports,
//! through the control path a live router uses (`Fib::apply`: resolution,
//! refcounted adjacencies, deltas; then one `lpm::publish` left-right swap
//! per batch), while a forwarding core runs its real per-batch loop (the
//! dataplane's graph with the fused `Ip4Forward`, `Engine::Fast`)
//! over in-memory ports whose frames all go to destinations inside the
//! table. A frame that finds no route or an unresolved adjacency is a
//! packet lost to an update: the target is zero of them at >= 1M changes/s.
//!
//! Baselines in the same run: the writer alone (no reader) and the worker
//! alone (no churn), and each writer phase twice: publications through
//! `FibTables::absorb_all` (the batched path the daemon takes: each
//! family's route changes handed to the Poptrie as one batch) and through
//! `FibTables::absorb` one delta at a time (the path before it).
//! `cargo bench -p fib --bench churn` (env `SECS`: seconds per phase,
//! default 3; `BATCH`: changes per publication, default 4096;
//! `ONE_BY_ONE_FIRST=1` runs the one-by-one phase of each pair first, to
//! see order effects). Prints one result block on stdout.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base::thread_cpu_time;
use base::{Prefix, Prefix4};
use fib::dataplane::{Engine, GraphPort, GraphWorker, LoopConfig, WorkerCounters};
use fib::{Change, Fib, FibTables, PortSpec};
use io::rss::spsc;
use io::IoError;
use lpm::publish::{left_right, Absorb, Writer};
use mrt::{Body, MrtReader};
use pkt::{Batch, DevStats, Device, Pool};

const REAL_V4: &str = "routeviews.route-views.jinx.ribs.1401487200.bz2";
const G1: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 2);
const G2: Ipv4Addr = Ipv4Addr::new(10, 3, 0, 2);
const MAC1: [u8; 6] = [2, 0, 0, 0, 0x0b, 0];
const MAC2: [u8; 6] = [2, 0, 0, 0, 0x0c, 0];
const FRAME: usize = 64;

fn routes() -> Vec<Prefix4> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt");
    let p = d.join(REAL_V4);
    assert!(
        p.is_file(),
        "shared MRT data missing: {} (see /work/shared/data/mrt/README.md)",
        p.display()
    );
    let mut r = MrtReader::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut v = Vec::new();
    while let Some(rec) = r.next_record() {
        let Ok(rec) = rec else { break };
        if let Body::Rib(rib) = rec.body {
            if let Prefix::V4(p) = rib.prefix {
                // Connected prefixes of the bench's ports stay connected.
                if p.len() >= 8 && (p.addr_bits() >> 24) != 10 {
                    v.push(p);
                }
            }
        }
    }
    v.sort_unstable_by_key(|p| (p.addr_bits(), p.len()));
    v.dedup();
    v
}

/// Frames to hosts inside the table's prefixes, from port 0; ports 1 and
/// 2 count what they transmit, per destination MAC.
struct MemPort {
    name: &'static str,
    frames: Vec<[u8; FRAME]>,
    next: usize,
    to_g1: u64,
    to_g2: u64,
    sent: u64,
}

impl MemPort {
    fn new(name: &'static str, frames: Vec<[u8; FRAME]>) -> Self {
        MemPort {
            name,
            frames,
            next: 0,
            to_g1: 0,
            to_g2: 0,
            sent: 0,
        }
    }
}

impl Device for MemPort {
    type Error = IoError;
    fn name(&self) -> &str {
        self.name
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        if self.frames.is_empty() {
            return 0;
        }
        let mut n = 0;
        for _ in 0..max.min(batch.room()) {
            // A fresh copy: the worker rewrites TTL, checksum and MACs.
            let Some(p) = pool.alloc_from(&self.frames[self.next]) else {
                break;
            };
            self.next = (self.next + 1) % self.frames.len();
            let _ = batch.push(p);
            n += 1;
        }
        n
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        let n = batch.len();
        self.sent += n as u64;
        for p in batch.drain() {
            match p.data().get(0..6) {
                Some(m) if m == MAC1 => self.to_g1 += 1,
                Some(m) if m == MAC2 => self.to_g2 += 1,
                _ => {}
            }
        }
        n
    }
    fn stats(&self) -> DevStats {
        DevStats {
            tx: self.sent,
            ..DevStats::default()
        }
    }
}

fn frame_to(dst: Ipv4Addr, src_mac: [u8; 6], dst_mac: [u8; 6]) -> [u8; FRAME] {
    let mut f = [0u8; FRAME];
    f[0..6].copy_from_slice(&dst_mac);
    f[6..12].copy_from_slice(&src_mac);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&46u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 1, 0, 2]);
    ip[16..20].copy_from_slice(&dst.octets());
    let c = pkt::checksum::checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f
}

fn ports() -> (Vec<PortSpec>, Vec<GraphPort>) {
    let a = [(10, 1), (10, 2), (10, 3)];
    let spec = a
        .iter()
        .enumerate()
        .map(|(i, (x, y))| PortSpec {
            name: format!("m{i}"),
            addrs: vec![(IpAddr::V4(Ipv4Addr::new(*x, *y, 0, 1)), 24)],
        })
        .collect();
    let info = a
        .iter()
        .enumerate()
        .map(|(i, (x, y))| GraphPort {
            mac: [2, 0, 0, 0, 1, i as u8],
            addrs: vec![(IpAddr::V4(Ipv4Addr::new(*x, *y, 0, 1)), 24)],
        })
        .collect();
    (spec, info)
}

struct Churned {
    changes: u64,
    publishes: u64,
    secs: f64,
    /// CPU time of the writer thread (the machine is shared: wall time
    /// includes other people's compilations, this does not).
    cpu: f64,
}

/// How a publication applies its deltas to each copy.
#[derive(Copy, Clone, PartialEq)]
enum Apply {
    /// `Writer::publish`: `FibTables::absorb_all`, batched.
    Batched,
    /// `FibTables::absorb` on each delta in order (the path before).
    OneByOne,
}

/// Moves the whole table to the other gateway, `batch` changes per
/// publication, until `secs` pass (whole rounds are not required).
fn churn(
    fib: &mut Fib,
    w: &mut Writer<FibTables>,
    table: &[Prefix4],
    batch: usize,
    secs: f64,
    round: &mut u64,
    how: Apply,
) -> Churned {
    let mut changes = 0u64;
    let mut publishes = 0u64;
    let mut deltas = Vec::new();
    let mut cs: Vec<Change> = Vec::with_capacity(batch);
    let t0 = Instant::now();
    let c0 = thread_cpu_time().unwrap_or_default().as_secs_f64();
    'outer: loop {
        *round += 1;
        let gw = IpAddr::V4(if *round % 2 == 1 { G2 } else { G1 });
        for chunk in table.chunks(batch) {
            cs.clear();
            cs.extend(chunk.iter().map(|p| Change {
                prefix: Prefix::V4(*p),
                next_hop: Some(gw),
                ecmp: Vec::new(),
            }));
            fib.apply(&cs);
            fib.drain_deltas_into(&mut deltas);
            match how {
                Apply::Batched => w.publish(&deltas).expect("publish"),
                Apply::OneByOne => w.publish_with(|t| {
                    for d in &deltas {
                        t.absorb(d).expect("absorb");
                    }
                }),
            }
            deltas.clear();
            changes += cs.len() as u64;
            publishes += 1;
            if t0.elapsed().as_secs_f64() >= secs {
                break 'outer;
            }
        }
    }
    Churned {
        changes,
        publishes,
        secs: t0.elapsed().as_secs_f64(),
        cpu: thread_cpu_time().unwrap_or_default().as_secs_f64() - c0,
    }
}

struct Fwd {
    c: WorkerCounters,
    to_g1: u64,
    to_g2: u64,
    secs: f64,
    cpu: f64,
}

fn spawn_worker(
    w: &Writer<FibTables>,
    info: Vec<GraphPort>,
    frames: Vec<[u8; FRAME]>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Fwd> {
    let (v4, v6, nb) = (w.reader(), w.reader(), w.reader());
    std::thread::spawn(move || {
        let (p, _c) = spsc(16);
        let ports = vec![
            MemPort::new("p0", frames),
            MemPort::new("p1", Vec::new()),
            MemPort::new("p2", Vec::new()),
        ];
        let lc = LoopConfig {
            engine: Engine::Fast,
            ..LoopConfig::default()
        };
        let mut wk =
            GraphWorker::new(&info, ports, v4, v6, Some((nb, p)), lc).expect("graph builds");
        let t0 = Instant::now();
        let c0 = thread_cpu_time().unwrap_or_default().as_secs_f64();
        while !stop.load(Ordering::Relaxed) {
            wk.poll();
        }
        let c = wk.counters();
        let ports = wk.devices_mut();
        Fwd {
            c,
            to_g1: ports.iter().map(|p| p.to_g1).sum(),
            to_g2: ports.iter().map(|p| p.to_g2).sum(),
            secs: t0.elapsed().as_secs_f64(),
            cpu: thread_cpu_time().unwrap_or_default().as_secs_f64() - c0,
        }
    })
}

fn env_or(k: &str, d: f64) -> f64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn main() {
    // `cargo test --benches` runs benches with no `--bench`; do nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let secs = env_or("SECS", 3.0);
    let batch = env_or("BATCH", 4096.0).max(1.0) as usize;
    let table = routes();
    let (spec, info) = ports();
    let mut fib = Fib::new(&spec, false);
    let mut w = left_right(FibTables::new());
    let t = Instant::now();
    let mut init: Vec<Change> = table
        .iter()
        .map(|p| Change {
            prefix: Prefix::V4(*p),
            next_hop: Some(IpAddr::V4(G1)),
            ecmp: Vec::new(),
        })
        .collect();
    fib.apply(&init);
    fib.learn(IpAddr::V4(G1), MAC1);
    fib.learn(IpAddr::V4(G2), MAC2);
    w.publish(&fib.take_deltas()).expect("initial table");
    init.clear();
    let load = t.elapsed().as_secs_f64();
    assert_eq!(fib.stats().installed, table.len() as u64, "whole table");

    // Destinations: one host in each of 64k prefixes spread over the table.
    let step = (table.len() / 65536).max(1);
    let frames: Vec<[u8; FRAME]> = table
        .iter()
        .step_by(step)
        .map(|p| {
            let host = p.addr_bits() | u32::from(p.len() < 32);
            frame_to(Ipv4Addr::from(host), [2, 0, 0, 0, 0x0a, 0], info[0].mac)
        })
        .collect();

    let mut round = 0u64;
    // Baseline 1: the writer alone, both paths (env ONE_BY_ONE_FIRST=1
    // swaps the order of each pair).
    let swap = std::env::var("ONE_BY_ONE_FIRST").is_ok_and(|v| v == "1");
    let order = if swap {
        [Apply::OneByOne, Apply::Batched]
    } else {
        [Apply::Batched, Apply::OneByOne]
    };
    let mut alone_runs = Vec::new();
    for how in order {
        alone_runs.push(churn(
            &mut fib, &mut w, &table, batch, secs, &mut round, how,
        ));
    }
    if swap {
        alone_runs.reverse();
    }
    let (Some(alone1), Some(alone)) = (alone_runs.pop(), alone_runs.pop()) else {
        unreachable!("two runs")
    };
    // Baseline 2: the worker alone.
    let stop = Arc::new(AtomicBool::new(false));
    let h = spawn_worker(&w, info.clone(), frames.clone(), Arc::clone(&stop));
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let idle = h.join().expect("worker");
    // Both at once, each path.
    let mut runs = Vec::new();
    for how in order {
        let stop = Arc::new(AtomicBool::new(false));
        let h = spawn_worker(&w, info.clone(), frames.clone(), Arc::clone(&stop));
        let c = churn(&mut fib, &mut w, &table, batch, secs, &mut round, how);
        stop.store(true, Ordering::Relaxed);
        runs.push((c, h.join().expect("worker")));
    }
    if swap {
        runs.reverse();
    }
    let (Some((both1, fwd1)), Some((both, fwd))) = (runs.pop(), runs.pop()) else {
        unreachable!("two runs")
    };

    let lost = |f: &Fwd| f.c.no_route + f.c.unresolved + f.c.hairpin + f.c.tx_full;
    let rate = |c: &Churned| c.changes as f64 / c.secs;
    let cpu_rate = |c: &Churned| c.changes as f64 / c.cpu;
    let pps = |f: &Fwd| f.c.forwarded as f64 / f.secs;
    let ns_pkt = |f: &Fwd| f.cpu * 1e9 / f.c.forwarded.max(1) as f64;
    println!(
        "fib churn: {} IPv4 routes ({REAL_V4}), loaded in {load:.2} s; batch {batch} changes/publication; {} destinations; {} first",
        table.len(),
        frames.len(),
        if swap { "one by one" } else { "batched" }
    );
    for (name, a, b) in [("batched", &alone, &both), ("one by one", &alone1, &both1)] {
        println!(
            "writer alone ({name}):    {:.2} M changes/s wall, {:.2} M per CPU-second ({} changes, {} publications, {:.2} s)",
            rate(a) / 1e6,
            cpu_rate(a) / 1e6,
            a.changes,
            a.publishes,
            a.secs
        );
        println!(
            "writer + worker ({name}): {:.2} M changes/s wall = {:.2}x alone, {:.2} M per CPU-second = {:.2}x alone ({} changes, {} publications, {:.2} s)",
            rate(b) / 1e6,
            rate(b) / rate(a),
            cpu_rate(b) / 1e6,
            cpu_rate(b) / cpu_rate(a),
            b.changes,
            b.publishes,
            b.secs
        );
    }
    println!(
        "batched / one by one, per CPU-second: writer alone {:.2}x, writer + worker {:.2}x",
        cpu_rate(&alone) / cpu_rate(&alone1),
        cpu_rate(&both) / cpu_rate(&both1)
    );
    println!(
        "worker alone:      {:.2} Mpps forwarded, {:.1} ns CPU/packet, lost {} (to G1 {}, to G2 {})",
        pps(&idle) / 1e6,
        ns_pkt(&idle),
        lost(&idle),
        idle.to_g1,
        idle.to_g2
    );
    for (name, f) in [("batched", &fwd), ("one by one", &fwd1)] {
        println!(
            "worker + churn ({name}): {:.2} Mpps forwarded = {:.2}x alone, {:.1} ns CPU/packet = {:.2}x alone, lost to updates {} (no_route {}, unresolved {}), to G1 {}, to G2 {}, read sections {}",
            pps(f) / 1e6,
            pps(f) / pps(&idle),
            ns_pkt(f),
            ns_pkt(f) / ns_pkt(&idle),
            lost(f),
            f.c.no_route,
            f.c.unresolved,
            f.to_g1,
            f.to_g2,
            f.c.sections
        );
    }
    assert_eq!(
        lost(&idle) + lost(&fwd) + lost(&fwd1),
        0,
        "packets lost to FIB updates"
    );
    for f in [&fwd, &fwd1] {
        assert_eq!(f.c.forwarded, f.c.rx, "every frame forwarded");
        assert!(f.to_g1 > 0 && f.to_g2 > 0, "the worker saw the table move");
    }
}
