//! RFC 6811 validation against a naive reference, the prefix index's
//! range query, and the cache selector's failover.

use std::time::Duration;

use base::{Instant, Prefix};
use proptest::prelude::*;
use rov::caches::{CacheState, Delivery, Selector};
use rov::{PrefixIndex, RovState, Vrp, VrpTable};

fn p(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn vrp(s: &str, max: u8, asn: u32) -> Vrp {
    Vrp::new(p(s), max, asn).unwrap()
}

/// RFC 6811 §2 written out over a list, as the reference.
fn reference(vrps: &[Vrp], route: &Prefix, origin: Option<u32>) -> RovState {
    let covering: Vec<&Vrp> = vrps.iter().filter(|v| covers(&v.prefix(), route)).collect();
    if covering.is_empty() {
        return RovState::NotFound;
    }
    let ok = covering
        .iter()
        .any(|v| v.asn() != 0 && Some(v.asn()) == origin && route.len() <= v.max_len());
    if ok {
        RovState::Valid
    } else {
        RovState::Invalid
    }
}

fn covers(outer: &Prefix, inner: &Prefix) -> bool {
    match (outer, inner) {
        (Prefix::V4(o), Prefix::V4(i)) => o.len() <= i.len() && o.contains_addr(i.addr_bits()),
        (Prefix::V6(o), Prefix::V6(i)) => o.len() <= i.len() && o.contains_addr(i.addr_bits()),
        _ => false,
    }
}

#[test]
fn rfc6811_cases() {
    let mut t = VrpTable::default();
    t.insert(vrp("10.0.0.0/8", 16, 65001));
    t.insert(vrp("10.1.0.0/16", 24, 65002));
    t.insert(vrp("192.0.2.0/24", 24, 0));
    t.insert(vrp("2001:db8::/32", 48, 65003));
    // Exact and within max length.
    assert_eq!(t.validate(&p("10.0.0.0/8"), Some(65001)), RovState::Valid);
    assert_eq!(t.validate(&p("10.2.0.0/16"), Some(65001)), RovState::Valid);
    // Too long for the /8's max length, and the wrong AS for the /16.
    assert_eq!(
        t.validate(&p("10.2.3.0/24"), Some(65001)),
        RovState::Invalid
    );
    // Two covering VRPs: the /16's matches.
    assert_eq!(t.validate(&p("10.1.2.0/24"), Some(65002)), RovState::Valid);
    assert_eq!(t.validate(&p("10.1.0.0/16"), Some(65001)), RovState::Valid);
    // AS 0 authorises nobody (RFC 6483 §4), and no origin (AS_SET) matches nothing.
    assert_eq!(t.validate(&p("192.0.2.0/24"), Some(0)), RovState::Invalid);
    assert_eq!(t.validate(&p("10.0.0.0/8"), None), RovState::Invalid);
    // Less specific than every VRP: not covered.
    assert_eq!(
        t.validate(&p("10.0.0.0/7"), Some(65001)),
        RovState::NotFound
    );
    assert_eq!(
        t.validate(&p("2001:db8:1::/48"), Some(65003)),
        RovState::Valid
    );
    assert_eq!(
        t.validate(&p("2001:db8:1::/49"), Some(65003)),
        RovState::Invalid
    );
    assert_eq!(
        t.validate(&p("2001:db9::/32"), Some(65003)),
        RovState::NotFound
    );
    // Families never mix.
    assert_eq!(t.validate(&p("::/0"), Some(65001)), RovState::NotFound);
    assert_eq!(t.len(), 4);
    assert_eq!(t.len_by_family(), (3, 1));
}

#[test]
fn set_semantics_and_removal() {
    let mut t = VrpTable::default();
    assert!(t.insert(vrp("10.0.0.0/8", 8, 1)));
    assert!(!t.insert(vrp("10.0.0.0/8", 8, 1)));
    assert!(t.insert(vrp("10.0.0.0/8", 9, 1)));
    assert_eq!(t.len(), 2);
    assert!(t.remove(&vrp("10.0.0.0/8", 8, 1)));
    assert!(!t.remove(&vrp("10.0.0.0/8", 8, 1)));
    assert_eq!(t.validate(&p("10.0.0.0/9"), Some(1)), RovState::Valid);
    assert!(t.remove(&vrp("10.0.0.0/8", 9, 1)));
    assert!(t.is_empty());
    assert_eq!(t.validate(&p("10.0.0.0/9"), Some(1)), RovState::NotFound);
    assert_eq!(
        Vrp::new(p("10.0.0.0/8"), 7, 1),
        Err(rov::VrpError::BadMaxLength)
    );
    assert_eq!(
        Vrp::new(p("10.0.0.0/8"), 33, 1),
        Err(rov::VrpError::BadMaxLength)
    );
    // Host bits are cleared.
    assert_eq!(
        Vrp::new(p("10.1.2.3/8"), 8, 1).unwrap().prefix(),
        p("10.0.0.0/8")
    );
}

#[test]
fn index_range() {
    let mut ix = PrefixIndex::default();
    for s in [
        "10.0.0.0/8",
        "10.0.0.0/7",
        "10.1.0.0/16",
        "10.255.255.0/24",
        "11.0.0.0/8",
        "9.255.255.255/32",
        "2001:db8::/32",
    ] {
        ix.insert(&p(s));
    }
    ix.insert(&p("10.1.0.0/16"));
    let mut got: Vec<Prefix> = ix.covered_by(&p("10.0.0.0/8")).collect();
    got.sort();
    assert_eq!(
        got,
        vec![p("10.0.0.0/8"), p("10.1.0.0/16"), p("10.255.255.0/24")]
    );
    ix.remove(&p("10.1.0.0/16"));
    assert!(ix.contains(&p("10.1.0.0/16")));
    ix.remove(&p("10.1.0.0/16"));
    assert!(!ix.contains(&p("10.1.0.0/16")));
    assert_eq!(ix.covered_by(&p("0.0.0.0/0")).count(), 5);
    assert_eq!(ix.covered_by(&p("::/0")).count(), 1);
}

fn t(s: u64) -> Instant {
    Instant::from_secs(s)
}

fn deliver(vrps: &[Vrp], serial: u32) -> Delivery {
    Delivery {
        reset: true,
        announce: vrps.to_vec(),
        withdraw: Vec::new(),
        serial,
        session: 7,
        expire: None,
        ..Default::default()
    }
}

#[test]
fn failover_by_preference_and_expiry() {
    let a = vrp("10.0.0.0/8", 8, 1);
    let b = vrp("10.0.0.0/8", 8, 2);
    let expire = Duration::from_secs(100);
    // Cache 0 preferred (1), cache 1 backup (2).
    let mut s = Selector::new([(1, expire), (2, expire)]);
    s.connected(1);
    assert_eq!(s.deliver(1, deliver(&[b], 1), t(0)), vec![p("10.0.0.0/8")]);
    assert_eq!(s.active(), Some(1));
    s.connected(0);
    // The preferred cache takes over once it has data.
    assert_eq!(s.deliver(0, deliver(&[a], 5), t(1)), vec![p("10.0.0.0/8")]);
    assert_eq!(s.active(), Some(0));
    assert_eq!(
        s.table().validate(&p("10.0.0.0/8"), Some(1)),
        RovState::Valid
    );
    // Losing it keeps its data until it expires.
    assert!(s.lost(0, t(2)).is_empty());
    assert_eq!(s.caches()[0].state, CacheState::Stale);
    assert_eq!(s.next_deadline(), Some(t(101)));
    assert!(s.expire(t(100)).is_empty());
    assert_eq!(s.expire(t(101)), vec![p("10.0.0.0/8")]);
    assert_eq!(s.active(), Some(1));
    assert_eq!(
        s.table().validate(&p("10.0.0.0/8"), Some(2)),
        RovState::Valid
    );
    // Incremental update of the cache in use.
    let d = Delivery {
        reset: false,
        announce: vec![vrp("192.0.2.0/24", 24, 3)],
        withdraw: vec![b],
        serial: 2,
        session: 7,
        expire: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let mut ch = s.deliver(1, d, t(102));
    ch.sort();
    assert_eq!(ch, vec![p("10.0.0.0/8"), p("192.0.2.0/24")]);
    assert_eq!(s.table().len(), 1);
    // With every cache gone and expired, nothing is covered.
    s.lost(1, t(103));
    assert_eq!(s.expire(t(113)), vec![p("192.0.2.0/24")]);
    assert!(s.table().is_empty());
    assert_eq!(s.active(), None);
}

fn arb_v4() -> impl Strategy<Value = Prefix> {
    // A small address space so that prefixes overlap often.
    (0u32..16, 0u8..=8)
        .prop_map(|(a, l)| Prefix::V4(base::Prefix4::new(a << 24 | a << 20, l).unwrap().masked()))
}

fn arb_vrp() -> impl Strategy<Value = Vrp> {
    (arb_v4(), 0u8..4, 0u32..4)
        .prop_map(|(p, extra, asn)| Vrp::new(p, (p.len() + extra).min(32), asn).unwrap())
}

proptest! {
    #[test]
    fn validate_matches_reference(
        vrps in proptest::collection::vec(arb_vrp(), 0..20),
        drop in proptest::collection::vec(any::<proptest::sample::Index>(), 0..5),
        routes in proptest::collection::vec((arb_v4(), proptest::option::of(0u32..4)), 1..20),
    ) {
        let mut t = VrpTable::default();
        for v in &vrps { t.insert(*v); }
        let mut live: Vec<Vrp> = vrps.clone();
        live.sort(); live.dedup();
        for d in &drop {
            if live.is_empty() { break; }
            let v = live.remove(d.index(live.len()));
            prop_assert!(t.remove(&v));
        }
        prop_assert_eq!(t.len(), live.len());
        for (r, o) in &routes {
            prop_assert_eq!(t.validate(r, *o), reference(&live, r, *o));
        }
    }

    /// Every route whose state a VRP change flips is under a prefix the
    /// change reports, and the index finds it there: re-evaluating the
    /// index's answer for the changed prefixes is enough.
    #[test]
    fn changed_prefixes_cover_every_flip(
        before in proptest::collection::vec(arb_vrp(), 0..12),
        after in proptest::collection::vec(arb_vrp(), 0..12),
        routes in proptest::collection::vec((arb_v4(), 0u32..4), 1..30),
    ) {
        let mut s = Selector::new([(1, Duration::from_secs(10))]);
        s.deliver(0, deliver(&before, 1), t(0));
        let old = s.table().clone();
        let changed = s.deliver(0, deliver(&after, 2), t(1));
        let mut ix = PrefixIndex::default();
        for (r, _) in &routes { ix.insert(r); }
        let mut hit = std::collections::HashSet::new();
        for c in &changed { hit.extend(ix.covered_by(c)); }
        for (r, o) in &routes {
            if old.validate(r, Some(*o)) != s.table().validate(r, Some(*o)) {
                prop_assert!(hit.contains(r), "{} flipped but was not reported", r);
            }
        }
        for h in &hit {
            prop_assert!(changed.iter().any(|c| covers(c, h)));
        }
    }

    #[test]
    fn index_covered_by_matches_filter(
        held in proptest::collection::vec(arb_v4(), 0..30),
        q in arb_v4(),
    ) {
        let mut ix = PrefixIndex::default();
        for h in &held { ix.insert(h); }
        let mut got: Vec<Prefix> = ix.covered_by(&q).collect();
        got.sort();
        let mut want: Vec<Prefix> = held.iter().copied().filter(|h| covers(&q, h)).collect();
        want.sort(); want.dedup();
        prop_assert_eq!(got, want);
    }
}
