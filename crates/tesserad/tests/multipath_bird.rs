//! Multipath (ECMP) end to end: tesserad with `router.multipath`, its own
//! dataplane and kernel export, and two real BIRD peers announcing the
//! same prefix with equal attributes:
//!
//! ```text
//! A [a0 198.18.1.2] -- [r0 198.18.1.1] R [r1 198.18.2.1] -- [b0 198.18.2.2] B  (lo 198.19.113.1)
//!                                        [r2 198.18.3.1] -- [c0 198.18.3.2] C  (lo 198.19.113.1)
//!                                        [rc 198.18.9.1] -- [gc 198.18.9.2]  BIRD 1 (AS 65001)
//!                                        [rd 198.18.10.1] - [hd 198.18.10.2] BIRD 2 (AS 65001)
//! ```
//!
//! BIRD 1 announces 198.19.113.0/24 with next hop 198.18.2.2 (B), BIRD 2
//! the same prefix with next hop 198.18.3.2 (C); same AS, same path
//! length, origin and MED, so with `multipath = 2` both are members of the
//! set. The test asserts: (1) `show route` (JSON, as `tessera show route
//! --json`) marks both paths `multipath`; (2) kernel export wrote one
//! route with two next hops (`ip -j route show` in R: `multipath`); (3)
//! the dataplane spreads 64 UDP flows from A over B and C, each flow on
//! one of them only. A reload (SIGHUP) to `multipath = 1` and back
//! takes the set away and restores it (show route and kernel). Then BIRD
//! 2's session is disabled, and (1)-(3) show
//! one path, one kernel next hop and every flow at B. Needs root, `ip`,
//! `ethtool`, `bird`, `birdc`; each wait is bounded (a pass takes about
//! 15 s) and the lab is torn down on failure too.

use e2e as common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::cluster::sh;
use common::netlab::{bird_third_party_conf, in_ns, NetLab, StopOnDrop};

/// UDP flows (source ports) and datagrams per flow.
const FLOWS: usize = 64;
const PER_FLOW: u32 = 20;

e2e::netlab_newtype!(
    /// The lab of the module docs; dropping it tears everything down.
    Lab
);

impl Lab {
    fn new() -> Lab {
        let lab = NetLab::new(
            "mp",
            &["a", "r", "b", "c", "g", "h"],
            "multipath tests",
            &["ip", "ethtool", "bird", "birdc"],
        );
        lab.link("a", "a0", "r", "r0");
        lab.link("r", "r1", "b", "b0");
        lab.link("r", "r2", "c", "c0");
        lab.link("r", "rc", "g", "gc");
        lab.link("r", "rd", "h", "hd");
        for (n, cmd) in [
            ("a", "ip addr add 198.18.1.2/24 dev a0"),
            ("b", "ip addr add 198.18.2.2/24 dev b0"),
            ("c", "ip addr add 198.18.3.2/24 dev c0"),
            ("b", "ip addr add 198.19.113.1/32 dev lo"),
            ("c", "ip addr add 198.19.113.1/32 dev lo"),
            // R's kernel knows the two egress links, so that it accepts
            // the exported gateways; it does not forward (ip_forward 0):
            // every datagram that crosses R was moved by the dataplane.
            ("r", "ip addr add 198.18.2.1/24 dev r1"),
            ("r", "ip addr add 198.18.3.1/24 dev r2"),
            ("r", "ip addr add 198.18.9.1/24 dev rc"),
            ("r", "ip addr add 198.18.10.1/24 dev rd"),
            ("r", "sysctl -qw net.ipv4.ip_forward=0"),
            ("g", "ip addr add 198.18.9.2/24 dev gc"),
            ("h", "ip addr add 198.18.10.2/24 dev hd"),
            // BIRD's static gateways must look reachable to BIRD itself
            // (a veth pair: this kernel has no dummy driver).
            ("g", "ip link add gw0 type veth peer name gw1"),
            ("g", "ip addr add 198.18.2.100/24 dev gw0"),
            ("h", "ip link add gw0 type veth peer name gw1"),
            ("h", "ip addr add 198.18.3.100/24 dev gw0"),
        ] {
            lab.must_cmd(n, cmd);
        }
        for (n, i) in [
            ("a", "a0"),
            ("r", "r0"),
            ("r", "r1"),
            ("r", "r2"),
            ("r", "rc"),
            ("r", "rd"),
            ("b", "b0"),
            ("c", "c0"),
            ("g", "gc"),
            ("g", "gw0"),
            ("g", "gw1"),
            ("h", "hd"),
            ("h", "gw0"),
            ("h", "gw1"),
        ] {
            lab.up(n, i);
        }
        lab.must_cmd("a", "ip route add default via 198.18.1.1");
        lab.must_cmd("b", "ip route add default via 198.18.2.1");
        lab.must_cmd("c", "ip route add default via 198.18.3.1");
        Lab(lab)
    }

    fn bird_sock(&self, n: &str) -> String {
        self.path(&format!("bird-{n}.ctl")).display().to_string()
    }

    /// `show route 198.19.113.0/24` as JSON: (paths, multipath members).
    fn route(&self) -> (usize, usize) {
        let r = self
            .ctl(r#"{"command":"show_route","prefix":"198.19.113.0/24"}"#)
            .unwrap_or_default()
            .replace(' ', "");
        (
            r.matches("\"since_ms\"").count(),
            r.matches("\"multipath\":true").count(),
        )
    }

    /// R's kernel route for the prefix (`ip -j route show`).
    fn kernel_route(&self) -> String {
        self.exec("r", &["ip", "-j", "route", "show", "198.19.113.0/24"])
            .unwrap_or_else(|e| e)
            .replace(' ', "")
    }

    /// Waits up to `secs` for `f`; on timeout, fails with what the lab
    /// shows (the lab is torn down by `Drop` as the panic unwinds).
    fn wait_for(&self, what: &str, secs: u64, mut f: impl FnMut(&Lab) -> bool) {
        self.0.wait_for(
            what,
            secs,
            || {
                let route = self
                    .ctl(r#"{"command":"show_route","all":true}"#)
                    .unwrap_or_else(|e| e);
                format!(
                    "--- show route\n{route}\n--- kernel\n{}\n--- tesserad.log\n{}\n--- bird-g.log\n{}\n--- bird-h.log\n{}",
                    self.kernel_route(),
                    self.log("tesserad.log"),
                    self.log("bird-g.log"),
                    self.log("bird-h.log"),
                )
            },
            || f(self),
        );
    }
}

/// BIRD `n` (`me`, peer `peer`) announcing 198.19.113.0/24 with the
/// third-party next hop `via` (see [`bird_third_party_conf`]).
fn bird_conf(lab: &Lab, n: &str, me: &str, peer: &str, via: &str) -> String {
    bird_third_party_conf(
        &lab.path(&format!("bird-{n}.conf")),
        &lab.path(&format!("bird-{n}.log")),
        me,
        peer,
        via,
    )
}

fn tesserad_conf(lab: &Lab, ebgp: u16) -> String {
    let text = format!(
        "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\n\
         listen = [\"198.18.9.1:179\", \"198.18.10.1:179\"]\n\
         default_import = \"accept\"\ndefault_export = \"accept\"\n\
         multipath = {{ ebgp = {ebgp}, ibgp = 1, relax_as_path = false }}\n\n\
         [control]\nsocket = \"{}\"\n\n\
         [[neighbor]]\naddress = \"198.18.9.2\"\nremote_as = 65001\nhold_time = 9\nconnect_retry = 1\n\n\
         [[neighbor]]\naddress = \"198.18.10.2\"\nremote_as = 65001\nhold_time = 9\nconnect_retry = 1\n\n\
         [dataplane]\nio = \"af_packet\"\nkp = 32\nkn = 32\nframes = 8192\nkernel = true\n\n\
         [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\"]\n\n\
         [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\"]\n\n\
         [[dataplane.interface]]\nname = \"r2\"\naddresses = [\"198.18.3.1/24\"]\n",
        lab.path("tesserad.sock").display()
    );
    lab.write("tesserad.toml", &text)
}

/// Datagrams received per flow in one namespace, readable while running.
type Counts = Arc<Vec<AtomicU32>>;

/// A UDP sink on 198.19.113.1:5001 counting datagrams by flow (first byte).
fn sink(ns: String, stop: Arc<AtomicBool>) -> (Counts, std::thread::JoinHandle<()>) {
    let n: Counts = Arc::new((0..FLOWS).map(|_| AtomicU32::new(0)).collect());
    let n2 = Arc::clone(&n);
    let h = in_ns(ns, move || {
        let s = UdpSocket::bind(("198.19.113.1", 5001)).expect("bind sink");
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let mut b = [0u8; 1500];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(len) = s.recv(&mut b) {
                if let Some(c) = n2.get(usize::from(b[0])).filter(|_| len > 0) {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    (n, h)
}

/// Sends PER_FLOW datagrams on each of FLOWS flows (source port per
/// flow) from A, paced.
fn send(lab: &Lab) {
    let h = in_ns(lab.ns("a"), move || {
        let socks: Vec<UdpSocket> = (0..FLOWS)
            .map(|i| UdpSocket::bind(("198.18.1.2", 40000 + i as u16)).expect("bind"))
            .collect();
        for round in 0..PER_FLOW {
            for (i, s) in socks.iter().enumerate() {
                let mut b = [0u8; 100];
                b[0] = i as u8;
                b[1] = round as u8;
                let _ = s.send_to(&b, ("198.19.113.1", 5001));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    h.join().expect("sender");
}

fn take(c: &Counts) -> Vec<u32> {
    c.iter().map(|x| x.swap(0, Ordering::Relaxed)).collect()
}

/// Sends the flows (until they arrive: the first datagrams may wait for
/// ARP) and returns the per-flow counts at B and C.
fn traffic(lab: &Lab, b: &Counts, c: &Counts) -> (Vec<u32>, Vec<u32>) {
    let mut last = (Vec::new(), Vec::new());
    for _ in 0..5 {
        take(b);
        take(c);
        send(lab);
        std::thread::sleep(Duration::from_millis(500));
        let (nb, nc) = (take(b), take(c));
        let got: u32 = nb.iter().chain(&nc).sum();
        // Nearly all delivered (a loaded 2-core machine may drop a few).
        if got >= FLOWS as u32 * PER_FLOW * 9 / 10 {
            return (nb, nc);
        }
        last = (nb, nc);
    }
    panic!(
        "flows did not get through R: B {:?} C {:?}\n{}",
        last.0,
        last.1,
        lab.log("tesserad.log")
    );
}

#[test]
fn two_bird_paths_are_balanced_by_flow_and_fall_back_to_one() {
    let mut lab = Lab::new();
    for (n, me, peer, via) in [
        ("g", "198.18.9.2", "198.18.9.1", "198.18.2.2"),
        ("h", "198.18.10.2", "198.18.10.1", "198.18.3.2"),
    ] {
        let conf = bird_conf(&lab, n, me, peer, via);
        let sock = lab.bird_sock(n);
        lab.spawn(
            n,
            &["bird", "-f", "-c", &conf, "-s", &sock],
            &format!("bird-{n}.out"),
        );
    }
    let tconf = tesserad_conf(&lab, 2);
    lab.spawn(
        "r",
        &[env!("CARGO_BIN_EXE_tesserad"), "-c", &tconf],
        "tesserad.log",
    );

    // (1) Both paths, both marked multipath.
    lab.wait_for("two multipath paths in show route", 40, |l| {
        l.route() == (2, 2)
    });
    // (2) One kernel route with two next hops.
    lab.wait_for("a kernel multipath route", 20, |l| {
        let k = l.kernel_route();
        k.contains("\"nexthops\"")
            && k.contains("\"gateway\":\"198.18.2.2\"")
            && k.contains("\"gateway\":\"198.18.3.2\"")
    });
    // (3) Flows spread over B and C, each flow on one side only.
    let stop = Arc::new(AtomicBool::new(false));
    let (cb, hb) = sink(lab.ns("b"), Arc::clone(&stop));
    let (cc, hc) = sink(lab.ns("c"), Arc::clone(&stop));
    let _stop_sinks = StopOnDrop(Arc::clone(&stop));
    let (nb, nc) = traffic(&lab, &cb, &cc);
    let at_b = nb.iter().filter(|&&n| n > 0).count();
    let at_c = nc.iter().filter(|&&n| n > 0).count();
    let both: Vec<usize> = (0..FLOWS).filter(|&i| nb[i] > 0 && nc[i] > 0).collect();
    assert!(
        at_b >= FLOWS / 8 && at_c >= FLOWS / 8,
        "flows spread over both next hops: {at_b} at B, {at_c} at C"
    );
    assert!(both.is_empty(), "flows split over two next hops: {both:?}");

    // Reload with multipath off (SIGHUP): both paths stay, the set is
    // gone from show route and the kernel; back on: both again.
    let pid = lab.pid("tesserad.log").expect("tesserad").to_string();
    for (ebgp, want, kernel_multi) in [(1, (2, 0), false), (2, (2, 2), true)] {
        tesserad_conf(&lab, ebgp);
        sh(&["kill", "-HUP", &pid]).expect("SIGHUP");
        lab.wait_for(&format!("show route after reload to {ebgp}"), 20, |l| {
            l.route() == want
        });
        lab.wait_for(&format!("kernel route after reload to {ebgp}"), 20, |l| {
            let k = l.kernel_route();
            k.contains("198.18.2.2") && k.contains("\"nexthops\"") == kernel_multi
        });
    }

    // BIRD 2 goes away: one path, one kernel next hop, every flow to B.
    let sock = lab.bird_sock("h");
    sh(&["birdc", "-s", &sock, "disable", "peer"]).expect("birdc disable");
    lab.wait_for("one path left", 30, |l| l.route() == (1, 0));
    lab.wait_for("a single-next-hop kernel route", 20, |l| {
        let k = l.kernel_route();
        !k.contains("\"nexthops\"") && k.contains("\"gateway\":\"198.18.2.2\"")
    });
    let (nb, nc) = traffic(&lab, &cb, &cc);
    assert_eq!(nc.iter().sum::<u32>(), 0, "nothing goes to C any more");
    assert_eq!(
        nb.iter().filter(|&&n| n > 0).count(),
        FLOWS,
        "every flow at B: {nb:?}"
    );
    stop.store(true, Ordering::Relaxed);
    hb.join().expect("sink b");
    hc.join().expect("sink c");
}
