//! tesserad's control answers in birdwatcher's JSON shapes (the REST API
//! that Alice-LG reads from BIRD): pure conversions, no I/O.

use mgmt::proto::{Origin, PathInfo, ProtocolInfo, ProtocolKind, RouteInfo, StatusInfo};
use serde_json::{json, Map, Value};

/// Default and largest page size of the route endpoints.
pub const PAGE_SIZE: usize = 250;
pub const MAX_PAGE_SIZE: usize = 10_000;

/// How long a client may cache an answer (birdwatcher's `ttl`).
const TTL_MS: u64 = 5_000;

/// Unix milliseconds as RFC 3339 UTC ("2026-11-26T06:25:24.123Z").
pub fn iso_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The `api`, `cached_at` and `ttl` members every answer carries.
fn envelope(version: &str, now_ms: u64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "api".into(),
        json!({
            "Version": version,
            "result_from_cache": false,
            "cache_status": {
                "cached_at": { "date": iso_time(now_ms), "timezone_type": "UTC", "timezone": "UTC" },
                "orig_ttl": TTL_MS / 1000,
            },
        }),
    );
    m.insert("cached_at".into(), json!(iso_time(now_ms)));
    m.insert("ttl".into(), json!(iso_time(now_ms.saturating_add(TTL_MS))));
    m
}

/// `GET /status`.
pub fn status(s: &StatusInfo) -> Value {
    let mut m = envelope(&s.version, s.server_time_ms);
    m.insert(
        "status".into(),
        json!({
            "current_server": iso_time(s.server_time_ms),
            "server_time": iso_time(s.server_time_ms),
            "last_reboot": iso_time(s.started_ms),
            "last_reconfig": iso_time(s.last_reconfig_ms.unwrap_or(s.started_ms)),
            "message": "Daemon is up and running",
            "router_id": s.router_id.to_string(),
            "version": s.version,
        }),
    );
    Value::Object(m)
}

/// One protocol in birdwatcher's `protocols` map.
pub fn protocol(p: &ProtocolInfo, now_ms: u64) -> Value {
    let mut o = json!({
        "bird_protocol": p.name,
        "proto": p.kind.as_str(),
        "table": p.table.clone().or_else(|| p.channels.first().map(|c| c.table.clone())).unwrap_or_else(|| "---".into()),
        "state": p.state.as_str(),
        "state_changed": iso_time(p.since_ms),
        "uptime": now_ms.saturating_sub(p.since_ms) / 1000,
        "description": p.description.clone().unwrap_or_default(),
        "last_error": p.last_error.clone().unwrap_or_default(),
        "input_filter": p.channels.first().and_then(|c| c.import_filter.clone()).unwrap_or_else(|| "ACCEPT".into()),
        "output_filter": p.channels.first().and_then(|c| c.export_filter.clone()).unwrap_or_else(|| "ACCEPT".into()),
        "routes": {
            "imported": p.routes.accepted,
            "filtered": p.routes.filtered,
            "exported": p.routes.sent,
            "preferred": p.routes.preferred,
            "received": p.routes.received,
        },
    });
    if let (Some(b), Some(obj)) = (&p.bgp, o.as_object_mut()) {
        obj.insert("connection".into(), json!(b.bgp_state.as_str()));
        obj.insert("bgp_state".into(), json!(b.bgp_state.as_str()));
        obj.insert(
            "neighbor_address".into(),
            json!(b.neighbor_addr.to_string()),
        );
        obj.insert("neighbor_as".into(), json!(b.remote_as));
        obj.insert("local_as".into(), json!(b.local_as));
        obj.insert(
            "neighbor_id".into(),
            json!(b.neighbor_id.map(|i| i.to_string()).unwrap_or_default()),
        );
        obj.insert(
            "source_address".into(),
            json!(b.source_addr.map(|i| i.to_string()).unwrap_or_default()),
        );
        obj.insert("hold_timer".into(), json!(b.hold_time));
        obj.insert("keepalive".into(), json!(b.keepalive_time));
        obj.insert(
            "messages".into(),
            json!({
                "updates_received": b.messages_received.update,
                "updates_sent": b.messages_sent.update,
                "received": b.messages_received.total(),
                "sent": b.messages_sent.total(),
            }),
        );
    }
    o
}

/// `GET /protocols/bgp`: the BGP protocols, keyed by name.
pub fn protocols_bgp(version: &str, protos: &[ProtocolInfo], now_ms: u64) -> Value {
    let mut m = envelope(version, now_ms);
    let map: Map<String, Value> = protos
        .iter()
        .filter(|p| p.kind == ProtocolKind::Bgp)
        .map(|p| (p.name.clone(), protocol(p, now_ms)))
        .collect();
    m.insert("protocols".into(), Value::Object(map));
    Value::Object(m)
}

/// RFC 4360 extended community as birdwatcher writes it: `["rt", "65000",
/// "1"]`; types it does not name as `["generic", "0xHIGH", "0xLOW"]`.
pub fn ext_community(c: u64) -> Value {
    let ty = (c >> 56) as u8;
    let sub = (c >> 48) as u8;
    let kind = match sub {
        0x02 => "rt",
        0x03 => "ro",
        _ => "generic",
    };
    match (ty & 0x3f, kind) {
        (0x00, k) if k != "generic" => json!([
            k,
            ((c >> 32) & 0xffff).to_string(),
            (c & 0xffff_ffff).to_string()
        ]),
        (0x02, k) if k != "generic" => json!([
            k,
            ((c >> 16) & 0xffff_ffff).to_string(),
            (c & 0xffff).to_string()
        ]),
        (0x01, k) if k != "generic" => json!([
            k,
            std::net::Ipv4Addr::from(((c >> 16) & 0xffff_ffff) as u32).to_string(),
            (c & 0xffff).to_string()
        ]),
        _ => json!([
            "generic",
            format!("0x{:08x}", c >> 32),
            format!("0x{:08x}", c & 0xffff_ffff)
        ]),
    }
}

/// One path as a birdwatcher route.
pub fn route(prefix: &str, p: &PathInfo, now_ms: u64) -> Value {
    let origin = match p.origin {
        Some(Origin::Igp) => "IGP",
        Some(Origin::Egp) => "EGP",
        Some(Origin::Incomplete) => "Incomplete",
        None => "",
    };
    let as_path: Vec<String> = p
        .as_path
        .split(|c: char| c.is_whitespace() || c == '{' || c == '}' || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let gateway = p
        .via
        .or(p.next_hop)
        .map(|a| a.to_string())
        .unwrap_or_default();
    let kind = match p.source {
        ProtocolKind::Bgp => json!(["BGP", "univ"]),
        k => json!([k.as_str(), "univ"]),
    };
    json!({
        "network": prefix,
        "gateway": gateway,
        "interface": p.iface.clone().unwrap_or_default(),
        "metric": p.preference,
        "from_protocol": p.from,
        "learnt_from": p.from_addr.map(|a| a.to_string()).unwrap_or_else(|| gateway.clone()),
        "age": iso_time(p.since_ms),
        "age_seconds": now_ms.saturating_sub(p.since_ms) / 1000,
        "type": kind,
        "primary": p.best,
        "stale": p.stale,
        "dest": p.dest.as_str(),
        // Not in birdwatcher (Alice-LG ignores unknown keys): the origin
        // validation and ASPA states with `[rpki]` (null: not verified),
        // and membership of the prefix's multipath set.
        "rpki": p.rpki,
        "aspa": p.aspa,
        "multipath": p.multipath,
        "bgp": {
            "origin": origin,
            "as_path": as_path,
            "next_hop": p.next_hop.map(|a| a.to_string()).unwrap_or_default(),
            "local_pref": p.local_pref,
            "med": p.med,
            "atomic_aggregate": p.atomic_aggregate,
            "communities": p.communities.iter().map(|(a, b)| json!([a, b])).collect::<Vec<_>>(),
            "large_communities": p.large_communities.iter().map(|(a, b, c)| json!([a, b, c])).collect::<Vec<_>>(),
            "ext_communities": p.ext_communities.iter().map(|c| ext_community(*c)).collect::<Vec<_>>(),
            "originator_id": p.originator_id.map(|a| a.to_string()),
            "cluster_list": p.cluster_list.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        },
    })
}

/// Every path (of `protocol` only, when given) of `routes`, in order.
pub fn routes(routes: &[RouteInfo], protocol: Option<&str>, now_ms: u64) -> Vec<Value> {
    routes
        .iter()
        .flat_map(|r| {
            r.paths
                .iter()
                .filter(move |p| protocol.is_none_or(|n| p.from == n))
                .map(move |p| route(&r.prefix, p, now_ms))
        })
        .collect()
}

/// Page `page` (from 0) of `size` items.
pub fn paginate(items: Vec<Value>, page: usize, size: usize) -> (Vec<Value>, Value) {
    let size = size.clamp(1, MAX_PAGE_SIZE);
    let total = items.len();
    let pages = total.div_ceil(size);
    let chunk: Vec<Value> = items
        .into_iter()
        .skip(page.saturating_mul(size))
        .take(size)
        .collect();
    let meta = json!({
        "page": page,
        "page_size": size,
        "total_pages": pages,
        "total_results": total,
    });
    (chunk, meta)
}

/// A routes answer: `{"api", "cached_at", "ttl", "routes", "pagination"}`.
pub fn routes_page(version: &str, now_ms: u64, routes: Vec<Value>, pagination: Value) -> Value {
    let mut m = envelope(version, now_ms);
    m.insert("routes".into(), Value::Array(routes));
    m.insert("pagination".into(), pagination);
    Value::Object(m)
}

/// An error answer: `{"api", "error": "..."}`.
pub fn error(version: &str, now_ms: u64, message: &str) -> Value {
    let mut m = envelope(version, now_ms);
    m.insert("error".into(), json!(message));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_time(1_795_674_324_123), "2026-11-26T06:25:24.123Z");
    }

    #[test]
    fn pages() {
        let items: Vec<Value> = (0..7).map(|i| json!(i)).collect();
        let (p, m) = paginate(items.clone(), 1, 3);
        assert_eq!(p, vec![json!(3), json!(4), json!(5)]);
        assert_eq!(m["total_pages"], 3);
        assert_eq!(m["total_results"], 7);
        let (p, _) = paginate(items.clone(), 2, 3);
        assert_eq!(p, vec![json!(6)]);
        let (p, _) = paginate(items.clone(), usize::MAX, 3);
        assert!(p.is_empty());
        let (p, m) = paginate(items, 0, 0);
        assert_eq!((p.len(), m["page_size"].clone()), (1, json!(1)));
    }

    #[test]
    fn route_shape() {
        let mut p = PathInfo::new("gen0", 0);
        p.best = true;
        p.as_path = "65001 65002 {65003 65004}".into();
        p.origin = Some(Origin::Igp);
        p.next_hop = Some("198.18.0.2".parse().unwrap());
        p.communities = vec![(65000, 1)];
        p.large_communities = vec![(65000, 1, 2)];
        p.ext_communities = vec![0x0002_fde8_0000_0064];
        let r = route("198.18.1.0/24", &p, 5_000);
        assert_eq!(r["network"], "198.18.1.0/24");
        assert_eq!(r["primary"], true);
        assert_eq!(r["gateway"], "198.18.0.2");
        assert_eq!(
            r["bgp"]["as_path"],
            json!(["65001", "65002", "65003", "65004"])
        );
        assert_eq!(r["bgp"]["communities"], json!([[65000, 1]]));
        assert_eq!(r["bgp"]["ext_communities"], json!([["rt", "65000", "100"]]));
        assert_eq!(r["age_seconds"], 5);
        assert_eq!(r["type"], json!(["BGP", "univ"]));
        assert_eq!(
            (r["rpki"].clone(), r["aspa"].clone()),
            (Value::Null, Value::Null)
        );
        p.rpki = Some("invalid".into());
        p.aspa = Some("valid".into());
        let r = route("198.18.1.0/24", &p, 5_000);
        assert_eq!(
            (r["rpki"].clone(), r["aspa"].clone()),
            (json!("invalid"), json!("valid"))
        );
    }
}
