//! `tessera replay`: real BGP sessions into a device under test, fed from
//! MRT files (`--mrt`: RIB dumps and update traces, one session per
//! recorded peer) or a synthetic table (see the `replay` crate), with a
//! progress line, an optional monitor session that measures convergence
//! at the DUT, and the per-second report and summary as CSV or JSON; or
//! `--sink`, a listener that counts what a replay sends it.
//!
//! Wiring only: reading is `replay::mrt_input`, the run and its
//! measurements `replay::run` (what `tessera bench` and `tessera demo`
//! use).

use super::experiment::Status;
use super::CmdResult;
use base::Asn;
use replay::mrt_input::{self, FileSummary, InputOptions, ParamsFn};
use replay::{
    FeedParams, Mix, MonitorConfig, MonitorMode, Order, Pacing, Progress, ReplayConfig, RunConfig,
    RunResult, SenderVariant, Sharing, Sink, SinkConfig, SyntheticSpec, Workload,
};
use std::fmt::Write as _;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// MRT input, repeatable: RIB dumps (TABLE_DUMP_V2, TABLE_DUMP) and
    /// update traces (BGP4MP, BGP4MP_ET, e.g. `tessera sim run --mrt`),
    /// .gz/.bz2 or plain; one session per recorded peer; several files are
    /// played one after the other.
    #[arg(long, value_name = "FILE", conflicts_with = "synthetic")]
    mrt: Vec<PathBuf>,
    /// Synthetic workload: PEERSxPREFIXES, e.g. 10x100000.
    #[arg(long, value_name = "PEERSxPREFIXES", required_unless_present_any = ["sink", "mrt"])]
    synthetic: Option<String>,
    /// Every peer announces the same prefixes (best path competes); default.
    #[arg(long, conflicts_with = "unique")]
    shared: bool,
    /// Peers announce disjoint prefixes.
    #[arg(long)]
    unique: bool,
    /// MRT: recorded peers to replay, by index within each file
    /// (PEER_INDEX_TABLE order, else first seen), comma-separated.
    #[arg(long, value_name = "I,J,...", value_delimiter = ',', requires = "mrt")]
    peers: Option<Vec<usize>>,
    /// MRT: read at most this many UPDATEs of each update trace.
    #[arg(long, value_name = "N", requires = "mrt")]
    max_messages: Option<u64>,
    /// MRT: read at most this many prefixes of each RIB dump.
    #[arg(long, value_name = "N", requires = "mrt")]
    max_prefixes: Option<u64>,
    /// MRT: ignore STATE_CHANGE records (by default a recorded session
    /// going down closes ours, so the DUT flushes its routes).
    #[arg(long, requires = "mrt")]
    keep_sessions_up: bool,
    /// MRT: keep the recorded next hops of update traces (by default each
    /// is set to the session's own address, which the DUT can reach).
    #[arg(long, requires = "mrt")]
    keep_next_hops: bool,
    /// The DUT: ADDR or ADDR:PORT (port 179 by default).
    #[arg(long, value_name = "ADDR[:PORT]", required_unless_present = "sink")]
    target: Option<String>,
    /// The DUT's AS (checked against its OPEN).
    #[arg(long, value_name = "N", required_unless_present = "sink")]
    target_as: Option<u32>,
    /// Our AS, for every peer (see --local-as-step); equal to --target-as
    /// means iBGP. The sink's AS with --sink.
    #[arg(long, value_name = "N", required_unless_present = "peer_as")]
    local_as: Option<u32>,
    /// Peer i speaks as --local-as + i * N instead of --local-as (distinct
    /// neighbour ASes: a DUT then exports to each generator the routes the
    /// others sent, which it does not send back into the AS they came from).
    #[arg(long, value_name = "N", requires = "local_as", conflicts_with = "sink")]
    local_as_step: Option<u32>,
    /// MRT: `recorded`: each session speaks as its recorded peer's AS (one
    /// session per recorded (address, AS)) and recorded AS paths are sent
    /// as recorded, not prepended; the DUT needs one neighbour per recorded
    /// AS, and its first-AS check can stay on.
    #[arg(long, value_name = "recorded", value_parser = ["recorded"], requires = "mrt", conflicts_with = "local_as")]
    peer_as: Option<String>,
    /// Source address of the first peer; peer i uses base + i.
    #[arg(long, default_value = "127.0.0.2")]
    source_base: IpAddr,
    /// Proposed hold time, seconds (0 or >= 3).
    #[arg(long, default_value_t = 90)]
    hold: u16,
    /// Once converged (sink: received --expect-eor End-of-RIBs), keep the
    /// sessions up this many seconds, then close and exit. Without it,
    /// run until Ctrl-C.
    #[arg(long, value_name = "SECS")]
    hold_after: Option<u64>,
    /// thread-per-peer (default), trace-order or round-robin[:N].
    #[arg(long, default_value = "thread-per-peer")]
    variant: String,
    /// Traffic mix of seed 000 Table 4.3: best, normal (= mix1), mix2 (4
    /// peers send at a time), mix3 (2), worst (1).
    #[arg(long, default_value = "normal")]
    mix: String,
    /// Pacing: fast (as fast as the DUT reads), trace (at the trace's own
    /// times), trace:N or Nx (N times faster than recorded), rate:N (N
    /// UPDATEs per second over all peers, in the send order).
    #[arg(long, default_value = "fast")]
    pace: String,
    /// RNG seed of the synthetic table and of random interleaves.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds to keep retrying a refused connect.
    #[arg(long, default_value_t = 10)]
    connect_timeout: u64,
    /// Seconds allowed for the OPEN/KEEPALIVE exchange.
    #[arg(long, default_value_t = 10)]
    open_timeout: u64,
    /// A monitor session from this source address to the DUT, receiving
    /// its best routes: convergence is measured there (the DUT must
    /// export to it). Without it, convergence is the last End-of-RIB sent.
    #[arg(long, value_name = "ADDR", requires = "monitor_as")]
    monitor: Option<IpAddr>,
    /// The monitor's AS.
    #[arg(long, value_name = "N", requires = "monitor")]
    monitor_as: Option<u32>,
    /// Prefixes the monitor must hold to count as converged (default: the
    /// input's count for RIB dumps and synthetic tables; update traces
    /// converge when the monitor's table is quiet, see --quiet).
    #[arg(long, value_name = "N", requires = "monitor")]
    expect_prefixes: Option<u64>,
    /// Update traces: seconds without a change at the monitor, after
    /// everything is sent, that end the run.
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    quiet: f64,
    /// Seconds from the start of sending to give up waiting for
    /// convergence.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    timeout: u64,
    /// A local DUT process (repeatable): its CPU time (with its
    /// descendants) over the run and peak RSS go into the summary.
    #[arg(long, value_name = "PID")]
    dut_pid: Vec<u32>,
    /// Write the per-second report as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the summary as one CSV row (the columns of `tessera bench`'s
    /// runs.csv).
    #[arg(long, value_name = "FILE")]
    summary_csv: Option<PathBuf>,
    /// Write the summary, the input, the per-second report and the time
    /// series as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Run a sink instead: accept any peer, count prefixes, discard.
    #[arg(long)]
    sink: bool,
    /// Sink listen address.
    #[arg(long, default_value = "127.0.0.1:1179", requires = "sink")]
    listen: SocketAddr,
    /// Sink: End-of-RIB markers to wait for before --hold-after counts.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "sink")]
    expect_eor: u64,
}

/// One row of the per-second report.
#[derive(Clone, Debug)]
struct Row {
    t: f64,
    up: usize,
    done: usize,
    failed: usize,
    updates_sent: u64,
    prefixes_sent: u64,
    withdrawn_sent: u64,
    updates_per_s: f64,
    prefixes_per_s: f64,
    monitor_prefixes: Option<u64>,
}

const ROW_HEADER: &str = "t_s,peers_up,peers_done,peers_failed,updates_sent,prefixes_sent,withdrawn_sent,updates_per_s,prefixes_per_s,monitor_prefixes";

impl Row {
    fn of(p: &Progress) -> Row {
        Row {
            t: p.elapsed,
            up: p.replay.up,
            done: p.replay.finished,
            failed: p.replay.failed,
            updates_sent: p.replay.updates_sent,
            prefixes_sent: p.replay.prefixes_sent,
            withdrawn_sent: p.replay.withdrawn_sent,
            updates_per_s: p.updates_per_sec,
            prefixes_per_s: p.prefixes_per_sec,
            monitor_prefixes: p.monitor.map(|m| m.prefixes),
        }
    }

    fn csv(&self) -> String {
        format!(
            "{:.3},{},{},{},{},{},{},{:.1},{:.1},{}",
            self.t,
            self.up,
            self.done,
            self.failed,
            self.updates_sent,
            self.prefixes_sent,
            self.withdrawn_sent,
            self.updates_per_s,
            self.prefixes_per_s,
            self.monitor_prefixes
                .map_or(String::new(), |m| m.to_string())
        )
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "t_s": self.t,
            "peers_up": self.up,
            "peers_done": self.done,
            "peers_failed": self.failed,
            "updates_sent": self.updates_sent,
            "prefixes_sent": self.prefixes_sent,
            "withdrawn_sent": self.withdrawn_sent,
            "updates_per_s": self.updates_per_s,
            "prefixes_per_s": self.prefixes_per_s,
            "monitor_prefixes": self.monitor_prefixes,
        })
    }
}

pub fn run(a: Args) -> CmdResult {
    if a.sink {
        return run_sink(&a);
    }
    let (Some(target), Some(target_as)) = (a.target.as_deref(), a.target_as) else {
        return Err("--target and --target-as are required".into());
    };
    let target = parse_target(target)?;
    let variant: SenderVariant = a.variant.parse()?;
    let mix: Mix = a.mix.parse()?;
    let pace = parse_pace(&a.pace)?;
    let recorded = a.peer_as.is_some();
    if recorded && a.mrt.is_empty() {
        // clap's `requires` does not see an empty --mrt list as missing.
        return Err("--peer-as recorded needs --mrt (recorded peers)".into());
    }
    // With --peer-as recorded the readers put each recorded peer's AS in
    // its parameters; `local_as` is then only a placeholder.
    let (local_as, target_as) = (Asn(a.local_as.unwrap_or(0)), Asn(target_as));
    let step = a.local_as_step.unwrap_or(0);
    let IpAddr::V4(base) = a.source_base else {
        return Err("IPv6 source addresses are not supported yet (IPv4 NEXT_HOP)".into());
    };
    let params: ParamsFn = Arc::new(move |i| {
        // Overflow is reported below (step_ases), before anything is sent.
        let asn = Asn(local_as
            .0
            .saturating_add(u32::try_from(i).unwrap_or(u32::MAX).saturating_mul(step)));
        FeedParams {
            local_as: asn,
            as_recorded: recorded,
            ibgp: !recorded && asn == target_as,
            next_hop: Ipv4Addr::from(u32::from(base).wrapping_add(i as u32)),
            next_hop6: None,
        }
    });
    let t0 = Instant::now();
    let (mut workload, input, session_as) = if a.mrt.is_empty() {
        let Some(synthetic) = a.synthetic.as_deref() else {
            return Err("give --mrt FILE or --synthetic PEERSxPREFIXES".into());
        };
        let (w, input) = synthetic_workload(&a, synthetic, &params)?;
        (w, input, Vec::new())
    } else {
        mrt_workload(&a, &params)?
    };
    let peers = workload.feeds.len();
    let session_as = if recorded {
        if session_as.contains(&target_as) {
            return Err(format!(
                "--peer-as recorded: a recorded peer is in AS {} (--target-as): iBGP sessions are not supported with recorded ASes",
                target_as.0
            )
            .into());
        }
        session_as
    } else if step > 0 {
        replay::step_ases(local_as, step, peers)?
    } else {
        Vec::new()
    };
    let sources = replay::source_addresses(a.source_base, peers)?;
    println!(
        "workload: {peers} peers, {} UPDATEs, {} prefixes announced, {} withdrawn, {:.1} MB, read in {:.2} s",
        workload.total_messages(),
        workload.total_prefixes(),
        workload.total_withdrawn(),
        workload.total_bytes() as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    let final_prefixes = workload.final_prefixes();
    let mut rc = ReplayConfig::new(target, target_as, local_as, sources);
    rc.hold_time = a.hold;
    rc.connect_timeout = Duration::from_secs(a.connect_timeout);
    rc.open_timeout = Duration::from_secs(a.open_timeout);
    rc.variant = variant;
    rc.mix = mix;
    rc.seed = a.seed;
    rc.session_as = session_as;
    rc.pacing = match pace {
        Pace::Sender(p) => p,
        Pace::Rate(_) if matches!(variant, SenderVariant::RoundRobin { .. }) => {
            return Err("--pace rate:N works with --variant thread-per-peer or trace-order".into());
        }
        Pace::Rate(per_sec) => {
            // The send order the rate is spread over: the sender's own,
            // or for one thread per peer the input's order (normal mix)
            // or the mix's windowed round robin.
            let order = rc.order().unwrap_or(match mix {
                Mix::Normal => Order::Trace { seed: a.seed },
                m => Order::RoundRobin {
                    batch: 1,
                    window: m.window(),
                },
            });
            let steps = replay::schedule(&workload, order);
            workload.pace_at_rate(per_sec, &steps)?;
            Pacing::Trace { speed: 1.0 }
        }
    };
    let monitor = match (a.monitor, a.monitor_as) {
        (Some(src), Some(asn)) => Some(MonitorConfig {
            mode: MonitorMode::Connect {
                target,
                source: Some(src),
            },
            local_as: Asn(asn),
            peer_as: Some(target_as),
            bgp_id: match src {
                IpAddr::V4(v) => v,
                IpAddr::V6(_) => Ipv4Addr::new(10, 255, 255, 254),
            },
            hold_time: a.hold,
            connect_timeout: rc.connect_timeout,
            open_timeout: rc.open_timeout,
        }),
        _ => None,
    };
    let quiet = Duration::try_from_secs_f64(a.quiet).map_err(|_| "bad --quiet")?;
    let rcfg = RunConfig {
        monitor,
        expect_prefixes: a.expect_prefixes,
        quiet,
        timeout: Duration::from_secs(a.timeout),
        sample_every: Duration::from_millis(100),
        dut_pids: a.dut_pid.clone(),
        // Without --hold-after: until Ctrl-C.
        hold_after: a.hold_after.map_or(
            Duration::from_secs(u64::from(u32::MAX)),
            Duration::from_secs,
        ),
        ..RunConfig::default()
    };
    let stop = Arc::new(AtomicBool::new(false));
    replay::stop_on_ctrl_c(stop.clone())?;
    let st = Status::stderr();
    let mut rows: Vec<Row> = Vec::new();
    let mut said_sent = false;
    let mut progress = |p: &Progress| {
        let first_sent = !said_sent && p.send_secs.is_some();
        if first_sent {
            st.done(&p.line());
        } else {
            st.line(&p.line());
        }
        if let (true, Some(secs)) = (first_sent, p.send_secs) {
            // Printed as soon as every peer is done (scripts read it while
            // the sessions are held).
            said_sent = true;
            let r = &p.replay;
            let secs = secs.max(1e-6);
            println!(
                "sent: {} prefixes in {} UPDATEs to {} peers in {secs:.3} s: {:.0} prefixes/s, {:.0} UPDATEs/s (socket writes; the DUT may still be processing){}",
                r.prefixes_sent,
                r.updates_sent,
                r.peers,
                r.prefixes_sent as f64 / secs,
                r.updates_sent as f64 / secs,
                if a.hold_after.is_none() {
                    "; sessions stay up until Ctrl-C"
                } else {
                    ""
                }
            );
            let _ = std::io::stdout().flush();
        }
        rows.push(Row::of(p));
    };
    let r = replay::run::run(&rc, Arc::new(workload), &rcfg, &stop, &mut progress)?;
    if st.tty {
        st.done("");
    }
    print!("{}", summary(&r, final_prefixes));
    let label = if a.mrt.is_empty() {
        a.synthetic.clone().unwrap_or_default()
    } else {
        a.mrt
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join("+")
    };
    write_outputs(&a, &r, &rows, &label, &input, final_prefixes)?;
    for (i, e) in &r.errors {
        if *i == usize::MAX {
            eprintln!("tessera: monitor: {e}");
        } else {
            eprintln!("tessera: peer {i}: {e}");
        }
    }
    if r.peers_failed > 0 {
        eprintln!("tessera: {} of {} peers failed", r.peers_failed, r.peers);
        return Ok(ExitCode::from(1));
    }
    if !r.converged {
        eprintln!(
            "tessera: not converged: {}",
            r.not_converged.unwrap_or("unknown")
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--pace`: the sender's pacing, or a rate the workload is timed at.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Pace {
    Sender(Pacing),
    /// Messages per second over all peers.
    Rate(f64),
}

/// `fast`, `trace`, `trace:N`, `Nx` or `rate:N`.
fn parse_pace(s: &str) -> Result<Pace, String> {
    let bad = |e: &str| format!("--pace: {e}, Nx (e.g. 10x) or rate:N (messages/s)");
    if let Some(r) = s.strip_prefix("rate:") {
        return match r.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(Pace::Rate(v)),
            _ => Err(bad("the rate must be a positive number")),
        };
    }
    let s = match s.strip_suffix('x') {
        Some(n) => format!("trace:{n}"),
        None => s.to_string(),
    };
    s.parse::<Pacing>().map(Pace::Sender).map_err(bad)
}

fn synthetic_workload(
    a: &Args,
    synthetic: &str,
    params: &ParamsFn,
) -> Result<(Workload, serde_json::Value), Box<dyn std::error::Error>> {
    let (peers, prefixes) = replay::parse_synthetic(synthetic)?;
    let p: Vec<FeedParams> = (0..peers).map(|i| params(i)).collect();
    let sharing = if a.unique {
        Sharing::Unique
    } else {
        Sharing::Shared
    };
    let spec = SyntheticSpec {
        peers,
        prefixes,
        sharing,
        seed: a.seed,
    };
    let w = Workload::synthetic(&spec, &p)?;
    let sets: usize = w.feeds.iter().map(|f| f.attr_sets).sum();
    println!(
        "synthetic: {peers} peers x {prefixes} prefixes ({}), {sets} attribute sets",
        if a.unique { "unique" } else { "shared" },
    );
    let input = serde_json::json!({
        "synthetic": synthetic,
        "sharing": if a.unique { "unique" } else { "shared" },
        "seed": a.seed,
    });
    Ok((w, input))
}

fn mrt_workload(
    a: &Args,
    params: &ParamsFn,
) -> Result<(Workload, serde_json::Value, Vec<Asn>), Box<dyn std::error::Error>> {
    let opts = InputOptions {
        peers: a.peers.clone(),
        max_messages: a.max_messages,
        max_prefixes: a.max_prefixes,
        ignore_state_changes: a.keep_sessions_up,
        keep_next_hops: a.keep_next_hops,
    };
    let (w, sums) = mrt_input::load(&a.mrt, &opts, params)?;
    if w.feeds.len() > usize::from(u16::MAX) {
        return Err(format!("{} peers in the input; at most 65535", w.feeds.len()).into());
    }
    let mut files = Vec::new();
    for s in &sums {
        println!("{}", file_line(s));
        files.push(file_json(s));
    }
    let recorded = mrt_input::recorded_ases(&sums);
    let peers: Vec<serde_json::Value> = w
        .feeds
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let p = params(i);
            let asn = if p.as_recorded {
                recorded.get(i).map_or(0, |a| a.0)
            } else {
                p.local_as.0
            };
            serde_json::json!({
                "session": i,
                "recorded": f.label,
                "source": p.next_hop.to_string(),
                "local_as": asn,
                "messages": f.messages,
                "prefixes": f.prefixes,
                "withdrawn": f.withdrawn,
            })
        })
        .collect();
    let input = serde_json::json!({ "files": files, "sessions": peers });
    Ok((w, input, recorded))
}

fn file_line(s: &FileSummary) -> String {
    let mut o = format!(
        "{}: {}, {} peers, {} UPDATEs, {} prefixes announced",
        s.path.display(),
        s.kind.name(),
        s.peers.len(),
        s.messages,
        s.prefixes
    );
    if s.withdrawn > 0 {
        let _ = write!(o, ", {} withdrawn", s.withdrawn);
    }
    if s.skipped > 0 {
        let _ = write!(o, ", {} skipped", s.skipped);
    }
    if s.not_replayed > 0 {
        let _ = write!(o, ", {} non-UPDATE records not replayed", s.not_replayed);
    }
    if s.truncated {
        o.push_str(" (truncated: read up to the cut)");
    }
    o
}

fn file_json(s: &FileSummary) -> serde_json::Value {
    let peers: Vec<serde_json::Value> = s
        .peers
        .iter()
        .map(|p| {
            serde_json::json!({
                "address": p.ip.to_string(),
                "asn": p.asn.0,
                "count": p.count,
                "session": p.session,
            })
        })
        .collect();
    serde_json::json!({
        "path": s.path.display().to_string(),
        "kind": s.kind.name(),
        "messages": s.messages,
        "prefixes": s.prefixes,
        "withdrawn": s.withdrawn,
        "skipped": s.skipped,
        "not_replayed": s.not_replayed,
        "truncated": s.truncated,
        "peers": peers,
    })
}

/// The summary lines printed at the end.
fn summary(r: &RunResult, final_prefixes: u64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "totals: {} UPDATEs, {} prefixes announced, {} withdrawn, to {} peers ({} failed); the input leaves {final_prefixes} prefixes",
        r.updates_sent, r.prefixes_sent, r.withdrawn_sent, r.peers, r.peers_failed
    );
    if r.sessions_opened > r.peers as u64 || r.skipped > 0 {
        let _ = writeln!(
            o,
            "session events: {} sessions opened for {} peers, {} UPDATEs skipped while a session was down",
            r.sessions_opened, r.peers, r.skipped
        );
    }
    if let Some(m) = r.monitor_prefixes {
        let _ = writeln!(
            o,
            "monitor: {m} prefixes{}",
            r.expected_prefixes
                .map_or(String::new(), |e| format!(" (expected {e})"))
        );
    }
    if let Some(c) = r.dut_cpu_secs {
        let _ = writeln!(
            o,
            "DUT: {c:.3} CPU-s{}",
            r.dut_peak_rss_kib.map_or(String::new(), |k| format!(
                ", peak RSS {:.1} MiB",
                k as f64 / 1024.0
            ))
        );
    }
    match r.convergence_secs {
        Some(c) => {
            let _ = writeln!(
                o,
                "converged in {c:.3} s: {:.0} UPDATEs/s, {:.0} prefixes/s",
                r.updates_per_sec.unwrap_or(0.0),
                r.prefixes_per_sec.unwrap_or(0.0)
            );
        }
        None => {
            let _ = writeln!(o, "not converged: {}", r.not_converged.unwrap_or("unknown"));
        }
    }
    o
}

fn write_outputs(
    a: &Args,
    r: &RunResult,
    rows: &[Row],
    label: &str,
    input: &serde_json::Value,
    final_prefixes: u64,
) -> Result<(), String> {
    let write = |p: &PathBuf, text: String| {
        std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    if let Some(p) = &a.csv {
        let mut t = String::from(ROW_HEADER);
        t.push('\n');
        for row in rows {
            t.push_str(&row.csv());
            t.push('\n');
        }
        write(p, t)?;
    }
    if let Some(p) = &a.summary_csv {
        write(
            p,
            format!("{}\n{}\n", RunResult::CSV_HEADER, r.csv_row(label)),
        )?;
    }
    if let Some(p) = &a.json {
        let mut j = r.to_json(label);
        j["input"] = input.clone();
        j["final_prefixes"] = final_prefixes.into();
        j["per_second"] = rows.iter().map(Row::json).collect();
        let text = serde_json::to_string_pretty(&j).map_err(|e| e.to_string())?;
        write(p, text + "\n")?;
    }
    Ok(())
}

fn parse_target(s: &str) -> Result<SocketAddr, Box<dyn std::error::Error>> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let ip: IpAddr = s
        .parse()
        .map_err(|_| format!("--target {s}: expected ADDR or ADDR:PORT"))?;
    Ok(SocketAddr::new(ip, 179))
}

fn run_sink(a: &Args) -> CmdResult {
    let bgp_id = match a.listen.ip() {
        IpAddr::V4(v) if !v.is_unspecified() => v,
        _ => Ipv4Addr::new(127, 0, 0, 1),
    };
    let Some(local_as) = a.local_as else {
        return Err("--sink needs --local-as".into());
    };
    let sink = Sink::start(SinkConfig {
        listen: a.listen,
        local_as: Asn(local_as),
        bgp_id,
        hold_time: a.hold,
        open_timeout: Duration::from_secs(a.open_timeout),
    })?;
    let stop = Arc::new(AtomicBool::new(false));
    replay::stop_on_ctrl_c(stop.clone())?;
    println!("sink: listening on {} as AS {local_as}", sink.local_addr(),);
    let _ = std::io::stdout().flush();
    let start = Instant::now();
    let (mut prev, mut prev_t) = (sink.stats().snapshot(), start);
    let mut eor_at: Option<Instant> = None;
    while !stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        let now = Instant::now();
        let s = sink.stats().snapshot();
        if eor_at.is_none() && s.end_of_rib >= a.expect_eor {
            eor_at = Some(now);
            if let Some((first, last)) = sink.stats().receive_window() {
                let secs = last.duration_since(first).as_secs_f64().max(1e-6);
                println!(
                    "received: {} prefixes in {} UPDATEs, {} End-of-RIB, in {:.3} s: {:.0} prefixes/s, {:.0} UPDATEs/s",
                    s.prefixes,
                    s.updates,
                    s.end_of_rib,
                    secs,
                    s.prefixes as f64 / secs,
                    s.updates as f64 / secs
                );
            }
        }
        if now.duration_since(prev_t) >= Duration::from_secs(1) {
            let dt = now.duration_since(prev_t).as_secs_f64();
            println!(
                "[{:5.1}s] sessions {} up, {} failed, End-of-RIB {}, {:.0} UPDATEs/s, {:.0} prefixes/s, {} prefixes",
                now.duration_since(start).as_secs_f64(),
                s.sessions_established,
                s.sessions_failed,
                s.end_of_rib,
                (s.updates - prev.updates) as f64 / dt,
                (s.prefixes - prev.prefixes) as f64 / dt,
                s.prefixes
            );
            let _ = std::io::stdout().flush();
            (prev, prev_t) = (s, now);
        }
        if let (Some(t), Some(h)) = (eor_at, a.hold_after) {
            if now.duration_since(t) >= Duration::from_secs(h) {
                break;
            }
        }
    }
    if let Some(e) = sink.stats().last_error() {
        eprintln!("tessera: sink: last session error: {e}");
    }
    Ok(ExitCode::SUCCESS)
}
