//! Whole-router golden test: a scripted exchange (ARP, ND, forwarding,
//! TTL/hop-limit expiry, no route, echo, bad checksum) through the IPv4 +
//! IPv6 router graph; outputs compared byte for byte with checked-in pcaps
//! and validated by tshark with checksum verification on.

mod common;

use common::*;
use elements::Env;
use pkt::build;
use pkt::hdr::arp::{ARP_REPLY, ARP_REQUEST};
use pkt::hdr::ether::{Ether, BROADCAST};
use pkt::hdr::ip4::Ipv4;
use pkt::hdr::ip6::Ipv6;
use pkt::{Mac, MemDevice, Pool};

/// The scripted input: (device index, frame).
fn script() -> Vec<(usize, Vec<u8>)> {
    let zero = Mac::default();
    let mut bad = build::udp4(R0, A, A4, B4, 64, 1000, 2000, b"bad checksum");
    bad[24] ^= 0xff; // corrupt the IPv4 header checksum
    vec![
        // 1. A asks for the router's MAC: ARP reply on eth0.
        (0, build::arp(BROADCAST, A, ARP_REQUEST, A, A4, zero, R04)),
        // 2. UDP A -> B: B unresolved, ARP request on eth1, packet held.
        (0, build::udp4(R0, A, A4, B4, 64, 1000, 2000, b"hello B")),
        // 3. B answers: held packet leaves on eth1 with TTL 63.
        (1, build::arp(R1, B, ARP_REPLY, B, B4, R1, R14)),
        // 4. TTL 1: ICMP time exceeded back to A.
        (0, build::udp4(R0, A, A4, B4, 1, 1000, 2000, b"expiring")),
        // 5. No route: ICMP destination unreachable to A.
        (
            0,
            build::udp4(R0, A, A4, [8, 8, 8, 8], 64, 1000, 53, b"no route"),
        ),
        // 6. Ping the router: echo reply.
        (0, build::ping4(R0, A, A4, R04, 64, 7, 1, b"ping")),
        // 7. Bad IPv4 checksum: dropped.
        (0, bad),
        // 8. Via gateway B (192.168/16).
        (
            0,
            build::tcp4(R0, A, A4, [192, 168, 5, 5], 30, 40000, 80, 0x02, b""),
        ),
        // 9. A solicits the router's IPv6 address: NA.
        (0, build::ns6(A, &v6(1, 2), &v6(1, 1))),
        // 10. UDP6 A -> B: NS on eth1, held.
        (
            0,
            build::udp6(R0, A, &v6(1, 2), &v6(2, 2), 64, 1000, 2000, b"hello B6"),
        ),
        // 11. B advertises: held packet leaves with hop limit 63.
        (1, build::na6(R1, B, &v6(2, 2), &v6(2, 1))),
        // 12. Hop limit 1: ICMPv6 time exceeded to A.
        (
            0,
            build::udp6(R0, A, &v6(1, 2), &v6(2, 2), 1, 1000, 2000, b"expiring6"),
        ),
        // 13. No route: ICMPv6 unreachable.
        (
            0,
            build::udp6(R0, A, &v6(1, 2), &v6(0xff, 1), 64, 1000, 2000, b"noroute6"),
        ),
        // 14. Ping6 the router.
        (
            0,
            build::ping6(R0, A, &v6(1, 2), &v6(1, 1), 64, 9, 1, b"ping6"),
        ),
        // 15. IPv6 via gateway B.
        (
            0,
            build::udp6(R0, A, &v6(1, 2), &v6(0x99, 5), 64, 1000, 2000, b"via B"),
        ),
    ]
}

#[test]
fn router_golden() {
    let steps = script();
    let frames: Vec<Vec<u8>> = steps.iter().map(|s| s.1.clone()).collect();
    // The input goes through a pcap file: what drives the router is what
    // the pcap reader returns.
    let inp = write_pcap("router_in.pcap", &frames);
    let input = pkt::pcap::read_frames(&std::fs::read(inp).unwrap()).unwrap();
    assert_eq!(input.len(), steps.len());

    let pool = Pool::new(1024);
    let mut env = Env::new();
    let cfg = router_config("", "", None);
    let mut r = runner(
        &cfg,
        &mut env,
        pool.clone(),
        MemDevice::new("eth0", vec![]),
        MemDevice::new("eth1", vec![]),
        32,
    );
    let mut after = Vec::new();
    for ((dev, _), f) in steps.iter().zip(input) {
        r.devices_mut()[*dev].inject(f);
        r.poll();
        after.push((r.devices()[0].sent().len(), r.devices()[1].sent().len()));
    }
    let out0 = r.devices_mut()[0].take_sent();
    let out1 = r.devices_mut()[1].take_sent();

    // Step by step: what left which interface.
    assert_eq!(
        after,
        vec![
            (1, 0),
            (1, 1),
            (1, 2),
            (2, 2),
            (3, 2),
            (4, 2),
            (4, 2),
            (4, 3),
            (5, 3),
            (5, 4),
            (5, 5),
            (6, 5),
            (7, 5),
            (8, 5),
            (8, 6)
        ]
    );
    // eth0: ARP reply, time exceeded, unreachable, echo reply, NA,
    // ICMPv6 time exceeded, ICMPv6 unreachable, echo6 reply.
    let e = Ether::parse(&out0[0]).unwrap();
    assert_eq!((e.dst(), e.src(), e.ethertype()), (A, R0, 0x0806));
    let icmp_of = |f: &[u8]| {
        let ip = Ipv4::parse(&f[14..]).unwrap();
        assert!(ip.checksum_ok());
        (ip.src(), ip.dst(), ip.payload()[0], ip.payload()[1])
    };
    assert_eq!(icmp_of(&out0[1]), (R04, A4, 11, 0));
    assert_eq!(icmp_of(&out0[2]), (R04, A4, 3, 0));
    assert_eq!(icmp_of(&out0[3]), (R04, A4, 0, 0));
    for f in &out0[1..4] {
        assert_eq!(Ether::parse(f).unwrap().dst(), A);
    }
    let icmp6_of = |f: &[u8]| {
        let ip = Ipv6::parse(&f[14..]).unwrap();
        (ip.src(), ip.dst(), ip.payload()[0], ip.hop_limit())
    };
    assert_eq!(icmp6_of(&out0[4]), (v6(1, 1), v6(1, 2), 136, 255));
    // Router-originated packets start at hop limit 64 and, like Click's
    // IP router, pass the output path's decrement on the way back out.
    assert_eq!(icmp6_of(&out0[5]), (v6(1, 1), v6(1, 2), 3, 63));
    assert_eq!(icmp6_of(&out0[6]), (v6(1, 1), v6(1, 2), 1, 63));
    assert_eq!(icmp6_of(&out0[7]), (v6(1, 1), v6(1, 2), 129, 63));
    // eth1: ARP request for B, forwarded UDP (TTL 63), TCP via B, NS for
    // B, forwarded UDP6 (hop limit 63), UDP6 via B.
    assert_eq!(Ether::parse(&out1[0]).unwrap().dst(), BROADCAST);
    let fwd = Ipv4::parse(&out1[1][14..]).unwrap();
    assert_eq!((fwd.ttl(), fwd.dst(), fwd.checksum_ok()), (63, B4, true));
    assert_eq!(Ether::parse(&out1[1]).unwrap().dst(), B);
    assert_eq!(Ipv4::parse(&out1[2][14..]).unwrap().ttl(), 29);
    assert_eq!(Ether::parse(&out1[2]).unwrap().dst(), B);
    assert_eq!(icmp6_of(&out1[3]).2, 135);
    assert_eq!(icmp6_of(&out1[4]).3, 63);
    assert_eq!(Ether::parse(&out1[5]).unwrap().dst(), B);

    // Drops were counted by reason.
    assert_eq!(r.graph.dropped("bad_ip_checksum"), 1);
    assert_eq!(r.graph.dropped("no_route"), 0);
    assert_eq!(pool.available(), pool.capacity(), "every buffer returned");

    // Byte for byte: the forwarded frames must equal what the builders
    // make for the next hop (new MACs, TTL/hop limit one less, IPv4
    // checksum as if computed afresh: RFC 1624's incremental update is
    // exact), and the ARP reply what a builder makes for A.
    let fwd: Vec<Vec<u8>> = [1, 2, 4, 5].iter().map(|&i| out1[i].clone()).collect();
    golden(
        "router_forwarded",
        &fwd,
        &[
            build::udp4(B, R1, A4, B4, 63, 1000, 2000, b"hello B"),
            build::tcp4(B, R1, A4, [192, 168, 5, 5], 29, 40000, 80, 0x02, b""),
            build::udp6(B, R1, &v6(1, 2), &v6(2, 2), 63, 1000, 2000, b"hello B6"),
            build::udp6(B, R1, &v6(1, 2), &v6(0x99, 5), 63, 1000, 2000, b"via B"),
        ],
    );
    golden(
        "router_arp_reply",
        &out0[..1],
        &[build::arp(A, R0, ARP_REPLY, R0, R04, A, A4)],
    );
    // The ICMP time exceeded quotes the expired datagram whole (RFC 1812
    // §4.3.2.3: up to 576 bytes): its IP header and UDP header and data.
    let expired = build::udp4(R0, A, A4, B4, 1, 1000, 2000, b"expiring");
    let quote = &expired[14..14 + 36];
    assert_eq!(&out0[1][42..], quote);
    tshark_clean(&write_pcap("router_out_eth0.pcap", &out0), 10);
    tshark_clean(&write_pcap("router_out_eth1.pcap", &out1), 7);
}

#[test]
fn tshark_flags_bad_checksum() {
    // Negative control: the input file holds one corrupted IPv4 header,
    // which tshark must report, or the validation above proves nothing.
    let frames: Vec<Vec<u8>> = script().into_iter().map(|s| s.1).collect();
    let Some(text) = tshark(&write_pcap("router_in_neg.pcap", &frames)) else {
        return;
    };
    assert!(
        text.contains("Bad]"),
        "tshark did not flag the corrupted checksum"
    );
}

#[test]
fn live_fib_through_read_handle() {
    use elements::{NextHopTable, NhEntry};
    use lpm::publish::{left_right, Delta};
    use lpm::{NextHop, Poptrie4};
    // The FIB is a left-right Poptrie read through a ReadHandle; the
    // writer publishes a route change while the graph runs.
    let mut w = left_right(Poptrie4::new());
    let p: base::Prefix4 = "198.51.100.0/24".parse().unwrap();
    w.publish(&[Delta::Insert(p, NextHop(0))]).unwrap();
    let mut nh = NextHopTable::new();
    let gw = |a: [u8; 4]| {
        let mut g = [0u8; 16];
        g[..4].copy_from_slice(&a);
        g
    };
    nh.set(
        NextHop(0),
        NhEntry {
            port: 0,
            gw: gw(A4),
            tag: 0,
        },
    );
    nh.set(
        NextHop(1),
        NhEntry {
            port: 1,
            gw: gw(B4),
            tag: 0,
        },
    );
    let mut env = Env::new();
    env.add_table4("fib", Box::new(w.reader()), nh);
    let cfg = "in0 :: FromDevice(eth0); in1 :: FromDevice(eth1);
        rt :: Ip4Lookup(TABLE fib, PORTS 2);
        in0 -> CheckIpHeader -> rt; in1 -> Discard;
        rt [0] -> DecIpTtl -> EtherRewrite(MAC 02:00:00:00:00:01, NEIGH 10.0.1.2 02:00:00:00:01:02) -> ToDevice(eth0);
        rt [1] -> DecIpTtl -> EtherRewrite(MAC 02:00:00:00:00:02, NEIGH 10.0.2.2 02:00:00:00:02:02) -> ToDevice(eth1);";
    let mut r = runner(
        cfg,
        &mut env,
        Pool::new(256),
        MemDevice::new("eth0", vec![]),
        MemDevice::new("eth1", vec![]),
        32,
    );
    let pkt = build::udp4(R0, A, A4, [198, 51, 100, 7], 64, 1, 2, b"x");
    r.devices_mut()[0].inject(pkt.clone());
    r.poll();
    assert_eq!(
        (r.devices()[0].sent().len(), r.devices()[1].sent().len()),
        (1, 0)
    );
    w.publish(&[Delta::Insert(p, NextHop(1))]).unwrap();
    r.devices_mut()[0].inject(pkt.clone());
    r.poll();
    assert_eq!(
        (r.devices()[0].sent().len(), r.devices()[1].sent().len()),
        (1, 1)
    );
    w.publish(&[Delta::Remove(p)]).unwrap();
    r.devices_mut()[0].inject(pkt);
    r.poll();
    assert_eq!(r.graph.dropped("no_route"), 1);
}

/// A table that carries its own next hops (`Table::lookup_entries`
/// returns true): the element takes each packet's port and gateway from
/// the table, not from its (here empty) `NextHopTable`, so adjacencies can
/// change with the routes. `crate fib`'s live table works this way.
#[test]
fn table_with_its_own_next_hops() {
    use elements::{NextHopTable, NhEntry, Table};
    use lpm::NextHop;
    struct Own {
        port: u16,
    }
    impl Table<u32> for Own {
        fn lookup_batch(&mut self, addrs: &[u32], out: &mut [Option<NextHop>]) {
            for (o, a) in out.iter_mut().zip(addrs) {
                *o = (a >> 24 == 198).then_some(NextHop(9));
            }
        }
        fn lookup_entries(
            &mut self,
            addrs: &[u32],
            out: &mut [Option<NextHop>],
            entries: &mut [Option<NhEntry>],
        ) -> bool {
            self.lookup_batch(addrs, out);
            for (e, o) in entries.iter_mut().zip(out.iter()) {
                let mut gw = [0u8; 16];
                gw[..4].copy_from_slice(&[10, 0, 2, 2]);
                *e = o.map(|_| NhEntry {
                    port: self.port,
                    gw,
                    tag: 0,
                });
            }
            true
        }
    }
    let mut env = Env::new();
    env.add_table4("own", Box::new(Own { port: 1 }), NextHopTable::new());
    let cfg = "in0 :: FromDevice(eth0); in1 :: FromDevice(eth1);
        rt :: Ip4Lookup(TABLE own, PORTS 2);
        in0 -> CheckIpHeader -> rt; in1 -> Discard;
        rt [0] -> EtherRewrite(MAC 02:00:00:00:00:01) -> ToDevice(eth0);
        rt [1] -> EtherRewrite(MAC 02:00:00:00:00:02, NEIGH 10.0.2.2 02:00:00:00:02:02) -> ToDevice(eth1);";
    let mut r = runner(
        cfg,
        &mut env,
        Pool::new(64),
        MemDevice::new("eth0", vec![]),
        MemDevice::new("eth1", vec![]),
        32,
    );
    r.devices_mut()[0].inject(build::udp4(R0, A, A4, [198, 51, 100, 7], 64, 1, 2, b"x"));
    r.devices_mut()[0].inject(build::udp4(R0, A, A4, [192, 0, 2, 7], 64, 1, 2, b"y"));
    r.poll();
    let sent = r.devices()[1].sent();
    assert_eq!(
        sent.len(),
        1,
        "the routed packet left port 1 of the table's entry"
    );
    assert_eq!(
        &sent[0][0..6],
        &[2, 0, 0, 0, 2, 2],
        "to the entry's gateway"
    );
    assert!(r.devices()[0].sent().is_empty());
    assert_eq!(r.graph.dropped_at("rt", "no_route"), Some(1));
}
