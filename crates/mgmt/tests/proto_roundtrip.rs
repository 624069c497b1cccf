//! Every request and response survives JSON and back; the wire shape is
//! pinned for a few messages so that an accidental serde change (which
//! would break old clients) fails here.

use mgmt::proto::*;

fn sample_protocol() -> ProtocolInfo {
    ProtocolInfo {
        name: "peer1".into(),
        kind: ProtocolKind::Bgp,
        table: None,
        state: ProtoState::Up,
        since_ms: 1_700_000_000_123,
        info: None,
        last_error: Some("Hold timer expired".into()),
        description: Some("transit".into()),
        routes: RouteCounts {
            received: 10,
            accepted: 9,
            filtered: 1,
            sent: 4,
            preferred: 7,
        },
        channels: vec![ChannelInfo {
            name: "ipv6".into(),
            up: true,
            table: "master6".into(),
            import_filter: None,
            export_filter: Some("out".into()),
            routes: RouteCounts::default(),
        }],
        bgp: Some(BgpInfo {
            bgp_state: BgpState::OpenConfirm,
            neighbor_addr: "2001:db8::2".parse().unwrap(),
            neighbor_port: Some(179),
            remote_as: 4_200_000_000,
            local_as: 65001,
            neighbor_id: Some("10.0.0.2".parse().unwrap()),
            source_addr: None,
            hold_time: Some(90),
            keepalive_time: Some(30),
            hold_timer_left_ms: None,
            keepalive_timer_left_ms: Some(1),
            local_capabilities: vec!["ADD-PATH".into()],
            neighbor_capabilities: vec![],
            session: Some("external".into()),
            messages_received: MessageCounts {
                update: u64::MAX,
                ..MessageCounts::default()
            },
            messages_sent: MessageCounts::default(),
        }),
    }
}

fn sample_path() -> PathInfo {
    let mut p = PathInfo::new("peer1", 5);
    p.best = true;
    p.as_path = "1 2 {3 4}".into();
    p.origin = Some(Origin::Egp);
    p.aggregator = Some((7, "1.2.3.4".parse().unwrap()));
    p.communities = vec![(1, 2)];
    p.ext_communities = vec![u64::MAX];
    p.large_communities = vec![(1, 2, 3)];
    p.cluster_list = vec!["9.9.9.9".parse().unwrap()];
    p.other = vec![("BGP.aigp".into(), "10".into())];
    p.path_id = Some(3);
    p
}

fn round_trip_request(r: Request) {
    let env = RequestEnvelope {
        version: PROTOCOL_VERSION,
        request: r,
    };
    let s = serde_json::to_string(&env).unwrap();
    assert!(!s.contains('\n'), "one line: {s}");
    let back: RequestEnvelope = serde_json::from_str(&s).unwrap();
    assert_eq!(back, env);
}

fn round_trip_response(r: Response) {
    let env = ResponseEnvelope {
        version: PROTOCOL_VERSION,
        response: r,
    };
    let s = serde_json::to_string(&env).unwrap();
    assert!(!s.contains('\n'), "one line: {s}");
    let back: ResponseEnvelope = serde_json::from_str(&s).unwrap();
    assert_eq!(back, env);
}

#[test]
fn requests_round_trip() {
    for r in [
        Request::ShowProtocols {
            all: true,
            name: Some("peer1".into()),
        },
        Request::ShowRoute {
            prefix: Some("10.0.0.0/8".into()),
            all: true,
            protocol: Some("p".into()),
            count_only: false,
            multicast: false,
            longest_match: true,
        },
        Request::ShowRoute {
            prefix: None,
            all: false,
            protocol: None,
            count_only: true,
            multicast: false,
            longest_match: false,
        },
        Request::ShowNeighbor {
            addr: "192.0.2.1".into(),
        },
        Request::ShowStatus,
        Request::Neighbor {
            addr_or_name: "peer1".into(),
            action: NeighborAction::Disable {
                message: Some("maintenance \"tonight\"\n".into()),
            },
        },
        Request::Neighbor {
            addr_or_name: "peer1".into(),
            action: NeighborAction::Refresh,
        },
        Request::Configure { check: true },
        Request::ShowDataplane,
    ] {
        round_trip_request(r);
    }
}

#[test]
fn responses_round_trip() {
    for r in [
        Response::Ok(Data::Protocols(vec![sample_protocol()])),
        Response::Ok(Data::Routes(vec![RouteInfo {
            prefix: "2001:db8::/32".into(),
            paths: vec![sample_path(), PathInfo::new("static1", 0)],
        }])),
        Response::Ok(Data::RouteCount(RouteCount {
            tables: vec![TableCount {
                table: "master4".into(),
                matched: 1,
                paths: 2,
                prefixes: 3,
            }],
            per_protocol: vec![ProtocolCount {
                protocol: "peer1".into(),
                paths: 2,
                best: 1,
            }],
        })),
        Response::Ok(Data::Status(StatusInfo {
            version: "tesserad 0.1.0".into(),
            router_id: "10.0.0.1".parse().unwrap(),
            server_time_ms: 2,
            started_ms: 1,
            last_reconfig_ms: Some(2),
        })),
        Response::Ok(Data::Action(vec![ActionResult {
            protocol: "peer1".into(),
            result: "disabled".into(),
        }])),
        Response::Ok(Data::Configure(ConfigureResult {
            path: "/etc/t.toml".into(),
            check: false,
            changed: true,
            messages: vec!["peer2: added".into()],
        })),
        Response::Ok(Data::Dataplane(Box::new(mgmt::proto::DataplaneInfo {
            graph: "/etc/tessera/dp.click".into(),
            cores: 2,
            elements: vec![mgmt::proto::ElementInfo {
                name: "cnt".into(),
                class: "Counter".into(),
                rx: 5,
                tx: 4,
                drops: [("overflow".to_string(), 1)].into_iter().collect(),
                counters: [("packets".to_string(), 4)].into_iter().collect(),
            }],
            ipsec: vec![mgmt::proto::IpsecSaInfo {
                spi: Some(0x1001),
                dir: "out".into(),
                element: "enc0".into(),
                packets: 3,
                bytes: 252,
                drops: [("too_big".to_string(), 1)].into_iter().collect(),
            }],
            per_core: vec![mgmt::proto::CoreInfo {
                core: 1,
                rx: 10,
                tx: 8,
                drops: [("no_route".to_string(), 2)].into_iter().collect(),
                queues: vec![mgmt::proto::QueueInfo {
                    port: "r0".into(),
                    queue: 1,
                    rx: 10,
                    tx: 8,
                    ring_drops: None,
                }],
            }],
            cluster: Some(Box::new(mgmt::proto::ClusterInfo {
                node: 0,
                fabric_address: "198.18.100.1:6081".into(),
                mode: "Direct".into(),
                peers: vec![mgmt::proto::ClusterPeerInfo {
                    node: 1,
                    fabric_address: "198.18.100.2:6081".into(),
                    live: true,
                    datagrams: 3,
                    bytes: 300,
                }],
            })),
            xdp_fastpath: None,
            vrs: Box::new(mgmt::proto::VrList(vec![mgmt::proto::VrInfo {
                name: "red".into(),
                tickets: 300,
                rx: 12,
                tx: 11,
                drops: [("queue_full".to_string(), 1)].into_iter().collect(),
                cpu_ns: 123_456,
                runs: 7,
                routes: 3,
                installed: 2,
            }])),
        }))),
        Response::error(ErrorCode::NotFound, "no such protocol"),
    ] {
        round_trip_response(r);
    }
}

#[test]
fn wire_shape_is_stable() {
    let env = RequestEnvelope {
        version: 1,
        request: Request::Neighbor {
            addr_or_name: "192.0.2.1".into(),
            action: NeighborAction::Disable { message: None },
        },
    };
    assert_eq!(
        serde_json::to_string(&env).unwrap(),
        r#"{"version":1,"request":{"command":"neighbor","addr_or_name":"192.0.2.1","action":{"action":"disable","message":null}}}"#
    );
    let resp = ResponseEnvelope {
        version: 1,
        response: Response::error(ErrorCode::BadRequest, "x"),
    };
    assert_eq!(
        serde_json::to_string(&resp).unwrap(),
        r#"{"version":1,"response":{"error":{"code":"bad_request","message":"x"}}}"#
    );
    let ok = Response::Ok(Data::Action(vec![]));
    assert_eq!(
        serde_json::to_string(&ok).unwrap(),
        r#"{"ok":{"type":"action","data":[]}}"#
    );
}

#[test]
fn minimal_and_newer_messages_parse() {
    // Optional fields may be left out by a minimal client.
    let r: Request = serde_json::from_str(r#"{"command":"show_route"}"#).unwrap();
    assert_eq!(
        r,
        Request::ShowRoute {
            prefix: None,
            all: false,
            protocol: None,
            count_only: false,
            multicast: false,
            longest_match: false,
        }
    );
    // A newer daemon may add fields and enum values this client does not
    // know: they are ignored / read as Unknown.
    let p: ProtocolInfo = serde_json::from_str(
        r#"{"name":"x","kind":"OSPF","state":"paused","since_ms":0,"future_field":[1,2]}"#,
    )
    .unwrap();
    assert_eq!(p.kind, ProtocolKind::Unknown);
    assert_eq!(p.state, ProtoState::Unknown);
    let e: Response =
        serde_json::from_str(r#"{"error":{"code":"quota_exceeded","message":"m"}}"#).unwrap();
    assert_eq!(e, Response::error(ErrorCode::Unknown, "m"));
}
