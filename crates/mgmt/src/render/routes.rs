//! `show route [all]` and `show route count`, in BIRD 2's layout:
//!
//! ```text
//! Table master4:
//! 10.0.0.0/24          unicast [peer1 12:00:01.123] * (100) [AS65001i]
//!     via 192.0.2.1 on eth0
//!     Type: BGP univ
//!     BGP.origin: IGP
//! ```
//!
//! (the lines under a route start with one tab, shown here as spaces).
//!
//! Attribute lines under `all` follow attribute type code order
//! (RFC 4271 §5, RFC 1997, RFC 4456, RFC 4360, RFC 8092, RFC 9234).

use super::time::time_of_day;
use super::RenderOpts;
use crate::proto::{Origin, PathInfo, ProtocolKind, RouteCount, RouteDest, RouteInfo};
use std::fmt::Write as _;

/// BIRD's table name for a prefix's family; `mcast4`/`mcast6` for the
/// multicast (SAFI 2) table.
fn table_of(prefix: &str, multicast: bool) -> &'static str {
    match (prefix.contains(':'), multicast) {
        (true, false) => "master6",
        (false, false) => "master4",
        (true, true) => "mcast6",
        (false, true) => "mcast4",
    }
}

/// `show route [all]`. Routes are printed in the order given, under a
/// "Table masterN:" heading each time the family changes.
pub fn render_routes(out: &mut String, routes: &[RouteInfo], all: bool, o: &RenderOpts) {
    render_routes_of(out, routes, all, false, o);
}

/// [`render_routes`] of the unicast or the `multicast` table (headings
/// "Table mcastN:").
pub fn render_routes_of(
    out: &mut String,
    routes: &[RouteInfo],
    all: bool,
    multicast: bool,
    o: &RenderOpts,
) {
    let mut table: Option<&str> = None;
    for r in routes {
        let t = table_of(&r.prefix, multicast);
        if table != Some(t) {
            if table.is_some() {
                out.push('\n');
            }
            let _ = writeln!(out, "Table {t}:");
            table = Some(t);
        }
        for (i, p) in r.paths.iter().enumerate() {
            let shown_prefix = if i == 0 { r.prefix.as_str() } else { "" };
            path_line(out, shown_prefix, p, o);
            if all {
                attributes(out, p);
            }
        }
    }
}

fn origin_char(o: Origin) -> char {
    match o {
        Origin::Igp => 'i',
        Origin::Egp => 'e',
        Origin::Incomplete => '?',
    }
}

fn origin_word(o: Origin) -> &'static str {
    match o {
        Origin::Igp => "IGP",
        Origin::Egp => "EGP",
        Origin::Incomplete => "Incomplete",
    }
}

/// The origin AS: the last AS of the path when the path ends in an
/// AS_SEQUENCE element; none for an empty path or one ending in a set.
fn origin_as(as_path: &str) -> Option<&str> {
    let last = as_path.split_whitespace().next_back()?;
    last.bytes().all(|b| b.is_ascii_digit()).then_some(last)
}

/// `PREFIX  DEST [PROTO TIME from ADDR] * (PREF) [ASNNNi]` then the
/// `via` line.
fn path_line(out: &mut String, prefix: &str, p: &PathInfo, o: &RenderOpts) {
    let _ = write!(out, "{prefix:<20} {} [{} ", p.dest.as_str(), p.from);
    time_of_day(out, p.since_ms, o.utc_offset_secs);
    if let Some(f) = p.from_addr {
        if p.via != Some(f) {
            let _ = write!(out, " from {f}");
        }
    }
    out.push(']');
    if p.best {
        out.push_str(" *");
    }
    let _ = write!(out, " ({}", p.preference);
    if p.stale {
        out.push('s');
    }
    out.push(')');
    if p.damping.is_some_and(|d| d.suppressed) {
        out.push_str(" damped");
    }
    if p.multipath {
        // FRR's word for the members of an ECMP set.
        out.push_str(" multipath");
    }
    if p.source == ProtocolKind::Bgp {
        out.push_str(" [");
        if let Some(asn) = origin_as(&p.as_path) {
            let _ = write!(out, "AS{asn}");
        }
        if let Some(orig) = p.origin {
            out.push(origin_char(orig));
        }
        out.push(']');
    }
    if let Some(r) = &p.rpki {
        let _ = write!(out, " rpki={r}");
    }
    if let Some(a) = &p.aspa {
        let _ = write!(out, " aspa={a}");
    }
    out.push('\n');
    if p.dest == RouteDest::Unicast {
        if let Some(v) = p.via {
            let _ = write!(out, "\tvia {v}");
            if let Some(i) = &p.iface {
                let _ = write!(out, " on {i}");
            }
            out.push('\n');
        }
    }
    if let Some(d) = p.damping {
        let _ = write!(out, "\tDamping: penalty {}", d.penalty);
        match (d.suppressed, d.reuse_in_ms) {
            (true, Some(ms)) => {
                let _ = write!(
                    out,
                    ", suppressed, reuse in {}.{:03} s",
                    ms / 1000,
                    ms % 1000
                );
            }
            (true, None) => out.push_str(", suppressed"),
            _ => {}
        }
        out.push('\n');
    }
}

fn source_word(k: ProtocolKind) -> &'static str {
    match k {
        ProtocolKind::Bgp => "BGP",
        ProtocolKind::Static => "static",
        ProtocolKind::Device => "device",
        ProtocolKind::Unknown => "unknown",
    }
}

/// The `all` lines.
fn attributes(out: &mut String, p: &PathInfo) {
    let _ = writeln!(out, "\tType: {} univ", source_word(p.source));
    if let Some(o) = p.origin {
        let _ = writeln!(out, "\tBGP.origin: {}", origin_word(o));
    }
    if p.source == ProtocolKind::Bgp {
        let _ = writeln!(out, "\tBGP.as_path: {}", p.as_path);
    }
    if let Some(nh) = p.next_hop {
        let _ = write!(out, "\tBGP.next_hop: {nh}");
        if let Some(ll) = p.next_hop_link_local {
            let _ = write!(out, " {ll}");
        }
        out.push('\n');
    }
    if let Some(m) = p.med {
        let _ = writeln!(out, "\tBGP.med: {m}");
    }
    if let Some(lp) = p.local_pref {
        let _ = writeln!(out, "\tBGP.local_pref: {lp}");
    }
    if p.atomic_aggregate {
        out.push_str("\tBGP.atomic_aggr: \n");
    }
    if let Some((asn, id)) = p.aggregator {
        let _ = writeln!(out, "\tBGP.aggregator: {id} AS{asn}");
    }
    if !p.communities.is_empty() {
        out.push_str("\tBGP.community:");
        for (hi, lo) in &p.communities {
            let _ = write!(out, " ({hi},{lo})");
        }
        out.push('\n');
    }
    if let Some(id) = p.originator_id {
        let _ = writeln!(out, "\tBGP.originator_id: {id}");
    }
    if !p.cluster_list.is_empty() {
        out.push_str("\tBGP.cluster_list:");
        for id in &p.cluster_list {
            let _ = write!(out, " {id}");
        }
        out.push('\n');
    }
    if !p.ext_communities.is_empty() {
        out.push_str("\tBGP.ext_community:");
        for &ec in &p.ext_communities {
            out.push(' ');
            ext_community(out, ec);
        }
        out.push('\n');
    }
    if !p.large_communities.is_empty() {
        out.push_str("\tBGP.large_community:");
        for (g, a, b) in &p.large_communities {
            let _ = write!(out, " ({g}, {a}, {b})");
        }
        out.push('\n');
    }
    if let Some(otc) = p.otc {
        let _ = writeln!(out, "\tBGP.otc: {otc}");
    }
    for (name, value) in &p.other {
        let _ = writeln!(out, "\t{name}: {value}");
    }
}

/// RFC 4360 §3 extended community: route target / route origin of the
/// transitive two-octet-AS (0x00), IPv4-address (0x01) and four-octet-AS
/// (0x02, RFC 5668) types as `(rt, GLOBAL, LOCAL)`; anything else as
/// `(generic, 0xHIGH, 0xLOW)`.
fn ext_community(out: &mut String, ec: u64) {
    let kind = (ec >> 56) as u8;
    let sub = (ec >> 48) as u8;
    let word = match sub {
        0x02 => Some("rt"),
        0x03 => Some("ro"),
        _ => None,
    };
    match (kind, word) {
        (0x00, Some(w)) => {
            let _ = write!(out, "({w}, {}, {})", (ec >> 32) as u16, ec as u32);
        }
        (0x01, Some(w)) => {
            let ip = std::net::Ipv4Addr::from((ec >> 16) as u32);
            let _ = write!(out, "({w}, {ip}, {})", ec as u16);
        }
        (0x02, Some(w)) => {
            let _ = write!(out, "({w}, {}, {})", (ec >> 16) as u32, ec as u16);
        }
        _ => {
            let _ = write!(out, "(generic, 0x{:x}, 0x{:x})", ec >> 32, ec as u32);
        }
    }
}

/// `show route count`: one line per table, and a total when there are
/// several.
pub fn render_route_count(out: &mut String, c: &RouteCount) {
    for t in &c.tables {
        let _ = writeln!(
            out,
            "{} of {} routes for {} networks in table {}",
            t.matched, t.paths, t.prefixes, t.table
        );
    }
    if c.tables.len() > 1 {
        let matched: u64 = c.tables.iter().map(|t| t.matched).sum();
        let _ = writeln!(
            out,
            "Total: {} of {} routes for {} networks in {} tables",
            matched,
            c.paths(),
            c.prefixes(),
            c.tables.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::TableCount;

    // 2023-11-14 22:13:20.123 UTC
    const T: u64 = 1_700_000_000_123;

    fn bgp_path() -> PathInfo {
        let mut p = PathInfo::new("peer1", T);
        p.best = true;
        p.via = Some("192.0.2.1".parse().unwrap());
        p.iface = Some("eth0".into());
        p.from_addr = Some("192.0.2.1".parse().unwrap());
        p.as_path = "65001 65002".into();
        p.origin = Some(Origin::Igp);
        p.next_hop = Some("192.0.2.1".parse().unwrap());
        p.local_pref = Some(100);
        p.communities = vec![(65000, 1), (65000, 2)];
        p.large_communities = vec![(65000, 1, 2)];
        p
    }

    fn reflected_path() -> PathInfo {
        let mut p = PathInfo::new("rr1", T + 1000);
        p.via = Some("198.51.100.7".parse().unwrap());
        p.iface = Some("eth1".into());
        p.from_addr = Some("198.51.100.1".parse().unwrap());
        p.as_path = "65003 {65004 65005}".into();
        p.origin = Some(Origin::Incomplete);
        p.next_hop = Some("198.51.100.7".parse().unwrap());
        p.med = Some(20);
        p.local_pref = Some(90);
        p.atomic_aggregate = true;
        p.aggregator = Some((65003, "10.9.9.9".parse().unwrap()));
        p.originator_id = Some("10.0.0.7".parse().unwrap());
        p.cluster_list = vec!["10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap()];
        p.ext_communities = vec![
            0x0002_FDE8_0000_0064, // rt 65000:100
            0x0103_0A00_0001_0007, // ro 10.0.0.1:7
            0x0202_0001_0000_0005, // rt 65536:5 (four-octet AS)
            0x4300_0000_0000_0001, // non-transitive opaque
        ];
        p.otc = Some(65003);
        p.stale = true;
        p
    }

    #[test]
    fn short_form() {
        let mut st = PathInfo::new("static1", T);
        st.source = ProtocolKind::Static;
        st.dest = RouteDest::Blackhole;
        st.preference = 200;
        st.best = true;
        let routes = vec![
            RouteInfo {
                prefix: "10.0.0.0/24".into(),
                paths: vec![bgp_path(), reflected_path()],
            },
            RouteInfo {
                prefix: "10.9.0.0/16".into(),
                paths: vec![st],
            },
            RouteInfo {
                prefix: "2001:db8::/32".into(),
                paths: vec![PathInfo {
                    via: Some("fe80::1".parse().unwrap()),
                    iface: Some("eth0".into()),
                    as_path: String::new(),
                    origin: Some(Origin::Igp),
                    best: true,
                    ..PathInfo::new("peer6", T)
                }],
            },
        ];
        let mut s = String::new();
        render_routes(&mut s, &routes, false, &RenderOpts::default());
        let want = "\
Table master4:
10.0.0.0/24          unicast [peer1 22:13:20.123] * (100) [AS65002i]
\tvia 192.0.2.1 on eth0
                     unicast [rr1 22:13:21.123 from 198.51.100.1] (100s) [?]
\tvia 198.51.100.7 on eth1
10.9.0.0/16          blackhole [static1 22:13:20.123] * (200)

Table master6:
2001:db8::/32        unicast [peer6 22:13:20.123] * (100) [i]
\tvia fe80::1 on eth0
";
        assert_eq!(s, want);
    }

    #[test]
    fn multipath_members_are_marked() {
        let mut a = bgp_path();
        a.multipath = true;
        let mut b = bgp_path();
        b.best = false;
        b.multipath = true;
        b.via = Some("192.0.2.9".parse().unwrap());
        let routes = vec![RouteInfo {
            prefix: "10.0.0.0/24".into(),
            paths: vec![a, b],
        }];
        let mut s = String::new();
        render_routes(&mut s, &routes, false, &RenderOpts::default());
        let want = "\
Table master4:
10.0.0.0/24          unicast [peer1 22:13:20.123] * (100) multipath [AS65002i]
\tvia 192.0.2.1 on eth0
                     unicast [peer1 22:13:20.123 from 192.0.2.1] (100) multipath [AS65002i]
\tvia 192.0.2.9 on eth0
";
        assert_eq!(s, want);
    }

    #[test]
    fn rpki_state_after_the_origin() {
        let mut p = bgp_path();
        p.rpki = Some("invalid".into());
        let routes = vec![RouteInfo {
            prefix: "10.0.0.0/24".into(),
            paths: vec![p],
        }];
        let mut s = String::new();
        render_routes(&mut s, &routes, false, &RenderOpts::default());
        assert_eq!(
            s,
            "Table master4:\n10.0.0.0/24          unicast [peer1 22:13:20.123] * (100) [AS65002i] rpki=invalid\n\tvia 192.0.2.1 on eth0\n"
        );
        // JSON: "rpki" only when set.
        let j = serde_json::to_string(&routes[0].paths[0]).unwrap();
        assert!(j.contains("\"rpki\":\"invalid\""), "{j}");
        let j = serde_json::to_string(&bgp_path()).unwrap();
        assert!(!j.contains("rpki"), "{j}");
        assert!(!j.contains("aspa"), "{j}");
    }

    #[test]
    fn aspa_state_beside_rpki() {
        let mut p = bgp_path();
        p.rpki = Some("valid".into());
        p.aspa = Some("invalid".into());
        let routes = vec![RouteInfo {
            prefix: "10.0.0.0/24".into(),
            paths: vec![p],
        }];
        let mut s = String::new();
        render_routes(&mut s, &routes, false, &RenderOpts::default());
        assert_eq!(
            s,
            "Table master4:\n10.0.0.0/24          unicast [peer1 22:13:20.123] * (100) [AS65002i] rpki=valid aspa=invalid\n\tvia 192.0.2.1 on eth0\n"
        );
        let j = serde_json::to_string(&routes[0].paths[0]).unwrap();
        assert!(j.contains("\"aspa\":\"invalid\""), "{j}");
    }

    #[test]
    fn all_form() {
        let routes = vec![RouteInfo {
            prefix: "10.0.0.0/24".into(),
            paths: vec![bgp_path(), reflected_path()],
        }];
        let mut s = String::new();
        render_routes(&mut s, &routes, true, &RenderOpts::default());
        let want = "\
Table master4:
10.0.0.0/24          unicast [peer1 22:13:20.123] * (100) [AS65002i]
\tvia 192.0.2.1 on eth0
\tType: BGP univ
\tBGP.origin: IGP
\tBGP.as_path: 65001 65002
\tBGP.next_hop: 192.0.2.1
\tBGP.local_pref: 100
\tBGP.community: (65000,1) (65000,2)
\tBGP.large_community: (65000, 1, 2)
                     unicast [rr1 22:13:21.123 from 198.51.100.1] (100s) [?]
\tvia 198.51.100.7 on eth1
\tType: BGP univ
\tBGP.origin: Incomplete
\tBGP.as_path: 65003 {65004 65005}
\tBGP.next_hop: 198.51.100.7
\tBGP.med: 20
\tBGP.local_pref: 90
\tBGP.atomic_aggr: \n\
\tBGP.aggregator: 10.9.9.9 AS65003
\tBGP.originator_id: 10.0.0.7
\tBGP.cluster_list: 10.0.0.1 10.0.0.2
\tBGP.ext_community: (rt, 65000, 100) (ro, 10.0.0.1, 7) (rt, 65536, 5) (generic, 0x43000000, 0x1)
\tBGP.otc: 65003
";
        assert_eq!(s, want);
    }

    #[test]
    fn ipv6_next_hop_with_link_local() {
        let mut p = PathInfo::new("peer6", T);
        p.next_hop = Some("2001:db8::1".parse().unwrap());
        p.next_hop_link_local = Some("fe80::1".parse().unwrap());
        let mut s = String::new();
        attributes(&mut s, &p);
        assert!(s.contains("\tBGP.next_hop: 2001:db8::1 fe80::1\n"), "{s}");
    }

    #[test]
    fn origin_as_rules() {
        assert_eq!(origin_as("65001 65002"), Some("65002"));
        assert_eq!(origin_as(""), None);
        assert_eq!(origin_as("65001 {65002 65003}"), None);
    }

    #[test]
    fn route_count() {
        let c = RouteCount {
            tables: vec![
                TableCount {
                    table: "master4".into(),
                    matched: 4,
                    paths: 4,
                    prefixes: 3,
                },
                TableCount {
                    table: "master6".into(),
                    matched: 0,
                    paths: 0,
                    prefixes: 0,
                },
            ],
            per_protocol: vec![],
        };
        let mut s = String::new();
        render_route_count(&mut s, &c);
        assert_eq!(
            s,
            "4 of 4 routes for 3 networks in table master4\n\
             0 of 0 routes for 0 networks in table master6\n\
             Total: 4 of 4 routes for 3 networks in 2 tables\n"
        );
        let one = RouteCount {
            tables: c.tables[..1].to_vec(),
            per_protocol: vec![],
        };
        s.clear();
        render_route_count(&mut s, &one);
        assert_eq!(s, "4 of 4 routes for 3 networks in table master4\n");
    }
}
