//! `tessera demo`: the seeds' experiment on built-in defaults (topology,
//! simulation, trace at a 12-peer AS, replay into tesserad in every
//! pipeline mode; see [`super::experiment`]).
//!
//! `tessera demo --synthetic`: the earlier demo. Synthesise a
//! collector RIB ([`sim::SynthRib`]), write it as MRT in memory
//! ([`mrt::synth_out`]), decode it with the same reader and codec the tools
//! use, and summarise.
//!
//! The summary is computed from the decoded bytes only, so it checks the
//! codecs end to end: a count that disagrees with the generator is an error.

use super::CmdResult;
use base::Prefix;
use bgp_wire::{AttrIter, ParseCtx, PathAttribute};
use mrt::bgpdump::{Dumper, RecordInfo};
use mrt::synth_out::{write_rib_dump, DumpSummary};
use mrt::{Body, MrtReader, MrtWriter};
use sim::{SynthConfig, SynthRib};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// ASes of the BRITE Waxman topology.
    #[arg(long, default_value_t = 1000)]
    ases: u32,
    /// Lowest degree of the topology.
    #[arg(long, default_value_t = 10)]
    min_degree: u32,
    /// Highest degree of the topology.
    #[arg(long, default_value_t = 15)]
    max_degree: u32,
    /// Prefixes originated in the simulation (IPv4, one per AS first, the rest
    /// skewed as real origin counts, real lengths).
    #[arg(long, default_value_t = 10_000)]
    prefixes: u32,
    /// Take the trace at the most central AS with this many neighbours.
    #[arg(long, default_value_t = 12)]
    degree: u32,
    /// MRAI of the simulated ASes, seconds.
    #[arg(long, default_value_t = 30.0)]
    mrai: f64,
    /// Pipeline modes of tesserad, comma-separated.
    #[arg(long, default_value = "sequential,per-peer,worker-pool,sharded")]
    modes: String,
    /// Thread counts of the modes that have threads (worker-pool, sharded).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<u16>,
    /// Output directory (trace, daemon logs, SVG charts); default a new
    /// directory under the system's temp directory.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// The tesserad binary; default: next to this tessera binary.
    #[arg(long)]
    tesserad: Option<std::path::PathBuf>,
    /// Seconds each replay may take.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Seconds the monitor's table must stay unchanged after the replay
    /// has sent everything (the end of an update trace).
    #[arg(long, default_value_t = 1.0)]
    quiet: f64,
    /// Repetitions of every mode; the table shows the median run.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// RNG seed (topology, prefixes, MRAI jitter; synthetic table).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The earlier demo instead: a synthetic collector RIB written as MRT
    /// in memory, decoded and summarised.
    #[arg(long)]
    synthetic: bool,
    /// --synthetic: peers of the synthetic collector (every fourth one is IPv6).
    #[arg(long, default_value_t = 12, requires = "synthetic")]
    peers: usize,
    /// --synthetic: IPv4 prefixes in the table.
    #[arg(long, default_value_t = 180_000, requires = "synthetic")]
    prefixes_v4: usize,
    /// --synthetic: IPv6 prefixes in the table.
    #[arg(long, default_value_t = 20_000, requires = "synthetic")]
    prefixes_v6: usize,
    /// --synthetic: every peer announces every prefix of its family.
    #[arg(long, requires = "synthetic")]
    all_peers: bool,
}

pub fn run(a: Args) -> CmdResult {
    if a.synthetic {
        return run_synthetic(a);
    }
    use super::experiment::{self, Options};
    if a.min_degree > a.max_degree {
        return Err("--min-degree is above --max-degree".into());
    }
    if a.threads.is_empty() || a.threads.iter().any(|&t| t == 0 || t > 64) {
        return Err("--threads: counts between 1 and 64".into());
    }
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let modes = experiment::modes(&a.modes, &a.threads)?;
    let tesserad = match a.tesserad {
        Some(p) => std::path::absolute(&p)?,
        None => std::env::current_exe()?
            .parent()
            .map(|d| d.join("tesserad"))
            .ok_or("cannot locate tesserad; pass --tesserad")?,
    };
    let out = match a.out {
        Some(p) => std::path::absolute(&p)?,
        None => std::env::temp_dir().join(format!("tessera-demo-{}", std::process::id())),
    };
    let o = Options {
        ases: a.ases,
        min_degree: a.min_degree,
        max_degree: a.max_degree,
        prefixes: a.prefixes,
        vantage_degree: a.degree,
        seed: a.seed,
        mrai: Duration::try_from_secs_f64(a.mrai).map_err(|_| "bad --mrai")?,
        modes,
        out,
        tesserad,
        timeout: Duration::from_secs(a.timeout),
        quiet: Duration::try_from_secs_f64(a.quiet).map_err(|_| "bad --quiet")?,
        reps: a.reps,
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // First signal: stop the phase under way and the daemon; second: kill
    // the daemon and exit at once.
    replay::stop_on_signals(stop.clone(), experiment::kill_child)?;
    let t0 = Instant::now();
    let rep = experiment::run(&o, &stop);
    replay::signal_exit_gate();
    let rep = rep?;
    println!("topology: {}", rep.topology);
    println!("vantage:  {}", rep.vantage);
    println!("sim:      {}", rep.sim);
    println!("trace:    {}", rep.trace);
    print!("{}", experiment::table(&rep));
    for c in &rep.charts {
        println!("chart: {}", c.display());
    }
    println!(
        "output in {} (trace.mrt, tesserad-*/ configs and logs); {:.1} s in all",
        o.out.display(),
        t0.elapsed().as_secs_f64()
    );
    if rep.interrupted {
        eprintln!("tessera demo: interrupted");
        return Ok(ExitCode::from(1));
    }
    let bad = rep.rows.iter().filter(|r| !r.ok).count();
    if bad > 0 {
        eprintln!("tessera demo: {bad} run(s) failed or did not converge");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_synthetic(a: Args) -> CmdResult {
    if a.peers == 0 || a.peers > u16::MAX as usize {
        return Err("--peers must be between 1 and 65535".into());
    }
    let cfg = SynthConfig {
        peers: a.peers,
        prefixes_v4: a.prefixes_v4,
        prefixes_v6: a.prefixes_v6,
        all_peers_all_prefixes: a.all_peers,
        seed: a.seed,
    };
    let tty = std::io::stderr().is_terminal();
    let rep = pipeline(&cfg, |stage, done, total| {
        if tty && total > 0 {
            let pct = done as f64 * 100.0 / total as f64;
            let bar = (pct / 5.0) as usize;
            eprint!("\r{stage:>7} [{:<20}] {pct:5.1}%", "#".repeat(bar.min(20)));
            if done >= total {
                eprint!("\r{:60}\r", "");
            }
            let _ = std::io::stderr().flush();
        }
    })?;
    print!("{rep}");
    Ok(ExitCode::SUCCESS)
}

/// Everything `tessera demo` prints.
#[derive(Clone, Debug, Default)]
struct DemoReport {
    peers: usize,
    written: DumpSummary,
    mrt_bytes: usize,
    records: u64,
    prefixes_v4: u64,
    prefixes_v6: u64,
    entries: u64,
    distinct_attr_sets: usize,
    distinct_origin_as: usize,
    mean_path_len: f64,
    max_path_len: usize,
    /// (prefix length, share of IPv4 prefixes), most common first.
    v4_len_mix: Vec<(u8, f64)>,
    /// (peer AS, entries), as the PEER_INDEX_TABLE lists them.
    per_peer: Vec<(u32, u64)>,
    sample_lines: Vec<String>,
    t_generate: Duration,
    t_encode: Duration,
    t_decode: Duration,
}

/// Why the demo failed. It should not, short of a codec bug.
#[derive(Debug)]
enum DemoError {
    Io(std::io::Error),
    Mrt(mrt::MrtError),
    Bgp(bgp_wire::WireError),
    Mismatch(&'static str),
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemoError::Io(e) => write!(f, "I/O: {e}"),
            DemoError::Mrt(e) => write!(f, "MRT decode: {e}"),
            DemoError::Bgp(e) => write!(f, "BGP attribute decode: {e:?}"),
            DemoError::Mismatch(what) => {
                write!(f, "decoded data disagrees with the generator: {what}")
            }
        }
    }
}

impl std::error::Error for DemoError {}

/// Runs the pipeline. `progress(stage, done, total)` reports long stages.
fn pipeline(
    cfg: &SynthConfig,
    mut progress: impl FnMut(&str, usize, usize),
) -> Result<DemoReport, DemoError> {
    let mut rep = DemoReport {
        peers: cfg.peers,
        ..DemoReport::default()
    };
    let t0 = Instant::now();
    let rib = SynthRib::generate(cfg);
    rep.t_generate = t0.elapsed();

    let t0 = Instant::now();
    let mut w = MrtWriter::new(Vec::with_capacity(rib.prefixes.len() * 256));
    rep.written = write_rib_dump(&rib, 1_700_000_000, &mut w, |d, t| progress("encode", d, t))
        .map_err(DemoError::Io)?;
    let bytes = w.finish().map_err(DemoError::Io)?;
    rep.t_encode = t0.elapsed();
    rep.mrt_bytes = bytes.len();

    let t0 = Instant::now();
    decode_and_summarise(&bytes, &mut rep, &mut progress)?;
    rep.t_decode = t0.elapsed();

    if rep.records != rep.written.records || rep.entries != rep.written.entries {
        return Err(DemoError::Mismatch("record or entry count"));
    }
    if rep.prefixes_v4 + rep.prefixes_v6 != rib.prefixes.len() as u64 {
        return Err(DemoError::Mismatch("prefix count"));
    }
    Ok(rep)
}

fn decode_and_summarise(
    bytes: &[u8],
    rep: &mut DemoReport,
    progress: &mut impl FnMut(&str, usize, usize),
) -> Result<(), DemoError> {
    let mut reader = MrtReader::new(bytes);
    let mut attr_sets: HashSet<&[u8]> = HashSet::new();
    let mut origins: HashSet<u32> = HashSet::new();
    let mut v4_lens: HashMap<u8, u64> = HashMap::new();
    let mut per_peer: Vec<u64> = Vec::new();
    let mut path_total = 0u64;
    // Records borrow the reader's buffer, so walk raw bodies and parse them
    // here; attribute sets are keyed by slices of `bytes` itself.
    while let Some(raw) = reader.next_raw() {
        let raw = raw.map_err(DemoError::Mrt)?;
        rep.records += 1;
        let body_start = raw.offset as usize + mrt::HEADER_LEN;
        let body_len = raw.body.len();
        let Some(body) = bytes.get(body_start..body_start + body_len) else {
            return Err(DemoError::Mismatch("record body outside the buffer"));
        };
        let offset = body_start + body_len;
        let parsed = Body::parse(raw.header.mrt_type, raw.header.subtype, body)
            .map_err(|_| DemoError::Mismatch("malformed record"))?;
        match parsed {
            Some(Body::PeerIndexTable(t)) => {
                rep.per_peer = t.peers().map(|p| (p.asn.0, 0)).collect();
                per_peer = vec![0; rep.per_peer.len()];
            }
            Some(Body::Rib(r)) => {
                match r.prefix {
                    Prefix::V4(p) => {
                        rep.prefixes_v4 += 1;
                        *v4_lens.entry(p.len()).or_default() += 1;
                    }
                    Prefix::V6(_) => rep.prefixes_v6 += 1,
                }
                let ctx = ParseCtx::mrt_rib(r.afi_safi());
                for e in r.entries() {
                    rep.entries += 1;
                    if let Some(c) = per_peer.get_mut(e.peer_index as usize) {
                        *c += 1;
                    }
                    attr_sets.insert(e.attributes);
                    for a in AttrIter::new(e.attributes) {
                        let a = a.map_err(DemoError::Bgp)?;
                        if let PathAttribute::AsPath(p) = a.typed(ctx).map_err(DemoError::Bgp)? {
                            let n = p.path_len();
                            path_total += n as u64;
                            rep.max_path_len = rep.max_path_len.max(n);
                            if let Some(o) = p.origin_asn() {
                                origins.insert(o.0);
                            }
                        }
                    }
                }
                if rep.records.is_multiple_of(8192) {
                    progress("decode", offset, bytes.len());
                }
            }
            _ => {}
        }
    }
    progress("decode", bytes.len(), bytes.len());
    for (slot, n) in rep.per_peer.iter_mut().zip(per_peer) {
        slot.1 = n;
    }
    rep.distinct_attr_sets = attr_sets.len();
    rep.distinct_origin_as = origins.len();
    rep.mean_path_len = if rep.entries > 0 {
        path_total as f64 / rep.entries as f64
    } else {
        0.0
    };
    let mut mix: Vec<(u8, f64)> = v4_lens
        .into_iter()
        .map(|(l, n)| (l, n as f64 / rep.prefixes_v4.max(1) as f64))
        .collect();
    mix.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    mix.truncate(5);
    rep.v4_len_mix = mix;
    rep.sample_lines = sample_lines(bytes, 4);
    Ok(())
}

/// The first `n` lines `tessera mrt dump -m` would print for these bytes.
fn sample_lines(bytes: &[u8], n: usize) -> Vec<String> {
    let mut reader = MrtReader::new(bytes);
    let mut dumper = Dumper::new();
    let mut out = Vec::new();
    while let Some(Ok(raw)) = reader.next_raw() {
        let info = RecordInfo {
            timestamp: raw.header.timestamp,
            microseconds: raw.header.microseconds.unwrap_or(0),
            mrt_type: raw.header.mrt_type,
            subtype: raw.header.subtype,
        };
        dumper.record(&info, raw.body, &mut out);
        if out.iter().filter(|&&b| b == b'\n').count() >= n {
            break;
        }
    }
    String::from_utf8_lossy(&out)
        .lines()
        .take(n)
        .map(str::to_owned)
        .collect()
}

impl fmt::Display for DemoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = |d: Duration| d.as_secs_f64();
        writeln!(
            f,
            "Tessera demo: synthetic collector RIB -> MRT (in memory) -> decode"
        )?;
        writeln!(
            f,
            "  generated   {} peers, {} prefixes in {:.3} s",
            self.peers,
            self.prefixes_v4 + self.prefixes_v6,
            secs(self.t_generate)
        )?;
        writeln!(
            f,
            "  encoded     {} TABLE_DUMP_V2 records, {} RIB entries, {:.1} MiB in {:.3} s",
            self.written.records,
            self.written.entries,
            self.mrt_bytes as f64 / (1024.0 * 1024.0),
            secs(self.t_encode)
        )?;
        let rate = self.records as f64 / secs(self.t_decode).max(1e-9);
        writeln!(
            f,
            "  decoded     {} records ({:.2} M records/s, {:.2} M entries/s, attributes parsed)",
            self.records,
            rate / 1e6,
            self.entries as f64 / secs(self.t_decode).max(1e-9) / 1e6
        )?;
        writeln!(
            f,
            "  prefixes    {} IPv4, {} IPv6; top IPv4 lengths: {}",
            self.prefixes_v4,
            self.prefixes_v6,
            self.v4_len_mix
                .iter()
                .map(|(l, s)| format!("/{l} {:.1}%", s * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        writeln!(
            f,
            "  AS paths    mean length {:.2}, longest {}, {} origin ASes",
            self.mean_path_len, self.max_path_len, self.distinct_origin_as
        )?;
        writeln!(
            f,
            "  attributes  {} distinct sets for {} entries ({:.1} entries per set)",
            self.distinct_attr_sets,
            self.entries,
            self.entries as f64 / self.distinct_attr_sets.max(1) as f64
        )?;
        writeln!(f, "  per peer    (AS: entries)")?;
        for chunk in self.per_peer.chunks(4) {
            let row: Vec<String> = chunk
                .iter()
                .map(|(a, n)| format!("AS{a:<6} {n:>8}"))
                .collect();
            writeln!(f, "              {}", row.join("   "))?;
        }
        writeln!(f, "  first lines as `tessera mrt dump -m` prints them:")?;
        for l in &self.sample_lines {
            writeln!(f, "    {l}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_pipeline_agrees_with_the_generator() {
        let cfg = SynthConfig {
            peers: 12,
            prefixes_v4: 3_000,
            prefixes_v6: 500,
            ..SynthConfig::default()
        };
        let mut stages = HashSet::new();
        let rep = pipeline(&cfg, |s, _, _| {
            stages.insert(s.to_string());
        })
        .unwrap();
        assert_eq!(rep.prefixes_v4, 3_000);
        assert_eq!(rep.prefixes_v6, 500);
        assert_eq!(rep.per_peer.len(), 12);
        assert_eq!(rep.per_peer[0].1, 3_000, "peer 0 is a full IPv4 feed");
        assert!(rep.per_peer.iter().all(|&(_, n)| n > 0));
        assert!(
            (3.5..5.5).contains(&rep.mean_path_len),
            "{}",
            rep.mean_path_len
        );
        assert!(rep.distinct_attr_sets > 1 && rep.distinct_attr_sets as u64 <= rep.entries);
        assert_eq!(rep.sample_lines.len(), 4);
        assert!(rep.sample_lines[0].starts_with("TABLE_DUMP2|1700000000|B|198.18.0.1|3356|"));
        assert!(stages.contains("encode") && stages.contains("decode"));
        let text = rep.to_string();
        assert!(text.contains("3000 IPv4, 500 IPv6"), "{text}");
    }
}
