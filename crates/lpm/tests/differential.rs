//! Differential tests on the real tables in the shared MRT data: every fast
//! table must answer exactly as the naive reference, for addresses at every
//! prefix boundary and random addresses, after a bulk build, after
//! incremental inserts, and after interleaved removals and replacements.

mod common;

use std::fmt::Debug;

use base::{Prefix4, Prefix6};
use common::{load_routes, probe_addrs4, probe_addrs6};
use lpm::reference::{Reference4, Reference6};
use lpm::{Lpm, LpmMut, NextHop, Poptrie4, Poptrie6};

/// Compares `lookup` and `lookup_batch` of every table with the reference.
fn compare<A: Copy + Debug>(
    what: &str,
    reference: &dyn Lpm<A>,
    tables: &[&dyn Lpm<A>],
    addrs: &[A],
) {
    let want: Vec<_> = addrs.iter().map(|&a| reference.lookup(a)).collect();
    let hits = want.iter().filter(|w| w.is_some()).count();
    assert!(
        hits > 0,
        "{what}: no address hit a route; the probe set is useless"
    );
    let mut out = vec![None; addrs.len()];
    for (ti, t) in tables.iter().enumerate() {
        out.iter_mut().for_each(|o| *o = Some(NextHop(u32::MAX)));
        t.lookup_batch(addrs, &mut out);
        for (i, &a) in addrs.iter().enumerate() {
            assert_eq!(t.lookup(a), want[i], "{what}: table {ti}, lookup({a:x?})");
            assert_eq!(
                out[i], want[i],
                "{what}: table {ti}, lookup_batch at {a:x?}"
            );
        }
    }
}

/// Removes every third route, replaces the next hop of every third, checks;
/// then puts the removed ones back and checks again.
fn churn<P: Copy, A: Copy + Debug, T: Lpm<A> + LpmMut<P>, R: Lpm<A> + LpmMut<P>>(
    what: &str,
    routes: &[(P, NextHop)],
    t: &mut T,
    reference: &mut R,
    addrs: &[A],
) {
    // After the first full comparison, a third of the probes (every
    // boundary kind still appears) keeps the test well under a minute on 2
    // cores in a debug build.
    let addrs: Vec<A> = addrs.iter().step_by(3).copied().collect();
    let addrs = &addrs[..];
    for (i, &(p, nh)) in routes.iter().enumerate() {
        match i % 3 {
            0 => assert_eq!(t.remove(p), reference.remove(p), "{what}: remove #{i}"),
            1 => {
                let nh = NextHop((nh.0 + 1) % (NextHop::MAX_VALID + 1));
                assert_eq!(
                    t.insert(p, nh),
                    reference.insert(p, nh),
                    "{what}: replace #{i}"
                );
            }
            _ => {}
        }
    }
    assert_eq!(t.len(), reference.len(), "{what}: len after churn");
    compare(&format!("{what} after churn"), reference, &[t], addrs);
    for (i, &(p, nh)) in routes.iter().enumerate() {
        if i % 3 == 0 {
            assert_eq!(
                t.insert(p, nh),
                reference.insert(p, nh),
                "{what}: re-insert #{i}"
            );
        }
    }
    assert_eq!(t.len(), reference.len());
    compare(&format!("{what} after re-insert"), reference, &[t], addrs);
    // Remove everything: the table must end empty and answer nothing.
    for &(p, _) in routes {
        t.remove(p);
        reference.remove(p);
    }
    assert!(t.is_empty(), "{what}: not empty after removing every route");
    assert!(
        addrs.iter().take(10_000).all(|&a| t.lookup(a).is_none()),
        "{what}: empty table answered"
    );
}

fn check4(file: &str, min_routes: usize) {
    let (v4, _) = load_routes(file);
    assert!(v4.len() >= min_routes, "{file}: {} IPv4 routes", v4.len());
    let mut reference = Reference4::default();
    let mut inc = Poptrie4::new();
    for &(p, nh) in &v4 {
        let old = reference.insert(p, nh);
        assert_eq!(inc.insert(p, nh), old, "{file}: insert {p:?}");
    }
    let bulk = Poptrie4::from_routes(v4.iter().copied()).expect("bulk build");
    assert_eq!(bulk.len(), reference.len());
    assert_eq!(inc.len(), reference.len());
    let addrs = probe_addrs4(&v4, 200_000, 4);
    compare(file, &reference, &[&bulk, &inc], &addrs);
    churn::<Prefix4, _, _, _>(file, &v4, &mut inc, &mut reference, &addrs);
}

fn check6(file: &str, min_routes: usize) {
    let (_, v6) = load_routes(file);
    assert!(v6.len() >= min_routes, "{file}: {} IPv6 routes", v6.len());
    let mut reference = Reference6::default();
    let mut inc = Poptrie6::new();
    for &(p, nh) in &v6 {
        let old = reference.insert(p, nh);
        assert_eq!(inc.insert(p, nh), old, "{file}: insert {p:?}");
    }
    let bulk = Poptrie6::from_routes(v6.iter().copied()).expect("bulk build");
    assert_eq!(bulk.len(), reference.len());
    let addrs = probe_addrs6(&v6, 200_000, 6);
    compare(file, &reference, &[&bulk, &inc], &addrs);
    churn::<Prefix6, _, _, _>(file, &v6, &mut inc, &mut reference, &addrs);
}

#[test]
fn ipv4_routeviews_2014_partial() {
    check4("rib.20140523.0600_firstMB.bz2", 9_000);
}

#[test]
fn ipv4_ripe_2002_legacy_table_dump() {
    check4("bview.20020722.2337.gz", 100_000);
}

#[test]
fn ipv4_jinx_full_table() {
    check4("routeviews.route-views.jinx.ribs.1401487200.bz2", 497_000);
}

#[test]
fn ipv6_routeviews6_2015_partial() {
    check6("rib6.20151101.0600_firstMB.bz2", 6_800);
}

#[test]
fn ipv6_routeviews6_2015_full() {
    check6("rib.bz2", 25_000);
}
