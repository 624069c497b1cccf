//! The batched application of FIB deltas ([`FibTables::absorb_all`], what
//! `lpm::publish` calls) against applying them one by one
//! ([`FibTables::absorb`] in order): random batches of route adds,
//! replaces and deletes, multipath ones included, go through a real
//! [`Fib`] (resolution, refcounted adjacencies and next-hop groups); the
//! deltas of each batch are applied both ways, and the two tables must
//! hold the same routes, give the same lookups and picks for random
//! addresses and flow hashes, and the same adjacencies and groups. A
//! second property feeds raw random deltas, refused ones included
//! (next hops past `NextHop::MAX_VALID`), and checks the same refusals.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base::{Prefix, Prefix4, Prefix6};
use fib::table::GROUP_BASE;
use fib::{Adjacency, Change, Fib, FibDelta, FibTables, PortSpec};
use lpm::publish::{left_right, Absorb};
use lpm::{Lpm, NextHop};
use proptest::prelude::*;

const V4_BASE: u32 = 0xc612_0000; // 198.18.0.0/15
const V6_BASE: u128 = 0x2001_0db8 << 96; // 2001:db8::/32

/// Gateways: on-link in the ports' prefixes (v4 10.1/24, 10.2/24; v6
/// 2001:db8:ff01::/64, 2001:db8:ff02::/64), and inside the routed space
/// (recursive, resolved through another route or nowhere).
fn gateways() -> Vec<IpAddr> {
    let mut g = Vec::new();
    for h in 2..5u8 {
        g.push(IpAddr::V4(Ipv4Addr::new(10, 1, 0, h)));
        g.push(IpAddr::V4(Ipv4Addr::new(10, 2, 0, h)));
        g.push(IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            0xff01,
            0,
            0,
            0,
            0,
            h.into(),
        )));
        g.push(IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            0xff02,
            0,
            0,
            0,
            0,
            h.into(),
        )));
    }
    g.push(IpAddr::V4(Ipv4Addr::from(V4_BASE | 0x0101)));
    g.push(IpAddr::V4(Ipv4Addr::from(V4_BASE | 0x0001_0203)));
    g.push(IpAddr::V6(Ipv6Addr::from(V6_BASE | 0x0001_0000_0000 << 64)));
    g
}

fn ports() -> Vec<PortSpec> {
    let v4 = |o: u8| (IpAddr::V4(Ipv4Addr::new(10, o, 0, 1)), 24);
    let v6 = |o: u16| {
        (
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0xff00 | o, 0, 0, 0, 0, 1)),
            64,
        )
    };
    vec![
        PortSpec {
            name: "p0".into(),
            addrs: vec![v4(1), v6(1)],
        },
        PortSpec {
            name: "p1".into(),
            addrs: vec![v4(2), v6(2)],
        },
    ]
}

/// A prefix in a small space, so that changes of a batch share Poptrie
/// slots (the direct table resolves 18 bits) and replace each other.
fn prefix() -> impl Strategy<Value = Prefix> {
    prop_oneof![
        // IPv4: mostly long routes under 198.18.0.0/15, a few short ones.
        (0u32..(1 << 17), 15u8..=32)
            .prop_map(|(a, l)| Prefix::V4(Prefix4::new(V4_BASE | a, l).expect("len").masked())),
        (0u32..8, 8u8..=18).prop_map(|(a, l)| Prefix::V4(
            Prefix4::new(V4_BASE ^ (a << 24), l).expect("len").masked()
        )),
        // IPv6 under 2001:db8::/32.
        (0u128..(1 << 16), 32u8..=64).prop_map(|(a, l)| Prefix::V6(
            Prefix6::new(V6_BASE | a << 80, l).expect("len").masked()
        )),
        (0u128..(1 << 16), 65u8..=128).prop_map(|(a, l)| Prefix::V6(
            Prefix6::new(V6_BASE | a << 80 | a, l)
                .expect("len")
                .masked()
        )),
    ]
}

/// A change: delete (None), or add/replace with one gateway and up to
/// three further ones (multipath). Gateways of the wrong family resolve
/// nowhere, which the FIB must handle too.
fn change() -> impl Strategy<Value = (Prefix, Option<(usize, Vec<usize>)>)> {
    let g = gateways().len();
    (
        prefix(),
        prop::option::weighted(0.8, (0..g, prop::collection::vec(0..g, 0..4))),
    )
}

fn to_change(p: Prefix, c: &Option<(usize, Vec<usize>)>, gws: &[IpAddr]) -> Change {
    let (next_hop, mut ecmp) = match c {
        None => (None, Vec::new()),
        Some((g, e)) => (Some(gws[*g]), e.iter().map(|&i| gws[i]).collect::<Vec<_>>()),
    };
    // The RIB's contract: distinct, without the best next hop.
    ecmp.sort();
    ecmp.dedup();
    ecmp.retain(|a| Some(*a) != next_hop);
    Change {
        prefix: p,
        next_hop,
        ecmp,
    }
}

/// Asserts that two tables are the same forwarding state.
fn same(a: &FibTables, b: &FibTables, addrs4: &[u32], addrs6: &[u128]) {
    let mut r4a: Vec<_> = a.v4.iter().collect();
    let mut r4b: Vec<_> = b.v4.iter().collect();
    r4a.sort_unstable();
    r4b.sort_unstable();
    assert_eq!(r4a, r4b, "IPv4 routes");
    let mut r6a: Vec<_> = a.v6.iter().collect();
    let mut r6b: Vec<_> = b.v6.iter().collect();
    r6a.sort_unstable();
    r6b.sort_unstable();
    assert_eq!(r6a, r6b, "IPv6 routes");
    for &d in addrs4 {
        let (x, y) = (Lpm::<u32>::lookup(a, d), Lpm::<u32>::lookup(b, d));
        assert_eq!(x, y, "IPv4 lookup of {}", Ipv4Addr::from(d));
        assert_eq!(
            a.route4(d),
            b.route4(d),
            "IPv4 hop of {}",
            Ipv4Addr::from(d)
        );
        if let Some(nh) = x {
            for h in [d, d.rotate_left(7), 0, u32::MAX] {
                assert_eq!(a.pick(nh, h), b.pick(nh, h), "pick");
            }
        }
    }
    let mut o4 = vec![None; addrs4.len()];
    let mut o4b = vec![None; addrs4.len()];
    Lpm::<u32>::lookup_batch(a, addrs4, &mut o4);
    Lpm::<u32>::lookup_batch(b, addrs4, &mut o4b);
    assert_eq!(o4, o4b, "IPv4 batched lookups");
    for &d in addrs6 {
        let (x, y) = (Lpm::<u128>::lookup(a, d), Lpm::<u128>::lookup(b, d));
        assert_eq!(x, y, "IPv6 lookup of {}", Ipv6Addr::from(d));
        if let Some(nh) = x {
            for h in [d as u32, (d >> 64) as u32, 0, u32::MAX] {
                let (pa, pb) = (a.pick(nh, h), b.pick(nh, h));
                assert_eq!(pa, pb, "pick");
                assert_eq!(a.adjacency(pa), b.adjacency(pb), "IPv6 adjacency");
            }
        }
    }
    // Next-hop state: every adjacency and group id the FIB can have used.
    assert_eq!(a.adjacencies(), b.adjacencies(), "adjacency count");
    for i in 0..4096 {
        let nh = NextHop(i);
        assert_eq!(a.adjacency(nh), b.adjacency(nh), "adjacency {i}");
        let g = NextHop(GROUP_BASE + i);
        assert_eq!(a.group(g), b.group(g), "group {i}");
    }
    for ip in gateways() {
        assert_eq!(a.neighbour(ip), b.neighbour(ip), "neighbour {ip}");
    }
}

fn addrs(seed4: &[u32], seed6: &[u128]) -> (Vec<u32>, Vec<u128>) {
    let a4 = seed4
        .iter()
        .map(|&x| V4_BASE | (x & 0x1_ffff))
        .chain(seed4.iter().copied())
        .collect();
    let a6 = seed6
        .iter()
        .map(|&x| V6_BASE | (x >> 32))
        .chain(seed6.iter().copied())
        .collect();
    (a4, a6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Deltas of a real FIB, batch after batch: batched and one-by-one
    /// application give the same tables, through `lpm::publish` too (both
    /// copies of the left-right pair).
    #[test]
    fn batched_equals_one_by_one(
        batches in prop::collection::vec(
            (prop::collection::vec(change(), 0..200), prop::collection::vec(any::<bool>(), 4)),
            1..8,
        ),
        seed4 in prop::collection::vec(any::<u32>(), 256),
        seed6 in prop::collection::vec(any::<u128>(), 128),
    ) {
        let gws = gateways();
        let (addrs4, addrs6) = addrs(&seed4, &seed6);
        let mut fib = Fib::new(&ports(), false);
        let mut one = FibTables::new();
        let mut w = left_right(FibTables::new());
        let mut rd = w.reader();
        for (b, (cs, learn)) in batches.iter().enumerate() {
            let cs: Vec<Change> = cs.iter().map(|(p, c)| to_change(*p, c, &gws)).collect();
            fib.apply(&cs);
            for (i, l) in learn.iter().enumerate() {
                if *l {
                    fib.learn(gws[i * 2 + b % 2], [2, 0, 0, 0, b as u8, i as u8]);
                }
            }
            let ds = fib.take_deltas();
            for d in &ds {
                one.absorb(d).expect("one by one");
            }
            // The daemon's path: publish hands the batch to absorb_all.
            w.publish(&ds).expect("batched");
            same(&one, w.table(), &addrs4, &addrs6);
            same(&one, &rd.read(), &addrs4, &addrs6);
        }
    }

    /// Raw deltas, refused ones included: the same refusals and the same
    /// tables.
    #[test]
    fn raw_deltas_same_refusals(
        batches in prop::collection::vec(prop::collection::vec(raw_delta(), 0..300), 1..5),
        seed4 in prop::collection::vec(any::<u32>(), 128),
        seed6 in prop::collection::vec(any::<u128>(), 64),
    ) {
        let (addrs4, addrs6) = addrs(&seed4, &seed6);
        let mut one = FibTables::new();
        let mut many = FibTables::new();
        for ds in &batches {
            let mut r1 = Ok(());
            for d in ds {
                if let Err(e) = one.absorb(d) {
                    r1 = r1.and(Err(e));
                }
            }
            let r2 = many.absorb_all(ds);
            prop_assert_eq!(r1.is_err(), r2.is_err());
            // One kind of refusal only can occur here, so the error agrees too.
            prop_assert_eq!(r1, r2);
            same(&one, &many, &addrs4, &addrs6);
        }
    }
}

fn next_hop() -> impl Strategy<Value = NextHop> {
    prop_oneof![
        8 => (0u32..16).prop_map(NextHop),
        2 => (0u32..8).prop_map(|g| NextHop(GROUP_BASE + g)),
        1 => (NextHop::MAX_VALID - 1..NextHop::MAX_VALID + 3).prop_map(NextHop),
    ]
}

fn raw_delta() -> impl Strategy<Value = FibDelta> {
    let adj = (0u16..4, prop::option::of(any::<[u8; 6]>())).prop_map(|(port, mac)| Adjacency {
        port,
        gw: Some(IpAddr::V4(Ipv4Addr::new(10, 1, 0, 2))),
        mac,
        tag: 0,
    });
    prop_oneof![
        6 => (prefix(), next_hop()).prop_map(|(p, nh)| match p {
            Prefix::V4(p) => FibDelta::Insert4(p, nh),
            Prefix::V6(p) => FibDelta::Insert6(p, nh),
        }),
        3 => prefix().prop_map(|p| match p {
            Prefix::V4(p) => FibDelta::Remove4(p),
            Prefix::V6(p) => FibDelta::Remove6(p),
        }),
        1 => (next_hop(), adj).prop_map(|(nh, a)| FibDelta::SetAdj(nh, a)),
        1 => next_hop().prop_map(FibDelta::ClearAdj),
        1 => (next_hop(), prop::collection::vec(next_hop(), 0..4))
            .prop_map(|(g, m)| FibDelta::SetGroup(g, m.into())),
        1 => next_hop().prop_map(FibDelta::ClearGroup),
        1 => (0u8..4, prop::option::of(any::<[u8; 6]>()))
            .prop_map(|(h, m)| FibDelta::Neigh(IpAddr::V4(Ipv4Addr::new(10, 1, 0, h)), m)),
    ]
}
