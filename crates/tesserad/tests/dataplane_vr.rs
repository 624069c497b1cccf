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
//! restart, routes still there); a reload removing every VR gives the
//! core back to the main graph. Needs root, `ip`, `ping`; bounded, torn
//! down also on failure.
//!
//! `vrs_come_and_go_by_reload_while_forwarding`: tesserad starts without
//! VRs; a UDP flow from A to B runs through a reload adding three VRs and
//! one removing them all, tagged by phase: each phase delivers, the
//! counters show which path forwarded (the main graph's elements, then
//! red's, then the main graph's again), the main FIB's route reaches the
//! new VRs without a new feed from the RIB, a reload adding VRs with an
//! operator's graph is refused with its FILE:LINE:COL, and the pid and
//! the start stay the same.
//!
//! `vr_neighbors_follow_their_bird_peers` (a lab of its own, with a
//! fourth port and two BIRD peers) proves `neighbors = [...]`: each VR
//! forwards toward its own peer's next hop, follows that peer's session
//! and a reload of its neighbour list.

use e2e as common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::netlab::{in_ns, udp_sink, NetLab};

e2e::netlab_newtype!(
    /// A, B, C and R; dropping it tears everything down.
    Lab
);

/// One `[[dataplane.vr]]`: name, ingress interface, tickets.
type Vr<'a> = (&'a str, &'a str, u32);

/// R's dataplane ports (name, address); the first three in every test,
/// r3 (to D) in the BIRD test.
const PORTS: [(&str, &str); 4] = [
    ("r0", "198.18.1.1/24"),
    ("r1", "198.18.2.1/24"),
    ("r2", "198.18.3.1/24"),
    ("r3", "198.18.4.1/24"),
];

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
        self.write_config_ports(&PORTS[..3], vrs, extra)
    }

    /// [`Self::write_config_with`] on the dataplane ports `ports` (name,
    /// address/len).
    fn write_config_ports(
        &self,
        ports: &[(&str, &str)],
        vrs: &[(&str, &str, u32, &str)],
        extra: &str,
    ) -> PathBuf {
        let mut text = format!(
            "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\n\
             listen = [\"127.0.0.1:179\"]\n\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9325\"\n\n\
             [[static]]\nprefix = \"198.19.113.0/24\"\nnext_hop = \"198.18.2.2\"\n\n\
             [dataplane]\nio = \"af_packet\"\ncores = 1\n",
            self.path("tesserad.sock").display(),
        );
        for (name, addr) in ports {
            text += &format!(
                "\n[[dataplane.interface]]\nname = \"{name}\"\naddresses = [\"{addr}\"]\n"
            );
        }
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

    fn tesserad_log(&self) -> String {
        self.log("tesserad.log")
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

    // Removing every VR is applied live: the core goes back to the main
    // graph (vrs_come_and_go_by_reload_while_forwarding has the rest).
    lab.write_config(&[]);
    let out = lab.tessera(&["configure"]).expect("remove every VR");
    assert!(out.contains("main graph"), "{out}");
    assert!(lab.ping("a", 3), "A after removing every VR");
    assert_eq!(lab.show()["vrs"].as_array().map(Vec::len), Some(0));
    assert_eq!(lab.pid("tesserad.log"), pid);
    let log = lab.tesserad_log();
    assert_eq!(
        log.matches("dataplane: started").count(),
        1,
        "restarted: {log}"
    );
}

/// Packets the main graph's `FromDevice` elements emitted (0 while VRs
/// run: the main graph's elements are not shown then).
fn main_in(v: &serde_json::Value) -> u64 {
    v["elements"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|e| e["class"] == "FromDevice")
                .map(|e| e["tx"].as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn vrs_come_and_go_by_reload_while_forwarding() {
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    use std::sync::Arc;
    let mut lab = Lab::new();
    // Full UDP checksums from A (no partial, offloaded ones to forward).
    lab.up("a", "a0");
    let cfg = lab.write_config(&[]);
    let cfgs = cfg.display().to_string();
    let pid = lab.start(&cfgs);
    let end = Instant::now() + Duration::from_secs(15);
    while !lab.ping("a", 1) {
        assert!(
            Instant::now() < end,
            "A: no forwarding by the main graph: {}",
            lab.tesserad_log()
        );
    }
    let v = lab.wait_show("the main graph forwards A's pings", |v| main_in(v) > 0);
    assert_eq!(v["vrs"].as_array().map(Vec::len), Some(0), "{v}");

    // A steady flow A -> B (one datagram a millisecond), its first byte
    // the phase: 0 before, 1 during the first reload, 2 after it, 3
    // during the second, 4 after it.
    // Stops the flow when the test ends, also on failure.
    struct Halt(Arc<AtomicBool>);
    impl Drop for Halt {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let halt = Halt(Arc::clone(&stop));
    let (counts, sink) = udp_sink(lab.ns("b"), "198.19.113.1", 9000, Arc::clone(&stop));
    let phase = Arc::new(AtomicU8::new(0));
    let sent: Arc<[std::sync::atomic::AtomicU32; 16]> = Arc::new(Default::default());
    let sender = {
        let (stop, phase, sent) = (Arc::clone(&stop), Arc::clone(&phase), Arc::clone(&sent));
        in_ns(lab.ns("a"), move || {
            let s = std::net::UdpSocket::bind(("198.18.1.2", 0)).expect("bind");
            s.connect("198.19.113.1:9000").expect("connect");
            let end = Instant::now() + Duration::from_secs(120);
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                let p = phase.load(Ordering::Relaxed);
                if s.send(&[p; 32]).is_ok() {
                    sent[usize::from(p)].fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let got = |p: usize| counts[p].load(Ordering::Relaxed);
    let wait = |what: &str, p: usize, n: u32| {
        let end = Instant::now() + Duration::from_secs(15);
        while got(p) < n {
            assert!(
                Instant::now() < end,
                "{what}: {} of phase {p} arrived\n{}",
                got(p),
                lab.tesserad_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait("the main graph forwards the flow", 0, 100);

    // Reload 1: three VRs, the first ones.
    let main_before = main_in(&lab.show());
    lab.write_config(&[
        ("red", "r0", 100),
        ("green", "r1", 100),
        ("blue", "r2", 300),
    ]);
    phase.store(1, Ordering::Relaxed);
    let out = lab.tessera(&["configure"]).expect("add the first VRs");
    phase.store(2, Ordering::Relaxed);
    assert!(out.contains("left the main graph"), "{out}");
    wait("red forwards the flow after the first reload", 2, 100);
    // The flow goes through red now: its counters grow, the main graph
    // shows nothing, and red's FIB has the static route, which it got
    // from the main FIB (the RIB sent nothing new).
    let v0 = lab.show();
    let v = lab.wait_show("red forwards the flow", |v| {
        num(v, "red", "tx") >= num(&v0, "red", "tx") + 100 && num(v, "red", "installed") >= 1
    });
    assert_eq!(v["vrs"].as_array().map(Vec::len), Some(3), "{v}");
    assert_eq!(main_in(&v), 0, "the main graph still shows: {v}");
    assert!(main_before > 0);
    assert!(num(&v, "blue", "tx") <= 2, "blue forwarded A's flow: {v}");

    // Still refused, with the position: VRs with an operator's graph.
    let graph = lab.write("op.graph", "x");
    let text = std::fs::read_to_string(&cfg).expect("read the config");
    let with = text.replacen(
        "cores = 1\n",
        &format!("cores = 1\ngraph = \"{graph}\"\n"),
        1,
    );
    std::fs::write(&cfg, &with).expect("write");
    let e = lab
        .tessera(&["configure"])
        .expect_err("VRs with an operator's graph reloaded");
    let line = with
        .lines()
        .position(|l| l == "[[dataplane.vr]]")
        .expect("a VR")
        + 1;
    assert!(
        e.contains(&format!("{cfgs}:{line}:")) && e.contains("not supported yet"),
        "want {cfgs}:{line}: in {e}"
    );
    assert_eq!(lab.show()["vrs"].as_array().map(Vec::len), Some(3));

    // Reload 2: no VR any more.
    lab.write_config(&[]);
    phase.store(3, Ordering::Relaxed);
    let out = lab.tessera(&["configure"]).expect("remove every VR");
    phase.store(4, Ordering::Relaxed);
    assert!(out.contains("main graph again"), "{out}");
    wait(
        "the main graph forwards the flow after the second reload",
        4,
        100,
    );
    let v0 = lab.show();
    let v = lab.wait_show("the main graph forwards the flow", |v| {
        main_in(v) >= main_in(&v0) + 100
    });
    assert_eq!(v["vrs"].as_array().map(Vec::len), Some(0), "{v}");
    assert!(
        main_in(&v) > main_before,
        "the main graph's counters went back: {main_before} then {v}"
    );
    drop(halt);
    sender.join().expect("sender");
    sink.join().expect("sink");
    let sent: Vec<u32> = (0..5).map(|p| sent[p].load(Ordering::Relaxed)).collect();
    let recv: Vec<u32> = (0..5).map(got).collect();
    eprintln!("flow by phase: sent {sent:?}, received {recv:?}");
    // During each reload the flow went on (frames queued inside the side
    // that hands over are lost with it, a few at most).
    for p in [1, 3] {
        assert!(
            recv[p] > 0 || sent[p] == 0,
            "nothing delivered during reload {p}: sent {sent:?}, received {recv:?}"
        );
    }
    let (s, r): (u32, u32) = (sent.iter().sum(), recv.iter().sum());
    assert!(
        r * 100 >= s * 90,
        "lost more than 10 %: sent {sent:?}, received {recv:?}"
    );
    assert_eq!(lab.pid("tesserad.log"), pid);
    let log = lab.tesserad_log();
    assert_eq!(
        log.matches("dataplane: started").count(),
        1,
        "restarted: {log}"
    );
}

/// The prefix both BIRD peers announce, and the address in it that B and
/// D each have on their loopback.
const PFX: &str = "198.18.200.0/24";
const DST: &str = "198.18.200.1";

/// Datagrams received per tag (the first byte, 0..16), readable while
/// the sink runs.
type Counts = common::netlab::TagCounts;

fn counts(c: &Counts) -> [u32; 16] {
    std::array::from_fn(|i| c[i].load(std::sync::atomic::Ordering::Relaxed))
}

impl Lab {
    /// The BIRD lab (module docs of [`vr_neighbors_follow_their_bird_peers`]).
    fn with_birds() -> Lab {
        let lab = NetLab::new(
            "dvb",
            &["a", "b", "c", "d", "r"],
            "this test",
            &["ip", "ethtool", "bird", "birdc"],
        );
        lab.link("a", "a0", "r", "r0");
        lab.link("r", "r1", "b", "b0");
        lab.link("c", "c0", "r", "r2");
        lab.link("r", "r3", "d", "d0");
        // BGP control links (kernel addresses in R; not dataplane ports).
        lab.link("r", "rb", "b", "gb");
        lab.link("r", "rd", "d", "gd");
        for (n, cmd) in [
            ("a", "ip addr add 198.18.1.2/24 dev a0"),
            ("b", "ip addr add 198.18.2.2/24 dev b0"),
            ("c", "ip addr add 198.18.3.2/24 dev c0"),
            ("d", "ip addr add 198.18.4.2/24 dev d0"),
            ("b", "ip addr add 198.18.200.1/32 dev lo"),
            ("d", "ip addr add 198.18.200.1/32 dev lo"),
            ("r", "ip addr add 198.18.9.1/24 dev rb"),
            ("b", "ip addr add 198.18.9.2/24 dev gb"),
            ("r", "ip addr add 198.18.10.1/24 dev rd"),
            ("d", "ip addr add 198.18.10.2/24 dev gd"),
            ("r", "sysctl -qw net.ipv4.ip_forward=0"),
        ] {
            lab.must_cmd(n, cmd);
        }
        for (n, i) in [
            ("a", "a0"),
            ("b", "b0"),
            ("c", "c0"),
            ("d", "d0"),
            ("b", "gb"),
            ("d", "gd"),
            ("r", "r0"),
            ("r", "r1"),
            ("r", "r2"),
            ("r", "r3"),
            ("r", "rb"),
            ("r", "rd"),
        ] {
            lab.up(n, i);
        }
        for (n, gw) in [("a", "198.18.1.1"), ("c", "198.18.3.1")] {
            lab.must(n, &["ip", "route", "add", "default", "via", gw]);
        }
        Lab(lab)
    }

    /// Starts BIRD `name` in namespace `n`: AS `asn` at `me`, a passive
    /// eBGP session with R at `peer`, announcing [`PFX`] with the
    /// third-party next hop `via` (set by the export filter: see
    /// `common::netlab::bird_third_party_conf`; the route itself is
    /// `unreachable`, so BIRD needs no gateway of its own).
    fn bird(&mut self, n: &str, name: &str, me: &str, peer: &str, asn: u32, via: &str) {
        let conf = format!(
            "log \"{log}\" all;\nrouter id {me};\nprotocol device {{}}\n\
             protocol static st {{ ipv4; route {PFX} unreachable; }}\n\
             protocol bgp peer {{\n  local {me} as {asn};\n  neighbor {peer} as 65000;\n\
               passive on;\n  hold time 9;\n  connect retry time 1;\n\
               ipv4 {{ import none;\n\
                 export filter {{ if proto = \"st\" then {{ bgp_next_hop = {via}; accept; }} reject; }};\n\
               }};\n}}\n",
            log = self.path(&format!("{name}.log")).display(),
        );
        let conf = self.write(&format!("{name}.conf"), &conf);
        let sock = self.birdc_sock(name);
        self.spawn(
            n,
            &["bird", "-f", "-c", &conf, "-s", &sock],
            &format!("{name}.out"),
        );
    }

    fn birdc_sock(&self, name: &str) -> String {
        self.path(&format!("{name}.ctl")).display().to_string()
    }

    /// `birdc ARGS` to BIRD `name`.
    fn birdc(&self, name: &str, args: &[&str]) -> Result<String, String> {
        let sock = self.birdc_sock(name);
        let mut v = vec!["birdc", "-s", &sock];
        v.extend_from_slice(args);
        common::cluster::sh(&v)
    }

    /// tesserad's and both BIRDs' view, for failures.
    fn diag(&self) -> String {
        let mut s = format!("--- tesserad.log\n{}", self.tesserad_log());
        for b in ["bird-a", "bird-b"] {
            s += &format!(
                "\n--- {b}.log\n{}\n--- {b} protocols\n{}",
                self.log(&format!("{b}.log")),
                self.birdc(b, &["show", "protocols", "all", "peer"])
                    .unwrap_or_else(|e| e)
            );
        }
        s
    }

    /// A UDP sink on [`DST`]:5001 in namespace `n` until `stop`.
    fn sink(
        &self,
        n: &str,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> (Counts, std::thread::JoinHandle<()>) {
        udp_sink(self.ns(n), DST, 5001, stop)
    }

    /// Sends `count` datagrams tagged `tag` to [`DST`]:5001 from `src` in
    /// namespace `n`, paced (10 per 2 ms).
    fn send(&self, n: &str, src: &'static str, tag: u8, count: u32) {
        in_ns(self.ns(n), move || {
            let s = std::net::UdpSocket::bind((src, 0)).expect("bind");
            let mut b = [0u8; 100];
            b[0] = tag;
            for i in 0..count {
                let _ = s.send_to(&b, (DST, 5001));
                if i % 10 == 9 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        })
        .join()
        .expect("sender");
    }
}

/// `[[dataplane.vr]] neighbors = [...]` end to end, with real BIRD peers:
///
/// ```text
/// A [a0 198.18.1.2] -- [r0 .1.1]        [r1 .2.1] -- [b0 198.18.2.2] B (lo 198.18.200.1)
///                               R                    [gb 198.18.9.2]  BIRD bird-a, AS 65001
///                               |  [rb 198.18.9.1] --'
/// C [c0 198.18.3.2] -- [r2 .3.1]        [r3 .4.1] -- [d0 198.18.4.2] D (lo 198.18.200.1)
///                                  [rd 198.18.10.1] -- [gd 198.18.10.2] BIRD bird-b, AS 65002
/// ```
///
/// bird-a (in B) and bird-b (in D) both announce 198.18.200.0/24, each
/// with its own address as the next hop (B's and D's loopbacks both hold
/// 198.18.200.1; a UDP sink in each counts what arrives, by tag). R has
/// no kernel forwarding and no kernel address on its dataplane ports.
/// VR red (ingress r0) takes `neighbors = ["bird-a"]`, blue (ingress r2)
/// `neighbors = ["bird-b"]`; no VR follows the main table. Proven: A's
/// datagrams reach B only and C's D only (the main Loc-RIB picks one of
/// the two, so a VR fed from it would send both ways alike); `birdc
/// disable peer` in bird-a empties red's FIB (`installed` 0, A's
/// datagrams dropped as `no_route` at red, none arrive anywhere) while
/// blue keeps forwarding C's to D; a reload giving red `neighbors =
/// ["bird-b"]` sends A's datagrams to D. Needs root, `ip`, `ethtool`,
/// `bird`, `birdc`; bounded, torn down also on failure.
#[test]
fn vr_neighbors_follow_their_bird_peers() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    const N: u32 = 200;
    let mut lab = Lab::with_birds();
    lab.bird(
        "b",
        "bird-a",
        "198.18.9.2",
        "198.18.9.1",
        65001,
        "198.18.2.2",
    );
    lab.bird(
        "d",
        "bird-b",
        "198.18.10.2",
        "198.18.10.1",
        65002,
        "198.18.4.2",
    );
    let neighbors = "\n[[neighbor]]\nname = \"bird-a\"\naddress = \"198.18.9.2\"\n\
         remote_as = 65001\nimport = \"accept\"\nhold_time = 9\nconnect_retry = 1\n\
         \n[[neighbor]]\nname = \"bird-b\"\naddress = \"198.18.10.2\"\n\
         remote_as = 65002\nimport = \"accept\"\nhold_time = 9\nconnect_retry = 1\n";
    let cfg = lab.write_config_ports(
        &PORTS,
        &[
            ("red", "r0", 100, "neighbors = [\"bird-a\"]"),
            ("blue", "r2", 100, "neighbors = [\"bird-b\"]"),
        ],
        neighbors,
    );
    let cfgs = cfg.display().to_string();
    let bin = env!("CARGO_BIN_EXE_tesserad");
    lab.exec("r", &[bin, "-c", &cfgs, "--check"])
        .expect("--check accepts neighbors = [...] VRs");
    lab.start(&cfgs);

    let stop = Arc::new(AtomicBool::new(false));
    let (nb, sink_b) = lab.sink("b", Arc::clone(&stop));
    let (nd, sink_d) = lab.sink("d", Arc::clone(&stop));
    let _stop_sinks = common::netlab::StopOnDrop(Arc::clone(&stop));

    // Both sessions up, both views fed: probes (tag 0 from A, tag 1 from
    // C) get through. The first ones may be lost while R resolves ARP.
    lab.wait_for(
        "A's probes at B, C's at D",
        40,
        || lab.diag(),
        || {
            lab.send("a", "198.18.1.2", 0, 5);
            lab.send("c", "198.18.3.2", 1, 5);
            counts(&nb)[0] > 0 && counts(&nd)[1] > 0
        },
    );
    let v = lab.show();
    assert!(
        num(&v, "red", "installed") >= 1 && num(&v, "blue", "installed") >= 1,
        "{v}"
    );

    // Each VR its own next hop: A's datagrams (tag 2) to B only, C's
    // (tag 3) to D only.
    let before = lab.show();
    lab.send("a", "198.18.1.2", 2, N);
    lab.send("c", "198.18.3.2", 3, N);
    lab.wait_for(
        "tags 2 at B and 3 at D",
        10,
        || lab.diag(),
        || counts(&nb)[2] >= N * 9 / 10 && counts(&nd)[3] >= N * 9 / 10,
    );
    std::thread::sleep(Duration::from_millis(300));
    let (b, d) = (counts(&nb), counts(&nd));
    assert_eq!((d[0], d[2]), (0, 0), "A's datagrams at D: B {b:?} D {d:?}");
    assert_eq!((b[1], b[3]), (0, 0), "C's datagrams at B: B {b:?} D {d:?}");
    let v = lab.show();
    assert!(
        num(&v, "red", "tx") >= num(&before, "red", "tx") + u64::from(N * 9 / 10)
            && num(&v, "blue", "tx") >= num(&before, "blue", "tx") + u64::from(N * 9 / 10),
        "per-VR counters: {before} {v}"
    );

    // bird-a's session goes down: its route leaves red's FIB; blue keeps
    // its own.
    lab.birdc("bird-a", &["disable", "peer"])
        .expect("birdc disable peer");
    lab.wait_show("red's FIB empty after bird-a went down", |v| {
        num(v, "red", "installed") == 0 && num(v, "red", "routes") == 0
    });
    let before = lab.show();
    assert!(num(&before, "blue", "installed") >= 1, "{before}");
    lab.send("a", "198.18.1.2", 4, N);
    lab.send("c", "198.18.3.2", 5, N);
    let v = lab.wait_show("A's datagrams dropped at red as no_route", |v| {
        drops(v, "red", "no_route") >= drops(&before, "red", "no_route") + u64::from(N * 9 / 10)
    });
    lab.wait_for(
        "blue still forwards C's to D",
        10,
        || lab.diag(),
        || counts(&nd)[5] >= N * 9 / 10,
    );
    std::thread::sleep(Duration::from_millis(300));
    let (b, d) = (counts(&nb), counts(&nd));
    assert_eq!((b[4], d[4]), (0, 0), "A's datagrams forwarded: {v}");
    assert_eq!(b[5], 0, "C's datagrams at B");

    // A reload moves red to bird-b's routes: A's datagrams go to D.
    lab.write_config_ports(
        &PORTS,
        &[
            ("red", "r0", 100, "neighbors = [\"bird-b\"]"),
            ("blue", "r2", 100, "neighbors = [\"bird-b\"]"),
        ],
        neighbors,
    );
    let out = lab.tessera(&["configure"]).expect("reload red's neighbors");
    assert!(
        out.contains("virtual routers") && out.contains("red"),
        "{out}"
    );
    lab.wait_show("red's FIB gets bird-b's route", |v| {
        num(v, "red", "installed") >= 1
    });
    lab.send("a", "198.18.1.2", 6, N);
    lab.send("c", "198.18.3.2", 7, N);
    lab.wait_for(
        "A's and C's datagrams at D",
        10,
        || lab.diag(),
        || {
            let d = counts(&nd);
            d[6] >= N * 9 / 10 && d[7] >= N * 9 / 10
        },
    );
    std::thread::sleep(Duration::from_millis(300));
    let b = counts(&nb);
    assert_eq!(
        (b[6], b[7]),
        (0, 0),
        "datagrams at B after the reload: {b:?}"
    );

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    sink_b.join().expect("sink B");
    sink_d.join().expect("sink D");
}
