//! A three-node cluster router whose routes come from BGP and whose
//! liveness comes from BFD (issue 14), in network namespaces:
//!
//! ```text
//! H1 [e0 198.18.1.2] -- [x0 198.18.1.1] A (node 0, RR) [f0 198.18.100.1] --+
//! H2 [e0 198.18.2.2] -- [x0 198.18.2.1] B (node 1, RR) [f0 198.18.100.2] --+-- br0 (fabric)
//!    (lo 198.19.2.1)                    B [g0 198.18.12.1] -- [c0 198.18.12.2] BIRD (AS 65001)
//! H3 [e0 198.18.3.2] -- [x0 198.18.3.1] C (node 2)     [f0 198.18.100.3] --+
//! ```
//!
//! Every node runs tesserad with `[cluster]` (BFD to every peer's fabric
//! address, 100 ms x 3) and iBGP over the fabric addresses: A and B are
//! route reflectors (RFC 4456), C is the client of both; the iBGP
//! neighbours of A and B have `bfd = true` (fast fall-over), C's have no
//! `bfd` (its cluster liveness sessions must survive that). Both ends of
//! each iBGP pair connect: when BFD brings both ends' sessions back at the
//! same instant, the connections collide (RFC 4271 §6.8) and the
//! collision resolution must leave one session up. Each node originates its
//! external subnet (`[[static]]`, next hop = its fabric address, the
//! session's address). BIRD, B's eBGP neighbour, announces 198.19.2.0/24
//! with next hop H2 (on B's external subnet); A learns it over iBGP with
//! that next hop unchanged and resolves it recursively, through B's
//! subnet, to B's fabric address: the ingress does the whole lookup.
//!
//! The fabric runs `mode = "vlb"`, so traffic between A and C also
//! crosses B as an intermediate. The test: H1 pings 198.19.2.1 (behind B)
//! across the fabric; B is killed (SIGKILL) while H1 pings H3 every 10 ms;
//! A (and C) must mark node 1 down and A withdraw B's routes within BFD's
//! detection time plus scheduling slack, and the pings A -> C lost must
//! fit in that window; H1 <-> H3 keep working; B restarted brings the
//! route and the pings back; B frozen (SIGSTOP, TCP stays open) is
//! detected by BFD alone, within the same bound, and rejoins when thawed. Needs root,
//! `ip`, `ping`, `bird`, `birdc`; every wait is bounded and the
//! namespaces are removed, also on failure.

use e2e as common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::bird::Bird;
use common::cluster;
use common::peer::Session;

const BFD_MS: u64 = 100;
const BFD_MULT: u64 = 3;
/// Scheduling slack on a shared two-core machine, on top of BFD's
/// detection time, for the withdrawal to reach A's RIB.
const SLACK_MS: u64 = 1200;
const NODES: usize = 3;

fn exec(ns: &str, cmd: &str) -> Result<String, String> {
    cluster::exec(ns, &cmd.split(' ').collect::<Vec<_>>())
}

fn must(ns: &str, cmd: &str) {
    cluster::must(ns, &cmd.split(' ').collect::<Vec<_>>());
}

/// One request on a node's control socket; the response line.
fn request(sock: &Path, json: &str) -> Result<String, String> {
    let mut s = UnixStream::connect(sock).map_err(|e| format!("{}: {e}", sock.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    writeln!(s, "{{\"version\":1,\"request\":{json}}}").map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    Ok(line)
}

/// Whether the node has a path for `prefix`.
fn has_route(sock: &Path, prefix: &str) -> Result<bool, String> {
    let r = request(
        sock,
        &format!(r#"{{"command":"show_route","prefix":"{prefix}","all":true}}"#),
    )?;
    if r.contains("\"error\"") {
        return Err(r);
    }
    Ok(r.contains(prefix))
}

/// `ping -c COUNT -i 0.01 DST` from namespace `ns` on a thread (bounded
/// by `timeout`); its output.
fn ping_in_background(ns: &str, dst: &str, count: u32) -> std::thread::JoinHandle<String> {
    let (ns, dst) = (ns.to_string(), dst.to_string());
    std::thread::spawn(move || {
        let c = count.to_string();
        let argv = [
            "20", "ip", "netns", "exec", &ns, "ping", "-n", "-q", "-c", &c, "-i", "0.01", "-W",
            "1", &dst,
        ];
        match std::process::Command::new("timeout").args(argv).output() {
            Ok(o) => {
                let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
                s.push_str(&String::from_utf8_lossy(&o.stderr));
                s
            }
            Err(e) => format!("ping: {e}"),
        }
    })
}

/// (transmitted, received) from ping's summary line.
fn ping_counts(out: &str) -> Option<(u64, u64)> {
    let l = out.lines().find(|l| l.contains("packets transmitted"))?;
    let mut w = l.split(", ");
    let sent = w.next()?.split(' ').next()?.parse().ok()?;
    let got = w.next()?.split(' ').next()?.parse().ok()?;
    Some((sent, got))
}

/// The lab's cluster (nodes A, B, C are its nodes 0, 1, 2) and BIRD's
/// namespace beside B.
struct Cluster {
    c: cluster::Cluster,
    bird: String,
}

impl Cluster {
    fn node_ns(&self, k: usize) -> &str {
        self.c.node(k - 1)
    }
    fn host_ns(&self, k: usize) -> &str {
        self.c.host(k - 1)
    }
    fn bird_ns(&self) -> &str {
        &self.bird
    }
    fn sock(&self, k: usize) -> PathBuf {
        self.c.lab.path(&format!("n{k}.sock"))
    }

    fn new() -> Cluster {
        let c = cluster::Cluster::new("cluster_bgp", NODES);
        let bird = c.lab.netns("g");
        let c = Cluster { c, bird };
        // The prefix BIRD announces lives on H2's loopback.
        must(c.host_ns(2), "ip addr add 198.19.2.1/32 dev lo");
        let (b, g) = (c.node_ns(2), c.bird_ns());
        cluster::veth(b, "g0", g, "c0");
        must(b, "ip addr add 198.18.12.1/24 dev g0");
        must(g, "ip addr add 198.18.12.2/24 dev c0");
        must(b, "ip link set g0 up");
        must(g, "ip link set c0 up");
        c
    }

    /// Node `k`'s tesserad.toml (node id k - 1; nodes 1 and 2 reflect).
    fn conf(&self, k: usize) -> PathBuf {
        let rr = |i: usize| i <= 2;
        let mut t = format!(
            "[router]\nid = \"198.18.100.{k}\"\nasn = 65000\npipeline = \"sequential\"\n\
             default_import = \"accept\"\ndefault_export = \"accept\"\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [dataplane]\nio = \"af_packet\"\n\n\
             [[dataplane.interface]]\nname = \"x0\"\naddresses = [\"198.18.{k}.1/24\"]\n\n\
             [cluster]\nnode_id = {}\nfabric_address = \"198.18.100.{k}\"\nmode = \"vlb\"\n\
             bfd_min_tx = {BFD_MS}\nbfd_multiplier = {BFD_MULT}\n\n\
             [[static]]\nprefix = \"198.18.{k}.0/24\"\n\n",
            self.sock(k).display(),
            k - 1
        );
        for j in (1..=NODES).filter(|&j| j != k) {
            t += &format!(
                "[[cluster.peer]]\nnode_id = {}\nfabric_address = \"198.18.100.{j}\"\n\
                 ports = [\"198.18.{j}.0/24\"]\n\n",
                j - 1
            );
            if rr(k) || rr(j) {
                t += &format!(
                    "[[neighbor]]\nname = \"node{j}\"\naddress = \"198.18.100.{j}\"\n\
                     local_address = \"198.18.100.{k}\"\nremote_as = 65000\nhold_time = 9\n\
                     connect_retry = 1\ngraceful_restart = false\nroute_reflector_client = {}\n{}\n",
                    rr(k) && !rr(j),
                    // C's own neighbours have no `bfd`: its liveness
                    // sessions (the cluster's, at the same addresses)
                    // must stay without a BGP owner.
                    if k == 3 {
                        String::new()
                    } else {
                        format!(
                            "bfd = true\nbfd_min_tx = {BFD_MS}\nbfd_min_rx = {BFD_MS}\n\
                             bfd_multiplier = {BFD_MULT}\n"
                        )
                    }
                );
            }
        }
        if k == 2 {
            t += "[[neighbor]]\nname = \"bird\"\naddress = \"198.18.12.2\"\n\
                  local_address = \"198.18.12.1\"\nremote_as = 65001\nhold_time = 9\n\
                  connect_retry = 1\n\n";
        }
        self.c.lab.write(&format!("n{k}.toml"), &t)
    }

    fn start_node(&self, k: usize, name: &str) -> u32 {
        let c = self.conf(k).display().to_string();
        let bin = env!("CARGO_BIN_EXE_tesserad");
        let pid = self.c.lab.spawn(
            name,
            self.node_ns(k),
            &[bin, "-c", &c],
            &[("RUST_LOG", "info")],
        );
        let sock = self.sock(k);
        self.c
            .lab
            .wait(15, &format!("{name}'s control socket"), || {
                Ok(request(&sock, r#"{"command":"show_status"}"#).ok())
            });
        pid
    }

    /// Waits until A's log shows node 1 marked `state` `times` times;
    /// the time it took from `t0`.
    fn wait_live_line(&self, state: &str, times: usize, t0: Instant) -> Duration {
        self.wait_live_line_at(1, state, times, t0)
    }

    /// [`Self::wait_live_line`] in node `k`'s log.
    fn wait_live_line_at(&self, k: usize, state: &str, times: usize, t0: Instant) -> Duration {
        let log = self.c.lab.path(&format!("n{k}.out"));
        let line = format!("cluster: node 1 (198.18.100.2) {state}");
        self.c
            .lab
            .wait(10, &format!("node {k} to log {line:?}"), || {
                let t = std::fs::read_to_string(&log).unwrap_or_default();
                Ok((t.matches(&line).count() >= times).then(|| t0.elapsed()))
            })
    }

    /// Polls A until neither of B's prefixes is there; the time from `t0`.
    fn wait_b_gone(&self, t0: Instant) -> Duration {
        let sock = self.sock(1);
        loop {
            if !has_route(&sock, "198.19.2.0/24").unwrap_or(true)
                && !has_route(&sock, "198.18.2.0/24").unwrap_or(true)
            {
                return t0.elapsed();
            }
            if t0.elapsed() > Duration::from_secs(10) {
                self.c.lab.fail("A kept B's routes for 10 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn start_bird(&self) -> Bird {
        let dir = self.c.lab.path("bird");
        let conf = format!(
            "log \"{}\" all;\nrouter id 198.18.12.2;\nprotocol device {{}}\n\
             protocol static st {{ ipv4; route 198.19.2.0/24 via 198.18.12.1; }}\n\
             protocol bgp peer {{\n  local 198.18.12.2 as 65001;\n  neighbor 198.18.12.1 as 65000;\n\
               hold time 9;\n  connect retry time 1;\n\
               ipv4 {{ import none; next hop keep;\n\
                 export filter {{ if proto = \"st\" then {{ bgp_next_hop = 198.18.2.2; accept; }} reject; }};\n\
               }};\n}}\n",
            dir.join("bird.log").display()
        );
        let s = Session {
            ns: self.bird_ns().to_string(),
            local_as: 65001,
            peer_as: 65000,
            local_v4: "198.18.12.2".into(),
            local_v6: "2001:db8:12::2".into(),
            peer_v4: "198.18.12.1".into(),
            peer_v6: "2001:db8:12::1".into(),
            hold: 9,
            id: 12,
        };
        Bird::start_conf(&self.c.lab, "bird", &s, &conf, &[])
    }

    /// Pings `dst` from host `k` until `count` replies in a row come back.
    fn ping(&self, k: usize, dst: &str, count: usize, secs: u64) {
        self.c.ping(k - 1, dst, count, secs);
    }

    fn wait_route(&self, k: usize, prefix: &str, present: bool, secs: u64) {
        let sock = self.sock(k);
        let what = format!(
            "node {k} {} {prefix}",
            if present { "to learn" } else { "to withdraw" }
        );
        self.c.lab.wait(secs, &what, || {
            Ok((has_route(&sock, prefix)? == present).then_some(()))
        });
    }
}

#[test]
fn routes_cross_the_cluster_by_ibgp_and_a_dead_node_is_withdrawn_by_bfd() {
    assert!(
        common::ready(&["ip", "ping", "bird", "birdc"]),
        "the cluster test needs root, ip, ping, bird and birdc"
    );
    let c = Cluster::new();
    for k in 1..=NODES {
        c.start_node(k, &format!("n{k}"));
    }
    let _bird = c.start_bird();

    // BIRD's route reaches A through B (iBGP) and traffic follows it.
    c.wait_route(1, "198.19.2.0/24", true, 30);
    c.wait_route(3, "198.19.2.0/24", true, 30);
    c.ping(1, "198.19.2.1", 3, 20);
    c.ping(1, "198.18.3.2", 3, 20);
    c.ping(3, "198.19.2.1", 3, 20);
    c.wait_live_line("up", 1, Instant::now());

    // Kill B: A withdraws its routes and takes it out of the live set in
    // time. (The kernel closes B's TCP sessions as the process dies, so
    // BGP may see it first; BFD must follow within its detection time.)
    let bound = Duration::from_millis(BFD_MS * BFD_MULT + SLACK_MS);
    // H1 pings H3 every 10 ms across the kill: under VLB a third of the
    // flow windows go through B, so A <-> C loses packets, but only until
    // BFD takes B out of A's and C's live sets.
    let pinger = ping_in_background(c.host_ns(1), "198.18.3.2", 300);
    std::thread::sleep(Duration::from_millis(500));
    // From B's death, not from before `stop`: it first runs `kill -CONT`
    // as a command, which can take a while on a loaded machine, then
    // kills B and reaps it, so B is dead when it returns.
    c.c.lab.stop("n2");
    let t0 = Instant::now();
    let gone = c.wait_b_gone(t0);
    let down = c.wait_live_line("down", 1, t0);
    // C, whose neighbours have no `bfd`, still follows B by BFD.
    let c_down = c.wait_live_line_at(3, "down", 1, t0);
    assert!(c_down <= bound, "C marked node 1 down after {c_down:?}");
    eprintln!(
        "kill: B's routes withdrawn at A after {} ms, node 1 down after {} ms",
        gone.as_millis(),
        down.as_millis()
    );
    assert!(
        gone <= bound && down <= bound,
        "after the kill: routes gone {gone:?}, node down {down:?}, bound {bound:?}\n{}",
        c.c.lab.context()
    );
    let out = pinger.join().expect("ping thread");
    let (sent, got) = ping_counts(&out).unwrap_or_else(|| panic!("ping output: {out}"));
    let lost_ms = (sent - got) * 10;
    eprintln!(
        "kill: A -> C lost {} of {sent} pings (~{lost_ms} ms)",
        sent - got
    );
    assert!(
        Duration::from_millis(lost_ms) <= bound,
        "A -> C lost {} of {sent} pings at 10 ms, beyond the detection window {bound:?}\n{out}",
        sent - got
    );
    c.wait_route(3, "198.19.2.0/24", false, 5);
    // A and C still forward to each other.
    c.ping(1, "198.18.3.2", 5, 10);
    c.ping(3, "198.18.1.2", 5, 10);
    assert!(
        exec(c.host_ns(1), "ping -c 1 -W 1 198.19.2.1").is_err(),
        "H1 still reaches 198.19.2.1 with B dead"
    );

    // B comes back: its BFD, iBGP and routes return.
    let pid = c.start_node(2, "n2-again");
    c.wait_route(1, "198.19.2.0/24", true, 30);
    c.ping(1, "198.19.2.1", 3, 20);
    c.wait_live_line("up", 2, Instant::now());

    // Freeze B: its kernel keeps the TCP sessions open (hold time 9 s),
    // so only BFD can tell, and fast fall-over must withdraw in time.
    // From when B is stopped: `signal` runs `kill` as a command (slow on
    // a loaded machine), and B is stopped when it returns.
    c.c.lab.signal(pid, "STOP");
    let t0 = Instant::now();
    let gone = c.wait_b_gone(t0);
    let down = c.wait_live_line("down", 2, t0);
    c.c.lab.signal(pid, "CONT");
    eprintln!(
        "freeze: B's routes withdrawn at A after {} ms, node 1 down after {} ms",
        gone.as_millis(),
        down.as_millis()
    );
    assert!(
        gone <= bound && down <= bound,
        "after the freeze: routes gone {gone:?}, node down {down:?}, bound {bound:?}\n{}",
        c.c.lab.context()
    );
    // Thawed, B comes back by BFD and BGP.
    c.wait_route(1, "198.19.2.0/24", true, 30);
    c.wait_live_line("up", 3, Instant::now());
    c.ping(1, "198.19.2.1", 3, 20);
}
