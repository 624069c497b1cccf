//! The XDP fast path's program run by the kernel (`BPF_PROG_TEST_RUN`,
//! bpf(2) command 10; needs root) on hand-made frames: one case per
//! verdict, with the frame as the program left it and the per-CPU counter
//! that moved. With no AF_XDP socket in the program's XSKMAP, packets for
//! the graph come back as `XDP_PASS`; forwarded ones as `XDP_REDIRECT`.

use io::xdp::fast::{
    FastCounters, FastHop, FastMaps, FastOp, FastReason, Route4, LOCAL, XDP_PASS, XDP_REDIRECT,
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
    let mut v6 = frame(PORT_MAC, 64, [198, 18, 2, 9], 1, 0, 0);
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
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
        ("ipv6 ethertype", v6, "not_ipv4"),
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
