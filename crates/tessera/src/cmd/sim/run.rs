//! `tessera sim run`: makes or reads a topology as `tessera sim topo` does
//! (`topo`'s generators and readers), runs `netsim` on it with the scenario given by
//! `--scenario FILE` and/or the event flags, and writes the MRT trace of
//! the `--at` ASes, RIB snapshots, per-event convergence figures and the
//! realism report. Wiring only: the simulation is `netsim`'s.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use mrt::{Compression, MrtWriter};
use netsim::trace::{write_snapshot, MrtTrace, Realism};
use netsim::{Action, Event, NodeId, Observer, Scenario, Sim, SimConfig};

use super::super::CmdResult;
use super::{load, TopoArgs};

#[derive(clap::Args)]
pub struct Args {
    /// The topology: generated (default: the seeds' BRITE Waxman graph,
    /// 1000 ASes, degree 10-15, real prefix counts) or `--import FILE`
    /// (CAIDA, BRITE, GML), as `tessera sim topo` makes it.
    #[command(flatten)]
    topo: TopoArgs,
    /// Record what this AS receives (repeatable).
    #[arg(long = "at", value_name = "ASN")]
    at: Vec<u32>,
    /// The BGP4MP_ET trace of the --at ASes (.gz/.bz2 compress).
    #[arg(long)]
    mrt: Option<PathBuf>,
    /// TABLE_DUMP_V2 snapshot of the --at ASes at T seconds (repeatable).
    #[arg(long = "snapshot", value_name = "T:FILE", value_parser = parse_snapshot)]
    snapshots: Vec<(f64, PathBuf)>,
    /// MRAI in seconds (RFC 4271 §9.2.1.1; 0: off).
    #[arg(long, default_value_t = 30.0)]
    mrai: f64,
    /// No MRAI jitter (RFC 4271 jitters each interval to 0.75-1.0 of it).
    #[arg(long)]
    no_jitter: bool,
    /// Processing cost of one received UPDATE, microseconds.
    #[arg(long, default_value_t = 50)]
    per_update_us: u64,
    /// Processing cost of each prefix of a received UPDATE, microseconds.
    #[arg(long, default_value_t = 5)]
    per_prefix_us: u64,
    /// Worker threads: ASes split over this many parts, run in parallel
    /// windows as long as the shortest link latency (deterministic for a
    /// given count).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Stop at this simulated time, seconds (default: when nothing is left).
    #[arg(long)]
    until: Option<f64>,
    /// Scenario file (TOML `[[event]]` tables; see docs/sim.md).
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Link failure: T:ASN:ASN.
    #[arg(long, value_name = "T:A:B")]
    link_down: Vec<String>,
    /// Link repair: T:ASN:ASN.
    #[arg(long, value_name = "T:A:B")]
    link_up: Vec<String>,
    /// Session reset (full-table exchange): T:ASN:ASN.
    #[arg(long, value_name = "T:A:B")]
    reset: Vec<String>,
    /// Prefix withdrawal: T:ASN:PREFIX.
    #[arg(long, value_name = "T:ASN:PREFIX")]
    withdraw: Vec<String>,
    /// Prefix (re-)announcement: T:ASN:PREFIX.
    #[arg(long, value_name = "T:ASN:PREFIX")]
    announce: Vec<String>,
    /// Route flaps: T:ASN:PREFIX:PERIOD:COUNT.
    #[arg(long, value_name = "T:ASN:PREFIX:PERIOD:COUNT")]
    flap: Vec<String>,
    /// Prefix hijack: T:ASN:PREFIX.
    #[arg(long, value_name = "T:ASN:PREFIX")]
    hijack: Vec<String>,
    /// Route leak: T:ASN (the AS exports everything to everyone).
    #[arg(long, value_name = "T:ASN")]
    leak: Vec<String>,
    /// Worm surge: T:DURATION:RATE[:HOLD] (flaps per second of random stub
    /// prefixes, re-announced HOLD seconds later, default 60).
    #[arg(long, value_name = "T:DUR:RATE[:HOLD]")]
    surge: Vec<String>,
    /// No progress line on stderr.
    #[arg(long)]
    quiet: bool,
    /// Origin classes instead of messages (Internet-sized graphs): each
    /// origin's stable Gao-Rexford routes computed once, by the decision
    /// order of the message-level run, and expanded to its prefixes. No
    /// time, no messages: timers, events and the trace are refused;
    /// `--snapshot` writes the final Adj-RIBs-In of the --at ASes.
    #[arg(long)]
    origin_classes: bool,
}

fn parse_snapshot(s: &str) -> Result<(f64, PathBuf), String> {
    let (t, f) = s.split_once(':').ok_or("expected T:FILE")?;
    let t: f64 = t.parse().map_err(|_| format!("bad time {t:?}"))?;
    Ok((t, PathBuf::from(f)))
}

fn secs(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|v| Duration::try_from_secs_f64(v).ok())
        .ok_or_else(|| format!("bad time {s:?}"))
}

fn num(s: &str) -> Result<u32, String> {
    s.parse().map_err(|_| format!("bad number {s:?}"))
}

/// One event flag: `kind` and its `:`-separated fields.
fn flag_event(kind: &str, v: &str) -> Result<Event, String> {
    let f: Vec<&str> = v.split(':').collect();
    let need = |n: usize| {
        if f.len() >= n {
            Ok(())
        } else {
            Err(format!("--{kind} {v:?}: too few fields"))
        }
    };
    need(2)?;
    let at = secs(f[0])?;
    let prefix = |i: usize| -> Result<base::Prefix, String> {
        f[i].parse().map_err(|_| format!("bad prefix {:?}", f[i]))
    };
    let action = match kind {
        "link-down" | "link-up" | "reset" => {
            need(3)?;
            let (a, b) = (num(f[1])?, num(f[2])?);
            match kind {
                "link-down" => Action::LinkDown(a, b),
                "link-up" => Action::LinkUp(a, b),
                _ => Action::SessionReset(a, b),
            }
        }
        "withdraw" | "announce" | "hijack" => {
            // The prefix may be IPv6 (with colons): it is the rest.
            need(3)?;
            let asn = num(f[1])?;
            let p: base::Prefix = f[2..]
                .join(":")
                .parse()
                .map_err(|_| format!("bad prefix {:?}", f[2..].join(":")))?;
            match kind {
                "withdraw" => Action::Withdraw(asn, p),
                "announce" => Action::Announce(asn, p),
                _ => Action::Hijack(asn, p),
            }
        }
        "flap" => {
            need(5)?;
            Action::Flap {
                asn: num(f[1])?,
                prefix: prefix(2)?,
                period: secs(f[3])?,
                count: num(f[4])?,
            }
        }
        "leak" => Action::Leak(num(f[1])?),
        "surge" => {
            need(3)?;
            Action::Surge {
                duration: secs(f[1])?,
                rate: f[2].parse().map_err(|_| format!("bad rate {:?}", f[2]))?,
                hold: match f.get(3) {
                    Some(h) => secs(h)?,
                    None => Duration::from_secs(60),
                },
            }
        }
        _ => return Err(format!("unknown event {kind}")),
    };
    Ok(Event { at, action })
}

/// Compression by file name: `.gz` gzip, `.bz2` bzip2, else none.
fn compression_for(p: &std::path::Path) -> Compression {
    match p.extension().and_then(|e| e.to_str()) {
        Some("gz") => Compression::Gzip,
        Some("bz2") => Compression::Bzip2,
        _ => Compression::None,
    }
}

/// Resident memory of this process in bytes (Linux; 0 elsewhere).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// CPU time (user + system) of this process so far, seconds (Linux; 0
/// elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): utime is the
    // 14th field of the line, stime the 15th, in clock ticks (100 per
    // second on Linux).
    let rest = s.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// A progress line on stderr with simulated time and events/s.
struct Progress {
    on: bool,
    start: std::time::Instant,
}

impl Progress {
    fn show(&self, sim: &Sim, until: Option<u64>) {
        if !self.on {
            return;
        }
        let el = self.start.elapsed().as_secs_f64().max(1e-9);
        let t = sim.now_ns() as f64 / 1e9;
        let bar = match until {
            Some(u) if u > 0 => {
                let k = ((sim.now_ns() as f64 / u as f64) * 20.0).min(20.0) as usize;
                format!("[{:<20}] ", "#".repeat(k))
            }
            _ => String::new(),
        };
        eprint!(
            "\r{bar}t={t:9.1}s  {:>11} messages  {:>9.0} messages/s  {:>9.0} events/s  ",
            sim.messages(),
            sim.messages() as f64 / el,
            sim.events() as f64 / el
        );
    }
    fn done(&self) {
        if self.on {
            eprint!("\r{:90}\r", "");
        }
    }
}

pub fn run(a: Args) -> CmdResult {
    let g = load(&a.topo)?.graph;
    if g.nodes.is_empty() {
        return Err("the topology has no AS".into());
    }
    let total: usize = g.nodes.iter().map(|n| n.prefixes.len()).sum();
    let v6 = g
        .nodes
        .iter()
        .flat_map(|n| &n.prefixes)
        .filter(|p| matches!(p, base::Prefix::V6(_)))
        .count();

    let mut scenario = match &a.scenario {
        Some(p) => Scenario::from_toml(&std::fs::read_to_string(p)?)?,
        None => Scenario::default(),
    };
    for (kind, list) in [
        ("link-down", &a.link_down),
        ("link-up", &a.link_up),
        ("reset", &a.reset),
        ("withdraw", &a.withdraw),
        ("announce", &a.announce),
        ("flap", &a.flap),
        ("hijack", &a.hijack),
        ("leak", &a.leak),
        ("surge", &a.surge),
    ] {
        for v in list {
            scenario.events.push(flag_event(kind, v)?);
        }
    }

    if a.origin_classes {
        return origin_classes(&a, &g, &scenario, total, v6);
    }
    let cfg = SimConfig {
        mrai: Duration::try_from_secs_f64(a.mrai).map_err(|_| "bad --mrai")?,
        mrai_jitter: !a.no_jitter,
        per_update: Duration::from_micros(a.per_update_us),
        per_prefix: Duration::from_micros(a.per_prefix_us),
        seed: a.topo.seed,
        always_compare_med: false,
        threads: a.threads,
    };
    let rss0 = rss_bytes();
    let mut sim = Sim::new(&g, cfg);
    let mut traced: Vec<NodeId> = Vec::new();
    for &asn in &a.at {
        let x = sim
            .node(asn)
            .ok_or_else(|| format!("--at {asn}: not in the topology"))?;
        sim.trace(x);
        traced.push(x);
    }
    sim.start(&scenario)?;
    println!(
        "topology: {} ASes, {} links, {} prefixes ({} IPv6); {} scenario events",
        g.nodes.len(),
        g.links.len(),
        total,
        v6,
        scenario.events.len()
    );

    let trace = match &a.mrt {
        Some(p) => Some(MrtTrace::new(
            MrtWriter::create(p, compression_for(p))?,
            sim.asns(),
        )),
        None => None,
    };
    let mut obs = (OptTrace(trace), Realism::default());
    let until = a
        .until
        .map(|s| (s * 1e9).clamp(0.0, u64::MAX as f64) as u64);
    let mut snaps: Vec<(u64, PathBuf)> = a
        .snapshots
        .iter()
        .map(|(t, f)| ((t * 1e9).max(0.0) as u64, f.clone()))
        .collect();
    snaps.sort_by_key(|s| s.0);
    let progress = Progress {
        on: !a.quiet && std::io::stderr().is_terminal(),
        start: std::time::Instant::now(),
    };
    let end = until.unwrap_or(u64::MAX);
    let mut next_snap = 0;
    let mut last_show = std::time::Instant::now();
    loop {
        let stop = snaps.get(next_snap).map_or(end, |s| s.0.min(end));
        let more = sim.run(stop, 200_000, &mut obs);
        if last_show.elapsed() > Duration::from_millis(250) {
            progress.show(&sim, until);
            last_show = std::time::Instant::now();
        }
        let due = sim.next_event_ns().is_none_or(|t| t > stop);
        if !due {
            continue;
        }
        if let Some((t, f)) = snaps.get(next_snap) {
            if *t <= end {
                let mut w = MrtWriter::create(f, compression_for(f))?;
                let n = write_snapshot(&sim, &traced, *t, &mut w)?;
                w.finish()?;
                progress.done();
                println!(
                    "snapshot at {:.1}s: {n} routes -> {}",
                    *t as f64 / 1e9,
                    f.display()
                );
                next_snap += 1;
                continue;
            }
        }
        if !more || stop >= end {
            break;
        }
    }
    let wall = progress.start.elapsed();
    progress.done();
    let (trace, realism) = obs;
    if let Some(t) = trace.0 {
        let n = t.records();
        t.finish()?;
        if let Some(p) = &a.mrt {
            println!("trace: {n} BGP4MP_ET records -> {}", p.display());
        }
    }
    println!(
        "{:<36} {:>10} {:>10} {:>10} {:>12}",
        "event", "at (s)", "UPDATEs", "prefixes", "converged (s)"
    );
    for s in sim.stats() {
        println!(
            "{:<36} {:>10.1} {:>10} {:>10} {:>12.3}",
            s.name,
            s.at_ns as f64 / 1e9,
            s.updates,
            s.prefixes,
            s.convergence().as_secs_f64()
        );
    }
    let paths = sim.path_count();
    let rss = rss_bytes().saturating_sub(rss0);
    println!(
        "simulated {:.1}s in {:.2}s wall: {} events ({:.0}/s), {} BGP messages ({:.0}/s); {} paths stored, {} best routes; RSS growth {} MiB ({:.0} bytes per stored path, {:.0} per (AS, prefix) best route)",
        sim.now_ns() as f64 / 1e9,
        wall.as_secs_f64(),
        sim.events(),
        sim.events() as f64 / wall.as_secs_f64().max(1e-9),
        sim.messages(),
        sim.messages() as f64 / wall.as_secs_f64().max(1e-9),
        paths,
        sim.best_count(),
        rss >> 20,
        rss as f64 / paths.max(1) as f64,
        rss as f64 / sim.best_count().max(1) as f64
    );
    let (windows, parallel) = sim.windows();
    println!(
        "threads: {} (window {:.3} ms: {} windows, {} of them on several threads; the split allows a speed-up of at most {:.2}); CPU {:.2}s",
        sim.threads(),
        sim.window_ns() as f64 / 1e6,
        windows,
        parallel,
        sim.balance(),
        cpu_seconds()
    );
    if !traced.is_empty() {
        print!("{}", realism.report());
    }
    Ok(ExitCode::SUCCESS)
}

/// The trace, when one is asked for.
struct OptTrace(Option<MrtTrace<std::fs::File>>);

impl Observer for OptTrace {
    fn received(&mut self, t: u64, at: NodeId, from: NodeId, msg: &[u8]) {
        if let Some(w) = &mut self.0 {
            w.received(t, at, from, msg);
        }
    }
    fn session(&mut self, t: u64, at: NodeId, from: NodeId, up: bool) {
        if let Some(w) = &mut self.0 {
            w.session(t, at, from, up);
        }
    }
}

/// `--origin-classes`: see `netsim::fast`.
fn origin_classes(
    a: &Args,
    g: &netsim::Graph,
    scenario: &Scenario,
    total: usize,
    v6: usize,
) -> CmdResult {
    let refuse = |what: &str| -> CmdResult {
        Err(format!(
            "--origin-classes computes stable states without time or messages: {what} is not supported with it"
        )
        .into())
    };
    if !scenario.events.is_empty() {
        return refuse("a scenario event");
    }
    if a.mrt.is_some() {
        return refuse("--mrt (there are no messages)");
    }
    if a.until.is_some() {
        return refuse("--until");
    }
    if a.mrai != 30.0 || a.no_jitter || a.per_update_us != 50 || a.per_prefix_us != 5 {
        return refuse("a timer or delay setting");
    }
    if a.snapshots.iter().any(|(t, _)| *t != 0.0) {
        return refuse("a snapshot at a time other than 0 (the stable state)");
    }
    let mut traced: Vec<NodeId> = Vec::new();
    for &asn in &a.at {
        let x = g
            .by_asn(asn)
            .ok_or_else(|| format!("--at {asn}: not in the topology"))?;
        traced.push(x);
    }
    println!(
        "topology: {} ASes, {} links, {} prefixes ({} IPv6) of {} origins; origin classes on {} threads",
        g.nodes.len(),
        g.links.len(),
        total,
        v6,
        g.nodes.iter().filter(|n| !n.prefixes.is_empty()).count(),
        a.threads.max(1)
    );
    let rss0 = rss_bytes();
    let on = !a.quiet && std::io::stderr().is_terminal();
    let start = std::time::Instant::now();
    let origins = g.nodes.iter().filter(|n| !n.prefixes.is_empty()).count();
    let progress = |done: usize| {
        if on {
            let el = start.elapsed().as_secs_f64().max(1e-9);
            eprint!(
                "\r{done}/{origins} origins  {:>9.0} origins/s  ",
                done as f64 / el
            );
        }
    };
    let (t, tables) = netsim::fast::run_all(g, a.threads, &traced, &progress)?;
    let wall = start.elapsed().as_secs_f64().max(1e-9);
    let rss = rss_bytes().saturating_sub(rss0);
    if on {
        eprint!("\r{:70}\r", "");
    }
    let share = |k: u64| 100.0 * k as f64 / t.routes.max(1) as f64;
    let mean_len = t
        .path_len
        .iter()
        .enumerate()
        .map(|(l, &k)| l as f64 * k as f64)
        .sum::<f64>()
        / t.routes.max(1) as f64;
    println!(
        "{} origin classes ({} prefixes) in {:.2}s wall: {:.0} classes/s; {} (AS, prefix) routes ({:.0}/s), {:.1}% from customers, {:.1}% from peers, {:.1}% from providers; {} (AS, prefix) pairs without a route; mean AS-path length {:.2}",
        t.classes,
        t.prefixes,
        wall,
        t.classes as f64 / wall,
        t.routes,
        t.routes as f64 / wall,
        share(t.by_role[0]),
        share(t.by_role[1]),
        share(t.by_role[2]),
        t.unreachable,
        mean_len
    );
    println!(
        "CPU {:.2}s; memory: RSS growth {} MiB ({:.2} bytes per (AS, prefix) route; routes are streamed into counters, not stored; the working set is 8 bytes per AS per thread)",
        cpu_seconds(),
        rss >> 20,
        rss as f64 / t.routes.max(1) as f64
    );
    let hist: Vec<String> = t
        .path_len
        .iter()
        .enumerate()
        .filter(|(_, &k)| k > 0)
        .map(|(l, &k)| format!("{l}:{:.1}%", share(k)))
        .collect();
    println!("AS-path length (hops: share of routes): {}", hist.join(" "));
    for (x, tab) in traced.iter().zip(&tables) {
        let k: u64 = tab
            .iter()
            .map(|(o, _, _)| g.nodes[*o as usize].prefixes.len() as u64)
            .sum();
        println!(
            "AS{}: best routes for {} origins ({} prefixes)",
            g.nodes[*x as usize].asn,
            tab.len(),
            k
        );
    }
    for (_, f) in &a.snapshots {
        let mut w = MrtWriter::create(f, compression_for(f))?;
        let n = netsim::trace::write_class_snapshot(g, &traced, &tables, &mut w)?;
        w.finish()?;
        println!(
            "snapshot of the stable state: {n} routes -> {}",
            f.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
