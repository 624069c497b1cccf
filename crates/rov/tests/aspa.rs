//! ASPA verification (draft-ietf-sidrops-aspa-verification §6): worked
//! cases for both procedures, the AS_SET and neighbour rules, and
//! property tests against a reference written from the draft's pairwise
//! form (a "valley": a Not Provider+ hop going up before one going down).

use proptest::prelude::*;
use rov::caches::{Delivery, Selector};
use rov::{Aspa, AspaState, AspaTable, Direction};

use AspaState::{Invalid, Unknown, Valid};
use Direction::{Downstream, Upstream};

fn table(recs: &[(u32, &[u32])]) -> AspaTable {
    let mut t = AspaTable::default();
    for (c, p) in recs {
        t.insert(Aspa::new(*c, p.to_vec()));
    }
    t
}

/// `path` as on the wire: neighbour first, origin last.
fn up(t: &AspaTable, path: &[u32]) -> AspaState {
    t.verify(path, false, path.first().copied(), Upstream)
}

fn down(t: &AspaTable, path: &[u32]) -> AspaState {
    t.verify(path, false, path.first().copied(), Downstream)
}

#[test]
fn upstream_customer_chain() {
    // 64500 (origin) -> provider 64501 -> provider 64502 (our customer).
    let t = table(&[(64500, &[64501]), (64501, &[64502])]);
    assert_eq!(up(&t, &[64502, 64501, 64500]), Valid);
    // Prepends change nothing.
    assert_eq!(up(&t, &[64502, 64502, 64501, 64500, 64500]), Valid);
    // A single AS: no hop to check.
    assert_eq!(up(&t, &[64500]), Valid);
    // 64502 has no ASPA but is the last hop: still all attested up to it.
    // Drop 64501's record: the 64501 -> 64502 hop is No Attestation.
    let t2 = table(&[(64500, &[64501])]);
    assert_eq!(up(&t2, &[64502, 64501, 64500]), Unknown);
    // Nothing known at all.
    assert_eq!(up(&AspaTable::default(), &[64502, 64501, 64500]), Unknown);
}

#[test]
fn upstream_leak_is_invalid() {
    // 64501 attests only 64509 as provider; the route went 64501 -> 64502
    // (64502 is not its provider): a leak when we get it from a customer.
    let t = table(&[(64500, &[64501]), (64501, &[64509])]);
    assert_eq!(up(&t, &[64502, 64501, 64500]), Invalid);
    // From a provider the 64501 -> 64502 hop may be the one lateral hop
    // at the apex (up-ramp 64500 -> 64501, down-ramp 64502 alone): the
    // ramps cover the path, so it is Valid.
    assert_eq!(down(&t, &[64502, 64501, 64500]), Valid);
}

#[test]
fn as_set_and_neighbour_rules() {
    let t = table(&[(64500, &[64501])]);
    // Any AS_SET: Invalid (draft §6, step 2).
    assert_eq!(
        t.verify(&[64501, 64500], true, Some(64501), Upstream),
        Invalid
    );
    assert_eq!(
        t.verify(&[64501, 64500], true, Some(64501), Downstream),
        Invalid
    );
    // The neighbour must be the most recent AS.
    assert_eq!(
        t.verify(&[64501, 64500], false, Some(64999), Upstream),
        Invalid
    );
    // A transparent route server: no neighbour check.
    assert_eq!(t.verify(&[64501, 64500], false, None, Upstream), Valid);
    // Empty path.
    assert_eq!(t.verify(&[], false, None, Upstream), Invalid);
    assert_eq!(t.verify(&[], false, None, Downstream), Invalid);
}

#[test]
fn downstream_valley_free_and_valley() {
    // Up 1 -> 2 -> 3 (top), down 3 -> 4 -> 5 (5 is our provider).
    // Path on the wire: 5 4 3 2 1.
    let t = table(&[(1, &[2]), (2, &[3]), (4, &[3]), (5, &[4])]);
    assert_eq!(down(&t, &[5, 4, 3, 2, 1]), Valid);
    // Upstream of the same path is a leak (4 -> 5 is downhill).
    assert_eq!(up(&t, &[5, 4, 3, 2, 1]), Invalid);
    // A valley: up 1 -> 2, down 2 -> 3 (2 is 3's provider), up 3 -> 4.
    let v = table(&[(1, &[2]), (3, &[2]), (2, &[9]), (4, &[9])]);
    // hop(2,3) NP+ (going up fails at 2) and hop(4,3) NP+ (going down
    // fails at 4 -> 3): the ramps cannot meet.
    assert_eq!(down(&v, &[4, 3, 2, 1]), Invalid);
    // One unattested hop at the apex is fine (it may be the lateral one)...
    let u = table(&[(1, &[2]), (4, &[3]), (5, &[4])]);
    assert_eq!(down(&u, &[5, 4, 3, 2, 1]), Valid);
    // ...two are not: 2 -> 3 and 4 -> 3 both unattested, Unknown.
    let u = table(&[(1, &[2]), (5, &[4])]);
    assert_eq!(down(&u, &[5, 4, 3, 2, 1]), Unknown);
    // Lateral peering at the top (2 -> 3 is p2p: neither provider of the
    // other) with both attested: valid from a provider.
    let p = table(&[(1, &[2]), (2, &[8]), (3, &[7]), (4, &[3])]);
    assert_eq!(down(&p, &[4, 3, 2, 1]), Valid);
}

#[test]
fn downstream_bird_list_example() {
    // bird-users, Feb 2026: we (2121) get 3333 12859 42695 from our
    // provider 3333; 3333 has no ASPA, 12859 and 42695 attest other
    // providers. No valley can be proven, 3333's side is unattested.
    let t = table(&[(2121, &[3333]), (12859, &[174]), (42695, &[6939])]);
    assert_eq!(down(&t, &[3333, 12859, 42695]), Unknown);
}

#[test]
fn draft10_layout() {
    // stayrtr 0.5.1's ASPA PDU body, 01 00 0002 0000fde9 0000fdea 0000fdeb
    // (announce, IPv4, 2 providers, customer 65001, providers 65002,
    // 65003), as the current layout's reader splits it.
    let (announce, a) = rov::from_draft10(0x0100_0002, &[65001, 65002, 65003]).unwrap();
    assert!(announce);
    assert_eq!(a, Aspa::new(65001, vec![65002, 65003]));
    // IPv6 record, withdrawal with no providers.
    let (announce, a) = rov::from_draft10(0x0001_0000, &[65001]).unwrap();
    assert!(!announce);
    assert_eq!(a.providers, Vec::<u32>::new());
    // Counts that do not match, reserved bits, nothing at all.
    assert!(rov::from_draft10(0x0100_0003, &[65001, 65002, 65003]).is_none());
    assert!(rov::from_draft10(0x0300_0002, &[65001, 65002, 65003]).is_none());
    assert!(rov::from_draft10(0x0102_0002, &[65001, 65002, 65003]).is_none());
    assert!(rov::from_draft10(0x0100_0000, &[]).is_none());
}

#[test]
fn roles_to_direction() {
    assert_eq!(Direction::of_neighbour_role(0), Some(Downstream)); // provider
    for r in 1..=4 {
        assert_eq!(Direction::of_neighbour_role(r), Some(Upstream));
    }
    assert_eq!(Direction::of_neighbour_role(5), None);
}

#[test]
fn selector_follows_the_active_cache() {
    let e = std::time::Duration::from_secs(100);
    let mut s = Selector::new([(1, e)]);
    s.connected(0);
    let d = Delivery {
        reset: true,
        aspa_announce: vec![Aspa::new(64500, vec![64501]), Aspa::new(64502, vec![1, 2])],
        ..Default::default()
    };
    s.deliver(0, d, base::Instant::from_secs(1));
    assert_eq!(s.aspa().len(), 2);
    assert_eq!(s.take_aspa_changes(), vec![64500, 64502]);
    assert!(s.take_aspa_changes().is_empty());
    // Incremental: replace one, withdraw the other.
    let d = Delivery {
        aspa_announce: vec![Aspa::new(64500, vec![64509])],
        aspa_withdraw: vec![64502],
        serial: 2,
        ..Default::default()
    };
    s.deliver(0, d, base::Instant::from_secs(2));
    assert_eq!(s.aspa().get(64500), Some(&[64509][..]));
    assert_eq!(s.aspa().get(64502), None);
    assert_eq!(s.take_aspa_changes(), vec![64500, 64502]);
    // Lost and expired: everything goes.
    s.lost(0, base::Instant::from_secs(3));
    s.expire(base::Instant::from_secs(200));
    assert!(s.aspa().is_empty());
    assert_eq!(s.take_aspa_changes(), vec![64500]);
}

/// hop(a, b) with 0 = No Attestation, 1 = Provider+, 2 = Not Provider+.
fn hop(t: &AspaTable, a: u32, b: u32) -> u8 {
    match t.get(a) {
        None => 0,
        Some(p) if p.contains(&b) => 1,
        Some(_) => 2,
    }
}

/// The draft's pairwise reading, on the de-prepended path `h` (origin
/// first, AS(1) = h[0]): upstream fails on any bad hop up; downstream
/// fails when a bad hop going up, AS(i) -> AS(i+1), lies below a bad hop
/// going down, AS(j) -> AS(j-1), with j >= i + 2 (a valley).
fn reference(t: &AspaTable, h: &[u32], dir: Direction) -> AspaState {
    let n = h.len();
    let up_bad = |i: usize, strict: bool| {
        let x = hop(t, h[i - 1], h[i]);
        if strict {
            x == 2
        } else {
            x != 1
        }
    };
    let down_bad = |j: usize, strict: bool| {
        let x = hop(t, h[j - 1], h[j - 2]);
        if strict {
            x == 2
        } else {
            x != 1
        }
    };
    let fails = |strict: bool| match dir {
        Upstream => (1..n).any(|i| up_bad(i, strict)),
        Downstream => (1..n).any(|i| (i + 2..=n).any(|j| up_bad(i, strict) && down_bad(j, strict))),
    };
    if fails(true) {
        Invalid
    } else if fails(false) {
        Unknown
    } else {
        Valid
    }
}

proptest! {
    #[test]
    fn matches_the_pairwise_reference(
        recs in proptest::collection::vec((1u32..8, proptest::collection::vec(1u32..8, 0..4)), 0..8),
        path in proptest::collection::vec(1u32..8, 1..9),
        downstream in any::<bool>(),
    ) {
        let mut t = AspaTable::default();
        for (c, p) in recs {
            t.insert(Aspa::new(c, p));
        }
        let dir = if downstream { Downstream } else { Upstream };
        let mut h: Vec<u32> = Vec::new();
        for a in path.iter().rev() {
            if h.last() != Some(a) {
                h.push(*a);
            }
        }
        let got = t.verify(&path, false, path.first().copied(), dir);
        prop_assert_eq!(got, reference(&t, &h, dir));
        // Downstream never judges worse than upstream.
        let u = t.verify(&path, false, path.first().copied(), Upstream);
        let d = t.verify(&path, false, path.first().copied(), Downstream);
        prop_assert!(!(d == Invalid && u != Invalid));
        prop_assert!(!(u == Valid && d != Valid));
    }
}
