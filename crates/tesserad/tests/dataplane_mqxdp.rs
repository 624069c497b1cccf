//! Multi-queue AF_XDP in a running tesserad (issue 19): one queue per
//! core on multi-queue veth pairs in namespaces this test creates.
//!
//! ```text
//! A [a0 198.18.1.2] ==2 queues== [r0 198.18.1.1] R [r1 198.18.2.1] ==2 queues== [b0 198.18.2.2] B
//!                                                                             (lo 198.19.113.1)
//! ```
//!
//! R runs tesserad with `io = "af_xdp_driver"` (veth's native hook runs
//! per RX queue), `cores = 2` and `queues = 2` on both interfaces: one
//! AF_XDP socket per (interface, queue), core `c` reading queue `c`. A
//! sends UDP from many source ports to 198.19.113.1 (a static route via
//! B); a0 picks a TX queue per flow by hash and veth hands each frame to
//! r0's RX queue of the same index. Proven, from `show dataplane --json`:
//! each (interface, queue) is listed once, on the core `c` = queue; both
//! of r0's queues received, on their own cores, and both cores forwarded
//! (sent on r1); B received every datagram (after a warm-up ping that
//! resolved the neighbours); `/metrics` and the text form show the same
//! per-queue counters.
//!
//! The second test starts the dataplane in-process in R's namespace with
//! what must be refused: the generic hook on a multi-queue veth, fewer
//! queues than cores, more queues than the veth has; `queues = "all"`
//! reads the veth's two queues.
//!
//! Needs root, `ip`, `ping`, `ethtool`; every wait is bounded and the
//! namespaces go away with the lab (also on failure). About 5 s.

use e2e as common;

use std::collections::BTreeSet;
use std::net::UdpSocket;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::netlab::{in_ns, NetLab};

e2e::netlab_newtype!(
    /// A, R and B; dropping it tears everything down.
    Lab
);

const R0_MAC: &str = "02:00:00:00:01:00";
const R1_MAC: &str = "02:00:00:00:01:01";
/// Flows (UDP source ports) and datagrams per flow.
const FLOWS: u32 = 64;
const PER_FLOW: u32 = 8;
const PORT: u16 = 4001;

impl Lab {
    fn new(tag: &str) -> Lab {
        let lab = NetLab::new(
            tag,
            &["a", "r", "b"],
            "the multi-queue dataplane tests",
            &["ip", "ping", "ethtool"],
        );
        lab.link_queues("a", "a0", "r", "r0", 2);
        lab.link_queues("r", "r1", "b", "b0", 2);
        for (n, cmd) in [
            ("a", "ip addr add 198.18.1.2/24 dev a0".to_string()),
            ("b", "ip addr add 198.18.2.2/24 dev b0".to_string()),
            ("b", "ip addr add 198.19.113.1/32 dev lo".to_string()),
            ("r", "sysctl -qw net.ipv4.ip_forward=0".to_string()),
            (
                "r",
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1".to_string(),
            ),
            (
                "a",
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1".to_string(),
            ),
            (
                "b",
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1".to_string(),
            ),
            ("r", format!("ip link set r0 address {R0_MAC}")),
            ("r", format!("ip link set r1 address {R1_MAC}")),
        ] {
            lab.must_cmd(n, &cmd);
        }
        // Offloads off (full checksums on the wire), links up.
        for (n, i) in [("a", "a0"), ("r", "r0"), ("r", "r1"), ("b", "b0")] {
            lab.up(n, i);
        }
        for (n, cmd) in [
            ("a", "ip route add default via 198.18.1.1".to_string()),
            ("b", "ip route add default via 198.18.2.1".to_string()),
            (
                "a",
                format!("ip neigh replace 198.18.1.1 lladdr {R0_MAC} dev a0 nud permanent"),
            ),
        ] {
            lab.must_cmd(n, &cmd);
        }
        Lab(lab)
    }

    fn write_config(&self) -> PathBuf {
        let text = format!(
            "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\n\
             listen = [\"127.0.0.1:179\"]\n\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9327\"\n\n\
             [[static]]\nprefix = \"198.19.113.0/24\"\nnext_hop = \"198.18.2.2\"\n\n\
             [dataplane]\nio = \"af_xdp_driver\"\ncores = 2\n\n\
             [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\"]\nqueues = 2\n\n\
             [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\"]\nqueues = 2\n",
            self.path("tesserad.sock").display(),
        );
        PathBuf::from(self.write("tesserad.toml", &text))
    }

    fn show(&self) -> serde_json::Value {
        let s = self
            .0
            .tessera("r", &["show", "dataplane", "--json"])
            .expect("show dataplane");
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
    }
}

/// (core, port, queue, rx, tx) of every queue in `show dataplane --json`.
fn queues(v: &serde_json::Value) -> Vec<(u64, String, u64, u64, u64)> {
    let mut out = Vec::new();
    for c in v["per_core"].as_array().into_iter().flatten() {
        let core = c["core"].as_u64().unwrap_or(u64::MAX);
        for q in c["queues"].as_array().into_iter().flatten() {
            out.push((
                core,
                q["port"].as_str().unwrap_or("?").to_string(),
                q["queue"].as_u64().unwrap_or(u64::MAX),
                q["rx"].as_u64().unwrap_or(0),
                q["tx"].as_u64().unwrap_or(0),
            ));
        }
    }
    out
}

/// One queue's (rx, tx), zero when absent.
fn at(q: &[(u64, String, u64, u64, u64)], port: &str, queue: u64) -> (u64, u64) {
    q.iter()
        .find(|x| x.1 == port && x.2 == queue)
        .map_or((0, 0), |x| (x.3, x.4))
}

/// hostA: FLOWS sockets (one source port each), PER_FLOW datagrams each
/// with (flow, seq) in the payload, paced.
fn send_flows(ns: String) {
    in_ns(ns, || {
        let socks: Vec<UdpSocket> = (0..FLOWS)
            .map(|_| UdpSocket::bind(("198.18.1.2", 0)).expect("bind on A"))
            .collect();
        for seq in 0..PER_FLOW {
            for (flow, s) in socks.iter().enumerate() {
                let mut m = [0u8; 8];
                m[..4].copy_from_slice(&(flow as u32).to_be_bytes());
                m[4..].copy_from_slice(&seq.to_be_bytes());
                s.send_to(&m, ("198.19.113.1", PORT)).expect("send");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
    .join()
    .expect("sender");
}

#[test]
fn two_cores_each_forward_their_queues_flows() {
    let mut lab = Lab::new("mq");
    let cfg = lab.write_config().display().to_string();
    let bin = env!("CARGO_BIN_EXE_tesserad");
    lab.spawn("r", &[bin, "-c", &cfg], "tesserad.log");
    let end = Instant::now() + Duration::from_secs(20);
    while lab.0.tessera("r", &["show", "dataplane"]).is_err() {
        assert!(
            Instant::now() < end,
            "tesserad did not start: {}",
            lab.log("tesserad.log")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        lab.log("tesserad.log")
            .contains("dataplane: RX queues r0=2 r1=2"),
        "{}",
        lab.log("tesserad.log")
    );
    // Every (interface, queue) once, on the core of its index.
    let v = lab.show();
    let mut layout: Vec<(u64, String, u64)> = queues(&v)
        .into_iter()
        .map(|(c, p, q, _, _)| (c, p, q))
        .collect();
    layout.sort();
    assert_eq!(
        layout,
        vec![
            (0, "r0".to_string(), 0),
            (0, "r1".to_string(), 0),
            (1, "r0".to_string(), 1),
            (1, "r1".to_string(), 1),
        ],
        "{v}"
    );
    // B's listener, then a warm-up until the route and both neighbours
    // are resolved (the first datagrams may be lost to ARP).
    let b_ns = lab.ns("b");
    let listener = in_ns(b_ns, || {
        let s = UdpSocket::bind(("198.19.113.1", PORT)).expect("bind on B");
        s.set_read_timeout(Some(Duration::from_millis(1500)))
            .expect("timeout");
        let mut got = BTreeSet::new();
        let mut buf = [0u8; 64];
        let end = Instant::now() + Duration::from_secs(30);
        // Ends 1.5 s after the last datagram (or at the bound).
        while let Ok(n) = s.recv(&mut buf) {
            if n == 8 {
                let f = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
                let q = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
                got.insert((f, q));
            }
            if Instant::now() > end {
                break;
            }
        }
        got
    });
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let out = lab.ping("a", "-c 1 -W 1 198.19.113.1");
        if out.contains(" 0% packet loss") {
            break;
        }
        assert!(
            Instant::now() < end,
            "no forwarding: {out}\n{}",
            lab.log("tesserad.log")
        );
    }
    let before = queues(&lab.show());
    send_flows(lab.ns("a"));
    let got = listener.join().expect("B's listener");
    assert_eq!(
        got.len() as u32,
        FLOWS * PER_FLOW,
        "B received {} of {} datagrams\n{}",
        got.len(),
        FLOWS * PER_FLOW,
        lab.show()
    );
    // The cores publish their counters when they go idle: wait for them.
    let total = u64::from(FLOWS * PER_FLOW);
    let end = Instant::now() + Duration::from_secs(5);
    let after = loop {
        let q = queues(&lab.show());
        let rx: u64 = (0..2)
            .map(|k| at(&q, "r0", k).0 - at(&before, "r0", k).0)
            .sum();
        if rx >= total {
            break q;
        }
        assert!(
            Instant::now() < end,
            "r0's queues received {rx} of {total}: {q:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    for k in 0..2 {
        let rx = at(&after, "r0", k).0 - at(&before, "r0", k).0;
        let tx = at(&after, "r1", k).1 - at(&before, "r1", k).1;
        assert!(
            rx > 0 && tx > 0,
            "queue {k}: r0 received {rx}, core {k} sent {tx} on r1: before {before:?} after {after:?}"
        );
    }
    // The text form and /metrics show the same counters.
    let text = lab.0.tessera("r", &["show", "dataplane"]).expect("text");
    assert!(
        text.contains("Interface") && text.contains("Ring drops"),
        "{text}"
    );
    let m = common::netlab::metrics(&lab.ns("r"), "127.0.0.1:9327");
    for k in 0..2 {
        let key = format!(
            "tessera_dataplane_queue_packets_total{{port=\"r0\",queue=\"{k}\",core=\"{k}\",dir=\"rx\"}} "
        );
        let n = m
            .lines()
            .find_map(|l| l.strip_prefix(key.as_str()))
            .and_then(|v| v.trim().parse::<u64>().ok());
        assert!(n.is_some_and(|n| n > 0), "{key}: {m}");
    }
}

/// What `fib::dataplane::start` says in R's namespace for a config with
/// `mode`, `cores` and r0/r1 read on `queues`.
fn start_error(
    lab: &Lab,
    mode: fib::dataplane::IoMode,
    cores: usize,
    queues: fib::dataplane::Queues,
) -> Option<fib::dataplane::DpError> {
    let cfg = fib::dataplane::DataplaneConfig {
        ports: [("r0", "198.18.1.1"), ("r1", "198.18.2.1")]
            .iter()
            .map(|(n, a)| fib::dataplane::PortConfig {
                name: n.to_string(),
                addrs: vec![(a.parse().expect("ip"), 24)],
                queues,
            })
            .collect(),
        mode,
        cores,
        loop_cfg: fib::dataplane::LoopConfig::default(),
        kernel: None,
        fabric: None,
        graph: None,
        ipsec: None,
        balance: Vec::new(),
        vrs: Vec::new(),
    };
    in_ns(lab.ns("r"), move || {
        let (_tx, rx) = std::sync::mpsc::sync_channel(1);
        fib::dataplane::start(&cfg, rx).map(drop).err()
    })
    .join()
    .expect("start thread")
}

#[test]
fn queue_settings_the_veth_cannot_serve_are_refused() {
    use fib::dataplane::{DpError, IoMode, Queues, GENERIC_VETH_QUEUES};
    let lab = Lab::new("mqr");
    // The generic hook sees every veth frame as queue 0.
    assert_eq!(
        start_error(&lab, IoMode::AfXdp, 2, Queues::PerCore),
        Some(DpError::Config(GENERIC_VETH_QUEUES))
    );
    assert_eq!(
        start_error(&lab, IoMode::AfXdp, 1, Queues::Count(2)),
        Some(DpError::Config(GENERIC_VETH_QUEUES))
    );
    // Fewer queues than cores; more than the veth has.
    assert_eq!(
        start_error(&lab, IoMode::AfXdpDriver, 2, Queues::Count(1)),
        Some(DpError::QueuesBelowCores {
            port: 0,
            queues: 1,
            cores: 2
        })
    );
    assert_eq!(
        start_error(&lab, IoMode::AfXdpDriver, 1, Queues::Count(4)),
        Some(DpError::TooFewQueues(0))
    );
    assert_eq!(
        start_error(&lab, IoMode::AfPacket, 1, Queues::Count(2)),
        Some(DpError::Config(fib::dataplane::QUEUES_AF_PACKET))
    );
    // What runs: one core over both queues of each port ("all" = 2), and
    // one queue per core.
    assert_eq!(start_error(&lab, IoMode::AfXdpDriver, 1, Queues::All), None);
    assert_eq!(
        start_error(&lab, IoMode::AfXdpDriver, 2, Queues::PerCore),
        None
    );
    let e = DpError::Config(GENERIC_VETH_QUEUES).to_string();
    assert!(e.contains("af_xdp_driver"), "{e}");
}
