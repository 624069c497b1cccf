//! Property test of churn through `lpm::publish`: a table built from random
//! routes takes random batches of changes (mostly next-hop changes of live
//! routes, which the Poptrie patches in place when the leaves allow it,
//! plus new routes, re-announcements and withdrawals), published one batch
//! at a time. After every publish, both copies of the pair (what a reader
//! sees and the writer's copy) must answer every probe as the naive
//! reference table (`lpm::reference`) does after the same changes applied
//! one by one. Probes: every live or changed prefix's first and last
//! address and their neighbours, plus random addresses.
//!
//! The second copy of a pair does not recompute a batch: it replays the
//! write log of the first (`LpmMut::apply_again`). `publish` takes that
//! path on every batch, alternating the copies; the `*_replay_*` tests
//! drive two copies directly and hand the second copy no deltas at all, so
//! that it can only have copied what the first one wrote.

use base::{Prefix4, Prefix6};
use lpm::publish::{left_right, Delta};
use lpm::reference::{Reference4, Reference6};
use lpm::{Lpm, LpmMut, NextHop, Poptrie4, Poptrie6};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op<A> {
    /// A live route (index modulo the live count) gets next hop `nh`.
    NextHop(usize, u32),
    /// A new route (or a replacement, if the prefix is live).
    Insert(A, u8, u32),
    /// A live route is withdrawn.
    Remove(usize),
}

fn len4() -> impl Strategy<Value = u8> + Clone {
    prop_oneof![1 => 0u8..=18, 2 => 19u8..=23, 4 => Just(24u8), 2 => 25u8..=32]
}

fn len6() -> impl Strategy<Value = u8> + Clone {
    prop_oneof![
        1 => 0u8..=18,
        2 => 19u8..=31,
        3 => Just(32u8),
        2 => 33u8..=47,
        3 => Just(48u8),
        1 => 49u8..=64,
        1 => 65u8..=128,
    ]
}

/// Next hops from a small set, so that neighbouring routes often share one
/// (leaf runs then span several routes, which must not be patched in
/// place), and from the whole range.
fn nh() -> impl Strategy<Value = u32> + Clone {
    prop_oneof![2 => 0u32..4, 1 => 0u32..=NextHop::MAX_VALID]
}

/// The initial routes (address, length, next hop) and the batches.
type Churn<A> = (Vec<(A, u8, u32)>, Vec<Vec<Op<A>>>);

fn ops<A: std::fmt::Debug + Clone + 'static>(
    addr: impl Strategy<Value = A> + Clone + 'static,
    len: impl Strategy<Value = u8> + Clone + 'static,
) -> impl Strategy<Value = Churn<A>> {
    let op = prop_oneof![
        6 => (any::<usize>(), nh()).prop_map(|(i, n)| Op::NextHop(i, n)),
        2 => (addr.clone(), len.clone(), nh()).prop_map(|(a, l, n)| Op::Insert(a, l, n)),
        2 => any::<usize>().prop_map(Op::Remove),
    ];
    (
        proptest::collection::vec((addr, len, nh()), 1..120),
        proptest::collection::vec(proptest::collection::vec(op, 1..40), 1..12),
    )
}

fn addr4() -> impl Strategy<Value = u32> + Clone {
    let bases = [0x0a00_0000u32, 0x0a01_4000, 0xc0a8_0000, 0xffff_0000];
    (0usize..4, any::<u32>(), 0u32..20).prop_map(move |(b, noise, s)| bases[b] ^ (noise >> (8 + s)))
}

fn addr6() -> impl Strategy<Value = u128> + Clone {
    let bases = [
        0x2001_0db8_0000_0000_0000_0000_0000_0000u128,
        0x2001_0db8_4000_0000_0000_0000_0000_0000u128,
        0x2a00_1450_0000_0000_0000_0000_0000_0000u128,
    ];
    (0usize..3, any::<u128>(), 0u32..64)
        .prop_map(move |(b, noise, s)| bases[b] ^ (noise >> (16 + s)))
}

/// Runs the churn on a Poptrie pair and on the reference; `prefix` masks
/// an (address, length) into a prefix and its masked address, `last` gives
/// a prefix's last address.
#[allow(clippy::type_complexity)]
fn churn<A, P, T, R>(
    init: &[(A, u8, u32)],
    batches: &[Vec<Op<A>>],
    extra: &[A],
    prefix: impl Fn(A, u8) -> (P, A),
    last: impl Fn(A, u8) -> A,
    step: impl Fn(A, i8) -> A,
    build: impl Fn(&[(P, NextHop)]) -> T,
) -> Result<(), TestCaseError>
where
    A: Copy + PartialEq + std::fmt::Debug,
    P: Copy + std::fmt::Debug,
    T: Lpm<A> + LpmMut<P> + Clone + Send + Sync,
    R: Lpm<A> + LpmMut<P> + Default,
{
    // The live routes (masked address, length, next hop), each prefix once.
    let mut live: Vec<(A, u8, u32)> = Vec::new();
    for &(a, l, n) in init {
        let (_, a) = prefix(a, l);
        match live.iter_mut().find(|r| (r.0, r.1) == (a, l)) {
            Some(r) => r.2 = n,
            None => live.push((a, l, n)),
        }
    }
    let routes: Vec<(P, NextHop)> = live
        .iter()
        .map(|&(a, l, n)| (prefix(a, l).0, NextHop(n)))
        .collect();
    let mut reference = R::default();
    for &(p, n) in &routes {
        reference
            .insert(p, n)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    let mut w = left_right(build(&routes));
    let mut h = w.reader();
    let mut touched: Vec<(A, u8)> = Vec::new();
    for (bi, ops) in batches.iter().enumerate() {
        let mut deltas = Vec::new();
        for op in ops {
            match *op {
                Op::NextHop(i, n) if !live.is_empty() => {
                    let k = i % live.len();
                    live[k].2 = n;
                    let (a, l, _) = live[k];
                    deltas.push(Delta::Insert(prefix(a, l).0, NextHop(n)));
                    touched.push((a, l));
                }
                Op::Insert(a, l, n) => {
                    let (p, a) = prefix(a, l);
                    match live.iter_mut().find(|r| (r.0, r.1) == (a, l)) {
                        Some(r) => r.2 = n,
                        None => live.push((a, l, n)),
                    }
                    deltas.push(Delta::Insert(p, NextHop(n)));
                    touched.push((a, l));
                }
                Op::Remove(i) if !live.is_empty() => {
                    let (a, l, _) = live.swap_remove(i % live.len());
                    deltas.push(Delta::Remove(prefix(a, l).0));
                    touched.push((a, l));
                }
                _ => {}
            }
        }
        w.publish(&deltas)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        for d in &deltas {
            match *d {
                Delta::Insert(p, n) => {
                    reference
                        .insert(p, n)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
                Delta::Remove(p) => {
                    reference.remove(p);
                }
            }
        }
        let mut probes: Vec<A> = extra.to_vec();
        for (a, l) in live
            .iter()
            .map(|r| (r.0, r.1))
            .chain(touched.iter().copied())
        {
            let z = last(a, l);
            probes.extend([a, z, step(a, -1), step(z, 1)]);
        }
        let mut out = vec![None; probes.len()];
        let g = h.read();
        g.lookup_batch(&probes, &mut out);
        for (i, &a) in probes.iter().enumerate() {
            let want = reference.lookup(a);
            prop_assert_eq!(out[i], want, "batch {}: reader, lookup_batch {:?}", bi, a);
            prop_assert_eq!(g.lookup(a), want, "batch {}: reader, lookup {:?}", bi, a);
        }
        drop(g);
        let t = w.table();
        prop_assert_eq!(t.len(), live.len(), "batch {}: route count", bi);
        t.lookup_batch(&probes, &mut out);
        for (i, &a) in probes.iter().enumerate() {
            let want = reference.lookup(a);
            prop_assert_eq!(out[i], want, "batch {}: writer's copy {:?}", bi, a);
        }
    }
    Ok(())
}

/// Two copies of one table, the roles swapping every batch as in a
/// publish pair: the first applies the batch (`apply_all`), the second
/// replays it (`apply_again`) *without the deltas*, and both must answer as
/// the reference after every batch.
#[allow(clippy::type_complexity)]
fn replay<A, P, T, R>(
    init: &[(A, u8, u32)],
    batches: &[Vec<Op<A>>],
    extra: &[A],
    prefix: impl Fn(A, u8) -> (P, A),
    last: impl Fn(A, u8) -> A,
    build: impl Fn(&[(P, NextHop)]) -> T,
) -> Result<(), TestCaseError>
where
    A: Copy + PartialEq + std::fmt::Debug,
    P: Copy + std::fmt::Debug,
    T: Lpm<A> + LpmMut<P> + Clone,
    R: Lpm<A> + LpmMut<P> + Default,
{
    let mut live: Vec<(A, u8, u32)> = Vec::new();
    for &(a, l, n) in init {
        let (_, a) = prefix(a, l);
        match live.iter_mut().find(|r| (r.0, r.1) == (a, l)) {
            Some(r) => r.2 = n,
            None => live.push((a, l, n)),
        }
    }
    let routes: Vec<(P, NextHop)> = live
        .iter()
        .map(|&(a, l, n)| (prefix(a, l).0, NextHop(n)))
        .collect();
    let mut reference = R::default();
    for &(p, n) in &routes {
        reference
            .insert(p, n)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    let mut copies = [build(&routes), build(&routes)];
    copies[1] = copies[0].clone();
    let mut probes: Vec<A> = extra.to_vec();
    for (bi, ops) in batches.iter().enumerate() {
        let mut deltas = Vec::new();
        for op in ops {
            match *op {
                Op::NextHop(i, n) if !live.is_empty() => {
                    let k = i % live.len();
                    live[k].2 = n;
                    let (a, l, _) = live[k];
                    deltas.push(Delta::Insert(prefix(a, l).0, NextHop(n)));
                }
                Op::Insert(a, l, n) => {
                    let (p, a) = prefix(a, l);
                    match live.iter_mut().find(|r| (r.0, r.1) == (a, l)) {
                        Some(r) => r.2 = n,
                        None => live.push((a, l, n)),
                    }
                    deltas.push(Delta::Insert(p, NextHop(n)));
                    probes.extend([a, last(a, l)]);
                }
                Op::Remove(i) if !live.is_empty() => {
                    let (a, l, _) = live.swap_remove(i % live.len());
                    deltas.push(Delta::Remove(prefix(a, l).0));
                }
                _ => {}
            }
        }
        let [c0, c1] = &mut copies;
        let (first, second) = if bi % 2 == 0 { (c0, c1) } else { (c1, c0) };
        let r = first.apply_all(&deltas);
        prop_assert_eq!(second.apply_again(&[], first), r, "batch {}: result", bi);
        reference
            .apply_all(&deltas)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        for (a, l, _) in &live {
            probes.extend([*a, last(*a, *l)]);
        }
        for (ci, t) in copies.iter().enumerate() {
            prop_assert_eq!(t.len(), live.len(), "batch {}: copy {} route count", bi, ci);
            for &a in &probes {
                prop_assert_eq!(
                    t.lookup(a),
                    reference.lookup(a),
                    "batch {}: copy {} {:?}",
                    bi,
                    ci,
                    a
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn ipv4_replay_matches_reference((init, batches) in ops(addr4(), len4()), extra in proptest::collection::vec(any::<u32>(), 16)) {
        replay::<_, _, _, Reference4>(
            &init,
            &batches,
            &extra,
            |a, l| {
                let p = Prefix4::new(a, l).expect("len <= 32").masked();
                (p, p.addr_bits())
            },
            |a, l| a | u32::MAX.checked_shr(u32::from(l)).unwrap_or(0),
            |r| Poptrie4::from_routes(r.iter().copied()).expect("build"),
        )?;
    }

    #[test]
    fn ipv6_replay_matches_reference((init, batches) in ops(addr6(), len6()), extra in proptest::collection::vec(any::<u128>(), 16)) {
        replay::<_, _, _, Reference6>(
            &init,
            &batches,
            &extra,
            |a, l| {
                let p = Prefix6::new(a, l).expect("len <= 128").masked();
                (p, p.addr_bits())
            },
            |a, l| a | u128::MAX.checked_shr(u32::from(l)).unwrap_or(0),
            |r| Poptrie6::from_routes(r.iter().copied()).expect("build"),
        )?;
    }

    #[test]
    fn ipv4_churn_matches_reference((init, batches) in ops(addr4(), len4()), extra in proptest::collection::vec(any::<u32>(), 16)) {
        churn::<_, _, _, Reference4>(
            &init,
            &batches,
            &extra,
            |a, l| {
                let p = Prefix4::new(a, l).expect("len <= 32").masked();
                (p, p.addr_bits())
            },
            |a, l| a | u32::MAX.checked_shr(u32::from(l)).unwrap_or(0),
            |a, d| a.wrapping_add_signed(i32::from(d)),
            |r| Poptrie4::from_routes(r.iter().copied()).expect("build"),
        )?;
    }

    #[test]
    fn ipv6_churn_matches_reference((init, batches) in ops(addr6(), len6()), extra in proptest::collection::vec(any::<u128>(), 16)) {
        churn::<_, _, _, Reference6>(
            &init,
            &batches,
            &extra,
            |a, l| {
                let p = Prefix6::new(a, l).expect("len <= 128").masked();
                (p, p.addr_bits())
            },
            |a, l| a | u128::MAX.checked_shr(u32::from(l)).unwrap_or(0),
            |a, d| a.wrapping_add_signed(i128::from(d)),
            |r| Poptrie6::from_routes(r.iter().copied()).expect("build"),
        )?;
    }
}
