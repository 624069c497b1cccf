//! The element-graph engine without the kernel: a [`GraphWorker`] over
//! in-memory devices, fed by a real [`Fib`] through the left-right
//! publication. Proves IPv4 and IPv6 forwarding over routes and
//! adjacencies that change live, ARP and NDP resolution, ICMP time
//! exceeded, echo for the router's own addresses, drops by reason, and no
//! allocation per packet after warm-up (a counting global allocator).

#![cfg(target_os = "linux")]

use std::net::IpAddr;

use fib::dataplane::core_stats::{CoreSnapshot, CoreStats};
use fib::dataplane::{Engine, GraphPort, GraphWorker, LoopConfig, WorkerLink};
use fib::{Change, Fib, FibTables, PortSpec};
use io::IoError;
use lpm::publish::{left_right, Writer};
use pkt::alloc_count::{counted, CountingAlloc};
use pkt::build;
use pkt::hdr::arp::{ARP_REPLY, ARP_REQUEST};
use pkt::hdr::ether::{Mac, BROADCAST};
use pkt::{Batch, DevStats, Device, Pool};
use std::sync::{mpsc, Arc, Mutex};

#[global_allocator]
static A: CountingAlloc = CountingAlloc;

/// An in-memory port: receives queued frames (once, or round and round),
/// captures or only counts what is sent.
#[derive(Default)]
struct Mem {
    name: String,
    rx: Vec<Vec<u8>>,
    next: usize,
    cycle: bool,
    capture: bool,
    sent: Vec<Vec<u8>>,
    count: u64,
    /// Frames taken per `tx_burst` at most (0: all): a slow port.
    tx_cap: usize,
}

impl Mem {
    /// Port `i`'s device.
    fn new(i: usize, capture: bool) -> Mem {
        Mem {
            name: format!("p{i}"),
            capture,
            ..Mem::default()
        }
    }
}

impl Device for Mem {
    type Error = IoError;
    fn name(&self) -> &str {
        &self.name
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        let max = max.min(batch.room());
        let mut n = 0;
        while n < max {
            if self.next >= self.rx.len() {
                if self.cycle && !self.rx.is_empty() {
                    self.next = 0;
                } else {
                    break;
                }
            }
            let Some(fr) = self.rx.get(self.next) else {
                break;
            };
            let Some(p) = pool.alloc_from(fr) else {
                break;
            };
            let _ = batch.push(p);
            self.next += 1;
            n += 1;
        }
        if !self.cycle {
            self.rx.drain(..self.next);
            self.next = 0;
        }
        n
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        if self.tx_cap > 0 && batch.len() > self.tx_cap {
            // A slow port: the rest stays in the caller's batch.
            let n = self.tx_cap;
            batch.drain_front(n);
            self.count += n as u64;
            return n;
        }
        let n = batch.len();
        for p in batch.drain() {
            self.count += 1;
            if self.capture {
                self.sent.push(p.data().to_vec());
            }
        }
        n
    }
    fn stats(&self) -> DevStats {
        DevStats {
            tx: self.count,
            ..DevStats::default()
        }
    }
}

const R0: Mac = Mac([2, 0, 0, 0, 0, 0x10]);
const R1: Mac = Mac([2, 0, 0, 0, 0, 0x11]);
const HA: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
const HB: Mac = Mac([2, 0, 0, 0, 0, 0xb]);

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().expect("v6").octets()
}

fn addrs(i: u8) -> Vec<(IpAddr, u8)> {
    vec![
        (format!("10.{i}.0.1").parse().expect("ip"), 24),
        (format!("2001:db8:{i}::1").parse().expect("ip"), 64),
    ]
}

struct Rig {
    fib: Fib,
    w: Writer<FibTables>,
    g: GraphWorker<Mem>,
}

impl Rig {
    fn new(capture: bool, engine: Engine) -> Rig {
        let specs: Vec<PortSpec> = (1..=2)
            .map(|i| PortSpec {
                name: format!("p{i}"),
                addrs: addrs(i),
            })
            .collect();
        let mut fib = Fib::new(&specs, false);
        let mut w = left_right(FibTables::new());
        w.publish(&fib.take_deltas()).expect("connected");
        let ports = [(R0, 1), (R1, 2)].map(|(m, i)| GraphPort {
            mac: m.0,
            addrs: addrs(i),
        });
        let g = GraphWorker::new(
            &ports,
            vec![Mem::new(0, capture), Mem::new(1, capture)],
            w.reader(),
            w.reader(),
            None,
            LoopConfig {
                engine,
                ..LoopConfig::default()
            },
        )
        .expect("graph builds");
        Rig { fib, w, g }
    }
    fn route(&mut self, prefix: &str, via: &str) {
        self.fib.apply(&[Change {
            prefix: prefix.parse().expect("prefix"),
            next_hop: Some(via.parse().expect("ip")),
            ecmp: Vec::new(),
        }]);
        self.w.publish(&self.fib.take_deltas()).expect("publish");
    }
    fn route_ecmp(&mut self, prefix: &str, via: &[&str]) {
        self.fib.apply(&[Change {
            prefix: prefix.parse().expect("prefix"),
            next_hop: Some(via[0].parse().expect("ip")),
            ecmp: via[1..].iter().map(|v| v.parse().expect("ip")).collect(),
        }]);
        self.w.publish(&self.fib.take_deltas()).expect("publish");
    }
    fn inject(&mut self, port: usize, f: Vec<u8>) {
        self.g.devices_mut()[port].rx.push(f);
        self.g.poll();
    }
    fn take(&mut self, port: usize) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.g.devices_mut()[port].sent)
    }
}

#[test]
fn forwards_v4_and_v6_over_a_live_fib_with_icmp_errors() {
    forwards_v4_and_v6(Engine::Graph);
}

/// The same with the fused `Ip4Forward` (`Engine::Fast`): the same frames
/// and counters.
#[test]
fn fast_engine_forwards_v4_and_v6_over_a_live_fib_with_icmp_errors() {
    forwards_v4_and_v6(Engine::Fast);
}

/// The same with the default (`Engine::Auto`: the fused path, as no IPsec
/// or fabric is configured).
#[test]
fn default_engine_forwards_v4_and_v6_over_a_live_fib_with_icmp_errors() {
    forwards_v4_and_v6(Engine::Auto);
}

fn forwards_v4_and_v6(engine: Engine) {
    let mut r = Rig::new(true, engine);
    r.route("203.0.113.0/24", "10.2.0.2");
    r.route("2001:db8:ff::/64", "2001:db8:2::2");

    // A resolves R: R answers and learns A (RFC 826 merge).
    let q = build::arp(
        BROADCAST,
        HA,
        ARP_REQUEST,
        HA,
        [10, 1, 0, 2],
        Mac::default(),
        [10, 1, 0, 1],
    );
    r.inject(0, q);
    let out = r.take(0);
    assert_eq!(out.len(), 1, "one ARP reply");
    assert_eq!(&out[0][0..6], &HA.0);
    assert_eq!(&out[0][6..12], &R0.0);

    // IPv4 to the fed route: B is unknown, so R asks ARP on port 1 and
    // holds the packet; B's reply releases it, rewritten, TTL 63.
    let u = build::udp4(R0, HA, [10, 1, 0, 2], [203, 0, 113, 5], 64, 1, 2, b"v4");
    r.inject(0, u.clone());
    let out = r.take(1);
    assert_eq!(out.len(), 1, "an ARP request for the gateway");
    assert_eq!(&out[0][12..14], &[8, 6]);
    assert_eq!(&out[0][38..42], &[10, 2, 0, 2]);
    let rep = build::arp(R1, HB, ARP_REPLY, HB, [10, 2, 0, 2], R1, [10, 2, 0, 1]);
    r.inject(1, rep);
    let out = r.take(1);
    assert_eq!(out.len(), 1, "the held packet");
    assert_eq!(&out[0][0..6], &HB.0);
    assert_eq!(&out[0][6..12], &R1.0);
    assert_eq!(out[0][14 + 8], 63, "TTL decremented");
    assert_eq!(
        pkt::checksum::checksum(&out[0][14..34]),
        0,
        "header checksum verifies"
    );

    // IPv6: Neighbor Solicitation for the gateway, its advertisement,
    // then the packet with hop limit 63.
    let (a6, b6) = (v6("2001:db8:1::2"), v6("2001:db8:2::2"));
    let u6 = build::udp6(R0, HA, &a6, &v6("2001:db8:ff::5"), 64, 1, 2, b"v6");
    r.inject(0, u6.clone());
    let out = r.take(1);
    assert_eq!(out.len(), 1, "a Neighbor Solicitation");
    assert_eq!(out[0][54], 135);
    r.inject(1, build::na6(R1, HB, &b6, &v6("2001:db8:2::1")));
    let out = r.take(1);
    assert_eq!(out.len(), 1, "the held IPv6 packet");
    assert_eq!(&out[0][0..6], &HB.0);
    assert_eq!(out[0][14 + 7], 63, "hop limit decremented");

    // Resolved now: straight through.
    r.inject(0, u.clone());
    r.inject(0, u6.clone());
    assert_eq!(r.take(1).len(), 2);

    // TTL 1: ICMP time exceeded from 10.1.0.1 back to A (A is known).
    let t1 = build::udp4(R0, HA, [10, 1, 0, 2], [203, 0, 113, 5], 1, 1, 2, b"t");
    r.inject(0, t1);
    let out = r.take(0);
    assert_eq!(out.len(), 1, "an ICMP error to A");
    let e = &out[0];
    assert_eq!((&e[0..6], e[14 + 9]), (&HA.0[..], 1), "ICMP to A's MAC");
    assert_eq!(
        &e[14 + 12..14 + 16],
        &[10, 1, 0, 1],
        "from the arrival port"
    );
    assert_eq!(&e[14 + 16..14 + 20], &[10, 1, 0, 2]);
    assert_eq!((e[34], e[35]), (11, 0), "time exceeded, in transit");
    assert_eq!(r.g.counters().icmp_errors, 1);

    // Echo to R's own address on the other port.
    let p = build::ping4(R0, HA, [10, 1, 0, 2], [10, 2, 0, 1], 64, 7, 1, b"hi");
    r.inject(0, p);
    let out = r.take(0);
    assert_eq!(out.len(), 1, "echo reply");
    assert_eq!(out[0][34], 0, "echo reply type");
    assert_eq!(&out[0][14 + 12..14 + 16], &[10, 2, 0, 1]);

    // The route moves to A's side, live: the same packet leaves port 0.
    r.route("203.0.113.0/24", "10.1.0.2");
    r.inject(0, u.clone());
    let out = r.take(0);
    assert_eq!(out.len(), 1, "moved to port 0 (hairpin allowed)");
    assert_eq!(&out[0][0..6], &HA.0);
    assert!(r.take(1).is_empty());

    // No route and a bad header are dropped by reason.
    r.inject(
        0,
        build::udp4(R0, HA, [10, 1, 0, 2], [198, 51, 100, 1], 64, 1, 2, b"x"),
    );
    let mut bad = u.clone();
    bad[14] = 0x46; // IHL 6 > the header checksum covers: bad header
    r.inject(0, bad);
    let c = r.g.counters();
    assert_eq!(c.no_route, 1, "{c:?}");
    assert!(c.bad_header >= 1, "{c:?}");
    assert_eq!(
        c.ipv6, 2,
        "two IPv6 packets were routed (ND goes to EtherRewrite): {c:?}"
    );
}

/// Multipath (ECMP): a route with two next hops behind port 1 spreads
/// flows over both gateways by the flow hash, IPv4 and IPv6 alike (the
/// IPv6 table is read through the same shared handle as IPv4's), keeps
/// each flow on one gateway, and drops nothing.
#[test]
fn multipath_routes_spread_flows_over_their_next_hops() {
    const HC: Mac = Mac([2, 0, 0, 0, 0, 0xc]);
    let mut r = Rig::new(true, Engine::Graph);
    r.route_ecmp("203.0.113.0/24", &["10.2.0.2", "10.2.0.3"]);
    r.route_ecmp("2001:db8:ff::/64", &["2001:db8:2::2", "2001:db8:2::3"]);
    let a6 = v6("2001:db8:1::2");
    let flow4 = |p: u16| build::udp4(R0, HA, [10, 1, 0, 2], [203, 0, 113, 5], 64, p, 9, b"m4");
    let flow6 = |p: u16| build::udp6(R0, HA, &a6, &v6("2001:db8:ff::5"), 64, p, 9, b"m6");
    let send_all = |r: &mut Rig| {
        for p in 1000..1064 {
            r.inject(0, flow4(p));
            r.inject(0, flow6(p));
        }
    };
    // First round: R resolves both gateways of each family (ARP, ND).
    send_all(&mut r);
    r.take(1);
    for (mac, last) in [(HB, 2u8), (HC, 3u8)] {
        let rep = build::arp(R1, mac, ARP_REPLY, mac, [10, 2, 0, last], R1, [10, 2, 0, 1]);
        r.inject(1, rep);
        let gw = v6(&format!("2001:db8:2::{last}"));
        r.inject(1, build::na6(R1, mac, &gw, &v6("2001:db8:2::1")));
    }
    r.take(1);
    // Resolved: every packet goes straight out, spread over B and C.
    let mut first: Vec<[u8; 6]> = Vec::new();
    for round in 0..2 {
        send_all(&mut r);
        let out = r.take(1);
        assert_eq!(out.len(), 128, "round {round}: every flow forwarded");
        let macs: Vec<[u8; 6]> = out
            .iter()
            .map(|f| f[0..6].try_into().expect("mac"))
            .collect();
        for fam in [0x0800u16, 0x86dd] {
            let of: Vec<&[u8; 6]> = out
                .iter()
                .zip(&macs)
                .filter(|(f, _)| u16::from_be_bytes([f[12], f[13]]) == fam)
                .map(|(_, m)| m)
                .collect();
            assert_eq!(of.len(), 64, "family {fam:#x}");
            let to_b = of.iter().filter(|m| ***m == HB.0).count();
            let to_c = of.iter().filter(|m| ***m == HC.0).count();
            assert_eq!(to_b + to_c, 64, "family {fam:#x}: only B and C");
            assert!(
                to_b >= 8 && to_c >= 8,
                "family {fam:#x}: flows spread over both gateways ({to_b} to B, {to_c} to C)"
            );
        }
        if round == 0 {
            first = macs;
        } else {
            assert_eq!(macs, first, "each flow stays on its gateway");
        }
    }
    assert_eq!(r.g.counters().no_route, 0);
}

#[test]
fn no_allocation_per_packet_after_warm_up() {
    no_allocation(Engine::Graph);
}

#[test]
fn fast_engine_no_allocation_per_packet_after_warm_up() {
    no_allocation(Engine::Fast);
}

#[test]
fn default_engine_no_allocation_per_packet_after_warm_up() {
    no_allocation(Engine::Auto);
}

fn no_allocation(engine: Engine) {
    let mut r = Rig::new(false, engine);
    r.route("203.0.113.0/24", "10.2.0.2");
    r.route("2001:db8:ff::/64", "2001:db8:2::2");
    let (a6, b6) = (v6("2001:db8:1::2"), v6("2001:db8:2::2"));
    // Warm-up: resolve B on both families (no static neighbours).
    let rep = build::arp(R1, HB, ARP_REPLY, HB, [10, 2, 0, 2], R1, [10, 2, 0, 1]);
    let u = build::udp4(R0, HA, [10, 1, 0, 2], [203, 0, 113, 5], 64, 1, 2, b"v4");
    let u6 = build::udp6(R0, HA, &a6, &v6("2001:db8:ff::5"), 64, 1, 2, b"v6");
    r.inject(0, u.clone());
    r.inject(0, u6.clone());
    r.inject(1, rep);
    r.inject(1, build::na6(R1, HB, &b6, &v6("2001:db8:2::1")));
    let t1 = build::udp4(R0, HA, [10, 1, 0, 2], [203, 0, 113, 5], 1, 1, 2, b"t");
    let d = r.g.devices_mut();
    let p0 = &mut d[0];
    p0.rx = vec![u, u6, t1];
    p0.cycle = true;
    p0.next = 0;
    // The per-core counters are stored on every batch, inside the
    // counted loop below.
    let core = Arc::new(CoreStats::default());
    let (_swap_tx, swaps) = mpsc::channel();
    r.g.set_link(WorkerLink {
        swaps,
        counters: Arc::new(Mutex::new(Vec::new())),
        core: Arc::clone(&core),
    });
    for _ in 0..200 {
        r.g.poll();
    }
    let before = r.g.counters();
    let snap0 = core.snapshot();
    let ((), n) = counted(|| {
        for _ in 0..2000 {
            r.g.poll();
        }
    });
    let after = r.g.counters();
    let fwd = after.forwarded - before.forwarded;
    assert!(fwd > 10_000, "forwarded {fwd}");
    assert!(after.icmp_errors > before.icmp_errors);
    assert_eq!(n, 0, "allocations while forwarding {fwd} packets");
    // The core published its totals per batch: rx to the poll, drops
    // every DROPS_EVERY batches, by reason name.
    let snap = core.snapshot();
    assert!(snap.rx > snap0.rx + 10_000, "{snap:?}");
    assert!(snap.tx > snap0.tx + 10_000, "{snap:?}");
    assert_eq!(snap.rx, after.rx);
    let total = |s: &CoreSnapshot| s.drops.iter().map(|x| x.1).sum::<u64>();
    let unresolved = |s: &CoreSnapshot| s.drops.iter().find(|x| x.0 == "unresolved").map(|x| x.1);
    let u = unresolved(&snap).expect("unresolved is a reason of the graph");
    assert!(
        u > unresolved(&snap0).unwrap_or(0) && u <= after.unresolved,
        "{snap:?}"
    );
    assert!(total(&snap) <= r.g.graph().total_drops(), "{snap:?}");
    assert!(snap.drops.iter().any(|(n, v)| *n == "no_route" && *v == 0));
}

/// Two cores: core 1 asks for B (ARP, or a Neighbor Solicitation), B's
/// reply reaches core 2 (as with a hash fanout). Core 2 tells the FIB
/// thread, which publishes the neighbour; core 1 finds it there when its
/// request is due and releases the held packet without asking again.
fn learned_on_one_core_resolves_on_another(v6_family: bool) {
    let specs: Vec<PortSpec> = (1..=2)
        .map(|i| PortSpec {
            name: format!("p{i}"),
            addrs: addrs(i),
        })
        .collect();
    let mut fib = Fib::new(&specs, false);
    let mut w = left_right(FibTables::new());
    let (prefix, via) = if v6_family {
        ("2001:db8:ff::/64", "2001:db8:2::2")
    } else {
        ("203.0.113.0/24", "10.2.0.2")
    };
    fib.apply(&[Change {
        prefix: prefix.parse().expect("prefix"),
        next_hop: Some(via.parse().expect("ip")),
        ecmp: Vec::new(),
    }]);
    w.publish(&fib.take_deltas()).expect("publish");
    let ports = [(R0, 1), (R1, 2)].map(|(m, i)| GraphPort {
        mac: m.0,
        addrs: addrs(i),
    });
    let mut rings = Vec::new();
    let mut cores: Vec<GraphWorker<Mem>> = (0..2)
        .map(|_| {
            let (p, c) = io::rss::spsc::<fib::dataplane::Learned>(16);
            rings.push(c);
            GraphWorker::new(
                &ports,
                vec![Mem::new(0, true), Mem::new(1, true)],
                w.reader(),
                w.reader(),
                Some((w.reader(), p)),
                LoopConfig::default(),
            )
            .expect("graph builds")
        })
        .collect();
    let (u, rep) = if v6_family {
        let b6 = v6("2001:db8:2::2");
        (
            build::udp6(
                R0,
                HA,
                &v6("2001:db8:1::2"),
                &v6("2001:db8:ff::5"),
                64,
                1,
                2,
                b"v6",
            ),
            // Solicited, to the router's address on the port.
            build::na6(R1, HB, &b6, &v6("2001:db8:2::1")),
        )
    } else {
        (
            build::udp4(R0, HA, [10, 1, 0, 2], [203, 0, 113, 5], 64, 1, 2, b"v4"),
            build::arp(R1, HB, ARP_REPLY, HB, [10, 2, 0, 2], R1, [10, 2, 0, 1]),
        )
    };
    let [c1, c2] = &mut cores[..] else {
        panic!("two cores")
    };
    c1.devices_mut()[0].rx.push(u);
    c1.poll();
    let asked = std::mem::take(&mut c1.devices_mut()[1].sent);
    assert_eq!(asked.len(), 1, "core 1 asks for B");
    c2.devices_mut()[1].rx.push(rep);
    c2.poll();
    // The FIB thread's part.
    let mut learned = 0;
    for c in &mut rings {
        while let Some(l) = c.pop() {
            fib.learn(l.ip, l.mac);
            learned += 1;
        }
        c.release();
    }
    assert_eq!(learned, 1, "core 2 told the FIB thread");
    w.publish(&fib.take_deltas()).expect("publish");
    // Core 1's retry falls due (RETRY_MS 200).
    std::thread::sleep(std::time::Duration::from_millis(260));
    c1.poll();
    let out = std::mem::take(&mut c1.devices_mut()[1].sent);
    assert_eq!(out.len(), 1, "the held packet, and no second request");
    assert_eq!(&out[0][0..6], &HB.0);
    let ethertype: &[u8] = if v6_family { &[0x86, 0xdd] } else { &[8, 0] };
    assert_eq!(&out[0][12..14], ethertype);
}

#[test]
fn a_neighbour_learned_on_one_core_resolves_on_another() {
    learned_on_one_core_resolves_on_another(false);
}

/// The IPv6 twin: a solicited Neighbor Advertisement for a target that
/// the receiving core never asked for is still shared, since another
/// core of the router sent the solicitation.
#[test]
fn an_ipv6_neighbour_advertised_to_one_core_resolves_on_another() {
    learned_on_one_core_resolves_on_another(true);
}

/// One cluster node as tesserad builds it with `[cluster]`: the graph of
/// `graph_config_with` over one in-memory external port and a real
/// fabric socket, its FIB with the peer's fabric address on-link on the
/// fabric port and the peer's port prefix (`Fib::add_peer`), and a route
/// via that address.
struct Node {
    fib: Fib,
    w: Writer<FibTables>,
    g: GraphWorker<fib::dataplane::PortDev<Mem>>,
}

impl Node {
    fn new(
        me: u16,
        mac: Mac,
        net: u8,
        fabric: io::fabric::FabricDevice,
        peer: (u16, std::net::SocketAddr),
    ) -> Node {
        Node::with_cc(me, mac, net, fabric, peer, None)
    }
    fn with_cc(
        me: u16,
        mac: Mac,
        net: u8,
        fabric: io::fabric::FabricDevice,
        peer: (u16, std::net::SocketAddr),
        cc: Option<fib::dataplane::FabricCc>,
    ) -> Node {
        use fib::dataplane::{FabricConfig, PortDev};
        let local = fabric.local_addr().expect("bound");
        let mut fib = Fib::new(
            &[PortSpec {
                name: "p0".into(),
                addrs: addrs(net),
            }],
            false,
        );
        // The peer's one external port: the other of 10.1.0.0/24 and
        // 10.2.0.0/24.
        let theirs: base::Prefix = format!("10.{}.0.0/24", 3 - net).parse().expect("pfx");
        fib.add_peer(1, peer.1.ip(), peer.0, &[theirs]);
        let mut w = left_right(FibTables::new());
        w.publish(&fib.take_deltas()).expect("connected");
        let fc = FabricConfig {
            node: me,
            local,
            peers: vec![peer],
            peer_ports: vec![(peer.0, vec![theirs])],
            mode: cluster::lb::Mode::Direct,
            packing: 8,
            affinity: true,
            mtu: 1500,
            rate: 125_000_000,
            cc,
        };
        let g = GraphWorker::with_fabric(
            &[GraphPort {
                mac: mac.0,
                addrs: addrs(net),
            }],
            vec![PortDev::Port(Mem::new(0, true)), PortDev::Fabric(fabric)],
            w.reader(),
            w.reader(),
            None,
            LoopConfig::default(),
            Some(&fc),
        )
        .expect("graph with the fabric builds");
        Node { fib, w, g }
    }
    fn route(&mut self, prefix: &str, via: &str) {
        self.fib.apply(&[Change {
            prefix: prefix.parse().expect("prefix"),
            next_hop: Some(via.parse().expect("ip")),
            ecmp: Vec::new(),
        }]);
        self.w.publish(&self.fib.take_deltas()).expect("publish");
    }
    fn port(&mut self) -> &mut Mem {
        match &mut self.g.devices_mut()[0] {
            fib::dataplane::PortDev::Port(m) => m,
            fib::dataplane::PortDev::Fabric(_) => panic!("port 0 is external"),
        }
    }
    fn inject(&mut self, f: Vec<u8>) {
        self.port().rx.push(f);
        self.g.poll();
    }
    /// Polls until the external port has sent `n` frames (the fabric
    /// datagram arrives over loopback UDP); at most about a second.
    fn take(&mut self, n: usize) -> Vec<Vec<u8>> {
        for _ in 0..200 {
            if self.port().sent.len() >= n {
                break;
            }
            self.g.poll();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::mem::take(&mut self.port().sent)
    }
}

#[test]
fn two_cluster_nodes_forward_across_the_fabric() {
    use io::fabric::FabricDevice;
    // Two fabric addresses on loopback (all of 127/8 is local on Linux).
    let fa = FabricDevice::bind("fabric", "127.0.0.2:0".parse().expect("a"), &[]);
    let fb = FabricDevice::bind("fabric", "127.0.0.3:0".parse().expect("b"), &[]);
    let (mut fa, mut fb) = (fa.expect("bind a"), fb.expect("bind b"));
    let (la, lb) = (fa.local_addr().expect("a"), fb.local_addr().expect("b"));
    fa.set_peer(1, lb).expect("peer");
    fb.set_peer(0, la).expect("peer");
    let mut a = Node::new(0, R0, 1, fa, (1, lb));
    let mut b = Node::new(1, R1, 2, fb, (0, la));
    // What iBGP would give: each node's external subnet via its fabric
    // address (here as routes fed to the FIB).
    a.route("10.2.0.0/24", "127.0.0.3");
    b.route("10.1.0.0/24", "127.0.0.2");

    // HA -> HB: A looks up, decrements the TTL, sends it over the fabric;
    // B looks the destination up in its own table, asks ARP for HB,
    // and HB's answer releases it. One TTL decrement in the whole cluster.
    let u = build::udp4(R0, HA, [10, 1, 0, 2], [10, 2, 0, 2], 64, 1, 2, b"across");
    a.inject(u.clone());
    let out = b.take(1);
    assert_eq!(out.len(), 1, "B asks ARP for HB");
    assert_eq!(
        (&out[0][12..14], &out[0][38..42]),
        (&[8u8, 6][..], &[10u8, 2, 0, 2][..])
    );
    b.inject(build::arp(
        R1,
        HB,
        ARP_REPLY,
        HB,
        [10, 2, 0, 2],
        R1,
        [10, 2, 0, 1],
    ));
    let out = b.take(1);
    assert_eq!(out.len(), 1, "the packet leaves B's external port");
    assert_eq!((&out[0][0..6], &out[0][6..12]), (&HB.0[..], &R1.0[..]));
    assert_eq!(out[0][14 + 8], 63, "one TTL decrement, at the ingress");
    assert_eq!(pkt::checksum::checksum(&out[0][14..34]), 0);
    assert_eq!(&out[0][34..], &u[34..], "UDP header and payload intact");
    assert!(a.take(0).is_empty(), "nothing back out of A's port");

    // And back: HB -> HA through B's route via A's fabric address.
    let back = build::udp4(R1, HB, [10, 2, 0, 2], [10, 1, 0, 2], 64, 2, 1, b"back");
    b.inject(back);
    let out = a.take(1);
    assert_eq!(out.len(), 1, "A asks ARP for HA");
    a.inject(build::arp(
        R0,
        HA,
        ARP_REPLY,
        HA,
        [10, 1, 0, 2],
        R0,
        [10, 1, 0, 1],
    ));
    let out = a.take(1);
    assert_eq!((out.len(), &out[0][0..6]), (1, &HA.0[..]));

    // BFD says B is down: A's balancer drops what is for B (until routing
    // withdraws the route); B is back: traffic flows again.
    let live = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0b11));
    a.g.follow_live(&live);
    live.store(0b01, std::sync::atomic::Ordering::Relaxed);
    a.inject(u.clone());
    assert!(b.take(0).is_empty());
    let fenc = a.g.graph().stats_of("fenc").expect("fenc");
    assert_eq!(fenc.total_drops(), 1, "dropped as unreachable");
    assert_eq!(a.g.graph().dropped("unreachable"), 1);
    live.store(0b11, std::sync::atomic::Ordering::Relaxed);
    a.inject(u.clone());
    assert_eq!(b.take(1).len(), 1, "B rejoined");

    // The fabric elements counted it: one datagram each way, no drops.
    for (n, node) in [("A", &a), ("B", &b)] {
        let g = node.g.graph();
        let mut packets = 0;
        let mut delivered = 0;
        for (_, e, _) in g.iter() {
            graph::Element::counters(e, &mut |k, v| match k {
                "packets" => packets += v,
                "delivered" => delivered += v,
                _ => {}
            });
        }
        let want = if n == "A" { (2, 1) } else { (1, 2) };
        assert_eq!((packets, delivered), want, "node {n}");
        let s = g.stats_of("fdec").expect("fabric element");
        assert_eq!(s.total_drops(), 0, "node {n} fdec");
    }
}

/// The egress forwards by the tag: A resolves 198.51.100.0/24 (next hop
/// 10.2.0.9, a neighbour on B's port, under B's subnet via B's fabric
/// address) to (node 1, port 0, neighbour 10.2.0.9). B has no route for
/// 198.51.100.0/24 at all, yet asks ARP for 10.2.0.9 on port 0 and sends
/// the packet there. A route at B under none of B's configured ports is
/// not installed at A (B could not forward it without a lookup).
#[test]
fn the_egress_forwards_by_the_tag_without_a_route() {
    use io::fabric::FabricDevice;
    let fa = FabricDevice::bind("fabric", "127.0.0.4:0".parse().expect("a"), &[]);
    let fb = FabricDevice::bind("fabric", "127.0.0.5:0".parse().expect("b"), &[]);
    let (mut fa, mut fb) = (fa.expect("bind a"), fb.expect("bind b"));
    let (la, lb) = (fa.local_addr().expect("a"), fb.local_addr().expect("b"));
    fa.set_peer(1, lb).expect("peer");
    fb.set_peer(0, la).expect("peer");
    let mut a = Node::new(0, R0, 1, fa, (1, lb));
    let mut b = Node::new(1, R1, 2, fb, (0, la));
    a.route("10.2.0.0/24", "127.0.0.5");
    a.route("198.51.100.0/24", "10.2.0.9");
    a.route("203.0.113.0/24", "127.0.0.5");
    assert_eq!(
        a.fib.stats().unresolved,
        1,
        "203.0.113.0/24: under no port of B"
    );

    let u = build::udp4(
        R0,
        HA,
        [10, 1, 0, 2],
        [198, 51, 100, 7],
        64,
        1,
        2,
        b"by tag",
    );
    a.inject(u.clone());
    let out = b.take(1);
    assert_eq!(
        out.len(),
        1,
        "B asks ARP for the neighbour the tag's trailer names"
    );
    assert_eq!(
        (&out[0][12..14], &out[0][38..42]),
        (&[8u8, 6][..], &[10u8, 2, 0, 9][..])
    );
    let hn = Mac([2, 0, 0, 0, 0, 0x99]);
    b.inject(build::arp(
        R1,
        hn,
        ARP_REPLY,
        hn,
        [10, 2, 0, 9],
        R1,
        [10, 2, 0, 1],
    ));
    let out = b.take(1);
    assert_eq!(out.len(), 1, "the packet leaves B's port 0");
    assert_eq!((&out[0][0..6], &out[0][6..12]), (&hn.0[..], &R1.0[..]));
    assert_eq!(out[0].len(), u.len(), "the neighbour trailer is gone");
    assert_eq!(out[0][14 + 8], 63, "one TTL decrement, at the ingress");
    assert_eq!(&out[0][34..], &u[34..], "UDP header and payload intact");
    let g = b.g.graph();
    assert_eq!(g.dropped("no_route"), 0, "B never looked it up");
}

/// Congestion control wired into the cluster graph: B's egress queue
/// (`CcEgress`, shaped at 1000 pps) fills with what A sends, B sends BECNs
/// over the fabric (`aimd-rate`: to every source), and A's `CcIngress`
/// receives them on its control input from `FabricDecap`.
#[test]
fn cluster_congestion_control_sends_becns_back_across_the_fabric() {
    use fib::dataplane::FabricCc;
    use io::fabric::FabricDevice;
    let fa = FabricDevice::bind("fabric", "127.0.0.2:0".parse().expect("a"), &[]);
    let fb = FabricDevice::bind("fabric", "127.0.0.3:0".parse().expect("b"), &[]);
    let (mut fa, mut fb) = (fa.expect("bind a"), fb.expect("bind b"));
    let (la, lb) = (fa.local_addr().expect("a"), fb.local_addr().expect("b"));
    fa.set_peer(1, lb).expect("peer");
    fb.set_peer(0, la).expect("peer");
    let cc = |egress: &str| FabricCc {
        scheme: "aimd-rate".into(),
        egress: egress.into(),
        ingress: "W 100, M 0.5".into(),
    };
    let mut a = Node::with_cc(0, R0, 1, fa, (1, lb), Some(cc("")));
    let mut b = Node::with_cc(
        1,
        R1,
        2,
        fb,
        (0, la),
        Some(cc("SHAPE 1000, BURST 1, THRESHOLD 10")),
    );
    a.route("10.2.0.0/24", "127.0.0.3");
    b.route("10.1.0.0/24", "127.0.0.2");
    // The graphs' clock is the wall clock per poll: what the shaper may
    // have sent is bounded by the time since here.
    let t0 = std::time::Instant::now();
    for i in 0..200u16 {
        let u = build::udp4(R0, HA, [10, 1, 0, 2], [10, 2, 0, 2], 64, i, 2, b"load");
        a.port().rx.push(u);
    }
    for _ in 0..20 {
        a.g.poll();
    }
    let counter = |n: &Node, elem: &str, key: &str| {
        let g = n.g.graph();
        let mut v = 0;
        if let Some(e) = g.find(elem).and_then(|i| g.element(i)) {
            graph::Element::counters(e, &mut |k, x| {
                if k == key {
                    v = x;
                }
            });
        }
        v
    };
    // B polls for a while: the queue is far above THRESHOLD, each interval
    // sends a BECN to node 0; A polls and takes them in.
    for _ in 0..100 {
        b.g.poll();
        a.g.poll();
        if counter(&a, "cci", "signals") >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(
        counter(&a, "cci", "to1"),
        200,
        "all admitted before any BECN"
    );
    assert_eq!(
        counter(&b, "cce", "from0"),
        200,
        "B's egress queue saw A's frames"
    );
    // At most SHAPE 1000 pps since t0, plus the burst (1) and a rounding:
    // about 10 of the 200 in a run of ~10 ms. It was "< 200", which a run
    // preempted for 200 ms (a loaded machine) would have failed with the
    // shaper right.
    let allowed = (t0.elapsed().as_secs_f64() * 1000.0) as u64 + 2;
    let sent = counter(&b, "cce", "sent");
    assert!(
        sent <= allowed,
        "the shaper holds them back: {sent} sent, at most {allowed} allowed"
    );
    assert!(counter(&b, "cce", "control_sent") >= 2);
    assert!(counter(&a, "cci", "signals") >= 2, "A got the BECNs");
    assert_eq!(a.g.graph().dropped("bad_control"), 0);
}

/// A router for the IPsec test: ports `p1`, `p2` with the given MACs and
/// addresses, `[dataplane.ipsec]`'s SAs in its graph.
fn ipsec_rig(macs: [Mac; 2], port_addrs: [&[&str]; 2], ipsec: &fib::dataplane::IpsecConfig) -> Rig {
    let parse = |a: &[&str]| -> Vec<(IpAddr, u8)> {
        a.iter()
            .map(|s| {
                let (ip, l) = s.split_once('/').expect("a/len");
                (ip.parse().expect("ip"), l.parse().expect("len"))
            })
            .collect()
    };
    let specs: Vec<PortSpec> = (0..2)
        .map(|i| PortSpec {
            name: format!("p{}", i + 1),
            addrs: parse(port_addrs[i]),
        })
        .collect();
    let mut fib = Fib::new(&specs, false);
    let mut w = left_right(FibTables::new());
    w.publish(&fib.take_deltas()).expect("connected");
    let ports: Vec<GraphPort> = (0..2)
        .map(|i| GraphPort {
            mac: macs[i].0,
            addrs: parse(port_addrs[i]),
        })
        .collect();
    let g = GraphWorker::with_graph(
        &ports,
        vec![Mem::new(0, true), Mem::new(1, true)],
        w.reader(),
        w.reader(),
        None,
        LoopConfig::default(),
        None,
        None,
        Some(ipsec),
        &[],
    )
    .map_err(|e| format!("{e:?}"))
    .expect("graph with IPsec builds");
    Rig { fib, w, g }
}

fn sa(
    spi: u32,
    outbound: bool,
    key: u8,
    src: [u8; 4],
    dst: [u8; 4],
    sel: &[&str],
) -> fib::dataplane::IpsecSa {
    fib::dataplane::IpsecSa {
        spi,
        outbound,
        key: [key; 16],
        salt: [key, 1, 2, 3],
        src: src.into(),
        dst: dst.into(),
        selectors: sel
            .iter()
            .map(|s| {
                let (a, l) = s.split_once('/').expect("prefix");
                (a.parse().expect("ip"), l.parse().expect("len"))
            })
            .collect(),
        window: 64,
    }
}

/// Two routers joined by a tunnel link 10.2.0.0/24: X (hosts 10.1.0.0/24,
/// 2001:db8:1::/64 on p1) and Y (10.3.0.0/24, 2001:db8:3::/64 on p2),
/// with a pair of SAs each way, built by `graph_config_ext` as tesserad
/// builds them. IPv4 and IPv6 traffic crosses X -> ESP -> Y and back;
/// the tunnel link only ever carries ESP; a replayed ESP frame and one
/// with a flipped bit are dropped by reason; counters add up.
#[test]
fn ipsec_tunnel_between_two_graphs() {
    const X1: Mac = Mac([2, 0, 0, 0, 0xa1, 1]);
    const X2: Mac = Mac([2, 0, 0, 0, 0xa1, 2]);
    const Y1: Mac = Mac([2, 0, 0, 0, 0xb1, 1]);
    const Y2: Mac = Mac([2, 0, 0, 0, 0xb1, 2]);
    const HC: Mac = Mac([2, 0, 0, 0, 0, 0xc]);
    let (x_end, y_end) = ([10, 2, 0, 1], [10, 2, 0, 2]);
    let xcfg = fib::dataplane::IpsecConfig {
        sas: vec![
            sa(
                0x1001,
                true,
                0x11,
                x_end,
                y_end,
                &["10.3.0.0/24", "2001:db8:3::/64"],
            ),
            sa(
                0x2001,
                false,
                0x22,
                y_end,
                x_end,
                &["10.3.0.0/24", "2001:db8:3::/64"],
            ),
        ],
    };
    let ycfg = fib::dataplane::IpsecConfig {
        sas: vec![
            sa(
                0x1001,
                false,
                0x11,
                x_end,
                y_end,
                &["10.1.0.0/24", "2001:db8:1::/64"],
            ),
            sa(
                0x2001,
                true,
                0x22,
                y_end,
                x_end,
                &["10.1.0.0/24", "2001:db8:1::/64"],
            ),
        ],
    };
    let mut x = ipsec_rig(
        [X1, X2],
        [&["10.1.0.1/24", "2001:db8:1::1/64"], &["10.2.0.1/24"]],
        &xcfg,
    );
    let mut y = ipsec_rig(
        [Y1, Y2],
        [&["10.2.0.2/24"], &["10.3.0.1/24", "2001:db8:3::1/64"]],
        &ycfg,
    );
    // Neighbours: each learns from an ARP request it answers.
    let req = |from: Mac, spa: [u8; 4], tpa: [u8; 4]| {
        build::arp(BROADCAST, from, ARP_REQUEST, from, spa, Mac::default(), tpa)
    };
    x.inject(0, req(HA, [10, 1, 0, 2], [10, 1, 0, 1]));
    x.inject(1, req(Y1, y_end, x_end));
    y.inject(0, req(X2, x_end, y_end));
    y.inject(1, req(HC, [10, 3, 0, 5], [10, 3, 0, 1]));
    for r in [&mut x, &mut y] {
        r.take(0);
        r.take(1);
    }

    // A -> C: sealed by X (the link sees ESP only), opened by Y.
    let u = build::udp4(
        X1,
        HA,
        [10, 1, 0, 2],
        [10, 3, 0, 5],
        64,
        1,
        2,
        b"through the tunnel",
    );
    x.inject(0, u.clone());
    let esp = x.take(1);
    assert_eq!(esp.len(), 1, "one ESP packet on the tunnel link");
    let e = &esp[0];
    assert_eq!(
        (&e[0..6], &e[6..12], &e[12..14]),
        (&Y1.0[..], &X2.0[..], &[8u8, 0][..])
    );
    assert_eq!(
        (e[14 + 9], &e[26..30], &e[30..34]),
        (50, &x_end[..], &y_end[..])
    );
    assert_eq!(&e[34..38], &0x1001u32.to_be_bytes());
    assert!(
        !e.windows(18).any(|w| w == b"through the tunnel"),
        "encrypted"
    );
    y.inject(0, e.clone());
    let got = y.take(1);
    assert_eq!(got.len(), 1, "the inner packet leaves Y toward C");
    assert_eq!((&got[0][0..6], &got[0][6..12]), (&HC.0[..], &Y2.0[..]));
    assert_eq!(got[0][14 + 8], 62, "one TTL decrement at X, one at Y");
    assert_eq!(
        &got[0][14 + 12..14 + 20],
        &u[14 + 12..14 + 20],
        "inner addresses kept"
    );
    assert!(got[0].windows(18).any(|w| w == b"through the tunnel"));

    // Replayed, then tampered: dropped and counted at Y.
    y.inject(0, e.clone());
    let mut bad = e.clone();
    let n = bad.len();
    bad[n - 20] ^= 1;
    bad[38..42].copy_from_slice(&9u32.to_be_bytes()); // a fresh sequence number
    y.inject(0, bad);
    assert!(y.take(1).is_empty());
    let yc = y.g.counters().ipsec;
    assert_eq!(yc.decrypted, 1);
    assert_eq!(yc.decap_drops[3], 1, "replay");
    assert_eq!(yc.decap_drops[4], 1, "auth_failed");

    // C -> A the other way: sealed by Y with SPI 0x2001, opened by X.
    let back = build::udp4(Y2, HC, [10, 3, 0, 5], [10, 1, 0, 2], 64, 2, 1, b"and back");
    y.inject(1, back);
    let esp = y.take(0);
    assert_eq!(esp.len(), 1);
    assert_eq!(&esp[0][34..38], &0x2001u32.to_be_bytes());
    x.inject(1, esp[0].clone());
    let got = x.take(0);
    assert_eq!(got.len(), 1, "back at A");
    assert_eq!(&got[0][0..6], &HA.0);
    assert!(got[0].windows(8).any(|w| w == b"and back"));

    // IPv6 inside IPv4 ESP: Y solicits C's address, then forwards.
    let c6 = v6("2001:db8:3::5");
    let u6 = build::udp6(X1, HA, &v6("2001:db8:1::2"), &c6, 64, 1, 2, b"six in four");
    x.inject(0, u6);
    let esp6 = x.take(1);
    assert_eq!(esp6.len(), 1);
    assert_eq!(esp6[0][14 + 9], 50, "outer IPv4 ESP for an IPv6 packet");
    y.inject(0, esp6[0].clone());
    let ns = y.take(1);
    assert_eq!(ns.len(), 1, "a Neighbor Solicitation for C");
    assert_eq!(ns[0][54], 135);
    y.inject(1, build::na6(Y2, HC, &c6, &v6("2001:db8:3::1")));
    let got = y.take(1);
    assert_eq!(got.len(), 1, "the held IPv6 packet");
    assert_eq!(&got[0][12..14], &[0x86, 0xdd]);
    assert_eq!(got[0][14 + 7], 62, "hop limit decremented at X and Y");
    assert!(got[0].windows(11).any(|w| w == b"six in four"));

    // Traffic outside the policy is forwarded in the clear.
    x.inject(1, req(Y1, [10, 2, 0, 7], x_end));
    x.take(1);
    let clear = build::udp4(X1, HA, [10, 1, 0, 2], [10, 2, 0, 7], 64, 1, 2, b"clear");
    x.inject(0, clear);
    let out = x.take(1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0][14 + 9], 17, "plain UDP");

    let xc = x.g.counters().ipsec;
    assert_eq!((xc.encrypted, xc.decrypted), (2, 1));
    assert_eq!(y.g.counters().ipsec.encrypted, 1);
    assert_eq!(y.g.counters().ipsec.decrypted, 2);
    assert_eq!(xc.encap_drops, [0; 4]);
}

/// One run of the built-in graph with port 1 slower than the load offered
/// on port 0 (8 frames per poll out, 32 in), with or without a NICBalance
/// port group over both ports: (frames sent on port 1, frames dropped
/// after processing, the worker's element counters).
fn slow_port_run(balance: bool) -> (u64, u64, Vec<fib::dataplane::ElementCounters>) {
    let specs: Vec<PortSpec> = (1..=2)
        .map(|i| PortSpec {
            name: format!("p{i}"),
            addrs: addrs(i),
        })
        .collect();
    let mut fib = Fib::new(&specs, false);
    let mut w = left_right(FibTables::new());
    w.publish(&fib.take_deltas()).expect("connected");
    fib.apply(&[Change {
        prefix: "203.0.113.0/24".parse().expect("prefix"),
        next_hop: Some("10.2.0.2".parse().expect("ip")),
        ecmp: Vec::new(),
    }]);
    w.publish(&fib.take_deltas()).expect("publish");
    let ports = [(R0, 1), (R1, 2)].map(|(m, i)| GraphPort {
        mac: m.0,
        addrs: addrs(i),
    });
    let groups = [fib::dataplane::BalanceGroup {
        name: "g".into(),
        ports: vec![0, 1],
        params: fib::dataplane::BalanceParams::default(),
    }];
    let mut g = GraphWorker::with_graph(
        &ports,
        vec![Mem::new(0, false), Mem::new(1, false)],
        w.reader(),
        w.reader(),
        None,
        LoopConfig::default(),
        None,
        None,
        None,
        if balance { &groups[..] } else { &[] },
    )
    .map_err(|e| format!("{e:?}"))
    .expect("graph builds");
    // Resolve the gateway first (ARP request out, reply in).
    let u = build::udp4(R0, HA, [10, 1, 0, 2], [203, 0, 113, 5], 64, 1, 2, b"load");
    g.devices_mut()[0].rx.push(u.clone());
    g.poll();
    let rep = build::arp(R1, HB, ARP_REPLY, HB, [10, 2, 0, 2], R1, [10, 2, 0, 1]);
    g.devices_mut()[1].rx.push(rep);
    g.poll();
    // Overload: port 0 always has frames; port 1 sends 8 per poll.
    let d = &mut g.devices_mut()[0];
    d.rx = vec![u];
    d.cycle = true;
    g.devices_mut()[1].tx_cap = 8;
    let sent0 = g.devices_mut()[1].count;
    for _ in 0..20_000 {
        g.poll();
    }
    let sent = g.devices_mut()[1].count - sent0;
    (sent, g.graph().dropped("tx_full"), g.element_counters())
}

/// `[[dataplane.port_group]] nicbalance` as tesserad builds it: the
/// built-in graph gets NICBalance elements over the group's ports, the
/// driver enforces them, and the counters say so. With a slow port, the
/// frames processed and then dropped at its full transmit ring (`tx_full`)
/// fall; the slow port sends as much either way.
#[test]
fn nicbalance_port_group_moves_drops_before_processing() {
    let (sent_off, drops_off, c_off) = slow_port_run(false);
    let (sent_on, drops_on, c_on) = slow_port_run(true);
    let find =
        |c: &[fib::dataplane::ElementCounters], n: &str| -> Option<(String, Vec<(String, u64)>)> {
            c.iter()
                .find(|e| e.name == n)
                .map(|e| (e.class.clone(), e.counters.clone()))
        };
    let get = |c: &[fib::dataplane::ElementCounters], n: &str, k: &str| -> u64 {
        find(c, n).map_or(0, |(_, v)| {
            v.iter().find(|(x, _)| x == k).map_or(0, |(_, v)| *v)
        })
    };
    assert!(find(&c_off, "nb0_1").is_none());
    assert_eq!(
        find(&c_on, "nb0_1").map(|e| e.0).as_deref(),
        Some("NICBalance")
    );
    assert_eq!(
        find(&c_on, "nb0_0").map(|e| e.0).as_deref(),
        Some("NICBalance")
    );
    assert!(get(&c_on, "nb0_1", "congested") > 0, "{c_on:?}");
    assert!(get(&c_on, "nb0_1", "suspensions") + get(&c_on, "nb0_1", "ticket_cuts") > 0);
    assert!(get(&c_on, "in0", "polls_withheld") > 0);
    assert_eq!(get(&c_off, "in0", "polls_withheld"), 0);
    // The slow port is the bottleneck in both runs.
    assert!(drops_off > 100_000, "{drops_off}");
    eprintln!(
        "slow port: off sent {sent_off} dropped {drops_off}; on sent {sent_on} dropped {drops_on}"
    );
    assert!(drops_on * 4 < drops_off, "on {drops_on}, off {drops_off}");
    assert!(
        sent_on * 100 >= sent_off * 99,
        "on {sent_on}, off {sent_off}"
    );
}
