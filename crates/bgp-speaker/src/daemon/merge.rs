//! Merging the answers of a split RIB's shard threads into one CLI or
//! `/metrics` answer. Every shard has the same peer table, so protocols
//! are matched by name and their route counts added; routes are disjoint
//! across shards (each prefix has one owner) and only need sorting.

use base::Prefix;
use mgmt::proto::{ProtocolInfo, RouteCount, RouteCounts, RouteInfo};

use crate::rib::RibCounters;

fn add_counts(a: &mut RouteCounts, b: &RouteCounts) {
    a.received += b.received;
    a.accepted += b.accepted;
    a.filtered += b.filtered;
    a.sent += b.sent;
    a.preferred += b.preferred;
}

/// `show protocols`: per-protocol route counts summed; everything else as
/// the first shard that lists the protocol says (shard 0, the primary,
/// runs the session commands).
pub fn protocols(parts: Vec<Vec<ProtocolInfo>>) -> Vec<ProtocolInfo> {
    let mut it = parts.into_iter();
    let mut out = it.next().unwrap_or_default();
    for part in it {
        for p in part {
            match out.iter_mut().find(|o| o.name == p.name) {
                Some(o) => {
                    add_counts(&mut o.routes, &p.routes);
                    for c in &p.channels {
                        if let Some(oc) = o.channels.iter_mut().find(|oc| oc.name == c.name) {
                            add_counts(&mut oc.routes, &c.routes);
                        }
                    }
                }
                None => out.push(p),
            }
        }
    }
    out
}

/// `show route count`: tables and protocols summed.
pub fn route_count(parts: Vec<RouteCount>) -> RouteCount {
    let mut it = parts.into_iter();
    let mut out = it.next().unwrap_or_default();
    for part in it {
        for t in part.tables {
            match out.tables.iter_mut().find(|o| o.table == t.table) {
                Some(o) => {
                    o.matched += t.matched;
                    o.paths += t.paths;
                    o.prefixes += t.prefixes;
                }
                None => out.tables.push(t),
            }
        }
        for p in part.per_protocol {
            match out
                .per_protocol
                .iter_mut()
                .find(|o| o.protocol == p.protocol)
            {
                Some(o) => {
                    o.paths += p.paths;
                    o.best += p.best;
                }
                None => out.per_protocol.push(p),
            }
        }
    }
    out
}

/// `show route`: the shards' routes in prefix order.
pub fn routes(parts: Vec<Vec<(Prefix, RouteInfo)>>) -> Vec<RouteInfo> {
    let mut all: Vec<(Prefix, RouteInfo)> = parts.into_iter().flatten().collect();
    all.sort_by_key(|a| a.0);
    all.into_iter().map(|(_, r)| r).collect()
}

/// `show route for`: each part's longest covering route; the longest of
/// them wins (parts hold disjoint prefixes).
pub fn longest_match(parts: Vec<Vec<(Prefix, RouteInfo)>>) -> Vec<RouteInfo> {
    parts
        .into_iter()
        .flatten()
        .max_by_key(|(p, _)| p.len())
        .map(|(_, r)| r)
        .into_iter()
        .collect()
}

/// RIB counters summed over shards.
pub fn counters(parts: &[RibCounters]) -> RibCounters {
    let mut t = RibCounters::default();
    for c in parts {
        t.updates += c.updates;
        t.prefixes_announced += c.prefixes_announced;
        t.prefixes_withdrawn += c.prefixes_withdrawn;
        t.loops_rejected += c.loops_rejected;
        t.best_changes += c.best_changes;
        t.updates_sent += c.updates_sent;
        t.bytes_sent += c.bytes_sent;
        t.encodings += c.encodings;
        t.encoding_sends += c.encoding_sends;
        t.apply_ns += c.apply_ns;
        t.export_ns += c.export_ns;
        t.rov_reevaluated += c.rov_reevaluated;
    }
    t
}

/// `show nexthop`: every part resolves through the same tracker, so one
/// next hop has one state (the first part that has it resolved gives it);
/// prefix counts are added.
/// Sorted by address; `None` when tracking is off.
pub fn nexthops(
    parts: Vec<Option<Vec<mgmt::proto::NexthopInfo>>>,
) -> Option<Vec<mgmt::proto::NexthopInfo>> {
    let mut out: Vec<mgmt::proto::NexthopInfo> = Vec::new();
    let mut on = false;
    for part in parts.into_iter().flatten() {
        on = true;
        for n in part {
            match out.iter_mut().find(|o| o.nexthop == n.nexthop) {
                Some(o) => {
                    o.prefixes += n.prefixes;
                    if !o.resolved {
                        o.resolved = n.resolved;
                        o.reachable = n.reachable;
                        o.igp_cost = n.igp_cost;
                    }
                }
                None => out.push(n),
            }
        }
    }
    out.sort_by_key(|n| n.nexthop);
    on.then_some(out)
}
