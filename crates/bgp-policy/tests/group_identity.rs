//! Policy analysis for update groups: equal compiled policies share an
//! identity whatever their names, unequal ones never do, and a policy that
//! the analysis calls neighbour-independent gives the same result for
//! every neighbour (with the same local AS where it reads it).

mod common;

use std::net::IpAddr;

use base::Asn;
use bgp_policy::RouteCtx;
use common::*;
use proptest::prelude::*;

/// Term snippets the property test combines.
const TERMS: &[&str] = &[
    "[[term]]\nmatch.as_path = \"^1_\"\nthen.action = \"reject\"\n",
    "[[term]]\nmatch.prefix = [\"10.0.0.0/8 le 32\"]\nthen = { local_pref = 50 }\n",
    "[[term]]\nmatch.community = [\"65000:1\"]\nthen = { med = \"7\", action = \"accept\" }\n",
    "[[term]]\nmatch.as_path_len = \">= 3\"\nthen = { prepend = 2 }\n",
    "[[term]]\nmatch.neighbor = [\"192.0.2.0/25\"]\nthen.action = \"reject\"\n",
    "[[term]]\nthen = { next_hop = \"self\" }\n",
    "[[term]]\nmatch.origin_as = [3]\nthen = { prepend = 1, prepend_as = 65100 }\n",
    "[[term]]\nmatch.as_path = \"_2_\"\nthen = { community_add = [\"65000:9\"] }\n",
];

fn compose(default: bool, terms: &[usize]) -> String {
    let mut s = format!(
        "default = \"{}\"\n",
        if default { "accept" } else { "reject" }
    );
    for &t in terms {
        s.push_str(TERMS[t % TERMS.len()]);
    }
    s
}

#[test]
fn equal_policies_share_an_identity_whatever_their_names() {
    let src = compose(true, &[0, 1, 2]);
    let a = policy(&src);
    let b = policy(&src);
    assert_eq!(a.group_identity(), b.group_identity());
    let c = policy(&compose(true, &[0, 1]));
    assert_ne!(a.group_identity().id, c.group_identity().id);
    let d = policy(&compose(false, &[0, 1, 2]));
    assert_ne!(a.group_identity().id, d.group_identity().id);
    let ga = a.group_identity();
    assert!(!ga.neighbour_specific && !ga.reads_local_as, "{ga:?}");
}

#[test]
fn what_a_policy_reads_of_the_session() {
    let n = policy(&compose(true, &[4])).group_identity();
    assert!(n.neighbour_specific, "match.neighbor: {n:?}");
    let s = policy(&compose(true, &[5])).group_identity();
    assert!(s.neighbour_specific, "next_hop = self: {s:?}");
    let p = policy(&compose(true, &[3])).group_identity();
    assert!(
        !p.neighbour_specific && p.reads_local_as,
        "prepend of our AS: {p:?}"
    );
    let q = policy(&compose(true, &[6])).group_identity();
    assert!(
        !q.neighbour_specific && !q.reads_local_as,
        "prepend of a given AS: {q:?}"
    );
    let r = policy(
        "default = \"accept\"\n[[term]]\nmatch.rpki = \"invalid\"\nthen.action = \"reject\"\n",
    )
    .group_identity();
    assert!(r.reads_local_as, "rpki: {r:?}");
}

fn ctx_of(neighbor: [u8; 4], local_asn: u32, local: [u8; 4]) -> RouteCtx {
    RouteCtx {
        neighbor: IpAddr::from(neighbor),
        neighbor_asn: Asn(65000 + u32::from(neighbor[3])),
        local_asn: Asn(local_asn),
        local_addr: Some(IpAddr::from(local)),
        ..ctx()
    }
}

proptest! {
    /// Two policies with the same identity, not neighbour-specific, give
    /// the same verdict and attributes to two different neighbours (the
    /// same local AS when they read it): what update groups rely on.
    #[test]
    fn same_identity_same_result_for_every_neighbour(
        t1 in proptest::collection::vec(0usize..8, 0..4),
        other in proptest::option::of((proptest::collection::vec(0usize..8, 0..4), any::<bool>())),
        d1 in any::<bool>(),
        n1 in prop_oneof![Just([192u8, 0, 2, 1]), Just([192, 0, 2, 200]), Just([198, 18, 0, 1])],
        n2 in prop_oneof![Just([192u8, 0, 2, 1]), Just([192, 0, 2, 200]), Just([198, 18, 0, 1])],
        as2 in prop_oneof![Just(64500u32), Just(64501)],
        path in proptest::collection::vec(1u32..5, 0..5),
        comm in any::<bool>(),
        p in prop_oneof![Just("10.1.0.0/16"), Just("192.0.2.0/24")],
    ) {
        // Half the cases compare a policy with an equal copy.
        let (t2, d2) = other.unwrap_or_else(|| (t1.clone(), d1));
        let a = policy(&compose(d1, &t1));
        let b = policy(&compose(d2, &t2));
        let (ga, gb) = (a.group_identity(), b.group_identity());
        prop_assert_eq!(ga.id == gb.id, compose(d1, &t1) == compose(d2, &t2));
        prop_assume!(ga.id == gb.id && !ga.neighbour_specific);
        let local_as2 = if ga.reads_local_as { 64500 } else { as2 };
        let c1 = ctx_of(n1, 64500, [198, 18, 0, 1]);
        let c2 = ctx_of(n2, local_as2, [198, 18, 0, 2]);
        let comms: &[(u16, u16)] = if comm { &[(65000, 1)] } else { &[] };
        let r = route(&path, comms);
        let (v1, o1) = run(&a, &c1, p, &r);
        let (v2, o2) = run(&b, &c2, p, &r);
        prop_assert_eq!(v1, v2);
        prop_assert_eq!(format!("{:?}", o1), format!("{:?}", o2));
    }
}
