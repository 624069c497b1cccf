//! Per-element golden tests (issue 4: "for every element"): for each
//! element kind a small graph `FromDevice(inK) -> ELEMENT -> ToDevice(outK)`
//! (one ToDevice per output port, one FromDevice per input port), input
//! frames written to a pcap and read back, every output compared byte for
//! byte with frames the test builds independently (by `pkt::build` or by
//! hand below, checksums computed afresh), and the element's drops checked
//! for every reason (a reason not listed must be zero).
//!
//! Elements that need a routed packet (`anno.gw`) get an `Ip4Lookup` in
//! front of input 0 (`Case::pre`).

mod common;

use common::{golden, v6, write_pcap, A, A4, B, B4, R0, R04, R1, R14};
use elements::{AnyElement, Env};
use graph::{Element, Graph, Runner};
use pkt::build;
use pkt::checksum;
use pkt::hdr::arp::{ARP_REPLY, ARP_REQUEST};
use pkt::hdr::ether::BROADCAST;
use pkt::{Mac, MemDevice, Pool};

type Frame = Vec<u8>;

/// One table row.
struct Case {
    name: &'static str,
    /// The element as written in a config.
    elem: &'static str,
    /// Its input and output port counts.
    inputs: usize,
    outputs: usize,
    /// Elements put between FromDevice(in0) and input 0 (`"X -> Y"`).
    pre: &'static str,
    /// Polls: the frames injected before each, as (input port, frame).
    steps: Vec<Vec<(usize, Frame)>>,
    /// Expected frames per output port.
    want: Vec<Vec<Frame>>,
    /// Expected drops on the element.
    drops: Vec<(&'static str, u64)>,
    /// Expected element counters.
    counters: Vec<(&'static str, u64)>,
    /// EspEncap/EspDecap: the expected per-SA counters (SPI, packets,
    /// bytes, the drops that are not zero), checked when not empty.
    sas: Vec<SaWant>,
}

type SaWant = (Option<u32>, u64, u64, Vec<(&'static str, u64)>);

impl Case {
    fn new(name: &'static str, elem: &'static str, inputs: usize, outputs: usize) -> Case {
        Case {
            name,
            elem,
            inputs,
            outputs,
            pre: "",
            steps: Vec::new(),
            want: vec![Vec::new(); outputs],
            drops: Vec::new(),
            counters: Vec::new(),
            sas: Vec::new(),
        }
    }
    fn sas(mut self, s: Vec<SaWant>) -> Case {
        self.sas = s;
        self
    }
    /// All frames on input 0, one poll each.
    fn each(mut self, frames: Vec<Frame>) -> Case {
        self.steps = frames.into_iter().map(|f| vec![(0, f)]).collect();
        self
    }
    /// Frames injected together before one poll.
    fn burst(mut self, frames: Vec<(usize, Frame)>) -> Case {
        self.steps.push(frames);
        self
    }
    fn want(mut self, port: usize, frames: Vec<Frame>) -> Case {
        self.want[port] = frames;
        self
    }
    fn drops(mut self, d: &[(&'static str, u64)]) -> Case {
        self.drops = d.to_vec();
        self
    }
}

// Hand-built headers (not the element code) for the expected frames.

const ZERO: Mac = Mac([0; 6]);

fn eth(dst: Mac, src: Mac, ty: u16, l3: &[u8]) -> Frame {
    let mut f = Vec::new();
    f.extend_from_slice(&dst.0);
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&ty.to_be_bytes());
    f.extend_from_slice(l3);
    f
}

/// IPv4 header (no options) + payload, header checksum computed afresh.
fn ip4(tos: u8, id: u16, ttl: u8, proto: u8, src: [u8; 4], dst: [u8; 4], pl: &[u8]) -> Frame {
    let mut h = vec![0x45, tos];
    h.extend_from_slice(&((20 + pl.len()) as u16).to_be_bytes());
    h.extend_from_slice(&id.to_be_bytes());
    h.extend_from_slice(&[0, 0, ttl, proto, 0, 0]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(pl);
    h
}

fn ip6(hlim: u8, next: u8, src: &[u8; 16], dst: &[u8; 16], pl: &[u8]) -> Frame {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(pl.len() as u16).to_be_bytes());
    h.extend_from_slice(&[next, hlim]);
    h.extend_from_slice(src);
    h.extend_from_slice(dst);
    h.extend_from_slice(pl);
    h
}

/// ICMP message: type, code, the 4 "rest" bytes, body; checksum over it
/// (plus the IPv6 pseudo-header when `v6` gives the addresses).
fn icmp(ty: u8, code: u8, rest: [u8; 4], body: &[u8], v6: Option<(&[u8; 16], &[u8; 16])>) -> Frame {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(body);
    let c = match v6 {
        None => checksum::checksum(&m),
        Some((s, d)) => checksum::finish(checksum::add(
            checksum::pseudo6(s, d, 58, m.len() as u32),
            &m,
        )),
    };
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// The IP datagram inside a frame (without Ethernet padding).
fn datagram4(f: &[u8]) -> &[u8] {
    let tl = usize::from(u16::from_be_bytes([f[16], f[17]]));
    &f[14..14 + tl]
}

fn datagram6(f: &[u8]) -> &[u8] {
    let pl = usize::from(u16::from_be_bytes([f[18], f[19]]));
    &f[14..14 + 40 + pl]
}

/// The ICMP error a router at `src` sends about `orig` (RFC 792 / RFC 1812
/// §4.3.2.3: TOS 0xc0, TTL 64, quoting the datagram whole when short),
/// before routing (MAC addresses zero).
fn icmp4_err(src: [u8; 4], ty: u8, code: u8, orig: &[u8]) -> Frame {
    let q = datagram4(orig);
    let dst = [q[12], q[13], q[14], q[15]];
    let m = icmp(ty, code, [0; 4], q, None);
    eth(ZERO, ZERO, 0x0800, &ip4(0xc0, 0, 64, 1, src, dst, &m))
}

fn icmp6_err(src: &[u8; 16], ty: u8, code: u8, orig: &[u8]) -> Frame {
    let q = datagram6(orig);
    let dst: [u8; 16] = q[8..24].try_into().unwrap();
    let m = icmp(ty, code, [0; 4], q, Some((src, &dst)));
    eth(ZERO, ZERO, 0x86dd, &ip6(64, 58, src, &dst, &m))
}

fn udp4(src: [u8; 4], dst: [u8; 4], ttl: u8, dport: u16) -> Frame {
    build::udp4(R0, A, src, dst, ttl, 1000, dport, b"golden")
}

fn udp6(src: &[u8; 16], dst: &[u8; 16], hlim: u8) -> Frame {
    build::udp6(R0, A, src, dst, hlim, 1000, 2000, b"golden6")
}

fn with_ttl(mut f: Frame, ttl: u8) -> Frame {
    // Rebuild the IPv4 header checksum from scratch after the change.
    f[22] = ttl;
    f[24..26].fill(0);
    let c = checksum::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

fn arp_req(from: Mac, spa: [u8; 4], tpa: [u8; 4]) -> Frame {
    build::arp(BROADCAST, from, ARP_REQUEST, from, spa, ZERO, tpa)
}

fn other_ether() -> Frame {
    build::pad60(eth(R0, A, 0x88b5, b"local experimental"))
}

/// The frames a scheduler emits: replays stride scheduling (Waldspurger)
/// with `tickets` over full queues of `n[i]` packets, smallest pass first,
/// ties to the lower input.
fn stride_order(tickets: &[u64], n: &[usize]) -> Vec<(usize, usize)> {
    let stride: Vec<u64> = tickets.iter().map(|t| (1 << 20) / t).collect();
    let mut pass = vec![0u64; tickets.len()];
    let mut sent = vec![0usize; tickets.len()];
    let mut order = Vec::new();
    while let Some(k) = (0..tickets.len())
        .filter(|&k| sent[k] < n[k])
        .min_by_key(|&k| (pass[k], k))
    {
        order.push((k, sent[k]));
        sent[k] += 1;
        pass[k] += stride[k];
    }
    order
}

fn seq(input: usize, i: usize) -> Frame {
    build::udp4(
        R0,
        A,
        A4,
        B4,
        64,
        1000 + input as u16,
        2000 + i as u16,
        b"sched",
    )
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let (a6, b6, r6) = (v6(1, 2), v6(2, 2), v6(1, 1));

    // Classifier: first match wins; unmatched frames are counted.
    let (arp, u4, u6) = (
        arp_req(A, A4, R04),
        udp4(A4, B4, 64, 53),
        udp6(&a6, &b6, 64),
    );
    v.push(
        Case::new(
            "classifier",
            "Classifier(arp, ip udp dst port 53, ip6)",
            1,
            3,
        )
        .each(vec![arp.clone(), u4.clone(), u6.clone(), other_ether()])
        .want(0, vec![arp])
        .want(1, vec![u4.clone()])
        .want(2, vec![u6])
        .drops(&[("no_match", 1)]),
    );
    v.push(
        Case::new("classifier_default", "Classifier(ip6, -)", 1, 2)
            .each(vec![u4.clone(), other_ether()])
            .want(1, vec![u4, other_ether()]),
    );

    // CheckIpHeader: RFC 1812 §5.2.2 / §5.3.7.
    let good = udp4(A4, B4, 64, 53);
    let mut bad_sum = good.clone();
    bad_sum[24] ^= 0xff;
    let mut too_long = good.clone();
    too_long[16..18].copy_from_slice(&200u16.to_be_bytes());
    let too_long = with_ttl(too_long, 64);
    v.push(
        Case::new("check_ip", "CheckIpHeader", 1, 1)
            .each(vec![
                good.clone(),
                bad_sum,
                udp4([127, 0, 0, 1], B4, 64, 53),
                udp4([224, 0, 0, 1], B4, 64, 53),
                too_long,
                udp6(&a6, &b6, 64),
            ])
            .want(0, vec![good])
            .drops(&[
                ("bad_ip_checksum", 1),
                ("bad_ip_source", 2),
                ("bad_ip_header", 1),
                ("bad_ether", 1),
            ]),
    );

    // CheckIp6Header: RFC 8200 §3, RFC 4291 §2.5.3.
    let good6 = udp6(&a6, &b6, 64);
    let mut long6 = good6.clone();
    long6[18..20].copy_from_slice(&900u16.to_be_bytes());
    let mut mcast = [0u8; 16];
    mcast[0] = 0xff;
    mcast[1] = 0x02;
    mcast[15] = 1;
    let mut lo = [0u8; 16];
    lo[15] = 1;
    v.push(
        Case::new("check_ip6", "CheckIp6Header", 1, 1)
            .each(vec![
                good6.clone(),
                long6,
                udp6(&mcast, &b6, 64),
                udp6(&a6, &lo, 64),
                udp4(A4, B4, 64, 1),
            ])
            .want(0, vec![good6])
            .drops(&[
                ("bad_ip6_header", 1),
                ("bad_ip6_address", 2),
                ("bad_ether", 1),
            ]),
    );

    // Ip4Lookup: longest match picks the port; NOROUTE catches the rest.
    let (near, via, far) = (
        udp4(A4, [10, 0, 2, 9], 64, 1),
        udp4(A4, [192, 168, 7, 7], 64, 1),
        udp4(A4, [8, 8, 8, 8], 64, 1),
    );
    let near_in_16 = udp4(A4, [192, 168, 2, 1], 64, 1);
    v.push(
        Case::new(
            "ip4_lookup",
            "Ip4Lookup(ROUTE 192.168.0.0/16 10.0.2.2 1, ROUTE 192.168.2.0/24 0, \
             ROUTE 10.0.2.0/24 0, NOROUTE 2)",
            1,
            3,
        )
        .each(vec![
            near.clone(),
            via.clone(),
            far.clone(),
            near_in_16.clone(),
        ])
        .want(0, vec![near.clone(), near_in_16])
        .want(1, vec![via.clone()])
        .want(2, vec![far.clone()]),
    );
    v.push(
        Case::new("ip4_lookup_noroute", "Ip4Lookup(ROUTE 10.0.2.0/24 0)", 1, 1)
            .each(vec![near.clone(), far, arp_req(A, A4, R04)])
            .want(0, vec![near])
            .drops(&[("no_route", 1), ("bad_ip_header", 1)]),
    );

    // Ip6Lookup.
    let (n6, f6) = (udp6(&a6, &v6(2, 9), 64), udp6(&a6, &v6(0x77, 1), 64));
    v.push(
        Case::new(
            "ip6_lookup",
            "Ip6Lookup(ROUTE 2001:db8:2::/64 0, ROUTE 2001:db8::/32 2001:db8:2::2 1)",
            1,
            2,
        )
        .each(vec![n6.clone(), f6.clone(), udp6(&a6, &[0x30; 16], 64)])
        .want(0, vec![n6])
        .want(1, vec![f6])
        .drops(&[("no_route", 1)]),
    );

    // DecIpTtl: RFC 1812 §5.3.1 decrement; TTL <= 1 becomes ICMP time
    // exceeded from the arrival port's address (§4.3.2.4), except about an
    // ICMP error or a multicast (§4.3.2.7).
    let expiring = udp4(A4, B4, 1, 7);
    let err_about_err = build::pad60(eth(
        R0,
        A,
        0x0800,
        &ip4(0, 9, 1, 1, A4, B4, &icmp(3, 1, [0; 4], &[0; 28], None)),
    ));
    v.push(
        Case::new("dec_ip_ttl", "DecIpTtl(SRC 10.0.1.1)", 1, 2)
            .each(vec![
                udp4(A4, B4, 64, 7),
                expiring.clone(),
                err_about_err,
                udp4(A4, [239, 1, 1, 1], 1, 7),
                udp6(&a6, &b6, 64),
            ])
            .want(0, vec![udp4(A4, B4, 63, 7)])
            .want(1, vec![icmp4_err(R04, 11, 0, &expiring)])
            .drops(&[("icmp_suppressed", 2), ("bad_ip_header", 1)]),
    );
    v.push(
        Case::new("dec_ip_ttl_nosrc", "DecIpTtl", 1, 2)
            .each(vec![expiring.clone()])
            .drops(&[("ttl_expired", 1)]),
    );
    let exp6 = udp6(&a6, &b6, 1);
    v.push(
        Case::new("dec_ip6_hlim", "DecIp6HopLimit(SRC 2001:db8:1::1)", 1, 2)
            .each(vec![
                udp6(&a6, &b6, 64),
                exp6.clone(),
                udp6(&a6, &mcast, 1),
                udp4(A4, B4, 64, 7),
            ])
            .want(0, vec![udp6(&a6, &b6, 63)])
            .want(1, vec![icmp6_err(&r6, 3, 0, &exp6)])
            .drops(&[("icmp_suppressed", 1), ("bad_ip6_header", 1)]),
    );

    // IcmpError: any packet becomes the configured error to its sender.
    let noroute = udp4(A4, [8, 8, 8, 8], 64, 53);
    let noroute6 = udp6(&a6, &v6(0x77, 1), 64);
    v.push(
        Case::new(
            "icmp_error4",
            "IcmpError(SRC 10.0.1.1, TYPE 3, CODE 1)",
            1,
            1,
        )
        .each(vec![noroute.clone(), udp4(A4, [255, 255, 255, 255], 64, 1)])
        .want(0, vec![icmp4_err(R04, 3, 1, &noroute)])
        .drops(&[("icmp_suppressed", 1)]),
    );
    v.push(
        Case::new(
            "icmp_error6",
            "IcmpError(SRC 2001:db8:1::1, TYPE 1, CODE 0)",
            1,
            1,
        )
        .each(vec![noroute6.clone()])
        .want(0, vec![icmp6_err(&r6, 1, 0, &noroute6)]),
    );

    // IcmpEcho: RFC 792 / RFC 4443 §4.1 replies, addresses and MACs
    // swapped, TTL/hop limit 64, fresh checksum.
    let ping = build::ping4(R0, A, A4, R04, 60, 7, 3, b"hello");
    let reply = build::pad60(eth(
        A,
        R0,
        0x0800,
        &ip4(
            0,
            0,
            64,
            1,
            R04,
            A4,
            &icmp(0, 0, [0, 7, 0, 3], b"hello", None),
        ),
    ));
    let ping6 = build::ping6(R0, A, &a6, &r6, 60, 9, 4, b"hello6");
    let reply6 = eth(
        A,
        R0,
        0x86dd,
        &ip6(
            64,
            58,
            &r6,
            &a6,
            &icmp(129, 0, [0, 9, 0, 4], b"hello6", Some((&r6, &a6))),
        ),
    );
    let other = build::ping4(R0, A, A4, B4, 60, 7, 3, b"not me");
    v.push(
        Case::new(
            "icmp_echo",
            "IcmpEcho(ADDR 10.0.1.1, ADDR 2001:db8:1::1)",
            1,
            2,
        )
        .each(vec![ping.clone(), ping6.clone(), other.clone()])
        .want(0, vec![reply.clone(), reply6.clone()])
        .want(1, vec![other.clone()]),
    );

    // EtherRewrite: static neighbour, ARP resolution with hold queue, ARP
    // and ND answers (RFC 826, RFC 4861 §7.2.4).
    let n3 = Mac([2, 0, 0, 0, 2, 3]);
    let to_n3 = udp4(A4, [10, 0, 2, 3], 64, 1);
    let to_b = udp4(A4, B4, 64, 1);
    let ns = build::ns6(B, &b6, &v6(2, 1));
    let mut na_icmp = vec![0xe0, 0, 0, 0];
    na_icmp.extend_from_slice(&v6(2, 1));
    na_icmp.extend_from_slice(&[2, 1]);
    na_icmp.extend_from_slice(&R1.0);
    let na = eth(
        B,
        R1,
        0x86dd,
        &ip6(
            255,
            58,
            &v6(2, 1),
            &b6,
            &icmp(
                136,
                0,
                [0xe0, 0, 0, 0],
                &na_icmp[4..],
                Some((&v6(2, 1), &b6)),
            ),
        ),
    );
    let mut bad_arp = arp_req(A, A4, R14);
    bad_arp[14] = 7; // hardware type 0x0701: not Ethernet
    let mut rw = Case::new(
        "ether_rewrite",
        "EtherRewrite(MAC 02:00:00:00:00:02, IP 10.0.2.1, IP6 2001:db8:2::1, \
         NEIGH 10.0.2.3 02:00:00:00:02:03)",
        2,
        1,
    )
    .want(
        0,
        vec![
            build::udp4(n3, R1, A4, [10, 0, 2, 3], 64, 1000, 1, b"golden"),
            arp_req(R1, R14, B4),
            build::udp4(B, R1, A4, B4, 64, 1000, 1, b"golden"),
            build::arp(A, R1, ARP_REPLY, R1, R14, A, A4),
            na,
        ],
    )
    .drops(&[("not_for_us", 1), ("bad_arp", 1)]);
    rw.pre = "Ip4Lookup(ROUTE 10.0.2.0/24 0)";
    rw.steps = vec![
        vec![(0, to_n3)],
        vec![(0, to_b)],
        vec![(1, build::arp(R1, B, ARP_REPLY, B, B4, R1, R14))],
        vec![(1, arp_req(A, A4, R14))],
        vec![(1, ns)],
        vec![(1, bad_arp)],
    ];
    // Static 10.0.2.3; learned B (reply), A (request to us), B6 (NS).
    rw.counters = vec![("neighbours", 4), ("held", 0), ("requests", 1)];
    v.push(rw);

    // Queue: capacity bounds it, BURST paces it, FIFO order.
    let q: Vec<Frame> = (0..4).map(|i| seq(0, i)).collect();
    let mut qc = Case::new("queue", "Queue(CAPACITY 2, BURST 1)", 1, 1)
        .burst(q.iter().map(|f| (0, f.clone())).collect())
        .want(0, q[..2].to_vec())
        .drops(&[("queue_full", 2)]);
    qc.counters = vec![("length", 0), ("highwater", 2)];
    v.push(qc);

    // Schedulers.
    let a: Vec<Frame> = (0..8).map(|i| seq(0, i)).collect();
    let b: Vec<Frame> = (0..8).map(|i| seq(1, i)).collect();
    let frames_of = |order: &[(usize, usize)]| -> Vec<Frame> {
        order
            .iter()
            .map(|&(k, i)| if k == 0 { a[i].clone() } else { b[i].clone() })
            .collect()
    };
    let mut rr = Case::new("round_robin", "RoundRobinSched(INPUTS 2)", 2, 1)
        .burst(vec![
            (0, a[0].clone()),
            (0, a[1].clone()),
            (0, a[2].clone()),
            (1, b[0].clone()),
        ])
        .want(0, frames_of(&[(0, 0), (1, 0), (0, 1), (0, 2)]));
    rr.counters = vec![("sent_0", 3), ("sent_1", 1)];
    v.push(rr);
    let all: Vec<(usize, Frame)> = a
        .iter()
        .map(|f| (0, f.clone()))
        .chain(b.iter().map(|f| (1, f.clone())))
        .collect();
    let order = stride_order(&[3, 1], &[8, 8]);
    // 3:1 over the first 8 packets while both inputs are backlogged.
    assert_eq!(order[..8].iter().filter(|x| x.0 == 0).count(), 6);
    v.push(
        Case::new("stride", "StrideSched(TICKETS 3 1)", 2, 1)
            .burst(all)
            .want(0, frames_of(&order)),
    );
    // PsSched batching throttle: input 1 waits until it holds BATCH 4
    // packets (its DELAY is far longer than the test); QUANTUM 2.
    let mut ps = Case::new(
        "ps_sched",
        "PsSched(TICKETS 1 1, BATCH 1 4, DELAY_US 0 100000000, QUANTUM 2)",
        2,
        1,
    )
    .burst(vec![
        (0, a[0].clone()),
        (0, a[1].clone()),
        (0, a[2].clone()),
        (1, b[0].clone()),
        (1, b[1].clone()),
        (1, b[2].clone()),
    ])
    .burst(vec![(1, b[3].clone())])
    // Input 1 becomes active with 4 packets and sends one quantum; the
    // 2 left are below its batch again and wait for more (or the delay).
    .want(0, frames_of(&[(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]));
    ps.counters = vec![("sent_0", 3), ("sent_1", 2), ("length", 2)];
    v.push(ps);

    // Counter, Discard, Tee, PortFilter.
    let three = vec![seq(0, 0), ping.clone(), udp6(&a6, &b6, 64)];
    let bytes: usize = three.iter().map(Vec::len).sum();
    let mut cnt = Case::new("counter", "Counter", 1, 1)
        .each(three.clone())
        .want(0, three.clone());
    cnt.counters = vec![("packets", 3), ("bytes", bytes as u64)];
    v.push(cnt);
    v.push(
        Case::new("discard", "Discard", 1, 0)
            .each(three.clone())
            .drops(&[("discarded", 3)]),
    );
    v.push(
        Case::new("tee", "Tee(3)", 1, 3)
            .each(three.clone())
            .want(0, three.clone())
            .want(1, three.clone())
            .want(2, three),
    );
    let tcp = |dport: u16| build::tcp4(R0, A, A4, B4, 64, 40000, dport, 0x02, b"");
    v.push(
        Case::new(
            "port_filter",
            "PortFilter(deny udp dst 53, allow tcp dst 1-1023, DEFAULT deny)",
            1,
            1,
        )
        .each(vec![
            udp4(A4, B4, 64, 53),
            tcp(80),
            tcp(8080),
            udp4(A4, B4, 64, 123),
        ])
        .want(0, vec![tcp(80)])
        .drops(&[("filtered", 3)]),
    );
    v.push(
        Case::new("port_filter_allow", "PortFilter(deny udp dst 50-60)", 1, 1)
            .each(vec![
                udp4(A4, B4, 64, 53),
                udp4(A4, B4, 64, 61),
                other_ether(),
            ])
            .want(0, vec![udp4(A4, B4, 64, 61), other_ether()])
            .drops(&[("filtered", 1)]),
    );
    fabric_cases(&mut v);
    fabric_neighbour_cases(&mut v);
    esp_cases(&mut v);
    v
}

/// The golden cases' ESP key: 16 key bytes 0x11, salt a1b2c3d4.
const ESP_KEY: [u8; 16] = [0x11; 16];
const ESP_SALT: [u8; 4] = [0xa1, 0xb2, 0xc3, 0xd4];

/// An ESP tunnel-mode packet built by hand from RFC 4303 §2 and RFC 4106
/// §3-5 (not by crate `ipsec`): outer IPv4 (TTL 64, id = low bits of the
/// sequence number), SPI, sequence number, IV = the 64-bit sequence
/// number, the inner packet, padding 1, 2, 3.. to 4 bytes, pad length,
/// next header, then the 16-byte GCM tag over AAD = SPI || sequence.
#[allow(clippy::too_many_arguments)]
fn esp4(
    src: [u8; 4],
    dst: [u8; 4],
    spi: u32,
    seq: u32,
    inner: &[u8],
    next: u8,
    tos: u8,
    key: [u8; 16],
) -> Frame {
    use aes_gcm::aead::AeadInPlace;
    use aes_gcm::KeyInit;
    let pad = (4 - (inner.len() + 2) % 4) % 4;
    let mut plain = inner.to_vec();
    plain.extend((1..=pad).map(|b| b as u8));
    plain.extend_from_slice(&[pad as u8, next]);
    let mut aad = spi.to_be_bytes().to_vec();
    aad.extend_from_slice(&seq.to_be_bytes());
    let iv = u64::from(seq).to_be_bytes();
    let nonce: Vec<u8> = ESP_SALT.iter().chain(&iv).copied().collect();
    let c = aes_gcm::Aes128Gcm::new(&key.into());
    let tag = c
        .encrypt_in_place_detached(aes_gcm::Nonce::from_slice(&nonce), &aad, &mut plain)
        .unwrap();
    let mut esp = aad;
    esp.extend_from_slice(&iv);
    esp.extend_from_slice(&plain);
    esp.extend_from_slice(&tag);
    ip4(tos, seq as u16, 64, 50, src, dst, &esp)
}

/// EspEncap: selected IPv4 and IPv6 packets sealed toward 10.0.2.9 with
/// sequence numbers 1, 2; the others on the bypass outputs untouched;
/// every drop reason once. EspDecap: the kernel-shaped packets of two SAs
/// opened (IPv4 and IPv6 inner), and each drop reason once.
fn esp_cases(v: &mut Vec<Case>) {
    const TUN: [u8; 4] = [10, 0, 2, 9];
    let k = ESP_KEY;
    let (a6, c6) = (v6(1, 2), v6(3, 1));
    let m4 = udp4(A4, [10, 0, 3, 5], 64, 53);
    let m6 = udp6(&a6, &c6, 64);
    let (o4, o6) = (udp4(A4, B4, 64, 53), udp6(&a6, &v6(2, 2), 64));
    let mut tos = m4.clone();
    tos[15] = 0xb8; // DSCP EF: copied to the outer header
    let tos = with_ttl(tos, 64);
    let big = build::udp4(R0, A, A4, [10, 0, 3, 5], 64, 1, 2, &[0u8; 300]);
    let huge = build::udp4(R0, A, A4, [10, 0, 3, 5], 64, 1, 2, &[0u8; 1870]);
    v.push(
        Case::new(
            "esp_encap",
            "EspEncap(SPI 0x1001, KEY 0x11111111111111111111111111111111a1b2c3d4, SRC 10.0.2.1, \
             DST 10.0.2.9, MATCH 10.0.3.0/24 2001:db8:3::/64, MTU 300)",
            1,
            3,
        )
        .each(vec![
            m4.clone(),
            m6.clone(),
            o4.clone(),
            o6.clone(),
            other_ether(),
            big,
            tos.clone(),
        ])
        .want(
            0,
            vec![
                eth(
                    ZERO,
                    ZERO,
                    0x0800,
                    &esp4(R14, TUN, 0x1001, 1, datagram4(&m4), 4, 0, k),
                ),
                eth(
                    ZERO,
                    ZERO,
                    0x0800,
                    &esp4(R14, TUN, 0x1001, 2, datagram6(&m6), 41, 0, k),
                ),
                eth(
                    ZERO,
                    ZERO,
                    0x0800,
                    &esp4(R14, TUN, 0x1001, 3, datagram4(&tos), 4, 0xb8, k),
                ),
            ],
        )
        .want(1, vec![o4])
        .want(2, vec![o6])
        .drops(&[("not_ip", 1), ("too_big", 1)])
        .sas(vec![(
            Some(0x1001),
            3,
            (datagram4(&m4).len() + datagram6(&m6).len() + datagram4(&tos).len()) as u64,
            vec![("not_ip", 1), ("too_big", 1)],
        )]),
    );
    v.push(
        Case::new(
            "esp_encap_limits",
            "EspEncap(SPI 0x1001, KEY 0x11111111111111111111111111111111a1b2c3d4, SRC 10.0.2.1, \
             DST 10.0.2.9, MATCH 10.0.3.0/24, MTU 9216, SEQ 0xffffffff)",
            1,
            3,
        )
        .each(vec![m4.clone(), huge])
        .drops(&[("seq_exhausted", 1), ("no_room", 1)]),
    );
    // Received on a port with MACs R1 <- B.
    let rx = |ip: Frame| eth(R1, B, 0x0800, &ip);
    let i4 = datagram4(&m4).to_vec();
    let i6 = datagram6(&m6).to_vec();
    let good4 = rx(esp4(TUN, R14, 0x2001, 1, &i4, 4, 0, k));
    let i4b = datagram4(&udp4([10, 0, 4, 1], A4, 64, 9)).to_vec();
    let mut forged = rx(esp4(TUN, R14, 0x2001, 3, &i4, 4, 0, k));
    forged[60] ^= 0x80;
    let mut short = rx(ip4(
        0,
        0,
        64,
        50,
        TUN,
        R14,
        &[0, 0, 0x20, 0x01, 0, 0, 0, 7, 1, 2, 3, 4],
    ));
    short.truncate(14 + 20 + 12);
    let bad_next = rx(esp4(TUN, R14, 0x2001, 4, &i4, 17, 0, k));
    let stranger = udp4([10, 0, 9, 9], [10, 0, 1, 2], 64, 53);
    let policy = rx(esp4(TUN, R14, 0x2001, 5, datagram4(&stranger), 4, 0, k));
    let dummy = rx(esp4(TUN, R14, 0x2001, 6, &i4, 59, 0, k));
    let mut frag = rx(esp4(TUN, R14, 0x2001, 7, &i4, 4, 0, k));
    frag[20] = 0x20; // more fragments (checksum aside: a fragment first)
    v.push(
        Case::new(
            "esp_decap",
            "EspDecap(SA 0x2001 0x11111111111111111111111111111111a1b2c3d4 WINDOW 128 \
             FROM 10.0.1.0/24 2001:db8:1::/64, SA 0x2002 0x22222222222222222222222222222222a1b2c3d4 FROM 10.0.4.0/24)",
            1,
            2,
        )
        .each(vec![
            good4.clone(),
            rx(esp4(TUN, R14, 0x2001, 2, &i6, 41, 0, k)),
            rx(esp4(TUN, R14, 0x2002, 1, &i4b, 4, 0, [0x22; 16])),
            good4,
            forged,
            rx(esp4(TUN, R14, 0x3000, 1, &i4, 4, 0, k)),
            short,
            bad_next,
            policy,
            dummy,
            frag,
        ])
        .want(
            0,
            vec![
                eth(R1, B, 0x0800, &i4),
                eth(R1, B, 0x0800, &i4b),
            ],
        )
        .want(1, vec![eth(R1, B, 0x86dd, &i6)])
        .drops(&[
            ("replay", 1),
            ("auth_failed", 1),
            ("no_sa", 1),
            ("too_short", 1),
            ("malformed", 2),
            ("policy", 1),
            ("dummy", 1),
        ])
        // Per SA: what names SA 0x2001 (replayed, forged, too short
        // after its SPI, bad next header, policy, dummy) is its drop;
        // the unknown SPI and the fragment (no SPI read) name none.
        .sas(vec![
            (
                Some(0x2001),
                2,
                (i4.len() + i6.len()) as u64,
                vec![
                    ("too_short", 1),
                    ("malformed", 1),
                    ("replay", 1),
                    ("auth_failed", 1),
                    ("policy", 1),
                    ("dummy", 1),
                ],
            ),
            (Some(0x2002), 1, i4b.len() as u64, vec![]),
            (None, 0, 0, vec![("malformed", 1), ("no_sa", 1)]),
        ]),
    );
}

/// A fabric datagram built by hand from `docs/cluster-fabric.md` (not by
/// crate `cluster`'s writer): GENEVE with C set, protocol 0x6558, VNI 0,
/// our option (class 0xFFF1, type 0xC5) with its fixed part and one entry
/// per frame, then the frames.
fn fabric_dgram(
    kind: u8,
    egress: u16,
    source: u16,
    flags: u8,
    frames: &[(u8, u8, &[u8])],
) -> Frame {
    let words = 2 + frames.len();
    let mut d = vec![(1 + words) as u8, 0x40, 0x65, 0x58, 0, 0, 0, 0];
    d.extend_from_slice(&[0xff, 0xf1, 0xc5, words as u8]);
    d.extend_from_slice(&[kind, frames.len() as u8]);
    d.extend_from_slice(&egress.to_be_bytes());
    d.extend_from_slice(&source.to_be_bytes());
    d.extend_from_slice(&[flags, 0]);
    for (port, queue, f) in frames {
        d.extend_from_slice(&[*port, *queue]);
        d.extend_from_slice(&(f.len() as u16).to_be_bytes());
    }
    for (_, _, f) in frames {
        d.extend_from_slice(f);
    }
    d
}

fn fabric_cases(v: &mut Vec<Case>) {
    let (f1, f2, f3) = (
        udp4(A4, B4, 64, 53),
        udp4(A4, B4, 64, 54),
        udp4(A4, B4, 64, 55),
    );
    // Ingress: three frames in one poll, packing degree 2: one datagram of
    // two frames, one of one; direct to node 1, no transit flag.
    v.push(
        Case::new(
            "fabric_encap",
            "FabricEncap(NODE 0, NODES 2, PACKING 2, TO 1, PORT 1, QUEUE 2)",
            1,
            1,
        )
        .burst(vec![(0, f1.clone()), (0, f2.clone()), (0, f3.clone())])
        .want(
            0,
            vec![
                fabric_dgram(0, 1, 0, 0, &[(1, 2, &f1), (1, 2, &f2)]),
                fabric_dgram(0, 1, 0, 0, &[(1, 2, &f3)]),
            ],
        ),
    );
    // In the daemon: the lookup's gateway (the route's next hop, a peer's
    // fabric address) names the egress node; port and queue tags are 0.
    let (to2, to_none) = (
        udp4(A4, [10, 0, 2, 9], 64, 1),
        udp4(A4, [10, 0, 9, 1], 64, 1),
    );
    let mut by_gw = Case::new(
        "fabric_encap_peer",
        "FabricEncap(NODE 0, NODES 3, PACKING 1, PEER 1 198.18.100.2, PEER 2 198.18.100.3)",
        1,
        1,
    )
    .each(vec![to2.clone(), to_none])
    .want(0, vec![fabric_dgram(0, 2, 0, 0, &[(0, 0, &to2)])])
    .drops(&[("bad_tag", 1)]);
    by_gw.pre = "Ip4Lookup(ROUTE 10.0.2.0/24 198.18.100.3 0, ROUTE 10.0.9.0/24 198.18.100.9 0)";
    v.push(by_gw);
    // NEIGHBOUR: each frame carries its neighbour at the egress after it
    // (the lookup's gateway; zero for a connected destination) and every
    // datagram the flag (bit 1); a frame without an egress tag (a lookup
    // with no fabric tag, and no TO) would leave the egress guessing:
    // dropped as bad_tag.
    let (via, conn) = (
        udp4(A4, [10, 0, 2, 9], 64, 1),
        udp4(A4, [10, 0, 3, 7], 64, 1),
    );
    let mut nbr = Case::new(
        "fabric_encap_neighbour",
        "FabricEncap(NODE 0, NODES 2, PACKING 1, TO 1, PORT 1, NEIGHBOUR true)",
        1,
        1,
    )
    .each(vec![via.clone(), conn.clone()])
    .want(
        0,
        vec![
            fabric_dgram(0, 1, 0, 2, &[(1, 0, &[&via[..], &[10, 0, 2, 2]].concat())]),
            fabric_dgram(0, 1, 0, 2, &[(1, 0, &[&conn[..], &[0, 0, 0, 0]].concat())]),
        ],
    );
    nbr.pre = "Ip4Lookup(ROUTE 10.0.2.0/24 10.0.2.2 0, ROUTE 10.0.3.0/24 0)";
    v.push(nbr);
    let mut untagged = Case::new(
        "fabric_encap_neighbour_untagged",
        "FabricEncap(NODE 0, NODES 3, PEER 1 198.18.100.2, NEIGHBOUR true)",
        1,
        1,
    )
    .each(vec![via.clone()])
    .drops(&[("bad_tag", 1)]);
    untagged.pre = "Ip4Lookup(ROUTE 10.0.2.0/24 198.18.100.2 0)";
    v.push(untagged);
    // Frames that came from the fabric (device 0 here) never go back in.
    v.push(
        Case::new(
            "fabric_encap_noloop",
            "FabricEncap(NODE 0, NODES 2, TO 1, NOLOOP 0)",
            1,
            1,
        )
        .each(vec![f1.clone()])
        .drops(&[("loop", 1)]),
    );
    // Node 1 with two ports: frames for it leave by their port tag; a
    // datagram in transit to node 0 is forwarded with the flag cleared; a
    // BECN goes to the control output; every drop reason once.
    let transit = fabric_dgram(0, 0, 2, 1, &[(0, 0, &f1)]);
    let mut becn = fabric_dgram(1, 0, 1, 0, &[]);
    becn[0] = 5;
    becn[1] = 0xc0;
    becn[11] = 4;
    becn[13] = 1;
    becn.extend_from_slice(&[1, 2, 0, 0, 0, 0, 0, 7]);
    let mut foreign = fabric_dgram(0, 1, 0, 0, &[(0, 0, &f1)]);
    foreign[8] = 0x01; // another class, still critical
    let mut bad_count = fabric_dgram(0, 1, 0, 0, &[(0, 0, &f1)]);
    bad_count[13] = 2;
    v.push(
        Case::new("fabric_decap", "FabricDecap(NODE 1, PORTS 2)", 1, 4)
            .each(vec![
                fabric_dgram(0, 1, 0, 0, &[(1, 2, &f1), (0, 2, &f2)]),
                fabric_dgram(0, 1, 0, 0, &[(1, 2, &f3)]),
                transit,
                becn.clone(),
                vec![0x40; 12],
                foreign,
                bad_count,
                fabric_dgram(0, 0, 2, 0, &[(0, 0, &f1)]),
                fabric_dgram(0, 1, 0, 0, &[(5, 0, &f1)]),
            ])
            .want(0, vec![f2.clone()])
            .want(1, vec![f1.clone(), f3])
            .want(2, vec![fabric_dgram(0, 0, 2, 0, &[(0, 0, &f1)])])
            .want(3, vec![becn])
            .drops(&[
                ("bad_geneve", 1),
                ("foreign_option", 1),
                ("bad_option", 1),
                ("not_for_us", 1),
                ("bad_port", 1),
            ]),
    );
}

/// The egress side of NEIGHBOUR: FabricDecap strips each frame's
/// neighbour (4 bytes after IPv4, 16 after IPv6) before the frame leaves
/// by its port tag, in place (one frame) or copied (packed); a trailer
/// that would eat the Ethernet header is refused as `bad_option`.
fn fabric_neighbour_cases(v: &mut Vec<Case>) {
    let (f4, g4) = (udp4(A4, B4, 64, 53), udp4(A4, B4, 64, 54));
    let f6 = udp6(&v6(1, 1), &v6(1, 2), 64);
    let t4 = [&f4[..], &[10, 0, 2, 9]].concat();
    let u4 = [&g4[..], &[0, 0, 0, 0]].concat();
    let t6 = [&f6[..], &v6(1, 9)[..]].concat();
    let mut short = vec![0u8; 16];
    short[12..14].copy_from_slice(&[0x86, 0xdd]);
    v.push(
        Case::new(
            "fabric_decap_neighbour",
            "FabricDecap(NODE 1, PORTS 2)",
            1,
            4,
        )
        .each(vec![
            fabric_dgram(0, 1, 0, 2, &[(1, 0, &t4)]),
            fabric_dgram(0, 1, 0, 2, &[(0, 0, &u4), (1, 0, &t6)]),
            fabric_dgram(0, 1, 0, 2, &[(0, 0, &short)]),
        ])
        .want(0, vec![g4])
        .want(1, vec![f4, f6])
        .drops(&[("bad_option", 1)]),
    );
}

/// Builds the graph for `c`, runs its steps, and checks it.
fn run_case(c: &Case) -> Result<(), String> {
    let mut cfg = format!("e :: {};\n", c.elem);
    for k in 0..c.inputs {
        cfg += &format!("in{k} :: FromDevice(in{k}); ");
        if k == 0 && !c.pre.is_empty() {
            cfg += &format!("in0 -> {} -> [0] e;\n", c.pre);
        } else {
            cfg += &format!("in{k} -> [{k}] e;\n");
        }
    }
    for k in 0..c.outputs {
        cfg += &format!("e [{k}] -> ToDevice(out{k});\n");
    }
    let mut devs: Vec<MemDevice> = (0..c.inputs)
        .map(|k| MemDevice::new(&format!("in{k}"), vec![]))
        .collect();
    devs.extend((0..c.outputs).map(|k| MemDevice::new(&format!("out{k}"), vec![])));
    let pool = Pool::new(512);
    let mut env = Env::new();
    let g: Graph<AnyElement> =
        Graph::from_str(&cfg, c.name, &mut env, pool.clone()).map_err(|e| format!("{e}\n{cfg}"))?;
    let mut r = Runner::new(g, devs, 64).map_err(|e| e.to_string())?;

    // Every input goes through a pcap file: the graph sees what the pcap
    // reader returns.
    for (s, step) in c.steps.iter().enumerate() {
        let frames: Vec<Frame> = step.iter().map(|x| x.1.clone()).collect();
        let path = write_pcap(&format!("golden_{}_in{s}.pcap", c.name), &frames);
        let read = pkt::pcap::read_frames(&std::fs::read(path).map_err(|e| e.to_string())?)
            .map_err(|e| format!("{e:?}"))?;
        if read != frames {
            return Err("pcap round trip changed the input".into());
        }
        for ((port, _), f) in step.iter().zip(read) {
            r.devices_mut()[*port].inject(f);
        }
        r.poll();
    }
    // Queues and schedulers release on later ticks.
    for _ in 0..8 {
        r.poll();
    }
    for k in 0..c.outputs {
        let got = r.devices_mut()[c.inputs + k].take_sent();
        golden(&format!("golden_{}_out{k}", c.name), &got, &c.want[k]);
    }
    let ei = r.graph.find("e").ok_or("no element e")?;
    let seen: Vec<(&str, u64)> = r.graph.drops_of(ei).collect();
    for &(name, n) in &seen {
        let want = c.drops.iter().find(|d| d.0 == name).map_or(0, |d| d.1);
        if n != want {
            return Err(format!("drops {name}: got {n}, want {want}"));
        }
    }
    for (name, _) in &c.drops {
        if !seen.iter().any(|(n, _)| n == name) {
            return Err(format!("drop reason {name} is not one of the element's"));
        }
    }
    let i = r.graph.find("e").ok_or("no element e")?;
    let mut got = Vec::new();
    if let Some(e) = r.graph.element(i) {
        e.counters(&mut |n, x| got.push((n, x)));
    }
    for (n, x) in &c.counters {
        if !got.contains(&(*n, *x)) {
            return Err(format!("counter {n}: want {x}, have {got:?}"));
        }
    }
    if !c.sas.is_empty() {
        let mut sas = Vec::new();
        match r.graph.element(i) {
            Some(AnyElement::EspEncap(e)) => e.sa_counters(&mut sas),
            Some(AnyElement::EspDecap(e)) => e.sa_counters(&mut sas),
            _ => return Err("per-SA counters expected of a non-ESP element".into()),
        }
        let have: Vec<SaWant> = sas
            .iter()
            .map(|s| {
                let mut d: Vec<_> = s.drops.iter().copied().filter(|d| d.1 > 0).collect();
                d.sort();
                (s.spi, s.packets, s.bytes, d)
            })
            .collect();
        let mut want = c.sas.clone();
        for w in &mut want {
            w.3.sort();
        }
        if have != want {
            return Err(format!("per-SA counters: got {have:?}, want {want:?}"));
        }
    }
    drop(r);
    if pool.available() != pool.capacity() {
        return Err(format!(
            "{} buffers not returned",
            pool.capacity() - pool.available()
        ));
    }
    Ok(())
}

#[test]
fn every_element_golden() {
    let cases = cases();
    let mut classes: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    for c in &cases {
        classes.push(c.elem.split('(').next().unwrap_or("").to_string());
        if let Err(e) = std::panic::catch_unwind(|| run_case(c))
            .unwrap_or_else(|_| Err("panicked (see above)".into()))
        {
            failures.push(format!("{}: {e}", c.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The table covers every packet-handling element kind.
    for k in [
        "Classifier",
        "CheckIpHeader",
        "CheckIp6Header",
        "Ip4Lookup",
        "Ip6Lookup",
        "DecIpTtl",
        "DecIp6HopLimit",
        "IcmpError",
        "IcmpEcho",
        "EtherRewrite",
        "Queue",
        "RoundRobinSched",
        "StrideSched",
        "PsSched",
        "Counter",
        "Discard",
        "Tee",
        "PortFilter",
        "EspEncap",
        "EspDecap",
    ] {
        assert!(classes.iter().any(|c| c == k), "no golden case for {k}");
    }
}

/// Negative control: a one-byte change in an expected frame must fail the
/// comparison, or the golden check proves nothing.
#[test]
fn golden_detects_a_changed_byte() {
    let mut c = cases()
        .into_iter()
        .find(|c| c.name == "dec_ip_ttl")
        .unwrap();
    c.name = "dec_ip_ttl_negative";
    c.want[1][0][40] ^= 1;
    let r = std::panic::catch_unwind(|| run_case(&c));
    assert!(r.is_err(), "a corrupted expected frame was accepted");
}
