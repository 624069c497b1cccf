//! The XDP fast path's program run by the kernel (`BPF_PROG_TEST_RUN`,
//! bpf(2) command 10; needs root) on hand-made frames: one case per
//! verdict, with the frame as the program left it and the per-CPU counter
//! that moved. With no AF_XDP socket in the program's XSKMAP, packets for
//! the graph come back as `XDP_PASS`; forwarded ones as `XDP_REDIRECT`.
//! IPv4 and IPv6, each punt reason, and ECMP groups, whose member is the
//! one the element graph's flow hash (`pkt::hdr::flow::flow_hash`) picks.

use io::xdp::fast::{
    FastCounters, FastHop, FastMaps, FastOp, FastReason, Route4, Route6, LOCAL, MAX_MEMBERS,
    XDP_PASS, XDP_REDIRECT,
};

const PORT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0];
const NH_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0b, 0];
const OUT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 1];
const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0a, 0];

fn require_root() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "BPF_PROG_TEST_RUN on an XDP program needs root"
    );
}

/// RFC 1071 checksum of an IPv4 header.
fn csum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Ethernet + IPv4 (+ `opts` option bytes) + 8 bytes of UDP-ish payload.
fn frame(dst_mac: [u8; 6], ttl: u8, dst: [u8; 4], id: u16, opts: usize, frag: u16) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&SRC_MAC);
    f.extend_from_slice(&[0x08, 0x00]);
    let ihl = 5 + opts / 4;
    let total = (ihl * 4 + 8) as u16;
    let mut ip = vec![0x40 | ihl as u8, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&id.to_be_bytes());
    ip.extend_from_slice(&frag.to_be_bytes());
    ip.extend_from_slice(&[ttl, 17, 0, 0]);
    ip.extend_from_slice(&[198, 18, 1, 2]);
    ip.extend_from_slice(&dst);
    ip.extend(std::iter::repeat_n(1u8, opts));
    let c = csum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0x30, 0x39, 0x30, 0x39, 0, 8, 0, 0]);
    f
}

fn setup() -> FastMaps {
    require_root();
    let m = FastMaps::create(64, 2).expect("create the fast-path maps");
    m.set_port(1, 1).expect("DEVMAP slot 1 -> lo");
    let st = m.apply(&[
        FastOp::Set(
            Route4 {
                addr: u32::from_be_bytes([198, 18, 2, 0]),
                len: 24,
            },
            FastHop {
                slot: 1,
                dmac: NH_MAC,
                smac: OUT_MAC,
            },
        ),
        FastOp::Set(
            Route4 {
                addr: u32::from_be_bytes([198, 18, 1, 1]),
                len: 32,
            },
            FastHop {
                slot: LOCAL,
                dmac: [0; 6],
                smac: [0; 6],
            },
        ),
    ]);
    assert_eq!((st.set, st.failed), (2, 0), "{st:?}");
    m
}

fn delta(a: FastCounters, b: FastCounters) -> Vec<(&'static str, u64)> {
    FastReason::ALL
        .iter()
        .filter(|r| b.get(**r) != a.get(**r))
        .map(|r| (r.name(), b.get(*r) - a.get(*r)))
        .collect()
}

#[test]
fn forwards_with_ttl_checksum_and_macs() {
    let m = setup();
    let p = m
        .test_program(PORT_MAC)
        .expect("the verifier accepts the program");
    let before = m.counters().unwrap();
    let mut n = 0;
    // Every TTL the fast path forwards, ids spread so that the checksum
    // takes many values (including the carries of RFC 1624's cases).
    for ttl in 2..=255u8 {
        for id in [0u16, 1, 0x00ff, 0x7fff, 0xfeff, 0xffff, ttl as u16 * 257] {
            let f = frame(PORT_MAC, ttl, [198, 18, 2, 9], id, 0, 0x4000);
            let (v, out) = p.run(&f).unwrap();
            assert_eq!(v, XDP_REDIRECT, "ttl {ttl} id {id}");
            assert_eq!(out.len(), f.len());
            assert_eq!(&out[0..6], &NH_MAC);
            assert_eq!(&out[6..12], &OUT_MAC);
            assert_eq!(out[22], ttl - 1);
            let mut expect = f[14..34].to_vec();
            expect[8] = ttl - 1;
            expect[10] = 0;
            expect[11] = 0;
            let c = csum(&expect);
            assert_eq!(
                u16::from_be_bytes([out[24], out[25]]),
                c,
                "checksum, ttl {ttl} id {id}"
            );
            assert_eq!(csum(&out[14..34]), 0, "header sums to zero");
            assert_eq!(&out[26..], &f[26..], "addresses and payload untouched");
            n += 1;
        }
    }
    let after = m.counters().unwrap();
    assert_eq!(delta(before, after), vec![("forwarded", n)]);
}

#[test]
fn exceptions_go_to_the_graph_unchanged() {
    let m = setup();
    let p = m
        .test_program(PORT_MAC)
        .expect("the verifier accepts the program");
    let mut arp = frame([0xff; 6], 64, [198, 18, 2, 9], 1, 0, 0);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let mut bad_sum = frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0);
    bad_sum[25] ^= 1;
    // Total length one byte beyond the frame / below the header (with
    // the checksum fixed, so that only the length is wrong).
    let relen = |f: &mut Vec<u8>, len: u16| {
        f[16..18].copy_from_slice(&len.to_be_bytes());
        f[24..26].copy_from_slice(&[0, 0]);
        let c = csum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    };
    let mut truncated = frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0);
    let l = (truncated.len() - 14 + 1) as u16;
    relen(&mut truncated, l);
    let mut tiny = frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0);
    relen(&mut tiny, 19);
    let frame_src = |src: [u8; 4]| {
        let mut f = frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0);
        f[26..30].copy_from_slice(&src);
        f[24..26].copy_from_slice(&[0, 0]);
        let c = csum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    };
    let mut vlan = frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0);
    vlan[12..14].copy_from_slice(&[0x81, 0x00]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "options",
            frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 4, 0),
            "options",
        ),
        ("ttl 1", frame(PORT_MAC, 1, [198, 18, 2, 9], 1, 0, 0), "ttl"),
        ("ttl 0", frame(PORT_MAC, 0, [198, 18, 2, 9], 1, 0, 0), "ttl"),
        (
            "miss",
            frame(PORT_MAC, 64, [198, 18, 3, 9], 1, 0, 0),
            "no_route",
        ),
        (
            "to us",
            frame(PORT_MAC, 64, [198, 18, 1, 1], 1, 0, 0),
            "local",
        ),
        ("arp", arp, "other_mac"),
        ("vlan ethertype", vlan, "not_ip"),
        (
            "more fragments",
            frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0x2000),
            "fragment",
        ),
        (
            "offset",
            frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0x0001),
            "fragment",
        ),
        (
            "other mac",
            frame(NH_MAC, 64, [198, 18, 2, 9], 1, 0, 0),
            "other_mac",
        ),
        (
            "short",
            frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0)[..33].to_vec(),
            "short",
        ),
        ("bad checksum", bad_sum, "bad_header"),
        ("truncated", truncated, "bad_header"),
        ("total length 19", tiny, "bad_header"),
        ("source 127/8", frame_src([127, 0, 0, 1]), "bad_header"),
        ("source 0/8", frame_src([0, 1, 2, 3]), "bad_header"),
        ("multicast source", frame_src([224, 0, 0, 1]), "bad_header"),
    ];
    for (what, f, reason) in cases {
        let before = m.counters().unwrap();
        let (v, out) = p.run(&f).unwrap();
        assert_eq!(v, XDP_PASS, "{what}: to the graph (no socket: pass)");
        assert_eq!(out, f, "{what}: the graph gets the frame as it came");
        let after = m.counters().unwrap();
        assert_eq!(delta(before, after), vec![(reason, 1)], "{what}");
    }
}

#[test]
fn withdrawn_routes_go_to_the_graph() {
    let m = setup();
    let p = m.test_program(PORT_MAC).unwrap();
    let f = frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0);
    assert_eq!(p.run(&f).unwrap().0, XDP_REDIRECT);
    let r = Route4 {
        addr: u32::from_be_bytes([198, 18, 2, 0]),
        len: 24,
    };
    let st = m.apply(&[FastOp::Remove(r), FastOp::Remove(r)]);
    assert_eq!(
        (st.removed, st.failed),
        (2, 0),
        "an absent key counts as removed"
    );
    assert_eq!(m.lookup(u32::from_be_bytes([198, 18, 2, 9])), None);
    assert_eq!(p.run(&f).unwrap().0, XDP_PASS);
}

/// Many entries in one apply: batched when the kernel can, and every one
/// readable afterwards; the DEVMAP refuses slots beyond its size.
#[test]
fn batched_updates_land() {
    let m = setup();
    let ops: Vec<FastOp> = (0..3000u32)
        .map(|i| {
            FastOp::Set(
                Route4 {
                    addr: 0x0a00_0000 | (i << 8),
                    len: 24,
                },
                FastHop {
                    slot: 1,
                    dmac: [2, 0, 0, 0, (i >> 8) as u8, i as u8],
                    smac: OUT_MAC,
                },
            )
        })
        .collect();
    let big = FastMaps::create(4000, 2).unwrap();
    let st = big.apply(&ops);
    assert_eq!((st.set, st.failed), (3000, 0), "{st:?}");
    eprintln!("batched: {:?}, {st:?}", big.batched());
    if big.batched() == Some(true) {
        assert!(st.calls <= 3, "three batches of 1024: {st:?}");
    }
    for i in [0u32, 1, 1023, 1024, 2999] {
        let h = big.lookup(0x0a00_0005 | (i << 8)).expect("entry");
        assert_eq!(h.dmac[4..], [(i >> 8) as u8, i as u8]);
    }
    // A full map refuses the rest; they are counted, not lost silently.
    let small = FastMaps::create(10, 2).unwrap();
    let st = small.apply(ops.get(..20).unwrap());
    assert_eq!((st.set, st.failed), (10, 10), "{st:?}");
    assert!(m.set_port(2, 1).is_err());
}

const DST6: u128 = 0x2001_0db8_0113_0000_0000_0000_0000_0009;
const SRC6: u128 = 0x2001_0db8_0001_0000_0000_0000_0000_0002;
const OWN6: u128 = 0x2001_0db8_0001_0000_0000_0000_0000_0001;

/// Ethernet + IPv6 (next header `nh`, hop limit `hl`) + an 8-byte
/// UDP-ish header + 8 bytes.
fn frame6(dst_mac: [u8; 6], hl: u8, src: u128, dst: u128, nh: u8, sport: u16) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&SRC_MAC);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0, 0, 16, nh, hl]);
    f.extend_from_slice(&src.to_be_bytes());
    f.extend_from_slice(&dst.to_be_bytes());
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&[0x30, 0x39, 0, 16, 0, 0]);
    f.extend_from_slice(&[0x41; 8]);
    f
}

fn setup6() -> FastMaps {
    let m = setup();
    let st = m.apply(&[
        FastOp::Set6(
            Route6 {
                addr: DST6,
                len: 48,
            },
            FastHop {
                slot: 1,
                dmac: NH_MAC,
                smac: OUT_MAC,
            },
        ),
        FastOp::Set6(
            Route6 {
                addr: OWN6,
                len: 128,
            },
            FastHop::local(),
        ),
    ]);
    assert_eq!((st.set, st.failed), (2, 0), "{st:?}");
    m
}

/// IPv6: MACs rewritten, hop limit - 1, nothing else touched, counted as
/// `forwarded_ipv6`; for every hop limit the fast path forwards.
#[test]
fn forwards_ipv6_with_hop_limit_and_macs() {
    let m = setup6();
    let p = m
        .test_program(PORT_MAC)
        .expect("the verifier accepts the program");
    let before = m.counters().unwrap();
    let mut n = 0;
    for hl in 2..=255u8 {
        for nh in [17u8, 6, 58, 132] {
            let f = frame6(PORT_MAC, hl, SRC6, DST6, nh, 4000);
            let (v, out) = p.run(&f).unwrap();
            assert_eq!(v, XDP_REDIRECT, "hop limit {hl} next header {nh}");
            assert_eq!(&out[0..6], &NH_MAC);
            assert_eq!(&out[6..12], &OUT_MAC);
            assert_eq!(out[21], hl - 1);
            assert_eq!(&out[12..21], &f[12..21]);
            assert_eq!(&out[22..], &f[22..], "addresses and payload untouched");
            n += 1;
        }
    }
    let after = m.counters().unwrap();
    assert_eq!(delta(before, after), vec![("forwarded_ipv6", n)]);
}

/// The RFC 8200/4443/4291/4861 cases go to the graph unchanged, each
/// counted by its reason.
#[test]
fn ipv6_exceptions_go_to_the_graph_unchanged() {
    let m = setup6();
    let p = m
        .test_program(PORT_MAC)
        .expect("the verifier accepts the program");
    let ll: u128 = 0xfe80_0000_0000_0000_0000_0000_0000_0002;
    let mc: u128 = 0xff02_0000_0000_0000_0000_0000_0000_0001;
    let f6 = |hl: u8, src: u128, dst: u128, nh: u8| frame6(PORT_MAC, hl, src, dst, nh, 4000);
    let nd = |ty: u8| {
        let mut f = f6(255, SRC6, DST6, 58);
        f[54] = ty;
        f
    };
    let mut long = f6(64, SRC6, DST6, 17);
    long[18..20].copy_from_slice(&17u16.to_be_bytes());
    let mut v4in6 = f6(64, SRC6, DST6, 17);
    v4in6[14] = 0x45;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("hop limit 1", f6(1, SRC6, DST6, 17), "hop_limit"),
        ("hop limit 0", f6(0, SRC6, DST6, 17), "hop_limit"),
        ("hop-by-hop", f6(64, SRC6, DST6, 0), "ext_header"),
        ("routing header", f6(64, SRC6, DST6, 43), "ext_header"),
        ("fragment header", f6(64, SRC6, DST6, 44), "ext_header"),
        ("esp", f6(64, SRC6, DST6, 50), "ext_header"),
        ("destination options", f6(64, SRC6, DST6, 60), "ext_header"),
        ("link-local source", f6(64, ll, DST6, 17), "scope"),
        ("link-local destination", f6(64, SRC6, ll, 17), "scope"),
        ("multicast destination", f6(64, SRC6, mc, 17), "scope"),
        ("multicast source", f6(64, mc, DST6, 17), "scope"),
        ("unspecified source", f6(64, 0, DST6, 17), "scope"),
        ("loopback destination", f6(64, SRC6, 1, 17), "scope"),
        ("router solicitation", nd(133), "nd"),
        ("neighbor solicitation", nd(135), "nd"),
        ("redirect", nd(137), "nd"),
        ("to us", f6(64, SRC6, OWN6, 17), "local"),
        ("miss", f6(64, SRC6, DST6 ^ (1 << 100), 17), "no_route"),
        ("payload beyond the frame", long, "bad_header"),
        ("version 4", v4in6, "bad_header"),
        ("short", f6(64, SRC6, DST6, 17)[..53].to_vec(), "short"),
        (
            "other mac",
            frame6(NH_MAC, 64, SRC6, DST6, 17, 4000),
            "other_mac",
        ),
    ];
    for (what, f, reason) in cases {
        let before = m.counters().unwrap();
        let (v, out) = p.run(&f).unwrap();
        assert_eq!(v, XDP_PASS, "{what}: to the graph (no socket: pass)");
        assert_eq!(out, f, "{what}: the graph gets the frame as it came");
        let after = m.counters().unwrap();
        assert_eq!(delta(before, after), vec![(reason, 1)], "{what}");
    }
    // ICMPv6 other than ND (an echo request) is forwarded.
    let (v, _) = p.run(&nd(128)).unwrap();
    assert_eq!(v, XDP_REDIRECT, "echo request");
}

/// ECMP: a group of three members; for many IPv4 and IPv6 flows the
/// program takes member `flow_hash % 3`, `flow_hash` being the element
/// graph's (`pkt::hdr::flow::flow_hash`, which `fib::FibTables::pick`
/// uses): a flow keeps its next hop when the fast path is turned on. An
/// unresolved member's flows go to the graph (`unresolved`).
#[test]
fn ecmp_picks_the_graphs_member() {
    let m = setup();
    let p = m.test_program(PORT_MAC).unwrap();
    let first = 5 * MAX_MEMBERS;
    let mac = |i: u8| [0x02, 0, 0, 0, 0x0c, i];
    let mut ops: Vec<FastOp> = (0..3u8)
        .map(|i| {
            FastOp::Member(
                first + u32::from(i),
                FastHop {
                    slot: 1,
                    dmac: mac(i),
                    smac: OUT_MAC,
                },
            )
        })
        .collect();
    ops.push(FastOp::Set(
        Route4 {
            addr: u32::from_be_bytes([198, 19, 0, 0]),
            len: 16,
        },
        FastHop::group(first, 3),
    ));
    ops.push(FastOp::Set6(
        Route6 {
            addr: DST6,
            len: 48,
        },
        FastHop::group(first, 3),
    ));
    let st = m.apply(&ops);
    assert_eq!((st.set, st.failed), (5, 0), "{st:?}");
    let before = m.counters().unwrap();
    let mut seen = [0u32; 3];
    let mut n4 = 0;
    let mut n6 = 0;
    for i in 0..200u16 {
        let mut frames = Vec::new();
        // IPv4 UDP, TCP, ICMP (no ports), to many destinations.
        for proto in [17u8, 6, 1] {
            let mut f = frame(PORT_MAC, 64, [198, 19, (i >> 8) as u8, i as u8], i, 0, 0);
            f[23] = proto;
            f[34..36].copy_from_slice(&(1000 + i).to_be_bytes());
            f[24..26].copy_from_slice(&[0, 0]);
            let c = csum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
            frames.push((f, false));
        }
        for nh in [17u8, 6, 58] {
            frames.push((
                frame6(PORT_MAC, 64, SRC6 + u128::from(i), DST6, nh, i),
                true,
            ));
        }
        for (f, v6) in frames {
            let h = pkt::hdr::flow::flow_hash(&f);
            let want = (h as usize % 3) as u8;
            let (v, out) = p.run(&f).unwrap();
            assert_eq!(v, XDP_REDIRECT);
            assert_eq!(out[0..6], mac(want), "flow {i} v6 {v6}: member {want}");
            seen[usize::from(want)] += 1;
            if v6 {
                n6 += 1;
            } else {
                n4 += 1;
            }
        }
    }
    assert!(seen.iter().all(|s| *s > 100), "spread {seen:?}");
    let after = m.counters().unwrap();
    assert_eq!(
        delta(before, after),
        vec![("forwarded", n4), ("forwarded_ipv6", n6)]
    );
    // Member 1 unresolved: its flows go to the graph, the others do not.
    m.apply(&[FastOp::Member(first + 1, FastHop::unresolved())]);
    let before = m.counters().unwrap();
    let mut punted = 0;
    for i in 0..60u16 {
        let f = frame6(PORT_MAC, 64, SRC6, DST6, 17, i);
        let (v, _) = p.run(&f).unwrap();
        let member = pkt::hdr::flow::flow_hash(&f) % 3;
        assert_eq!(v == XDP_PASS, member == 1, "flow {i}");
        punted += u64::from(member == 1);
    }
    assert!(punted > 0);
    let after = m.counters().unwrap();
    assert_eq!(
        after.get(FastReason::Unresolved) - before.get(FastReason::Unresolved),
        punted
    );
}
