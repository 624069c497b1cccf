//! Cluster nodes for the fabric tests, benchmark and reordering
//! experiment: a node's devices (in-memory external ports and the UDP
//! fabric socket behind one `pkt::Device`), a node thread running its
//! graph (polling under load, sleeping in `poll(2)` when idle), and a
//! three-node cluster on 127.0.0.1.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use elements::{AnyElement, Env};
use graph::{Graph, Runner};
use io::fabric::FabricDevice;
use io::IoError;
use pkt::{Batch, DevStats, Device, MemDevice, Pool};

/// A node's devices: in-memory external ports and the fabric socket.
pub enum Dev {
    /// An external port.
    Mem(MemDevice),
    /// The fabric socket.
    Fab(FabricDevice),
}

impl Device for Dev {
    type Error = IoError;
    fn name(&self) -> &str {
        match self {
            Dev::Mem(d) => d.name(),
            Dev::Fab(d) => d.name(),
        }
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        match self {
            Dev::Mem(d) => d.rx_burst(pool, batch, max),
            Dev::Fab(d) => d.rx_burst(pool, batch, max),
        }
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        match self {
            Dev::Mem(d) => d.tx_burst(batch),
            Dev::Fab(d) => d.tx_burst(batch),
        }
    }
    fn stats(&self) -> DevStats {
        match self {
            Dev::Mem(d) => d.stats(),
            Dev::Fab(d) => d.stats(),
        }
    }
    fn poll_fd(&self) -> Option<i32> {
        match self {
            Dev::Mem(_) => None,
            Dev::Fab(d) => d.poll_fd(),
        }
    }
    fn last_error(&self) -> Option<IoError> {
        match self {
            Dev::Mem(_) => None,
            Dev::Fab(d) => d.last_error(),
        }
    }
}

/// What a node thread reports when it stops.
pub struct Report {
    /// Frames sent on each external port, by device name.
    pub sent: Vec<(String, Vec<Vec<u8>>)>,
    /// Element counters: (element, counter, value).
    pub counters: Vec<(String, &'static str, u64)>,
    pub polls: u64,
}

impl Report {
    pub fn counter(&self, elem: &str, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(e, n, _)| e == elem && *n == name)
            .map_or(0, |c| c.2)
    }
    pub fn sent_on(&self, dev: &str) -> &[Vec<u8>] {
        self.sent
            .iter()
            .find(|(n, _)| n == dev)
            .map_or(&[], |(_, f)| f.as_slice())
    }
}

/// Runs one node until `stop` (or 10 s): poll; after 4 empty rounds,
/// sleep up to 20 ms in `poll(2)` on the fabric socket. `done` says when
/// this node has seen enough (it then sets `stop` for everyone).
pub fn node(
    cfg: String,
    ext: Vec<(&'static str, Vec<Vec<u8>>)>,
    fabric: FabricDevice,
    stop: Arc<AtomicBool>,
    done: impl Fn(&[Dev]) -> bool,
) -> Report {
    let mut env = Env::new();
    let g = Graph::from_str(&cfg, "node.click", &mut env, Pool::new(2048))
        .unwrap_or_else(|e| panic!("{e}\n{cfg}"));
    let mut devs: Vec<Dev> = ext
        .into_iter()
        .map(|(n, f)| Dev::Mem(MemDevice::new(n, f)))
        .collect();
    devs.push(Dev::Fab(fabric));
    let mut r: Runner<AnyElement, Dev> = Runner::new(g, devs, 32).unwrap_or_else(|e| panic!("{e}"));
    let fds: Vec<i32> = r.devices().iter().filter_map(Dev::poll_fd).collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut idle = 0;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        if done(r.devices()) {
            stop.store(true, Ordering::Relaxed);
            break;
        }
        if r.poll() > 0 {
            idle = 0;
            continue;
        }
        idle += 1;
        if idle >= 4 {
            io::sys::poll_many(&fds, 20).expect("poll");
        }
    }
    let mut counters = Vec::new();
    for (name, e, _) in r.graph.iter() {
        let mut f = |n: &'static str, v: u64| counters.push((name.to_string(), n, v));
        graph::Element::counters(e, &mut f);
    }
    for (name, _, _) in r.graph.iter() {
        if let Some(s) = r.graph.stats_of(name) {
            counters.push((name.to_string(), "drops", s.total_drops()));
        }
    }
    let polls = r.stats().polls;
    let sent = r
        .devices_mut()
        .iter_mut()
        .filter_map(|d| match d {
            Dev::Mem(m) => Some((m.name().to_string(), m.take_sent())),
            Dev::Fab(_) => None,
        })
        .collect();
    Report {
        sent,
        counters,
        polls,
    }
}

/// Three nodes, each a thread; node 0's external traffic `input` (all
/// tagged for node 2, port 1) crosses the fabric in `mode`, and node 2
/// stops everyone once it has sent as many frames. Returns the three
/// reports.
pub fn run_cluster(mode: &str, packing: usize, affinity: bool, input: Vec<Vec<u8>>) -> [Report; 3] {
    let n = input.len();
    let lo: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let mut fab: Vec<FabricDevice> = (0..3)
        .map(|_| {
            let mut f = FabricDevice::bind("fabric", lo, &[]).expect("bind");
            f.set_buffers(8 << 20);
            f
        })
        .collect();
    let addrs: Vec<SocketAddr> = fab.iter().map(|f| f.local_addr().expect("addr")).collect();
    for f in &mut fab {
        for (id, a) in addrs.iter().enumerate() {
            f.set_peer(id as u16, *a).expect("peer");
        }
    }
    let decap = |me: u16, ports: u16| {
        let outs: String = (0..ports)
            .map(|p| format!("d[{p}] -> ToDevice(ext{p});\n"))
            .collect();
        format!(
            "FromDevice(fabric) -> d :: FabricDecap(NODE {me}, PORTS {ports}, NODES 3);\n{outs}d[{ports}] -> ToDevice(fabric);\n"
        )
    };
    let c0 = format!(
        "FromDevice(ext0) -> e :: FabricEncap(NODE 0, NODES 3, MODE {mode}, PACKING {packing}, AFFINITY {affinity}, RATE 10000, TO 2, PORT 1, QUEUE 3) -> ToDevice(fabric);\n{}",
        decap(0, 1)
    );
    let stop = Arc::new(AtomicBool::new(false));
    let mut fab = fab.into_iter();
    let (f0, f1, f2) = (
        fab.next().expect("0"),
        fab.next().expect("1"),
        fab.next().expect("2"),
    );
    let (s0, s1, s2) = (stop.clone(), stop.clone(), stop.clone());
    let t0 = std::thread::spawn(move || node(c0, vec![("ext0", input)], f0, s0, |_| false));
    let c1 = decap(1, 1);
    let t1 = std::thread::spawn(move || node(c1, vec![("ext0", vec![])], f1, s1, |_| false));
    let c2 = decap(2, 2);
    let t2 = std::thread::spawn(move || {
        node(
            c2,
            vec![("ext0", vec![]), ("ext1", vec![])],
            f2,
            s2,
            move |d| d.iter().map(|x| x.stats().tx).sum::<u64>() >= n as u64,
        )
    });
    let r2 = t2.join().expect("node 2");
    stop.store(true, Ordering::Relaxed);
    let r0 = t0.join().expect("node 0");
    let r1 = t1.join().expect("node 1");
    [r0, r1, r2]
}
