//! Property tests: owned messages built from arbitrary values survive
//! encode -> decode -> owned unchanged; and no decoder panics on any input.

use std::net::Ipv4Addr;

use base::{Afi, AfiSafi, Asn, Prefix, Prefix4, Prefix6, Safi};
use bgp_wire::attr::aspath::{AsPath, AsSegment, SegmentType};
use bgp_wire::capability::{AddPathFamily, ExtNextHop, GrFamily, LlgrFamily};
use bgp_wire::*;
use proptest::prelude::*;

fn afi_safi() -> impl Strategy<Value = AfiSafi> {
    (any::<u16>(), any::<u8>(), 0..4u8).prop_map(|(a, s, pick)| match pick {
        0 => AfiSafi::IPV4_UNICAST,
        1 => AfiSafi::IPV6_UNICAST,
        2 => AfiSafi::IPV4_MULTICAST,
        _ => AfiSafi::new(Afi::from_u16(a), Safi::from_u8(s)),
    })
}

fn capability() -> impl Strategy<Value = Capability> {
    prop_oneof![
        afi_safi().prop_map(Capability::Multiprotocol),
        Just(Capability::RouteRefresh),
        Just(Capability::EnhancedRouteRefresh),
        Just(Capability::ExtendedMessage),
        any::<u8>().prop_map(Capability::Role),
        any::<u32>().prop_map(|a| Capability::FourOctetAsn(Asn(a))),
        (
            0..16u8,
            0..4096u16,
            prop::collection::vec((afi_safi(), any::<u8>()), 0..5)
        )
            .prop_map(|(flags, restart_time, f)| Capability::GracefulRestart {
                flags,
                restart_time,
                families: f
                    .into_iter()
                    .map(|(afi_safi, flags)| GrFamily { afi_safi, flags })
                    .collect(),
            }),
        prop::collection::vec((afi_safi(), any::<u8>()), 0..5).prop_map(|v| Capability::AddPath(
            v.into_iter()
                .map(|(afi_safi, send_receive)| AddPathFamily {
                    afi_safi,
                    send_receive
                })
                .collect()
        )),
        // RFC 8950 tuples; 0..40 of them keep the value under 255 octets.
        prop::collection::vec((afi_safi(), any::<u16>()), 0..40).prop_map(|v| {
            Capability::ExtendedNextHop(
                v.into_iter()
                    .map(|(afi_safi, nh)| ExtNextHop {
                        afi_safi,
                        next_hop_afi: Afi::from_u16(nh),
                    })
                    .collect(),
            )
        }),
        prop::collection::vec((afi_safi(), any::<u8>(), 0..(1u32 << 24)), 0..5).prop_map(|v| {
            Capability::LongLivedGracefulRestart(
                v.into_iter()
                    .map(|(afi_safi, flags, stale_time)| LlgrFamily {
                        afi_safi,
                        flags,
                        stale_time,
                    })
                    .collect(),
            )
        }),
        (
            prop::collection::vec(any::<u8>(), 0..40),
            prop::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(hostname, domain)| Capability::Fqdn { hostname, domain }),
        // Unknown codes only: a known code with a raw value would be typed.
        (
            prop_oneof![Just(128u8), 200..=255u8],
            prop::collection::vec(any::<u8>(), 0..30)
        )
            .prop_map(|(code, value)| Capability::Unknown { code, value }),
    ]
}

fn open() -> impl Strategy<Value = OpenMessage> {
    (
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
        prop::collection::vec(
            prop_oneof![
                prop::collection::vec(capability(), 0..6).prop_map(OptParam::Capabilities),
                (
                    prop_oneof![Just(1u8), 3..=254u8],
                    prop::collection::vec(any::<u8>(), 0..20)
                )
                    .prop_map(|(param_type, value)| OptParam::Other { param_type, value }),
            ],
            0..4,
        ),
        any::<bool>(),
    )
        .prop_map(|(my_as, hold_time, id, params, ext)| OpenMessage {
            version: 4,
            my_as,
            hold_time,
            bgp_id: Ipv4Addr::from(id),
            params,
            extended_params: ext,
        })
}

fn prefix(afi: Afi) -> BoxedStrategy<Prefix> {
    match afi {
        Afi::Ipv6 => (any::<u128>(), 0..=128u8)
            .prop_map(|(a, l)| Prefix::V6(Prefix6::new(a, l).unwrap().masked()))
            .boxed(),
        _ => (any::<u32>(), 0..=32u8)
            .prop_map(|(a, l)| Prefix::V4(Prefix4::new(a, l).unwrap().masked()))
            .boxed(),
    }
}

fn nlri_list(afi: Afi, add_path: bool) -> impl Strategy<Value = Vec<Nlri>> {
    prop::collection::vec((prefix(afi), any::<u32>()), 0..8).prop_map(move |v| {
        v.into_iter()
            .map(|(prefix, id)| Nlri {
                path_id: add_path.then_some(id),
                prefix,
            })
            .collect()
    })
}

fn as_path(four: bool) -> impl Strategy<Value = AsPath> {
    let asn = if four {
        any::<u32>().boxed()
    } else {
        (0..=0xffffu32).boxed()
    };
    prop::collection::vec(
        (1..=4u8, prop::collection::vec(asn.prop_map(Asn), 0..10)),
        0..4,
    )
    .prop_map(|v| AsPath {
        segments: v
            .into_iter()
            .map(|(t, asns)| AsSegment {
                kind: SegmentType::from_u8(t).unwrap(),
                asns,
            })
            .collect(),
    })
}

fn attr_value(four: bool, add_path: bool) -> impl Strategy<Value = AttrValue> {
    let agg = (
        if four {
            any::<u32>().boxed()
        } else {
            (0..=0xffffu32).boxed()
        },
        any::<u32>(),
    )
        .prop_map(|(a, ip)| Aggregator {
            asn: Asn(a),
            addr: Ipv4Addr::from(ip),
        });
    let agg4 = (any::<u32>(), any::<u32>()).prop_map(|(a, ip)| Aggregator {
        asn: Asn(a),
        addr: Ipv4Addr::from(ip),
    });
    let mp_reach = prop_oneof![
        (
            nlri_list(Afi::Ipv6, add_path),
            any::<[u8; 16]>(),
            any::<bool>()
        )
            .prop_map(|(n, nh, ll)| {
                let g = std::net::Ipv6Addr::from(nh);
                let next_hop = if ll {
                    NextHop::V6LinkLocal(g, g)
                } else {
                    NextHop::V6(g)
                };
                MpReach::new(AfiSafi::IPV6_UNICAST, next_hop, n)
            }),
        (nlri_list(Afi::Ipv4, add_path), any::<[u8; 16]>()).prop_map(|(n, nh)| {
            MpReach::new(AfiSafi::IPV4_MULTICAST, NextHop::V6(nh.into()), n)
        }),
    ];
    prop_oneof![
        prop_oneof![
            Just(Origin::Igp),
            Just(Origin::Egp),
            Just(Origin::Incomplete)
        ]
        .prop_map(AttrValue::Origin),
        as_path(four).prop_map(AttrValue::AsPath),
        as_path(true).prop_map(AttrValue::As4Path),
        any::<u32>().prop_map(|a| AttrValue::NextHop(a.into())),
        any::<u32>().prop_map(AttrValue::Med),
        any::<u32>().prop_map(AttrValue::LocalPref),
        Just(AttrValue::AtomicAggregate),
        agg.prop_map(AttrValue::Aggregator),
        agg4.prop_map(AttrValue::As4Aggregator),
        prop::collection::vec(any::<u32>().prop_map(Community), 1..80)
            .prop_map(AttrValue::Communities),
        prop::collection::vec(any::<[u8; 8]>().prop_map(ExtCommunity), 1..5)
            .prop_map(AttrValue::ExtendedCommunities),
        prop::collection::vec(any::<[u8; 20]>().prop_map(Ipv6ExtCommunity), 1..3)
            .prop_map(AttrValue::Ipv6ExtendedCommunities),
        prop::collection::vec(any::<(u32, u32, u32)>(), 1..5).prop_map(|v| {
            AttrValue::LargeCommunities(
                v.into_iter()
                    .map(|(global_admin, local_data1, local_data2)| LargeCommunity {
                        global_admin,
                        local_data1,
                        local_data2,
                    })
                    .collect(),
            )
        }),
        any::<u32>().prop_map(|a| AttrValue::OriginatorId(a.into())),
        prop::collection::vec(any::<u32>().prop_map(Ipv4Addr::from), 1..5)
            .prop_map(AttrValue::ClusterList),
        any::<u32>().prop_map(|a| AttrValue::OnlyToCustomer(Asn(a))),
        mp_reach.prop_map(AttrValue::MpReach),
        nlri_list(Afi::Ipv6, add_path).prop_map(|n| AttrValue::MpUnreach(MpUnreach {
            afi_safi: AfiSafi::IPV6_UNICAST,
            withdrawn: MpNlri::Prefixes(n),
        })),
        (40..=255u8, prop::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(type_code, value)| AttrValue::Raw { type_code, value }),
    ]
}

fn update(four: bool, add_path: bool) -> impl Strategy<Value = UpdateMessage> {
    (
        nlri_list(Afi::Ipv4, add_path),
        prop::collection::vec((attr_value(four, add_path), any::<bool>()), 0..8),
        nlri_list(Afi::Ipv4, add_path),
    )
        .prop_map(move |(withdrawn, attrs, nlri)| UpdateMessage {
            withdrawn,
            attributes: attrs
                .into_iter()
                .map(|(v, ext)| {
                    let mut a = PathAttr::new(v);
                    if ext {
                        a.flags |= bgp_wire::consts::attr_flags::EXTENDED_LENGTH;
                    }
                    // Values over 255 octets get the extended-length bit
                    // forced on by the encoder; expect that.
                    let mut tmp = Vec::new();
                    a.encode(ParseCtx::modern().with_four_octet_asn(four), &mut tmp);
                    a.flags = tmp[0];
                    a
                })
                .collect(),
            nlri,
        })
}

fn roundtrip(m: &OwnedMessage, ctx: ParseCtx) -> OwnedMessage {
    let mut out = Vec::new();
    m.encode(ctx, &mut out).unwrap();
    let (v, n) = Message::parse(&out, ctx).unwrap();
    assert_eq!(n, out.len());
    let back = v.to_owned().unwrap();
    let mut again = Vec::new();
    back.encode(ctx, &mut again).unwrap();
    assert_eq!(again, out);
    back
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn open_roundtrip(o in open()) {
        let m = OwnedMessage::Open(o.clone());
        let OwnedMessage::Open(mut back) = roundtrip(&m, ParseCtx::legacy()) else { panic!() };
        // The RFC 9072 form is forced when parameters exceed 255 octets.
        back.extended_params = o.extended_params;
        prop_assert_eq!(back, o);
    }

    #[test]
    fn update_roundtrip(
        (four, add_path, u) in (any::<bool>(), any::<bool>())
            .prop_flat_map(|(f, a)| (Just(f), Just(a), update(f, a)))
    ) {
        let ctx = ParseCtx::modern().with_four_octet_asn(four);
        let ctx = if add_path { ctx.with_add_path_all() } else { ctx };
        let m = OwnedMessage::Update(u);
        prop_assert_eq!(roundtrip(&m, ctx), m);
    }

    #[test]
    fn notification_roundtrip(code: u8, subcode: u8, data in prop::collection::vec(any::<u8>(), 0..300)) {
        let m = OwnedMessage::Notification(NotificationMessage::new(code, subcode, data));
        prop_assert_eq!(roundtrip(&m, ParseCtx::legacy()), m);
    }

    #[test]
    fn shutdown_text_roundtrip(text in ".{0,300}") {
        let n = NotificationMessage::shutdown(2, &text);
        let v = n.view();
        let got = v.shutdown_communication().unwrap().unwrap();
        prop_assert!(text.starts_with(got));
        prop_assert!(got.len() <= 255);
    }

    #[test]
    fn route_refresh_roundtrip(af in afi_safi(), subtype: u8) {
        let m = OwnedMessage::RouteRefresh(RouteRefresh::new(af, subtype));
        prop_assert_eq!(roundtrip(&m, ParseCtx::legacy()), m);
    }

    #[test]
    fn decoders_never_panic(data in prop::collection::vec(any::<u8>(), 0..600)) {
        bgp_wire::fuzz_support::decode_message(&data);
        for ctx in [ParseCtx::legacy(), ParseCtx::modern().with_add_path_all(),
                    ParseCtx::mrt_rib(AfiSafi::IPV6_UNICAST)] {
            bgp_wire::fuzz_support::decode_attributes(&data, ctx);
        }
        for afi in [Afi::Ipv4, Afi::Ipv6, Afi::Other(7)] {
            bgp_wire::fuzz_support::decode_nlri(&data, false, afi);
            bgp_wire::fuzz_support::decode_nlri(&data, true, afi);
        }
    }

    /// Random bodies behind a valid header, so the type-specific decoders
    /// are reached far more often than with fully random bytes.
    #[test]
    fn framed_decoders_never_panic(t in 1..=5u8, body in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut m = MARKER.to_vec();
        m.extend_from_slice(&((body.len() + 19) as u16).to_be_bytes());
        m.push(t);
        m.extend_from_slice(&body);
        bgp_wire::fuzz_support::decode_message(&m);
    }
}
