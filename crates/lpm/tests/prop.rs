//! Property tests: random sequences of inserts and removes, then lookups
//! that must equal a linear scan over the live routes (the simplest
//! possible reference, independent of `lpm::reference`). Prefix lengths are
//! drawn around the structure's boundaries: the direct array (18 bits), the
//! IPv4 node strides (24, 30), the IPv6 node groups (the first resolves
//! bits 18 to 32 in 256 nodes of 64 positions, every further one 8 bits:
//! 40, 48, ..., 128), the common /32 to /48 routes, /0 and host routes. Addresses are drawn near a few
//! bases so that prefixes nest and share direct slots; lookups probe every
//! live prefix's first and last address and their neighbours.

use base::{Prefix4, Prefix6};
use lpm::publish::Delta;
use lpm::{Lpm, LpmMut, NextHop, Poptrie4, Poptrie6};
use proptest::prelude::*;

/// The longest live prefix containing `a` (later inserts of the same
/// prefix replace earlier ones, so `live` holds each prefix once).
fn scan<A: Copy>(
    live: &[(A, u8, NextHop)],
    a: A,
    covers: impl Fn(A, u8, A) -> bool,
) -> Option<NextHop> {
    live.iter()
        .filter(|&&(p, l, _)| covers(p, l, a))
        .max_by_key(|&&(_, l, _)| l)
        .map(|&(_, _, nh)| nh)
}

fn len6() -> impl Strategy<Value = u8> {
    prop_oneof![
        1 => Just(0u8),
        1 => 1u8..=17,
        1 => 18u8..=19,
        2 => 20u8..=31,
        3 => Just(32u8),
        2 => 33u8..=47,
        // The ends of the IPv6 node groups' strides (18+14, then 8 bits).
        2 => prop::sample::select(vec![24u8, 25, 26, 31, 39, 40, 41, 47, 55, 56, 57, 64, 120, 127]),
        3 => Just(48u8),
        1 => 49u8..=127,
        1 => Just(128u8),
    ]
}

fn len4() -> impl Strategy<Value = u8> {
    prop_oneof![
        1 => 0u8..=17,
        2 => 18u8..=19,
        3 => 20u8..=24,
        2 => 25u8..=32,
    ]
}

#[derive(Clone, Debug)]
enum Op<A> {
    Insert(A, u8, u32),
    Remove(usize),
}

fn ops6() -> impl Strategy<Value = Vec<Op<u128>>> {
    let bases = [
        0x2001_0db8_0000_0000_0000_0000_0000_0000u128,
        0x2001_0db8_4000_0000_0000_0000_0000_0000u128,
        0x2a00_1450_0000_0000_0000_0000_0000_0000u128,
        0xffff_ffff_0000_0000_0000_0000_0000_0000u128,
    ];
    let op = prop_oneof![
        3 => (0usize..4, any::<u128>(), 0u32..64, len6(), 0u32..=NextHop::MAX_VALID)
            .prop_map(move |(b, noise, shift, l, nh)| {
                // Keep the base's top bits, vary the rest: prefixes nest.
                Op::Insert(bases[b] ^ (noise >> (16 + shift)), l, nh)
            }),
        1 => any::<usize>().prop_map(Op::Remove),
    ];
    proptest::collection::vec(op, 1..150)
}

fn ops4() -> impl Strategy<Value = Vec<Op<u32>>> {
    let bases = [0x0a00_0000u32, 0x0a01_4000, 0xc0a8_0000, 0xffff_0000];
    let op = prop_oneof![
        3 => (0usize..4, any::<u32>(), 0u32..20, len4(), 0u32..=NextHop::MAX_VALID)
            .prop_map(move |(b, noise, shift, l, nh)| {
                Op::Insert(bases[b] ^ (noise >> (8 + shift)), l, nh)
            }),
        1 => any::<usize>().prop_map(Op::Remove),
    ];
    proptest::collection::vec(op, 1..150)
}

/// What [`run`] leaves: the live routes (masked address, length, next
/// hop) and the changes it made, in order, as publication deltas.
type Run<A, P> = (Vec<(A, u8, NextHop)>, Vec<Delta<P>>);

/// Applies `ops` to the table and to a list of live routes.
fn run<A: Copy + PartialEq + std::fmt::Debug, P: Copy>(
    ops: &[Op<A>],
    t: &mut impl LpmMut<P>,
    prefix: impl Fn(A, u8) -> (P, A),
) -> Result<Run<A, P>, TestCaseError> {
    let mut live: Vec<(A, u8, NextHop)> = Vec::new();
    let mut deltas = Vec::new();
    for op in ops {
        match *op {
            Op::Insert(a, l, nh) => {
                let (p, a) = prefix(a, l);
                let old = live.iter().position(|&(x, y, _)| (x, y) == (a, l));
                let prev = t
                    .insert(p, NextHop(nh))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                deltas.push(Delta::Insert(p, NextHop(nh)));
                prop_assert_eq!(prev, old.map(|i| live[i].2));
                match old {
                    Some(i) => live[i].2 = NextHop(nh),
                    None => live.push((a, l, NextHop(nh))),
                }
            }
            Op::Remove(i) if !live.is_empty() => {
                let (a, l, nh) = live.swap_remove(i % live.len());
                let (p, _) = prefix(a, l);
                prop_assert_eq!(t.remove(p), Some(nh));
                prop_assert_eq!(t.remove(p), None);
                deltas.extend([Delta::Remove(p), Delta::Remove(p)]);
            }
            Op::Remove(_) => {}
        }
        prop_assert_eq!(t.len(), live.len());
    }
    Ok((live, deltas))
}

/// The same changes applied in batches of `chunk` through
/// [`LpmMut::apply_all`] (what `publish` does), which sorts each batch by
/// direct slot and rebuilds a slot once per batch.
fn batched<P: Copy, T: LpmMut<P> + Default>(
    deltas: &[Delta<P>],
    chunk: usize,
) -> Result<T, TestCaseError> {
    let mut t = T::default();
    for c in deltas.chunks(chunk.max(1)) {
        t.apply_all(c)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    Ok(t)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn ipv6_matches_linear_scan(ops in ops6(), extra in proptest::collection::vec(any::<u128>(), 16), chunk in 1usize..64) {
        let mut t = Poptrie6::new();
        let prefix = |a: u128, l: u8| {
            let p = Prefix6::new(a, l).expect("len <= 128").masked();
            (p, p.addr_bits())
        };
        let (live, deltas) = run(&ops, &mut t, prefix)?;
        let covers = |p: u128, l: u8, a: u128| a.checked_shr(128 - u32::from(l)).unwrap_or(0) == p.checked_shr(128 - u32::from(l)).unwrap_or(0);
        let mut probes = extra;
        for &(p, l, _) in &live {
            let z = p | u128::MAX.checked_shr(u32::from(l)).unwrap_or(0);
            probes.extend([p, z, p.wrapping_sub(1), z.wrapping_add(1)]);
        }
        let mut out = vec![None; probes.len()];
        t.lookup_batch(&probes, &mut out);
        for (i, &a) in probes.iter().enumerate() {
            let want = scan(&live, a, covers);
            prop_assert_eq!(t.lookup(a), want, "lookup {:x}", a);
            prop_assert_eq!(out[i], want, "lookup_batch {:x}", a);
        }
        // A bulk build of the same routes answers the same.
        let bulk = Poptrie6::from_routes(live.iter().map(|&(p, l, nh)| (prefix(p, l).0, nh)))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        // And so do the same changes applied in batches.
        let b: Poptrie6 = batched(&deltas, chunk)?;
        prop_assert_eq!(b.len(), live.len());
        b.lookup_batch(&probes, &mut out);
        for (i, &a) in probes.iter().enumerate() {
            let want = scan(&live, a, covers);
            prop_assert_eq!(bulk.lookup(a), want, "bulk {:x}", a);
            prop_assert_eq!(b.lookup(a), want, "batched updates {:x}", a);
            prop_assert_eq!(out[i], want, "batched updates, lookup_batch {:x}", a);
        }
    }

    #[test]
    fn ipv4_matches_linear_scan(ops in ops4(), extra in proptest::collection::vec(any::<u32>(), 16), chunk in 1usize..64) {
        let mut t = Poptrie4::new();
        let prefix = |a: u32, l: u8| {
            let p = Prefix4::new(a, l).expect("len <= 32").masked();
            (p, p.addr_bits())
        };
        let (live, deltas) = run(&ops, &mut t, prefix)?;
        let covers = |p: u32, l: u8, a: u32| a.checked_shr(32 - u32::from(l)).unwrap_or(0) == p.checked_shr(32 - u32::from(l)).unwrap_or(0);
        let mut probes = extra;
        for &(p, l, _) in &live {
            let z = p | u32::MAX.checked_shr(u32::from(l)).unwrap_or(0);
            probes.extend([p, z, p.wrapping_sub(1), z.wrapping_add(1)]);
        }
        let mut out = vec![None; probes.len()];
        t.lookup_batch(&probes, &mut out);
        for (i, &a) in probes.iter().enumerate() {
            let want = scan(&live, a, covers);
            prop_assert_eq!(t.lookup(a), want, "lookup {:x}", a);
            prop_assert_eq!(out[i], want, "lookup_batch {:x}", a);
        }
        let bulk = Poptrie4::from_routes(live.iter().map(|&(p, l, nh)| (prefix(p, l).0, nh)))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let b: Poptrie4 = batched(&deltas, chunk)?;
        prop_assert_eq!(b.len(), live.len());
        b.lookup_batch(&probes, &mut out);
        for (i, &a) in probes.iter().enumerate() {
            let want = scan(&live, a, covers);
            prop_assert_eq!(bulk.lookup(a), want, "bulk {:x}", a);
            prop_assert_eq!(b.lookup(a), want, "batched updates {:x}", a);
            prop_assert_eq!(out[i], want, "batched updates, lookup_batch {:x}", a);
        }
    }
}
