//! The live view's snapshot, one per second over `/events`: totals only;
//! the page turns successive snapshots into rates and sparklines.

use mgmt::metrics::scan::{label, samples};
use mgmt::proto::{BfdSessionInfo, DataplaneInfo, ProtocolInfo, RouteCount};
use serde_json::{json, Value};

/// Per UPDATE stage: count, total seconds and the histogram's cumulative
/// buckets `[le, count]` (`le` in seconds, the last one `+Inf` as `null`),
/// from the `tessera_update_stage_seconds` histogram.
pub fn stages(metrics: &str) -> Vec<Value> {
    let counts = samples(metrics, "tessera_update_stage_seconds_count");
    let buckets = samples(metrics, "tessera_update_stage_seconds_bucket");
    samples(metrics, "tessera_update_stage_seconds_sum")
        .into_iter()
        .filter_map(|(l, sum)| {
            let stage = label(l, "stage")?;
            let count = counts
                .iter()
                .find(|(c, _)| label(c, "stage") == Some(stage))
                .map_or(0.0, |(_, v)| *v);
            let b: Vec<Value> = buckets
                .iter()
                .filter(|(l, _)| label(l, "stage") == Some(stage))
                .filter_map(|(l, v)| {
                    let le = label(l, "le")?;
                    Some(json!([le.parse::<f64>().ok().filter(|x| x.is_finite()), v]))
                })
                .collect();
            Some(json!({ "stage": stage, "count": count, "sum_seconds": sum, "buckets": b }))
        })
        .collect()
}

/// The dataplane's cores (totals: packets in and out, drops by reason),
/// `null` when no dataplane runs in the daemon.
pub fn dataplane(dp: Option<&DataplaneInfo>) -> Value {
    let Some(d) = dp.filter(|d| !d.per_core.is_empty()) else {
        return Value::Null;
    };
    let cores: Vec<Value> = d
        .per_core
        .iter()
        .map(|c| json!({ "core": c.core, "rx": c.rx, "tx": c.tx, "drops": c.drops }))
        .collect();
    json!({ "graph": d.graph, "cores": cores })
}

/// The cluster (this node, and each other node with its BFD session's
/// state, whether it is in the live set, and the datagrams and bytes sent
/// to it over the fabric), `null` when no cluster runs.
pub fn cluster(dp: Option<&DataplaneInfo>, bfd: &[BfdSessionInfo]) -> Value {
    let Some(k) = dp.and_then(|d| d.cluster.as_ref()) else {
        return Value::Null;
    };
    let nodes: Vec<Value> = k
        .peers
        .iter()
        .map(|p| {
            let ip = p
                .fabric_address
                .parse::<std::net::SocketAddr>()
                .map(|a| a.ip())
                .ok();
            let state = bfd
                .iter()
                .find(|s| Some(s.peer) == ip && s.neighbor.is_none())
                .or_else(|| bfd.iter().find(|s| Some(s.peer) == ip))
                .map(|s| s.state.clone());
            json!({
                "node": p.node,
                "fabric_address": p.fabric_address,
                "live": p.live,
                "bfd": state,
                "datagrams": p.datagrams,
                "bytes": p.bytes,
            })
        })
        .collect();
    json!({
        "node": k.node,
        "fabric_address": k.fabric_address,
        "mode": k.mode,
        "nodes": nodes,
    })
}

/// The snapshot: peers, RIB size, stages, the daemon's resident memory,
/// and the dataplane and cluster when they run (`null` otherwise).
pub fn snapshot(
    now_ms: u64,
    protos: &[ProtocolInfo],
    count: Option<&RouteCount>,
    metrics: &str,
    rss_bytes: Option<u64>,
    dp: Option<&DataplaneInfo>,
    bfd: &[BfdSessionInfo],
) -> Value {
    let peers: Vec<Value> = protos
        .iter()
        .filter_map(|p| {
            let b = p.bgp.as_ref()?;
            Some(json!({
                "name": p.name,
                "state": p.state.as_str(),
                "bgp_state": b.bgp_state.as_str(),
                "neighbor": b.neighbor_addr.to_string(),
                "remote_as": b.remote_as,
                "since_ms": p.since_ms,
                "received": p.routes.received,
                "accepted": p.routes.accepted,
                "filtered": p.routes.filtered,
                "exported": p.routes.sent,
                "updates_in": b.messages_received.update,
                "updates_out": b.messages_sent.update,
            }))
        })
        .collect();
    let (prefixes, paths) = count.map_or((0, 0), |c| {
        c.tables
            .iter()
            .fold((0u64, 0u64), |(a, b), t| (a + t.prefixes, b + t.paths))
    });
    json!({
        "time_ms": now_ms,
        "peers": peers,
        "rib": {
            "prefixes": prefixes,
            "paths": paths,
            "rss_bytes": rss_bytes,
            "bytes_per_path": rss_bytes.filter(|_| paths > 0).map(|r| r / paths.max(1)),
        },
        "stages": stages(metrics),
        "dataplane": dataplane(dp),
        "cluster": cluster(dp, bfd),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_rows() {
        let m = "# HELP x\n\
                 tessera_update_stage_seconds_bucket{stage=\"parse\",le=\"0.001\"} 4\n\
                 tessera_update_stage_seconds_bucket{stage=\"parse\",le=\"+Inf\"} 10\n\
                 tessera_update_stage_seconds_sum{stage=\"parse\"} 0.5\n\
                 tessera_update_stage_seconds_count{stage=\"parse\"} 10\n\
                 tessera_update_stage_seconds_sum{stage=\"best_path\"} 1e-3\n";
        let s = stages(m);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0],
            json!({"stage": "parse", "count": 10.0, "sum_seconds": 0.5,
                   "buckets": [[0.001, 4.0], [null, 10.0]]})
        );
        assert_eq!(s[1]["count"], 0.0);
    }

    fn bfd(peer: &str, state: &str) -> BfdSessionInfo {
        BfdSessionInfo {
            peer: peer.parse().unwrap(),
            local: None,
            neighbor: None,
            state: state.into(),
            remote_state: state.into(),
            diag: "none".into(),
            remote_diag: "none".into(),
            local_disc: 1,
            remote_disc: 2,
            desired_min_tx_us: 0,
            required_min_rx_us: 0,
            multiplier: 3,
            tx_interval_us: 0,
            detection_time_us: 0,
            last_change_ms: None,
            packets_sent: 0,
            packets_received: 0,
            transitions_up: 0,
            transitions_down: 0,
        }
    }

    /// No dataplane, or one without cores: both panels are `null` (the
    /// page hides them); with a cluster, each node gets its BFD state.
    #[test]
    fn dataplane_and_cluster_or_null() {
        assert_eq!(dataplane(None), Value::Null);
        assert_eq!(cluster(None, &[]), Value::Null);
        let mut d = DataplaneInfo {
            graph: "built-in".into(),
            cores: 1,
            elements: Vec::new(),
            ipsec: Vec::new(),
            per_core: Vec::new(),
            cluster: None,
            xdp_fastpath: None,
            vrs: Box::default(),
        };
        assert_eq!(dataplane(Some(&d)), Value::Null);
        d.per_core.push(mgmt::proto::CoreInfo {
            core: 0,
            rx: 5,
            tx: 4,
            drops: [("no_route".to_string(), 1)].into_iter().collect(),
            queues: Vec::new(),
        });
        assert_eq!(
            dataplane(Some(&d)),
            json!({"graph": "built-in", "cores": [{"core": 0, "rx": 5, "tx": 4, "drops": {"no_route": 1}}]})
        );
        assert_eq!(cluster(Some(&d), &[]), Value::Null);
        d.cluster = Some(Box::new(mgmt::proto::ClusterInfo {
            node: 0,
            fabric_address: "198.18.100.1:6081".into(),
            mode: "Direct".into(),
            peers: vec![
                mgmt::proto::ClusterPeerInfo {
                    node: 1,
                    fabric_address: "198.18.100.2:6081".into(),
                    live: true,
                    datagrams: 7,
                    bytes: 700,
                },
                mgmt::proto::ClusterPeerInfo {
                    node: 2,
                    fabric_address: "198.18.100.3:6081".into(),
                    live: false,
                    datagrams: 0,
                    bytes: 0,
                },
            ],
        }));
        let c = cluster(Some(&d), &[bfd("198.18.100.2", "Up")]);
        assert_eq!(c["node"], 0);
        assert_eq!(c["nodes"][0]["bfd"], "Up");
        assert_eq!(c["nodes"][0]["datagrams"], 7);
        assert_eq!(c["nodes"][1]["bfd"], Value::Null);
        assert_eq!(c["nodes"][1]["live"], false);
    }
}
