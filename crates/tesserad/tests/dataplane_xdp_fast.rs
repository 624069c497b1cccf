//! The XDP fast path (`[dataplane] xdp_fastpath = true`) in a running
//! tesserad, on veth pairs in namespaces this test creates:
//!
//! ```text
//! A [a0 198.18.1.2] -- [r0 198.18.1.1] R [r1 198.18.2.1] -- [b0 198.18.2.2] B
//!                                                        (lo 198.19.113.1)
//! ```
//!
//! R forwards with its own dataplane only (AF_XDP on the generic hook, no
//! kernel addresses on r0/r1, kernel forwarding off), one static route
//! 198.19.113.0/24 via B. The first pings resolve B and A through the
//! element graph (ARP); once resolved, pings cross R in the XDP program:
//! `show dataplane --json` shows the fast path's per-CPU `forwarded`
//! counter moving by every request and reply while the graph's cores
//! receive (almost) nothing. The exceptions still reach the graph: a ping
//! with TTL 1 is answered with ICMP time exceeded from 198.18.1.1 (the
//! fast path's `ttl` counter moves), and B's ARP for its gateway is
//! answered (B holds R's MAC). Needs root, `ip`, `ping`; every step is
//! bounded and everything is torn down (also on failure).
//!
//! The same for IPv6 (`ipv6_*`): pings cross R in XDP (the fast path's
//! `forwarded_ipv6` counter), with the hop limit decremented (the echo
//! replies arrive with 63), hop limit 1 is answered by the graph with
//! ICMPv6 time exceeded (RFC 4443 §3.3, `hop_limit` counter), and
//! Neighbor Discovery goes through the graph.
//!
//! ECMP (`ecmp_*`): `tesserad --dataplane` fed by this test over its feed
//! socket with one IPv4 and one IPv6 route of two next hops (B and C,
//! which both hold the destination); 16 UDP flows per family from A
//! arrive at B and C, each flow at one of them only, and the fast path
//! forwarded them (its counters, printed at stop).

use e2e as common;

use std::io::Write;
use std::net::UdpSocket;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::netlab::{counter, in_ns, udp_sink, NetLab, StopOnDrop, TagCounts};

e2e::netlab_newtype!(
    /// A, R and B; dropping it tears everything down.
    Lab
);

const R0_MAC: &str = "02:00:00:00:01:00";
const R1_MAC: &str = "02:00:00:00:01:01";

impl Lab {
    fn new() -> Lab {
        let lab = NetLab::new("xf", &["a", "r", "b"], "this test", &["ip", "ping"]);
        lab.link("a", "a0", "r", "r0");
        lab.link("r", "r1", "b", "b0");
        for (n, cmd) in [
            ("a", "ip addr add 198.18.1.2/24 dev a0".to_string()),
            ("b", "ip addr add 198.18.2.2/24 dev b0".to_string()),
            ("b", "ip addr add 198.19.113.1/32 dev lo".to_string()),
            ("r", "sysctl -qw net.ipv4.ip_forward=0".to_string()),
            // No IPv6 on the hosts: their router and multicast-listener
            // chatter would reach the graph in the counted window.
            (
                "a",
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1".to_string(),
            ),
            (
                "b",
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1".to_string(),
            ),
            (
                "a",
                "sysctl -qw net.ipv6.conf.default.disable_ipv6=1".to_string(),
            ),
            (
                "b",
                "sysctl -qw net.ipv6.conf.default.disable_ipv6=1".to_string(),
            ),
            ("r", format!("ip link set r0 address {R0_MAC}")),
            ("r", format!("ip link set r1 address {R1_MAC}")),
            ("a", "ip link set a0 up".to_string()),
            ("r", "ip link set r0 up".to_string()),
            ("r", "ip link set r1 up".to_string()),
            ("b", "ip link set b0 up".to_string()),
            ("a", "ip route add default via 198.18.1.1".to_string()),
            ("b", "ip route add default via 198.18.2.1".to_string()),
            // A never asks R's MAC again (so that the counted pings are
            // only IPv4); B does ask, through the graph.
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
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9326\"\n\n\
             [[static]]\nprefix = \"198.19.113.0/24\"\nnext_hop = \"198.18.2.2\"\n\n\
             [dataplane]\nio = \"af_xdp\"\nxdp_fastpath = true\n\n\
             [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\"]\n\n\
             [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\"]\n",
            self.path("tesserad.sock").display(),
        );
        PathBuf::from(self.write("tesserad.toml", &text))
    }
}

/// (fast path forwarded, fast path `reason` to the graph, graph cores'
/// received packets).
fn counts(v: &serde_json::Value, reason: &str) -> (u64, u64, u64) {
    let x = &v["xdp_fastpath"];
    let rx = v["per_core"]
        .as_array()
        .map_or(0, |a| a.iter().map(|c| c["rx"].as_u64().unwrap_or(0)).sum());
    (
        x["forwarded"].as_u64().unwrap_or(0),
        x["to_graph"][reason].as_u64().unwrap_or(0),
        rx,
    )
}

#[test]
fn resolved_traffic_crosses_in_xdp_and_exceptions_reach_the_graph() {
    let mut lab = Lab::new();
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
    let v = lab.show();
    assert!(v["xdp_fastpath"].is_object(), "fast path off: {v}");
    // The route reaches the FIB, the graph resolves B and A.
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
    // Both directions resolved: the map has the route and A's /32.
    let before = lab.wait_show("resolution mirrored", |v| {
        v["xdp_fastpath"]["map_set"].as_u64().unwrap_or(0) >= 4
    });
    let (f0, _, g0) = counts(&before, "ttl");
    let out = lab.ping("a", "-c 20 -i 0.05 -W 1 198.19.113.1");
    assert!(out.contains(" 0% packet loss"), "{out}");
    let after = lab.wait_show("the fast path forwarded the pings", |v| {
        counts(v, "ttl").0 >= f0 + 40
    });
    let (f1, _, g1) = counts(&after, "ttl");
    // 20 requests and 20 replies in XDP; the graph saw at most an ARP
    // refresh (a request and its answer).
    assert!(f1 - f0 >= 40, "forwarded {f0} -> {f1}");
    assert!(
        g1 - g0 <= 2,
        "the graph received {} packets: before {} after {}",
        g1 - g0,
        before["xdp_fastpath"],
        after["xdp_fastpath"]
    );

    // TTL 1: the graph answers time exceeded from R's address on r0.
    let (_, t0, _) = counts(&after, "ttl");
    let out = lab.ping("a", "-c 1 -t 1 -W 2 198.19.113.1");
    assert!(
        out.contains("From 198.18.1.1") && out.contains("Time to live exceeded"),
        "{out}"
    );
    lab.wait_show("the ttl exception counted", |v| counts(v, "ttl").1 > t0);

    // ARP through the graph: B learned R's MAC for its gateway.
    let neigh = lab
        .exec("b", &["ip", "neigh", "show", "198.18.2.1", "dev", "b0"])
        .expect("ip neigh");
    assert!(neigh.contains(R1_MAC), "{neigh}");
    let v = lab.show();
    let arp = v["xdp_fastpath"]["to_graph"]["other_mac"]
        .as_u64()
        .unwrap_or(0)
        + v["xdp_fastpath"]["to_graph"]["not_ip"]
            .as_u64()
            .unwrap_or(0);
    assert!(arp >= 1, "ARP went past the graph: {v}");
    // The text form shows the fast path too.
    let text = lab.0.tessera("r", &["show", "dataplane"]).expect("text");
    assert!(text.contains("XDP fast path: forwarded"), "{text}");
    // /metrics: the same counters.
    let m = common::netlab::metrics(&lab.ns("r"), "127.0.0.1:9326");
    let fwd = m
        .lines()
        .find_map(|l| l.strip_prefix("tessera_dataplane_xdp_fastpath_forwarded_total "))
        .and_then(|v| v.trim().parse::<u64>().ok());
    assert!(fwd.is_some_and(|n| n >= 40), "{m}");
    assert!(
        m.contains("tessera_dataplane_xdp_fastpath_to_graph_total{reason=\"ttl\"} "),
        "{m}"
    );
}

e2e::netlab_newtype!(
    /// A, R and B over IPv6; dropping it tears everything down.
    Lab6
);

impl Lab6 {
    fn new() -> Lab6 {
        let lab = NetLab::new("x6", &["a", "r", "b"], "this test", &["ip", "ping"]);
        lab.link("a", "a0", "r", "r0");
        lab.link("r", "r1", "b", "b0");
        for (n, cmd) in [
            // R's kernel keeps out of IPv6 (no addresses, no chatter).
            (
                "r",
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1".to_string(),
            ),
            (
                "r",
                "sysctl -qw net.ipv6.conf.default.disable_ipv6=1".to_string(),
            ),
            ("r", "sysctl -qw net.ipv4.ip_forward=0".to_string()),
            ("r", format!("ip link set r0 address {R0_MAC}")),
            ("r", format!("ip link set r1 address {R1_MAC}")),
            ("a", "ip link set a0 up".to_string()),
            ("r", "ip link set r0 up".to_string()),
            ("r", "ip link set r1 up".to_string()),
            ("b", "ip link set b0 up".to_string()),
            // No duplicate address detection (no waiting).
            (
                "a",
                "ip -6 addr add 2001:db8:1::2/64 dev a0 nodad".to_string(),
            ),
            (
                "b",
                "ip -6 addr add 2001:db8:2::2/64 dev b0 nodad".to_string(),
            ),
            ("b", "ip -6 addr add 2001:db8:113::1/128 dev lo".to_string()),
            ("a", "ip -6 route add default via 2001:db8:1::1".to_string()),
            ("b", "ip -6 route add default via 2001:db8:2::1".to_string()),
            // A never solicits R (so that the counted pings are only
            // echoes); B does, through the graph.
            (
                "a",
                format!("ip -6 neigh replace 2001:db8:1::1 lladdr {R0_MAC} dev a0 nud permanent"),
            ),
        ] {
            lab.must_cmd(n, &cmd);
        }
        Lab6(lab)
    }
    fn write_config(&self) -> PathBuf {
        let text = format!(
            "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\n\
             listen = [\"127.0.0.1:179\"]\n\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9326\"\n\n\
             [[static]]\nprefix = \"2001:db8:113::/48\"\nnext_hop = \"2001:db8:2::2\"\n\n\
             [dataplane]\nio = \"af_xdp\"\nxdp_fastpath = true\n\n\
             [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"2001:db8:1::1/64\"]\n\n\
             [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"2001:db8:2::1/64\"]\n",
            self.path("tesserad.sock").display(),
        );
        PathBuf::from(self.write("tesserad.toml", &text))
    }
}

/// (fast path IPv6 forwarded, fast path `reason` to the graph, graph
/// cores' received packets).
fn counts6(v: &serde_json::Value, reason: &str) -> (u64, u64, u64) {
    let (_, r, rx) = counts(v, reason);
    (
        v["xdp_fastpath"]["forwarded_ipv6"].as_u64().unwrap_or(0),
        r,
        rx,
    )
}

#[test]
fn ipv6_crosses_in_xdp_with_hop_limit_and_exceptions_reach_the_graph() {
    let mut lab = Lab6::new();
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
    // The route reaches the FIB, the graph resolves B and A (ND).
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let out = lab.ping("a", "-6 -c 1 -W 1 2001:db8:113::1");
        if out.contains(" 0% packet loss") {
            break;
        }
        assert!(
            Instant::now() < end,
            "no forwarding: {out}\n{}",
            lab.log("tesserad.log")
        );
    }
    // Both directions resolved: our two /128s, the route and A's and B's
    // /128s.
    let before = lab.wait_show("resolution mirrored", |v| {
        v["xdp_fastpath"]["map_set"].as_u64().unwrap_or(0) >= 5
    });
    let (f0, _, g0) = counts6(&before, "hop_limit");
    let out = lab.ping("a", "-6 -c 20 -i 0.05 -W 1 2001:db8:113::1");
    assert!(out.contains(" 0% packet loss"), "{out}");
    // B replies with hop limit 64; R took one off (as for the requests).
    assert!(
        out.contains("ttl=63") && !out.contains("ttl=64"),
        "hop limit not decremented once: {out}"
    );
    let after = lab.wait_show("the fast path forwarded the pings", |v| {
        counts6(v, "hop_limit").0 >= f0 + 40
    });
    let (f1, _, g1) = counts6(&after, "hop_limit");
    assert!(f1 - f0 >= 40, "forwarded_ipv6 {f0} -> {f1}");
    // The graph saw at most some ND and the hosts' own chatter, not the
    // 40 echoes.
    assert!(
        g1 - g0 < 20,
        "the graph received {} packets: before {} after {}",
        g1 - g0,
        before["xdp_fastpath"],
        after["xdp_fastpath"]
    );

    // Hop limit 1: the graph answers time exceeded from R's address on r0.
    let (_, h0, _) = counts6(&after, "hop_limit");
    let out = lab.ping("a", "-6 -c 1 -t 1 -W 2 2001:db8:113::1");
    assert!(
        out.contains("From 2001:db8:1::1") && out.contains("Time exceeded"),
        "{out}"
    );
    lab.wait_show("the hop_limit exception counted", |v| {
        counts6(v, "hop_limit").1 > h0
    });

    // ND through the graph: B learned R's MAC for its gateway.
    let neigh = lab
        .exec(
            "b",
            &["ip", "-6", "neigh", "show", "2001:db8:2::1", "dev", "b0"],
        )
        .expect("ip neigh");
    assert!(neigh.contains(R1_MAC), "{neigh}");
    let v = lab.show();
    let nd: u64 = ["other_mac", "nd", "scope"]
        .iter()
        .map(|r| v["xdp_fastpath"]["to_graph"][r].as_u64().unwrap_or(0))
        .sum();
    assert!(nd >= 1, "ND went past the graph: {v}");
    let text = lab.0.tessera("r", &["show", "dataplane"]).expect("text");
    assert!(text.contains("XDP fast path: forwarded"), "{text}");
    assert!(text.contains("(IPv6 "), "{text}");
    let m = common::netlab::metrics(&lab.ns("r"), "127.0.0.1:9326");
    let fwd = m
        .lines()
        .find_map(|l| l.strip_prefix("tessera_dataplane_xdp_fastpath_forwarded_ipv6_total "))
        .and_then(|v| v.trim().parse::<u64>().ok());
    assert!(fwd.is_some_and(|n| n >= 40), "{m}");
    assert!(
        m.contains("tessera_dataplane_xdp_fastpath_to_graph_total{reason=\"hop_limit\"} "),
        "{m}"
    );
}

e2e::netlab_newtype!(
    /// A, R, B and C (both families); dropping it tears everything down.
    LabEcmp
);

const FLOWS: u16 = 16;
const PER_FLOW: u32 = 20;

impl LabEcmp {
    fn new() -> LabEcmp {
        let lab = NetLab::new("xe", &["a", "r", "b", "c"], "this test", &["ip"]);
        lab.link("a", "a0", "r", "r0");
        lab.link("r", "r1", "b", "b0");
        lab.link("r", "r2", "c", "c0");
        let mut cmds = vec![
            (
                "r",
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1".to_string(),
            ),
            (
                "r",
                "sysctl -qw net.ipv6.conf.default.disable_ipv6=1".to_string(),
            ),
            ("r", "sysctl -qw net.ipv4.ip_forward=0".to_string()),
            ("r", format!("ip link set r0 address {R0_MAC}")),
            ("a", "ip addr add 198.18.1.2/24 dev a0".to_string()),
            (
                "a",
                "ip -6 addr add 2001:db8:1::2/64 dev a0 nodad".to_string(),
            ),
        ];
        for (n, i, k) in [("b", "b0", 2), ("c", "c0", 3)] {
            cmds.push((n, format!("ip addr add 198.18.{k}.2/24 dev {i}")));
            cmds.push((
                n,
                format!("ip -6 addr add 2001:db8:{k}::2/64 dev {i} nodad"),
            ));
            cmds.push((n, "ip addr add 198.19.113.1/32 dev lo".to_string()));
            cmds.push((n, "ip -6 addr add 2001:db8:113::1/128 dev lo".to_string()));
        }
        for (n, i) in [
            ("a", "a0"),
            ("r", "r0"),
            ("r", "r1"),
            ("r", "r2"),
            ("b", "b0"),
            ("c", "c0"),
        ] {
            cmds.push((n, format!("ip link set {i} up")));
        }
        cmds.push(("a", "ip route add default via 198.18.1.1".to_string()));
        cmds.push(("a", "ip -6 route add default via 2001:db8:1::1".to_string()));
        cmds.push((
            "a",
            format!("ip neigh replace 198.18.1.1 lladdr {R0_MAC} dev a0 nud permanent"),
        ));
        cmds.push((
            "a",
            format!("ip -6 neigh replace 2001:db8:1::1 lladdr {R0_MAC} dev a0 nud permanent"),
        ));
        for (n, cmd) in cmds {
            lab.must_cmd(n, &cmd);
        }
        LabEcmp(lab)
    }
    fn write_config(&self) -> PathBuf {
        let mut text = format!(
            "[router]\nid = \"198.18.9.1\"\nasn = 65000\n\n\
             [dataplane]\nio = \"af_xdp\"\nxdp_fastpath = true\nfeed_socket = \"{}\"\n",
            self.path("feed.sock").display(),
        );
        for k in 0..3 {
            text.push_str(&format!(
                "\n[[dataplane.interface]]\nname = \"r{k}\"\n\
                 addresses = [\"198.18.{}.1/24\", \"2001:db8:{}::1/64\"]\n",
                k + 1,
                k + 1
            ));
        }
        PathBuf::from(self.write("tesserad.toml", &text))
    }
}

/// Serves `batch` to every dataplane that connects to `path` (as tesserad
/// does on `feed_socket`), keeping the connections open until `stop`.
fn serve_feed(
    path: PathBuf,
    batch: Vec<fib::Change>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let l = UnixListener::bind(&path).expect("bind the feed socket");
    l.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        fib::feed::encode(&batch, &mut buf);
        let mut open = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((mut s, _)) => {
                    let _ = s.set_nonblocking(false);
                    let _ = s.write_all(&buf);
                    open.push(s);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    })
}

/// PER_FLOW datagrams on each of FLOWS flows per family from A (source
/// port per flow, the flow's tag in the first byte), paced.
fn send_flows(lab: &LabEcmp) {
    let h = in_ns(lab.ns("a"), move || {
        let mut socks = Vec::new();
        for i in 0..FLOWS {
            let s4 = UdpSocket::bind(("198.18.1.2", 41000 + i)).expect("bind");
            let s6 = UdpSocket::bind(("2001:db8:1::2", 41000 + i)).expect("bind");
            socks.push((i, s4, s6));
        }
        for _ in 0..PER_FLOW {
            for (i, s4, s6) in &socks {
                let b = [*i as u8; 64];
                let _ = s4.send_to(&b, ("198.19.113.1", 5001));
                let _ = s6.send_to(&b, ("2001:db8:113::1", 5001));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    h.join().expect("sender");
}

fn take(c: &TagCounts) -> Vec<u32> {
    c.iter().map(|x| x.swap(0, Ordering::Relaxed)).collect()
}

#[test]
fn ecmp_flows_keep_one_next_hop_in_xdp() {
    let mut lab = LabEcmp::new();
    let cfg = lab.write_config().display().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let _stop = StopOnDrop(Arc::clone(&stop));
    let batch = vec![
        fib::Change {
            prefix: "198.19.113.0/24".parse().expect("prefix"),
            next_hop: Some("198.18.2.2".parse().expect("ip")),
            ecmp: vec!["198.18.3.2".parse().expect("ip")],
        },
        fib::Change {
            prefix: "2001:db8:113::/48".parse().expect("prefix"),
            next_hop: Some("2001:db8:2::2".parse().expect("ip")),
            ecmp: vec!["2001:db8:3::2".parse().expect("ip")],
        },
    ];
    let feed = serve_feed(lab.path("feed.sock"), batch, Arc::clone(&stop));
    let mut sinks = Vec::new();
    for n in ["b", "c"] {
        for addr in ["198.19.113.1", "2001:db8:113::1"] {
            sinks.push(udp_sink(lab.ns(n), addr, 5001, Arc::clone(&stop)));
        }
    }
    let bin = env!("CARGO_BIN_EXE_tesserad");
    lab.spawn("r", &[bin, "--dataplane", "-c", &cfg], "tesserad.log");
    // Until (nearly) every datagram arrives: the first ones of each
    // member wait for ARP/ND in the graph.
    let want = u32::from(FLOWS) * PER_FLOW * 9 / 10;
    let end = Instant::now() + Duration::from_secs(20);
    let got = loop {
        for (c, _) in &sinks {
            take(c);
        }
        send_flows(&lab);
        std::thread::sleep(Duration::from_millis(500));
        let got = sinks.iter().map(|(c, _)| take(c)).collect::<Vec<_>>();
        let ok = [0, 1]
            .iter()
            .all(|fam| got[*fam].iter().chain(&got[2 + fam]).sum::<u32>() >= want);
        if ok {
            break got;
        }
        assert!(
            Instant::now() < end,
            "flows did not get through R: {got:?}\n{}",
            lab.log("tesserad.log")
        );
    };
    // sinks: [B v4, B v6, C v4, C v6]. Each flow at one of B and C, and
    // both used in each family.
    for (fam, name) in [(0, "IPv4"), (1, "IPv6")] {
        let (b, c) = (&got[fam], &got[2 + fam]);
        for i in 0..usize::from(FLOWS) {
            assert!(
                (b[i] == 0) != (c[i] == 0),
                "{name} flow {i} at B {} and C {}: {b:?} {c:?}",
                b[i],
                c[i]
            );
        }
        assert!(
            b.iter().any(|n| *n > 0) && c.iter().any(|n| *n > 0),
            "{name}: one next hop took every flow: B {b:?} C {c:?}"
        );
    }
    // The fast path carried them: its counters, printed at stop.
    lab.signal("tesserad.log", "TERM");
    lab.wait_log("tesserad.log", "xdp_fastpath forwarded=", 10);
    let line = lab
        .log("tesserad.log")
        .lines()
        .find(|l| l.contains("xdp_fastpath forwarded="))
        .map(str::to_string)
        .unwrap_or_default();
    let (all, v6) = (
        counter(&line, "forwarded"),
        counter(&line, "forwarded_ipv6"),
    );
    assert!(
        v6 >= u64::from(want) && all - v6 >= u64::from(want),
        "the fast path forwarded IPv4 {} IPv6 {v6}: {line}",
        all - v6
    );
    stop.store(true, Ordering::Relaxed);
    for (_, h) in sinks {
        let _ = h.join();
    }
    let _ = feed.join();
}
