//! `/metrics`: the same data the CLI shows (so the two cannot disagree),
//! plus UPDATE processing latency (`tessera_update_processing_seconds`,
//! and per stage `tessera_update_stage_seconds{stage}`, see
//! [`crate::stages`]) and RIB thread counters.

use std::sync::Arc;

use mgmt::metrics::{bgp, LatencyHistogram, MetricType, MetricsSource, MetricsWriter};

use super::control::Control;
use super::merge;
use crate::rib::RibCounters;

pub struct Metrics {
    pub control: Arc<Control>,
    pub latency: Arc<LatencyHistogram>,
}

impl MetricsSource for Metrics {
    /// The RIB's families, the latency histograms and the RIB counters:
    /// all read from what the RIB threads last published
    /// (`rib/published.rs`) and from atomics, so a scrape never waits for
    /// a RIB thread in a batch, nor for any other thread (this runs on the
    /// HTTP listener's own thread).
    fn render(&self, out: &mut MetricsWriter) {
        let Some(parts) = self.control.published_now() else {
            return;
        };
        let shards = parts.len();
        let mut protos = Vec::with_capacity(shards);
        let mut counts = Vec::with_capacity(shards);
        let mut counters = Vec::with_capacity(shards);
        let mut attr_sets = 0;
        for p in &parts {
            protos.push(p.protocols.clone());
            counts.push(p.route_count.clone());
            counters.push(p.counters.clone());
            attr_sets += p.attr_sets;
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

    /// BFD (a query to the BFD task) and the dataplane (its threads'
    /// counters): only when the daemon runs them.
    fn waits(&self) -> bool {
        self.control.has_bfd() || self.control.has_dataplane()
    }

    fn render_waiting(&self, out: &mut MetricsWriter) {
        if let Ok((sessions, c)) = self.control.bfd_sessions() {
            write_bfd(out, &sessions, &c);
        }
        if let Some(d) = self.control.dataplane() {
            write_dataplane(out, &d);
            write_ipsec(out, &d.ipsec);
        }
    }
}

/// `tessera_dataplane_queue_*`: each (interface, RX queue) a core reads
/// (AF_XDP; none with AF_PACKET).
fn write_queues(out: &mut MetricsWriter, cores: &[mgmt::proto::CoreInfo]) {
    if cores.iter().all(|c| c.queues.is_empty()) {
        return;
    }
    out.header(
        "tessera_dataplane_queue_packets_total",
        MetricType::Counter,
        "packets received on (dir=rx) and sent on (dir=tx) each interface RX/TX queue, with the core that serves it",
    );
    for c in cores {
        let core = c.core.to_string();
        for q in &c.queues {
            let queue = q.queue.to_string();
            for (dir, v) in [("rx", q.rx), ("tx", q.tx)] {
                out.sample_u64(
                    "tessera_dataplane_queue_packets_total",
                    &[
                        ("port", &q.port),
                        ("queue", &queue),
                        ("core", &core),
                        ("dir", dir),
                    ],
                    v,
                );
            }
        }
    }
    out.header(
        "tessera_dataplane_queue_ring_drops_total",
        MetricType::Counter,
        "frames the kernel dropped on each queue for want of room in the receive ring",
    );
    for c in cores {
        let core = c.core.to_string();
        for q in &c.queues {
            if let Some(v) = q.ring_drops {
                let queue = q.queue.to_string();
                out.sample_u64(
                    "tessera_dataplane_queue_ring_drops_total",
                    &[("port", &q.port), ("queue", &queue), ("core", &core)],
                    v,
                );
            }
        }
    }
}

/// Each virtual router (`[[dataplane.vr]]`): packets, drops by reason,
/// CPU charged by the schedulers, and its FIB's routes.
fn write_vrs(out: &mut MetricsWriter, vrs: &[mgmt::proto::VrInfo]) {
    if vrs.is_empty() {
        return;
    }
    out.header(
        "tessera_dataplane_vr_packets_total",
        MetricType::Counter,
        "packets each virtual router's graphs received (dir=rx) and sent (dir=tx), over all cores",
    );
    for v in vrs {
        for (dir, n) in [("rx", v.rx), ("tx", v.tx)] {
            out.sample_u64(
                "tessera_dataplane_vr_packets_total",
                &[("vr", &v.name), ("dir", dir)],
                n,
            );
        }
    }
    out.header(
        "tessera_dataplane_vr_drops_total",
        MetricType::Counter,
        "packets each virtual router dropped, by reason (queue_full: its queue was full)",
    );
    for v in vrs {
        for (reason, n) in &v.drops {
            out.sample_u64(
                "tessera_dataplane_vr_drops_total",
                &[("vr", &v.name), ("reason", reason)],
                *n,
            );
        }
    }
    out.header(
        "tessera_dataplane_vr_cpu_seconds_total",
        MetricType::Counter,
        "thread CPU time the per-core schedulers charged to each virtual router (its share used)",
    );
    for v in vrs {
        out.sample(
            "tessera_dataplane_vr_cpu_seconds_total",
            &[("vr", &v.name)],
            v.cpu_ns as f64 / 1e9,
        );
    }
    out.header(
        "tessera_dataplane_vr_tickets",
        MetricType::Gauge,
        "each virtual router's CPU share in tickets (relative to the others)",
    );
    for v in vrs {
        out.sample_u64(
            "tessera_dataplane_vr_tickets",
            &[("vr", &v.name)],
            u64::from(v.tickets),
        );
    }
    out.header(
        "tessera_dataplane_vr_routes",
        MetricType::Gauge,
        "routes in each virtual router's FIB (state=known, state=installed)",
    );
    for v in vrs {
        for (state, n) in [("known", v.routes), ("installed", v.installed)] {
            out.sample_u64(
                "tessera_dataplane_vr_routes",
                &[("vr", &v.name), ("state", state)],
                n,
            );
        }
    }
}

/// The dataplane's elements: packets in and out, drops by reason, and
/// each element's own counters, labelled by element name and class; and
/// each core's packets and drops by reason.
fn write_dataplane(out: &mut MetricsWriter, d: &mgmt::proto::DataplaneInfo) {
    if let Some(x) = &d.xdp_fastpath {
        out.header(
            "tessera_dataplane_xdp_fastpath_forwarded_total",
            MetricType::Counter,
            "packets the XDP fast path forwarded in the kernel's XDP hook, over all CPUs",
        );
        out.sample_u64(
            "tessera_dataplane_xdp_fastpath_forwarded_total",
            &[],
            x.forwarded,
        );
        out.header(
            "tessera_dataplane_xdp_fastpath_forwarded_ipv6_total",
            MetricType::Counter,
            "IPv6 packets the XDP fast path forwarded (part of the forwarded total), over all CPUs",
        );
        out.sample_u64(
            "tessera_dataplane_xdp_fastpath_forwarded_ipv6_total",
            &[],
            x.forwarded_ipv6,
        );
        out.header(
            "tessera_dataplane_xdp_fastpath_to_graph_total",
            MetricType::Counter,
            "packets the XDP fast path handed to the element graph, by reason, over all CPUs",
        );
        for (reason, v) in &x.to_graph {
            out.sample_u64(
                "tessera_dataplane_xdp_fastpath_to_graph_total",
                &[("reason", reason)],
                *v,
            );
        }
        out.header(
            "tessera_dataplane_xdp_fastpath_map_entries_total",
            MetricType::Counter,
            "XDP fast path LPM map entries written (op=set), removed (op=removed) and refused (op=failed)",
        );
        for (op, v) in [
            ("set", x.map_set),
            ("removed", x.map_removed),
            ("failed", x.map_failed),
        ] {
            out.sample_u64(
                "tessera_dataplane_xdp_fastpath_map_entries_total",
                &[("op", op)],
                v,
            );
        }
    }
    write_vrs(out, &d.vrs);
    if !d.per_core.is_empty() {
        out.header(
            "tessera_dataplane_core_packets_total",
            MetricType::Counter,
            "packets each dataplane core received from (dir=rx) and sent to (dir=tx) its devices",
        );
        for c in &d.per_core {
            let core = c.core.to_string();
            for (dir, v) in [("rx", c.rx), ("tx", c.tx)] {
                out.sample_u64(
                    "tessera_dataplane_core_packets_total",
                    &[("core", &core), ("dir", dir)],
                    v,
                );
            }
        }
        out.header(
            "tessera_dataplane_core_drops_total",
            MetricType::Counter,
            "packets each dataplane core dropped, by reason (summed over its graph's elements)",
        );
        for c in &d.per_core {
            let core = c.core.to_string();
            for (reason, v) in &c.drops {
                out.sample_u64(
                    "tessera_dataplane_core_drops_total",
                    &[("core", &core), ("reason", reason)],
                    *v,
                );
            }
        }
        write_queues(out, &d.per_core);
    }
    out.header(
        "tessera_dataplane_element_packets_total",
        MetricType::Counter,
        "packets handed to (dir=in) and emitted by (dir=out) each element of the dataplane graph, over all cores",
    );
    for e in &d.elements {
        for (dir, v) in [("in", e.rx), ("out", e.tx)] {
            out.sample_u64(
                "tessera_dataplane_element_packets_total",
                &[("element", &e.name), ("class", &e.class), ("dir", dir)],
                v,
            );
        }
    }
    out.header(
        "tessera_dataplane_element_drops_total",
        MetricType::Counter,
        "packets each element of the dataplane graph dropped, by reason",
    );
    for e in &d.elements {
        for (reason, v) in &e.drops {
            out.sample_u64(
                "tessera_dataplane_element_drops_total",
                &[
                    ("element", &e.name),
                    ("class", &e.class),
                    ("reason", reason),
                ],
                *v,
            );
        }
    }
    out.header(
        "tessera_dataplane_element_counter",
        MetricType::Gauge,
        "each element's own counters (Counter packets and bytes, queue length, ...), by name",
    );
    for e in &d.elements {
        for (name, v) in &e.counters {
            out.sample_u64(
                "tessera_dataplane_element_counter",
                &[("element", &e.name), ("class", &e.class), ("counter", name)],
                *v,
            );
        }
    }
}

/// IPsec: each SA's packets, bytes and drops by reason, labelled by SPI
/// (`0x1001`; `none` for inbound packets that named no SA) and
/// direction.
fn write_ipsec(out: &mut MetricsWriter, sas: &[mgmt::proto::IpsecSaInfo]) {
    if sas.is_empty() {
        return;
    }
    let labels: Vec<(String, &str)> = sas
        .iter()
        .map(|a| (a.spi_label(), a.dir.as_str()))
        .collect();
    for (name, help, get) in [
        (
            "tessera_ipsec_sa_packets_total",
            "packets each IPsec SA sealed (dir=out) or opened (dir=in)",
            (|a| a.packets) as fn(&mgmt::proto::IpsecSaInfo) -> u64,
        ),
        (
            "tessera_ipsec_sa_bytes_total",
            "inner (plaintext) bytes each IPsec SA sealed or opened",
            |a| a.bytes,
        ),
    ] {
        out.header(name, MetricType::Counter, help);
        for (a, (spi, dir)) in sas.iter().zip(&labels) {
            out.sample_u64(name, &[("spi", spi), ("dir", dir)], get(a));
        }
    }
    let name = "tessera_ipsec_sa_drops_total";
    out.header(
        name,
        MetricType::Counter,
        "packets dropped for each IPsec SA, by reason (replay, auth_failed, no_sa, ...)",
    );
    for (a, (spi, dir)) in sas.iter().zip(&labels) {
        for (reason, v) in &a.drops {
            out.sample_u64(name, &[("spi", spi), ("dir", dir), ("reason", reason)], *v);
        }
    }
}

/// BFD: per-session state (1 Up), packets and transitions; the receive
/// path's drops.
fn write_bfd(
    w: &mut MetricsWriter,
    sessions: &[mgmt::proto::BfdSessionInfo],
    c: &crate::bfd::BfdCounters,
) {
    if sessions.is_empty() {
        return;
    }
    type Get = fn(&mgmt::proto::BfdSessionInfo) -> u64;
    let rows: [(&str, MetricType, &str, Get); 5] = [
        (
            "tessera_bfd_session_up",
            MetricType::Gauge,
            "1 when the BFD session is Up",
            |s| u64::from(s.state == "Up"),
        ),
        (
            "tessera_bfd_packets_sent_total",
            MetricType::Counter,
            "BFD control packets sent",
            |s| s.packets_sent,
        ),
        (
            "tessera_bfd_packets_received_total",
            MetricType::Counter,
            "BFD control packets accepted for the session",
            |s| s.packets_received,
        ),
        (
            "tessera_bfd_up_transitions_total",
            MetricType::Counter,
            "Times the session came Up",
            |s| s.transitions_up,
        ),
        (
            "tessera_bfd_down_transitions_total",
            MetricType::Counter,
            "Times the session left Up",
            |s| s.transitions_down,
        ),
    ];
    for (name, kind, help, get) in rows {
        w.header(name, kind, help);
        for s in sessions {
            let peer = s.peer.to_string();
            w.sample_u64(name, &[("peer", &peer)], get(s));
        }
    }
    for (name, help, v) in [
        (
            "tessera_bfd_rx_bad_ttl_total",
            "BFD packets dropped: TTL not 255 (RFC 5881 §5)",
            c.bad_ttl,
        ),
        (
            "tessera_bfd_rx_malformed_total",
            "BFD packets dropped by the RFC 5880 §6.8.6 checks",
            c.malformed,
        ),
        (
            "tessera_bfd_rx_no_session_total",
            "BFD packets for no known session",
            c.no_session,
        ),
    ] {
        w.counter(name, help, v);
    }
}

fn write_counters(w: &mut MetricsWriter, c: &RibCounters, attr_sets: usize) {
    let rows: [(&str, &str, u64); 10] = [
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
            "tessera_update_group_encodings_total",
            "Buffers of UPDATEs encoded for peers (one per drained batch; update-group members that encode alike share one)",
            c.encodings,
        ),
        (
            "tessera_update_group_sends_total",
            "Buffers of UPDATEs handed to peers' sessions (above the encodings when update-group members share them)",
            c.encoding_sends,
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
