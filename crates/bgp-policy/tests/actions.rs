//! Actions, term semantics and the per-peer adapters.

mod common;

use std::net::IpAddr;

use base::Asn;
use bgp_policy::{ast::PolicyDef, compile, PeerPolicies, Policy};
use bgp_rib::{ExportPolicy, ExportVerdict, ImportPolicy, Interner, PeerId, Verdict};
use bgp_wire::{AsPath, AttrValue, Community, SegmentType};
use common::*;

fn then(actions: &str) -> Policy {
    policy(&format!(
        "[[term]]\nthen = {{ action = \"accept\", {actions} }}\n"
    ))
}

fn apply(p: &Policy, b: &bgp_rib::AttrsBuilder) -> bgp_rib::AttrsBuilder {
    let (v, out) = run(p, &ctx(), "10.0.0.0/8", b);
    assert_eq!(v, Verdict::Accept);
    out
}

fn c(a: u16, v: u16) -> Community {
    Community((u32::from(a) << 16) | u32::from(v))
}

#[test]
fn local_pref_and_med() {
    let out = apply(&then("local_pref = 200"), &route(&[1], &[]));
    assert_eq!(out.local_pref(), Some(200));
    let base = with(route(&[1], &[]), AttrValue::Med(100));
    assert_eq!(apply(&then("med = \"5\""), &base).med(), Some(5));
    assert_eq!(apply(&then("med = \"+20\""), &base).med(), Some(120));
    assert_eq!(apply(&then("med = \"-30\""), &base).med(), Some(70));
    assert_eq!(apply(&then("med = \"-300\""), &base).med(), Some(0));
    let high = with(route(&[1], &[]), AttrValue::Med(u32::MAX - 1));
    assert_eq!(apply(&then("med = \"+5\""), &high).med(), Some(u32::MAX));
    // No MED counts as 0.
    assert_eq!(
        apply(&then("med = \"+7\""), &route(&[1], &[])).med(),
        Some(7)
    );
    // Setting the value it already has leaves the route untouched.
    let out = apply(&then("med = \"100\""), &base);
    assert!(!out.is_dirty());
}

#[test]
fn community_add_remove_replace() {
    let r = route(&[1], &[(65000, 1), (65000, 2), (3, 3)]);
    let out = apply(&then(r#"community_add = ["1:1", "65000:1"]"#), &r);
    assert_eq!(
        communities(&out),
        vec![c(65000, 1), c(65000, 2), c(3, 3), c(1, 1)]
    );
    let out = apply(&then(r#"community_remove = ["65000:*"]"#), &r);
    assert_eq!(communities(&out), vec![c(3, 3)]);
    let out = apply(&then(r#"community_set = ["9:9", "no-export"]"#), &r);
    assert_eq!(communities(&out), vec![c(9, 9), Community::NO_EXPORT]);
    // set, then remove, then add.
    let out = apply(
        &then(
            r#"community_set = ["9:9", "9:10"], community_remove = ["*:10"], community_add = ["7:7"]"#,
        ),
        &r,
    );
    assert_eq!(communities(&out), vec![c(9, 9), c(7, 7)]);
    // Removing everything drops the attribute; an empty set does too.
    let out = apply(&then(r#"community_remove = ["*:*"]"#), &r);
    assert!(out.get(8).is_none());
    let out = apply(&then("community_set = []"), &r);
    assert!(out.get(8).is_none());
    // Adding what is there already is no edit.
    let out = apply(&then(r#"community_add = ["3:3"]"#), &r);
    assert!(!out.is_dirty());
}

#[test]
fn ext_and_large_community_edits() {
    let r = with(
        route(&[1], &[]),
        AttrValue::ExtendedCommunities(vec![ext([0, 2, 0xfd, 0xe8, 0, 0, 0, 1])]),
    );
    let out = apply(
        &then(r#"ext_community_remove = ["rt:65000:*"], ext_community_add = ["soo:65001:5"]"#),
        &r,
    );
    assert_eq!(
        out.get(16).map(|a| a.value.clone()),
        Some(AttrValue::ExtendedCommunities(vec![ext([
            0, 3, 0xfd, 0xe9, 0, 0, 0, 5
        ])]))
    );
    let r = with(
        route(&[1], &[]),
        AttrValue::LargeCommunities(vec![large(1, 2, 3)]),
    );
    let out = apply(
        &then(r#"large_community_remove = ["1:*:*"], large_community_add = ["64500:1:2"]"#),
        &r,
    );
    assert_eq!(
        out.get(32).map(|a| a.value.clone()),
        Some(AttrValue::LargeCommunities(vec![large(64500, 1, 2)]))
    );
}

#[test]
fn prepend_counts_and_placement() {
    let out = apply(&then("prepend = 3"), &route(&[65001, 3356], &[]));
    assert_eq!(
        as_path(&out),
        Some(AsPath::from_sequence(
            [64500, 64500, 64500, 65001, 3356].map(Asn).to_vec()
        ))
    );
    let out = apply(&then("prepend = 2, prepend_as = 65009"), &route(&[], &[]));
    assert_eq!(
        as_path(&out),
        Some(AsPath::from_sequence(vec![Asn(65009); 2]))
    );
    // Without an AS_PATH attribute one is created.
    let mut bare = route(&[], &[]);
    bare.remove(2);
    bare.mark_clean();
    let out = apply(&then("prepend = 1"), &bare);
    assert_eq!(as_path(&out), Some(AsPath::from_sequence(vec![Asn(64500)])));
    // Behind leading confederation segments; before a leading set.
    let confed = with(
        route(&[], &[]),
        AttrValue::AsPath(AsPath {
            segments: vec![
                seq(SegmentType::ConfedSequence, &[65500]),
                seq(SegmentType::Set, &[1, 2]),
            ],
        }),
    );
    let out = apply(&then("prepend = 1"), &confed);
    assert_eq!(
        as_path(&out).unwrap().segments,
        vec![
            seq(SegmentType::ConfedSequence, &[65500]),
            seq(SegmentType::Sequence, &[64500]),
            seq(SegmentType::Set, &[1, 2]),
        ]
    );
    // prepend = 0 is no action.
    assert!(!apply(&then("prepend = 0"), &route(&[1], &[])).is_dirty());
}

#[test]
fn next_hop_self_and_address() {
    let out = apply(&then(r#"next_hop = "self""#), &route(&[1], &[]));
    assert_eq!(nh(&out), Some("192.0.2.254".parse().unwrap()));
    let out = apply(&then(r#"next_hop = "203.0.113.9""#), &route(&[1], &[]));
    assert_eq!(nh(&out), Some("203.0.113.9".parse().unwrap()));
    // An IPv4 next hop cannot carry an IPv6 route: left alone.
    let p = then(r#"next_hop = "self""#);
    let (_, out) = run(&p, &ctx(), "2001:db8::/32", &route(&[1], &[]));
    assert!(!out.is_dirty());
    // An IPv6 one may carry an IPv4 route (RFC 8950).
    let mut c6 = ctx();
    c6.local_addr = Some("2001:db8::fe".parse().unwrap());
    let (_, out) = run(&p, &c6, "10.0.0.0/8", &route(&[1], &[]));
    assert_eq!(nh(&out), Some("2001:db8::fe".parse::<IpAddr>().unwrap()));
}

#[test]
fn term_order_first_decision_wins_and_default() {
    let p = policy(
        r#"
        default = "accept"
        [[term]]
        name = "tag"
        match.community = ["1:1"]
        then = { local_pref = 50, community_add = ["2:2"] }
        [[term]]
        name = "sees-the-edit"
        match.community = ["2:2"]
        then = { med = "9", action = "accept" }
        [[term]]
        name = "never-reached-for-tagged"
        then.action = "reject"
        "#,
    );
    // Term 0 edits and continues; term 1 sees its community and accepts.
    let (v, out) = run(&p, &ctx(), "10.0.0.0/8", &route(&[1], &[(1, 1)]));
    assert_eq!(v, Verdict::Accept);
    assert_eq!((out.local_pref(), out.med()), (Some(50), Some(9)));
    // Untagged routes fall through to the reject.
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[1], &[])),
        Verdict::Reject
    );

    // No decisive term: the default, keeping edits.
    let p = policy("default = \"accept\"\n[[term]]\nthen.local_pref = 7\n");
    let (v, out) = run(&p, &ctx(), "10.0.0.0/8", &route(&[1], &[]));
    assert_eq!((v, out.local_pref()), (Verdict::Accept, Some(7)));
    // An absent default rejects.
    let p = policy("[[term]]\nthen.local_pref = 7\n");
    assert_eq!(
        verdict(&p, "10.0.0.0/8", &route(&[1], &[])),
        Verdict::Reject
    );
    assert_eq!(
        verdict(&policy(""), "10.0.0.0/8", &route(&[1], &[])),
        Verdict::Reject
    );
}

#[test]
fn export_reads_in_place_and_replaces_only_on_edits() {
    let mut i = Interner::new();
    let h = i.intern(&route(&[1], &[(1, 1)]));
    let set = i.get(h).unwrap().clone();
    let pre = pfx("10.0.0.0/8");
    let accept = policy("default = \"accept\"");
    assert_eq!(accept.export(&ctx(), &pre, &set), ExportVerdict::Accept);
    let noop = then(r#"community_add = ["1:1"]"#);
    assert_eq!(noop.export(&ctx(), &pre, &set), ExportVerdict::Accept);
    let edit = then("local_pref = 1");
    assert!(
        matches!(edit.export(&ctx(), &pre, &set), ExportVerdict::Replace(b) if b.local_pref() == Some(1))
    );
    // Edits before a reject are dropped with the route.
    let rej = policy("[[term]]\nthen = { local_pref = 1, action = \"reject\" }\n");
    assert_eq!(rej.export(&ctx(), &pre, &set), ExportVerdict::Reject);
}

#[test]
fn peer_policies_adapter() {
    let rej = std::sync::Arc::new(Policy::constant(Verdict::Reject));
    let lp = std::sync::Arc::new(then("local_pref = 9"));
    let mut t = PeerPolicies {
        import: vec![None, Some(rej.clone()), Some(lp.clone())],
        export: vec![Some(rej), None],
        ctx: vec![ctx(); 2],
    };
    let pre = pfx("10.0.0.0/8");
    let mut b = route(&[1], &[]);
    assert_eq!(
        ImportPolicy::import(&mut t, PeerId(0), &pre, &mut b),
        Verdict::Accept
    );
    assert_eq!(
        ImportPolicy::import(&mut t, PeerId(1), &pre, &mut b),
        Verdict::Reject
    );
    // Peer 2 has a policy but no ctx: defaults apply.
    assert_eq!(
        ImportPolicy::import(&mut t, PeerId(2), &pre, &mut b),
        Verdict::Accept
    );
    assert_eq!(b.local_pref(), Some(9));
    // Past the end: accept.
    assert_eq!(
        ImportPolicy::import(&mut t, PeerId(9), &pre, &mut b),
        Verdict::Accept
    );
    let mut i = Interner::new();
    let h = i.intern(&b);
    let set = i.get(h).unwrap().clone();
    let mut r = &t;
    assert_eq!(
        r.export(PeerId(0), &pre, PeerId(1), &set),
        ExportVerdict::Reject
    );
    assert_eq!(
        r.export(PeerId(1), &pre, PeerId(0), &set),
        ExportVerdict::Accept
    );
    assert_eq!(
        r.export(PeerId(7), &pre, PeerId(0), &set),
        ExportVerdict::Accept
    );
}

#[test]
fn compile_errors_name_term_field_and_reason() {
    let def: PolicyDef = toml::from_str(
        r#"
        [[term]]
        then.action = "accept"
        [[term]]
        then.action = "accept"
        [[term]]
        name = "x"
        match.prefix = ["10.0.0.0/8", "10.0.0.0/33"]
        "#,
    )
    .unwrap();
    let e = compile(&def).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"term 2 (name "x"): match.prefix[1]: "10.0.0.0/33": prefix length 33 > 32"#
    );
    assert_eq!(
        (e.term, e.index, e.field),
        (Some(2), Some(1), "match.prefix")
    );

    let mut all = std::collections::BTreeMap::new();
    all.insert("ok".to_string(), PolicyDef::default());
    let bad: PolicyDef = toml::from_str("[[term]]\nmatch.as_path = \"^65001_(\"\n").unwrap();
    all.insert("bad".to_string(), bad);
    let e = bgp_policy::compile_all(&all).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"policy "bad": term 0: match.as_path: "^65001_(": at character 8: unbalanced parentheses"#
    );

    for (src, field) in [
        ("default = \"maybe\"", "default"),
        ("[[term]]\nthen.action = \"allow\"", "then.action"),
        ("[[term]]\nthen.med = \"x5\"", "then.med"),
        ("[[term]]\nthen.prepend = 65", "then.prepend"),
        ("[[term]]\nthen.prepend_as = 1", "then.prepend_as"),
        ("[[term]]\nthen.next_hop = \"me\"", "then.next_hop"),
        (
            "[[term]]\nthen.community_add = [\"1:*\"]",
            "then.community_add",
        ),
        ("[[term]]\nmatch.afi = \"ipx\"", "match.afi"),
        (
            "[[term]]\nmatch.as_path_len = \"<= x\"",
            "match.as_path_len",
        ),
        (
            "[[term]]\nmatch.neighbor = [\"192.0.2.1/40\"]",
            "match.neighbor",
        ),
        (
            "[[term]]\nmatch.large_community = [\"1:2\"]",
            "match.large_community",
        ),
        (
            "[[term]]\nmatch.ext_community = [\"rt:1\"]",
            "match.ext_community",
        ),
    ] {
        let def: PolicyDef = toml::from_str(src).unwrap();
        let e = compile(&def).unwrap_err();
        assert_eq!(e.field, field, "{src}: {e}");
    }
}
