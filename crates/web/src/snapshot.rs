//! The live view's snapshot, one per second over `/events`: totals only;
//! the page turns successive snapshots into rates and sparklines.

use mgmt::metrics::scan::{label, samples};
use mgmt::proto::{ProtocolInfo, RouteCount};
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

/// The snapshot: peers, RIB size, stages, the daemon's resident memory.
pub fn snapshot(
    now_ms: u64,
    protos: &[ProtocolInfo],
    count: Option<&RouteCount>,
    metrics: &str,
    rss_bytes: Option<u64>,
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
}
