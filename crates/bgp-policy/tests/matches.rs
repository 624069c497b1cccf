//! One test per match kind, each run through import and export (which must
//! agree, see `common::run`).

mod common;

use bgp_rib::Verdict::{Accept, Reject};
use bgp_wire::{AttrValue, NextHop, SegmentType};
use common::*;

fn accept_if(m: &str) -> bgp_policy::Policy {
    policy(&format!(
        "[[term]]\nmatch = {{ {m} }}\nthen.action = \"accept\"\n"
    ))
}

#[test]
fn prefix_list_with_ge_le() {
    let p = accept_if(r#"prefix = ["10.0.0.0/8 ge 16 le 24", "2001:db8::/32 le 48"]"#);
    let r = route(&[1], &[]);
    assert_eq!(verdict(&p, "10.1.0.0/16", &r), Accept);
    assert_eq!(verdict(&p, "10.1.2.0/24", &r), Accept);
    assert_eq!(verdict(&p, "10.1.2.0/25", &r), Reject);
    assert_eq!(verdict(&p, "10.0.0.0/8", &r), Reject);
    assert_eq!(verdict(&p, "11.0.0.0/16", &r), Reject);
    assert_eq!(verdict(&p, "2001:db8::/32", &r), Accept);
    assert_eq!(verdict(&p, "2001:db8:ff::/48", &r), Accept);
    assert_eq!(verdict(&p, "2001:db8::/49", &r), Reject);
}

#[test]
fn as_path_regex() {
    let p = accept_if(r#"as_path = "^65001_(.*_)?3356$""#);
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[65001, 3356], &[])),
        Accept
    );
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[65001, 7, 8, 3356], &[])),
        Accept
    );
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[65001, 3356, 7], &[])),
        Reject
    );
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[7, 65001, 3356], &[])),
        Reject
    );
    // A path with a set and confederation segments: all ASNs are tokens.
    let r = with(
        route(&[], &[]),
        AttrValue::AsPath(bgp_wire::AsPath {
            segments: vec![
                seg(SegmentType::ConfedSequence, &[65500]),
                seg(SegmentType::Sequence, &[65001]),
                seg(SegmentType::Set, &[3356]),
            ],
        }),
    );
    assert_eq!(
        verdict(
            &accept_if(r#"as_path = "^65500_65001_3356$""#),
            "10.0.0.0/8",
            &r
        ),
        Accept
    );
    // No AS_PATH at all is the empty path.
    let mut bare = route(&[], &[]);
    bare.remove(2);
    assert_eq!(
        verdict(&accept_if(r#"as_path = "^$""#), "10.0.0.0/8", &bare),
        Accept
    );
}

fn seg(k: SegmentType, a: &[u32]) -> bgp_wire::AsSegment {
    common::seq(k, a)
}

#[test]
fn origin_as_and_path_len() {
    let p = accept_if("origin_as = [3356, 174]");
    assert_eq!(verdict(&p, "10.0.0.0/8", &route(&[1, 174], &[])), Accept);
    assert_eq!(verdict(&p, "10.0.0.0/8", &route(&[174, 1], &[])), Reject);
    assert_eq!(verdict(&p, "10.0.0.0/8", &route(&[], &[])), Reject);
    // An AS_SET at the end has no origin AS.
    let r = with(
        route(&[], &[]),
        AttrValue::AsPath(bgp_wire::AsPath {
            segments: vec![
                seg(SegmentType::Sequence, &[1]),
                seg(SegmentType::Set, &[174]),
            ],
        }),
    );
    assert_eq!(verdict(&p, "10.0.0.0/8", &r), Reject);

    for (cond, len, want) in [
        ("\"<= 2\"", 2, Accept),
        ("\"<= 2\"", 3, Reject),
        ("\">= 2\"", 1, Reject),
        ("\">= 2\"", 2, Accept),
        ("\"< 2\"", 2, Reject),
        ("\"> 2\"", 3, Accept),
        ("\"2\"", 2, Accept),
        ("\"2\"", 3, Reject),
        ("\"2-4\"", 4, Accept),
        ("\"2-4\"", 5, Reject),
    ] {
        let p = accept_if(&format!("as_path_len = {cond}"));
        let path: Vec<u32> = (1..=len).collect();
        assert_eq!(
            verdict(&p, "10.0.0.0/8", &route(&path, &[])),
            want,
            "{cond} {len}"
        );
    }
    // RFC 4271 §9.1.2.2 a: a set counts one.
    assert_eq!(
        verdict(&accept_if("as_path_len = \"2\""), "10.0.0.0/8", &r),
        Accept
    );
}

#[test]
fn standard_communities_with_wildcards() {
    let p = accept_if(r#"community = ["65000:*", "no-export"]"#);
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[1], &[(65000, 7)])),
        Accept
    );
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[1], &[(1, 1), (65535, 0xff01)])),
        Accept
    );
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[1], &[(65001, 7)])),
        Reject
    );
    assert_eq!(verdict(&p, "10.0.0.0/8", &route(&[1], &[])), Reject);
    let p = accept_if(r#"community = ["*:100-199"]"#);
    assert_eq!(verdict(&p, "10.0.0.0/8", &route(&[1], &[(9, 199)])), Accept);
    assert_eq!(verdict(&p, "10.0.0.0/8", &route(&[1], &[(9, 200)])), Reject);
}

#[test]
fn extended_and_large_communities() {
    let p = accept_if(r#"ext_community = ["rt:65000:*"]"#);
    let r = with(
        route(&[1], &[]),
        AttrValue::ExtendedCommunities(vec![ext([0, 2, 0xfd, 0xe8, 0, 0, 0, 9])]),
    );
    assert_eq!(verdict(&p, "10.0.0.0/8", &r), Accept);
    let r = with(
        route(&[1], &[]),
        AttrValue::ExtendedCommunities(vec![ext([0, 3, 0xfd, 0xe8, 0, 0, 0, 9])]),
    );
    assert_eq!(verdict(&p, "10.0.0.0/8", &r), Reject);

    let p = accept_if(r#"large_community = ["4200000000:*:5"]"#);
    let r = with(
        route(&[1], &[]),
        AttrValue::LargeCommunities(vec![large(1, 2, 3), large(4_200_000_000, 77, 5)]),
    );
    assert_eq!(verdict(&p, "10.0.0.0/8", &r), Accept);
    let r = with(
        route(&[1], &[]),
        AttrValue::LargeCommunities(vec![large(4_200_000_000, 77, 6)]),
    );
    assert_eq!(verdict(&p, "10.0.0.0/8", &r), Reject);
}

#[test]
fn next_hop_neighbor_and_afi() {
    let p = accept_if(r#"next_hop = ["198.51.100.0/24"]"#);
    let r = route(&[1], &[]);
    assert_eq!(verdict(&p, "10.0.0.0/8", &r), Accept);
    let mut other = r.clone();
    other.set_next_hop(NextHop::V4("203.0.113.1".parse().unwrap()));
    other.mark_clean();
    assert_eq!(verdict(&p, "10.0.0.0/8", &other), Reject);
    let mut v6 = r.clone();
    v6.set_next_hop(NextHop::V6LinkLocal(
        "2001:db8::1".parse().unwrap(),
        "fe80::1".parse().unwrap(),
    ));
    v6.mark_clean();
    let p6 = accept_if(r#"next_hop = ["2001:db8::1"]"#);
    assert_eq!(verdict(&p6, "2001:db8:5::/48", &v6), Accept);

    let p = accept_if(r#"neighbor = ["192.0.2.0/30", "2001:db8::7"]"#);
    let mut c = ctx();
    assert_eq!(run(&p, &c, "10.0.0.0/8", &r).0, Accept);
    c.neighbor = "192.0.2.9".parse().unwrap();
    assert_eq!(run(&p, &c, "10.0.0.0/8", &r).0, Reject);
    c.neighbor = "2001:db8::7".parse().unwrap();
    assert_eq!(run(&p, &c, "10.0.0.0/8", &r).0, Accept);

    let p = accept_if(r#"afi = "ipv6""#);
    assert_eq!(verdict(&p, "2001:db8::/32", &r), Accept);
    assert_eq!(verdict(&p, "10.0.0.0/8", &r), Reject);
}

#[test]
fn all_conditions_of_a_term_must_hold() {
    let p = accept_if(r#"prefix = ["10.0.0.0/8 le 24"], origin_as = [3356], community = ["1:1"]"#);
    assert_eq!(
        verdict(&p, "10.1.0.0/16", &route(&[3356], &[(1, 1)])),
        Accept
    );
    assert_eq!(
        verdict(&p, "10.1.0.0/16", &route(&[3356], &[(1, 2)])),
        Reject
    );
    assert_eq!(
        verdict(&p, "10.1.0.0/16", &route(&[174], &[(1, 1)])),
        Reject
    );
    assert_eq!(
        verdict(&p, "11.1.0.0/16", &route(&[3356], &[(1, 1)])),
        Reject
    );
    // An empty match holds for every route.
    let any = policy("[[term]]\nthen.action = \"accept\"\n");
    assert_eq!(verdict(&any, "11.1.0.0/16", &route(&[], &[])), Accept);
}

#[test]
fn aspa_state() {
    use bgp_policy::AspaState;
    let p = accept_if("aspa = \"invalid\"");
    assert!(p.uses_aspa());
    assert!(!p.uses_rpki());
    assert!(!accept_if("rpki = \"invalid\"").uses_aspa());
    let b = route(&[65001], &[]);
    for (state, want) in [
        (Some(AspaState::Invalid), Accept),
        (Some(AspaState::Valid), Reject),
        (Some(AspaState::Unknown), Reject),
        // Not verified: no aspa match accepts it.
        (None, Reject),
    ] {
        let c = bgp_policy::RouteCtx {
            aspa: state,
            ..ctx()
        };
        assert_eq!(run(&p, &c, "192.0.2.0/24", &b).0, want, "{state:?}");
    }
    let p = accept_if("aspa = \"unknown\"");
    assert_eq!(run(&p, &ctx(), "192.0.2.0/24", &b).0, Reject);
    let def: bgp_policy::ast::PolicyDef =
        toml::from_str("[[term]]\nmatch = { aspa = \"not-found\" }\n").unwrap();
    let e = bgp_policy::compile(&def).unwrap_err();
    assert_eq!(e.field, "match.aspa");
    assert_eq!(e.kind, bgp_policy::ErrorKind::UnknownAspaState);
}

#[test]
fn aspa_path_reading() {
    let mut out = Vec::new();
    let b = route(&[65001, 65001, 65002], &[]);
    assert!(!bgp_policy::aspa_path_of_builder(&b, &mut out));
    assert_eq!(out, vec![65001, 65001, 65002]);
    let mut with_set = b.clone();
    with_set.set(bgp_wire::PathAttr::new(AttrValue::AsPath(
        bgp_wire::AsPath {
            segments: vec![
                bgp_wire::AsSegment {
                    kind: SegmentType::Sequence,
                    asns: vec![base::Asn(65001)],
                },
                bgp_wire::AsSegment {
                    kind: SegmentType::Set,
                    asns: vec![base::Asn(65003), base::Asn(65004)],
                },
            ],
        },
    )));
    assert!(bgp_policy::aspa_path_of_builder(&with_set, &mut out));
    assert_eq!(out, vec![65001]);
}

#[test]
fn rpki_state() {
    use bgp_policy::RovState;
    let p = accept_if("rpki = \"invalid\"");
    assert!(p.uses_rpki());
    assert!(!accept_if("afi = \"ipv4\"").uses_rpki());
    let b = route(&[65001], &[]);
    for (state, want) in [
        (RovState::Invalid, Accept),
        (RovState::Valid, Reject),
        (RovState::NotFound, Reject),
    ] {
        let c = bgp_policy::RouteCtx {
            rpki: state,
            ..ctx()
        };
        assert_eq!(run(&p, &c, "192.0.2.0/24", &b).0, want, "{state}");
    }
    let p = accept_if("rpki = \"not-found\"");
    assert_eq!(run(&p, &ctx(), "192.0.2.0/24", &b).0, Accept);
    let def: bgp_policy::ast::PolicyDef =
        toml::from_str("[[term]]\nmatch = { rpki = \"bogus\" }\n").unwrap();
    let e = bgp_policy::compile(&def).unwrap_err();
    assert_eq!(e.field, "match.rpki");
    assert_eq!(e.kind, bgp_policy::ErrorKind::UnknownRpkiState);
}

#[test]
fn rfc6811_origin() {
    use base::Asn;
    let local = Asn(64500);
    let b = route(&[65001, 65002], &[]);
    assert_eq!(bgp_policy::origin_of_builder(&b, local), Some(65002));
    let empty = route(&[], &[]);
    assert_eq!(bgp_policy::origin_of_builder(&empty, local), Some(64500));
    let set = with(
        route(&[], &[]),
        AttrValue::AsPath(bgp_wire::AsPath {
            segments: vec![
                seq(SegmentType::Sequence, &[65001]),
                seq(SegmentType::Set, &[65002, 65003]),
            ],
        }),
    );
    assert_eq!(bgp_policy::origin_of_builder(&set, local), None);
    let mut interner = bgp_rib::Interner::new();
    for (b, want) in [(&b, Some(65002)), (&empty, Some(64500)), (&set, None)] {
        let h = interner.intern(b);
        let s = interner.get(h).unwrap();
        assert_eq!(bgp_policy::origin_of_set(s, local), want);
    }
}
