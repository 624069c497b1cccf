//! No allocation per packet after warm-up, through the whole IPv4 + IPv6
//! router graph (issue 4): a counting global allocator counts every
//! allocation made on this test's thread while the router forwards,
//! answers ARP/ND and pings, builds ICMP errors in place and drops bad
//! packets, over thousands of polls.

mod common;

use common::*;
use elements::Env;
use pkt::alloc_count::{counted, CountingAlloc};
use pkt::build;
use pkt::hdr::arp::ARP_REQUEST;
use pkt::hdr::ether::BROADCAST;
use pkt::{Device, MemDevice, Pool};

#[global_allocator]
static A_: CountingAlloc = CountingAlloc;

#[test]
fn counter_sees_allocations() {
    // Control: the counter must see an allocation, or a zero below means
    // nothing.
    let (v, n) = counted(|| vec![1u8; 100]);
    assert_eq!(v.len(), 100);
    assert!(n >= 1);
}

#[test]
fn no_allocation_per_packet_through_the_router() {
    let mut bad = build::udp4(R0, A, A4, B4, 64, 1, 2, b"x");
    bad[24] ^= 0xff;
    let mix = vec![
        build::udp4(R0, A, A4, B4, 64, 1000, 2000, b"fwd"),
        build::udp4(R0, A, A4, [192, 168, 1, 1], 64, 1000, 2000, b"via B"),
        build::udp4(R0, A, A4, B4, 1, 1000, 2000, b"ttl"),
        build::udp4(R0, A, A4, [8, 8, 8, 8], 64, 1000, 2000, b"noroute"),
        build::ping4(R0, A, A4, R04, 64, 1, 1, b"ping"),
        build::arp(BROADCAST, A, ARP_REQUEST, A, A4, pkt::Mac::default(), R04),
        bad,
        build::udp6(R0, A, &v6(1, 2), &v6(2, 2), 64, 1, 2, b"fwd6"),
        build::udp6(R0, A, &v6(1, 2), &v6(2, 2), 1, 1, 2, b"hl6"),
        build::udp6(R0, A, &v6(1, 2), &v6(0xff, 1), 64, 1, 2, b"noroute6"),
        build::ping6(R0, A, &v6(1, 2), &v6(1, 1), 64, 1, 1, b"ping6"),
        build::ns6(A, &v6(1, 2), &v6(1, 1)),
    ];
    let n_mix = mix.len() as u64;
    let pool = Pool::new(4096);
    let mut env = Env::new();
    let cfg = router_config(
        ", NEIGH 10.0.1.2 02:00:00:00:01:02, NEIGH 2001:db8:1::2 02:00:00:00:01:02",
        ", NEIGH 10.0.2.2 02:00:00:00:02:02, NEIGH 2001:db8:2::2 02:00:00:00:02:02",
        None,
    );
    let mut r = runner(
        &cfg,
        &mut env,
        pool.clone(),
        MemDevice::cycling("eth0", mix),
        MemDevice::cycling("eth1", vec![]),
        64,
    );
    for _ in 0..200 {
        r.poll();
    }
    let (rx, allocs) = counted(|| {
        let mut rx = 0;
        for _ in 0..5000 {
            rx += r.poll();
        }
        rx
    });
    assert_eq!(rx, 5000 * 64, "every poll received a full burst");
    assert_eq!(allocs, 0, "allocations on the packet path after warm-up");
    // The run did real work: forwarded, answered, and dropped by reason.
    let cycles = 5200 * 64 / n_mix;
    let tx = r.devices()[0].stats().tx + r.devices()[1].stats().tx;
    assert!(tx >= cycles * 9, "sent {tx}");
    assert!(r.graph.dropped("bad_ip_checksum") >= cycles);
    assert_eq!(r.graph.dropped("no_buffer"), 0);
    assert_eq!(r.graph.dropped("unprocessed"), 0);
}

/// The same through the fused IPv4 path: `Classifier(ip checked)` (the
/// header check in the classifier) -> `Ip4Forward`, whose mixed outputs
/// move by runs, with its slow path (own addresses, TTL, no route) into
/// the ordinary chain.
#[test]
fn no_allocation_per_packet_through_the_fused_path() {
    let mut bad = build::udp4(R0, A, A4, B4, 64, 1, 2, b"x");
    bad[24] ^= 0xff;
    let mix = vec![
        build::udp4(R0, A, A4, B4, 64, 1000, 2000, b"fwd"),
        build::udp4(R0, A, A4, [192, 168, 1, 1], 64, 1000, 2000, b"via B"),
        build::udp4(R0, A, A4, [10, 0, 1, 2], 64, 1000, 2000, b"back"),
        build::udp4(R0, A, A4, B4, 1, 1000, 2000, b"ttl"),
        build::udp4(R0, A, A4, [8, 8, 8, 8], 64, 1000, 2000, b"noroute"),
        build::ping4(R0, A, A4, R04, 64, 1, 1, b"ping"),
        bad,
        build::udp6(R0, A, &v6(1, 2), &v6(2, 2), 64, 1, 2, b"fwd6"),
    ];
    let n_mix = mix.len() as u64;
    let base = router_config(
        ", NEIGH 10.0.1.2 02:00:00:00:01:02, NEIGH 2001:db8:1::2 02:00:00:00:01:02",
        ", NEIGH 10.0.2.2 02:00:00:00:02:02, NEIGH 2001:db8:2::2 02:00:00:00:02:02",
        None,
    );
    let chain = "c0 [3] -> CheckIpHeader -> rt;   c1 [3] -> CheckIpHeader -> rt;";
    assert!(base.contains(chain));
    let fused = "fwd :: Ip4Forward(ADDR 10.0.1.1, ADDR 10.0.2.1, ROUTE 10.0.1.0/24 0, \
                 ROUTE 10.0.2.0/24 1, ROUTE 192.168.0.0/16 10.0.2.2 1, NOROUTE 2);\n\
                 c0 [3] -> fwd; c1 [3] -> fwd;";
    let cfg = base
        .replace(chain, fused)
        .replace(" ip, ip6, -)", " ip checked, ip6, -)")
        + "fwd [0] -> rw0; fwd [1] -> rw1; fwd [2] -> rt; fwd [3] -> rt;\n";
    let pool = Pool::new(4096);
    let mut env = Env::new();
    let mut r = runner(
        &cfg,
        &mut env,
        pool.clone(),
        MemDevice::cycling("eth0", mix),
        MemDevice::cycling("eth1", vec![]),
        64,
    );
    for _ in 0..200 {
        r.poll();
    }
    let (rx, allocs) = counted(|| {
        let mut rx = 0;
        for _ in 0..5000 {
            rx += r.poll();
        }
        rx
    });
    assert_eq!(rx, 5000 * 64, "every poll received a full burst");
    assert_eq!(allocs, 0, "allocations on the fused path after warm-up");
    let cycles = 5200 * 64 / n_mix;
    let tx = r.devices()[0].stats().tx + r.devices()[1].stats().tx;
    // fwd, via B, back, the time exceeded, the unreachable, the echo
    // reply and fwd6 leave; the bad checksum is dropped by the classifier.
    assert!(tx >= cycles * 7, "sent {tx}");
    assert!(r.graph.dropped_at("c0", "bad_ip_checksum").unwrap_or(0) >= cycles);
    let fwd = r.graph.stats_of("fwd").expect("fwd");
    assert!(fwd.tx >= cycles * 6, "fwd emitted {}", fwd.tx);
    assert_eq!(r.graph.dropped("no_buffer"), 0);
    assert_eq!(r.graph.dropped("unprocessed"), 0);
}

/// The same for IPsec: every packet sealed by `EspEncap` and opened again
/// by `EspDecap` (IPv4 and IPv6 inner; one bypassed) in place, over
/// thousands of polls, without one allocation.
#[test]
fn no_allocation_per_packet_through_esp() {
    let mix = vec![
        build::udp4(R0, A, A4, B4, 64, 1000, 2000, b"sealed and opened"),
        build::udp6(R0, A, &v6(1, 2), &v6(2, 2), 64, 1, 2, b"six in four"),
        build::udp4(R0, A, A4, [192, 168, 1, 1], 64, 1000, 2000, b"bypass"),
        build::udp4(R0, A, A4, B4, 64, 1000, 2000, &[7u8; 1000]),
    ];
    let key = "00112233445566778899aabbccddeeff01020304";
    let cfg = format!(
        "in :: FromDevice(eth0); out :: ToDevice(eth1);\n\
         enc :: EspEncap(SPI 0x1001, KEY {key}, SRC 10.0.2.1, DST 10.0.2.2, MATCH 10.0.0.0/8 2001:db8::/32);\n\
         dec :: EspDecap(SA 0x1001 {key} WINDOW 1024 FROM 10.0.0.0/8 2001:db8::/32);\n\
         in -> enc; enc [0] -> dec; enc [1] -> out; enc [2] -> out; dec [0] -> out; dec [1] -> out;"
    );
    let pool = Pool::new(4096);
    let mut env = Env::new();
    let mut r = runner(
        &cfg,
        &mut env,
        pool.clone(),
        MemDevice::cycling("eth0", mix),
        MemDevice::cycling("eth1", vec![]),
        64,
    );
    for _ in 0..200 {
        r.poll();
    }
    let (rx, allocs) = counted(|| {
        let mut rx = 0;
        for _ in 0..3000 {
            rx += r.poll();
        }
        rx
    });
    assert_eq!(rx, 3000 * 64);
    assert_eq!(allocs, 0, "allocations on the ESP path after warm-up");
    let tx = r.devices()[1].stats().tx;
    assert_eq!(tx, 3200 * 64, "every packet came out");
    let dec = r.graph.find("dec").expect("dec");
    let mut opened = 0;
    if let Some(e) = r.graph.element(dec) {
        graph::Element::counters(e, &mut |k, v| {
            if k == "decrypted" {
                opened = v;
            }
        });
    }
    assert_eq!(opened, 3200 * 64 / 4 * 3, "three of four sealed and opened");
    assert_eq!(r.graph.total_drops(), 0);
}
