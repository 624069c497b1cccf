//! Answers to the CLI's questions, computed on the RIB thread from
//! [`RibState`] (so they see one consistent RIB) and returned as `mgmt`
//! data types.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use base::{Afi, AfiSafi, Prefix};
use bgp_rib::{AttrSet, PeerId};
use bgp_wire::{AttrValue, NextHop, SegmentType};
use mgmt::proto::{
    BgpInfo, BgpState, ChannelInfo, MessageCounts, Origin, PathInfo, ProtoState, ProtocolCount,
    ProtocolInfo, ProtocolKind, RouteCount, RouteCounts, RouteInfo, TableCount,
};

use crate::msg::state;
use crate::rib::{PeerEntry, RibState, STATIC_PEER};

/// The name of the static-routes protocol in the CLI.
pub const STATIC_NAME: &str = "static1";

pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn bgp_state(s: u8) -> BgpState {
    match s {
        state::IDLE => BgpState::Idle,
        state::CONNECT => BgpState::Connect,
        state::ACTIVE => BgpState::Active,
        state::OPEN_SENT => BgpState::OpenSent,
        state::OPEN_CONFIRM => BgpState::OpenConfirm,
        state::ESTABLISHED => BgpState::Established,
        _ => BgpState::Unknown,
    }
}

fn family_name(af: AfiSafi) -> String {
    let afi = if af.afi == Afi::Ipv4 { "ipv4" } else { "ipv6" };
    if af == AfiSafi::IPV4_MULTICAST || af == AfiSafi::IPV6_MULTICAST {
        format!("{afi} multicast")
    } else {
        afi.to_string()
    }
}

fn table_of(af: AfiSafi) -> &'static str {
    if af.afi == Afi::Ipv4 {
        "master4"
    } else {
        "master6"
    }
}

/// RFC 4271 §4.5 / RFC 4486 names of a NOTIFICATION code and subcode, as
/// BIRD prints them.
pub fn notification_name(code: u8, subcode: u8) -> &'static str {
    match (code, subcode) {
        (1, _) => "Message header error",
        (2, 2) => "Bad peer AS",
        (2, 3) => "Bad BGP identifier",
        (2, 6) => "Unacceptable hold time",
        (2, 7) => "Unsupported capability",
        (2, 11) => "Role mismatch",
        (2, _) => "OPEN message error",
        (3, _) => "UPDATE message error",
        (4, _) => "Hold timer expired",
        (5, _) => "Finite state machine error",
        (6, 1) => "Maximum number of prefixes reached",
        (6, 2) => "Administrative shutdown",
        (6, 3) => "Peer de-configured",
        (6, 4) => "Administrative reset",
        (6, 5) => "Connection rejected",
        (6, 6) => "Other configuration change",
        (6, 7) => "Connection collision resolution",
        (6, 8) => "Out of resources",
        (6, 9) => "Hard reset",
        (6, _) => "Cease",
        (7, _) => "ROUTE-REFRESH message error",
        _ => "Unknown error",
    }
}

/// "sent NOTIFICATION 6/1 ..." -> the same with the RFC name added.
fn explain(err: &str) -> String {
    let Some(i) = err.find("NOTIFICATION ") else {
        return err.to_string();
    };
    let rest = &err[i + 13..];
    let num: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '/')
        .collect();
    let Some((c, s)) = num.split_once('/') else {
        return err.to_string();
    };
    match (c.parse::<u8>(), s.parse::<u8>()) {
        (Ok(c), Ok(s)) => format!("{err} ({})", notification_name(c, s)),
        _ => err.to_string(),
    }
}

fn peer_info(st: &RibState, id: PeerId, e: &PeerEntry, all: bool) -> ProtocolInfo {
    let s = e.status.state();
    // Counters the RIB keeps as routes change: O(shards), no walk.
    let counts = st.rib.peer_counts(id).unwrap_or_default();
    let routes = RouteCounts {
        received: counts.received,
        accepted: counts.accepted,
        filtered: counts.received.saturating_sub(counts.accepted),
        sent: counts.advertised,
        preferred: counts.best,
    };
    let proto_state = if s == state::ESTABLISHED {
        ProtoState::Up
    } else if e.disabled {
        ProtoState::Down
    } else {
        ProtoState::Start
    };
    let last_error = explain(&e.status.last_error());
    let since_s = e.status.state_since.load(Ordering::Relaxed);
    let mut info = bgp_state(s).as_str().to_string();
    if s != state::ESTABLISHED && !last_error.is_empty() {
        info = format!("{info}   {last_error}");
    }
    let channels = e
        .meta
        .families
        .iter()
        .map(|&af| ChannelInfo {
            name: family_name(af),
            up: e
                .up
                .as_ref()
                .is_some_and(|u| u.negotiated.families.contains(&af)),
            table: table_of(af).to_string(),
            import_filter: Some(e.meta.import.name().to_string()),
            export_filter: Some(e.meta.export.name().to_string()),
            routes,
        })
        .collect();
    let bgp = all.then(|| {
        let up = e.up.as_ref();
        let n = up.map(|u| &u.negotiated);
        let mut caps = Vec::new();
        if let Some(n) = n {
            for af in &n.families {
                caps.push(format!("Multiprotocol AF announced: {}", family_name(*af)));
            }
            if n.route_refresh {
                caps.push("Route refresh".into());
            }
            if n.enhanced_route_refresh {
                caps.push("Enhanced refresh".into());
            }
            if n.extended_message {
                caps.push("Extended message".into());
            }
            // RFC 8950: usable both ways, or only from the peer.
            if !n.ext_next_hop_tx.is_empty() {
                caps.push("Extended next hop".into());
            } else if !n.ext_next_hop_rx.is_empty() {
                caps.push("Extended next hop (receive only)".into());
            }
            if n.graceful_restart.is_some() {
                caps.push("Graceful restart".into());
            }
            if n.llgr.is_some() {
                caps.push("Long-lived graceful restart".into());
            }
            if n.four_octet_asn {
                caps.push("4-octet AS numbers".into());
            }
            for a in &n.add_path {
                let dir = match (a.rx, a.tx) {
                    (true, true) => "RX TX",
                    (true, false) => "RX",
                    (false, true) => "TX",
                    (false, false) => continue,
                };
                caps.push(format!("ADD-PATH {dir}: {}", family_name(a.afi_safi)));
            }
            if let Some(r) = n.peer_role {
                caps.push(format!("Role: {r}"));
            }
        }
        let msgs_in = MessageCounts {
            update: e.status.updates_in.load(Ordering::Relaxed),
            notification: e.status.notifications_in.load(Ordering::Relaxed),
            keepalive: e.status.keepalives_in.load(Ordering::Relaxed),
            open: e.status.opens_in.load(Ordering::Relaxed),
            route_refresh: e.status.refreshes_in.load(Ordering::Relaxed),
        };
        let msgs_out = MessageCounts {
            update: e.status.updates_out.load(Ordering::Relaxed),
            notification: e.status.notifications_out.load(Ordering::Relaxed),
            keepalive: e.status.keepalives_out.load(Ordering::Relaxed),
            open: e.status.opens_out.load(Ordering::Relaxed),
            route_refresh: e.status.refreshes_out.load(Ordering::Relaxed),
        };
        BgpInfo {
            bgp_state: bgp_state(s),
            neighbor_addr: e.meta.addr,
            neighbor_port: up.map(|u| u.remote_addr.port()),
            remote_as: e.meta.remote_asn.0,
            local_as: e.meta.local_asn.0,
            neighbor_id: n.map(|n| n.peer_bgp_id),
            source_addr: up.map(|u| u.local_addr.ip()),
            hold_time: n.map(|n| n.hold_time),
            keepalive_time: n.map(|n| n.keepalive_interval),
            hold_timer_left_ms: None,
            keepalive_timer_left_ms: None,
            local_capabilities: Vec::new(),
            neighbor_capabilities: caps,
            session: Some(format!(
                "{}{}{}{}",
                if e.meta.ebgp { "external" } else { "internal" },
                if e.meta.rr_client {
                    " route-reflector"
                } else {
                    ""
                },
                if e.meta.rs_client {
                    " route-server"
                } else {
                    ""
                },
                if n.is_some_and(|n| n.four_octet_asn) {
                    " AS4"
                } else {
                    ""
                },
            )),
            messages_received: msgs_in,
            messages_sent: msgs_out,
        }
    });
    ProtocolInfo {
        name: e.meta.name.clone(),
        kind: ProtocolKind::Bgp,
        table: None,
        state: proto_state,
        since_ms: since_s * 1000,
        info: Some(info),
        last_error: (!last_error.is_empty()).then_some(last_error),
        description: (!e.meta.description.is_empty()).then(|| e.meta.description.clone()),
        routes,
        channels,
        bgp,
    }
}

/// `show protocols [all] [NAME]` and `show neighbor` (one entry). The
/// route counts are the RIB's counters ([`bgp_rib::PeerCounts`]): a call
/// costs O(peers x shards), whatever the size of the table.
pub fn protocols(st: &RibState, all: bool, name: Option<&str>) -> Vec<ProtocolInfo> {
    let mut out = Vec::new();
    if !st.statics.is_empty() && name.is_none_or(|n| n == STATIC_NAME) {
        let n = st.statics.len() as u64;
        out.push(ProtocolInfo {
            name: STATIC_NAME.into(),
            kind: ProtocolKind::Static,
            table: Some("master4".into()),
            state: ProtoState::Up,
            since_ms: unix_ms(st.started),
            info: None,
            last_error: None,
            description: None,
            routes: RouteCounts {
                received: n,
                accepted: n,
                filtered: 0,
                sent: 0,
                preferred: st.rib.peer_counts(STATIC_PEER).map_or(0, |c| c.best),
            },
            channels: Vec::new(),
            bgp: None,
        });
    }
    for (id, e) in st.peer_iter() {
        if name.is_some_and(|n| n != e.meta.name && n.parse::<IpAddr>().ok() != Some(e.meta.addr)) {
            continue;
        }
        out.push(peer_info(st, id, e, all));
    }
    out
}

/// [`protocols`] `all` and `name` applied to a part's published `show
/// protocols all` (`rib/published.rs`): the protocols `name` selects (a
/// name, or a neighbour's address), without the BGP block unless `all`
/// (the only thing `all` adds).
pub fn select_protocols(
    published: &[ProtocolInfo],
    all: bool,
    name: Option<&str>,
) -> Vec<ProtocolInfo> {
    let addr: Option<IpAddr> = name.and_then(|n| n.parse().ok());
    published
        .iter()
        .filter(|p| {
            name.is_none_or(|n| {
                n == p.name
                    || (p.kind == ProtocolKind::Bgp
                        && addr.is_some()
                        && p.bgp.as_ref().map(|b| b.neighbor_addr) == addr)
            })
        })
        .map(|p| {
            let mut p = p.clone();
            if !all {
                p.bgp = None;
            }
            p
        })
        .collect()
}

/// `show neighbor KEY` from merged `show protocols all`: the BGP
/// neighbour whose name or address is `key` (as `RibCore::find_peer`).
pub fn find_neighbor(protos: Vec<ProtocolInfo>, key: &str) -> Vec<ProtocolInfo> {
    let addr: Option<IpAddr> = key.parse().ok();
    protos
        .into_iter()
        .filter(|p| p.kind == ProtocolKind::Bgp)
        .find(|p| {
            p.name == key || (addr.is_some() && p.bgp.as_ref().map(|b| b.neighbor_addr) == addr)
        })
        .into_iter()
        .collect()
}

fn protocol_name(st: &RibState, id: PeerId) -> String {
    if id == STATIC_PEER {
        return STATIC_NAME.into();
    }
    st.peer(id)
        .map_or_else(|| format!("peer{}", id.0), |p| p.meta.name.clone())
}

fn path_info(
    st: &RibState,
    id: PeerId,
    set: &AttrSet,
    best: bool,
    stale: bool,
    all: bool,
) -> PathInfo {
    let since = st
        .peer(id)
        .and_then(|p| p.up.as_ref())
        .map_or(st.started, |u| u.since);
    let mut p = PathInfo::new(protocol_name(st, id), unix_ms(since));
    p.best = best;
    p.stale = stale;
    if id == STATIC_PEER {
        p.source = ProtocolKind::Static;
        p.preference = 200;
    } else {
        p.from_addr = st.peer(id).map(|e| e.meta.addr);
    }
    match set.next_hop() {
        Some(NextHop::V4(a)) => p.next_hop = Some(IpAddr::V4(a)),
        Some(NextHop::V6(a)) => p.next_hop = Some(IpAddr::V6(a)),
        Some(NextHop::V6LinkLocal(g, l)) => {
            p.next_hop = Some(IpAddr::V6(g));
            p.next_hop_link_local = Some(IpAddr::V6(l));
        }
        None => {}
    }
    p.via = p.next_hop;
    let b = set.to_builder();
    for a in b.attrs() {
        match &a.value {
            AttrValue::Origin(o) => {
                p.origin = Some(match *o as u8 {
                    0 => Origin::Igp,
                    1 => Origin::Egp,
                    _ => Origin::Incomplete,
                })
            }
            AttrValue::AsPath(path) => {
                let mut s = String::new();
                for seg in &path.segments {
                    let (open, close) = match seg.kind {
                        SegmentType::Set => ("{", "}"),
                        SegmentType::ConfedSequence => ("(", ")"),
                        SegmentType::ConfedSet => ("[", "]"),
                        _ => ("", ""),
                    };
                    if !s.is_empty() {
                        s.push(' ');
                    }
                    s.push_str(open);
                    let asns: Vec<String> = seg.asns.iter().map(|a| a.0.to_string()).collect();
                    s.push_str(&asns.join(" "));
                    s.push_str(close);
                }
                p.as_path = s;
            }
            AttrValue::Med(m) => p.med = Some(*m),
            AttrValue::LocalPref(l) => p.local_pref = Some(*l),
            AttrValue::AtomicAggregate => p.atomic_aggregate = true,
            AttrValue::Aggregator(ag) => p.aggregator = Some((ag.asn.0, ag.addr)),
            AttrValue::Communities(cs) => {
                p.communities = cs
                    .iter()
                    .map(|c| ((c.0 >> 16) as u16, c.0 as u16))
                    .collect()
            }
            AttrValue::ExtendedCommunities(cs) => {
                p.ext_communities = cs.iter().map(|c| u64::from_be_bytes(c.0)).collect()
            }
            AttrValue::LargeCommunities(cs) => {
                p.large_communities = cs
                    .iter()
                    .map(|c| (c.global_admin, c.local_data1, c.local_data2))
                    .collect()
            }
            AttrValue::OriginatorId(o) => p.originator_id = Some(*o),
            AttrValue::ClusterList(c) => p.cluster_list = c.clone(),
            AttrValue::OnlyToCustomer(a) => p.otc = Some(a.0),
            AttrValue::Raw { type_code, value } if all => {
                let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
                p.other.push((format!("attr{type_code}"), hex));
            }
            _ => {}
        }
    }
    p
}

/// `show route [PREFIX] [all] [protocol NAME]`. Sorted by prefix, best
/// path first.
pub fn routes(
    st: &RibState,
    prefix: Option<Prefix>,
    all: bool,
    protocol: Option<&str>,
) -> Vec<RouteInfo> {
    routes_keyed(st, prefix, all, protocol)
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

/// [`routes`] with each route's prefix, for merging shards.
pub fn routes_keyed(
    st: &RibState,
    prefix: Option<Prefix>,
    all: bool,
    protocol: Option<&str>,
) -> Vec<(Prefix, RouteInfo)> {
    routes_keyed_in(st, &st.rib, prefix, all, protocol)
}

/// [`routes_keyed`] of `rib`: the unicast table or the multicast one.
pub fn routes_keyed_in(
    st: &RibState,
    rib: &bgp_rib::Rib,
    prefix: Option<Prefix>,
    all: bool,
    protocol: Option<&str>,
) -> Vec<(Prefix, RouteInfo)> {
    let mut out = Vec::new();
    let multipath_on = rib
        .shards()
        .first()
        .is_some_and(|s| s.config().multipath.enabled());
    let mut push = |r: bgp_rib::RouteRef<'_>| {
        let mut paths = Vec::new();
        // ECMP members (router.multipath), only for a set of several.
        let members = if multipath_on && r.paths.len() > 1 {
            rib.multipath(&r.prefix)
        } else {
            Vec::new()
        };
        for (i, (pe, set)) in r.iter().enumerate() {
            let best = r.best == Some(i);
            if protocol.is_some_and(|n| n != protocol_name(st, pe.peer)) {
                continue;
            }
            let mut p = path_info(st, pe.peer, set, best, pe.stale(), all);
            p.multipath = members.len() > 1 && members.contains(&i);
            if st.core.rov.is_some() {
                p.rpki = Some(st.core.rov_state(&r.prefix, set).as_str().into());
                p.aspa = st.core.aspa_state(pe.peer, set).map(|s| s.as_str().into());
            }
            if all {
                p.damping = damping_info(rib, pe.peer, r.prefix, pe.path_id);
                if pe.peer == STATIC_PEER {
                    aggregate_lines(st, r.prefix, &mut p);
                }
            }
            paths.push(p);
        }
        if paths.is_empty() {
            return;
        }
        paths.sort_by_key(|p| !p.best);
        out.push((
            r.prefix,
            RouteInfo {
                prefix: r.prefix.to_string(),
                paths,
            },
        ));
    };
    match prefix {
        Some(p) => {
            if let Some(r) = rib.lookup(&p) {
                push(r);
            }
        }
        None => rib.iter().for_each(&mut push),
    }
    out.sort_by_key(|a| a.0);
    out
}

/// An aggregate's settings and contributors, as `all` lines.
fn aggregate_lines(st: &RibState, prefix: Prefix, p: &mut mgmt::proto::PathInfo) {
    let Some((cfg, contributors)) = st.core.aggregate_contributors(&prefix) else {
        return;
    };
    let mut kind = vec!["aggregate"];
    if cfg.as_set {
        kind.push("as_set");
    }
    if cfg.summary_only {
        kind.push("summary_only");
    }
    p.other.push(("Aggregate".into(), kind.join(" ")));
    let list: Vec<String> = contributors.iter().map(Prefix::to_string).collect();
    p.other
        .push(("Aggregate.contributors".into(), list.join(" ")));
}

/// A path's damping state now, when it has a history.
fn damping_info(
    rib: &bgp_rib::Rib,
    peer: PeerId,
    prefix: Prefix,
    path_id: u32,
) -> Option<mgmt::proto::DampingInfo> {
    let f = rib.damping_state(peer, prefix, path_id)?;
    let params = rib.damping_params()?;
    let now = crate::rib::now();
    Some(mgmt::proto::DampingInfo {
        penalty: f.penalty_at(now, params).round() as u32,
        suppressed: f.suppressed,
        reuse_in_ms: f
            .reuse_at(params)
            .map(|t| t.since(now).as_millis().min(u128::from(u64::MAX)) as u64),
    })
}

/// `show route damped`: the suppressed paths of this part, by prefix,
/// each with its damping state.
pub fn damped(st: &RibState) -> Vec<(Prefix, RouteInfo)> {
    let rib = &st.rib;
    let mut by_prefix: std::collections::BTreeMap<Prefix, Vec<mgmt::proto::PathInfo>> =
        Default::default();
    for ((peer, prefix, pid), f) in rib.damping_histories() {
        if !f.suppressed {
            continue;
        }
        let Some(r) = rib.lookup(&prefix) else {
            continue;
        };
        let Some((pe, set)) = r
            .iter()
            .find(|(pe, _)| pe.peer == peer && pe.path_id == pid)
        else {
            continue;
        };
        let mut p = path_info(st, pe.peer, set, false, pe.stale(), false);
        p.damping = damping_info(rib, peer, prefix, pid);
        by_prefix.entry(prefix).or_default().push(p);
    }
    by_prefix
        .into_iter()
        .map(|(prefix, paths)| {
            (
                prefix,
                RouteInfo {
                    prefix: prefix.to_string(),
                    paths,
                },
            )
        })
        .collect()
}

/// `show route for ADDR|PREFIX`: the route of the longest prefix in `rib`
/// that covers `target` and has a path (from `protocol`, when given), or
/// nothing. One exact lookup per prefix length, from `target`'s length
/// down to 0: at most 33 (IPv4) or 129 (IPv6) hash lookups per RIB part;
/// [`crate::daemon::merge::longest_match`] keeps the longest over parts.
pub fn longest_match_in(
    st: &RibState,
    rib: &bgp_rib::Rib,
    target: Prefix,
    all: bool,
    protocol: Option<&str>,
) -> Vec<(Prefix, RouteInfo)> {
    let addr = target.addr();
    for len in (0..=target.len()).rev() {
        let Ok(p) = Prefix::new(addr, len) else {
            continue;
        };
        let p = p.masked();
        let found = routes_keyed_in(st, rib, Some(p), all, protocol);
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// `show route count`.
pub fn route_count(st: &RibState) -> RouteCount {
    route_count_of(st, false)
}

/// [`route_count`] of the unicast or the `multicast` table, from the
/// RIB's counters (per family and per peer, kept as routes change;
/// `bgp-rib`'s `tests/counters.rs` holds them equal to a walk): O(peers x
/// shards), not O(routes).
pub fn route_count_of(st: &RibState, multicast: bool) -> RouteCount {
    let rib = if multicast { &st.mcast } else { &st.rib };
    let [(p4, n4), (p6, n6)] = rib.family_counts();
    let per_protocol = (0..st.peers.len().max(1))
        .filter_map(|i| {
            let id = PeerId(i as u16);
            let c = rib.peer_counts(id).unwrap_or_default();
            // A path of every stored route counts as accepted.
            (c.accepted > 0 || st.peers.get(i).is_some_and(Option::is_some)).then(|| {
                ProtocolCount {
                    protocol: protocol_name(st, id),
                    paths: c.accepted,
                    best: c.best,
                }
            })
        })
        .collect();
    RouteCount {
        tables: vec![
            TableCount {
                table: if multicast { "mcast4" } else { "master4" }.into(),
                matched: n4,
                paths: n4,
                prefixes: p4,
            },
            TableCount {
                table: if multicast { "mcast6" } else { "master6" }.into(),
                matched: n6,
                paths: n6,
                prefixes: p6,
            },
        ],
        per_protocol,
    }
}

/// `show nexthop` on one RIB part; `None` when next-hop tracking is off.
pub fn nexthops(st: &RibState) -> Option<Vec<mgmt::proto::NexthopInfo>> {
    if !st.nexthop_tracking() {
        return None;
    }
    Some(
        st.core
            .nexthops()
            .map(|n| mgmt::proto::NexthopInfo {
                nexthop: n.nexthop,
                resolved: n.state.is_some(),
                reachable: n.state.is_some_and(|s| s.reachable),
                igp_cost: n.state.map_or(0, |s| s.igp_cost),
                prefixes: n.prefixes as u64,
            })
            .collect(),
    )
}

/// `show route filtered protocol NAME`: the routes `name` sent that its
/// import policy rejected, as received, from this part's pre-policy
/// Adj-RIB-In. `Err` when `name` is unknown (`Ok(None)`: it keeps no
/// pre-policy routes, so what was filtered is not known).
pub fn filtered(st: &RibState, name: &str, all: bool) -> Option<Option<Vec<(Prefix, RouteInfo)>>> {
    let id = st.find_peer(name)?;
    let mut by_prefix: std::collections::BTreeMap<Prefix, Vec<PathInfo>> = Default::default();
    for s in st.rib.shards() {
        let known = s.for_each_filtered(id, |prefix, _pid, set| {
            let mut p = path_info(st, id, set, false, false, all);
            if st.core.rov.is_some() {
                p.rpki = Some(st.core.rov_state(prefix, set).as_str().into());
            }
            by_prefix.entry(*prefix).or_default().push(p);
        });
        if !known {
            return Some(None);
        }
    }
    Some(Some(
        by_prefix
            .into_iter()
            .map(|(prefix, paths)| {
                (
                    prefix,
                    RouteInfo {
                        prefix: prefix.to_string(),
                        paths,
                    },
                )
            })
            .collect(),
    ))
}

/// `show route noexport NAME`: this part's best paths that the export
/// decision holds back from `name` (`RibCore::held_back`), each as the
/// Loc-RIB best path. `None` when `name` is unknown.
pub fn not_exported(st: &RibState, name: &str, all: bool) -> Option<Vec<(Prefix, RouteInfo)>> {
    let id = st.find_peer(name)?;
    let out = st
        .core
        .held_back(id)
        .into_iter()
        .filter_map(|(prefix, _why)| {
            let r = st.rib.lookup(&prefix)?;
            let (best, set) = r.best()?;
            let mut p = path_info(st, best.peer, set, true, best.stale(), all);
            if st.core.rov.is_some() {
                p.rpki = Some(st.core.rov_state(&prefix, set).as_str().into());
                p.aspa = st
                    .core
                    .aspa_state(best.peer, set)
                    .map(|s| s.as_str().into());
            }
            Some((
                prefix,
                RouteInfo {
                    prefix: prefix.to_string(),
                    paths: vec![p],
                },
            ))
        })
        .collect();
    Some(out)
}

/// `show route export NAME`: what this part's Adj-RIB-Out holds for
/// `name` (the attributes after export policy; each path's protocol is
/// the Loc-RIB best path's source). `None` when `name` is unknown.
pub fn exported(st: &RibState, name: &str, all: bool) -> Option<Vec<(Prefix, RouteInfo)>> {
    let id = st.find_peer(name)?;
    let rib = &st.rib;
    let mut out = Vec::new();
    for r in rib.iter() {
        let shard = &rib.shards()[rib.shard_of(&r.prefix)];
        let sent = shard.adj_out_paths(id, &r.prefix);
        if sent.is_empty() {
            continue;
        }
        let source = r
            .best
            .and_then(|i| r.iter().nth(i))
            .map_or(STATIC_PEER, |(pe, _)| pe.peer);
        let paths = sent
            .into_iter()
            .enumerate()
            .map(|(i, (_, set))| path_info(st, source, set, i == 0, false, all))
            .collect();
        out.push((
            r.prefix,
            RouteInfo {
                prefix: r.prefix.to_string(),
                paths,
            },
        ));
    }
    out.sort_by_key(|a| a.0);
    Some(out)
}
