//! One call of [`run`]: the topology, then for every case the generator
//! ceiling and every DUT's repetitions.

use crate::churn;
use crate::cpus;
use crate::daemons::{self, generator_as, DutEnv, DutSpec, DUT_AS, HOLD_TIME, MONITOR_AS};
use crate::error::BenchError;
use crate::netns::{self, in_netns, peer_addr, Topology, DUT_ADDR, MONITOR_ADDR};
use crate::report;
use crate::results::{BenchReport, Measurement, Status, CEILING};
use crate::scenario::{self, Case, Scenario};

use base::Asn;
use replay::monitor::{MonitorConfig, MonitorMode};
use replay::run::{Progress, RunConfig};
use replay::sender::{Pacing, ReplayConfig, SenderVariant};
use replay::sink::{Sink, SinkConfig};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Everything `tessera bench` was asked for.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    pub scenarios: Vec<Scenario>,
    pub duts: Vec<DutSpec>,
    pub reps: usize,
    pub scale: f64,
    pub out: PathBuf,
    pub tesserad: PathBuf,
    /// Bound on each run from the start of sending.
    pub timeout: Duration,
    pub ceiling: bool,
    pub mrt_dir: PathBuf,
    pub seed: u64,
    /// Namespace name prefix (default `tb<pid>`).
    pub name: String,
    /// `--export all`: the DUT exports to every peer, generators included
    /// ([`DutEnv::export_all`]); case names get the suffix `-export-all`.
    pub export_all: bool,
    /// Scenario (h): UPDATEs per second of the looped trace.
    pub rate: f64,
    /// Scenario (h): how long the trace is looped.
    pub duration: Duration,
    /// `--dut-cpus`: every DUT on these CPUs, the bench with its
    /// generator and monitor on the others ([`crate::cpus`]); `None`:
    /// everything shares every CPU.
    pub dut_cpus: Option<Vec<usize>>,
}

/// Runs the benchmark. `say` gets the status lines (one a second while a
/// run is under way). `stop` ends it early (Ctrl-C).
pub fn run(
    cfg: &BenchConfig,
    stop: &AtomicBool,
    say: &mut (dyn FnMut(&str) + Send),
) -> Result<BenchReport, (BenchError, String)> {
    netns::check_privileges().map_err(|e| (BenchError::Netns, e))?;
    for d in &cfg.duts {
        let bin = d.binary(&cfg.tesserad);
        if !bin.exists() {
            return Err((
                BenchError::DutStart,
                format!("{}: {} not found", d.label(), bin.display()),
            ));
        }
    }
    let mut rep = BenchReport {
        duts: cfg.duts.iter().map(DutSpec::label).collect(),
        versions: cfg
            .duts
            .iter()
            .map(|d| (d.label(), d.version(&cfg.tesserad)))
            .collect(),
        started: now_utc(),
        scale: cfg.scale,
        reps: cfg.reps,
        ..BenchReport::default()
    };
    // The DUT on its own CPUs, this process (generator, monitor) on the
    // rest, until the end (every way out: the guard).
    let placement = match &cfg.dut_cpus {
        Some(c) => Some(PlacementGuard(
            cpus::Placement::apply(c).map_err(|e| (BenchError::Placement, e))?,
        )),
        None => None,
    };
    rep.placement = placement.as_ref().map(|p| p.0.describe());
    if let Some(p) = &rep.placement {
        say(p);
    }
    let work = std::env::temp_dir().join(format!("{}-work", cfg.name));
    // Removed on every way out, errors included (the `?`s below).
    let _work_guard = RemoveOnDrop(work.clone());
    for s in &cfg.scenarios {
        if stop.load(Relaxed) {
            break;
        }
        if let Scenario::Churn { monitors } = s {
            run_churn(cfg, *monitors, &work, stop, say, &mut rep)?;
            report::write_all(&rep, &cfg.out).map_err(|e| (BenchError::Output, e))?;
            continue;
        }
        let t0 = Instant::now();
        say(&format!("building workload {s:?} (scale {})", cfg.scale));
        let mut cases = scenario::cases(s, cfg.scale, cfg.seed, &cfg.mrt_dir, cfg.export_all)
            .map_err(|e| (BenchError::Workload, e))?;
        if cfg.export_all {
            for c in &mut cases {
                c.name.push_str("-export-all");
                c.about
                    .push_str("; the DUT exports to every peer, generators included");
            }
        }
        say(&format!(
            "built {} case(s) in {:.1} s",
            cases.len(),
            t0.elapsed().as_secs_f64()
        ));
        for case in &cases {
            if stop.load(Relaxed) {
                break;
            }
            rep.cases.push((case.name.clone(), case.about.clone()));
            // The monitor, and with --export all every generator peer
            // (scenario g: every client).
            let exporting = match case.route_server {
                _ if cfg.export_all => case.peers() + 1,
                Some(f) => case.peers() - f + 1,
                None => 1,
            };
            rep.exporting_peers.push((case.name.clone(), exporting));
            if let Some(p) = case.paths {
                rep.paths.push((case.name.clone(), p));
            }
            run_case(cfg, case, &work, stop, say, &mut rep.runs)?;
            // Partial results survive a later crash or Ctrl-C.
            report::write_all(&rep, &cfg.out).map_err(|e| (BenchError::Output, e))?;
        }
    }
    report::write_all(&rep, &cfg.out).map_err(|e| (BenchError::Output, e))?;
    Ok(rep)
}

/// Gives the bench process its CPUs back when dropped.
struct PlacementGuard(cpus::Placement);

impl Drop for PlacementGuard {
    fn drop(&mut self) {
        self.0.restore();
    }
}

/// Removes a run's work directory when dropped.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_case(
    cfg: &BenchConfig,
    case: &Case,
    work: &std::path::Path,
    stop: &AtomicBool,
    say: &mut (dyn FnMut(&str) + Send),
    runs: &mut Vec<Measurement>,
) -> Result<(), (BenchError, String)> {
    say(&format!("case {}: {}", case.name, case.about));
    let topo = Topology::create(&cfg.name, case.peers())?;
    if cfg.ceiling {
        for r in 1..=cfg.reps {
            if stop.load(Relaxed) {
                return Ok(());
            }
            let m = ceiling(cfg, case, &topo, r, stop, say);
            say(&summary_line(&m));
            runs.push(m);
        }
    }
    for d in &cfg.duts {
        for r in 1..=cfg.reps {
            if stop.load(Relaxed) {
                return Ok(());
            }
            let m = one_dut_run(cfg, case, d, &topo, work, r, stop, say);
            say(&summary_line(&m));
            let unsupported = matches!(m.status, Status::NotSupported(_));
            runs.push(m);
            if unsupported {
                break;
            }
        }
    }
    Ok(())
}

fn summary_line(m: &Measurement) -> String {
    let r = m.result.as_ref();
    let f = |v: Option<f64>, unit: &str| v.map_or("-".into(), |x| format!("{x:.2}{unit}"));
    format!(
        "== {} {} rep {}: {} conv {} cpu {} rss {} generators read {} msgs {}",
        m.case,
        m.dut,
        m.rep,
        m.status.word(),
        f(r.and_then(|r| r.convergence_secs), " s"),
        f(r.and_then(|r| r.dut_cpu_secs), " s"),
        f(
            r.and_then(|r| r.dut_peak_rss_kib)
                .map(|k| k as f64 / 1024.0),
            " MiB"
        ),
        r.map_or(0, |r| r.messages_received),
        m.status.detail()
    )
}

/// Whether every generator peer has its own AS: `--export all`, and the
/// route server's feeders and clients (scenario g).
fn distinct_as(cfg: &BenchConfig, case: &Case) -> bool {
    cfg.export_all || case.route_server.is_some()
}

/// The generators' sessions; with `distinct_as` (`--export all`) each in
/// its own AS, as the DUT configs declare them ([`generator_as`]).
fn replay_config(case: &Case, target: SocketAddr, distinct_as: bool) -> ReplayConfig {
    let sources: Vec<IpAddr> = (0..case.peers())
        .filter_map(peer_addr)
        .map(IpAddr::V4)
        .collect();
    let mut rc = ReplayConfig::new(
        target,
        Asn(DUT_AS),
        Asn(generator_as(0, distinct_as)),
        sources,
    );
    rc.session_as = (0..case.peers())
        .map(|i| Asn(generator_as(i, distinct_as)))
        .collect();
    rc.hold_time = HOLD_TIME;
    rc.connect_timeout = Duration::from_secs(30);
    rc.open_timeout = Duration::from_secs(30);
    rc.mix = case.mix;
    rc.pacing = Pacing::Fast;
    // The traffic mixes are defined for one sender thread per peer
    // (a mix limits how many send at once).
    rc.variant = SenderVariant::ThreadPerPeer;
    rc
}

fn progress_printer<'a>(
    tag: &'a str,
    say: &'a mut (dyn FnMut(&str) + Send),
) -> impl FnMut(&Progress) + Send + 'a {
    move |p: &Progress| say(&format!("[{tag}] {}", p.line()))
}

/// The generator alone: the same replay into a counting sink listening at
/// the DUT's address. Convergence is the sink's first UPDATE to its last
/// End-of-RIB.
fn ceiling(
    cfg: &BenchConfig,
    case: &Case,
    topo: &Topology,
    rep: usize,
    stop: &AtomicBool,
    say: &mut (dyn FnMut(&str) + Send),
) -> Measurement {
    let mk = |status, result| Measurement {
        case: case.name.clone(),
        dut: CEILING.into(),
        rep,
        status,
        result,
        baseline_rss_kib: None,
        churn: None,
    };
    let target = SocketAddr::new(IpAddr::V4(DUT_ADDR), 179);
    let sink = in_netns(&topo.dut_ns, || {
        Sink::start(SinkConfig {
            listen: target,
            local_as: Asn(DUT_AS),
            bgp_id: DUT_ADDR,
            hold_time: HOLD_TIME,
            open_timeout: Duration::from_secs(30),
        })
    });
    let sink = match sink {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return mk(Status::Failed(BenchError::Replay, e.to_string()), None),
        Err(e) => return mk(Status::Failed(BenchError::Netns, e), None),
    };
    let rc = replay_config(case, target, distinct_as(cfg, case));
    let rcfg = RunConfig {
        timeout: cfg.timeout,
        ..RunConfig::default()
    };
    let tag = format!("{} {CEILING} {rep}", case.name);
    let w = case.workload.clone();
    let mut pr = progress_printer(&tag, say);
    let res = in_netns(&topo.peers_ns, || {
        replay::run::run(&rc, w, &rcfg, stop, &mut pr)
    });
    let mut result = match res {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return mk(Status::Failed(BenchError::Replay, e.to_string()), None),
        Err(e) => return mk(Status::Failed(BenchError::Netns, e), None),
    };
    let want_eor = case.peers() as u64;
    sink.wait_end_of_rib(want_eor, Duration::from_secs(30));
    let snap = sink.stats().snapshot();
    let window = sink
        .stats()
        .receive_window()
        .map(|(a, b)| b.saturating_duration_since(a).as_secs_f64());
    // From the sink's first UPDATE to its last End-of-RIB, but never less
    // than the generator took to write it all.
    let window = window.map(|w| w.max(result.send_secs.unwrap_or(0.0)));
    let ok = snap.end_of_rib >= want_eor && snap.prefixes >= result.prefixes_sent;
    result.monitor_prefixes = Some(snap.prefixes);
    result.monitor_updates = Some(snap.updates);
    result.expected_prefixes = Some(result.prefixes_sent);
    result.converged = ok && window.is_some();
    result.convergence_secs = window.filter(|_| ok);
    result.updates_per_sec = result
        .convergence_secs
        .map(|c| result.updates_sent as f64 / c.max(1e-6));
    result.prefixes_per_sec = result
        .convergence_secs
        .map(|c| result.prefixes_sent as f64 / c.max(1e-6));
    let status = if result.converged {
        result.not_converged = None;
        Status::Converged
    } else {
        let why = format!(
            "sink got {} of {} prefixes, {} of {want_eor} End-of-RIB",
            snap.prefixes, result.prefixes_sent, snap.end_of_rib
        );
        result.not_converged = Some("sink incomplete");
        Status::NotConverged(why)
    };
    mk(status, Some(result))
}

#[allow(clippy::too_many_arguments)]
fn one_dut_run(
    cfg: &BenchConfig,
    case: &Case,
    d: &DutSpec,
    topo: &Topology,
    work: &std::path::Path,
    rep: usize,
    stop: &AtomicBool,
    say: &mut (dyn FnMut(&str) + Send),
) -> Measurement {
    let label = d.label();
    let mk = |status, result| Measurement {
        case: case.name.clone(),
        dut: label.clone(),
        rep,
        status,
        result,
        baseline_rss_kib: None,
        churn: None,
    };
    let dir = work.join(format!("{}-{}-{rep}", case.name, label));
    let _ = std::fs::remove_dir_all(&dir);
    let env = DutEnv {
        ns: &topo.dut_ns,
        dir: &dir,
        peers: case.peers(),
        tesserad: &cfg.tesserad,
        foreign_next_hops: case.foreign_next_hops,
        export_all: cfg.export_all,
        route_server: case.route_server,
        cpus: cfg.dut_cpus.as_deref(),
    };
    let mut dut = match daemons::start(d, &env) {
        Ok(x) => x,
        Err((BenchError::Unsupported, s)) => return mk(Status::NotSupported(s), None),
        Err((e, s)) => return mk(Status::Failed(e, s), None),
    };
    // The idle daemon, before any session: the baseline of bytes/path.
    let baseline = idle_rss_kib(dut.pid);
    let target = SocketAddr::new(IpAddr::V4(DUT_ADDR), 179);
    let rc = replay_config(case, target, distinct_as(cfg, case));
    let rcfg = RunConfig {
        monitor: Some(MonitorConfig {
            mode: MonitorMode::Connect {
                target,
                source: Some(IpAddr::V4(MONITOR_ADDR)),
            },
            local_as: Asn(MONITOR_AS),
            peer_as: Some(Asn(DUT_AS)),
            bgp_id: MONITOR_ADDR,
            hold_time: HOLD_TIME,
            connect_timeout: Duration::from_secs(30),
            open_timeout: Duration::from_secs(30),
        }),
        timeout: cfg.timeout,
        dut_pids: vec![dut.pid],
        quiet: Duration::from_secs(3),
        // --export all: the DUT's cost includes what it sends the
        // generators, which may go on after the monitor has its table
        // (FRR: seconds after).
        // Scenario (g): likewise what the route server sends its clients.
        settle_received: cfg.export_all || case.route_server.is_some(),
        ..RunConfig::default()
    };
    let tag = format!("{} {label} {rep}", case.name);
    let w = case.workload.clone();
    let mut pr = progress_printer(&tag, say);
    let res = in_netns(&topo.peers_ns, || {
        replay::run::run(&rc, w, &rcfg, stop, &mut pr)
    });
    let alive = dut.alive();
    let tail = dut.log_tail();
    dut.stop();
    let r = match res {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let kind = if alive {
                BenchError::Replay
            } else {
                BenchError::DutExited
            };
            return mk(Status::Failed(kind, format!("{e}; log: {tail}")), None);
        }
        Err(e) => return mk(Status::Failed(BenchError::Netns, e), None),
    };
    let status = if r.converged {
        Status::Converged
    } else if !alive {
        Status::Failed(BenchError::DutExited, tail)
    } else if let Some((_, e)) = r.errors.first() {
        Status::Failed(BenchError::Replay, format!("{e}; log: {tail}"))
    } else {
        Status::NotConverged(r.not_converged.unwrap_or("unknown").to_string())
    };
    let mut m = mk(status, Some(r));
    m.baseline_rss_kib = baseline;
    m
}

/// The resident set of a just-started DUT (process tree), after a short
/// settle so that start-up allocations are in.
fn idle_rss_kib(pid: u32) -> Option<u64> {
    std::thread::sleep(Duration::from_millis(300));
    replay::dut::sample(&[pid]).map(|s| s.rss_kib)
}

/// Scenario (h) for every DUT and repetition ([`churn`]).
fn run_churn(
    cfg: &BenchConfig,
    monitors: usize,
    work: &std::path::Path,
    stop: &AtomicBool,
    say: &mut (dyn FnMut(&str) + Send),
    rep: &mut BenchReport,
) -> Result<(), (BenchError, String)> {
    let t0 = Instant::now();
    say(&format!(
        "building the churn workload (scale {})",
        cfg.scale
    ));
    let (nh, nh6) = churn::generator_next_hops();
    let gp = replay::FeedParams {
        next_hop6: Some(nh6),
        ..replay::FeedParams::ebgp(Asn(generator_as(0, true)), nh)
    };
    let w = churn::build(&cfg.mrt_dir, cfg.scale, gp).map_err(|e| (BenchError::Workload, e))?;
    say(&format!(
        "built in {:.1} s: {}",
        t0.elapsed().as_secs_f64(),
        w.about
    ));
    let mut name = format!(
        "h-churn-{}ups-{}s-{monitors}mon",
        cfg.rate,
        cfg.duration.as_secs()
    );
    if cfg.scale != 1.0 {
        name.push_str(&format!("-scale{}", cfg.scale));
    }
    rep.cases.push((
        name.clone(),
        format!(
            "{}, at {} UPDATEs/s for {} s, {monitors} monitor peers",
            w.about,
            cfg.rate,
            cfg.duration.as_secs()
        ),
    ));
    rep.exporting_peers.push((name.clone(), monitors + 1));
    let params = churn::ChurnParams {
        rate: cfg.rate,
        duration: cfg.duration,
        monitors,
        table_timeout: cfg.timeout,
    };
    let topo = Topology::create(&cfg.name, monitors + 1)?;
    for d in &cfg.duts {
        for r in 1..=cfg.reps {
            if stop.load(Relaxed) {
                return Ok(());
            }
            let m = churn_run(cfg, &name, &w, &params, d, &topo, work, r, stop);
            say(&churn_line(&m));
            let unsupported = matches!(m.status, Status::NotSupported(_));
            rep.runs.push(m);
            if unsupported {
                break;
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn churn_run(
    cfg: &BenchConfig,
    case: &str,
    w: &churn::ChurnWorkload,
    params: &churn::ChurnParams,
    d: &DutSpec,
    topo: &Topology,
    work: &std::path::Path,
    rep: usize,
    stop: &AtomicBool,
) -> Measurement {
    let label = d.label();
    let mut m = Measurement {
        case: case.to_string(),
        dut: label.clone(),
        rep,
        status: Status::Converged,
        result: None,
        baseline_rss_kib: None,
        churn: None,
    };
    let dir = work.join(format!("{case}-{label}-{rep}"));
    let _ = std::fs::remove_dir_all(&dir);
    let env = DutEnv {
        ns: &topo.dut_ns,
        dir: &dir,
        peers: params.monitors + 1,
        tesserad: &cfg.tesserad,
        foreign_next_hops: false,
        export_all: true,
        route_server: None,
        cpus: cfg.dut_cpus.as_deref(),
    };
    let mut dut = match daemons::start(d, &env) {
        Ok(x) => x,
        Err((BenchError::Unsupported, s)) => {
            m.status = Status::NotSupported(s);
            return m;
        }
        Err((e, s)) => {
            m.status = Status::Failed(e, s);
            return m;
        }
    };
    m.baseline_rss_kib = idle_rss_kib(dut.pid);
    let pid = dut.pid;
    let res = in_netns(&topo.peers_ns, || churn::run(w, params, pid, stop));
    let alive = dut.alive();
    let tail = dut.log_tail();
    dut.stop();
    match res {
        Ok(Ok(c)) => {
            m.result = Some(replay::run::RunResult {
                converged: c.table_secs.is_some(),
                convergence_secs: c.table_secs,
                dut_cpu_secs: c.dut_cpu_secs,
                dut_peak_rss_kib: c.dut_peak_rss_kib,
                monitor_prefixes: Some(c.table_prefixes),
                expected_prefixes: Some(c.table_prefixes),
                updates_sent: c.updates_sent,
                ..Default::default()
            });
            if c.samples == 0 {
                m.status = Status::NotConverged("no churn UPDATE reached a monitor".into());
            } else if !alive {
                m.status = Status::Failed(BenchError::DutExited, tail);
            }
            m.churn = Some(c);
        }
        Ok(Err(e)) => {
            let kind = if alive {
                BenchError::Replay
            } else {
                BenchError::DutExited
            };
            m.status = Status::Failed(kind, format!("{e}; log: {tail}"));
        }
        Err(e) => m.status = Status::Failed(BenchError::Netns, e),
    }
    m
}

fn churn_line(m: &Measurement) -> String {
    let f = |v: Option<f64>, unit: &str| v.map_or("-".into(), |x| format!("{x:.2}{unit}"));
    match &m.churn {
        Some(c) => format!(
            "== {} {} rep {}: {} table {} p50 {} p99 {} max {} samples {} sent {} max gap {:.2} s \
             (keepalive {}) late {} cpu {} rss {} {}",
            m.case,
            m.dut,
            m.rep,
            m.status.word(),
            f(c.table_secs, " s"),
            f(c.p50_ms, " ms"),
            f(c.p99_ms, " ms"),
            f(c.max_ms, " ms"),
            c.samples,
            c.updates_sent,
            c.max_gap_s,
            f(c.keepalive_s, " s"),
            c.late_gaps,
            f(c.dut_cpu_secs, " s"),
            f(c.dut_peak_rss_kib.map(|k| k as f64 / 1024.0), " MiB"),
            m.status.detail()
        ),
        None => summary_line(m),
    }
}

/// Current UTC time, ISO 8601, without a date crate.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = base::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_date_is_well_formed() {
        let s = now_utc();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'), "{s}");
    }
}
