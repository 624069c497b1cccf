//! The netns lab of the cluster congestion-control test and bench
//! (`tests/cluster_cc.rs`, `benches/cluster_cc.rs`):
//! cluster: four tesserads in network namespaces, three ingress nodes
//! sending to one egress node whose external port is emulated by a TX
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

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static SEQ: AtomicU32 = AtomicU32::new(0);

fn sh(argv: &[&str]) -> Result<String, String> {
    let o = Command::new("timeout")
        .args(["-k", "2", "20"])
        .args(argv)
        .output()
        .map_err(|e| format!("{argv:?}: {e}"))?;
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    if o.status.success() {
        Ok(s)
    } else {
        Err(format!("{argv:?}: {s}"))
    }
}

fn require() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "the cluster cc test needs root"
    );
    for t in ["ip", "ping"] {
        let ok = Command::new("which")
            .arg(t)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "the cluster cc test needs `{t}` installed");
    }
}

/// The namespaces, daemons and work directory of one run; dropping it
/// kills the daemons and removes everything.
pub struct Lab {
    tag: String,
    dir: PathBuf,
    children: Vec<Child>,
    /// Cluster nodes (namespaces `n{i}`, hosts `h{i}`, and `fab`).
    n: usize,
    bin: String,
}

impl Lab {
    fn ns(&self, n: &str) -> String {
        format!("cc{n}{}", self.tag)
    }
    fn exec(&self, n: &str, argv: &[&str]) -> Result<String, String> {
        let ns = self.ns(n);
        let mut v = vec!["ip", "netns", "exec", &ns];
        v.extend_from_slice(argv);
        sh(&v)
    }
    fn must(&self, n: &str, argv: &[&str]) {
        if let Err(e) = self.exec(n, argv) {
            panic!("setup in {n}: {e}");
        }
    }
    fn link(&self, n1: &str, i1: &str, n2: &str, i2: &str) {
        let (a, b) = (self.ns(n1), self.ns(n2));
        let r = sh(&[
            "ip", "link", "add", i1, "netns", &a, "type", "veth", "peer", "name", i2, "netns", &b,
        ]);
        r.unwrap_or_else(|e| panic!("veth: {e}"));
    }
    fn names(&self) -> Vec<String> {
        let mut v = vec!["fab".to_string()];
        for i in 0..self.n {
            v.push(format!("n{i}"));
            v.push(format!("h{i}"));
        }
        v
    }
    /// `n` nodes, each with one external host, on a bridged fabric.
    fn new(n: usize) -> Lab {
        require();
        let tag = format!(
            "{}{}",
            std::process::id() % 100_000,
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(format!("tessera-cluster-cc-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work dir");
        let lab = Lab {
            tag,
            dir,
            children: Vec::new(),
            n,
            bin: String::new(),
        };
        for ns in lab.names() {
            sh(&["ip", "netns", "add", &lab.ns(&ns)]).expect("netns");
            lab.must(&ns, &["ip", "link", "set", "lo", "up"]);
        }
        lab.must("fab", &["ip", "link", "add", "br0", "type", "bridge"]);
        lab.must("fab", &["ip", "link", "set", "br0", "up"]);
        for i in 0..n {
            let (node, host, port) = (format!("n{i}"), format!("h{i}"), format!("p{i}"));
            lab.link(&host, "e0", &node, "x0");
            lab.link(&node, "f0", "fab", &port);
            lab.must("fab", &["ip", "link", "set", &port, "master", "br0", "up"]);
            let k = i + 1;
            for (ns, cmd) in [
                (&host, format!("ip addr add 198.18.{k}.2/24 dev e0")),
                (&node, format!("ip addr add 198.18.100.{k}/24 dev f0")),
                (&node, "sysctl -qw net.ipv4.ip_forward=0".to_string()),
            ] {
                lab.must(ns, &cmd.split(' ').collect::<Vec<_>>());
            }
            for (ns, dev) in [(&host, "e0"), (&node, "x0"), (&node, "f0")] {
                lab.must(ns, &["ip", "link", "set", dev, "up"]);
                // Full checksums on the wire: a forwarded veth frame must
                // not carry a partial (offloaded) one.
                let _ = lab.exec(
                    ns,
                    &[
                        "ethtool", "-K", dev, "tx", "off", "gso", "off", "gro", "off",
                    ],
                );
            }
            let gw = format!("198.18.{k}.1");
            lab.must(&host, &["ip", "route", "add", "default", "via", &gw]);
        }
        lab
    }
    fn spawn(&mut self, n: &str, argv: &[&str], log: &str) {
        let ns = self.ns(n);
        let f = std::fs::File::create(self.dir.join(log)).expect("log file");
        let c = Command::new("ip")
            .args(["netns", "exec", &ns])
            .args(argv)
            .stdin(Stdio::null())
            .stdout(f.try_clone().expect("log"))
            .stderr(f)
            .spawn()
            .expect("spawn");
        self.children.push(c);
    }
    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }
    fn logs(&self) -> String {
        let mut names: Vec<String> = (0..self.n).map(|i| format!("n{i}.log")).collect();
        names.push("tshark.log".into());
        names
            .iter()
            .map(|l| format!("--- {l}\n{}", self.log(l)))
            .collect()
    }
    /// Node `me`'s configuration with `cc` (more `[cluster]` keys).
    fn conf(&self, me: usize, cc: &str) -> String {
        let p = self.dir.join(format!("n{me}.toml"));
        let k = me + 1;
        let mut text = format!(
            "[router]\nid = \"198.18.100.{k}\"\nasn = 65000\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [dataplane]\nio = \"af_packet\"\n\n\
             [[dataplane.interface]]\nname = \"x0\"\naddresses = [\"198.18.{k}.1/24\"]\n\n\
             [cluster]\nnode_id = {me}\nfabric_address = \"198.18.100.{k}\"\nmode = \"direct\"\n\
             packing = 1\n{cc}\n",
            self.dir.join(format!("n{me}.sock")).display(),
        );
        for j in (0..self.n).filter(|&j| j != me) {
            let pk = j + 1;
            text += &format!(
                "\n[[cluster.peer]]\nnode_id = {j}\nfabric_address = \"198.18.100.{pk}\"\n\
                 \n[[static]]\nprefix = \"198.18.{pk}.0/24\"\nnext_hop = \"198.18.100.{pk}\"\n"
            );
        }
        std::fs::write(&p, text).expect("config");
        p.display().to_string()
    }

    fn start(&mut self, bin: &str, cc: &str) {
        self.bin = bin.to_string();
        let bin = self.bin.clone();
        let bin = bin.as_str();
        for i in 0..self.n {
            let c = self.conf(i, cc);
            self.spawn(&format!("n{i}"), &[bin, "-c", &c], &format!("n{i}.log"));
        }
        let end = Instant::now() + Duration::from_secs(15);
        while !(0..self.n).all(|i| {
            self.log(&format!("n{i}.log"))
                .contains("dataplane: started")
        }) {
            assert!(
                Instant::now() < end,
                "dataplanes did not start\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn ping(&self, from: usize, to: usize) {
        let dst = format!("198.18.{}.2", to + 1);
        let end = Instant::now() + Duration::from_secs(20);
        while self
            .exec(
                &format!("h{from}"),
                &["ping", "-c", "2", "-i", "0.05", "-W", "1", &dst],
            )
            .is_err()
        {
            assert!(
                Instant::now() < end,
                "no ping from h{from} to {dst}\n{}",
                self.logs()
            );
        }
    }

    /// SIGTERM to every daemon; each node's `cluster-cc:` line.
    fn stop(&mut self) -> Vec<Cc> {
        for c in &self.children {
            let _ = sh(&["kill", "-TERM", &c.id().to_string()]);
        }
        let end = Instant::now() + Duration::from_secs(15);
        let mut out = Vec::new();
        for i in 0..self.n {
            let name = format!("n{i}.log");
            while !self.log(&name).contains("cluster-cc:") {
                assert!(
                    Instant::now() < end,
                    "no cluster-cc report\n{}",
                    self.logs()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            let log = self.log(&name);
            let line = log
                .lines()
                .find(|l| l.starts_with("cluster-cc:"))
                .unwrap_or_default();
            out.push(Cc::parse(line));
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
        self.children.clear();
        out
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in self.names() {
            let _ = sh(&["ip", "netns", "del", &self.ns(&n)]);
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
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
    let mut lab = Lab::new(4);
    lab.start(tesserad, cc);
    for h in 0..3 {
        lab.ping(h, 3);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mark = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let sink = {
        let (stop, mark) = (stop.clone(), mark.clone());
        in_netns(lab.ns("h3"), move || {
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
            in_netns(lab.ns(&format!("h{h}")), move || {
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
    let rep = lab.stop();
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
