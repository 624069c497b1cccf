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

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::netlab::NetLab;

crate::netlab_newtype!(
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
