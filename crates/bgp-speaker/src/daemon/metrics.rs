//! `/metrics`: the same data the CLI shows (so the two cannot disagree),
//! plus UPDATE processing latency and RIB thread counters.

use std::sync::Arc;

use mgmt::metrics::{bgp, LatencyHistogram, MetricType, MetricsSource, MetricsWriter};

use super::control::Control;
use super::query;
use crate::rib::RibCounters;

pub struct Metrics {
    pub control: Arc<Control>,
    pub latency: Arc<LatencyHistogram>,
}

impl MetricsSource for Metrics {
    fn render(&self, out: &mut MetricsWriter) {
        let Ok((protos, count, c, attr_sets)) = self.control.call(|st| {
            (
                query::protocols(st, true, None),
                query::route_count(st),
                st.counters.clone(),
                st.rib.attr_set_count(),
            )
        }) else {
            return;
        };
        bgp::write_protocols(out, &protos);
        bgp::write_rib(out, &count);
        bgp::write_latency(out, &self.latency, None);
        write_counters(out, &c, attr_sets);
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
