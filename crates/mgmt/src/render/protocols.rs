//! `show protocols [all]` and `show neighbor`, in the layout of
//! `birdc show protocols [all]` (BIRD 2): a table with the columns
//! Name Proto Table State Since Info, and for `all` a detail block under
//! each row.

use super::time::time_of_day;
use super::RenderOpts;
use crate::proto::{BgpInfo, ChannelInfo, ProtoState, ProtocolInfo, RouteCounts};
use std::fmt::Write as _;

/// The header row of `show protocols`.
pub const HEADER: &str = "Name       Proto      Table      State  Since         Info";

/// `show protocols` (summary) or `show protocols all` (with details).
pub fn render_protocols(out: &mut String, protos: &[ProtocolInfo], all: bool, o: &RenderOpts) {
    out.push_str(HEADER);
    out.push('\n');
    for p in protos {
        summary_row(out, p, o);
        if all {
            detail(out, p, o);
        }
    }
}

/// The Info column: an explicit `info`, else for BGP the session state
/// (padded to 14 like BIRD) followed by the last error, or only the last
/// error when the protocol is down.
fn info_text(p: &ProtocolInfo) -> String {
    if let Some(i) = &p.info {
        return i.clone();
    }
    let err = p.last_error.as_deref().unwrap_or("");
    match (&p.bgp, p.state) {
        (_, ProtoState::Down) => err.to_string(),
        (Some(b), _) => format!("{:<14}{}", b.bgp_state.as_str(), err),
        (None, _) => err.to_string(),
    }
}

fn summary_row(out: &mut String, p: &ProtocolInfo, o: &RenderOpts) {
    let mut since = String::new();
    time_of_day(&mut since, p.since_ms, o.utc_offset_secs);
    let start = out.len();
    let _ = write!(
        out,
        "{:<10} {:<10} {:<10} {:<6} {:<12}  {}",
        p.name,
        p.kind.as_str(),
        p.table.as_deref().unwrap_or("---"),
        p.state.as_str(),
        since,
        info_text(p)
    );
    // Padding of an empty or short Info column is not worth keeping.
    let trimmed = out[start..].trim_end().len();
    out.truncate(start + trimmed);
    out.push('\n');
}

fn detail(out: &mut String, p: &ProtocolInfo, o: &RenderOpts) {
    if let Some(d) = &p.description {
        let _ = writeln!(out, "  Description:    {d}");
    }
    if let Some(b) = &p.bgp {
        bgp_detail(out, p, b, o);
    }
    if p.channels.is_empty() {
        let _ = write!(out, "  Routes:         ");
        routes_line(out, &p.routes);
    }
    for c in &p.channels {
        channel(out, c);
    }
    out.push('\n');
}

fn bgp_detail(out: &mut String, p: &ProtocolInfo, b: &BgpInfo, _o: &RenderOpts) {
    let state = if p.state == ProtoState::Down {
        "Down"
    } else {
        b.bgp_state.as_str()
    };
    let _ = writeln!(out, "  BGP state:          {state}");
    let _ = write!(out, "    Neighbor address: {}", b.neighbor_addr);
    if let Some(port) = b.neighbor_port {
        let _ = write!(out, " port {port}");
    }
    out.push('\n');
    let _ = writeln!(out, "    Neighbor AS:      {}", b.remote_as);
    let _ = writeln!(out, "    Local AS:         {}", b.local_as);
    if let Some(id) = b.neighbor_id {
        let _ = writeln!(out, "    Neighbor ID:      {id}");
    }
    capability_list(out, "Local capabilities", &b.local_capabilities);
    capability_list(out, "Neighbor capabilities", &b.neighbor_capabilities);
    if let Some(s) = &b.session {
        let _ = writeln!(out, "    Session:          {s}");
    }
    if let Some(a) = b.source_addr {
        let _ = writeln!(out, "    Source address:   {a}");
    }
    timer(out, "Hold timer:       ", b.hold_timer_left_ms, b.hold_time);
    timer(
        out,
        "Keepalive timer:  ",
        b.keepalive_timer_left_ms,
        b.keepalive_time,
    );
    let (rx, tx) = (&b.messages_received, &b.messages_sent);
    if rx.total() > 0 || tx.total() > 0 {
        let _ = writeln!(
            out,
            "    {:<24}{:>10} {:>10}",
            "Message stats:", "received", "sent"
        );
        for (name, r, t) in [
            ("OPEN:", rx.open, tx.open),
            ("UPDATE:", rx.update, tx.update),
            ("NOTIFICATION:", rx.notification, tx.notification),
            ("KEEPALIVE:", rx.keepalive, tx.keepalive),
            ("ROUTE-REFRESH:", rx.route_refresh, tx.route_refresh),
        ] {
            let _ = writeln!(out, "      {name:<22}{r:>10} {t:>10}");
        }
    }
    if let Some(e) = &p.last_error {
        let _ = writeln!(out, "    Last error:       {e}");
    }
}

/// A capability may span lines ("Multiprotocol\n  AF announced: ipv4");
/// every line is indented under the heading.
fn capability_list(out: &mut String, heading: &str, caps: &[String]) {
    if caps.is_empty() {
        return;
    }
    let _ = writeln!(out, "    {heading}");
    for line in caps.iter().flat_map(|c| c.lines()) {
        let _ = writeln!(out, "      {line}");
    }
}

/// "Hold timer:       209.133/240": time left / negotiated, in seconds.
fn timer(out: &mut String, label: &str, left_ms: Option<u64>, negotiated: Option<u16>) {
    match (left_ms, negotiated) {
        (Some(l), Some(n)) => {
            let _ = writeln!(out, "    {label}{}.{:03}/{n}", l / 1000, l % 1000);
        }
        (None, Some(n)) => {
            let _ = writeln!(out, "    {label}{n}");
        }
        _ => {}
    }
}

/// "2 imported, 0 filtered, 2 exported, 1 preferred".
fn routes_line(out: &mut String, r: &RouteCounts) {
    let _ = writeln!(
        out,
        "{} imported, {} filtered, {} exported, {} preferred",
        r.accepted, r.filtered, r.sent, r.preferred
    );
}

fn channel(out: &mut String, c: &ChannelInfo) {
    let _ = writeln!(out, "  Channel {}", c.name);
    let _ = writeln!(
        out,
        "    State:          {}",
        if c.up { "UP" } else { "DOWN" }
    );
    let _ = writeln!(out, "    Table:          {}", c.table);
    let _ = writeln!(
        out,
        "    Input filter:   {}",
        c.import_filter.as_deref().unwrap_or("ACCEPT")
    );
    let _ = writeln!(
        out,
        "    Output filter:  {}",
        c.export_filter.as_deref().unwrap_or("ACCEPT")
    );
    let _ = write!(out, "    Routes:         ");
    routes_line(out, &c.routes);
    if c.routes.received != c.routes.accepted.saturating_add(c.routes.filtered) {
        // Received but neither accepted nor kept as filtered: rejected by
        // import checks (RFC 4271 §9.1.2 loop detection, invalid next hop).
        let _ = writeln!(out, "    Received:       {}", c.routes.received);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::*;

    pub(crate) fn peer1() -> ProtocolInfo {
        ProtocolInfo {
            name: "peer1".into(),
            kind: ProtocolKind::Bgp,
            table: None,
            state: ProtoState::Up,
            // 2023-11-14 22:13:20.123 UTC
            since_ms: 1_700_000_000_123,
            info: None,
            last_error: None,
            description: Some("Peer one".into()),
            routes: RouteCounts {
                received: 3,
                accepted: 2,
                filtered: 1,
                sent: 5,
                preferred: 1,
            },
            channels: vec![ChannelInfo {
                name: "ipv4".into(),
                up: true,
                table: "master4".into(),
                import_filter: Some("from_peer1".into()),
                export_filter: None,
                routes: RouteCounts {
                    received: 3,
                    accepted: 2,
                    filtered: 1,
                    sent: 5,
                    preferred: 1,
                },
            }],
            bgp: Some(BgpInfo {
                bgp_state: BgpState::Established,
                neighbor_addr: "192.0.2.2".parse().unwrap(),
                neighbor_port: None,
                remote_as: 65002,
                local_as: 65001,
                neighbor_id: Some("10.0.0.2".parse().unwrap()),
                source_addr: Some("192.0.2.1".parse().unwrap()),
                hold_time: Some(90),
                keepalive_time: Some(30),
                hold_timer_left_ms: Some(89_250),
                keepalive_timer_left_ms: None,
                local_capabilities: vec![
                    "Multiprotocol\n  AF announced: ipv4".into(),
                    "4-octet AS numbers".into(),
                ],
                neighbor_capabilities: vec!["Route refresh".into()],
                session: Some("external AS4".into()),
                messages_received: MessageCounts {
                    open: 1,
                    update: 12,
                    notification: 0,
                    keepalive: 40,
                    route_refresh: 0,
                },
                messages_sent: MessageCounts {
                    open: 1,
                    update: 3,
                    notification: 0,
                    keepalive: 41,
                    route_refresh: 1,
                },
            }),
        }
    }

    fn static1() -> ProtocolInfo {
        ProtocolInfo {
            name: "static1".into(),
            kind: ProtocolKind::Static,
            table: Some("master4".into()),
            state: ProtoState::Up,
            since_ms: 1_700_000_000_000,
            info: None,
            last_error: None,
            description: None,
            routes: RouteCounts {
                accepted: 2,
                ..RouteCounts::default()
            },
            channels: vec![],
            bgp: None,
        }
    }

    fn peer2_down() -> ProtocolInfo {
        let mut p = peer1();
        p.name = "peer2".into();
        p.state = ProtoState::Down;
        p.description = None;
        p.last_error = Some("Received: Administrative shutdown".into());
        p.channels.clear();
        p.routes = RouteCounts::default();
        if let Some(b) = &mut p.bgp {
            b.bgp_state = BgpState::Idle;
            b.neighbor_id = None;
            b.source_addr = None;
            b.hold_time = None;
            b.keepalive_time = None;
            b.hold_timer_left_ms = None;
            b.local_capabilities.clear();
            b.neighbor_capabilities.clear();
            b.session = None;
            b.messages_received = MessageCounts::default();
            b.messages_sent = MessageCounts::default();
        }
        p
    }

    fn peer3_active() -> ProtocolInfo {
        let mut p = peer2_down();
        p.name = "peer3-with-long-name".into();
        p.state = ProtoState::Start;
        p.last_error = Some("Socket: Connection refused".into());
        if let Some(b) = &mut p.bgp {
            b.bgp_state = BgpState::Active;
        }
        p
    }

    #[test]
    fn summary_table() {
        let mut s = String::new();
        let protos = [peer1(), static1(), peer2_down(), peer3_active()];
        render_protocols(&mut s, &protos, false, &RenderOpts::default());
        let want = "\
Name       Proto      Table      State  Since         Info
peer1      BGP        ---        up     22:13:20.123  Established
static1    Static     master4    up     22:13:20.000
peer2      BGP        ---        down   22:13:20.123  Received: Administrative shutdown
peer3-with-long-name BGP        ---        start  22:13:20.123  Active        Socket: Connection refused
";
        assert_eq!(s, want);
    }

    #[test]
    fn utc_offset_applies() {
        let mut s = String::new();
        let o = RenderOpts {
            utc_offset_secs: 3600,
        };
        render_protocols(&mut s, &[static1()], false, &o);
        assert!(s.contains("23:13:20.000"), "{s}");
    }

    #[test]
    fn detail_blocks() {
        let mut s = String::new();
        render_protocols(
            &mut s,
            &[peer1(), peer2_down(), static1()],
            true,
            &RenderOpts::default(),
        );
        let want = "\
Name       Proto      Table      State  Since         Info
peer1      BGP        ---        up     22:13:20.123  Established
  Description:    Peer one
  BGP state:          Established
    Neighbor address: 192.0.2.2
    Neighbor AS:      65002
    Local AS:         65001
    Neighbor ID:      10.0.0.2
    Local capabilities
      Multiprotocol
        AF announced: ipv4
      4-octet AS numbers
    Neighbor capabilities
      Route refresh
    Session:          external AS4
    Source address:   192.0.2.1
    Hold timer:       89.250/90
    Keepalive timer:  30
    Message stats:            received       sent
      OPEN:                          1          1
      UPDATE:                       12          3
      NOTIFICATION:                  0          0
      KEEPALIVE:                    40         41
      ROUTE-REFRESH:                 0          1
  Channel ipv4
    State:          UP
    Table:          master4
    Input filter:   from_peer1
    Output filter:  ACCEPT
    Routes:         2 imported, 1 filtered, 5 exported, 1 preferred

peer2      BGP        ---        down   22:13:20.123  Received: Administrative shutdown
  BGP state:          Down
    Neighbor address: 192.0.2.2
    Neighbor AS:      65002
    Local AS:         65001
    Last error:       Received: Administrative shutdown
  Routes:         0 imported, 0 filtered, 0 exported, 0 preferred

static1    Static     master4    up     22:13:20.000
  Routes:         2 imported, 0 filtered, 0 exported, 0 preferred

";
        assert_eq!(s, want);
    }

    #[test]
    fn rejected_routes_are_shown() {
        let mut p = peer1();
        p.channels[0].routes.received = 10;
        let mut s = String::new();
        render_protocols(&mut s, &[p], true, &RenderOpts::default());
        assert!(s.contains("    Received:       10\n"), "{s}");
    }
}
