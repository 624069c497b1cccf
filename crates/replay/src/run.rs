//! One measured run: monitor up, replay started, convergence detected,
//! DUT cost read, results written. This is the API `tessera replay` and
//! `tessera bench` share.
//!
//! Convergence:
//! - with an expected prefix count (synthetic and RIB input, or given):
//!   the moment the monitor first holds that many prefixes, stamped by the
//!   monitor thread;
//! - for an update trace: once every peer has sent everything and the
//!   DUT's End-of-RIB has reached the monitor, the monitor's last change
//!   after `quiet` seconds without one (twice that for a DUT that sends
//!   no End-of-RIB). A trace that announced prefixes while the monitor's
//!   table never changed has not converged (the DUT passed nothing on):
//!   [`RunResult::not_converged`] says so, instead of a convergence time of
//!   zero;
//! - without a monitor: when the last End-of-RIB was written (what the
//!   generator managed, not what the DUT did).
//!
//! Times count from [`crate::ReplayStats::started`]: every session up.

use crate::dut::{self, ProcSample};
use crate::error::ReplayError;
use crate::monitor::{Monitor, MonitorConfig, MonitorSnapshot};
use crate::sender::{start, ReplayConfig};
use crate::stats::Snapshot;
use crate::workload::Workload;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Measurement settings around a replay.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub monitor: Option<MonitorConfig>,
    /// Prefixes the monitor must hold; defaults to the workload's
    /// [`Workload::expected_prefixes`].
    pub expect_prefixes: Option<u64>,
    /// Quiet period that ends an update trace (no monitor change).
    pub quiet: Duration,
    /// Bound on the wait for convergence, from the start of sending
    /// (`hold_after` comes on top).
    pub timeout: Duration,
    /// Local DUT processes (and their descendants) to read CPU and RSS of.
    pub dut_pids: Vec<u32>,
    /// Time-series resolution.
    pub sample_every: Duration,
    /// Keep sessions up this long after convergence.
    pub hold_after: Duration,
    /// Bound on the monitor session coming up.
    pub monitor_wait: Duration,
    /// After convergence, also wait until the generator peers have read
    /// nothing from the DUT for `quiet` (a DUT exporting to them, e.g.
    /// `tessera bench --export all`, may still be sending them routes
    /// after the monitor has its table), so that the DUT's cost covers
    /// that work. While they have read nothing at all, the wait is ten
    /// times `quiet` from convergence (a DUT may start late); bounded by
    /// `timeout` from the start of sending. Convergence time is still the
    /// monitor's.
    pub settle_received: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            monitor: None,
            expect_prefixes: None,
            quiet: Duration::from_secs(2),
            timeout: Duration::from_secs(600),
            dut_pids: Vec::new(),
            sample_every: Duration::from_millis(50),
            hold_after: Duration::ZERO,
            monitor_wait: Duration::from_secs(30),
            settle_received: false,
        }
    }
}

/// Handed to the caller's progress callback about once a second, and
/// once more with the final counts when the run ends.
#[derive(Copy, Clone, Debug)]
pub struct Progress {
    pub elapsed: f64,
    pub replay: Snapshot,
    pub monitor: Option<MonitorSnapshot>,
    /// Over the last interval.
    pub updates_per_sec: f64,
    pub prefixes_per_sec: f64,
    pub total_prefixes: u64,
    pub expected: Option<u64>,
    /// First UPDATE to last End-of-RIB written, once every peer is done.
    pub send_secs: Option<f64>,
}

impl Progress {
    /// The one-line status.
    pub fn line(&self) -> String {
        let s = &self.replay;
        let mut o = format!(
            "[{:6.1}s] peers up {}/{} done {}/{}{}, {:.0} UPDATEs/s, {:.0} prefixes/s, sent {}/{}",
            self.elapsed,
            s.up,
            s.peers,
            s.finished,
            s.peers,
            if s.failed > 0 {
                format!(" FAILED {}", s.failed)
            } else {
                String::new()
            },
            self.updates_per_sec,
            self.prefixes_per_sec,
            s.prefixes_sent,
            self.total_prefixes
        );
        if s.messages_received > 0 {
            let _ = write!(o, ", read {} msgs from the DUT", s.messages_received);
        }
        if let Some(m) = &self.monitor {
            let _ = write!(o, ", monitor {}", m.prefixes);
            if let Some(e) = self.expected {
                let _ = write!(o, "/{e}");
            }
        }
        o
    }
}

/// One time-series point.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Seconds since sending began (negative before).
    pub t: f64,
    pub monitor_prefixes: u64,
    pub prefixes_sent: u64,
    pub updates_sent: u64,
}

/// Everything one run measured.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub peers: usize,
    pub peers_failed: usize,
    /// (peer, error) for every failed peer, and the monitor's as peer
    /// `usize::MAX`.
    pub errors: Vec<(usize, ReplayError)>,
    pub updates_sent: u64,
    pub prefixes_sent: u64,
    pub withdrawn_sent: u64,
    /// Messages not sent because the trace had their session down.
    pub skipped: u64,
    /// Sessions opened (more than `peers` when a trace reopened some).
    pub sessions_opened: u64,
    /// Messages the generator peers read from the DUT (and discarded),
    /// keepalives included: what a DUT exporting to them sent.
    pub messages_received: u64,
    /// First UPDATE written to last End-of-RIB written.
    pub send_secs: Option<f64>,
    pub expected_prefixes: Option<u64>,
    pub monitor_prefixes: Option<u64>,
    pub monitor_updates: Option<u64>,
    pub converged: bool,
    /// Why the run did not converge, when it did not.
    pub not_converged: Option<&'static str>,
    pub convergence_secs: Option<f64>,
    pub updates_per_sec: Option<f64>,
    pub prefixes_per_sec: Option<f64>,
    pub dut_cpu_secs: Option<f64>,
    pub dut_peak_rss_kib: Option<u64>,
    pub series: Vec<Sample>,
}

/// Runs one replay with measurement. `stop` (e.g. Ctrl-C) ends it early;
/// the result then says `converged: false`.
pub fn run(
    rcfg: &ReplayConfig,
    w: Arc<Workload>,
    cfg: &RunConfig,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Progress),
) -> Result<RunResult, ReplayError> {
    let dut0 = dut::sample(&cfg.dut_pids);
    let monitor = match cfg.monitor {
        Some(m) => {
            let mon = Monitor::start(m)?;
            mon.wait_established(cfg.monitor_wait)?;
            Some(mon)
        }
        None => None,
    };
    let expected = cfg.expect_prefixes.or(w.expected_prefixes);
    if let (Some(m), Some(e)) = (&monitor, expected) {
        m.set_target(e);
    }
    let total_prefixes = w.total_prefixes();
    let replay = start(rcfg, w)?;
    let t_run = Instant::now();
    let mut series = Vec::new();
    let (mut prev, mut prev_t) = (replay.stats().snapshot(), t_run);
    let mut converged_at: Option<Instant> = None;
    let mut all_sent_at: Option<Instant> = None;
    let mut seen_at: Option<Instant> = None;
    let mut reason: Option<&'static str> = None;
    let mut last_sample = t_run - cfg.sample_every;
    // The generators' received count and when it last changed.
    let (mut rx, mut rx_changed) = (0u64, t_run);
    loop {
        std::thread::sleep(Duration::from_millis(5).min(cfg.sample_every));
        let now = Instant::now();
        let snap = replay.stats().snapshot();
        let msnap = monitor.as_ref().map(|m| m.stats().snapshot());
        let t0 = replay.stats().started().unwrap_or(t_run);
        if now.duration_since(last_sample) >= cfg.sample_every {
            last_sample = now;
            series.push(Sample {
                t: secs_between(t0, now),
                monitor_prefixes: msnap.map_or(0, |m| m.prefixes),
                prefixes_sent: snap.prefixes_sent,
                updates_sent: snap.updates_sent,
            });
        }
        if now.duration_since(prev_t) >= Duration::from_secs(1) {
            let dt = now.duration_since(prev_t).as_secs_f64();
            progress(&Progress {
                elapsed: now.duration_since(t_run).as_secs_f64(),
                replay: snap,
                monitor: msnap,
                updates_per_sec: (snap.updates_sent - prev.updates_sent) as f64 / dt,
                prefixes_per_sec: (snap.prefixes_sent - prev.prefixes_sent) as f64 / dt,
                total_prefixes,
                expected,
                send_secs: window_secs(&replay),
            });
            (prev, prev_t) = (snap, now);
        }
        let all_sent = snap.finished + snap.failed >= snap.peers;
        if all_sent && all_sent_at.is_none() {
            all_sent_at = Some(now);
        }
        if converged_at.is_none() {
            converged_at = match (&monitor, expected) {
                // The expected count alone is not the end: with shared
                // prefixes the first peer to finish fills the table while
                // the others still send, and stopping then leaves their
                // updates unsent and unprocessed. Converged once both hold.
                (Some(m), Some(_)) => match (m.reached_at(), all_sent_at) {
                    (Some(r), Some(s)) => Some(r.max(s)),
                    _ => None,
                },
                (Some(m), None) => match trace_end(&TraceState {
                    all_sent_at,
                    changed_at: m.changed_at(),
                    end_of_rib: m.end_of_rib_at().is_some(),
                    quiet: cfg.quiet,
                    announced: snap.prefixes_sent,
                    now,
                    t0,
                }) {
                    TraceEnd::Running => None,
                    TraceEnd::Converged(t) => Some(t),
                    TraceEnd::NothingReceived => {
                        reason = Some(NOTHING_RECEIVED);
                        break;
                    }
                },
                (None, _) => all_sent_at,
            };
            if converged_at.is_some() {
                // Hold from when it was seen, not from its stamp.
                seen_at = Some(now);
            }
        }
        if snap.messages_received != rx {
            (rx, rx_changed) = (snap.messages_received, now);
        }
        // Quiet for `quiet` after something arrived, or nothing at all
        // for ten times that after convergence: a DUT may start sending
        // to the generators seconds after the monitor has its table
        // (FRR 8.4: 3 to 4 s).
        let settled = !cfg.settle_received
            || seen_at.is_some_and(|t| {
                let since = now.duration_since(rx_changed.max(t));
                if rx > 0 {
                    since >= cfg.quiet
                } else {
                    since >= cfg.quiet * 10
                }
            })
            || now.duration_since(t0) >= cfg.timeout;
        let held = settled && seen_at.is_some_and(|t| now.duration_since(t) >= cfg.hold_after);
        let dead = snap.failed >= snap.peers || msnap.is_some_and(|m| m.failed);
        // The timeout bounds the wait for convergence, not the hold after.
        let late = converged_at.is_none() && now.duration_since(t0) >= cfg.timeout;
        if held || dead || late || stop.load(Relaxed) || replay.finished() {
            if converged_at.is_none() {
                reason = Some(if stop.load(Relaxed) {
                    "interrupted"
                } else if late {
                    "timeout"
                } else if dead {
                    "sessions failed"
                } else {
                    "replay ended before convergence"
                });
            }
            break;
        }
    }
    let dut1 = dut::sample(&cfg.dut_pids);
    let t0 = replay.stats().started().unwrap_or(t_run);
    // The loop may end between two samples; close the series with the
    // final counts so charts end where the run did.
    let (snap, msnap) = (
        replay.stats().snapshot(),
        monitor.as_ref().map(|m| m.stats().snapshot()),
    );
    let now = Instant::now();
    series.push(Sample {
        t: secs_between(t0, now),
        monitor_prefixes: msnap.map_or(0, |m| m.prefixes),
        prefixes_sent: snap.prefixes_sent,
        updates_sent: snap.updates_sent,
    });
    // The last report, with the final counts (a run shorter than a second
    // has no other).
    let dt = now.duration_since(prev_t).as_secs_f64().max(1e-6);
    progress(&Progress {
        elapsed: now.duration_since(t_run).as_secs_f64(),
        replay: snap,
        monitor: msnap,
        updates_per_sec: (snap.updates_sent - prev.updates_sent) as f64 / dt,
        prefixes_per_sec: (snap.prefixes_sent - prev.prefixes_sent) as f64 / dt,
        total_prefixes,
        expected,
        send_secs: window_secs(&replay),
    });
    let send_window = replay.stats().send_window();
    let results = replay.join();
    let mut errors: Vec<(usize, ReplayError)> = results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.err().map(|e| (i, e)))
        .collect();
    if let Some(e) = monitor.and_then(Monitor::stop) {
        errors.push((usize::MAX, e));
    }
    let conv = converged_at.map(|c| secs_between(t0, c).max(0.0));
    let (cpu, rss) = cpu_and_rss(dut0, dut1);
    Ok(RunResult {
        peers: snap.peers,
        peers_failed: results.iter().filter(|r| r.is_err()).count(),
        errors,
        updates_sent: snap.updates_sent,
        prefixes_sent: snap.prefixes_sent,
        withdrawn_sent: snap.withdrawn_sent,
        skipped: snap.skipped,
        messages_received: snap.messages_received,
        sessions_opened: snap.sessions_opened,
        send_secs: send_window.map(|(a, b)| secs_between(a, b)),
        expected_prefixes: expected,
        monitor_prefixes: msnap.map(|m| m.prefixes),
        monitor_updates: msnap.map(|m| m.updates),
        converged: conv.is_some(),
        not_converged: if conv.is_some() { None } else { reason },
        convergence_secs: conv,
        updates_per_sec: conv.map(|c| snap.updates_sent as f64 / c.max(1e-6)),
        prefixes_per_sec: conv.map(|c| snap.prefixes_sent as f64 / c.max(1e-6)),
        dut_cpu_secs: cpu,
        dut_peak_rss_kib: rss,
        series,
    })
}

/// Why a trace run ended without converging: the DUT never changed the
/// monitor's table although the trace announced prefixes.
pub const NOTHING_RECEIVED: &str = "monitor received no routes";

/// What the convergence check of an update trace looks at.
struct TraceState {
    /// When every peer had sent everything.
    all_sent_at: Option<Instant>,
    /// The monitor's last table change; `None`: never.
    changed_at: Option<Instant>,
    /// The DUT's End-of-RIB has reached the monitor.
    end_of_rib: bool,
    quiet: Duration,
    /// Prefixes the trace announced so far.
    announced: u64,
    now: Instant,
    /// Start of the run (sessions up).
    t0: Instant,
}

#[derive(Debug, PartialEq)]
enum TraceEnd {
    Running,
    /// Converged at this instant (the monitor's last change).
    Converged(Instant),
    /// Quiet for the whole quiet period after sending, yet the monitor
    /// never saw a route: a DUT that dropped everything, not one that
    /// converged instantly.
    NothingReceived,
}

fn trace_end(s: &TraceState) -> TraceEnd {
    let Some(sent) = s.all_sent_at else {
        return TraceEnd::Running;
    };
    // A DUT that sends no End-of-RIB to a peer without Graceful Restart
    // families (GoBGP) must stay quiet twice as long instead.
    let quiet_for = if s.end_of_rib { s.quiet } else { s.quiet * 2 };
    let quiet_since = s.changed_at.map_or(sent, |c| c.max(sent));
    if s.now.saturating_duration_since(quiet_since) < quiet_for {
        return TraceEnd::Running;
    }
    match s.changed_at {
        Some(c) => TraceEnd::Converged(c.max(s.t0)),
        None if s.announced > 0 => TraceEnd::NothingReceived,
        // Withdrawals only: nothing to wait for.
        None => TraceEnd::Converged(s.t0),
    }
}

fn window_secs(r: &crate::sender::Replay) -> Option<f64> {
    r.stats().send_window().map(|(a, b)| secs_between(a, b))
}

fn secs_between(a: Instant, b: Instant) -> f64 {
    if b >= a {
        b.duration_since(a).as_secs_f64()
    } else {
        -a.duration_since(b).as_secs_f64()
    }
}

fn cpu_and_rss(a: Option<ProcSample>, b: Option<ProcSample>) -> (Option<f64>, Option<u64>) {
    match (a, b) {
        (Some(a), Some(b)) => (
            Some((b.cpu_secs - a.cpu_secs).max(0.0)),
            Some(b.peak_rss_kib),
        ),
        (_, Some(b)) => (None, Some(b.peak_rss_kib)),
        _ => (None, None),
    }
}

impl RunResult {
    /// The columns of [`RunResult::csv_row`].
    pub const CSV_HEADER: &'static str = "label,peers,peers_failed,updates_sent,prefixes_sent,withdrawn_sent,expected_prefixes,monitor_prefixes,converged,convergence_s,updates_per_s,prefixes_per_s,send_s,dut_cpu_s,dut_peak_rss_kib";

    /// One CSV row (`label` must not contain commas or quotes; they are
    /// replaced).
    pub fn csv_row(&self, label: &str) -> String {
        let o = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.6}"));
        let u = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            label.replace([',', '"', '\n'], "_"),
            self.peers,
            self.peers_failed,
            self.updates_sent,
            self.prefixes_sent,
            self.withdrawn_sent,
            u(self.expected_prefixes),
            u(self.monitor_prefixes),
            self.converged,
            o(self.convergence_secs),
            o(self.updates_per_sec),
            o(self.prefixes_per_sec),
            o(self.send_secs),
            o(self.dut_cpu_secs),
            u(self.dut_peak_rss_kib),
        )
    }

    pub fn to_json(&self, label: &str) -> serde_json::Value {
        let errors: Vec<serde_json::Value> = self
            .errors
            .iter()
            .map(|(i, e)| {
                let who = if *i == usize::MAX {
                    serde_json::Value::from("monitor")
                } else {
                    serde_json::Value::from(*i)
                };
                serde_json::json!({ "peer": who, "error": e.to_string() })
            })
            .collect();
        serde_json::json!({
            "label": label,
            "peers": self.peers,
            "peers_failed": self.peers_failed,
            "errors": errors,
            "updates_sent": self.updates_sent,
            "prefixes_sent": self.prefixes_sent,
            "withdrawn_sent": self.withdrawn_sent,
            "skipped": self.skipped,
            "sessions_opened": self.sessions_opened,
            "send_s": self.send_secs,
            "expected_prefixes": self.expected_prefixes,
            "monitor_prefixes": self.monitor_prefixes,
            "monitor_updates": self.monitor_updates,
            "converged": self.converged,
            "convergence_s": self.convergence_secs,
            "updates_per_s": self.updates_per_sec,
            "prefixes_per_s": self.prefixes_per_sec,
            "dut_cpu_s": self.dut_cpu_secs,
            "dut_peak_rss_kib": self.dut_peak_rss_kib,
            "series": {
                "t_s": self.series.iter().map(|s| s.t).collect::<Vec<_>>(),
                "monitor_prefixes": self.series.iter().map(|s| s.monitor_prefixes).collect::<Vec<_>>(),
                "prefixes_sent": self.series.iter().map(|s| s.prefixes_sent).collect::<Vec<_>>(),
            },
        })
    }

    /// The time series as CSV.
    pub fn series_csv(&self) -> String {
        let mut o = String::from("t_s,monitor_prefixes,prefixes_sent,updates_sent\n");
        for s in &self.series {
            let _ = writeln!(
                o,
                "{:.3},{},{},{}",
                s.t, s.monitor_prefixes, s.prefixes_sent, s.updates_sent
            );
        }
        o
    }

    /// Prefixes at the monitor (and sent) over time.
    pub fn prefixes_chart(&self, title: &str) -> plot::LineChart {
        let pts = |f: fn(&Sample) -> u64| -> Vec<(f64, f64)> {
            self.series.iter().map(|s| (s.t, f(s) as f64)).collect()
        };
        let mut c = plot::LineChart::new(title, "seconds since sending began", "prefixes");
        if self.monitor_prefixes.is_some() {
            c = c.series("at the monitor", pts(|s| s.monitor_prefixes));
        }
        c.series("sent (all peers)", pts(|s| s.prefixes_sent))
    }

    /// Writes `result.json`, `result.csv`, `timeseries.csv` and
    /// `prefixes.svg` into `dir` (created if needed).
    pub fn write_dir(&self, dir: &Path, label: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(&self.to_json(label)).unwrap_or_default();
        std::fs::write(dir.join("result.json"), json + "\n")?;
        std::fs::write(
            dir.join("result.csv"),
            format!("{}\n{}\n", Self::CSV_HEADER, self.csv_row(label)),
        )?;
        std::fs::write(dir.join("timeseries.csv"), self.series_csv())?;
        std::fs::write(
            dir.join("prefixes.svg"),
            self.prefixes_chart(&format!("Prefixes over time: {label}"))
                .to_svg(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(t0: Instant, changed: Option<u64>, now: u64, eor: bool) -> TraceState {
        let ms = Duration::from_millis;
        TraceState {
            all_sent_at: Some(t0 + ms(1000)),
            changed_at: changed.map(|c| t0 + ms(c)),
            end_of_rib: eor,
            quiet: Duration::from_secs(3),
            announced: 500,
            now: t0 + ms(now),
            t0,
        }
    }

    #[test]
    fn silent_monitor_is_not_converged_at_zero() {
        let t0 = Instant::now();
        // Still within the quiet period after sending: keep waiting.
        assert_eq!(trace_end(&state(t0, None, 3500, true)), TraceEnd::Running);
        // Quiet after sending, but the monitor never saw a route.
        assert_eq!(
            trace_end(&state(t0, None, 4100, true)),
            TraceEnd::NothingReceived
        );
        // Without End-of-RIB the quiet period doubles.
        assert_eq!(trace_end(&state(t0, None, 4100, false)), TraceEnd::Running);
        assert_eq!(
            trace_end(&state(t0, None, 7100, false)),
            TraceEnd::NothingReceived
        );
        // A trace with nothing to announce has nothing to wait for.
        let mut s = state(t0, None, 4100, true);
        s.announced = 0;
        assert_eq!(trace_end(&s), TraceEnd::Converged(t0));
    }

    #[test]
    fn trace_converges_at_the_last_change_after_quiet() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(
            trace_end(&state(t0, Some(1500), 4400, true)),
            TraceEnd::Running
        );
        assert_eq!(
            trace_end(&state(t0, Some(1500), 4600, true)),
            TraceEnd::Converged(t0 + ms(1500))
        );
        // Nothing is done before every peer has sent everything.
        let mut s = state(t0, Some(1500), 60_000, true);
        s.all_sent_at = None;
        assert_eq!(trace_end(&s), TraceEnd::Running);
    }
}
