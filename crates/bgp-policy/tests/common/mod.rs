//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr};

use base::{Afi, Asn, Prefix};
use bgp_policy::{ast::PolicyDef, compile, Policy, RouteCtx};
use bgp_rib::{AttrSet, AttrsBuilder, ExportVerdict, Interner, Verdict};
use bgp_wire::{
    AsPath, AsSegment, AttrValue, Community, ExtCommunity, LargeCommunity, NextHop, Origin,
    PathAttr, SegmentType,
};

pub fn policy(toml_src: &str) -> Policy {
    let def: PolicyDef = toml::from_str(toml_src).expect("test policy parses as TOML");
    compile(&def).unwrap_or_else(|e| panic!("test policy compiles: {e}"))
}

pub fn ctx() -> RouteCtx {
    RouteCtx {
        neighbor: "192.0.2.1".parse().unwrap(),
        neighbor_asn: Asn(65001),
        local_asn: Asn(64500),
        router_id: Ipv4Addr::new(10, 0, 0, 1),
        local_addr: Some("192.0.2.254".parse().unwrap()),
        afi: Afi::Ipv4,
        rpki: Default::default(),
        aspa: None,
    }
}

pub fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

/// A route with the given AS path (one AS_SEQUENCE), communities and an
/// IPv4 next hop.
pub fn route(path: &[u32], comms: &[(u16, u16)]) -> AttrsBuilder {
    let mut v = vec![
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
            path.iter().map(|&a| Asn(a)).collect(),
        ))),
        PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(198, 51, 100, 1))),
    ];
    if !comms.is_empty() {
        v.push(PathAttr::new(AttrValue::Communities(
            comms
                .iter()
                .map(|&(a, b)| Community((u32::from(a) << 16) | u32::from(b)))
                .collect(),
        )));
    }
    let mut b = AttrsBuilder::from_attrs(v);
    b.mark_clean();
    b
}

pub fn with(mut b: AttrsBuilder, a: AttrValue) -> AttrsBuilder {
    b.set(PathAttr::new(a));
    b.mark_clean();
    b
}

pub fn ext(b: [u8; 8]) -> ExtCommunity {
    ExtCommunity(b)
}

pub fn large(g: u32, a: u32, c: u32) -> LargeCommunity {
    LargeCommunity {
        global_admin: g,
        local_data1: a,
        local_data2: c,
    }
}

pub fn seq(kind: SegmentType, asns: &[u32]) -> AsSegment {
    AsSegment {
        kind,
        asns: asns.iter().map(|&a| Asn(a)).collect(),
    }
}

pub fn communities(b: &AttrsBuilder) -> Vec<Community> {
    match b.get(8).map(|a| &a.value) {
        Some(AttrValue::Communities(c)) => c.clone(),
        _ => vec![],
    }
}

pub fn as_path(b: &AttrsBuilder) -> Option<AsPath> {
    match b.get(2).map(|a| &a.value) {
        Some(AttrValue::AsPath(p)) => Some(p.clone()),
        _ => None,
    }
}

pub fn nh(b: &AttrsBuilder) -> Option<IpAddr> {
    b.next_hop().map(|n| match n {
        NextHop::V4(a) => IpAddr::V4(a),
        NextHop::V6(a) | NextHop::V6LinkLocal(a, _) => IpAddr::V6(a),
    })
}

/// The outcome of a policy on a route, computed both ways: import on a
/// copy of the builder, and export on the interned set. Asserts that both
/// agree on the verdict and on the resulting attribute set, and returns
/// the verdict and the resulting attributes (the input when unchanged).
pub fn run(p: &Policy, c: &RouteCtx, prefix: &str, b: &AttrsBuilder) -> (Verdict, AttrsBuilder) {
    let prefix = pfx(prefix);
    let mut interner = Interner::new();
    let h = interner.intern(b);
    let set: AttrSet = interner.get(h).expect("interned").clone();

    let mut imp = b.clone();
    imp.mark_clean();
    let vi = p.import(c, &prefix, &mut imp);
    let ve = p.export(c, &prefix, &set);
    let exp = match (&ve, vi) {
        (ExportVerdict::Reject, Verdict::Reject) => return (Verdict::Reject, imp),
        (ExportVerdict::Accept, Verdict::Accept) => {
            assert!(!imp.is_dirty(), "export kept the set but import edited it");
            return (Verdict::Accept, imp);
        }
        (ExportVerdict::Replace(e), Verdict::Accept) => e.clone(),
        (e, i) => panic!("import {i:?} but export {e:?}"),
    };
    assert!(
        imp.is_dirty(),
        "export replaced the set but import did not edit it"
    );
    let hi = interner.intern(&imp);
    let he = interner.intern(&exp);
    assert_eq!(
        interner.get(hi),
        interner.get(he),
        "import and export edits differ"
    );
    (Verdict::Accept, imp)
}

/// Just the verdict (both ways, see [`run`]).
pub fn verdict(p: &Policy, prefix: &str, b: &AttrsBuilder) -> Verdict {
    run(p, &ctx(), prefix, b).0
}
