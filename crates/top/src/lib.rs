//! `tessera top`: a terminal view of a running tesserad (peers with state,
//! uptime, routes and UPDATE rates with sparklines; the RIB; per-stage
//! UPDATE latency; BFD sessions; when the dataplane runs, each core's
//! packets/s with a sparkline and the drops by reason).
//!
//! Pure parts: [`Model::update`] turns successive [`Sample`]s (what the
//! control socket and `/metrics` answered, and when) into rates and
//! histories; [`draw`] renders a model into any ratatui backend (the
//! binary's terminal, or a test buffer). The binary (`tessera top`) only
//! polls, sleeps between polls and reads keys.

use std::collections::{BTreeMap, VecDeque};

use mgmt::metrics::scan::{label, samples as prom_samples};
use mgmt::proto::{BfdSessionInfo, DataplaneInfo, ProtocolInfo, RouteCount, StatusInfo};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Sparkline, Table};
use ratatui::Frame;

/// Points of history kept per series (one per sample).
pub const HISTORY: usize = 60;

/// One poll of the daemon.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Seconds on the poller's monotonic clock.
    pub at: f64,
    pub status: Option<StatusInfo>,
    pub protocols: Vec<ProtocolInfo>,
    pub count: Option<RouteCount>,
    pub bfd: Vec<BfdSessionInfo>,
    /// `/metrics` text, when a metrics address was given.
    pub metrics: Option<String>,
    /// `show dataplane`, when the daemon runs one.
    pub dataplane: Option<DataplaneInfo>,
    /// Why a part of the poll failed (shown in the status line).
    pub error: Option<String>,
}

/// One peer's row.
#[derive(Clone, Debug, Default)]
pub struct PeerRow {
    pub name: String,
    pub state: String,
    pub since_ms: u64,
    pub received: u64,
    pub accepted: u64,
    pub sent: u64,
    /// UPDATE messages received / sent, totals.
    pub updates_in: u64,
    pub updates_out: u64,
    /// UPDATEs per second over the last interval.
    pub rate_in: f64,
    pub rate_out: f64,
    /// `rate_in`, one point per sample, oldest first.
    pub history_in: VecDeque<u64>,
}

/// One stage's latency over the last interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageRow {
    pub stage: String,
    /// Observations per second.
    pub rate: f64,
    /// Mean seconds per observation over the interval (`None`: none).
    pub mean: Option<f64>,
    sum: f64,
    count: f64,
}

/// One dataplane core's rates over the last interval.
#[derive(Clone, Debug, Default)]
pub struct CoreRow {
    pub core: u32,
    /// Totals.
    pub rx: u64,
    pub tx: u64,
    pub drops: u64,
    /// Packets per second received, sent and dropped.
    pub rate_rx: f64,
    pub rate_tx: f64,
    pub rate_drops: f64,
    /// `rate_rx`, one point per sample, oldest first.
    pub history_rx: VecDeque<u64>,
}

/// Drops of one reason over all cores.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DropRow {
    pub total: u64,
    pub rate: f64,
}

/// Everything the view shows.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub status: Option<StatusInfo>,
    pub peers: BTreeMap<String, PeerRow>,
    pub prefixes: u64,
    pub paths: u64,
    pub bfd: Vec<BfdSessionInfo>,
    pub stages: BTreeMap<String, StageRow>,
    /// Total UPDATEs received per second, one point per sample.
    pub history_total: VecDeque<u64>,
    /// The dataplane's cores (empty: no dataplane in the daemon).
    pub cores: BTreeMap<u32, CoreRow>,
    /// Its drops by reason, summed over the cores.
    pub drops: BTreeMap<String, DropRow>,
    pub error: Option<String>,
    pub samples: u64,
    last_at: Option<f64>,
}

fn push(h: &mut VecDeque<u64>, v: u64) {
    if h.len() == HISTORY {
        h.pop_front();
    }
    h.push_back(v);
}

impl Model {
    /// Folds in the next poll: totals replace the old ones, rates are
    /// the differences over the time between the two polls.
    pub fn update(&mut self, s: Sample) {
        let dt = self.last_at.map(|t| s.at - t).filter(|d| *d > 0.0);
        self.last_at = Some(s.at);
        self.samples += 1;
        self.error = s.error;
        if s.status.is_some() {
            self.status = s.status;
        }
        if let Some(c) = &s.count {
            self.prefixes = c.prefixes();
            self.paths = c.paths();
        }
        self.bfd = s.bfd;
        let mut seen = Vec::new();
        let mut total_rate = 0.0;
        for p in &s.protocols {
            let Some(b) = &p.bgp else { continue };
            seen.push(p.name.clone());
            let row = self.peers.entry(p.name.clone()).or_default();
            let (uin, uout) = (b.messages_received.update, b.messages_sent.update);
            // A peer seen for the first time has no rate yet.
            let seen_before = !row.name.is_empty();
            let rate = |new: u64, old: u64| match dt {
                Some(d) if seen_before && new >= old => (new - old) as f64 / d,
                _ => 0.0,
            };
            row.rate_in = rate(uin, row.updates_in);
            row.rate_out = rate(uout, row.updates_out);
            row.name = p.name.clone();
            row.state = b.bgp_state.as_str().to_string();
            row.since_ms = p.since_ms;
            row.received = p.routes.received;
            row.accepted = p.routes.accepted;
            row.sent = p.routes.sent;
            row.updates_in = uin;
            row.updates_out = uout;
            push(&mut row.history_in, row.rate_in.round() as u64);
            total_rate += row.rate_in;
        }
        if !s.protocols.is_empty() {
            self.peers.retain(|k, _| seen.contains(k));
        }
        push(&mut self.history_total, total_rate.round() as u64);
        self.update_dataplane(s.dataplane.as_ref(), dt);
        if let Some(m) = &s.metrics {
            let sums = prom_samples(m, "tessera_update_stage_seconds_sum");
            let counts = prom_samples(m, "tessera_update_stage_seconds_count");
            for (labels, sum) in sums {
                let Some(stage) = label(labels, "stage") else {
                    continue;
                };
                let count = counts
                    .iter()
                    .find(|(l, _)| label(l, "stage") == Some(stage))
                    .map_or(0.0, |(_, c)| *c);
                let row = self.stages.entry(stage.to_string()).or_default();
                let (ds, dc) = (sum - row.sum, count - row.count);
                let first = row.stage.is_empty();
                row.stage = stage.to_string();
                row.mean = (!first && dc > 0.0).then(|| ds / dc);
                row.rate = match dt {
                    Some(d) if !first && dc >= 0.0 => dc / d,
                    _ => 0.0,
                };
                row.sum = sum;
                row.count = count;
            }
        }
    }
}

impl Model {
    fn update_dataplane(&mut self, dp: Option<&DataplaneInfo>, dt: Option<f64>) {
        let Some(d) = dp else {
            self.cores.clear();
            self.drops.clear();
            return;
        };
        let rate = |new: u64, old: u64, known: bool| match dt {
            Some(t) if known && new >= old => (new - old) as f64 / t,
            _ => 0.0,
        };
        let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
        for c in &d.per_core {
            let drops: u64 = c.drops.values().sum();
            for (k, v) in &c.drops {
                *reasons.entry(k.clone()).or_default() += v;
            }
            let known = self.cores.contains_key(&c.core);
            let row = self.cores.entry(c.core).or_default();
            row.rate_rx = rate(c.rx, row.rx, known);
            row.rate_tx = rate(c.tx, row.tx, known);
            row.rate_drops = rate(drops, row.drops, known);
            row.core = c.core;
            row.rx = c.rx;
            row.tx = c.tx;
            row.drops = drops;
            push(&mut row.history_rx, row.rate_rx.round() as u64);
        }
        self.cores
            .retain(|k, _| d.per_core.iter().any(|c| c.core == *k));
        for (k, total) in reasons {
            let known = self.drops.contains_key(&k);
            let row = self.drops.entry(k).or_default();
            row.rate = rate(total, row.total, known);
            row.total = total;
        }
    }
}

/// "3d04h", "2h05m", "4m07s", "12s".
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    let (d, h, m, s) = (s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}d{h:02}h")
    } else if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

fn seconds(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.2} s")
    } else if v >= 1e-3 {
        format!("{:.2} ms", v * 1e3)
    } else {
        format!("{:.1} µs", v * 1e6)
    }
}

/// Renders `m` into the whole frame.
pub fn draw(f: &mut Frame<'_>, m: &Model) {
    let area = f.area();
    let peers_h = (m.peers.len() as u16 + 3).max(4);
    let stages_h = (m.stages.len() as u16 + 3).max(3);
    let bfd_h = if m.bfd.is_empty() {
        0
    } else {
        m.bfd.len() as u16 + 3
    };
    let dp_h = if m.cores.is_empty() {
        0
    } else {
        m.cores.len() as u16 + 4
    };
    let [head, spark, peers, stages, dataplane, bfd, _rest] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(4),
        Constraint::Length(peers_h),
        Constraint::Length(stages_h),
        Constraint::Length(dp_h),
        Constraint::Length(bfd_h),
        Constraint::Min(0),
    ])
    .areas(area);
    if !m.cores.is_empty() {
        draw_dataplane(f, m, dataplane);
    }

    let now_ms = m.status.as_ref().map_or(0, |s| s.server_time_ms);
    let title = match &m.status {
        Some(s) => format!(
            " tesserad {} · router id {} · up {} ",
            s.version,
            s.router_id,
            duration(s.server_time_ms.saturating_sub(s.started_ms))
        ),
        None => " tesserad: no answer yet ".to_string(),
    };
    let mut head_text = vec![Span::raw(format!(
        "RIB: {} prefixes, {} paths · {} peers, {} established · UPDATEs in {}/s",
        m.prefixes,
        m.paths,
        m.peers.len(),
        m.peers
            .values()
            .filter(|p| p.state == "Established")
            .count(),
        m.history_total.back().copied().unwrap_or(0)
    ))];
    if let Some(e) = &m.error {
        head_text.push(Span::styled(
            format!(" · {e}"),
            Style::default().fg(Color::Red),
        ));
    }
    f.render_widget(
        Paragraph::new(Line::from(head_text)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(title)
                .title_bottom(" q: quit "),
        ),
        head,
    );
    let total: Vec<u64> = m.history_total.iter().copied().collect();
    f.render_widget(
        Sparkline::default()
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" UPDATEs received per second, all peers "),
            )
            .data(&total)
            .style(Style::default().fg(Color::Green)),
        spark,
    );

    let header = Row::new(
        [
            "peer",
            "state",
            "since",
            "received",
            "accepted",
            "sent",
            "upd in/s",
            "upd out/s",
            "in/s history",
        ]
        .map(|h| Cell::from(h).style(Style::default().add_modifier(Modifier::BOLD))),
    );
    let rows = m.peers.values().map(|p| {
        let color = if p.state == "Established" {
            Color::Green
        } else {
            Color::Yellow
        };
        Row::new(vec![
            Cell::from(p.name.clone()),
            Cell::from(p.state.clone()).style(Style::default().fg(color)),
            Cell::from(duration(now_ms.saturating_sub(p.since_ms))),
            Cell::from(p.received.to_string()),
            Cell::from(p.accepted.to_string()),
            Cell::from(p.sent.to_string()),
            Cell::from(format!("{:.0}", p.rate_in)),
            Cell::from(format!("{:.0}", p.rate_out)),
            Cell::from(spark_text(&p.history_in, 16)),
        ])
    });
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(14),
                Constraint::Length(12),
                Constraint::Length(8),
                Constraint::Length(9),
                Constraint::Length(9),
                Constraint::Length(9),
                Constraint::Length(9),
                Constraint::Length(9),
                Constraint::Min(16),
            ],
        )
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(" peers ")),
        peers,
    );

    let header = Row::new(
        ["stage", "per second", "mean latency"]
            .map(|h| Cell::from(h).style(Style::default().add_modifier(Modifier::BOLD))),
    );
    let rows = m.stages.values().map(|s| {
        Row::new(vec![
            Cell::from(s.stage.clone()),
            Cell::from(format!("{:.0}", s.rate)),
            Cell::from(s.mean.map_or("-".to_string(), seconds)),
        ])
    });
    let title = if m.stages.is_empty() {
        " UPDATE stages (give --metrics ADDR) "
    } else {
        " UPDATE stages "
    };
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(16),
                Constraint::Length(12),
                Constraint::Length(14),
            ],
        )
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title)),
        stages,
    );

    if !m.bfd.is_empty() {
        let rows = m.bfd.iter().map(|b| {
            Row::new(vec![
                Cell::from(b.peer.to_string()),
                Cell::from(b.neighbor.clone().unwrap_or_default()),
                Cell::from(b.state.clone()),
                Cell::from(b.remote_state.clone()),
                Cell::from(b.diag.clone()),
            ])
        });
        f.render_widget(
            Table::new(
                rows,
                [
                    Constraint::Length(26),
                    Constraint::Length(14),
                    Constraint::Length(9),
                    Constraint::Length(9),
                    Constraint::Min(10),
                ],
            )
            .header(Row::new([
                "BFD peer",
                "neighbour",
                "state",
                "remote",
                "diag",
            ]))
            .block(Block::default().borders(Borders::ALL).title(" BFD ")),
            bfd,
        );
    }
}

/// The dataplane pane: one row per core (packets/s received, sent and
/// dropped, and the received history), the drops by reason below.
fn draw_dataplane(f: &mut Frame<'_>, m: &Model, area: ratatui::layout::Rect) {
    let header = Row::new(
        ["core", "rx pkt/s", "tx pkt/s", "drop/s", "rx/s history"]
            .map(|h| Cell::from(h).style(Style::default().add_modifier(Modifier::BOLD))),
    );
    let rows = m.cores.values().map(|c| {
        Row::new(vec![
            Cell::from(format!("core{}", c.core)),
            Cell::from(format!("{:.0}", c.rate_rx)),
            Cell::from(format!("{:.0}", c.rate_tx)),
            Cell::from(format!("{:.0}", c.rate_drops)),
            Cell::from(spark_text(&c.history_rx, 16)),
        ])
    });
    let drops: Vec<String> = m
        .drops
        .iter()
        .filter(|(_, d)| d.total > 0)
        .map(|(k, d)| format!("{k}={} ({:.0}/s)", d.total, d.rate))
        .collect();
    let bottom = if drops.is_empty() {
        " drops: none ".to_string()
    } else {
        format!(" drops: {} ", drops.join(" "))
    };
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(8),
                Constraint::Length(10),
                Constraint::Length(10),
                Constraint::Length(8),
                Constraint::Min(16),
            ],
        )
        .header(header)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" dataplane ")
                .title_bottom(bottom),
        ),
        area,
    );
}

/// The last `width` points of `h` as block characters scaled to their max.
pub fn spark_text(h: &VecDeque<u64>, width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let pts: Vec<u64> = h.iter().rev().take(width).rev().copied().collect();
    let max = pts.iter().copied().max().unwrap_or(0);
    pts.iter()
        .map(|&v| {
            let i = v.saturating_mul(7).checked_div(max).unwrap_or(0);
            BARS[usize::try_from(i).unwrap_or(7).min(7)]
        })
        .collect()
}

/// The model as text (a frame drawn into a `width` x `height` buffer), for
/// `tessera top --once` and tests.
pub fn render_text(m: &Model, width: u16, height: u16) -> String {
    let backend = ratatui::backend::TestBackend::new(width, height);
    let Ok(mut term) = ratatui::Terminal::new(backend) else {
        return String::new();
    };
    if term.draw(|f| draw(f, m)).is_err() {
        return String::new();
    }
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mgmt::proto::{BgpInfo, BgpState, MessageCounts, ProtoState, ProtocolKind, RouteCounts};

    fn peer(name: &str, updates_in: u64, received: u64) -> ProtocolInfo {
        ProtocolInfo {
            name: name.into(),
            kind: ProtocolKind::Bgp,
            table: None,
            state: ProtoState::Up,
            since_ms: 1_000,
            info: None,
            last_error: None,
            description: None,
            routes: RouteCounts {
                received,
                accepted: received,
                ..Default::default()
            },
            channels: Vec::new(),
            bgp: Some(BgpInfo {
                bgp_state: BgpState::Established,
                neighbor_addr: "198.18.0.2".parse().unwrap(),
                neighbor_port: None,
                remote_as: 65001,
                local_as: 65000,
                neighbor_id: None,
                source_addr: None,
                hold_time: None,
                keepalive_time: None,
                hold_timer_left_ms: None,
                keepalive_timer_left_ms: None,
                local_capabilities: Vec::new(),
                neighbor_capabilities: Vec::new(),
                session: None,
                messages_received: MessageCounts {
                    update: updates_in,
                    ..Default::default()
                },
                messages_sent: MessageCounts::default(),
            }),
        }
    }

    #[test]
    fn rates_are_differences_over_the_interval() {
        let mut m = Model::default();
        m.update(Sample {
            at: 10.0,
            protocols: vec![peer("p1", 100, 5)],
            ..Default::default()
        });
        assert_eq!(m.peers["p1"].rate_in, 0.0, "no rate from one sample");
        m.update(Sample {
            at: 12.0,
            protocols: vec![peer("p1", 500, 9)],
            ..Default::default()
        });
        let p = &m.peers["p1"];
        assert_eq!(p.rate_in, 200.0);
        assert_eq!(p.received, 9);
        assert_eq!(p.history_in.iter().copied().collect::<Vec<_>>(), [0, 200]);
        assert_eq!(m.history_total.back(), Some(&200));
        // A counter that went back (session reset) gives 0, not a wrap.
        m.update(Sample {
            at: 13.0,
            protocols: vec![peer("p1", 3, 0)],
            ..Default::default()
        });
        assert_eq!(m.peers["p1"].rate_in, 0.0);
        // A peer that is gone leaves the table.
        m.update(Sample {
            at: 14.0,
            protocols: vec![peer("p2", 3, 0)],
            ..Default::default()
        });
        assert!(!m.peers.contains_key("p1") && m.peers.contains_key("p2"));
    }

    #[test]
    fn history_is_bounded() {
        let mut m = Model::default();
        for i in 0..(HISTORY as u64 + 20) {
            m.update(Sample {
                at: i as f64,
                protocols: vec![peer("p", i * 10, 0)],
                ..Default::default()
            });
        }
        assert_eq!(m.peers["p"].history_in.len(), HISTORY);
        assert_eq!(m.history_total.len(), HISTORY);
    }

    #[test]
    fn stage_latency_from_histogram_sums_and_counts() {
        let text = |sum: f64, count: f64| {
            format!(
                "# TYPE tessera_update_stage_seconds histogram\n\
                 tessera_update_stage_seconds_bucket{{stage=\"decode\",le=\"0.001\"}} 1\n\
                 tessera_update_stage_seconds_sum{{stage=\"decode\"}} {sum}\n\
                 tessera_update_stage_seconds_count{{stage=\"decode\"}} {count}\n"
            )
        };
        let mut m = Model::default();
        m.update(Sample {
            at: 0.0,
            metrics: Some(text(1.0, 1000.0)),
            ..Default::default()
        });
        assert_eq!(m.stages["decode"].mean, None);
        m.update(Sample {
            at: 2.0,
            metrics: Some(text(1.5, 2000.0)),
            ..Default::default()
        });
        let s = &m.stages["decode"];
        assert_eq!(s.rate, 500.0);
        assert!((s.mean.unwrap() - 0.0005).abs() < 1e-12);
    }

    #[test]
    fn the_frame_shows_peers_and_totals() {
        let mut m = Model::default();
        m.update(Sample {
            at: 0.0,
            protocols: vec![peer("upstream1", 10, 1234)],
            ..Default::default()
        });
        let t = render_text(&m, 120, 30);
        assert!(t.contains("upstream1"), "{t}");
        assert!(t.contains("Established"), "{t}");
        assert!(t.contains("1234"), "{t}");
        assert!(t.contains("1 peers, 1 established"), "{t}");
    }

    fn dp(rx: u64, no_route: u64) -> DataplaneInfo {
        DataplaneInfo {
            graph: "built-in".into(),
            cores: 2,
            elements: Vec::new(),
            ipsec: Vec::new(),
            per_core: (0..2)
                .map(|i| mgmt::proto::CoreInfo {
                    core: i,
                    rx: rx * u64::from(i + 1),
                    tx: rx,
                    drops: [("no_route".to_string(), no_route)].into_iter().collect(),
                    queues: Vec::new(),
                })
                .collect(),
            cluster: None,
            xdp_fastpath: None,
            vrs: Box::default(),
        }
    }

    #[test]
    fn dataplane_pane_shows_per_core_rates_and_drops() {
        let mut m = Model::default();
        m.update(Sample {
            at: 0.0,
            dataplane: Some(dp(100, 0)),
            ..Default::default()
        });
        m.update(Sample {
            at: 2.0,
            dataplane: Some(dp(1100, 6)),
            ..Default::default()
        });
        assert_eq!(m.cores[&0].rate_rx, 500.0);
        assert_eq!(m.cores[&1].rate_rx, 1000.0);
        assert_eq!(m.cores[&1].rate_drops, 3.0);
        assert_eq!(
            m.drops["no_route"],
            DropRow {
                total: 12,
                rate: 6.0
            }
        );
        let t = render_text(&m, 120, 40);
        assert!(t.contains(" dataplane "), "{t}");
        let row = t.lines().find(|l| l.contains("core1")).expect(&t);
        let w: Vec<&str> = row
            .split(|c: char| c.is_whitespace() || c == '│')
            .filter(|w| !w.is_empty())
            .collect();
        assert_eq!(&w[..4], ["core1", "1000", "500", "3"], "{row}");
        assert!(t.contains("no_route=12 (6/s)"), "{t}");
        // Without a dataplane the pane goes away.
        m.update(Sample {
            at: 3.0,
            ..Default::default()
        });
        assert!(!render_text(&m, 120, 40).contains(" dataplane "));
    }

    #[test]
    fn durations_read_like_uptime() {
        assert_eq!(duration(12_000), "12s");
        assert_eq!(duration(247_000), "4m07s");
        assert_eq!(duration(7_500_000), "2h05m");
        assert_eq!(duration(273_600_000), "3d04h");
    }
}
