//! BIRD-like text for every response. The words and column layout follow
//! `birdc` (BIRD 2.0) so that operators and scripts used to BIRD read the
//! same thing; times are BIRD's default `iso short ms` format.

mod protocols;
mod routes;
mod rpki;
mod time;

pub use protocols::{render_protocols, HEADER as PROTOCOLS_HEADER};
pub use routes::{render_route_count, render_routes, render_routes_of};
pub use rpki::render_rpki;

use crate::proto::{
    ActionResult, BfdSessionInfo, ConfigureResult, Data, NexthopInfo, Request, Response, StatusInfo,
};
use std::fmt::Write as _;

/// How times are shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOpts {
    /// Offset of local time from UTC, in seconds (0: show UTC).
    pub utc_offset_secs: i32,
}

/// Text for `resp`, the answer to `req` (which says whether `all` was
/// asked). Error responses render as their message; the caller decides
/// where it goes (stderr) and the exit status.
pub fn render(req: &Request, resp: &Response, o: &RenderOpts) -> String {
    let mut out = String::new();
    match resp {
        Response::Error { message, .. } => {
            out.push_str(message);
            out.push('\n');
        }
        Response::Ok(data) => render_data(&mut out, req, data, o),
    }
    out
}

fn render_data(out: &mut String, req: &Request, data: &Data, o: &RenderOpts) {
    let all = match req {
        Request::ShowProtocols { all, .. }
        | Request::ShowRoute { all, .. }
        | Request::ShowRouteFiltered { all, .. }
        | Request::ShowRouteExport { all, .. }
        | Request::ShowRouteNoexport { all, .. } => *all,
        Request::ShowNeighbor { .. } => true,
        _ => false,
    };
    match data {
        Data::Protocols(p) => render_protocols(out, p, all, o),
        Data::Routes(r) => {
            let multicast = matches!(
                req,
                Request::ShowRoute {
                    multicast: true,
                    ..
                }
            );
            render_routes_of(out, r, all, multicast, o)
        }
        Data::RouteCount(c) => render_route_count(out, c),
        Data::Status(s) => render_status(out, s, o),
        Data::Action(a) => render_action(out, a),
        Data::Configure(c) => render_configure(out, c),
        Data::Nexthops(n) => render_nexthops(out, n),
        Data::Bfd(b) => render_bfd(out, b),
        Data::Rpki(r) => render_rpki(out, r),
        Data::Bmp(b) => render_bmp(out, b),
        Data::Dataplane(d) => render_dataplane(out, d),
    }
}

/// `show dataplane`: the graph, then one line per element with its
/// packets in and out, its drops by reason and its own counters (zeros
/// left out).
pub fn render_dataplane(out: &mut String, d: &crate::proto::DataplaneInfo) {
    let _ = writeln!(out, "Graph: {} ({} cores)", d.graph, d.cores);
    let _ = writeln!(
        out,
        "{:<20} {:<16} {:>12} {:>12}  Drops / counters",
        "Element", "Class", "In", "Out"
    );
    for e in &d.elements {
        let mut extra: Vec<String> = e
            .drops
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("drop {k}={n}"))
            .collect();
        extra.extend(
            e.counters
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| format!("{k}={n}")),
        );
        let _ = writeln!(
            out,
            "{:<20} {:<16} {:>12} {:>12}  {}",
            e.name,
            e.class,
            e.rx,
            e.tx,
            extra.join(" ")
        );
    }
    if !d.ipsec.is_empty() {
        let _ = writeln!(
            out,
            "\nIPsec SA     Dir Element      {:>12} {:>14}  Drops",
            "Packets", "Bytes"
        );
        for a in &d.ipsec {
            let _ = writeln!(
                out,
                "{:<12} {:<3} {:<12} {:>12} {:>14}  {}",
                a.spi_label(),
                a.dir,
                a.element,
                a.packets,
                a.bytes,
                nonzero(&a.drops)
            );
        }
    }
    if let Some(k) = &d.cluster {
        let _ = writeln!(
            out,
            "\nCluster: node {} at {}, mode {}",
            k.node, k.fabric_address, k.mode
        );
        let _ = writeln!(
            out,
            "{:<6} {:<24} {:<6} {:>12} {:>14}",
            "Node", "Fabric address", "Live", "Datagrams", "Bytes"
        );
        for p in &k.peers {
            let _ = writeln!(
                out,
                "{:<6} {:<24} {:<6} {:>12} {:>14}",
                p.node,
                p.fabric_address,
                if p.live { "yes" } else { "no" },
                p.datagrams,
                p.bytes
            );
        }
    }
    if let Some(x) = &d.xdp_fastpath {
        let _ = writeln!(
            out,
            "\nXDP fast path: forwarded {} (IPv6 {}), to the graph {}  {}\n  LPM map: set {} removed {} failed {} in {} bpf calls",
            x.forwarded,
            x.forwarded_ipv6,
            x.to_graph.values().sum::<u64>(),
            nonzero(&x.to_graph),
            x.map_set,
            x.map_removed,
            x.map_failed,
            x.map_calls
        );
    }
    if !d.vrs.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<16} {:>8} {:>12} {:>12} {:>10} {:>10} {:>13}  Drops by reason",
            "Virtual router", "Tickets", "Received", "Sent", "CPU ms", "Runs", "Routes/inst"
        );
        for v in d.vrs.iter() {
            let _ = writeln!(
                out,
                "{:<16} {:>8} {:>12} {:>12} {:>10.3} {:>10} {:>13}  {}",
                v.name,
                v.tickets,
                v.rx,
                v.tx,
                v.cpu_ns as f64 / 1e6,
                v.runs,
                format!("{}/{}", v.routes, v.installed),
                nonzero(&v.drops)
            );
        }
    }
    if d.per_core.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n{:<6} {:>14} {:>14}  Drops by reason",
        "Core", "Received", "Sent"
    );
    for c in &d.per_core {
        let _ = writeln!(
            out,
            "{:<6} {:>14} {:>14}  {}",
            c.core,
            c.rx,
            c.tx,
            nonzero(&c.drops)
        );
    }
    if d.per_core.iter().all(|c| c.queues.is_empty()) {
        return;
    }
    let _ = writeln!(
        out,
        "\n{:<16} {:>5} {:>4} {:>14} {:>14} {:>12}",
        "Interface", "Queue", "Core", "Received", "Sent", "Ring drops"
    );
    for c in &d.per_core {
        for q in &c.queues {
            let drops = q
                .ring_drops
                .map_or_else(|| "-".to_string(), |n| n.to_string());
            let _ = writeln!(
                out,
                "{:<16} {:>5} {:>4} {:>14} {:>14} {:>12}",
                q.port, q.queue, c.core, q.rx, q.tx, drops
            );
        }
    }
}

/// The counters of `m` above zero, as `name=N` separated by spaces.
fn nonzero(m: &std::collections::BTreeMap<String, u64>) -> String {
    let v: Vec<String> = m
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    v.join(" ")
}

/// `show bmp`: one line per collector.
pub fn render_bmp(out: &mut String, list: &[crate::proto::BmpCollectorInfo]) {
    let _ = writeln!(
        out,
        "{:<40} {:<8} {:>10} {:>9} {:>8} {:>9} {:>8}  {:<28} Last error",
        "Collector",
        "State",
        "Messages",
        "Queued",
        "Dropped",
        "Overflows",
        "Connects",
        "Monitoring"
    );
    for b in list {
        let _ = writeln!(
            out,
            "{:<40} {:<8} {:>10} {:>9} {:>8} {:>9} {:>8}  {:<28} {}",
            b.address,
            b.state,
            b.messages_sent,
            format!("{}/{}", b.queued, b.queue_limit),
            b.dropped,
            b.overflows,
            b.connects,
            b.monitoring.join(","),
            if b.last_error.is_empty() {
                "-"
            } else {
                &b.last_error
            }
        );
    }
}

/// `show bfd`: one line per session, as BIRD's `show bfd sessions`.
pub fn render_bfd(out: &mut String, list: &[BfdSessionInfo]) {
    let _ = writeln!(
        out,
        "{:<39} {:<16} {:<9} {:<9} {:>9} {:>9} {:<22}",
        "Peer", "Neighbor", "State", "Remote", "Interval", "Timeout", "Diag"
    );
    let ms = |us: u64| format!("{}.{:03}", us / 1_000_000, (us / 1000) % 1000);
    for b in list {
        let _ = writeln!(
            out,
            "{:<39} {:<16} {:<9} {:<9} {:>9} {:>9} {:<22}",
            b.peer.to_string(),
            b.neighbor.as_deref().unwrap_or("-"),
            b.state,
            b.remote_state,
            ms(b.tx_interval_us),
            ms(b.detection_time_us),
            b.diag
        );
    }
}

/// `show nexthop`: one line per tracked next hop.
pub fn render_nexthops(out: &mut String, list: &[NexthopInfo]) {
    let _ = writeln!(
        out,
        "{:<39} {:<11} {:>10} {:>9}",
        "Next hop", "State", "IGP cost", "Prefixes"
    );
    for n in list {
        let (state, cost) = match (n.resolved, n.reachable) {
            (false, _) => ("resolving", "-".to_string()),
            (true, false) => ("unreachable", "-".to_string()),
            (true, true) => ("reachable", n.igp_cost.to_string()),
        };
        let _ = writeln!(
            out,
            "{:<39} {state:<11} {cost:>10} {:>9}",
            n.nexthop.to_string(),
            n.prefixes
        );
    }
}

/// `show status`, as BIRD's.
pub fn render_status(out: &mut String, s: &StatusInfo, o: &RenderOpts) {
    let _ = writeln!(out, "{}", s.version);
    let _ = writeln!(out, "Router ID is {}", s.router_id);
    out.push_str("Current server time is ");
    time::date_time(out, s.server_time_ms, o.utc_offset_secs);
    out.push_str("\nLast reboot on ");
    time::date_time(out, s.started_ms, o.utc_offset_secs);
    out.push('\n');
    if let Some(r) = s.last_reconfig_ms {
        out.push_str("Last reconfiguration on ");
        time::date_time(out, r, o.utc_offset_secs);
        out.push('\n');
    }
    out.push_str("Daemon is up and running\n");
}

/// `neighbor X disable` and friends: "peer1: disabled".
pub fn render_action(out: &mut String, results: &[ActionResult]) {
    for r in results {
        let _ = writeln!(out, "{}: {}", r.protocol, r.result);
    }
}

/// `configure [check]`.
pub fn render_configure(out: &mut String, c: &ConfigureResult) {
    let _ = writeln!(out, "Reading configuration from {}", c.path);
    for m in &c.messages {
        let _ = writeln!(out, "{m}");
    }
    out.push_str(match (c.check, c.changed) {
        (true, _) => "Configuration OK\n",
        (false, true) => "Reconfigured\n",
        (false, false) => "Reconfiguration not needed\n",
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ErrorCode;

    #[test]
    fn dataplane_lists_elements_with_their_drops_and_counters() {
        let d = crate::proto::DataplaneInfo {
            graph: "built-in".into(),
            cores: 1,
            elements: vec![crate::proto::ElementInfo {
                name: "deny".into(),
                class: "Discard".into(),
                rx: 7,
                tx: 0,
                drops: [("discarded".to_string(), 7), ("overflow".to_string(), 0)]
                    .into_iter()
                    .collect(),
                counters: Default::default(),
            }],
            ipsec: vec![crate::proto::IpsecSaInfo {
                spi: Some(0x2001),
                dir: "in".into(),
                element: "dec".into(),
                packets: 5,
                bytes: 420,
                drops: [("replay".to_string(), 1), ("policy".to_string(), 0)]
                    .into_iter()
                    .collect(),
            }],
            per_core: vec![crate::proto::CoreInfo {
                core: 0,
                rx: 9,
                tx: 2,
                drops: [("discarded".to_string(), 7), ("no_route".to_string(), 0)]
                    .into_iter()
                    .collect(),
                queues: vec![crate::proto::QueueInfo {
                    port: "r0".into(),
                    queue: 2,
                    rx: 9,
                    tx: 1,
                    ring_drops: Some(0),
                }],
            }],
            cluster: None,
            xdp_fastpath: Some(Box::new(crate::proto::XdpFastInfo {
                forwarded: 100,
                forwarded_ipv6: 40,
                to_graph: [("ttl".to_string(), 2), ("short".to_string(), 0)]
                    .into_iter()
                    .collect(),
                map_set: 5,
                map_removed: 1,
                map_failed: 0,
                map_calls: 3,
            })),
            vrs: Box::new(crate::proto::VrList(vec![crate::proto::VrInfo {
                name: "red".into(),
                tickets: 300,
                rx: 12,
                tx: 11,
                drops: [("queue_full".to_string(), 1), ("no_route".to_string(), 0)]
                    .into_iter()
                    .collect(),
                cpu_ns: 3_000_000,
                runs: 7,
                routes: 3,
                installed: 2,
            }])),
        };
        let mut out = String::new();
        render_dataplane(&mut out, &d);
        assert!(
            out.contains("XDP fast path: forwarded 100 (IPv6 40), to the graph 2  ttl=2\n")
                && out.contains("LPM map: set 5 removed 1 failed 0 in 3 bpf calls"),
            "{out}"
        );
        let core = out.lines().find(|l| l.starts_with("0 ")).expect(&out);
        assert_eq!(
            core.split_whitespace().collect::<Vec<_>>(),
            ["0", "9", "2", "discarded=7"],
            "{out}"
        );
        let q = out.lines().find(|l| l.starts_with("r0 ")).expect(&out);
        assert_eq!(
            q.split_whitespace().collect::<Vec<_>>(),
            ["r0", "2", "0", "9", "1", "0"],
            "{out}"
        );
        assert!(out.starts_with("Graph: built-in (1 cores)\n"), "{out}");
        let line = out.lines().find(|l| l.starts_with("deny")).expect(&out);
        assert!(line.contains("Discard") && line.contains(" 7 "), "{line}");
        assert!(line.ends_with("drop discarded=7"), "{line}");
        let sa = out.lines().find(|l| l.starts_with("0x2001")).expect(&out);
        let words: Vec<&str> = sa.split_whitespace().collect();
        assert_eq!(
            words,
            ["0x2001", "in", "dec", "5", "420", "replay=1"],
            "{out}"
        );
        let vr = out.lines().find(|l| l.starts_with("red ")).expect(&out);
        assert_eq!(
            vr.split_whitespace().collect::<Vec<_>>(),
            [
                "red",
                "300",
                "12",
                "11",
                "3.000",
                "7",
                "3/2",
                "queue_full=1"
            ],
            "{out}"
        );
    }

    #[test]
    fn status_text() {
        let s = StatusInfo {
            version: "tesserad 0.1.0".into(),
            router_id: "10.0.0.1".parse().unwrap(),
            server_time_ms: 1_700_000_000_123,
            started_ms: 1_699_990_000_000,
            last_reconfig_ms: None,
        };
        let mut out = String::new();
        render_status(&mut out, &s, &RenderOpts::default());
        assert_eq!(
            out,
            "tesserad 0.1.0\n\
             Router ID is 10.0.0.1\n\
             Current server time is 2023-11-14 22:13:20.123\n\
             Last reboot on 2023-11-14 19:26:40.000\n\
             Daemon is up and running\n"
        );
    }

    #[test]
    fn bfd_text() {
        let b = BfdSessionInfo {
            peer: "198.18.1.2".parse().unwrap(),
            local: None,
            neighbor: Some("peer1".into()),
            state: "Up".into(),
            remote_state: "Up".into(),
            diag: "none".into(),
            remote_diag: "none".into(),
            local_disc: 1,
            remote_disc: 2,
            desired_min_tx_us: 10_000,
            required_min_rx_us: 10_000,
            multiplier: 3,
            tx_interval_us: 10_000,
            detection_time_us: 30_000,
            last_change_ms: None,
            packets_sent: 5,
            packets_received: 4,
            transitions_up: 1,
            transitions_down: 0,
        };
        let mut out = String::new();
        render_bfd(&mut out, &[b]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].starts_with("Peer"), "{out}");
        let cols: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cols,
            ["198.18.1.2", "peer1", "Up", "Up", "0.010", "0.030", "none"]
        );
        // The JSON form round-trips.
        let r = Response::Ok(Data::Bfd(vec![]));
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Response>(&j).unwrap(), r);
    }

    #[test]
    fn nexthop_text() {
        let n = |a: &str, resolved, reachable, igp_cost, prefixes| NexthopInfo {
            nexthop: a.parse().unwrap(),
            resolved,
            reachable,
            igp_cost,
            prefixes,
        };
        let resp = Response::Ok(Data::Nexthops(vec![
            n("198.18.11.1", true, true, 10, 2),
            n("198.18.12.1", true, false, 0, 1),
            n("2001:db8::1", false, false, 0, 3),
        ]));
        assert_eq!(
            render(&Request::ShowNexthop, &resp, &RenderOpts::default()),
            "Next hop                                State         IGP cost  Prefixes\n\
             198.18.11.1                             reachable           10         2\n\
             198.18.12.1                             unreachable          -         1\n\
             2001:db8::1                             resolving            -         3\n"
        );
    }

    #[test]
    fn configure_and_action_text() {
        let req = Request::Configure { check: false };
        let resp = Response::Ok(Data::Configure(ConfigureResult {
            path: "/etc/tessera/tesserad.toml".into(),
            check: false,
            changed: true,
            messages: vec!["peer2: added".into()],
        }));
        assert_eq!(
            render(&req, &resp, &RenderOpts::default()),
            "Reading configuration from /etc/tessera/tesserad.toml\npeer2: added\nReconfigured\n"
        );
        let resp = Response::Ok(Data::Configure(ConfigureResult {
            path: "t.toml".into(),
            check: true,
            changed: true,
            messages: vec![],
        }));
        assert_eq!(
            render(&req, &resp, &RenderOpts::default()),
            "Reading configuration from t.toml\nConfiguration OK\n"
        );
        let resp = Response::Ok(Data::Action(vec![ActionResult {
            protocol: "peer1".into(),
            result: "disabled".into(),
        }]));
        assert_eq!(
            render(&req, &resp, &RenderOpts::default()),
            "peer1: disabled\n"
        );
    }

    #[test]
    fn error_text() {
        let req = Request::ShowStatus;
        let resp = Response::error(ErrorCode::NotFound, "No such protocol peer9");
        assert_eq!(
            render(&req, &resp, &RenderOpts::default()),
            "No such protocol peer9\n"
        );
    }
}
