use std::net::Ipv4Addr;

use base::{AfiSafi, Asn};
use bgp_wire::capability::{role, AddPathFamily, GrFamily, LlgrFamily};
use bgp_wire::{Capability, OpenMessage, OptParam};

use super::*;
use crate::config::SessionConfig;

const LOCAL_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const PEER_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn cfg() -> SessionConfig {
    SessionConfig::new(Asn(65001), Some(Asn(65002)), LOCAL_ID)
}

fn peer_open(asn: u32, hold: u16, caps: Vec<Capability>) -> OpenMessage {
    let mut c = caps;
    c.push(Capability::FourOctetAsn(Asn(asn)));
    OpenMessage::new(Asn(asn), hold, PEER_ID, c)
}

fn run(c: &SessionConfig, peer: &OpenMessage) -> Result<Negotiated, OpenError> {
    negotiate(c, &c.open_message(), peer)
}

#[test]
fn basic_negotiation() {
    let c = cfg();
    let n = run(
        &c,
        &peer_open(
            65002,
            30,
            vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST)],
        ),
    )
    .unwrap();
    assert_eq!(n.peer_asn, Asn(65002));
    assert_eq!(n.peer_bgp_id, PEER_ID);
    assert_eq!((n.hold_time, n.keepalive_interval), (30, 10));
    assert!(n.four_octet_asn);
    assert_eq!(n.families, vec![AfiSafi::IPV4_UNICAST]);
    // The peer did not advertise route refresh.
    assert!(!n.route_refresh);
    assert!(!n.extended_message);
    let ctx = n.parse_ctx();
    assert!(ctx.four_octet_asn);
    assert!(!ctx.extended_message);
}

#[test]
fn hold_time_is_the_minimum_and_zero_wins() {
    let c = cfg();
    let n = run(&c, &peer_open(65002, 240, vec![])).unwrap();
    assert_eq!((n.hold_time, n.keepalive_interval), (90, 30));
    let n = run(&c, &peer_open(65002, 0, vec![])).unwrap();
    assert_eq!((n.hold_time, n.keepalive_interval), (0, 0));
    for h in [1, 2] {
        let e = run(&c, &peer_open(65002, h, vec![])).unwrap_err();
        assert_eq!(e, OpenError::UnacceptableHoldTime { hold_time: h });
        assert_eq!(e.code(), (2, 6));
    }
    let mut c2 = cfg();
    c2.min_hold_time = 10;
    assert!(run(&c2, &peer_open(65002, 9, vec![])).is_err());
    assert!(run(&c2, &peer_open(65002, 10, vec![])).is_ok());
}

#[test]
fn configured_keepalive_is_used_and_capped_at_a_third_of_the_hold_time() {
    let mut c = cfg();
    c.keepalive = Some(2);
    // Ours 90, theirs 240: hold 90, keepalive as configured.
    let n = run(&c, &peer_open(65002, 240, vec![])).unwrap();
    assert_eq!((n.hold_time, n.keepalive_interval), (90, 2));
    // A peer proposing 3 s: a third of that, 1 s, beats our 2 s.
    let n = run(&c, &peer_open(65002, 3, vec![])).unwrap();
    assert_eq!((n.hold_time, n.keepalive_interval), (3, 1));
    // Hold time 0: no keepalives, whatever is configured.
    let n = run(&c, &peer_open(65002, 0, vec![])).unwrap();
    assert_eq!((n.hold_time, n.keepalive_interval), (0, 0));
    c.keepalive = Some(60);
    let n = run(&c, &peer_open(65002, 90, vec![])).unwrap();
    assert_eq!((n.hold_time, n.keepalive_interval), (90, 30));
    c.keepalive = Some(0);
    let n = run(&c, &peer_open(65002, 90, vec![])).unwrap();
    assert_eq!(n.keepalive_interval, 30);
}

#[test]
fn version_error_carries_our_version() {
    let c = cfg();
    let mut o = peer_open(65002, 90, vec![]);
    o.version = 3;
    let e = run(&c, &o).unwrap_err();
    let n = e.notification(&c);
    assert_eq!((n.code, n.subcode, n.data), (2, 1, vec![0, 4]));
}

#[test]
fn peer_as_checks() {
    let c = cfg();
    assert_eq!(
        run(&c, &peer_open(65003, 90, vec![])),
        Err(OpenError::BadPeerAs)
    );
    // A 4-octet peer: My AS = AS_TRANS, real ASN in the capability.
    let mut c4 = cfg();
    c4.peer_asn = Some(Asn(4_200_000_000));
    let o = peer_open(4_200_000_000, 90, vec![]);
    assert_eq!(o.my_as, 23456);
    assert_eq!(run(&c4, &o).unwrap().peer_asn, Asn(4_200_000_000));
    // My AS disagreeing with the capability.
    let mut bad = o.clone();
    bad.my_as = 65002;
    assert_eq!(run(&c4, &bad), Err(OpenError::BadPeerAs));
    // If we do not speak 4-octet ASNs the peer is AS_TRANS to us.
    let mut legacy = c4.clone();
    legacy.four_octet_asn = false;
    legacy.peer_asn = Some(Asn::TRANS);
    let n = run(&legacy, &o).unwrap();
    assert_eq!(n.peer_asn, Asn::TRANS);
    assert!(!n.four_octet_asn);
    assert!(!n.parse_ctx().four_octet_asn);
    // AS 0 (RFC 7607), even with no configured peer AS.
    let mut any = cfg();
    any.peer_asn = None;
    assert_eq!(
        run(&any, &OpenMessage::new(Asn(0), 90, PEER_ID, vec![])),
        Err(OpenError::BadPeerAs)
    );
    assert_eq!(
        run(&any, &peer_open(64999, 90, vec![])).unwrap().peer_asn,
        Asn(64999)
    );
    assert_eq!(OpenError::BadPeerAs.code(), (2, 2));
}

#[test]
fn bgp_identifier_rules() {
    let c = cfg();
    let mut o = peer_open(65002, 90, vec![]);
    o.bgp_id = Ipv4Addr::UNSPECIFIED;
    assert_eq!(run(&c, &o), Err(OpenError::BadBgpIdentifier));
    // Equal to ours: fine on eBGP (RFC 6286 §2.2) ...
    o.bgp_id = LOCAL_ID;
    assert!(run(&c, &o).is_ok());
    // ... but not on iBGP.
    let mut ibgp = cfg();
    ibgp.peer_asn = Some(Asn(65001));
    let mut o = peer_open(65001, 90, vec![]);
    o.bgp_id = LOCAL_ID;
    assert_eq!(run(&ibgp, &o), Err(OpenError::BadBgpIdentifier));
    o.bgp_id = PEER_ID;
    assert!(run(&ibgp, &o).is_ok());
}

#[test]
fn unsupported_optional_parameter() {
    let c = cfg();
    let mut o = peer_open(65002, 90, vec![]);
    o.params.push(OptParam::Other {
        param_type: 1,
        value: vec![0],
    });
    let e = run(&c, &o).unwrap_err();
    assert_eq!(e, OpenError::UnsupportedOptionalParameter { param_type: 1 });
    assert_eq!(e.code(), (2, 4));
}

#[test]
fn roles() {
    let mut c = cfg();
    c.role = Some(role::CUSTOMER);
    let n = run(
        &c,
        &peer_open(65002, 90, vec![Capability::Role(role::PROVIDER)]),
    )
    .unwrap();
    assert_eq!(
        (n.local_role, n.peer_role),
        (Some(role::CUSTOMER), Some(role::PROVIDER))
    );
    let e = run(
        &c,
        &peer_open(65002, 90, vec![Capability::Role(role::CUSTOMER)]),
    )
    .unwrap_err();
    assert_eq!(e, OpenError::RoleMismatch);
    assert_eq!(e.code(), (2, 11));
    // Not strict: a peer without a role is fine; strict: it is not.
    assert!(run(&c, &peer_open(65002, 90, vec![])).is_ok());
    c.role_strict = true;
    assert_eq!(
        run(&c, &peer_open(65002, 90, vec![])),
        Err(OpenError::RoleMismatch)
    );
    // Two different roles from the peer.
    let two = vec![
        Capability::Role(role::PROVIDER),
        Capability::Role(role::PEER),
    ];
    assert_eq!(
        run(&c, &peer_open(65002, 90, two)),
        Err(OpenError::RoleMismatch)
    );
    assert!(roles_pair(role::RS, role::RS_CLIENT));
    assert!(roles_pair(role::PEER, role::PEER));
    assert!(!roles_pair(role::RS, role::RS));
}

#[test]
fn required_capability_missing_is_2_7_with_the_capability() {
    let mut c = cfg();
    c.required_capabilities = vec![
        Capability::RouteRefresh,
        Capability::Multiprotocol(AfiSafi::IPV6_UNICAST),
    ];
    let o = peer_open(65002, 90, vec![Capability::RouteRefresh]);
    let e = run(&c, &o).unwrap_err();
    assert_eq!(e, OpenError::MissingRequiredCapability { index: 1 });
    let n = e.notification(&c);
    assert_eq!((n.code, n.subcode), (2, 7));
    assert_eq!(n.data, vec![1, 4, 0, 2, 0, 1]);
}

#[test]
fn families_default_to_ipv4_unicast() {
    let mut c = cfg();
    c.families.clear();
    let n = run(&c, &peer_open(65002, 90, vec![])).unwrap();
    assert_eq!(n.families, vec![AfiSafi::IPV4_UNICAST]);
    // We say v4+v6, the peer only v6.
    let mut c = cfg();
    c.families = vec![AfiSafi::IPV6_UNICAST, AfiSafi::IPV4_UNICAST];
    let n = run(
        &c,
        &peer_open(
            65002,
            90,
            vec![Capability::Multiprotocol(AfiSafi::IPV6_UNICAST)],
        ),
    )
    .unwrap();
    assert_eq!(n.families, vec![AfiSafi::IPV6_UNICAST]);
    assert!(n.has_family(AfiSafi::IPV6_UNICAST));
    assert!(!n.has_family(AfiSafi::IPV4_UNICAST));
}

#[test]
fn add_path_and_other_capabilities() {
    let mut c = cfg();
    c.families = vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST];
    c.extended_message = true;
    c.enhanced_route_refresh = true;
    c.add_path = vec![
        AddPathFamily {
            afi_safi: AfiSafi::IPV4_UNICAST,
            send_receive: 3,
        },
        AddPathFamily {
            afi_safi: AfiSafi::IPV6_UNICAST,
            send_receive: 1,
        },
    ];
    c.extra_capabilities = vec![
        Capability::GracefulRestart {
            flags: 0,
            restart_time: 120,
            families: vec![],
        },
        Capability::LongLivedGracefulRestart(vec![]),
    ];
    let peer_caps = vec![
        Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
        Capability::Multiprotocol(AfiSafi::IPV6_UNICAST),
        Capability::Unknown {
            code: 128,
            value: vec![],
        },
        Capability::ExtendedMessage,
        Capability::EnhancedRouteRefresh,
        Capability::AddPath(vec![
            AddPathFamily {
                afi_safi: AfiSafi::IPV4_UNICAST,
                send_receive: 1,
            },
            AddPathFamily {
                afi_safi: AfiSafi::IPV6_UNICAST,
                send_receive: 1,
            },
        ]),
        Capability::GracefulRestart {
            flags: 0x8,
            restart_time: 90,
            families: vec![
                GrFamily {
                    afi_safi: AfiSafi::IPV4_UNICAST,
                    flags: 0x80,
                },
                GrFamily {
                    afi_safi: AfiSafi::IPV4_MULTICAST,
                    flags: 0x80,
                },
            ],
        },
        Capability::LongLivedGracefulRestart(vec![LlgrFamily {
            afi_safi: AfiSafi::IPV6_UNICAST,
            flags: 0,
            stale_time: 3600,
        }]),
        Capability::Fqdn {
            hostname: b"r2".to_vec(),
            domain: b"example.net".to_vec(),
        },
    ];
    let n = run(&c, &peer_open(65002, 90, peer_caps)).unwrap();
    // v4: we send+receive, peer receives only -> tx only. v6: we receive,
    // peer receives -> nothing.
    assert_eq!(
        n.add_path,
        vec![AddPathNegotiated {
            afi_safi: AfiSafi::IPV4_UNICAST,
            rx: false,
            tx: true
        }]
    );
    assert!(n.add_path_tx(AfiSafi::IPV4_UNICAST));
    assert!(!n.parse_ctx().add_path(AfiSafi::IPV4_UNICAST));
    assert!(n.extended_message && n.enhanced_route_refresh);
    assert!(n.route_refresh, "the Cisco code 128 counts from the peer");
    assert!(n.parse_ctx().extended_message);
    let gr = n.graceful_restart.clone().unwrap();
    assert!(gr.restart_state && !gr.notification);
    assert_eq!(gr.restart_time, 90);
    assert_eq!(gr.families.len(), 1, "multicast was not negotiated");
    assert_eq!(n.llgr.as_ref().map(Vec::len), Some(1));
    assert_eq!(n.fqdn.as_ref().map(|f| f.hostname.as_str()), Some("r2"));

    // ADD-PATH rx goes into the ParseCtx.
    let mut c2 = cfg();
    c2.add_path = vec![AddPathFamily {
        afi_safi: AfiSafi::IPV4_UNICAST,
        send_receive: 1,
    }];
    let n = run(
        &c2,
        &peer_open(
            65002,
            90,
            vec![Capability::AddPath(vec![AddPathFamily {
                afi_safi: AfiSafi::IPV4_UNICAST,
                send_receive: 2,
            }])],
        ),
    )
    .unwrap();
    assert!(n.parse_ctx().add_path(AfiSafi::IPV4_UNICAST));
    assert!(n.graceful_restart.is_none() && n.llgr.is_none());
}

/// RFC 8950 §3: an IPv6 next hop for IPv4 NLRI goes to the peer only when
/// it advertised the tuple (and, as in BIRD and FRR, we did too), and is
/// accepted from it only when we advertised it; tuples of families not
/// negotiated are dropped.
#[test]
fn extended_next_hop_is_negotiated_per_tuple_and_direction() {
    use bgp_wire::ExtNextHop;
    let v4_mc = ExtNextHop {
        afi_safi: AfiSafi::IPV4_MULTICAST,
        next_hop_afi: base::Afi::Ipv6,
    };
    let mut ours = cfg();
    ours.ext_next_hop = vec![ExtNextHop::IPV4_UNICAST_V6, v4_mc];
    let with = |caps: Vec<Capability>| {
        let mut c = vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST)];
        c.extend(caps);
        peer_open(65002, 90, c)
    };
    let theirs = Capability::ExtendedNextHop(vec![ExtNextHop::IPV4_UNICAST_V6, v4_mc]);

    // Both advertised: usable both ways on IPv4 unicast; IPv4 multicast
    // was not negotiated.
    let n = run(&ours, &with(vec![theirs.clone()])).unwrap();
    assert_eq!(n.ext_next_hop_rx, vec![ExtNextHop::IPV4_UNICAST_V6]);
    assert!(n.ext_next_hop_tx_v6(AfiSafi::IPV4_UNICAST));
    assert!(!n.ext_next_hop_tx_v6(AfiSafi::IPV4_MULTICAST));
    assert!(n.parse_ctx().accepts_v6_next_hop(AfiSafi::IPV4_UNICAST));
    assert!(!n.parse_ctx().accepts_family(AfiSafi::IPV4_MULTICAST));

    // Only we advertised: we accept, we do not send.
    let n = run(&ours, &with(vec![])).unwrap();
    assert!(!n.ext_next_hop_tx_v6(AfiSafi::IPV4_UNICAST));
    assert!(n.parse_ctx().accepts_v6_next_hop(AfiSafi::IPV4_UNICAST));

    // Only the peer advertised: we neither accept nor send.
    let n = run(&cfg(), &with(vec![theirs])).unwrap();
    assert!(n.ext_next_hop_rx.is_empty());
    assert!(!n.ext_next_hop_tx_v6(AfiSafi::IPV4_UNICAST));
    assert!(!n.parse_ctx().accepts_v6_next_hop(AfiSafi::IPV4_UNICAST));
    assert!(n.parse_ctx().accepts_family(AfiSafi::IPV4_UNICAST));
}
