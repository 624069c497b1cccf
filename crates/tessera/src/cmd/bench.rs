//! `tessera bench`: the bgperf-style benchmark of BGP daemons. Argument
//! parsing only; the work is crate `bench` (topology, daemons, runs,
//! report). See docs/bench.md.

use super::CmdResult;
use ::bench::{self, BenchConfig, DutSpec, Scenario, Status};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Scenarios, comma-separated: a, b, c (= c30,c10), c30, c10, d, e, f
    /// (20 full feeds of the jinx table, per-peer paths), f:PEERS, g
    /// (route server: 10 feeders x 100k shared, 100 clients; tesserad and
    /// BIRD), g:FEEDERSxPREFIXESxCLIENTS, h (steady churn: a full table,
    /// then the RIS update trace looped at --rate for --duration, 10
    /// monitor peers), or synthetic:PEERSxPREFIXES:shared|unique.
    #[arg(long, default_value = "a,b,c")]
    scenarios: String,
    /// DUTs, repeatable or comma-separated:
    /// tesserad[:PIPELINE[:THREADS][:LOCKS][:STREAMS]] (PIPELINE:
    /// sequential, per-peer, worker-pool, sharded; LOCKS: stripes, fine,
    /// for per-peer and worker-pool; STREAMS: per-session, per-worker, for
    /// worker-pool; plain `tesserad` is the daemon's default, sharded),
    /// bird, frr, gobgp, openbgpd.
    #[arg(
        long = "dut",
        value_delimiter = ',',
        default_value = "tesserad:sequential,tesserad:sharded:1,tesserad:sharded:2,bird,frr,gobgp,openbgpd"
    )]
    duts: Vec<String>,
    /// Repetitions of every run (median and spread are reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Multiply every prefix count by this (e.g. 0.01 for a quick run).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Output directory (CSV, JSON, SVG).
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// The tesserad binary; default: next to this tessera binary.
    #[arg(long)]
    tesserad: Option<PathBuf>,
    /// Seconds each run may take from the start of sending.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Skip the generator-ceiling runs.
    #[arg(long)]
    no_ceiling: bool,
    /// Directory of the shared MRT files (scenarios d and e).
    #[arg(long, default_value = "../shared/data/mrt")]
    mrt_dir: PathBuf,
    /// RNG seed of the synthetic tables.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Whom the DUT exports to: `monitor` (only the monitor session) or
    /// `all` (every peer, the generator peers included, which read and
    /// discard it; the report adds peak RSS per exporting peer and case
    /// names get the suffix `-export-all`).
    #[arg(long, default_value = "monitor", value_parser = ["monitor", "all"])]
    export: String,
    /// Scenario h: UPDATEs per second of the looped update trace.
    #[arg(long, default_value_t = 10_000.0)]
    rate: f64,
    /// Put every DUT on these CPUs (`0,1`, `0-3`) and the bench, with its
    /// generator and monitor, on the CPUs this process may use that are
    /// not listed, as on a router whose daemon has its cores to itself.
    /// tesserad's default thread count follows the DUT's CPUs. Default:
    /// everything shares every CPU.
    #[arg(long)]
    dut_cpus: Option<String>,
    /// Scenario h: seconds the update trace is looped.
    #[arg(long, default_value_t = 60)]
    duration: u64,
}

pub fn run(a: Args) -> CmdResult {
    if !(a.scale > 0.0 && a.scale.is_finite()) {
        return Err("--scale must be a positive number".into());
    }
    if !(a.rate > 0.0 && a.rate.is_finite()) {
        return Err("--rate must be a positive number".into());
    }
    if a.duration == 0 {
        return Err("--duration must be at least 1 second".into());
    }
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let dut_cpus = a
        .dut_cpus
        .as_deref()
        .map(bench::cpus::parse_list)
        .transpose()
        .map_err(|e| format!("--dut-cpus: {e}"))?;
    let mut scenarios = Vec::new();
    for s in a
        .scenarios
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        scenarios.extend(Scenario::parse(s)?);
    }
    let duts = a
        .duts
        .iter()
        .map(|d| d.trim().parse::<DutSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    let tesserad = match a.tesserad {
        // Absolute: the DUT is started from its own work directory.
        Some(p) => std::path::absolute(&p)?,
        None => std::env::current_exe()?
            .parent()
            .map(|d| d.join("tesserad"))
            .ok_or("cannot locate tesserad; pass --tesserad")?,
    };
    let cfg = BenchConfig {
        scenarios,
        duts,
        reps: a.reps,
        scale: a.scale,
        out: a.out.clone(),
        tesserad,
        timeout: Duration::from_secs(a.timeout),
        ceiling: !a.no_ceiling,
        mrt_dir: a.mrt_dir,
        seed: a.seed,
        export_all: a.export == "all",
        rate: a.rate,
        duration: Duration::from_secs(a.duration),
        dut_cpus,
        name: format!("tb{}", std::process::id()),
    };
    let stop = Arc::new(AtomicBool::new(false));
    // SIGINT, SIGTERM, SIGHUP: stop, stop the daemons, remove the
    // namespaces, write what was measured. A second signal exits at once
    // but still removes the namespaces (and kills the daemons in them).
    let name = cfg.name.clone();
    replay::stop_on_signals(stop.clone(), move || bench::netns::remove_named(&name))?;
    let mut say = |l: &str| {
        println!("{l}");
        let _ = std::io::stdout().flush();
    };
    let rep = bench::run(&cfg, &stop, &mut say);
    replay::signal_exit_gate();
    let rep = rep.map_err(|(e, s)| format!("{e}: {s}"))?;
    let bad = rep
        .runs
        .iter()
        .filter(|m| matches!(m.status, Status::Failed(..) | Status::NotConverged(_)))
        .count();
    println!(
        "results in {}: summary.md, summary.csv, runs.csv, results.json, *.svg",
        a.out.display()
    );
    print!(
        "{}",
        bench::report::summary_md(&rep, &bench::report::summarize(&rep))
    );
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        // A signal between two runs skips the rest: the run is not
        // complete even when every run it did converged.
        eprintln!("tessera bench: interrupted; the runs above are all that was measured");
        return Ok(ExitCode::from(1));
    }
    if bad > 0 {
        eprintln!("tessera bench: {bad} run(s) failed or did not converge");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
