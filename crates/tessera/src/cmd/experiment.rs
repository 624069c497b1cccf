//! `tessera demo`: the seeds' experiment end to end (seed 000 §4.1, seed
//! 001 §2), on loopback and built-in defaults:
//!
//! 1. a BRITE Waxman topology of 1000 ASes, degree 10-15 (`topo`, what
//!    `tessera sim topo` makes), relationships ranked by degree;
//! 2. BGP over it (`netsim`, what `tessera sim run` runs: every AS is
//!    Tessera's RIB core, MRAI 30 s with jitter), 10,000 prefixes by default;
//! 3. the MRT BGP4MP_ET trace of what the most central 12-peer AS receives
//!    (`topo::centrality::pick`, the seeds' "center node that has 12 peer
//!    connections");
//! 4. for every pipeline mode and thread count, a fresh `tesserad` child on
//!    127.13.0.1 (an ephemeral port, no root, no namespaces), the trace
//!    replayed into it from 127.13.0.2... (one session per recorded peer,
//!    `replay::update_workload`, next hops set to the session's address),
//!    and a monitor session from 127.13.0.254 that receives the DUT's best
//!    routes (`replay::run`, as `tessera bench` measures);
//! 5. the table (convergence, prefixes/s, CPU-seconds and peak RSS of the
//!    daemon, speedup over sequential) and two SVG charts.
//!
//! Convergence is the update-trace rule of `replay::run`: every peer has
//! sent everything, and the monitor's table was then quiet for `quiet`;
//! the time is the monitor's last change. A run counts as converged only
//! when the monitor then holds exactly the trace's prefixes (the union of
//! what each peer's announcements and withdrawals leave).
//!
//! Signals: the first SIGINT/SIGTERM/SIGHUP stops the phase under way and
//! the daemon; a second kills the daemon and exits at once. The daemon runs
//! in its own process group (a terminal's Ctrl-C reaches only us, so the
//! stop is orderly) and gets SIGKILL if this process dies (PR_SET_PDEATHSIG).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base::Asn;
use mrt::{Compression, MrtWriter};
use netsim::trace::MrtTrace;
use netsim::{Scenario, Sim, SimConfig};
use replay::monitor::{MonitorConfig, MonitorMode};
use replay::mrt_updates::{update_workload, UpdateOptions};
use replay::run::{Progress, RunConfig, RunResult};
use replay::sender::{Pacing, ReplayConfig, SenderVariant};
use replay::workload::Workload;
use topo::build::{self, Finish, Kind, Spec};
use topo::flat::Degree;

/// The daemon's AS and the replay's and monitor's: 4-byte private ASNs,
/// outside what `topo` numbers ASes with.
const DUT_AS: u32 = 4_200_000_000;
const GENERATOR_AS: u32 = 4_200_000_001;
const MONITOR_AS: u32 = 4_200_000_002;
const HOLD_TIME: u16 = 240;
const DUT_ADDR: Ipv4Addr = Ipv4Addr::new(127, 13, 0, 1);
const MONITOR_ADDR: Ipv4Addr = Ipv4Addr::new(127, 13, 0, 254);
/// Peers 127.13.0.2 up to 127.13.0.253.
pub const MAX_PEERS: usize = 252;

/// The pid of the running daemon (0: none), for the second signal.
static CHILD: AtomicU32 = AtomicU32::new(0);

/// Source (and next hop) of replayed peer `i`.
fn peer_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 13, 0, 2 + i as u8)
}

fn next_hops(i: usize) -> (Ipv4Addr, Ipv6Addr) {
    (peer_addr(i), Ipv6Addr::LOCALHOST)
}

/// A pipeline mode of tesserad and its thread count (`None`: the mode has
/// no thread setting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mode {
    pub pipeline: &'static str,
    pub threads: Option<u16>,
}

impl Mode {
    fn label(&self) -> String {
        match self.threads {
            Some(t) => format!("{}-{t}", self.pipeline),
            None => self.pipeline.to_string(),
        }
    }
}

/// Expands `sequential,per-peer,worker-pool,sharded` and the thread
/// counts: modes with threads once per count, the others once.
pub fn modes(list: &str, threads: &[u16]) -> Result<Vec<Mode>, String> {
    let mut out = Vec::new();
    for m in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (pipeline, threaded) = match m {
            "sequential" => ("sequential", false),
            "per-peer" => ("per-peer", false),
            "worker-pool" => ("worker-pool", true),
            "sharded" => ("sharded", true),
            _ => {
                return Err(format!(
                    "unknown mode {m:?}: expected sequential, per-peer, worker-pool or sharded"
                ))
            }
        };
        if threaded {
            for &t in threads {
                out.push(Mode {
                    pipeline,
                    threads: Some(t),
                });
            }
        } else {
            out.push(Mode {
                pipeline,
                threads: None,
            });
        }
    }
    if out.is_empty() {
        return Err("no modes".into());
    }
    Ok(out)
}

/// Everything the experiment is run with.
#[derive(Clone, Debug)]
pub struct Options {
    pub ases: u32,
    pub min_degree: u32,
    pub max_degree: u32,
    pub prefixes: u32,
    pub vantage_degree: u32,
    pub seed: u64,
    pub mrai: Duration,
    pub modes: Vec<Mode>,
    pub out: PathBuf,
    pub tesserad: PathBuf,
    pub timeout: Duration,
    pub quiet: Duration,
    /// Repetitions of every mode (the median is reported).
    pub reps: usize,
}

/// One measured mode.
#[derive(Clone, Debug)]
pub struct Row {
    pub mode: Mode,
    pub result: Option<RunResult>,
    /// Converged, and the monitor holds the trace's prefixes.
    pub ok: bool,
    pub note: String,
    /// Convergence of every repetition, seconds.
    pub convs: Vec<f64>,
}

/// The median repetition by convergence time (the lower middle one of an
/// even count); a failed repetition, if any, instead.
fn median(mut runs: Vec<Row>) -> Row {
    if let Some(i) = runs.iter().position(|r| !r.ok) {
        return runs.swap_remove(i);
    }
    let conv = |r: &Row| {
        r.result
            .as_ref()
            .and_then(|x| x.convergence_secs)
            .unwrap_or(f64::INFINITY)
    };
    let convs: Vec<f64> = runs.iter().map(conv).collect();
    runs.sort_by(|a, b| conv(a).total_cmp(&conv(b)));
    let mut m = runs.swap_remove((runs.len() - 1) / 2);
    m.convs = convs;
    m
}

/// What the experiment found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub topology: String,
    pub vantage: String,
    pub sim: String,
    pub trace: String,
    /// Distinct prefixes the trace leaves announced.
    pub trace_prefixes: u64,
    pub rows: Vec<Row>,
    pub charts: Vec<PathBuf>,
    pub interrupted: bool,
}

/// A status line: rewritten in place on a terminal, one line per call
/// otherwise (callers then call it rarely).
pub(crate) struct Status {
    pub(crate) tty: bool,
}

impl Status {
    /// On standard error, rewritten in place when it is a terminal.
    pub(crate) fn stderr() -> Status {
        Status {
            tty: std::io::stderr().is_terminal(),
        }
    }

    pub(crate) fn line(&self, s: &str) {
        if self.tty {
            eprint!("\r\x1b[2K{s}");
        } else {
            eprintln!("{s}");
        }
        let _ = std::io::stderr().flush();
    }
    pub(crate) fn done(&self, s: &str) {
        if self.tty {
            eprint!("\r\x1b[2K");
        }
        eprintln!("{s}");
    }
}

/// Runs the whole experiment. `stop` ends it early (signals).
pub fn run(o: &Options, stop: &AtomicBool) -> Result<Report, String> {
    if !o.tesserad.exists() {
        return Err(format!(
            "{} not found (build it: cargo build -p tesserad; or pass --tesserad)",
            o.tesserad.display()
        ));
    }
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let st = Status::stderr();
    let mut rep = Report::default();

    // 1. Topology.
    let t0 = Instant::now();
    st.done(&format!(
        "[1/4] topology: BRITE Waxman, {} ASes, degree {}-{}",
        o.ases, o.min_degree, o.max_degree
    ));
    let mut b = build::generate(&Spec {
        kind: Kind::Waxman,
        nodes: o.ases,
        degree: Degree::Range {
            min: o.min_degree,
            max: o.max_degree,
        },
        seed: o.seed,
        ..Spec::default()
    })
    .map_err(|e| e.to_string())?;
    build::finish(
        &mut b,
        &Finish {
            annotate: Some(0.0),
            prefixes: Some(topo::prefixes::Counts::Total(o.prefixes)),
            seed: o.seed,
        },
    )
    .map_err(|e| e.to_string())?;
    let g = b.graph;
    let pick = topo::centrality::pick(&g, o.vantage_degree).ok_or("the topology has no nodes")?;
    rep.topology = format!(
        "{} ASes, {} links, {} IPv4 prefixes (real origin skew and lengths), made in {:.2} s",
        g.nodes.len(),
        g.links.len(),
        o.prefixes,
        t0.elapsed().as_secs_f64()
    );
    rep.vantage = format!(
        "AS{} (degree {}{}, closeness {:.4})",
        pick.asn,
        pick.degree,
        if pick.nearest {
            format!(", nearest to {} present", o.vantage_degree)
        } else {
            String::new()
        },
        pick.closeness
    );
    if pick.degree as usize > MAX_PEERS {
        return Err(format!(
            "the vantage point has {} neighbours; at most {MAX_PEERS}",
            pick.degree
        ));
    }
    st.done(&format!("      {}; vantage {}", rep.topology, rep.vantage));
    if stop.load(Relaxed) {
        rep.interrupted = true;
        return Ok(rep);
    }

    // 2-3. Simulation and trace.
    let trace_path = o.out.join("trace.mrt");
    st.done(&format!(
        "[2/4] simulating BGP (MRAI {} s), trace at AS{} -> {}",
        o.mrai.as_secs_f64(),
        pick.asn,
        trace_path.display()
    ));
    let t1 = Instant::now();
    let mut sim = Sim::new(
        &g,
        SimConfig {
            mrai: o.mrai,
            mrai_jitter: true,
            per_update: Duration::from_micros(50),
            per_prefix: Duration::from_micros(5),
            seed: o.seed,
            always_compare_med: false,
            threads: 1,
        },
    );
    let x = sim
        .node(pick.asn)
        .ok_or("vantage AS not in the simulation")?;
    sim.trace(x);
    sim.start(&Scenario::default())?;
    let w = MrtWriter::create(&trace_path, Compression::None)
        .map_err(|e| format!("{}: {e}", trace_path.display()))?;
    let mut obs = MrtTrace::new(w, sim.asns());
    let mut last = Instant::now();
    loop {
        let more = sim.run(u64::MAX, 500, &mut obs);
        if last.elapsed() >= Duration::from_millis(if st.tty { 250 } else { 5000 }) {
            last = Instant::now();
            st.line(&format!(
                "      simulated {:7.1} s, {} messages, {:.1} s wall",
                sim.now_ns() as f64 / 1e9,
                sim.messages(),
                t1.elapsed().as_secs_f64()
            ));
        }
        if !more {
            break;
        }
        if stop.load(Relaxed) {
            rep.interrupted = true;
            st.done("      interrupted");
            return Ok(rep);
        }
    }
    let records = obs.records();
    obs.finish()
        .map_err(|e| format!("{}: {e}", trace_path.display()))?;
    rep.sim = format!(
        "{:.1} s simulated, {} BGP messages, {:.1} s wall",
        sim.now_ns() as f64 / 1e9,
        sim.messages(),
        t1.elapsed().as_secs_f64()
    );
    drop(sim);
    st.done(&format!("      {}", rep.sim));

    // 4. The workload.
    let (work, sum) = update_workload(
        &trace_path,
        &UpdateOptions {
            peers: None,
            max_messages: None,
            ignore_state_changes: true,
            next_hops: Some(Arc::new(next_hops)),
        },
    )
    .map_err(|e| format!("{}: {e}", trace_path.display()))?;
    rep.trace_prefixes = work.final_prefixes();
    rep.trace = format!(
        "{records} BGP4MP_ET records, {} peers, {} UPDATEs, {} prefixes announced, {} withdrawn, {} distinct at the end",
        sum.peers.len(),
        work.total_messages(),
        work.total_prefixes(),
        work.total_withdrawn(),
        rep.trace_prefixes
    );
    if work.feeds.len() > MAX_PEERS {
        return Err(format!(
            "{} peers in the trace; at most {MAX_PEERS}",
            work.feeds.len()
        ));
    }
    st.done(&format!("      trace: {}", rep.trace));
    let work = Arc::new(work);

    // 5. Replays: every mode `reps` times, the median run kept.
    let n = o.modes.len() * o.reps;
    let mut k = 0;
    'modes: for m in &o.modes {
        let mut runs: Vec<Row> = Vec::new();
        for r in 1..=o.reps {
            if stop.load(Relaxed) {
                rep.interrupted = true;
                break 'modes;
            }
            k += 1;
            st.done(&format!(
                "[3/4] run {k}/{n}: tesserad {} rep {r}/{} ({} peers, {} UPDATEs)",
                m.label(),
                o.reps,
                work.feeds.len(),
                work.total_messages()
            ));
            let row = one_run(o, m, &work, rep.trace_prefixes, stop, &st);
            st.done(&format!("      {}", row_line(&row)));
            let failed = !row.ok;
            runs.push(row);
            if failed {
                break;
            }
        }
        rep.rows.push(median(runs));
    }
    if rep.rows.iter().any(|r| !r.ok) && stop.load(Relaxed) {
        rep.interrupted = true;
    }

    // 6. Charts.
    st.done("[4/4] charts");
    rep.charts = write_charts(&rep, &o.out)?;
    Ok(rep)
}

fn one_run(
    o: &Options,
    m: &Mode,
    work: &Arc<Workload>,
    want: u64,
    stop: &AtomicBool,
    st: &Status,
) -> Row {
    let mk = |result, ok, note: String| Row {
        mode: m.clone(),
        result,
        ok,
        note,
        convs: Vec::new(),
    };
    let dir = o.out.join(format!("tesserad-{}", m.label()));
    let mut dut = match Daemon::start(o, m, &dir, work.feeds.len()) {
        Ok(d) => d,
        Err(e) => return mk(None, false, e),
    };
    st.done(&format!(
        "      tesserad pid {} listening on {DUT_ADDR}:{}",
        dut.pid, dut.port
    ));
    let target = SocketAddr::new(IpAddr::V4(DUT_ADDR), dut.port);
    let sources = (0..work.feeds.len())
        .map(|i| IpAddr::V4(peer_addr(i)))
        .collect();
    let mut rc = ReplayConfig::new(target, Asn(DUT_AS), Asn(GENERATOR_AS), sources);
    rc.hold_time = HOLD_TIME;
    rc.connect_timeout = Duration::from_secs(10);
    rc.open_timeout = Duration::from_secs(10);
    rc.pacing = Pacing::Fast;
    rc.variant = SenderVariant::ThreadPerPeer;
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
            connect_timeout: Duration::from_secs(10),
            open_timeout: Duration::from_secs(10),
        }),
        timeout: o.timeout,
        dut_pids: vec![dut.pid],
        quiet: o.quiet,
        monitor_wait: Duration::from_secs(10),
        // Replays of the default trace take tens of milliseconds.
        sample_every: Duration::from_millis(2),
        ..RunConfig::default()
    };
    let mut pr = |p: &Progress| {
        if st.tty {
            st.line(&format!("      {}", p.line()));
        }
    };
    let res = replay::run::run(&rc, work.clone(), &rcfg, stop, &mut pr);
    let alive = dut.alive();
    let tail = dut.log_tail();
    dut.stop();
    match res {
        Err(e) => mk(None, false, format!("{e}; log: {tail}")),
        Ok(r) => {
            let got = r.monitor_prefixes.unwrap_or(0);
            let note = if !alive {
                format!("tesserad exited: {tail}")
            } else if !r.converged {
                r.not_converged.unwrap_or("not converged").to_string()
            } else if got != want {
                format!("monitor holds {got} prefixes, the trace {want}")
            } else if let Some((_, e)) = r.errors.first() {
                format!("session error: {e}")
            } else {
                String::new()
            };
            let ok = note.is_empty();
            mk(Some(r), ok, note)
        }
    }
}

fn row_line(r: &Row) -> String {
    match &r.result {
        Some(x) if r.ok => format!(
            "{}: converged in {:.3} s, {} prefixes at the monitor",
            r.mode.label(),
            x.convergence_secs.unwrap_or(0.0),
            x.monitor_prefixes.unwrap_or(0)
        ),
        _ => format!("{}: FAILED: {}", r.mode.label(), r.note),
    }
}

/// The table `tessera demo` prints.
pub fn table(rep: &Report) -> String {
    let mut s = String::new();
    let seq = rep
        .rows
        .iter()
        .find(|r| r.ok && r.mode.pipeline == "sequential")
        .and_then(|r| r.result.as_ref()?.convergence_secs);
    let _ = writeln!(
        s,
        "{:<12} {:>7} {:>9} {:>10} {:>15} {:>12} {:>7} {:>9} {:>8}",
        "mode",
        "threads",
        "prefixes",
        "conv (s)",
        "conv range (s)",
        "prefixes/s",
        "CPU-s",
        "RSS MiB",
        "speedup"
    );
    for r in &rep.rows {
        let th = r.mode.threads.map_or("-".into(), |t| t.to_string());
        match (&r.result, r.ok) {
            (Some(x), true) => {
                let c = x.convergence_secs.unwrap_or(0.0);
                let _ = writeln!(
                    s,
                    "{:<12} {:>7} {:>9} {:>10.3} {:>15} {:>12.0} {:>7} {:>9} {:>8}",
                    r.mode.pipeline,
                    th,
                    x.monitor_prefixes.unwrap_or(0),
                    c,
                    range(&r.convs),
                    x.prefixes_per_sec.unwrap_or(0.0),
                    x.dut_cpu_secs.map_or("-".into(), |v| format!("{v:.2}")),
                    x.dut_peak_rss_kib
                        .map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0)),
                    seq.filter(|_| c > 0.0)
                        .map_or("-".into(), |q| format!("{:.2}x", q / c)),
                );
            }
            _ => {
                let _ = writeln!(s, "{:<12} {:>7} FAILED: {}", r.mode.pipeline, th, r.note);
            }
        }
    }
    s
}

/// `min-max` of the repetitions' convergence times.
fn range(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() && hi.is_finite() {
        format!("{lo:.3}-{hi:.3}")
    } else {
        "-".into()
    }
}

fn write_charts(rep: &Report, out: &Path) -> Result<Vec<PathBuf>, String> {
    let ok: Vec<&Row> = rep.rows.iter().filter(|r| r.ok).collect();
    let seq = ok
        .iter()
        .find(|r| r.mode.pipeline == "sequential")
        .and_then(|r| r.result.as_ref()?.convergence_secs);
    let labels: Vec<String> = ok.iter().map(|r| r.mode.label()).collect();
    let cats: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut bar = plot::BarChart::new(
        &format!(
            "tessera demo: speedup over sequential ({} prefixes, trace at {})",
            rep.trace_prefixes, rep.vantage
        ),
        "speedup (sequential convergence / convergence)",
        &cats,
    );
    bar = bar.series(
        "speedup",
        ok.iter()
            .map(|r| {
                let c = r
                    .result
                    .as_ref()
                    .and_then(|x| x.convergence_secs)
                    .unwrap_or(0.0);
                match seq {
                    Some(q) if c > 0.0 => q / c,
                    _ => f64::NAN,
                }
            })
            .collect(),
    );
    let mut line = plot::LineChart::new(
        "tessera demo: prefixes at the monitor over time",
        "seconds since every session was up",
        "prefixes at the monitor",
    );
    // Up to a little past the slowest convergence: after it the lines are
    // flat for the quiet period.
    let tmax = rep
        .rows
        .iter()
        .filter_map(|r| r.result.as_ref()?.convergence_secs)
        .fold(0.0f64, f64::max);
    let tmax = if tmax > 0.0 {
        tmax * 1.25
    } else {
        f64::INFINITY
    };
    for r in &rep.rows {
        if let Some(x) = &r.result {
            line = line.series(
                &r.mode.label(),
                x.series
                    .iter()
                    .filter(|s| s.t >= 0.0 && s.t <= tmax)
                    .map(|s| (s.t, s.monitor_prefixes as f64))
                    .collect(),
            );
        }
    }
    let mut files = Vec::new();
    for (name, svg) in [
        ("speedup.svg", bar.to_svg()),
        ("prefixes.svg", line.to_svg()),
    ] {
        let p = out.join(name);
        std::fs::write(&p, svg).map_err(|e| format!("{}: {e}", p.display()))?;
        files.push(p);
    }
    Ok(files)
}

/// A tesserad child; stopped (and waited for) on drop.
struct Daemon {
    child: Child,
    pid: u32,
    port: u16,
    log: PathBuf,
}

impl Daemon {
    fn start(o: &Options, m: &Mode, dir: &Path, peers: usize) -> Result<Daemon, String> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let port = free_port()?;
        let conf = dir.join("tesserad.toml");
        std::fs::write(&conf, config(m, dir, port, peers))
            .map_err(|e| format!("{}: {e}", conf.display()))?;
        let log = dir.join("tesserad.log");
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&o.tesserad);
        cmd.arg("-c")
            .arg(&conf)
            .args(["--log", "warn"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        {
            use std::os::unix::process::CommandExt;
            // Its own process group: a terminal's Ctrl-C reaches only us,
            // and we stop the daemon in order.
            cmd.process_group(0);
            // SAFETY: prctl(2) is async-signal-safe and touches no memory
            // of the parent; it is all the closure does.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("{}: {e}", o.tesserad.display()))?;
        let pid = child.id();
        CHILD.store(pid, Relaxed);
        let mut d = Daemon {
            child,
            pid,
            port,
            log,
        };
        let t0 = Instant::now();
        loop {
            if !d.alive() {
                return Err(format!("tesserad exited: {}", d.log_tail()));
            }
            if listening(DUT_ADDR, port) {
                return Ok(d);
            }
            if t0.elapsed() > Duration::from_secs(20) {
                return Err(format!(
                    "tesserad not listening on {DUT_ADDR}:{port} after 20 s: {}",
                    d.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }

    /// SIGTERM, then SIGKILL after 5 s; always reaped.
    fn stop(&mut self) {
        if self.alive() {
            // SAFETY: kill(2) has no memory preconditions.
            unsafe {
                libc::kill(self.pid as i32, libc::SIGTERM);
            }
            let t0 = Instant::now();
            while self.alive() && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = CHILD.compare_exchange(self.pid, 0, Relaxed, Relaxed);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Kills the running daemon, if any (the second signal's cleanup).
pub fn kill_child() {
    let pid = CHILD.swap(0, Relaxed);
    if pid != 0 {
        // SAFETY: kill(2) has no memory preconditions.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
}

/// A port free on the DUT's address now (the kernel's choice).
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind(SocketAddr::new(IpAddr::V4(DUT_ADDR), 0))
        .map_err(|e| format!("bind {DUT_ADDR}: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Whether something listens on `ip:port` (/proc/net/tcp, state 0A).
fn listening(ip: Ipv4Addr, port: u16) -> bool {
    let want = format!("{:08X}:{port:04X}", u32::from_le_bytes(ip.octets()));
    std::fs::read_to_string("/proc/net/tcp").is_ok_and(|t| {
        t.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1) == Some(&want.as_str()) && f.get(3) == Some(&"0A")
        })
    })
}

fn config(m: &Mode, dir: &Path, port: u16, peers: usize) -> String {
    let mut s = format!(
        "# generated by tessera demo (schema: docs/config.md)\n[router]\nid = \"{DUT_ADDR}\"\n\
         asn = {DUT_AS}\nlisten = [\"{DUT_ADDR}:{port}\"]\nhold_time = {HOLD_TIME}\n\
         pipeline = \"{}\"\n",
        m.pipeline
    );
    if let Some(t) = m.threads {
        let _ = writeln!(s, "threads = {t}");
    }
    let _ = write!(s, "\n[control]\nsocket = \"{}/ctl.sock\"\n", dir.display());
    for i in 0..peers {
        let _ = write!(
            s,
            "\n[[neighbor]]\nname = \"g{i}\"\naddress = \"{}\"\nremote_as = {GENERATOR_AS}\n\
             passive = true\nfamilies = [\"ipv4-unicast\", \"ipv6-unicast\"]\nimport = \"accept\"\nexport = \"reject\"\n",
            peer_addr(i)
        );
    }
    let _ = write!(
        s,
        "\n[[neighbor]]\nname = \"monitor\"\naddress = \"{MONITOR_ADDR}\"\nremote_as = {MONITOR_AS}\n\
         passive = true\nfamilies = [\"ipv4-unicast\", \"ipv6-unicast\"]\nimport = \"reject\"\nexport = \"accept\"\n"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_expand_threads_only_where_a_mode_has_them() {
        let m = modes("sequential,per-peer,worker-pool,sharded", &[1, 2]).unwrap();
        let l: Vec<String> = m.iter().map(Mode::label).collect();
        assert_eq!(
            l,
            [
                "sequential",
                "per-peer",
                "worker-pool-1",
                "worker-pool-2",
                "sharded-1",
                "sharded-2"
            ]
        );
        assert!(modes("fastest", &[1]).is_err());
        assert!(modes("", &[1]).is_err());
    }

    #[test]
    fn listen_check_formats_the_address_as_the_kernel() {
        // 127.13.0.1 is 01000D7F in /proc/net/tcp (little-endian).
        let want = format!(
            "{:08X}:{:04X}",
            u32::from_le_bytes(DUT_ADDR.octets()),
            179u16
        );
        assert_eq!(want, "01000D7F:00B3");
    }
}
