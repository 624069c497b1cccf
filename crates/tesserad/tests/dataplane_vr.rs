//! Virtual routers (`[[dataplane.vr]]`) in a running tesserad, on veth
//! pairs in namespaces this test creates:
//!
//! ```text
//! A [a0 198.18.1.2] -- [r0 198.18.1.1]
//!                                      R [r1 198.18.2.1] -- [b0 198.18.2.2] B (lo 198.19.113.1)
//! C [c0 198.18.3.2] -- [r2 198.18.3.1]
//! ```
//!
//! R forwards with its own dataplane only (AF_PACKET, one core, kernel
//! forwarding off). Three VRs, all `table = "main"` (a static route to
//! 198.19.113.0/24 via B): red takes r0 (A), blue r2 (C, three times
//! red's tickets), green r1 (B's answers). Proven: each VR's FIB gets the
//! main table through the fan-out (pings from A and C cross); the
//! demultiplexer gives A's packets to red only (red's counters grow by
//! the pings, blue's do not); per-VR counters in `show dataplane` (text
//! and `--json`) and `/metrics`; under a UDP load from A and C both VRs
//! are charged CPU time (and, when both were backlogged, blue at least
//! 1.5 times red). Then a reload swaps red's and blue's ports: A's
//! packets now count at blue, with the same pid and the FIBs kept (no
//! restart, routes still there); a reload removing every VR is refused
//! and changes nothing. Needs root, `ip`, `ping`; bounded, torn down
//! also on failure.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::netlab::{in_ns, NetLab};

crate::netlab_newtype!(
    /// A, B, C and R; dropping it tears everything down.
    Lab
);

/// One `[[dataplane.vr]]`: name, ingress interface, tickets.
type Vr<'a> = (&'a str, &'a str, u32);

impl Lab {
    fn new() -> Lab {
        let lab = NetLab::new("dv", &["a", "b", "c", "r"], "this test", &["ip", "ping"]);
        lab.link("a", "a0", "r", "r0");
        lab.link("r", "r1", "b", "b0");
        lab.link("c", "c0", "r", "r2");
        for (n, cmd) in [
            ("a", "ip addr add 198.18.1.2/24 dev a0"),
            ("b", "ip addr add 198.18.2.2/24 dev b0"),
            ("c", "ip addr add 198.18.3.2/24 dev c0"),
            ("b", "ip addr add 198.19.113.1/32 dev lo"),
            ("r", "sysctl -qw net.ipv4.ip_forward=0"),
            ("a", "ip link set a0 up"),
            ("b", "ip link set b0 up"),
            ("c", "ip link set c0 up"),
            ("r", "ip link set r0 up"),
            ("r", "ip link set r1 up"),
            ("r", "ip link set r2 up"),
            ("a", "ip route add default via 198.18.1.1"),
            ("b", "ip route add default via 198.18.2.1"),
            ("c", "ip route add default via 198.18.3.1"),
        ] {
            lab.must_cmd(n, cmd);
        }
        Lab(lab)
    }

    /// Writes tesserad's configuration with these VRs (all `table =
    /// "main"`); returns its path.
    fn write_config(&self, vrs: &[Vr<'_>]) -> PathBuf {
        let vrs: Vec<_> = vrs
            .iter()
            .map(|(n, i, t)| (*n, *i, *t, "table = \"main\""))
            .collect();
        self.write_config_with(&vrs, "")
    }

    /// Writes tesserad's configuration with VRs given as (name, ingress,
    /// tickets, source line: `table = "main"` or `neighbors = ["NAME"]`)
    /// and `extra` appended (`[[neighbor]]` blocks for BIRD peers, whose
    /// configuration `common::netlab::bird_third_party_conf` writes);
    /// returns its path. For the test of different next hops per VR once
    /// `neighbors` runs.
    fn write_config_with(&self, vrs: &[(&str, &str, u32, &str)], extra: &str) -> PathBuf {
        let mut text = format!(
            "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\n\
             listen = [\"127.0.0.1:179\"]\n\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9325\"\n\n\
             [[static]]\nprefix = \"198.19.113.0/24\"\nnext_hop = \"198.18.2.2\"\n\n\
             [dataplane]\nio = \"af_packet\"\ncores = 1\n\n\
             [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\"]\n\n\
             [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\"]\n\n\
             [[dataplane.interface]]\nname = \"r2\"\naddresses = [\"198.18.3.1/24\"]\n",
            self.path("tesserad.sock").display(),
        );
        for (name, ingress, tickets, source) in vrs {
            text += &format!(
                "\n[[dataplane.vr]]\nname = \"{name}\"\ningress = \"{ingress}\"\n\
                 {source}\ntickets = {tickets}\ngranularity_us = 100\n"
            );
        }
        text += extra;
        PathBuf::from(self.write("tesserad.toml", &text))
    }

    /// Starts tesserad on `cfg` in R and waits (bounded) until it answers
    /// `show dataplane`; its pid.
    fn start(&mut self, cfg: &str) -> Option<u32> {
        let bin = env!("CARGO_BIN_EXE_tesserad");
        self.spawn("r", &[bin, "-c", cfg], "tesserad.log");
        let end = Instant::now() + Duration::from_secs(20);
        while self.tessera(&["show", "dataplane"]).is_err() {
            assert!(
                Instant::now() < end,
                "tesserad did not start: {}",
                self.tesserad_log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        self.pid("tesserad.log")
    }

    /// `tessera ARGS` in R.
    fn tessera(&self, args: &[&str]) -> Result<String, String> {
        self.0.tessera("r", args)
    }

    /// `count` pings from namespace `n` to B's loopback; whether all came
    /// back.
    fn ping(&self, n: &str, count: u32) -> bool {
        let c = count.to_string();
        self.exec(
            n,
            &[
                "ping",
                "-n",
                "-c",
                &c,
                "-i",
                "0.2",
                "-W",
                "1",
                "-w",
                "5",
                "198.19.113.1",
            ],
        )
        .is_ok_and(|o| o.contains(&format!("{count} received")))
    }

    /// `show dataplane --json`.
    fn show(&self) -> serde_json::Value {
        let s = self
            .tessera(&["show", "dataplane", "--json"])
            .expect("show dataplane");
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
    }

    fn tesserad_log(&self) -> String {
        self.log("tesserad.log")
    }

    /// Waits (bounded) until `f` holds on `show dataplane`.
    fn wait_show(&self, what: &str, f: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let v = self.show();
            if f(&v) {
                return v;
            }
            assert!(Instant::now() < end, "{what}: {v}\n{}", self.tesserad_log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits (bounded) until the core received nothing for 300 ms.
    fn wait_quiet(&self) {
        let rx = |v: &serde_json::Value| v["per_core"][0]["rx"].as_u64().unwrap_or(0);
        let end = Instant::now() + Duration::from_secs(20);
        let mut last = rx(&self.show());
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = rx(&self.show());
            if now == last {
                return;
            }
            assert!(Instant::now() < end, "the dataplane never went quiet");
            last = now;
        }
    }

    /// UDP to B's loopback (discard port) from `src` in namespace `n`, as
    /// fast as the socket takes it, for `dur`; datagrams sent.
    fn blast(&self, n: &str, src: &'static str, dur: Duration) -> std::thread::JoinHandle<u64> {
        in_ns(self.ns(n), move || {
            let s = std::net::UdpSocket::bind((src, 0)).expect("bind");
            s.connect("198.19.113.1:9").expect("connect");
            let buf = [0u8; 64];
            let end = Instant::now() + dur;
            let mut n = 0u64;
            while Instant::now() < end {
                for _ in 0..64 {
                    if s.send(&buf).is_ok() {
                        n += 1;
                    }
                }
            }
            n
        })
    }
}

/// The VR called `name` in a `show dataplane --json` answer.
fn vr<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["vrs"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("no VR {name} in {v}"))
}

/// A number of VR `name` (`rx`, `tx`, `cpu_ns`, `runs`, `routes`, ...).
fn num(v: &serde_json::Value, name: &str, key: &str) -> u64 {
    vr(v, name)[key].as_u64().unwrap_or(0)
}

/// Drops of VR `name` for `reason`.
fn drops(v: &serde_json::Value, name: &str, reason: &str) -> u64 {
    vr(v, name)["drops"][reason].as_u64().unwrap_or(0)
}

#[test]
fn vrs_demux_count_share_and_reload_without_dropping_fibs() {
    let mut lab = Lab::new();
    let cfg = lab.write_config(&[
        ("red", "r0", 100),
        ("blue", "r2", 300),
        ("green", "r1", 100),
    ]);
    let cfgs = cfg.display().to_string();
    let bin = env!("CARGO_BIN_EXE_tesserad");
    lab.exec("r", &[bin, "-c", &cfgs, "--check"])
        .expect("--check accepts ingress VRs with table = main");
    let pid = lab.start(&cfgs);
    // The static route reaches each VR's FIB through the fan-out.
    let end = Instant::now() + Duration::from_secs(15);
    while !lab.ping("a", 1) {
        assert!(
            Instant::now() < end,
            "A: no forwarding: {}",
            lab.tesserad_log()
        );
    }
    assert!(lab.ping("c", 3), "C: no forwarding: {}", lab.tesserad_log());
    let v = lab.wait_show("every VR has the route", |v| {
        ["red", "blue", "green"]
            .iter()
            .all(|n| num(v, n, "installed") >= 1)
    });
    assert_eq!(num(&v, "blue", "tickets"), 300);

    // Demultiplexing: A's pings count at red (and their answers at
    // green), not at blue.
    let before = lab.show();
    assert!(lab.ping("a", 5), "A: pings lost");
    let v = lab.wait_show("red counts and forwards A's pings", |v| {
        num(v, "red", "rx") >= num(&before, "red", "rx") + 5
            && num(v, "red", "tx") >= num(&before, "red", "tx") + 5
            && num(v, "green", "rx") >= num(&before, "green", "rx") + 5
    });
    // Neighbour answers (ARP replies, NAs, also multicast ones) go to
    // every VR; no ping does, and blue forwards nothing.
    assert!(
        num(&v, "blue", "rx") < num(&before, "blue", "rx") + 5
            && num(&v, "blue", "tx") <= num(&before, "blue", "tx") + 1,
        "blue got A's packets: {before} {v}"
    );
    assert!(num(&v, "red", "tx") >= 5, "{v}");
    let text = lab.tessera(&["show", "dataplane"]).expect("text");
    let line = text
        .lines()
        .find(|l| l.starts_with("red "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.split_whitespace().nth(1) == Some("100"), "{text}");
    assert!(text.contains("Virtual router"), "{text}");
    let m = common::netlab::metrics(&lab.ns("r"), "127.0.0.1:9325");
    for want in [
        "tessera_dataplane_vr_packets_total{vr=\"red\",dir=\"rx\"}",
        "tessera_dataplane_vr_drops_total{vr=\"blue\",reason=\"queue_full\"}",
        "tessera_dataplane_vr_cpu_seconds_total{vr=\"green\"}",
        "tessera_dataplane_vr_tickets{vr=\"blue\"} 300",
    ] {
        assert!(m.contains(want), "no {want} in {m}");
    }

    // Shares: A and C load red and blue at once.
    let before = lab.show();
    let (ta, tc) = (
        lab.blast("a", "198.18.1.2", Duration::from_secs(2)),
        lab.blast("c", "198.18.3.2", Duration::from_secs(2)),
    );
    let (sa, sc) = (ta.join().expect("A"), tc.join().expect("C"));
    let v = lab.wait_show("both loaded VRs ran", |v| {
        num(v, "red", "rx") > num(&before, "red", "rx") + 1000
            && num(v, "blue", "rx") > num(&before, "blue", "rx") + 1000
    });
    let d = |n: &str, k: &str| num(&v, n, k) - num(&before, n, k);
    let (red_ns, blue_ns) = (d("red", "cpu_ns"), d("blue", "cpu_ns"));
    let full = |n: &str| drops(&v, n, "queue_full") - drops(&before, n, "queue_full");
    let (red_full, blue_full) = (full("red"), full("blue"));
    eprintln!(
        "shares: sent A {sa} C {sc}; red rx {} cpu {red_ns} ns queue_full {red_full}; \
         blue rx {} cpu {blue_ns} ns queue_full {blue_full}; blue/red {:.2}",
        d("red", "rx"),
        d("blue", "rx"),
        blue_ns as f64 / red_ns.max(1) as f64
    );
    assert!(red_ns > 0 && blue_ns > 0, "{v}");
    if d("red", "rx") * 2 < sa && d("blue", "rx") * 2 < sc {
        // Both VRs were backlogged (each got less than half of what was
        // sent to it: the rest waited in, and overflowed, its port's
        // receive ring): the scheduler gave blue its larger share
        // (tickets 3:1; the in-process test in fib's dataplane/vr.rs
        // checks the ratio closely). With one VR not backlogged the other
        // may use its spare share, so nothing is asserted then.
        assert!(
            blue_ns * 2 >= red_ns * 3,
            "blue/red below 1.5 when saturated: {v}"
        );
    }

    // The load's backlog (the ports' receive rings) drains first.
    lab.wait_quiet();

    // Reload: red and blue swap ports; A's packets move to blue.
    let routes_before = num(&lab.show(), "red", "installed");
    lab.write_config(&[
        ("red", "r2", 100),
        ("blue", "r0", 300),
        ("green", "r1", 100),
    ]);
    let out = lab.tessera(&["configure"]).expect("reload the VRs");
    assert!(out.contains("virtual routers"), "{out}");
    // The FIBs were kept: routes at once, no new feed.
    assert!(num(&lab.show(), "red", "installed") >= routes_before.min(1));
    let before = lab.show();
    let end = Instant::now() + Duration::from_secs(10);
    while !lab.ping("a", 1) {
        assert!(
            Instant::now() < end,
            "A after the reload: {}",
            lab.tesserad_log()
        );
    }
    assert!(lab.ping("a", 5), "A: pings lost after the reload");
    let v = lab.wait_show("blue counts and forwards A's pings", |v| {
        num(v, "blue", "rx") >= num(&before, "blue", "rx") + 5
            && num(v, "blue", "tx") >= num(&before, "blue", "tx") + 5
    });
    assert!(
        num(&v, "red", "rx") < num(&before, "red", "rx") + 5
            && num(&v, "red", "tx") <= num(&before, "red", "tx") + 1,
        "red still gets A's packets: {before} {v}"
    );

    // Removing every VR cannot be applied live: refused, nothing changes.
    lab.write_config(&[]);
    let e = lab
        .tessera(&["configure"])
        .expect_err("removing every VR reloaded");
    assert!(e.contains("restart"), "{e}");
    assert!(lab.ping("a", 3), "A after the refused reload");
    assert_eq!(lab.show()["vrs"].as_array().map(Vec::len), Some(3));
    assert_eq!(lab.pid("tesserad.log"), pid);
    let log = lab.tesserad_log();
    assert_eq!(
        log.matches("dataplane: started").count(),
        1,
        "restarted: {log}"
    );
}
