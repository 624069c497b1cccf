//! The measurement of the cluster congestion-control test and bench
//! (`tests/cluster_cc.rs`, `benches/cluster_cc.rs`) on the netns cluster
//! lab of `common::cluster` (the includer declares `use e2e as common;`): four
//! tesserads in network namespaces, three ingress nodes sending to one
//! egress node whose external port is emulated by a TX
//! shaper at C pps (`egress_shape_pps`), so that overload is reachable on
//! two shared cores:
//!
//! ```text
//! H0 -- N0 --+
//! H1 -- N1 --+-- br0 (fabric) -- N3 [CcEgress: queue, shaper at C] -- H3 (UDP sink)
//! H2 -- N2 --+
//! ```
//!
//! Each host H0..H2 sends UDP to H3 at C pps (3 × C offered), from a
//! thread of this test that entered the host's namespace (`setns`); a
//! thread in H3's namespace counts what arrives per source. Without
//! control the egress queue sits at its limit and the fabric carries all
//! of the offered load, to be dropped at the egress; with each scheme the
//! queue stays bounded, the ingresses inject about C in total, and they
//! share it fairly (Jain index > 0.9). The counters of the
//! congestion-control elements come from each tesserad's final report
//! (the `cluster-cc:` line printed on SIGTERM). Needs root, `ip`, `ping`;
//! every step is bounded and the namespaces are removed (also on failure).

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::cluster::{self, Cluster};

/// `n` nodes started with `cc` (more `[cluster]` keys); every host can
/// reach every other.
fn start_nodes(bin: &str, n: usize, cc: &str) -> Cluster {
    cluster::require(&["ip", "ping"]);
    let mut c = Cluster::new("cluster_cc", n);
    c.start(bin, |_| format!("mode = \"direct\"\npacking = 1\n{cc}\n"));
    c
}

/// SIGTERM to every node daemon; each node's `cluster-cc:` line.
fn stop_nodes(c: &Cluster) -> Vec<Cc> {
    for &pid in &c.pids {
        c.lab.signal(pid, "TERM");
    }
    let lines = c.lab.wait(15, "the cluster-cc reports", || {
        let lines: Option<Vec<String>> = (0..c.n)
            .map(|i| {
                c.log(&format!("n{i}"))
                    .lines()
                    .find(|l| l.starts_with("cluster-cc:"))
                    .map(str::to_string)
            })
            .collect();
        Ok(lines)
    });
    lines.iter().map(|l| Cc::parse(l)).collect()
}

/// One node's `cluster-cc:` report.
#[derive(Debug, Default)]
pub struct Cc {
    pub offered: u64,
    pub injected: u64,
    pub egress_in: u64,
    pub egress_sent: u64,
    pub egress_dropped: u64,
    pub control_sent: u64,
    pub signals: u64,
    pub queue_mean: f64,
    pub queue_sd: f64,
}

impl Cc {
    fn parse(line: &str) -> Cc {
        let mut c = Cc::default();
        for kv in line.split_whitespace() {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let n = || v.parse::<u64>().unwrap_or(0);
            match k {
                "offered" => c.offered = n(),
                "injected" => c.injected = n(),
                "egress_in" => c.egress_in = n(),
                "egress_sent" => c.egress_sent = n(),
                "egress_dropped" => c.egress_dropped = n(),
                "control_sent" => c.control_sent = n(),
                "signals" => c.signals = n(),
                "queue_mean" => c.queue_mean = v.parse().unwrap_or(0.0),
                "queue_sd" => c.queue_sd = v.parse().unwrap_or(0.0),
                _ => {}
            }
        }
        c
    }
}

/// Runs `f` in a thread that entered network namespace `ns`.
fn in_netns<T: Send + 'static>(
    ns: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(format!("/var/run/netns/{ns}")).expect("netns file");
        // SAFETY: setns on a valid namespace fd affects only this thread.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {ns}");
        f()
    })
}

const PORT: u16 = 9000;
/// Width of the bins of [`Measured::series`], ms.
pub const BIN_MS: u64 = 50;

/// What one run measured.
#[derive(Debug)]
pub struct Measured {
    pub offered: u64,
    pub injected: u64,
    /// Frames H3 received, per ingress.
    pub received: [u64; 3],
    /// The same when the senders stopped (the rest drained the queue).
    pub received_in_load: [u64; 3],
    /// Frames H3 received per ingress in bins of [`BIN_MS`] from the
    /// sink's start (the senders start 200 ms later).
    pub series: Vec<[u64; 3]>,
    pub egress: Cc,
}

pub fn jain(x: &[u64]) -> f64 {
    let s: f64 = x.iter().map(|&v| v as f64).sum();
    let q: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    if q == 0.0 {
        0.0
    } else {
        s * s / (x.len() as f64 * q)
    }
}

/// Four nodes with `cc` in `[cluster]`; each of H0..H2 sends at `per_host`
/// pps to H3 for [`LOAD`].
pub fn measure(tesserad: &str, cc: &str, per_host: u64, load: Duration) -> Measured {
    let lab = start_nodes(tesserad, 4, cc);
    for h in 0..3 {
        lab.ping(h, &Cluster::host_addr(3), 2, 20);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mark = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let sink = {
        let (stop, mark) = (stop.clone(), mark.clone());
        in_netns(lab.host(3).to_string(), move || {
            let s = std::net::UdpSocket::bind(("0.0.0.0", PORT)).expect("sink");
            s.set_read_timeout(Some(Duration::from_millis(50)))
                .expect("timeout");
            let mut got = [0u64; 3];
            let mut series: Vec<[u64; 3]> = Vec::new();
            let mut at_mark = None;
            let mut buf = [0u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                if at_mark.is_none() && mark.load(Ordering::Relaxed) {
                    at_mark = Some(got);
                }
                if let Ok((_, from)) = s.recv_from(&mut buf) {
                    if let std::net::IpAddr::V4(a) = from.ip() {
                        let k = usize::from(a.octets()[2]).wrapping_sub(1);
                        if let Some(g) = got.get_mut(k) {
                            *g += 1;
                            let bin = (t0.elapsed().as_millis() / u128::from(BIN_MS)) as usize;
                            if series.len() <= bin {
                                series.resize(bin + 1, [0; 3]);
                            }
                            if let Some(b) = series.get_mut(bin).and_then(|b| b.get_mut(k)) {
                                *b += 1;
                            }
                        }
                    }
                }
            }
            (got, at_mark.unwrap_or(got), series)
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let senders: Vec<_> = (0..3)
        .map(|h| {
            in_netns(lab.host(h).to_string(), move || {
                let s = std::net::UdpSocket::bind("0.0.0.0:0").expect("sender");
                s.connect(("198.18.4.2", PORT)).expect("connect");
                let start = Instant::now();
                let mut sent = 0u64;
                let payload = [0x5au8; 18]; // 64-byte frames
                while start.elapsed() < load {
                    let due = (start.elapsed().as_micros() as u64 * per_host) / 1_000_000;
                    while sent < due {
                        let _ = s.send(&payload);
                        sent += 1;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                sent
            })
        })
        .collect();
    let offered: u64 = senders.into_iter().map(|s| s.join().expect("sender")).sum();
    mark.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let (received, received_in_load, series) = sink.join().expect("sink");
    let rep = stop_nodes(&lab);
    let m = Measured {
        offered,
        injected: rep.iter().take(3).map(|c| c.injected).sum(),
        received,
        received_in_load,
        series,
        egress: rep.into_iter().nth(3).unwrap_or_default(),
    };
    eprintln!("{cc:?}: {m:?} jain {:.3}", jain(&m.received));
    m
}
