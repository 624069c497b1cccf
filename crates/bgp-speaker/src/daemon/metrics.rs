//! `/metrics`: the same data the CLI shows (so the two cannot disagree),
//! plus UPDATE processing latency (`tessera_update_processing_seconds`,
//! and per stage `tessera_update_stage_seconds{stage}`, see
//! [`crate::stages`]) and RIB thread counters.

use std::sync::Arc;

use mgmt::metrics::{bgp, LatencyHistogram, MetricType, MetricsSource, MetricsWriter};

use super::control::Control;
use super::{merge, query};
use crate::rib::RibCounters;

pub struct Metrics {
    pub control: Arc<Control>,
    pub latency: Arc<LatencyHistogram>,
}

impl MetricsSource for Metrics {
    fn render(&self, out: &mut MetricsWriter) {
        let Ok(parts) = self.control.call_all(|st| {
            (
                query::protocols(st, true, None),
                query::route_count(st),
                st.counters.clone(),
                st.rib.attr_set_count(),
            )
        }) else {
            return;
        };
        let shards = parts.len();
        let mut protos = Vec::with_capacity(shards);
        let mut counts = Vec::with_capacity(shards);
        let mut counters = Vec::with_capacity(shards);
        let mut attr_sets = 0;
        for (p, c, k, a) in parts {
            protos.push(p);
            counts.push(c);
            counters.push(k);
            attr_sets += a;
        }
        bgp::write_protocols(out, &merge::protocols(protos));
        bgp::write_rib(out, &merge::route_count(counts));
        bgp::write_latency(out, &self.latency, Some(&crate::stages::STAGES));
        write_counters(out, &merge::counters(&counters), attr_sets);
        out.header(
            "tessera_rib_threads",
            MetricType::Gauge,
            "RIB threads (shards) of the UPDATE pipeline",
        );
        out.sample_u64("tessera_rib_threads", &[], shards as u64);
    }
}

fn write_counters(w: &mut MetricsWriter, c: &RibCounters, attr_sets: usize) {
    let rows: [(&str, &str, u64); 8] = [
        (
            "tessera_rib_updates_total",
            "UPDATEs applied by the RIB thread",
            c.updates,
        ),
        (
            "tessera_rib_prefixes_announced_total",
            "Announced prefixes applied",
            c.prefixes_announced,
        ),
        (
            "tessera_rib_prefixes_withdrawn_total",
            "Withdrawn prefixes applied",
            c.prefixes_withdrawn,
        ),
        (
            "tessera_rib_loops_rejected_total",
            "Announcements dropped by loop or OTC checks",
            c.loops_rejected,
        ),
        (
            "tessera_rib_best_changes_total",
            "Prefixes whose best path changed",
            c.best_changes,
        ),
        (
            "tessera_rib_updates_sent_total",
            "UPDATE messages encoded for peers",
            c.updates_sent,
        ),
        (
            "tessera_rib_apply_nanoseconds_total",
            "Nanoseconds spent applying UPDATEs",
            c.apply_ns,
        ),
        (
            "tessera_rib_export_nanoseconds_total",
            "Nanoseconds spent in export",
            c.export_ns,
        ),
    ];
    for (name, help, v) in rows {
        w.counter(name, help, v);
    }
    w.header(
        "tessera_rib_attribute_sets",
        MetricType::Gauge,
        "Distinct interned attribute sets (summed over shards)",
    );
    w.sample_u64("tessera_rib_attribute_sets", &[], attr_sets as u64);
}
