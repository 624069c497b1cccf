//! tesserad's standard metric families, written from the same data the
//! CLI shows ([`ProtocolInfo`], [`RouteCount`]) so that `show protocols`
//! and `/metrics` cannot disagree, and metric names live in one place.
//!
//! | family | type | labels |
//! |---|---|---|
//! | `tessera_protocol_up` | gauge | `protocol`, `kind` |
//! | `tessera_protocol_state_since_seconds` | gauge (unix time) | `protocol` |
//! | `tessera_protocol_routes` | gauge | `protocol`, `kind` = received, accepted, filtered, sent, preferred |
//! | `tessera_bgp_session_state` | gauge, 1 for the current state | `protocol`, `neighbor`, `remote_as`, `state` |
//! | `tessera_bgp_messages_received_total` | counter | `protocol`, `type` |
//! | `tessera_bgp_messages_sent_total` | counter | `protocol`, `type` |
//! | `tessera_rib_prefixes` / `tessera_rib_paths` | gauge | `table` |
//! | `tessera_rib_paths_by_protocol` | gauge | `protocol` |
//! | `tessera_update_processing_seconds` | histogram | — |
//! | `tessera_update_stage_seconds` | histogram | `stage` = socket_read, framing, parse, policy, rib_update, best_path, export, write |
//!
//! `tessera_update_processing_seconds` is the time the RIB thread spends
//! on one UPDATE once it has it (batch average): ingress checks, import
//! policy, table update and best-path reselection; not the socket read,
//! framing, parse and channel hops before it, nor export after it (the
//! per-stage histograms cover those).

use super::{LatencyHistogram, MetricType, MetricsWriter, StageLatencies};
use crate::proto::{BgpState, MessageCounts, ProtoState, ProtocolInfo, RouteCount};

const BGP_STATES: [BgpState; 7] = [
    BgpState::Idle,
    BgpState::Connect,
    BgpState::Active,
    BgpState::OpenSent,
    BgpState::OpenConfirm,
    BgpState::Established,
    BgpState::Close,
];

/// Per-protocol families: state, routes, BGP session state and messages.
pub fn write_protocols(w: &mut MetricsWriter, protos: &[ProtocolInfo]) {
    w.header(
        "tessera_protocol_up",
        MetricType::Gauge,
        "1 if the protocol is up (BGP: session Established)",
    );
    for p in protos {
        let up = u64::from(p.state == ProtoState::Up);
        w.sample_u64(
            "tessera_protocol_up",
            &[("protocol", &p.name), ("kind", p.kind.as_str())],
            up,
        );
    }
    w.header(
        "tessera_protocol_state_since_seconds",
        MetricType::Gauge,
        "Unix time of the protocol's last state change",
    );
    for p in protos {
        w.sample(
            "tessera_protocol_state_since_seconds",
            &[("protocol", &p.name)],
            p.since_ms as f64 / 1000.0,
        );
    }
    w.header(
        "tessera_protocol_routes",
        MetricType::Gauge,
        "Routes of a protocol: received (Adj-RIB-In), accepted by import policy, filtered, sent (Adj-RIB-Out), preferred (best)",
    );
    for p in protos {
        let r = &p.routes;
        for (kind, v) in [
            ("received", r.received),
            ("accepted", r.accepted),
            ("filtered", r.filtered),
            ("sent", r.sent),
            ("preferred", r.preferred),
        ] {
            w.sample_u64(
                "tessera_protocol_routes",
                &[("protocol", &p.name), ("kind", kind)],
                v,
            );
        }
    }
    w.header(
        "tessera_bgp_session_state",
        MetricType::Gauge,
        "BGP session state (RFC 4271 section 8.2.2): 1 for the current state, 0 for the others",
    );
    for p in protos {
        let Some(b) = &p.bgp else { continue };
        let neighbor = b.neighbor_addr.to_string();
        let remote_as = b.remote_as.to_string();
        for s in BGP_STATES {
            w.sample_u64(
                "tessera_bgp_session_state",
                &[
                    ("protocol", &p.name),
                    ("neighbor", &neighbor),
                    ("remote_as", &remote_as),
                    ("state", s.as_str()),
                ],
                u64::from(b.bgp_state == s),
            );
        }
    }
    for (name, help, pick) in [
        (
            "tessera_bgp_messages_received_total",
            "BGP messages received, by type",
            (|b| &b.messages_received) as fn(&crate::proto::BgpInfo) -> &MessageCounts,
        ),
        (
            "tessera_bgp_messages_sent_total",
            "BGP messages sent, by type",
            |b| &b.messages_sent,
        ),
    ] {
        w.header(name, MetricType::Counter, help);
        for p in protos {
            let Some(b) = &p.bgp else { continue };
            let m = pick(b);
            for (t, v) in [
                ("open", m.open),
                ("update", m.update),
                ("notification", m.notification),
                ("keepalive", m.keepalive),
                ("route_refresh", m.route_refresh),
            ] {
                w.sample_u64(name, &[("protocol", &p.name), ("type", t)], v);
            }
        }
    }
}

/// RIB sizes per table and paths per protocol.
pub fn write_rib(w: &mut MetricsWriter, c: &RouteCount) {
    w.header(
        "tessera_rib_prefixes",
        MetricType::Gauge,
        "Prefixes in the Loc-RIB",
    );
    for t in &c.tables {
        w.sample_u64("tessera_rib_prefixes", &[("table", &t.table)], t.prefixes);
    }
    w.header(
        "tessera_rib_paths",
        MetricType::Gauge,
        "Paths in the Loc-RIB",
    );
    for t in &c.tables {
        w.sample_u64("tessera_rib_paths", &[("table", &t.table)], t.paths);
    }
    w.header(
        "tessera_rib_paths_by_protocol",
        MetricType::Gauge,
        "Paths in the Loc-RIB by the protocol they came from",
    );
    for p in &c.per_protocol {
        w.sample_u64(
            "tessera_rib_paths_by_protocol",
            &[("protocol", &p.protocol)],
            p.paths,
        );
    }
}

/// RIB processing time per UPDATE and, if kept, per-stage times.
pub fn write_latency(
    w: &mut MetricsWriter,
    update: &LatencyHistogram,
    stages: Option<&StageLatencies>,
) {
    w.header(
        "tessera_update_processing_seconds",
        MetricType::Histogram,
        "Time the RIB spends applying one received UPDATE (ingress checks, import policy, table update, best-path reselection; batch average)",
    );
    w.histogram("tessera_update_processing_seconds", &[], &update.snapshot());
    if let Some(s) = stages {
        w.stage_latencies(
            "tessera_update_stage_seconds",
            "Time per item in each UPDATE processing stage (socket read to write; items per stage in the bgp-speaker stages docs)",
            s,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::check;
    use crate::metrics::Stage;
    use crate::proto::*;

    fn proto(name: &str, state: BgpState) -> ProtocolInfo {
        ProtocolInfo {
            name: name.into(),
            kind: ProtocolKind::Bgp,
            table: None,
            state: if state == BgpState::Established {
                ProtoState::Up
            } else {
                ProtoState::Start
            },
            since_ms: 1_700_000_000_500,
            info: None,
            last_error: None,
            description: None,
            routes: RouteCounts {
                received: 10,
                accepted: 8,
                filtered: 2,
                sent: 3,
                preferred: 5,
            },
            channels: vec![],
            bgp: Some(BgpInfo {
                bgp_state: state,
                neighbor_addr: "192.0.2.1".parse().unwrap(),
                neighbor_port: None,
                remote_as: 65001,
                local_as: 65000,
                neighbor_id: None,
                source_addr: None,
                hold_time: None,
                keepalive_time: None,
                hold_timer_left_ms: None,
                keepalive_timer_left_ms: None,
                local_capabilities: vec![],
                neighbor_capabilities: vec![],
                session: None,
                messages_received: MessageCounts {
                    update: 7,
                    ..MessageCounts::default()
                },
                messages_sent: MessageCounts::default(),
            }),
        }
    }

    #[test]
    fn standard_families_are_valid_and_carry_values() {
        let mut w = MetricsWriter::new();
        let protos = [
            proto("peer1", BgpState::Established),
            proto("peer2", BgpState::Active),
        ];
        write_protocols(&mut w, &protos);
        write_rib(
            &mut w,
            &RouteCount {
                tables: vec![TableCount {
                    table: "master4".into(),
                    matched: 9,
                    paths: 9,
                    prefixes: 7,
                }],
                per_protocol: vec![ProtocolCount {
                    protocol: "peer1".into(),
                    paths: 9,
                    best: 7,
                }],
            },
        );
        let lat = LatencyHistogram::new();
        lat.record_ns(12_345);
        let stages = StageLatencies::new();
        stages.record_ns(Stage::Policy, 1);
        write_latency(&mut w, &lat, Some(&stages));

        let s = check::parse(w.as_str()).expect("valid exposition");
        assert_eq!(
            check::value(&s, "tessera_protocol_up", &[("protocol", "peer1")]),
            Some(1.0)
        );
        assert_eq!(
            check::value(&s, "tessera_protocol_up", &[("protocol", "peer2")]),
            Some(0.0)
        );
        assert_eq!(
            check::value(
                &s,
                "tessera_bgp_session_state",
                &[("protocol", "peer2"), ("state", "Active")]
            ),
            Some(1.0)
        );
        assert_eq!(
            check::value(
                &s,
                "tessera_bgp_session_state",
                &[("protocol", "peer2"), ("state", "Established")]
            ),
            Some(0.0)
        );
        assert_eq!(
            check::value(
                &s,
                "tessera_protocol_routes",
                &[("protocol", "peer1"), ("kind", "filtered")]
            ),
            Some(2.0)
        );
        assert_eq!(
            check::value(
                &s,
                "tessera_bgp_messages_received_total",
                &[("protocol", "peer1"), ("type", "update")]
            ),
            Some(7.0)
        );
        assert_eq!(
            check::value(
                &s,
                "tessera_protocol_state_since_seconds",
                &[("protocol", "peer1")]
            ),
            Some(1_700_000_000.5)
        );
        assert_eq!(
            check::value(&s, "tessera_rib_prefixes", &[("table", "master4")]),
            Some(7.0)
        );
        assert_eq!(
            check::value(&s, "tessera_update_processing_seconds_count", &[]),
            Some(1.0)
        );
        assert_eq!(
            check::value(
                &s,
                "tessera_update_stage_seconds_count",
                &[("stage", "policy")]
            ),
            Some(1.0)
        );
    }
}
