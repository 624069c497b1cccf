//! UPDATE encoder: every rewrite rule, packing, AS4 for 2-octet peers,
//! ADD-PATH, RFC 8950, End-of-RIB. Every message is parsed back with
//! bgp-wire's views and `AttrsBuilder::from_update`.

use std::net::{Ipv4Addr, Ipv6Addr};

use base::{AfiSafi, Asn, Prefix, Prefix4};
use bgp_rib::{
    AttrsBuilder, BestPathConfig, EncodeParams, ExportBatch, NextHopMode, RibShard, UpdateEncoder,
};
use bgp_wire::consts::{attr_flags as af, attr_type as at};
use bgp_wire::{
    frame, Aggregator, AsPath, AsSegment, AttrValue, Community, NextHop, Nlri, Origin, ParseCtx,
    PathAttr, SegmentType, UpdateView,
};

const LOCAL: Asn = Asn(65000);

fn pfx(s: &str) -> Prefix {
    s.parse().unwrap()
}

fn params(ebgp: bool) -> EncodeParams {
    EncodeParams {
        local_asn: LOCAL,
        peer_asn: if ebgp { Asn(65100) } else { LOCAL },
        ebgp,
        four_octet_asn: true,
        extended_message: false,
        families: vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST],
        add_path_tx: vec![],
        next_hop: NextHopMode::Auto,
        ext_next_hop: vec![],
        local_v4: Some(Ipv4Addr::new(192, 0, 2, 1)),
        local_v6: Some("2001:db8::1".parse().unwrap()),
        local_v6_link_local: Some("fe80::1".parse().unwrap()),
        route_server: false,
    }
}

fn ctx_for(p: &EncodeParams) -> ParseCtx {
    let mut c = ParseCtx::legacy()
        .with_four_octet_asn(p.four_octet_asn)
        .with_extended_message(p.extended_message);
    for af in &p.add_path_tx {
        c = c.with_add_path(*af, true);
    }
    c
}

fn path(asns: &[u32]) -> PathAttr {
    PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
        asns.iter().map(|&a| Asn(a)).collect(),
    )))
}

/// A set exercising every rule: LOCAL_PREF, MED, ORIGINATOR_ID,
/// CLUSTER_LIST, communities, an unknown transitive and an unknown
/// non-transitive attribute.
fn rich_set(nh: NextHop) -> AttrsBuilder {
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        path(&[65001, 65002]),
        PathAttr::new(AttrValue::LocalPref(200)),
        PathAttr::new(AttrValue::Med(5)),
        PathAttr::new(AttrValue::Communities(vec![Community(0xfde8_0001)])),
        PathAttr::new(AttrValue::OriginatorId(Ipv4Addr::new(10, 9, 9, 9))),
        PathAttr::new(AttrValue::ClusterList(vec![Ipv4Addr::new(10, 8, 8, 8)])),
        PathAttr {
            flags: af::OPTIONAL | af::TRANSITIVE,
            value: AttrValue::Raw {
                type_code: 99,
                value: vec![1, 2, 3],
            },
        },
        PathAttr {
            flags: af::OPTIONAL,
            value: AttrValue::Raw {
                type_code: 98,
                value: vec![4],
            },
        },
    ]);
    b.set_next_hop(nh);
    b
}

/// One parsed UPDATE.
#[derive(Debug)]
struct Msg {
    len: usize,
    attrs: AttrsBuilder,
    /// (type code, flags) in wire order.
    codes: Vec<(u8, u8)>,
    announce: Vec<Nlri>,
    withdraw: Vec<Nlri>,
    mp_afi: Option<AfiSafi>,
    eor: Option<AfiSafi>,
}

fn parse_all(buf: &[u8], ctx: ParseCtx) -> Vec<Msg> {
    let mut off = 0;
    let mut out = Vec::new();
    while off < buf.len() {
        let f = frame(&buf[off..], ctx)
            .expect("valid header")
            .expect("whole message");
        assert_eq!(f.header.msg_type, 2);
        let v = UpdateView::parse(f.body, ctx).unwrap();
        v.validate().expect("RFC 7606 checks pass");
        let mut announce: Vec<Nlri> = v.nlri().map(Result::unwrap).collect();
        let mut withdraw: Vec<Nlri> = v.withdrawn().map(Result::unwrap).collect();
        let mut mp_afi = None;
        if let Some(m) = v.mp_reach() {
            let m = m.unwrap();
            mp_afi = Some(m.afi_safi);
            announce.extend(m.nlri().map(Result::unwrap));
        }
        if let Some(m) = v.mp_unreach() {
            withdraw.extend(m.unwrap().withdrawn().map(Result::unwrap));
        }
        out.push(Msg {
            len: f.len,
            attrs: AttrsBuilder::from_update(&v).unwrap(),
            codes: v
                .attributes()
                .map(|a| {
                    let a = a.unwrap();
                    (a.type_code, a.flags)
                })
                .collect(),
            announce,
            withdraw,
            mp_afi,
            eor: v.end_of_rib(),
        });
        off += f.len;
    }
    out
}

/// Encodes `prefixes` sharing `set` with `p`; returns the parsed messages.
fn encode_one(p: EncodeParams, set: &AttrsBuilder, prefixes: &[Prefix]) -> Vec<Msg> {
    let mut s = RibShard::new(BestPathConfig::default());
    let h = s.intern(set);
    let batch = ExportBatch {
        announce: vec![(h, prefixes.to_vec())],
        withdraw: vec![],
        ..Default::default()
    };
    let ctx = ctx_for(&p);
    let mut enc = UpdateEncoder::new(p);
    let mut out = Vec::new();
    let n = enc.encode(&s, &batch, &mut out);
    let msgs = parse_all(&out, ctx);
    assert_eq!(n, msgs.len());
    msgs
}

fn as_path_of(b: &AttrsBuilder) -> Option<AsPath> {
    match b.get(at::AS_PATH).map(|a| &a.value) {
        Some(AttrValue::AsPath(p)) => Some(p.clone()),
        _ => None,
    }
}

fn seq(asns: &[u32]) -> AsPath {
    AsPath::from_sequence(asns.iter().map(|&a| Asn(a)).collect())
}

fn codes(m: &Msg) -> Vec<u8> {
    m.codes.iter().map(|c| c.0).collect()
}

#[test]
fn ebgp_rewrites_and_roundtrips_v4_and_v6() {
    let set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    let prefixes = [
        pfx("10.0.0.0/8"),
        pfx("10.1.0.0/16"),
        pfx("2001:db8:1::/48"),
    ];
    let msgs = encode_one(params(true), &set, &prefixes);
    assert_eq!(msgs.len(), 2, "one classic IPv4 UPDATE, one MP_REACH");
    let v4 = &msgs[0];
    assert_eq!(v4.mp_afi, None);
    assert_eq!(
        v4.announce,
        vec![Nlri::new(prefixes[0]), Nlri::new(prefixes[1])]
    );
    // RFC 4271 §5.1.2: local AS prepended towards eBGP.
    assert_eq!(as_path_of(&v4.attrs), Some(seq(&[65000, 65001, 65002])));
    // Next hop self towards eBGP under Auto.
    assert_eq!(
        v4.attrs.next_hop(),
        Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1)))
    );
    // LOCAL_PREF, ORIGINATOR_ID, CLUSTER_LIST dropped; unknown
    // non-transitive (98) dropped; unknown transitive (99) kept with the
    // Partial bit; ascending type codes (RFC 4271 §5).
    assert_eq!(codes(v4), vec![1, 2, 3, 4, 8, 99]);
    let (_, f99) = v4.codes.iter().find(|c| c.0 == 99).unwrap();
    assert_ne!(f99 & af::PARTIAL, 0);
    // MED is left to the propagation rules (see Propagation).
    assert_eq!(v4.attrs.med(), Some(5));
    let v6 = &msgs[1];
    assert_eq!(v6.mp_afi, Some(AfiSafi::IPV6_UNICAST));
    assert_eq!(v6.announce, vec![Nlri::new(prefixes[2])]);
    // RFC 2545 §3: global + link-local when the session has one.
    assert_eq!(
        v6.attrs.next_hop(),
        Some(NextHop::V6LinkLocal(
            "2001:db8::1".parse().unwrap(),
            "fe80::1".parse().unwrap()
        ))
    );
    assert_eq!(codes(v6), vec![1, 2, 4, 8, 14, 99]);
    // Everything else round-trips: the decoded set equals the original
    // with the rewrites applied.
    let mut want = set.clone();
    for c in [at::LOCAL_PREF, at::ORIGINATOR_ID, at::CLUSTER_LIST, 98] {
        want.remove(c);
    }
    want.set(path(&[65000, 65001, 65002]));
    want.set(PathAttr {
        flags: af::OPTIONAL | af::TRANSITIVE | af::PARTIAL,
        value: AttrValue::Raw {
            type_code: 99,
            value: vec![1, 2, 3],
        },
    });
    want.set_next_hop(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1)));
    let mut got: Vec<PathAttr> = v4.attrs.attrs().to_vec();
    let mut exp: Vec<PathAttr> = want.attrs().to_vec();
    got.sort_by_key(PathAttr::type_code);
    exp.sort_by_key(PathAttr::type_code);
    assert_eq!(got, exp);
}

#[test]
fn ibgp_keeps_attributes_adds_local_pref_and_keeps_next_hop() {
    let nh = NextHop::V4(Ipv4Addr::new(198, 51, 100, 7));
    let set = rich_set(nh);
    let msgs = encode_one(params(false), &set, &[pfx("10.0.0.0/8")]);
    let m = &msgs[0];
    assert_eq!(
        as_path_of(&m.attrs),
        Some(seq(&[65001, 65002])),
        "no prepend"
    );
    assert_eq!(m.attrs.local_pref(), Some(200), "LOCAL_PREF kept");
    assert!(m.attrs.get(at::ORIGINATOR_ID).is_some());
    assert!(m.attrs.get(at::CLUSTER_LIST).is_some());
    assert_eq!(m.attrs.next_hop(), Some(nh), "Auto: unchanged towards iBGP");
    // Without LOCAL_PREF, 100 is added (RFC 4271 §5.1.5: MUST towards iBGP).
    let mut no_lp = set.clone();
    no_lp.remove(at::LOCAL_PREF);
    let msgs = encode_one(params(false), &no_lp, &[pfx("10.0.0.0/8")]);
    assert_eq!(msgs[0].attrs.local_pref(), Some(100));
    // next-hop-self towards iBGP.
    let mut p = params(false);
    p.next_hop = NextHopMode::SelfAlways;
    let msgs = encode_one(p, &set, &[pfx("10.0.0.0/8")]);
    assert_eq!(
        msgs[0].attrs.next_hop(),
        Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1)))
    );
    // Unchanged towards eBGP (third-party next hop).
    let mut p = params(true);
    p.next_hop = NextHopMode::Unchanged;
    let msgs = encode_one(p, &set, &[pfx("10.0.0.0/8")]);
    assert_eq!(msgs[0].attrs.next_hop(), Some(nh));
}

#[test]
fn route_server_client_gets_no_prepend_and_same_next_hop() {
    let nh = NextHop::V4(Ipv4Addr::new(198, 51, 100, 7));
    let mut p = params(true);
    p.route_server = true;
    let msgs = encode_one(p, &rich_set(nh), &[pfx("10.0.0.0/8")]);
    let m = &msgs[0];
    assert_eq!(as_path_of(&m.attrs), Some(seq(&[65001, 65002])));
    assert_eq!(m.attrs.next_hop(), Some(nh));
    assert_eq!(m.attrs.med(), Some(5));
    // Still eBGP: no LOCAL_PREF.
    assert_eq!(m.attrs.local_pref(), None);
}

#[test]
fn ibgp_next_hop_link_local_is_not_passed_on() {
    let g: Ipv6Addr = "2001:db8:99::1".parse().unwrap();
    let ll: Ipv6Addr = "fe80::99".parse().unwrap();
    let set = rich_set(NextHop::V6LinkLocal(g, ll));
    let msgs = encode_one(params(false), &set, &[pfx("2001:db8:5::/48")]);
    assert_eq!(msgs[0].attrs.next_hop(), Some(NextHop::V6(g)));
    // A link-local-only next hop is replaced by ours.
    let set = rich_set(NextHop::V6(ll));
    let mut p = params(false);
    p.local_v6_link_local = None;
    let msgs = encode_one(p, &set, &[pfx("2001:db8:5::/48")]);
    assert_eq!(
        msgs[0].attrs.next_hop(),
        Some(NextHop::V6("2001:db8::1".parse().unwrap()))
    );
}

#[test]
fn ipv4_routes_over_an_ipv6_only_session_use_rfc8950() {
    let mut p = params(true);
    p.ext_next_hop = vec![AfiSafi::IPV4_UNICAST];
    p.local_v4 = None;
    p.local_v6_link_local = None;
    let set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    let msgs = encode_one(p, &set, &[pfx("10.0.0.0/8")]);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].mp_afi, Some(AfiSafi::IPV4_UNICAST));
    assert!(!codes(&msgs[0]).contains(&at::NEXT_HOP));
    assert_eq!(msgs[0].announce, vec![Nlri::new(pfx("10.0.0.0/8"))]);
    assert_eq!(
        msgs[0].attrs.next_hop(),
        Some(NextHop::V6("2001:db8::1".parse().unwrap()))
    );
    // IPv6 routes over an IPv4-only session: IPv4-mapped next hop.
    let mut p = params(true);
    p.local_v6 = None;
    p.local_v6_link_local = None;
    let msgs = encode_one(p, &set, &[pfx("2001:db8:5::/48")]);
    assert_eq!(
        msgs[0].attrs.next_hop(),
        Some(NextHop::V6(Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped()))
    );
}

/// RFC 8950 §3: without the negotiated capability no IPv4 route goes out
/// with an IPv6 next hop: as in BIRD, our IPv4 address replaces it, and
/// without one the route is not sent.
#[test]
fn no_ipv6_next_hop_for_ipv4_routes_without_rfc8950() {
    let v6_nh = rich_set(NextHop::V6("2001:db8:99::1".parse().unwrap()));
    let v4_nh = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    // iBGP keeps the next hop where it may: not an IPv6 one here.
    let msgs = encode_one(params(false), &v6_nh, &[pfx("10.0.0.0/8")]);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].mp_afi, None);
    assert_eq!(
        msgs[0].attrs.next_hop(),
        Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1)))
    );
    // With the capability the IPv6 next hop stays.
    let mut p = params(false);
    p.ext_next_hop = vec![AfiSafi::IPV4_UNICAST];
    let msgs = encode_one(p, &v6_nh, &[pfx("10.0.0.0/8")]);
    assert_eq!(msgs[0].mp_afi, Some(AfiSafi::IPV4_UNICAST));
    // An IPv6-only session without the capability sends nothing.
    let mut p = params(true);
    p.local_v4 = None;
    for set in [&v6_nh, &v4_nh] {
        let mut s = RibShard::new(BestPathConfig::default());
        let h = s.intern(set);
        let batch = ExportBatch {
            announce: vec![(h, vec![pfx("10.0.0.0/8")])],
            ..Default::default()
        };
        let mut out = Vec::new();
        let n = UpdateEncoder::new(p.clone()).encode(&s, &batch, &mut out);
        assert_eq!((n, out.len()), (0, 0));
    }
}

/// RFC 4760 §6: multicast routes go out in MP_REACH_NLRI / MP_UNREACH_NLRI
/// with SAFI 2 (IPv4 ones too), only when that family was negotiated.
#[test]
fn multicast_routes_are_encoded_with_safi_2() {
    use base::Safi;
    let set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    let mut s = RibShard::new(BestPathConfig::default());
    let h = s.intern(&set);
    let batch = ExportBatch {
        announce: vec![(h, vec![pfx("198.18.0.0/24"), pfx("2001:db8:7::/48")])],
        withdraw: vec![pfx("198.18.9.0/24")],
        ..Default::default()
    };
    let mut p = params(true);
    p.families = vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV4_MULTICAST];
    let ctx = ctx_for(&p);
    let mut enc = UpdateEncoder::new(p);
    assert!(enc.sends_safi(Safi::Multicast));
    let mut out = Vec::new();
    let n = enc.encode_safi(&s, &batch, Safi::Multicast, &mut out);
    let msgs = parse_all(&out, ctx);
    assert_eq!(n, 2, "{msgs:?}");
    // The withdrawal: MP_UNREACH_NLRI with AFI 1 SAFI 2, no classic field.
    assert_eq!(msgs[0].withdraw, vec![Nlri::new(pfx("198.18.9.0/24"))]);
    assert_eq!(codes(&msgs[0]), vec![at::MP_UNREACH_NLRI]);
    let f = frame(&out, ctx).unwrap().unwrap();
    let v = UpdateView::parse(f.body, ctx).unwrap();
    assert_eq!(
        v.mp_unreach().unwrap().unwrap().afi_safi,
        AfiSafi::IPV4_MULTICAST
    );
    // The announcement: IPv4 only (IPv6 multicast not negotiated), in
    // MP_REACH_NLRI with SAFI 2 and the IPv4 next hop, no NEXT_HOP.
    assert_eq!(msgs[1].mp_afi, Some(AfiSafi::IPV4_MULTICAST));
    assert_eq!(msgs[1].announce, vec![Nlri::new(pfx("198.18.0.0/24"))]);
    assert!(!codes(&msgs[1]).contains(&at::NEXT_HOP));
    assert_eq!(
        msgs[1].attrs.next_hop(),
        Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1)))
    );
    // Unicast encoding of the same session is unchanged; a session
    // without multicast gets nothing of SAFI 2.
    let mut out = Vec::new();
    assert_eq!(enc.encode(&s, &batch, &mut out), 2);
    assert_eq!(parse_all(&out, ctx)[1].mp_afi, None);
    let mut enc = UpdateEncoder::new(params(true));
    assert!(!enc.sends_safi(Safi::Multicast));
    let mut out = Vec::new();
    assert_eq!(enc.encode_safi(&s, &batch, Safi::Multicast, &mut out), 0);
    assert!(out.is_empty());
}

#[test]
fn two_octet_peer_gets_as_trans_and_as4_path() {
    let mut p = params(true);
    p.four_octet_asn = false;
    let mut set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    set.set(path(&[400_000, 65001]));
    set.set(PathAttr::new(AttrValue::Aggregator(Aggregator {
        asn: Asn(400_001),
        addr: Ipv4Addr::new(10, 0, 0, 1),
    })));
    let msgs = encode_one(p.clone(), &set, &[pfx("10.0.0.0/8")]);
    let m = &msgs[0];
    // from_update merged AS4_PATH back (RFC 6793 §4.2.3): the real path.
    assert_eq!(as_path_of(&m.attrs), Some(seq(&[65000, 400_000, 65001])));
    assert!(codes(m).contains(&at::AS4_PATH));
    assert!(codes(m).contains(&at::AS4_AGGREGATOR));
    // The raw 2-octet AS_PATH carries AS_TRANS in place of 400000.
    let mut out = Vec::new();
    let mut s = RibShard::new(BestPathConfig::default());
    let h = s.intern(&set);
    let batch = ExportBatch {
        announce: vec![(h, vec![pfx("10.0.0.0/8")])],
        withdraw: vec![],
        ..Default::default()
    };
    UpdateEncoder::new(p.clone()).encode(&s, &batch, &mut out);
    let f = frame(&out, ParseCtx::legacy()).unwrap().unwrap();
    let v = UpdateView::parse(f.body, ParseCtx::legacy()).unwrap();
    let raw = v.to_owned().unwrap();
    assert_eq!(
        raw.attr(at::AS_PATH).unwrap().value,
        AttrValue::AsPath(seq(&[65000, 23456, 65001]))
    );
    match &raw.attr(at::AGGREGATOR).unwrap().value {
        AttrValue::Aggregator(a) => assert_eq!(a.asn, Asn::TRANS),
        v => panic!("{v:?}"),
    }
    match &raw.attr(at::AS4_AGGREGATOR).unwrap().value {
        AttrValue::As4Aggregator(a) => assert_eq!(a.asn, Asn(400_001)),
        v => panic!("{v:?}"),
    }
    // Only 2-octet ASNs: no AS4_PATH (RFC 6793 §4.2.2 SHOULD NOT).
    set.set(path(&[65001]));
    set.remove(at::AGGREGATOR);
    let msgs = encode_one(p.clone(), &set, &[pfx("10.0.0.0/8")]);
    assert!(!codes(&msgs[0]).contains(&at::AS4_PATH));
    assert_eq!(as_path_of(&msgs[0].attrs), Some(seq(&[65000, 65001])));
    // A 4-octet local AS alone triggers AS4_PATH.
    p.local_asn = Asn(4_200_000_000);
    let msgs = encode_one(p, &set, &[pfx("10.0.0.0/8")]);
    assert!(codes(&msgs[0]).contains(&at::AS4_PATH));
    assert_eq!(
        as_path_of(&msgs[0].attrs),
        Some(seq(&[4_200_000_000, 65001]))
    );
}

#[test]
fn ebgp_strips_confederation_segments_and_fills_in_mandatory_attributes() {
    let mut set = AttrsBuilder::from_attrs([PathAttr::new(AttrValue::AsPath(AsPath {
        segments: vec![
            AsSegment {
                kind: SegmentType::ConfedSequence,
                asns: vec![Asn(65500)],
            },
            AsSegment {
                kind: SegmentType::Sequence,
                asns: vec![Asn(65001)],
            },
        ],
    }))]);
    set.set_next_hop(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    let msgs = encode_one(params(true), &set, &[pfx("10.0.0.0/8")]);
    assert_eq!(as_path_of(&msgs[0].attrs), Some(seq(&[65000, 65001])));
    // ORIGIN was missing: INCOMPLETE added.
    assert_eq!(
        msgs[0].attrs.get(at::ORIGIN).map(|a| &a.value),
        Some(&AttrValue::Origin(Origin::Incomplete))
    );
    // No AS_PATH at all (a local route): empty towards iBGP.
    let mut local = AttrsBuilder::new();
    local.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
    let msgs = encode_one(params(false), &local, &[pfx("10.0.0.0/8")]);
    assert_eq!(as_path_of(&msgs[0].attrs), Some(AsPath::default()));
    // ... and no next hop: ours.
    assert_eq!(
        msgs[0].attrs.next_hop(),
        Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1)))
    );
}

#[test]
fn otc_is_added_towards_customers_only() {
    let set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    for (role, want) in [
        (Some(3u8), true),
        (Some(4), true),
        (Some(0), false),
        (None, false),
    ] {
        let mut s = RibShard::new(BestPathConfig::default());
        let h = s.intern(&set);
        let batch = ExportBatch {
            announce: vec![(h, vec![pfx("10.0.0.0/8")])],
            withdraw: vec![],
            ..Default::default()
        };
        let mut enc = UpdateEncoder::new(params(true));
        enc.set_peer_role(role);
        let mut out = Vec::new();
        enc.encode(&s, &batch, &mut out);
        let m = &parse_all(&out, ParseCtx::modern().with_extended_message(false))[0];
        let otc = m.attrs.get(at::ONLY_TO_CUSTOMER).map(|a| a.value.clone());
        assert_eq!(
            otc,
            want.then_some(AttrValue::OnlyToCustomer(LOCAL)),
            "role {role:?}"
        );
    }
}

fn many_v4(n: u32) -> Vec<Prefix> {
    (0..n)
        .map(|i| Prefix::V4(Prefix4::new(0x0a00_0000 | (i << 8), 24).unwrap()))
        .collect()
}

#[test]
fn hundred_thousand_prefixes_fill_the_fewest_messages() {
    let set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    let prefixes = many_v4(100_000);
    let msgs = encode_one(params(true), &set, &prefixes);
    // Attribute block size from the first message; /24s take 4 octets.
    let first = &msgs[0];
    let attr_len = first.len - 23 - 4 * first.announce.len();
    let per_msg = (4096 - 23 - attr_len) / 4;
    assert_eq!(first.announce.len(), per_msg, "first message is full");
    assert_eq!(msgs.len(), 100_000usize.div_ceil(per_msg));
    assert!(msgs.iter().all(|m| m.len <= 4096));
    let all: Vec<Prefix> = msgs
        .iter()
        .flat_map(|m| m.announce.iter().map(|n| n.prefix))
        .collect();
    assert_eq!(all, prefixes, "every prefix once, in order");
    // Withdrawals pack too: (4096 - 23) / 4 per message.
    let mut s = RibShard::new(BestPathConfig::default());
    let batch = ExportBatch {
        announce: vec![],
        withdraw: prefixes.clone(),
        ..Default::default()
    };
    let mut out = Vec::new();
    let n = UpdateEncoder::new(params(true)).encode(&s, &batch, &mut out);
    assert_eq!(n, 100_000usize.div_ceil((4096 - 23) / 4));
    let w = parse_all(&out, ParseCtx::legacy().with_four_octet_asn(true));
    assert_eq!(w.iter().map(|m| m.withdraw.len()).sum::<usize>(), 100_000);
    // Extended messages (RFC 8654): 65535-octet messages.
    let mut p = params(true);
    p.extended_message = true;
    let msgs = encode_one(p, &set, &prefixes);
    assert_eq!(
        msgs.len(),
        100_000usize.div_ceil((65535 - 23 - attr_len) / 4)
    );
    assert!(msgs.iter().any(|m| m.len > 60_000));
    let _ = &mut s;
}

#[test]
fn ipv6_withdrawals_and_announcements_pack_in_mp_attributes() {
    let v6: Vec<Prefix> = (0..3000u128)
        .map(|i| Prefix::V6(base::Prefix6::new((0x2001_0db8u128 << 96) | (i << 80), 48).unwrap()))
        .collect();
    let mut s = RibShard::new(BestPathConfig::default());
    let batch = ExportBatch {
        announce: vec![],
        withdraw: v6.clone(),
        ..Default::default()
    };
    let mut out = Vec::new();
    let n = UpdateEncoder::new(params(true)).encode(&s, &batch, &mut out);
    let msgs = parse_all(&out, ParseCtx::legacy().with_four_octet_asn(true));
    assert_eq!(n, msgs.len());
    // Each /48 takes 7 octets; header 19 + 4 + MP_UNREACH header 4 + 3.
    assert_eq!(n, 3000usize.div_ceil((4096 - 30) / 7));
    let got: Vec<Prefix> = msgs
        .iter()
        .flat_map(|m| m.withdraw.iter().map(|n| n.prefix))
        .collect();
    assert_eq!(got, v6);
    let set = rich_set(NextHop::V6("2001:db8:99::1".parse().unwrap()));
    let h = s.intern(&set);
    let batch = ExportBatch {
        announce: vec![(h, v6.clone())],
        withdraw: vec![],
        ..Default::default()
    };
    out.clear();
    UpdateEncoder::new(params(true)).encode(&s, &batch, &mut out);
    let msgs = parse_all(&out, ParseCtx::legacy().with_four_octet_asn(true));
    assert!(msgs.len() >= 6 && msgs.iter().all(|m| m.len <= 4096));
    let got: Vec<Prefix> = msgs
        .iter()
        .flat_map(|m| m.announce.iter().map(|n| n.prefix))
        .collect();
    assert_eq!(got, v6);
}

#[test]
fn add_path_tx_sends_path_id_one() {
    let mut p = params(true);
    p.add_path_tx = vec![AfiSafi::IPV4_UNICAST];
    let set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    let msgs = encode_one(
        p.clone(),
        &set,
        &[pfx("10.0.0.0/8"), pfx("2001:db8:1::/48")],
    );
    assert_eq!(
        msgs[0].announce,
        vec![Nlri::with_path_id(pfx("10.0.0.0/8"), 1)]
    );
    assert_eq!(msgs[1].announce, vec![Nlri::new(pfx("2001:db8:1::/48"))]);
    let s = RibShard::new(BestPathConfig::default());
    let batch = ExportBatch {
        announce: vec![],
        withdraw: vec![pfx("10.0.0.0/8")],
        ..Default::default()
    };
    let mut out = Vec::new();
    UpdateEncoder::new(p.clone()).encode(&s, &batch, &mut out);
    let w = parse_all(&out, ctx_for(&p));
    assert_eq!(
        w[0].withdraw,
        vec![Nlri::with_path_id(pfx("10.0.0.0/8"), 1)]
    );
}

#[test]
fn families_not_negotiated_are_not_sent() {
    let mut p = params(true);
    p.families = vec![AfiSafi::IPV6_UNICAST];
    let set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    let msgs = encode_one(p.clone(), &set, &[pfx("10.0.0.0/8"), pfx("2001:db8::/32")]);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].announce, vec![Nlri::new(pfx("2001:db8::/32"))]);
    // No families at all: IPv4 unicast only (no MP capability).
    p.families.clear();
    let msgs = encode_one(p, &set, &[pfx("10.0.0.0/8"), pfx("2001:db8::/32")]);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].announce, vec![Nlri::new(pfx("10.0.0.0/8"))]);
}

#[test]
fn end_of_rib_markers_are_recognised() {
    let enc = UpdateEncoder::new(params(true));
    let mut out = Vec::new();
    enc.end_of_rib(AfiSafi::IPV4_UNICAST, &mut out);
    enc.end_of_rib(AfiSafi::IPV6_UNICAST, &mut out);
    let msgs = parse_all(&out, ParseCtx::legacy());
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0].len, 23);
    assert_eq!(msgs[0].eor, Some(AfiSafi::IPV4_UNICAST));
    assert_eq!(msgs[1].eor, Some(AfiSafi::IPV6_UNICAST));
}

#[test]
fn oversized_attributes_are_skipped_not_split() {
    // 1100 communities = 4400 octets of attributes: cannot fit 4096.
    let mut set = rich_set(NextHop::V4(Ipv4Addr::new(198, 51, 100, 7)));
    set.set(PathAttr::new(AttrValue::Communities(
        (0..1100).map(Community).collect(),
    )));
    let msgs = encode_one(params(true), &set, &[pfx("10.0.0.0/8")]);
    assert!(msgs.is_empty());
    let mut p = params(true);
    p.extended_message = true;
    let msgs = encode_one(p, &set, &[pfx("10.0.0.0/8")]);
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0].len > 4096);
}

/// `encodes_like` (one encoding per update group, issue 17): the peer's
/// AS is never written, so sessions differing only there encode alike;
/// any rewriting or wire option that changes the bytes separates them.
#[test]
fn encodes_like_ignores_only_the_peer_as() {
    let base = UpdateEncoder::new(params(true));
    let other_as = UpdateEncoder::new(EncodeParams {
        peer_asn: Asn(65200),
        ..params(true)
    });
    assert!(base.encodes_like(&other_as));
    let differ = [
        EncodeParams {
            route_server: true,
            ..params(true)
        },
        EncodeParams {
            four_octet_asn: false,
            ..params(true)
        },
        EncodeParams {
            add_path_tx: vec![AfiSafi::IPV4_UNICAST],
            ..params(true)
        },
        EncodeParams {
            ext_next_hop: vec![AfiSafi::IPV4_UNICAST],
            ..params(true)
        },
        EncodeParams {
            next_hop: NextHopMode::SelfAlways,
            ..params(true)
        },
        EncodeParams {
            local_v4: Some(Ipv4Addr::new(192, 0, 2, 9)),
            ..params(true)
        },
        EncodeParams {
            extended_message: true,
            ..params(true)
        },
        params(false),
    ];
    for p in differ {
        let e = UpdateEncoder::new(p.clone());
        assert!(!base.encodes_like(&e), "{p:?}");
    }
    let mut role = UpdateEncoder::new(params(true));
    role.set_peer_role(Some(3));
    assert!(!base.encodes_like(&role));
}
