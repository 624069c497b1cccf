//! Differential tests on random tables: random prefixes clustered so that
//! they nest (short routes covering long ones, at every depth of the trie),
//! random interleaved inserts, replacements and removals, checked against
//! the naive reference after every few operations with random addresses
//! and addresses at every prefix boundary.

mod common;

use std::collections::HashMap;

use base::{Prefix4, Prefix6};
use common::XorShift;
use lpm::reference::{Reference4, Reference6};
use lpm::{Lpm, LpmMut, NextHop, Poptrie4, Poptrie6};

/// Compares single and batched lookups over `addrs` (batch length chosen to
/// leave a partial group at the end).
fn agree<A: Copy + std::fmt::Debug>(what: &str, r: &dyn Lpm<A>, t: &dyn Lpm<A>, addrs: &[A]) {
    let mut out = vec![Some(NextHop(u32::MAX)); addrs.len()];
    t.lookup_batch(addrs, &mut out);
    for (i, &a) in addrs.iter().enumerate() {
        let want = r.lookup(a);
        assert_eq!(t.lookup(a), want, "{what}: lookup({a:x?})");
        assert_eq!(out[i], want, "{what}: lookup_batch[{i}] ({a:x?})");
    }
}

/// A random IPv4 prefix near one of `bases`, length weighted towards the
/// interesting depths (direct-array boundary at 18, node boundaries at 24
/// and 30).
fn rand_p4(r: &mut XorShift, bases: &[u32]) -> Prefix4 {
    let base = bases[r.below(bases.len() as u64) as usize];
    let len = match r.below(10) {
        0 => r.below(9) as u8,          // 0..=8: repaints many slots
        1..=3 => 9 + r.below(10) as u8, // 9..=18
        4..=7 => 19 + r.below(6) as u8, // 19..=24
        _ => 25 + r.below(8) as u8,     // 25..=32
    };
    let noise = (r.next() as u32) >> 12; // keep the base's top 12 bits
    Prefix4::new(base ^ noise, len).expect("len <= 32").masked()
}

fn rand_p6(r: &mut XorShift, bases: &[u128]) -> Prefix6 {
    let base = bases[r.below(bases.len() as u64) as usize];
    let len = match r.below(10) {
        0 => r.below(19) as u8,          // 0..=18
        1..=5 => 19 + r.below(30) as u8, // 19..=48, most real routes
        6..=8 => 49 + r.below(16) as u8, // 49..=64
        _ => 65 + r.below(64) as u8,     // 65..=128, deep nodes
    };
    let noise = ((u128::from(r.next()) << 64) | u128::from(r.next())) >> 24;
    Prefix6::new(base ^ noise, len)
        .expect("len <= 128")
        .masked()
}

fn probes4(r: &mut XorShift, live: &[Prefix4], n: usize) -> Vec<u32> {
    let mut v: Vec<u32> = Vec::with_capacity(live.len() * 4 + n);
    for p in live {
        let a = p.addr_bits();
        let z = a | u32::MAX.checked_shr(u32::from(p.len())).unwrap_or(0);
        v.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1)]);
    }
    for i in 0..n {
        let x = r.next() as u32;
        if i % 2 == 0 || live.is_empty() {
            v.push(x);
        } else {
            let p = live[r.below(live.len() as u64) as usize];
            v.push(p.addr_bits() | x.checked_shr(u32::from(p.len())).unwrap_or(0));
        }
    }
    v
}

fn probes6(r: &mut XorShift, live: &[Prefix6], n: usize) -> Vec<u128> {
    let mut v: Vec<u128> = Vec::with_capacity(live.len() * 4 + n);
    for p in live {
        let a = p.addr_bits();
        let z = a | u128::MAX.checked_shr(u32::from(p.len())).unwrap_or(0);
        v.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1)]);
    }
    for i in 0..n {
        let x = (u128::from(r.next()) << 64) | u128::from(r.next());
        if i % 2 == 0 || live.is_empty() {
            v.push(x);
        } else {
            let p = live[r.below(live.len() as u64) as usize];
            v.push(p.addr_bits() | x.checked_shr(u32::from(p.len())).unwrap_or(0));
        }
    }
    v
}

#[test]
fn ipv4_random_interleaved_updates() {
    for seed in 1..=12u64 {
        let mut r = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let bases: Vec<u32> = (0..4).map(|_| r.next() as u32).collect();
        let mut t = Poptrie4::new();
        let mut reference = Reference4::default();
        let mut live: Vec<Prefix4> = Vec::new();
        // Each live prefix's own next hop, for the bulk build at the end.
        let mut exact: HashMap<Prefix4, NextHop> = HashMap::new();
        for op in 0..3_000 {
            let remove = !live.is_empty() && r.below(3) == 0;
            if remove {
                let i = r.below(live.len() as u64) as usize;
                let p = live.swap_remove(i);
                assert_eq!(t.remove(p), reference.remove(p), "seed {seed} op {op}");
            } else {
                let p = rand_p4(&mut r, &bases);
                let nh = NextHop(r.below(u64::from(NextHop::MAX_VALID) + 1) as u32);
                let old = reference.insert(p, nh).expect("valid next hop");
                assert_eq!(t.insert(p, nh), Ok(old), "seed {seed} op {op}");
                if old.is_none() {
                    live.push(p);
                }
                exact.insert(p, nh);
            }
            // Removing a prefix that is absent changes nothing.
            if op % 97 == 0 {
                let p = rand_p4(&mut r, &bases);
                if !live.contains(&p) {
                    assert_eq!(t.remove(p), None);
                }
            }
            assert_eq!(t.len(), reference.len());
            if op % 250 == 249 {
                let addrs = probes4(&mut r, &live, 3_000);
                agree(&format!("v4 seed {seed} op {op}"), &reference, &t, &addrs);
            }
        }
        // A bulk build of the final set answers the same.
        let routes: Vec<_> = live.iter().map(|&p| (p, exact[&p])).collect();
        let bulk = Poptrie4::from_routes(routes.iter().copied()).expect("build");
        let addrs = probes4(&mut r, &live, 3_000);
        agree(&format!("v4 seed {seed} bulk"), &reference, &bulk, &addrs);
        for p in live.drain(..) {
            assert!(t.remove(p).is_some());
        }
        assert!(t.is_empty());
        assert_eq!(t.lookup(bases[0]), None);
    }
}

#[test]
fn ipv6_random_interleaved_updates() {
    for seed in 1..=8u64 {
        let mut r = XorShift(seed.wrapping_mul(0xd1b5_4a32_d192_ed03) | 1);
        let bases: Vec<u128> = (0..4)
            .map(|_| (u128::from(r.next()) << 64) | u128::from(r.next()))
            .collect();
        let mut t = Poptrie6::new();
        let mut reference = Reference6::default();
        let mut live: Vec<Prefix6> = Vec::new();
        for op in 0..2_000 {
            if !live.is_empty() && r.below(3) == 0 {
                let i = r.below(live.len() as u64) as usize;
                let p = live.swap_remove(i);
                assert_eq!(t.remove(p), reference.remove(p), "seed {seed} op {op}");
            } else {
                let p = rand_p6(&mut r, &bases);
                let nh = NextHop(r.below(u64::from(NextHop::MAX_VALID) + 1) as u32);
                let old = reference.insert(p, nh).expect("valid next hop");
                assert_eq!(t.insert(p, nh), Ok(old), "seed {seed} op {op}");
                if old.is_none() {
                    live.push(p);
                }
            }
            assert_eq!(t.len(), reference.len());
            if op % 250 == 249 {
                let addrs = probes6(&mut r, &live, 2_000);
                agree(&format!("v6 seed {seed} op {op}"), &reference, &t, &addrs);
            }
        }
        for p in live.drain(..) {
            assert!(t.remove(p).is_some());
        }
        assert!(t.is_empty());
    }
}

#[test]
fn refused_next_hop_leaves_the_table_unchanged() {
    let mut t = Poptrie4::new();
    let p = Prefix4::new(0x0a00_0000, 8).expect("valid");
    t.insert(p, NextHop(3)).expect("insert");
    assert_eq!(
        t.insert(p, NextHop(NextHop::MAX_VALID + 1)),
        Err(lpm::LpmError::NextHopTooLarge)
    );
    assert_eq!(t.lookup(0x0a00_0001), Some(NextHop(3)));
    assert_eq!(
        t.insert(p, NextHop(NextHop::MAX_VALID)),
        Ok(Some(NextHop(3)))
    );
    assert_eq!(t.lookup(0x0aff_ffff), Some(NextHop(NextHop::MAX_VALID)));
    // Default route and host routes at both ends of the address space.
    let mut t6 = Poptrie6::new();
    t6.insert(Prefix6::new(0, 0).expect("valid"), NextHop(1))
        .expect("insert");
    t6.insert(Prefix6::new(u128::MAX, 128).expect("valid"), NextHop(2))
        .expect("insert");
    t6.insert(Prefix6::new(0, 128).expect("valid"), NextHop(3))
        .expect("insert");
    assert_eq!(t6.lookup(u128::MAX), Some(NextHop(2)));
    assert_eq!(t6.lookup(u128::MAX - 1), Some(NextHop(1)));
    assert_eq!(t6.lookup(0), Some(NextHop(3)));
    assert_eq!(t6.lookup(1), Some(NextHop(1)));
}

/// A batch (what `publish` applies) with a refused next hop in it: the
/// other changes apply, the refusal is reported, and the table equals one
/// built by applying the same changes one by one.
#[test]
fn refused_next_hop_in_a_batch_skips_only_that_change() {
    use lpm::publish::Delta;
    let p24 = |a: u32| Prefix4::new(a, 24).expect("valid");
    let deltas = [
        Delta::Insert(Prefix4::new(0x0a00_0000, 8).expect("valid"), NextHop(1)),
        Delta::Insert(p24(0x0a01_0200), NextHop(2)),
        Delta::Insert(p24(0x0a01_0300), NextHop(NextHop::MAX_VALID + 1)),
        Delta::Insert(p24(0x0a01_0300), NextHop(4)),
        Delta::Insert(p24(0x0a01_0200), NextHop(NextHop::MAX_VALID + 1)),
        Delta::Remove(p24(0x0a01_0400)),
        Delta::Insert(Prefix4::new(0x0a01_0280, 25).expect("valid"), NextHop(5)),
    ];
    let mut batched = Poptrie4::new();
    assert_eq!(
        batched.apply_all(&deltas),
        Err(lpm::LpmError::NextHopTooLarge)
    );
    let mut single = Poptrie4::new();
    for d in &deltas {
        let _ = match *d {
            Delta::Insert(p, nh) => single.insert(p, nh).map(|_| ()),
            Delta::Remove(p) => {
                single.remove(p);
                Ok(())
            }
        };
    }
    assert_eq!(batched.len(), 4);
    assert_eq!(batched.len(), single.len());
    for a in [
        0x0a00_0001,
        0x0a01_0201,
        0x0a01_0281,
        0x0a01_0301,
        0x0a01_0401,
    ] {
        assert_eq!(batched.lookup(a), single.lookup(a), "{a:x}");
    }
    assert_eq!(batched.lookup(0x0a01_0201), Some(NextHop(2)));
    assert_eq!(batched.lookup(0x0a01_0281), Some(NextHop(5)));
    assert_eq!(batched.lookup(0x0a01_0301), Some(NextHop(4)));
    assert_eq!(batched.lookup(0x0a01_0401), Some(NextHop(1)));
}
