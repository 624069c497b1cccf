//! tesserad forwarding with its own dataplane (`[dataplane]`, crate `fib`),
//! on AF_XDP and on AF_PACKET, with routes from a real BIRD peer:
//!
//! ```text
//! A [a0 198.18.1.2] -- [r0 198.18.1.1] R [r1 198.18.2.1] -- [b0 198.18.2.2] B   (lo 198.19.113.1)
//!                                        [r2 198.18.3.1] -- [c0 198.18.3.2] B2  (lo 198.19.113.1)
//!                                        [rc 198.18.9.1] -- [gc 198.18.9.2] BIRD (AS 65001)
//! ```
//!
//! R's dataplane ports have no kernel addresses and kernel forwarding is
//! off, so every packet that crosses R was moved by Tessera; the BGP
//! session runs on the separate `rc` link. BIRD announces 198.19.113.0/24
//! with next hop 198.18.2.2 (B); ping, UDP and TCP cross R; then BIRD is
//! reconfigured to announce it via 198.18.3.2 (B2) and the UDP stream moves
//! to B2 while it runs. The dataplane's counters (printed by tesserad on
//! SIGTERM) must account for the traffic. The `fib_feed_*` variants feed
//! the `fib` dataplane in-process instead of BIRD + tesserad, to tell a
//! forwarding fault from a routing one.
//!
//! Every host and R's ports also have IPv6 (2001:db8:N::/64, R is ::1).
//! With every engine (all run the element graph; the default `Auto` and
//! `Fast` with IPv4 forwarding fused into `elements::Ip4Forward`, MAC
//! rewrite included; `Graph` with the unfused chain) the test also
//! proves: ping6 across R (to B's connected address; in the
//! `fib_feed_*` variants also to 2001:db8:ff::1 on B's loopback through a
//! fed IPv6 route), ping and ping6 to R's own addresses (ICMP echo), and
//! `ping -t 1` / `ping -6 -t 1` through R answered by R's ICMP time
//! exceeded (RFC 1812 §5.3.1, RFC 4443 §3.3). Needs root, `ip`, `ethtool`,
//! `ping`, `bird`, `birdc`; every step is bounded (a pass takes a few
//! seconds, a failure under a minute) and everything is torn down.

use e2e as common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::sh;
use common::netlab::{bird_third_party_conf, counter, in_ns, NetLab, StopOnDrop};

type Lab = NetLab;

/// A, R, B, B2 (namespace c) and BIRD's G, wired as in the module docs.
fn new_lab(mode: &str) -> Lab {
    let lab = NetLab::new(
        &format!("dp{}", &mode[..2]),
        &["a", "r", "b", "c", "g"],
        "dataplane tests",
        &["ip", "ethtool", "bird", "birdc"],
    );
    lab.link("a", "a0", "r", "r0");
    lab.link("r", "r1", "b", "b0");
    lab.link("r", "r2", "c", "c0");
    lab.link("r", "rc", "g", "gc");
    for (n, cmd) in [
        ("a", "ip addr add 198.18.1.2/24 dev a0"),
        ("b", "ip addr add 198.18.2.2/24 dev b0"),
        ("c", "ip addr add 198.18.3.2/24 dev c0"),
        ("b", "ip addr add 198.19.113.1/32 dev lo"),
        ("c", "ip addr add 198.19.113.1/32 dev lo"),
        // IPv6 without duplicate address detection (no waiting).
        ("a", "ip -6 addr add 2001:db8:1::2/64 dev a0 nodad"),
        ("b", "ip -6 addr add 2001:db8:2::2/64 dev b0 nodad"),
        ("c", "ip -6 addr add 2001:db8:3::2/64 dev c0 nodad"),
        ("b", "ip -6 addr add 2001:db8:ff::1/128 dev lo"),
        ("c", "ip -6 addr add 2001:db8:ff::1/128 dev lo"),
        ("r", "ip addr add 198.18.9.1/24 dev rc"),
        ("g", "ip addr add 198.18.9.2/24 dev gc"),
        // BIRD's static gateways must look reachable to BIRD itself.
        // (A veth pair: this kernel has no dummy driver.)
        ("g", "ip link add gw0 type veth peer name gw1"),
        ("g", "ip link set gw1 up"),
        ("g", "ip addr add 198.18.2.100/24 dev gw0"),
        ("g", "ip addr add 198.18.3.100/24 dev gw0"),
        ("g", "ip link set gw0 up"),
        ("r", "sysctl -qw net.ipv4.ip_forward=0"),
    ] {
        lab.must_cmd(n, cmd);
    }
    for (n, i) in [
        ("a", "a0"),
        ("r", "r0"),
        ("r", "r1"),
        ("r", "r2"),
        ("r", "rc"),
        ("b", "b0"),
        ("c", "c0"),
        ("g", "gc"),
    ] {
        lab.up(n, i);
    }
    for (n, gw) in [
        ("a", "198.18.1.1"),
        ("b", "198.18.2.1"),
        ("c", "198.18.3.1"),
    ] {
        lab.must(n, &["ip", "route", "add", "default", "via", gw]);
    }
    for (n, gw) in [
        ("a", "2001:db8:1::1"),
        ("b", "2001:db8:2::1"),
        ("c", "2001:db8:3::1"),
    ] {
        lab.must(n, &["ip", "-6", "route", "add", "default", "via", gw]);
    }
    lab
}

/// BIRD's configuration announcing 198.19.113.0/24 with next hop `via`
/// (see [`bird_third_party_conf`]).
fn bird_conf(lab: &Lab, via: &str) -> String {
    bird_third_party_conf(
        &lab.path("bird.conf"),
        &lab.path("bird.log"),
        "198.18.9.2",
        "198.18.9.1",
        via,
    )
}

fn tesserad_conf(lab: &Lab, io: &str, engine: fib::dataplane::Engine) -> String {
    // The default (`Auto`: the fused path) is `engine` not set.
    let engine = match engine {
        fib::dataplane::Engine::Auto => String::new(),
        e => format!("engine = \"{}\"\n", e.name()),
    };
    let text = format!(
        "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\nlisten = [\"198.18.9.1:179\"]\n\
         default_import = \"accept\"\ndefault_export = \"accept\"\n\n\
         [control]\nsocket = \"{}\"\n\n\
         [[neighbor]]\naddress = \"198.18.9.2\"\nremote_as = 65001\nhold_time = 9\nconnect_retry = 1\n\n\
         [dataplane]\nio = \"{io}\"\nkp = 32\nkn = 32\n{engine}frames = 8192\n\n\
         [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\", \"2001:db8:1::1/64\"]\n\n\
         [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\", \"2001:db8:2::1/64\"]\n\n\
         [[dataplane.interface]]\nname = \"r2\"\naddresses = [\"198.18.3.1/24\", \"2001:db8:3::1/64\"]\n",
        lab.path("tesserad.sock").display()
    );
    lab.write("tesserad.toml", &text)
}

/// Datagrams received per tag (first byte & 3), readable while running.
type Counts = Arc<[AtomicU32; 4]>;

/// A receive buffer of 16 MiB (SO_RCVBUFFORCE: the tests run as root), so
/// a receiving thread descheduled for a while on the shared 2-core machine
/// does not drop datagrams the forwarder delivered: these tests are about
/// forwarding, not about the receiver keeping up.
fn big_rcvbuf(s: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let v: libc::c_int = 16 << 20;
    // SAFETY: setsockopt reads one c_int from a live local; the fd is open.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&v as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVBUFFORCE: {}", std::io::Error::last_os_error());
}

/// A UDP sink on 198.19.113.1:5001 in a namespace until `stop`.
fn sink(ns: String, stop: Arc<AtomicBool>) -> (Counts, std::thread::JoinHandle<()>) {
    let n: Counts = Arc::new(Default::default());
    let n2 = Arc::clone(&n);
    let h = in_ns(ns, move || {
        let s = UdpSocket::bind(("198.19.113.1", 5001)).expect("bind sink");
        big_rcvbuf(&s);
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let mut b = [0u8; 1500];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(len) = s.recv(&mut b) {
                if len > 0 {
                    n2[usize::from(b[0] & 3)].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    (n, h)
}

fn get(c: &Counts) -> [u32; 4] {
    [0, 1, 2, 3].map(|i| c[i].load(Ordering::Relaxed))
}

/// Sends `count` datagrams tagged `tag` from A, paced.
fn send(lab: &Lab, tag: u8, count: u32) {
    let h = in_ns(lab.ns("a"), move || {
        let s = UdpSocket::bind(("198.18.1.2", 0)).expect("bind");
        let mut b = [0u8; 200];
        b[0] = tag;
        for i in 0..count {
            let _ = s.send_to(&b, ("198.19.113.1", 5001));
            if i % 10 == 9 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    });
    h.join().expect("sender");
}

/// Waits for `f` (bounded); on timeout stops tesserad (it prints its
/// dataplane counters) and fails with the dataplane's, tesserad's and
/// BIRD's view.
fn wait_for(lab: &Lab, what: &str, secs: u64, diag: &dyn Fn() -> String, f: impl FnMut() -> bool) {
    lab.wait_for(
        what,
        secs,
        || {
            if lab.pid("tesserad.log").is_some() {
                lab.signal("tesserad.log", "TERM");
                std::thread::sleep(Duration::from_secs(2));
            }
            let sock = lab.path("bird.ctl").display().to_string();
            let routes =
                sh(&["birdc", "-s", &sock, "show", "route", "all"]).unwrap_or_else(|e| e);
            let proto = sh(&["birdc", "-s", &sock, "show", "protocols", "all", "peer"])
                .unwrap_or_else(|e| e);
            format!(
                "--- dataplane\n{}\n--- tesserad.log\n{}\n--- bird.log\n{}\n--- birdc\n{routes}\n{proto}",
                diag(),
                lab.log("tesserad.log"),
                lab.log("bird.log")
            )
        },
        f,
    );
}

/// Where the route to 198.19.113.0/24 comes from.
enum Source {
    /// BIRD over BGP to a tesserad with `[dataplane]`.
    Bird,
    /// The test feeds the `fib` dataplane directly (in-process), as
    /// tesserad's best-route hook would.
    Direct,
}

fn change(via: &str) -> Vec<fib::Change> {
    vec![fib::Change {
        prefix: "198.19.113.0/24".parse().expect("prefix"),
        next_hop: Some(via.parse().expect("ip")),
        ecmp: Vec::new(),
    }]
}

/// Runs `ping -n ARGS` in A; its whole output (see [`NetLab::ping`]).
fn ping(lab: &Lab, args: &str) -> String {
    lab.ping("a", args)
}

/// The element-graph engine's extra proofs: IPv6 forwarding, ICMP echo
/// for R's own addresses, ICMP time exceeded for IPv4 and IPv6.
fn graph_proofs(lab: &Lab, fed_v6: bool) {
    let mut v6 = vec!["2001:db8:2::2"];
    if fed_v6 {
        v6.push("2001:db8:ff::1");
    }
    for dst in v6 {
        // Warm-up: the first echo may wait for neighbour discovery.
        let _ = ping(lab, &format!("-6 -c 2 -i 0.2 -W 1 {dst}"));
        let out = ping(lab, &format!("-6 -c 5 -i 0.2 -W 2 {dst}"));
        assert!(
            out.contains("5 received"),
            "ping6 {dst} through Tessera: {out}\n{}",
            lab.log("tesserad.log")
        );
    }
    for dst in ["198.18.1.1", "2001:db8:1::1", "198.18.2.1"] {
        let out = ping(lab, &format!("-c 3 -i 0.2 -W 2 {dst}"));
        assert!(out.contains("3 received"), "R answers ping {dst}: {out}");
    }
    let out = ping(lab, "-c 2 -i 0.2 -W 2 -t 1 198.18.2.2");
    assert!(
        out.contains("From 198.18.1.1") && out.contains("Time to live exceeded"),
        "ICMP time exceeded from R: {out}"
    );
    let out = ping(lab, "-6 -c 2 -i 0.2 -W 2 -t 1 2001:db8:2::2");
    assert!(
        out.contains("From 2001:db8:1::1") && out.contains("Time exceeded"),
        "ICMPv6 time exceeded from R: {out}"
    );
    // With hop limit 2 the packet crosses R (R decrements it to 1).
    let out = ping(lab, "-c 2 -i 0.2 -W 2 -t 2 198.18.2.2");
    assert!(out.contains("2 received"), "TTL 2 crosses R: {out}");
}

fn scenario(io_mode: &str, src: Source, engine: fib::dataplane::Engine, cores: usize) {
    let mut lab = new_lab(io_mode);
    let sock = lab.path("bird.ctl").display().to_string();
    let mut direct = None;
    match src {
        Source::Bird => {
            let bconf = bird_conf(&lab, "198.18.2.2");
            lab.spawn("g", &["bird", "-f", "-c", &bconf, "-s", &sock], "bird.out");
            let tconf = tesserad_conf(&lab, io_mode, engine);
            lab.spawn(
                "r",
                &[env!("CARGO_BIN_EXE_tesserad"), "-c", &tconf],
                "tesserad.log",
            );
        }
        Source::Direct => {
            let (tx, rx) = std::sync::mpsc::sync_channel(16);
            let mode = match io_mode {
                "af_xdp" => fib::dataplane::IoMode::AfXdp,
                _ => fib::dataplane::IoMode::AfPacket,
            };
            let cfg = fib::dataplane::DataplaneConfig {
                ports: [
                    ("r0", "198.18.1.1", "2001:db8:1::1"),
                    ("r1", "198.18.2.1", "2001:db8:2::1"),
                    ("r2", "198.18.3.1", "2001:db8:3::1"),
                ]
                .iter()
                .map(|(n, a, a6)| fib::dataplane::PortConfig {
                    name: n.to_string(),
                    addrs: vec![(a.parse().expect("ip"), 24), (a6.parse().expect("ip"), 64)],
                    queues: fib::dataplane::Queues::PerCore,
                })
                .collect(),
                mode,
                cores,
                loop_cfg: fib::dataplane::LoopConfig {
                    engine,
                    ..fib::dataplane::LoopConfig::default()
                },
                kernel: None,
                fabric: None,
                graph: None,
                ipsec: None,
                balance: Vec::new(),
                vrs: Vec::new(),
            };
            if mode == fib::dataplane::IoMode::AfXdp && cores == 1 {
                // A veth has one RX queue: AF_XDP on two cores must be
                // refused, which proves the queue count is read in R's
                // namespace (ethtool ioctl), not the test's (/sys).
                let mut two = cfg.clone();
                two.cores = 2;
                let (_t, r2) = std::sync::mpsc::sync_channel(1);
                let e = in_ns(lab.ns("r"), move || fib::dataplane::start(&two, r2).err())
                    .join()
                    .expect("start thread");
                assert_eq!(e, Some(fib::dataplane::DpError::TooFewQueues(0)));
            }
            let dp = in_ns(lab.ns("r"), move || fib::dataplane::start(&cfg, rx))
                .join()
                .expect("start thread")
                .expect("dataplane starts");
            let mut first = change("198.18.2.2");
            first.push(fib::Change {
                prefix: "2001:db8:ff::/64".parse().expect("prefix"),
                next_hop: Some("2001:db8:2::2".parse().expect("ip")),
                ecmp: Vec::new(),
            });
            tx.send(first).expect("feed");
            direct = Some((dp, tx));
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (nb, sink_b) = sink(lab.ns("b"), Arc::clone(&stop));
    let (nc, sink_c) = sink(lab.ns("c"), Arc::clone(&stop));
    let _stop_sinks = StopOnDrop(Arc::clone(&stop));

    // The route arrives from BIRD and traffic to 198.19.113.1 reaches B.
    // (The first datagrams may be lost while ARP resolves.)
    let diag = || match &direct {
        Some((dp, _)) => format!("{:?}", dp.fib_report()),
        None => "(counters in tesserad.log)".to_string(),
    };
    wait_for(
        &lab,
        "the route in the dataplane (tag 0 probes reach B)",
        20,
        &diag,
        || {
            send(&lab, 0, 5);
            let t = lab.log("tesserad.log");
            assert!(!t.contains("tesserad: "), "tesserad failed: {t}");
            get(&nb)[0] > 0
        },
    );

    // Ping through R (warm-up first: the first echo may wait for ARP).
    let _ = ping(&lab, "-c 2 -i 0.2 -W 1 198.18.2.2");
    let out = ping(&lab, "-c 5 -i 0.2 -W 2 198.18.2.2");
    assert!(
        out.contains("5 received"),
        "ping through Tessera: {out}\n{}",
        lab.log("tesserad.log")
    );

    // Both engines are the element graph (Fast: with Ip4Forward), so both
    // get the IPv6 and ICMP proofs.
    graph_proofs(&lab, direct.is_some());

    // UDP to the BGP-learned prefix: all to B.
    send(&lab, 1, 500);
    // TCP A -> B, 1 MiB, checked end to end.
    let tcp_n = tcp(&lab);
    assert_eq!(tcp_n, 1 << 20, "TCP bytes through Tessera");

    // The prefix now goes via B2; the stream moves, live.
    if let Some((_, tx)) = &direct {
        tx.send(change("198.18.3.2")).expect("feed");
    } else {
        let bconf = bird_conf(&lab, "198.18.3.2");
        sh(&["birdc", "-s", &sock, "configure", &format!("\"{bconf}\"")]).expect("birdc configure");
    }
    wait_for(&lab, "the route to move to B2", 10, &diag, || {
        send(&lab, 2, 5);
        get(&nc)[2] > 0
    });
    std::thread::sleep(Duration::from_millis(300));
    send(&lab, 3, 500);
    // Until all 500 arrived (bounded; the counts are asserted below), then
    // 300 ms for a stray to B: a fixed 500 ms was a guess at how far
    // behind a forwarder on a loaded machine may be.
    let end = Instant::now() + Duration::from_secs(20);
    while get(&nb)[3] + get(&nc)[3] < 500 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    sink_b.join().expect("sink B");
    sink_c.join().expect("sink C");
    let (nb, nc) = (get(&nb), get(&nc));

    let direct_run = direct.is_some();
    let line =
        if let Some((dp, _)) = direct {
            let r = dp.stop();
            let t = r.total;
            format!(
            "dataplane: rx={} forwarded={} no_route={} unresolved={} ttl_expired={} bad_header={} \
             arp_replies={} arp_requests={} icmp_errors={} ipv6={} fib_changes={} publishes={} \
             learned={} errors={:?}",
            t.rx, t.forwarded, t.no_route, t.unresolved, t.ttl_expired, t.bad_header,
            t.arp_replies, t.arp_requests, t.icmp_errors, t.ipv6, r.fib.stats.changes,
            r.fib.publishes, r.fib.learned, r.errors
        )
        } else {
            // tesserad prints its dataplane counters on SIGTERM.
            lab.signal("tesserad.log", "TERM");
            lab.wait_log("tesserad.log", "dataplane: rx=", 10);
            let log = lab.log("tesserad.log");
            // The config's engine and frame count reached the dataplane.
            let want = format!("dataplane: started, engine {}, frames 8192,", engine.name());
            assert!(log.contains(&want), "no `{want}` line:\n{log}");
            log.lines()
                .find(|l| l.starts_with("dataplane: rx="))
                .unwrap_or_else(|| panic!("no counters line from tesserad:\n{log}"))
                .to_string()
        };
    eprintln!("{io_mode}: B {nb:?}, B2 {nc:?}\n{line}");
    assert_eq!(
        nb[1], 500,
        "all UDP to B before the move: B {nb:?} B2 {nc:?}"
    );
    assert_eq!(nc[1], 0, "none to B2 before the move");
    assert_eq!(
        nc[3], 500,
        "all UDP to B2 after the move: B {nb:?} B2 {nc:?}"
    );
    assert_eq!(nb[3], 0, "none to B after the move");
    let fwd = counter(&line, "forwarded");
    let min = 7 * 2 + 1000 + (1u64 << 20) / 1500;
    assert!(fwd >= min, "forwarded {fwd} < {min}: {line}");
    assert!(counter(&line, "fib_changes") >= 2, "{line}");
    assert!(
        counter(&line, "arp_replies") >= 1,
        "R answered ARP for its addresses: {line}"
    );
    assert_eq!(
        counter(&line, "ttl_expired") + counter(&line, "bad_header"),
        0,
        "{line}"
    );
    assert!(line.contains("errors=[]"), "{line}");
    if direct_run {
        // Two IPv4 and two IPv6 time-exceeded errors (ping -c 2 each).
        assert!(counter(&line, "icmp_errors") >= 4, "{line}");
        assert!(counter(&line, "ipv6") >= 14, "{line}");
    }
}

fn tcp(lab: &Lab) -> usize {
    const N: usize = 1 << 20;
    let (tx, rx) = std::sync::mpsc::channel();
    let server = in_ns(lab.ns("b"), move || {
        let l = TcpListener::bind(("198.18.2.2", 5002)).expect("bind tcp");
        tx.send(()).expect("ready");
        l.set_nonblocking(true).expect("nb");
        let end = Instant::now() + Duration::from_secs(8);
        let mut c = loop {
            match l.accept() {
                Ok((c, _)) => break c,
                Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => panic!("accept: {e}"),
            }
        };
        c.set_nonblocking(false).expect("blocking");
        c.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut n = 0;
        let mut b = vec![0u8; 65536];
        let mut bad = 0usize;
        loop {
            match c.read(&mut b) {
                Ok(0) => break,
                Ok(k) => {
                    bad += b[..k]
                        .iter()
                        .enumerate()
                        .filter(|(i, x)| **x != ((n + i) % 251) as u8)
                        .count();
                    n += k;
                }
                Err(e) => panic!("tcp read after {n}: {e}"),
            }
        }
        assert_eq!(bad, 0, "TCP payload intact");
        n
    });
    rx.recv_timeout(Duration::from_secs(10)).expect("tcp ready");
    let client = in_ns(lab.ns("a"), move || {
        let mut c = TcpStream::connect_timeout(
            &"198.18.2.2:5002".parse().expect("addr"),
            Duration::from_secs(5),
        )
        .expect("connect through Tessera");
        c.set_write_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let data: Vec<u8> = (0..N).map(|i| (i % 251) as u8).collect();
        c.write_all(&data).expect("write");
        c.shutdown(std::net::Shutdown::Write).expect("shutdown");
    });
    client.join().expect("tcp client");
    server.join().expect("tcp server")
}

use fib::dataplane::Engine;

#[test]
fn bird_route_moves_traffic_af_xdp() {
    // tesserad runs the default: the built-in graph with the fused IPv4
    // path (`engine` not set).
    scenario("af_xdp", Source::Bird, Engine::Auto, 1);
}

#[test]
fn bird_route_moves_traffic_af_packet() {
    scenario("af_packet", Source::Bird, Engine::Auto, 1);
}

/// `engine = "graph"` (the unfused chain) through tesserad.
#[test]
fn bird_graph_engine_af_packet() {
    scenario("af_packet", Source::Bird, Engine::Graph, 1);
}

/// `[dataplane] engine = "fast"` through tesserad: the config reaches
/// the dataplane (its start line names the engine) and BIRD's route moves
/// the traffic as with the graph.
#[test]
fn bird_fast_engine_af_packet() {
    scenario("af_packet", Source::Bird, Engine::Fast, 1);
}

#[test]
fn fib_feed_moves_traffic_af_xdp() {
    scenario("af_xdp", Source::Direct, Engine::Graph, 1);
}

#[test]
fn fib_feed_moves_traffic_af_packet() {
    scenario("af_packet", Source::Direct, Engine::Graph, 1);
}

/// Two cores on AF_PACKET (hash fanout): a neighbour's ARP reply may
/// reach the core that did not ask; the cores share learned neighbours
/// through the FIB thread.
#[test]
fn fib_feed_two_cores_af_packet() {
    scenario("af_packet", Source::Direct, Engine::Auto, 2);
}

#[test]
fn fast_engine_af_xdp() {
    scenario("af_xdp", Source::Direct, Engine::Fast, 1);
}

#[test]
fn fast_engine_af_packet() {
    scenario("af_packet", Source::Direct, Engine::Fast, 1);
}
