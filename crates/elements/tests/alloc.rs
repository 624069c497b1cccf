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
