//! BGP messages of every kind, built with bgp-wire's owned forms, each with
//! the field values tshark's BGP dissector must show for it.

use base::{AfiSafi, Asn, Prefix};
use bgp_wire::capability::{add_path_mode, role, AddPathFamily, GrFamily, LlgrFamily};
use bgp_wire::consts::{notify, rr_subtype};
use bgp_wire::{Aggregator, AttrValue};
use bgp_wire::{
    AsPath, AsSegment, Capability, Community, ExtCommunity, Ipv6ExtCommunity, LargeCommunity,
    MpNlri, MpReach, MpUnreach, NextHop, Nlri, NotificationMessage, OpenMessage, Origin,
    OwnedMessage, ParseCtx, PathAttr, RouteRefresh, SegmentType, UpdateMessage,
};
use std::net::{Ipv4Addr, Ipv6Addr};

/// One message and the tshark fields (name, occurrences in order) it must
/// produce. Fields not listed are not checked.
pub struct Case {
    pub name: &'static str,
    pub bytes: Vec<u8>,
    pub checks: Vec<(&'static str, Vec<String>)>,
}

fn s<T: ToString>(v: &[T]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

fn pfx(t: &str) -> Prefix {
    t.parse().unwrap_or_else(|e| panic!("prefix {t}: {e:?}"))
}

fn nlri(list: &[&str]) -> Vec<Nlri> {
    list.iter().map(|p| Nlri::new(pfx(p))).collect()
}

/// Address part of each prefix, as tshark prints it.
fn addrs(list: &[&str]) -> Vec<String> {
    list.iter()
        .map(|p| p.split('/').next().unwrap_or("").to_string())
        .collect()
}

fn lens(list: &[&str]) -> Vec<String> {
    list.iter()
        .map(|p| p.split('/').nth(1).unwrap_or("").to_string())
        .collect()
}

fn encode(m: &OwnedMessage, ctx: ParseCtx) -> Vec<u8> {
    let mut out = Vec::new();
    m.encode(ctx, &mut out)
        .unwrap_or_else(|e| panic!("encode {m:?}: {e:?}"));
    // Our own decoder must accept it back, identically, before tshark does.
    let (back, len) = bgp_wire::Message::parse(&out, ctx).expect("re-parse own message");
    assert_eq!(len, out.len());
    // Compare bytes, not values: encoding may add the extended-length flag
    // (RFC 4271 §4.3) that the hand-built value did not carry.
    let mut again = Vec::new();
    back.to_owned()
        .expect("owned")
        .encode(ctx, &mut again)
        .expect("re-encode");
    assert_eq!(again, out, "own round trip");
    out
}

fn case(
    name: &'static str,
    m: OwnedMessage,
    ctx: ParseCtx,
    mut checks: Vec<(&'static str, Vec<String>)>,
) -> Case {
    let bytes = encode(&m, ctx);
    let len = u16::from_be_bytes([bytes[16], bytes[17]]);
    checks.insert(0, ("bgp.type", s(&[bytes[18]])));
    checks.insert(1, ("bgp.length", s(&[len])));
    Case {
        name,
        bytes,
        checks,
    }
}

fn attr(v: AttrValue) -> PathAttr {
    PathAttr::new(v)
}

pub fn open_all_capabilities() -> Case {
    let v4 = AfiSafi::IPV4_UNICAST;
    let v6 = AfiSafi::IPV6_UNICAST;
    let caps = vec![
        Capability::Multiprotocol(v4),
        Capability::Multiprotocol(v6),
        Capability::RouteRefresh,
        Capability::ExtendedMessage,
        Capability::Role(role::CUSTOMER),
        Capability::GracefulRestart {
            flags: 0x8,
            restart_time: 120,
            families: vec![GrFamily {
                afi_safi: v4,
                flags: 0x80,
            }],
        },
        Capability::FourOctetAsn(Asn(4_200_000_001)),
        Capability::AddPath(vec![
            AddPathFamily {
                afi_safi: v4,
                send_receive: add_path_mode::BOTH,
            },
            AddPathFamily {
                afi_safi: v6,
                send_receive: add_path_mode::RECEIVE,
            },
        ]),
        Capability::EnhancedRouteRefresh,
        Capability::LongLivedGracefulRestart(vec![LlgrFamily {
            afi_safi: v4,
            flags: 0x80,
            stale_time: 3600,
        }]),
        Capability::Fqdn {
            hostname: b"r1".to_vec(),
            domain: b"example.net".to_vec(),
        },
        Capability::Unknown {
            code: 200,
            value: vec![1, 2, 3],
        },
    ];
    let codes: Vec<u8> = caps.iter().map(Capability::code).collect();
    let m = OpenMessage::new(Asn(4_200_000_001), 90, Ipv4Addr::new(192, 0, 2, 1), caps);
    case(
        "OPEN, every capability kind",
        OwnedMessage::Open(m),
        ParseCtx::modern(),
        vec![
            ("bgp.open.version", s(&[4])),
            // RFC 6793 §4.1: AS_TRANS in the 2-octet field.
            ("bgp.open.myas", s(&[23456])),
            ("bgp.open.holdtime", s(&[90])),
            ("bgp.open.identifier", s(&["192.0.2.1"])),
            ("bgp.cap.type", s(&codes)),
            ("bgp.cap.mp.afi", s(&[1, 2])),
            ("bgp.cap.mp.safi", s(&[1, 1])),
            ("bgp.cap.gr.timers.restart_time", s(&[120])),
            ("bgp.cap.gr.afi", s(&[1])),
            ("bgp.cap.4as", s(&[4_200_000_001u32])),
            ("bgp.cap.ap.afi", s(&[1, 2])),
            ("bgp.cap.ap.sendreceive", s(&[3, 1])),
            ("bgp.cap.orf.fqdn.hostname", s(&["r1"])),
            ("bgp.cap.orf.fqdn.domain_name", s(&["example.net"])),
        ],
    )
}

pub fn open_two_octet() -> Case {
    let m = OpenMessage::new(
        Asn(64_496),
        180,
        Ipv4Addr::new(198, 51, 100, 7),
        vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST)],
    );
    case(
        "OPEN, 2-octet AS",
        OwnedMessage::Open(m),
        ParseCtx::legacy(),
        vec![
            ("bgp.open.myas", s(&[64_496])),
            ("bgp.open.holdtime", s(&[180])),
            ("bgp.open.identifier", s(&["198.51.100.7"])),
            ("bgp.cap.type", s(&[1])),
        ],
    )
}

/// An IPv4 UPDATE carrying every attribute type that belongs on a 4-octet
/// AS session, a withdrawn route, NLRI, and a COMMUNITIES list long enough
/// to need the extended-length flag (RFC 4271 §4.3).
pub fn update_ipv4_all_attributes() -> Case {
    let withdrawn = ["192.0.2.0/24"];
    let announced = ["198.51.100.0/24", "203.0.113.128/25", "10.0.0.0/8"];
    let seq = [64_496u32, 4_200_000_001, 65_551];
    let set = [64_500u32, 64_501];
    let path = AsPath {
        segments: vec![
            AsSegment {
                kind: SegmentType::Sequence,
                asns: seq.iter().map(|&a| Asn(a)).collect(),
            },
            AsSegment {
                kind: SegmentType::Set,
                asns: set.iter().map(|&a| Asn(a)).collect(),
            },
        ],
    };
    // 70 communities: 280 octets, so the attribute needs 2 length octets.
    let comm_values: Vec<u16> = (1..=69).collect();
    let mut comms: Vec<Community> = comm_values
        .iter()
        .map(|&v| Community((64_496 << 16) | u32::from(v)))
        .collect();
    comms.push(Community(0xFFFF_FF01)); // NO_EXPORT, RFC 1997
    let rt = ExtCommunity([0x00, 0x02, 0xfb, 0xf0, 0, 0, 0, 100]); // RT 64496:100
    let mut v6rt = [0u8; 20];
    v6rt[1] = 0x02; // RFC 5701 route target, IPv6-address-specific
    v6rt[2..18].copy_from_slice(&Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).octets());
    v6rt[19] = 7;
    let large = [LargeCommunity {
        global_admin: 4_200_000_001,
        local_data1: 1,
        local_data2: 2,
    }];
    let attributes = vec![
        attr(AttrValue::Origin(Origin::Igp)),
        attr(AttrValue::AsPath(path)),
        attr(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 254))),
        attr(AttrValue::Med(100)),
        attr(AttrValue::LocalPref(200)),
        attr(AttrValue::AtomicAggregate),
        attr(AttrValue::Aggregator(Aggregator {
            asn: Asn(4_200_000_001),
            addr: Ipv4Addr::new(192, 0, 2, 9),
        })),
        attr(AttrValue::Communities(comms)),
        attr(AttrValue::OriginatorId(Ipv4Addr::new(192, 0, 2, 7))),
        attr(AttrValue::ClusterList(vec![
            Ipv4Addr::new(192, 0, 2, 8),
            Ipv4Addr::new(192, 0, 2, 9),
        ])),
        attr(AttrValue::ExtendedCommunities(vec![rt])),
        attr(AttrValue::Ipv6ExtendedCommunities(vec![Ipv6ExtCommunity(
            v6rt,
        )])),
        attr(AttrValue::LargeCommunities(large.to_vec())),
        attr(AttrValue::OnlyToCustomer(Asn(64_496))),
    ];
    let codes: Vec<u8> = attributes.iter().map(PathAttr::type_code).collect();
    let m = UpdateMessage {
        withdrawn: nlri(&withdrawn),
        attributes,
        nlri: nlri(&announced),
    };
    let all_lens: Vec<String> = lens(&withdrawn)
        .into_iter()
        .chain(lens(&announced))
        .collect();
    case(
        "UPDATE, IPv4, every attribute",
        OwnedMessage::Update(m),
        ParseCtx::modern(),
        vec![
            ("bgp.update.path_attribute.type_code", s(&codes)),
            ("bgp.update.path_attribute.origin", s(&[0])),
            ("bgp.update.path_attribute.as_path_segment.type", s(&[2, 1])),
            (
                "bgp.update.path_attribute.as_path_segment.as4",
                s(&seq.iter().chain(&set).collect::<Vec<_>>()),
            ),
            ("bgp.update.path_attribute.next_hop", s(&["192.0.2.254"])),
            ("bgp.update.path_attribute.multi_exit_disc", s(&[100])),
            ("bgp.update.path_attribute.local_pref", s(&[200])),
            (
                "bgp.update.path_attribute.aggregator_as",
                s(&[4_200_000_001u32]),
            ),
            (
                "bgp.update.path_attribute.aggregator_origin",
                s(&["192.0.2.9"]),
            ),
            (
                "bgp.update.path_attribute.community_as",
                s(&[64_496u16; 69]),
            ),
            ("bgp.update.path_attribute.community_value", s(&comm_values)),
            // tshark prints this one field in hex.
            (
                "bgp.update.path_attribute.community_wellknown",
                vec![format!("{:#010x}", 0xFFFF_FF01u32)],
            ),
            ("bgp.update.path_attribute.originator_id", s(&["192.0.2.7"])),
            (
                "bgp.path_attribute.cluster_id",
                s(&["192.0.2.8", "192.0.2.9"]),
            ),
            ("bgp.ext_com.value_as2", s(&[64_496])),
            ("bgp.ext_com.value_an4", s(&[100])),
            ("bgp.large_communities.ga", s(&[4_200_000_001u32])),
            ("bgp.large_communities.ldp1", s(&[1])),
            ("bgp.large_communities.ldp2", s(&[2])),
            ("bgp.withdrawn_prefix", addrs(&withdrawn)),
            ("bgp.nlri_prefix", addrs(&announced)),
            ("bgp.prefix_length", all_lens),
        ],
    )
}

/// A 2-octet AS session UPDATE (RFC 6793 §4.2.2): AS_TRANS in AS_PATH and
/// AGGREGATOR, the real ASNs in AS4_PATH and AS4_AGGREGATOR.
pub fn update_as4_path_on_two_octet_session() -> Case {
    let trans = Asn::TRANS;
    let path = AsPath::from_sequence(vec![Asn(64_496), trans]);
    let path4 = AsPath::from_sequence(vec![Asn(64_496), Asn(4_200_000_001)]);
    let announced = ["192.0.2.128/25"];
    let m = UpdateMessage {
        withdrawn: vec![],
        attributes: vec![
            attr(AttrValue::Origin(Origin::Incomplete)),
            attr(AttrValue::AsPath(path)),
            attr(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 1))),
            attr(AttrValue::Aggregator(Aggregator {
                asn: trans,
                addr: Ipv4Addr::new(192, 0, 2, 3),
            })),
            attr(AttrValue::As4Path(path4)),
            attr(AttrValue::As4Aggregator(Aggregator {
                asn: Asn(4_200_000_001),
                addr: Ipv4Addr::new(192, 0, 2, 3),
            })),
        ],
        nlri: nlri(&announced),
    };
    case(
        "UPDATE, 2-octet session with AS4_PATH/AS4_AGGREGATOR",
        OwnedMessage::Update(m),
        ParseCtx::legacy(),
        vec![
            (
                "bgp.update.path_attribute.type_code",
                s(&[1, 2, 3, 7, 17, 18]),
            ),
            ("bgp.update.path_attribute.origin", s(&[2])),
            ("bgp.update.path_attribute.as_path_segment.type", s(&[2, 2])),
            (
                "bgp.update.path_attribute.as_path_segment.as2",
                s(&[64_496, 23_456]),
            ),
            (
                "bgp.update.path_attribute.as_path_segment.as4",
                s(&[64_496u32, 4_200_000_001]),
            ),
            (
                "bgp.update.path_attribute.aggregator_as",
                s(&[23_456u32, 4_200_000_001]),
            ),
            ("bgp.nlri_prefix", addrs(&announced)),
        ],
    )
}

pub fn update_mp_reach_ipv6() -> Case {
    let announced = [
        "2001:db8:1::/48",
        "2001:db8:2:3::/64",
        "2001:db8:4:5:6::/80",
    ];
    let global = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    let ll = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    let reach = MpReach::new(
        AfiSafi::IPV6_UNICAST,
        NextHop::V6LinkLocal(global, ll),
        nlri(&announced),
    );
    let m = UpdateMessage {
        withdrawn: vec![],
        attributes: vec![
            attr(AttrValue::MpReach(reach)),
            attr(AttrValue::Origin(Origin::Egp)),
            attr(AttrValue::AsPath(AsPath::from_sequence(vec![Asn(64_496)]))),
        ],
        nlri: vec![],
    };
    case(
        "UPDATE, MP_REACH_NLRI IPv6 with link-local next hop",
        OwnedMessage::Update(m),
        ParseCtx::modern(),
        vec![
            ("bgp.update.path_attribute.mp_reach_nlri.afi", s(&[2])),
            ("bgp.update.path_attribute.mp_reach_nlri.safi", s(&[1])),
            (
                "bgp.update.path_attribute.mp_reach_nlri.next_hop.ipv6",
                s(&[global]),
            ),
            (
                "bgp.update.path_attribute.mp_reach_nlri.next_hop.ipv6.link_local",
                s(&[ll]),
            ),
            ("bgp.mp_reach_nlri_ipv6_prefix", addrs(&announced)),
            ("bgp.prefix_length", lens(&announced)),
            ("bgp.update.path_attribute.origin", s(&[1])),
        ],
    )
}

pub fn update_mp_unreach_ipv6() -> Case {
    let withdrawn = ["2001:db8:3::/48", "::/0"];
    let unreach = MpUnreach {
        afi_safi: AfiSafi::IPV6_UNICAST,
        withdrawn: MpNlri::Prefixes(nlri(&withdrawn)),
    };
    let m = UpdateMessage {
        withdrawn: vec![],
        attributes: vec![attr(AttrValue::MpUnreach(unreach))],
        nlri: vec![],
    };
    case(
        "UPDATE, MP_UNREACH_NLRI IPv6",
        OwnedMessage::Update(m),
        ParseCtx::modern(),
        vec![
            ("bgp.update.path_attribute.mp_unreach_nlri.afi", s(&[2])),
            ("bgp.update.path_attribute.mp_unreach_nlri.safi", s(&[1])),
            ("bgp.mp_unreach_nlri_ipv6_prefix", addrs(&withdrawn)),
            ("bgp.prefix_length", lens(&withdrawn)),
        ],
    )
}

pub fn update_mp_ipv4() -> Case {
    let announced = ["198.51.100.64/26", "100.64.0.0/10"];
    let withdrawn = ["203.0.113.0/24"];
    let reach = MpReach::new(
        AfiSafi::IPV4_UNICAST,
        NextHop::V4(Ipv4Addr::new(192, 0, 2, 33)),
        nlri(&announced),
    );
    let unreach = MpUnreach {
        afi_safi: AfiSafi::IPV4_UNICAST,
        withdrawn: MpNlri::Prefixes(nlri(&withdrawn)),
    };
    let m = UpdateMessage {
        withdrawn: vec![],
        attributes: vec![
            attr(AttrValue::Origin(Origin::Igp)),
            attr(AttrValue::AsPath(AsPath::from_sequence(vec![Asn(64_497)]))),
            attr(AttrValue::MpReach(reach)),
            attr(AttrValue::MpUnreach(unreach)),
        ],
        nlri: vec![],
    };
    case(
        "UPDATE, MP_REACH/MP_UNREACH IPv4 unicast",
        OwnedMessage::Update(m),
        ParseCtx::modern(),
        vec![
            ("bgp.update.path_attribute.mp_reach_nlri.afi", s(&[1])),
            ("bgp.update.path_attribute.mp_reach_nlri.safi", s(&[1])),
            (
                "bgp.update.path_attribute.mp_reach_nlri.next_hop.ipv4",
                s(&["192.0.2.33"]),
            ),
            ("bgp.mp_reach_nlri_ipv4_prefix", addrs(&announced)),
            ("bgp.update.path_attribute.mp_unreach_nlri.afi", s(&[1])),
            ("bgp.mp_unreach_nlri_ipv4_prefix", addrs(&withdrawn)),
        ],
    )
}

/// End-of-RIB for IPv4 unicast: an empty UPDATE (RFC 4724 §2).
pub fn update_end_of_rib() -> Case {
    let m = UpdateMessage {
        withdrawn: vec![],
        attributes: vec![],
        nlri: vec![],
    };
    case(
        "UPDATE, End-of-RIB IPv4",
        OwnedMessage::Update(m),
        ParseCtx::modern(),
        vec![("bgp.update.path_attribute.type_code", vec![])],
    )
}

pub fn notification_shutdown() -> Case {
    let text = "maintenance: back at 12:00 UTC, café";
    let m = NotificationMessage::shutdown(notify::ADMINISTRATIVE_SHUTDOWN, text);
    case(
        "NOTIFICATION, Cease/Administrative Shutdown with communication",
        OwnedMessage::Notification(m),
        ParseCtx::modern(),
        vec![
            ("bgp.notify.major_error", s(&[6])),
            ("bgp.notify.minor_error_cease", s(&[2])),
            ("bgp.notify.communication_length", s(&[text.len()])),
            ("bgp.notify.communication", s(&[text])),
        ],
    )
}

pub fn notification_update_error() -> Case {
    let m = NotificationMessage::new(
        notify::UPDATE_MESSAGE_ERROR,
        notify::MALFORMED_AS_PATH,
        vec![],
    );
    case(
        "NOTIFICATION, UPDATE error/Malformed AS_PATH",
        OwnedMessage::Notification(m),
        ParseCtx::modern(),
        vec![
            ("bgp.notify.major_error", s(&[3])),
            ("bgp.notify.minor_error_update", s(&[11])),
        ],
    )
}

pub fn notification_bad_peer_as() -> Case {
    let m = NotificationMessage::new(
        notify::OPEN_MESSAGE_ERROR,
        notify::BAD_PEER_AS,
        64_499u16.to_be_bytes().to_vec(),
    );
    case(
        "NOTIFICATION, OPEN error/Bad Peer AS",
        OwnedMessage::Notification(m),
        ParseCtx::modern(),
        vec![
            ("bgp.notify.major_error", s(&[2])),
            ("bgp.notify.minor_error_open", s(&[2])),
        ],
    )
}

pub fn keepalive() -> Case {
    case(
        "KEEPALIVE",
        OwnedMessage::Keepalive,
        ParseCtx::modern(),
        vec![],
    )
}

pub fn route_refresh(af: AfiSafi, subtype: u8, name: &'static str) -> Case {
    case(
        name,
        OwnedMessage::RouteRefresh(RouteRefresh::new(af, subtype)),
        ParseCtx::modern(),
        vec![
            ("bgp.route_refresh.afi", s(&[af.afi.to_u16()])),
            ("bgp.route_refresh.safi", s(&[af.safi.to_u8()])),
            ("bgp.route_refresh.subtype", s(&[subtype])),
        ],
    )
}

/// Every constructed case, in the order they go on the wire.
pub fn all() -> Vec<Case> {
    vec![
        open_all_capabilities(),
        open_two_octet(),
        keepalive(),
        update_ipv4_all_attributes(),
        update_as4_path_on_two_octet_session(),
        update_mp_reach_ipv6(),
        update_mp_unreach_ipv6(),
        update_mp_ipv4(),
        update_end_of_rib(),
        route_refresh(
            AfiSafi::IPV4_UNICAST,
            rr_subtype::NORMAL,
            "ROUTE-REFRESH IPv4",
        ),
        route_refresh(
            AfiSafi::IPV6_UNICAST,
            rr_subtype::BORR,
            "ROUTE-REFRESH BoRR IPv6",
        ),
        route_refresh(
            AfiSafi::IPV6_UNICAST,
            rr_subtype::EORR,
            "ROUTE-REFRESH EoRR IPv6",
        ),
        notification_update_error(),
        notification_bad_peer_as(),
        notification_shutdown(),
    ]
}
