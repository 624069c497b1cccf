//! `tessera replay`: real BGP sessions into a device under test, fed from a
//! synthetic table (see the `replay` crate), with a per-second report; or
//! `--sink`, a listener that counts what a replay sends it.

use super::CmdResult;
use base::Asn;
use replay::{
    FeedParams, PeerState, ReplayConfig, SenderVariant, Sharing, Sink, SinkConfig, SyntheticSpec,
    Workload,
};
use std::collections::HashSet;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Synthetic workload: PEERSxPREFIXES, e.g. 10x100000.
    #[arg(long, value_name = "PEERSxPREFIXES", required_unless_present = "sink")]
    synthetic: Option<String>,
    /// Every peer announces the same prefixes (best path competes); default.
    #[arg(long, conflicts_with = "unique")]
    shared: bool,
    /// Peers announce disjoint prefixes.
    #[arg(long)]
    unique: bool,
    /// The DUT: ADDR or ADDR:PORT (port 179 by default).
    #[arg(long, value_name = "ADDR[:PORT]", required_unless_present = "sink")]
    target: Option<String>,
    /// The DUT's AS (checked against its OPEN).
    #[arg(long, value_name = "N", required_unless_present = "sink")]
    target_as: Option<u32>,
    /// Our AS, for every peer; equal to --target-as means iBGP.
    #[arg(long, value_name = "N")]
    local_as: u32,
    /// Source address of the first peer; peer i uses base + i.
    #[arg(long, default_value = "127.0.0.2")]
    source_base: IpAddr,
    /// Proposed hold time, seconds (0 or >= 3).
    #[arg(long, default_value_t = 90)]
    hold: u16,
    /// Once every peer has sent End-of-RIB (sink: received --expect-eor),
    /// keep going this many seconds, then close and exit. Without it, run
    /// until Ctrl-C.
    #[arg(long, value_name = "SECS")]
    hold_after: Option<u64>,
    /// thread-per-peer (default), trace-order or round-robin[:N].
    #[arg(long, default_value = "thread-per-peer")]
    variant: String,
    /// RNG seed of the synthetic table.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds to keep retrying a refused connect.
    #[arg(long, default_value_t = 10)]
    connect_timeout: u64,
    /// Seconds allowed for the OPEN/KEEPALIVE exchange.
    #[arg(long, default_value_t = 10)]
    open_timeout: u64,
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

pub fn run(a: Args) -> CmdResult {
    if a.sink {
        return run_sink(&a);
    }
    let (Some(synthetic), Some(target), Some(target_as)) =
        (a.synthetic.as_deref(), a.target.as_deref(), a.target_as)
    else {
        return Err("--synthetic, --target and --target-as are required".into());
    };
    let (peers, prefixes) = replay::parse_synthetic(synthetic)?;
    let target = parse_target(target)?;
    let variant: SenderVariant = a.variant.parse()?;
    let sources = replay::source_addresses(a.source_base, peers)?;
    let (local_as, target_as) = (Asn(a.local_as), Asn(target_as));
    let params = sources
        .iter()
        .map(|s| match s {
            IpAddr::V4(nh) => Ok(FeedParams {
                local_as,
                ibgp: local_as == target_as,
                next_hop: *nh,
                next_hop6: None,
            }),
            IpAddr::V6(_) => Err("IPv6 source addresses are not supported yet (IPv4 NEXT_HOP)"),
        })
        .collect::<Result<Vec<_>, _>>()?;
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
    let t0 = Instant::now();
    let workload = Arc::new(Workload::synthetic(&spec, &params)?);
    let sets: usize = workload.feeds.iter().map(|f| f.attr_sets).sum();
    let bytes: usize = workload.feeds.iter().map(|f| f.bytes.len()).sum();
    println!(
        "workload: {peers} peers x {prefixes} prefixes ({}), {} UPDATEs, {} attribute sets, {:.1} MB, built in {:.2} s",
        if a.unique { "unique" } else { "shared" },
        workload.total_messages(),
        sets,
        bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    let cfg = ReplayConfig {
        target,
        target_as,
        local_as,
        sources,
        hold_time: a.hold,
        connect_timeout: Duration::from_secs(a.connect_timeout),
        open_timeout: Duration::from_secs(a.open_timeout),
        variant,
        mix: replay::Mix::Normal,
        pacing: replay::Pacing::Fast,
        seed: a.seed,
    };
    let r = replay::start(&cfg, workload.clone())?;
    replay::stop_on_ctrl_c(r.stop_flag())?;
    let total = workload.total_prefixes();
    let start = Instant::now();
    let (mut prev, mut prev_t) = (r.stats().snapshot(), start);
    let mut all_eor_at: Option<Instant> = None;
    let mut reported: HashSet<usize> = HashSet::new();
    let stop = r.stop_flag();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = Instant::now();
        let s = r.stats().snapshot();
        for (i, p) in r.stats().peers.iter().enumerate() {
            if p.state() == PeerState::Failed && reported.insert(i) {
                let src = cfg.sources.get(i).map_or(String::new(), |a| a.to_string());
                let e = p.error().map_or("unknown error".into(), |e| e.to_string());
                eprintln!("tessera: peer {i} ({src}): {e}");
            }
        }
        if now.duration_since(prev_t) >= Duration::from_secs(1) {
            let dt = now.duration_since(prev_t).as_secs_f64();
            println!(
                "[{:5.1}s] peers up {}/{}, End-of-RIB {}/{}, {:.0} UPDATEs/s, {:.0} prefixes/s, {}/{} prefixes sent",
                now.duration_since(start).as_secs_f64(),
                s.up,
                s.peers,
                s.eor_sent,
                s.peers,
                (s.updates_sent - prev.updates_sent) as f64 / dt,
                (s.prefixes_sent - prev.prefixes_sent) as f64 / dt,
                s.prefixes_sent,
                total
            );
            let _ = std::io::stdout().flush();
            (prev, prev_t) = (s, now);
        }
        if s.eor_sent == s.peers && all_eor_at.is_none() {
            all_eor_at = Some(now);
            if let Some((first, last)) = r.stats().send_window() {
                let secs = last.duration_since(first).as_secs_f64().max(1e-6);
                println!(
                    "sent: {} prefixes in {} UPDATEs to {} peers in {:.3} s: {:.0} prefixes/s, {:.0} UPDATEs/s (socket writes; the DUT may still be processing)",
                    s.prefixes_sent,
                    s.updates_sent,
                    s.peers,
                    secs,
                    s.prefixes_sent as f64 / secs,
                    s.updates_sent as f64 / secs
                );
            }
        }
        if let (Some(t), Some(h)) = (all_eor_at, a.hold_after) {
            if now.duration_since(t) >= Duration::from_secs(h) {
                break;
            }
        }
        if stop.load(Relaxed) || r.finished() {
            break;
        }
    }
    let results = r.join();
    let failed = results.iter().filter(|x| x.is_err()).count();
    for (i, e) in results.iter().enumerate() {
        if let Err(e) = e {
            if !reported.contains(&i) {
                eprintln!("tessera: peer {i}: {e}");
            }
        }
    }
    if failed > 0 {
        eprintln!("tessera: {failed} of {} peers failed", results.len());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
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
    let sink = Sink::start(SinkConfig {
        listen: a.listen,
        local_as: Asn(a.local_as),
        bgp_id,
        hold_time: a.hold,
        open_timeout: Duration::from_secs(a.open_timeout),
    })?;
    let stop = Arc::new(AtomicBool::new(false));
    replay::stop_on_ctrl_c(stop.clone())?;
    println!(
        "sink: listening on {} as AS {}",
        sink.local_addr(),
        a.local_as
    );
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
