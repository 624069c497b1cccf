//! The IPv6 lookup's stages, one by one: the direct array (bits 0-18), the
//! root group (18-32), the groups of 8 bits below it (32-40, 40-48, ...),
//! whose first levels the batched walk unrolls with constant bit offsets
//! (levels 0 to 3 dense, 0 to 4 sparse) before it loops. Every test
//! compares `lookup` and `lookup_batch` with `lpm::reference::Reference6`,
//! at each stage's boundary lengths (/16-/19, /31-/33, /39-/41, /47-/49,
//! /55-/57, /63-/65: the stage from bit 64 is the first that reads the
//! address's low half), with the default route, with batches where every
//! lane goes to the same depth (dense rounds to that depth) and where few
//! do (sparse rounds), and through `publish` while the routes churn.

use base::Prefix6;
use lpm::publish::{left_right, Delta};
use lpm::reference::Reference6;
use lpm::{Lpm, LpmMut, NextHop, Poptrie6};

/// Every boundary length of the stages, and the default route.
const LENS: [u8; 26] = [
    0, 15, 16, 17, 18, 19, 31, 32, 33, 39, 40, 41, 47, 48, 49, 55, 56, 57, 63, 64, 65, 71, 72, 120,
    127, 128,
];

/// Base addresses: two in the same /18 and /32, one in another /16.
const BASES: [u128; 3] = [
    0x2001_0db8_1234_5678_9abc_def0_1357_9bdf,
    0x2001_0db8_1234_a5a5_0000_ffff_8000_0001,
    0x2a00_1450_4001_0800_0000_0000_0000_200e,
];

fn p6(a: u128, l: u8) -> Prefix6 {
    Prefix6::new(a, l).expect("len <= 128").masked()
}

/// A route at every boundary length over every base, next hops distinct.
fn nested() -> Vec<(Prefix6, NextHop)> {
    let mut v = Vec::new();
    for (b, &base) in BASES.iter().enumerate() {
        for (i, &l) in LENS.iter().enumerate() {
            v.push((p6(base, l), NextHop((b * 100 + i) as u32)));
        }
    }
    v
}

/// For every prefix: its first and last address, their outer neighbours,
/// and the address of the base with bit `len` flipped (inside the prefix,
/// outside every longer one on the base).
fn probes(routes: &[(Prefix6, NextHop)]) -> Vec<u128> {
    let mut v = Vec::new();
    for &(p, _) in routes {
        let a = p.addr_bits();
        let z = a | u128::MAX.checked_shr(u32::from(p.len())).unwrap_or(0);
        v.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1)]);
        if p.len() < 128 {
            v.push(a ^ (1u128 << (127 - u32::from(p.len()))));
        }
    }
    v.extend(BASES);
    v
}

/// Compares single and batched lookups (in chunks of every size given)
/// with the reference.
fn check(t: &Poptrie6, r: &Reference6, addrs: &[u128], what: &str) {
    for &a in addrs {
        assert_eq!(t.lookup(a), r.lookup(a), "{what}: lookup {a:#x}");
    }
    for chunk in [1, 3, 16, 47, 48, 49, 63, 64] {
        let mut out = vec![None; addrs.len()];
        for (c, o) in addrs.chunks(chunk).zip(out.chunks_mut(chunk)) {
            t.lookup_batch(c, o);
        }
        for (&a, o) in addrs.iter().zip(&out) {
            assert_eq!(
                *o,
                r.lookup(a),
                "{what}: lookup_batch (chunks of {chunk}) {a:#x}"
            );
        }
    }
}

fn both(routes: &[(Prefix6, NextHop)]) -> (Poptrie6, Reference6) {
    let mut t = Poptrie6::new();
    let mut r = Reference6::default();
    for &(p, nh) in routes {
        t.insert(p, nh).expect("insert");
        r.insert(p, nh).expect("insert");
    }
    (t, r)
}

#[test]
fn every_stage_boundary_and_the_default_route() {
    let routes = nested();
    let (t, r) = both(&routes);
    let probes = probes(&routes);
    check(&t, &r, &probes, "incremental");
    let bulk = Poptrie6::from_routes(routes.iter().copied()).expect("build");
    check(&bulk, &r, &probes, "bulk");
    // Without the default route, addresses outside every route miss.
    let no_default: Vec<_> = routes
        .iter()
        .copied()
        .filter(|(p, _)| matches!(p.len(), 1..)) // (`Prefix6::is_empty` is always false)
        .collect();
    let (t, r) = both(&no_default);
    assert_eq!(t.lookup(0x3fff << 112), None);
    check(&t, &r, &probes, "no default");
}

/// Batches where every lane ends at the same depth: the dense rounds run
/// to that depth (at least 3/4 of the lanes stay at a node), then the
/// loop past the unrolled levels; and batches with a few deep lanes among
/// lanes that end in the direct array (sparse rounds from level 0).
#[test]
fn dense_and_sparse_rounds_to_every_depth() {
    let mut routes = vec![(p6(0, 0), NextHop(7)), (p6(0x2001 << 112, 16), NextHop(8))];
    let mut by_len: Vec<(u8, Vec<u128>)> = Vec::new();
    for (k, &l) in [32u8, 40, 48, 56, 64, 72, 80, 128].iter().enumerate() {
        let mut lanes = Vec::new();
        for i in 0..64u128 {
            // 64 routes of length `l` in one /18 (so that they share the
            // root group), each probed at its last address.
            let a = (0x2001_0db8u128 << 96) | (i << (128 - u32::from(l)));
            let p = p6(a, l);
            routes.push((p, NextHop(1000 + k as u32 * 64 + i as u32)));
            lanes.push(a | u128::MAX.checked_shr(u32::from(l)).unwrap_or(0));
        }
        by_len.push((l, lanes));
    }
    let (t, r) = both(&routes);
    for (l, lanes) in &by_len {
        check(&t, &r, lanes, &format!("64 lanes to /{l}"));
        // One deep lane among lanes that end in the direct array or at the
        // /16: the sparse rounds from level 0.
        let mut few: Vec<u128> = (0..60u128).map(|i| (0x3000u128 + i) << 112).collect();
        few.extend(lanes.iter().take(4));
        check(&t, &r, &few, &format!("4 of 64 lanes to /{l}"));
        // Half the lanes deep: dense from the root, sparse once the
        // others are done.
        let mut half: Vec<u128> = (0..32u128)
            .map(|i| (0x2001u128 << 112) | (i << 80))
            .collect();
        half.extend(lanes.iter().take(32));
        check(&t, &r, &half, &format!("32 of 64 lanes to /{l}"));
    }
}

/// Route changes at every stage's boundary lengths, in batches through a
/// `publish` pair; after each publication a reader's batched lookups equal
/// the reference's, and so do the writer's copy's.
#[test]
fn churn_through_the_stages() {
    let all = nested();
    let probes = probes(&all);
    let mut w = left_right(Poptrie6::new());
    let mut reader = w.reader();
    let mut r = Reference6::default();
    let mut live = vec![false; all.len()];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = vec![None; probes.len()];
    for round in 0..200u32 {
        let mut deltas = Vec::new();
        for _ in 0..8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % all.len() as u64) as usize;
            let (p, nh) = all[i];
            if live[i] && x & 0x100 != 0 {
                deltas.push(Delta::Remove(p));
                r.remove(p);
                live[i] = false;
            } else {
                let nh = NextHop(nh.0 + (round % 3) * 1000);
                deltas.push(Delta::Insert(p, nh));
                r.insert(p, nh).expect("insert");
                live[i] = true;
            }
        }
        w.publish(&deltas).expect("publish");
        let g = reader.read();
        for (c, o) in probes.chunks(64).zip(out.chunks_mut(64)) {
            g.lookup_batch(c, o);
        }
        for (&a, o) in probes.iter().zip(&out) {
            assert_eq!(*o, r.lookup(a), "round {round}: reader {a:#x}");
        }
        drop(g);
        if round % 20 == 0 {
            check(
                w.table(),
                &r,
                &probes,
                &format!("round {round}: writer's copy"),
            );
        }
    }
}
