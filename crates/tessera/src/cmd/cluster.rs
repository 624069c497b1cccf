//! `tessera cluster up|status|down`: an N-node cluster router in network
//! namespaces (wiring; the logic is `bench::cluster`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use super::CmdResult;

const DEFAULT_DIR: &str = "/tmp/tessera-cluster";

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Build N nodes (tesserad each) on a bridged fabric, with external
    /// hosts running BIRD as eBGP neighbours; waits until every BFD and
    /// BGP session is up (needs root, `ip`, `bird`).
    Up {
        /// Number of nodes (2..=32).
        nodes: usize,
        /// External ports (and hosts) per node (1..=32).
        #[arg(long, default_value_t = 1)]
        ports_per_node: usize,
        /// Load balancing over the fabric: direct, vlb, direct-vlb.
        #[arg(long, default_value = "direct")]
        mode: String,
        /// BFD interval between the nodes, ms (multiplier 3); 100 leaves
        /// margin when other work loads the cores (`[cluster]` default: 10).
        #[arg(long, default_value_t = 100)]
        bfd_ms: u32,
        /// Prefix of the namespace names.
        #[arg(long, default_value = "tcl")]
        name: String,
        /// Where the state file, configs, sockets and logs go.
        #[arg(long, default_value = DEFAULT_DIR)]
        dir: PathBuf,
        /// The tesserad binary; default: next to this tessera binary.
        #[arg(long)]
        tesserad: Option<PathBuf>,
        /// Seconds to wait for every session.
        #[arg(long, default_value_t = 60)]
        wait: u64,
    },
    /// Nodes, BFD and iBGP/eBGP state, CPU time, fabric link counters.
    Status {
        #[arg(long, default_value = DEFAULT_DIR)]
        dir: PathBuf,
    },
    /// Kill the daemons and delete the namespaces listed in the state
    /// file (also after a crash or an interrupted `up`).
    Down {
        #[arg(long, default_value = DEFAULT_DIR)]
        dir: PathBuf,
    },
    /// The experiments of issue 14 (docs/cluster.md): each builds its
    /// cluster, runs `tessera trafgen` in the hosts and takes the cluster
    /// down (also on error and Ctrl-C). Needs root, `ip`, `ping`, `bird`.
    Bench(Box<BenchArgs>),
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Experiments, comma-separated, run in this order: packing, reorder,
    /// load, scaling, failure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "packing,reorder,load,scaling,failure"
    )]
    experiments: Vec<String>,
    /// Node counts of the packing experiment (packed vs unpacked).
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    packing_nodes: Vec<usize>,
    /// Node counts of the scaling experiment.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8")]
    scaling_nodes: Vec<usize>,
    /// Nodes of the reorder, load and failure experiments.
    #[arg(long, default_value_t = 4)]
    nodes: usize,
    /// Seconds of traffic per run.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Offered pps per sender in the throughput runs (packing, scaling);
    /// 0 = as fast as the generator can.
    #[arg(long, default_value_t = 0)]
    rate: u64,
    /// Offered pps per sender at light load (latency, reorder, load,
    /// failure).
    #[arg(long, default_value_t = 2000)]
    light_rate: u64,
    /// Offered pps per sender in the reorder runs.
    #[arg(long, default_value_t = 20000)]
    reorder_rate: u64,
    /// Flows per sender in the reorder runs (few, so that packets of one
    /// flow follow each other closely).
    #[arg(long, default_value_t = 8)]
    reorder_flows: u32,
    /// Frame size with FCS, 64..=1518.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Flows (5-tuples) per sender.
    #[arg(long, default_value_t = 64)]
    flows: u32,
    /// Packing degree of the packed case (the unpacked case is 1).
    #[arg(long, default_value_t = 16)]
    packing: u8,
    /// BFD interval between the nodes, ms (x 3).
    #[arg(long, default_value_t = 100)]
    bfd_ms: u32,
    /// Prefix of the namespace names.
    #[arg(long, default_value = "tcb")]
    name: String,
    /// State, configurations and logs of the cluster under test.
    #[arg(long, default_value = "/tmp/tessera-cluster-bench")]
    dir: PathBuf,
    #[arg(long)]
    tesserad: Option<PathBuf>,
    /// Seconds to wait for every session of each cluster.
    #[arg(long, default_value_t = 90)]
    wait: u64,
    /// Write one CSV line per run here.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write runs and derived figures as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write SVG charts (cluster-*.svg) into this directory.
    #[arg(long)]
    svg_dir: Option<PathBuf>,
}

fn bench(a: BenchArgs) -> CmdResult {
    use bench::cluster_bench as cb;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let experiments = a
        .experiments
        .iter()
        .map(|e| cb::Experiment::parse(e))
        .collect::<Result<Vec<_>, _>>()?;
    if !(0.5..=600.0).contains(&a.duration) {
        return Err("--duration: 0.5..=600 s".into());
    }
    if !(trafgen::payload::MIN_SIZE..=trafgen::payload::MAX_SIZE).contains(&a.size) {
        return Err("--size: 64..=1518".into());
    }
    if !(1..=MAX_PACKING).contains(&a.packing) {
        return Err("--packing: 1..=29".into());
    }
    if !(1..=65_536).contains(&a.flows) || !(1..=65_536).contains(&a.reorder_flows) {
        return Err("--flows and --reorder-flows: 1..=65536".into());
    }
    if a.packing_nodes.is_empty() || a.scaling_nodes.is_empty() {
        return Err("--packing-nodes and --scaling-nodes need at least one count".into());
    }
    let exe = std::env::current_exe()?;
    let tesserad = match a.tesserad {
        Some(p) => p,
        None => exe
            .parent()
            .map(|d| d.join("tesserad"))
            .ok_or("cannot locate tesserad; pass --tesserad")?,
    };
    let o = cb::BenchOpts {
        name: a.name,
        dir: a.dir.clone(),
        tesserad,
        tessera: exe,
        experiments,
        packing_nodes: a.packing_nodes,
        scaling_nodes: a.scaling_nodes,
        nodes: a.nodes,
        duration: Duration::from_secs_f64(a.duration),
        rate_pps: a.rate,
        light_pps: a.light_rate,
        reorder_pps: a.reorder_rate,
        reorder_flows: a.reorder_flows.max(1),
        size: a.size,
        flows: a.flows.max(1),
        packing: a.packing,
        bfd_ms: a.bfd_ms,
        wait: Duration::from_secs(a.wait),
    };
    let stop = Arc::new(AtomicBool::new(false));
    // Ctrl-C (SIGINT, SIGTERM, SIGHUP): the run under way stops and its
    // cluster is taken down; a second signal takes it down and exits.
    let dir = a.dir.clone();
    replay::stop_on_signals(stop.clone(), move || {
        let _ = bench::cluster::down(&dir);
    })?;
    let mut say = |l: &str| println!("{l}");
    let (rows, err) = cb::run(&o, &stop, &mut say);
    replay::signal_exit_gate();
    let figs = cb::figures(&rows);
    println!("\n{}", cb::figures_md(&figs));
    if let Some(p) = &a.csv {
        std::fs::write(p, cb::csv(&rows)).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let Some(p) = &a.json {
        let v = serde_json::json!({
            "date": bench::now_utc(),
            "runs": rows.iter().map(cb::row_json).collect::<Vec<_>>(),
            "figures": figs.iter().map(cb::figure_json).collect::<Vec<_>>(),
        });
        std::fs::write(p, serde_json::to_string_pretty(&v)?)
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let Some(d) = &a.svg_dir {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        for (name, svg) in cb::charts(&rows) {
            let p = d.join(name);
            std::fs::write(&p, svg).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    if let Some(e) = err {
        return Err(
            format!("cluster bench: {e} (the runs above are all that was measured)").into(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `[cluster] packing` is 1..=29 (the cluster option's table).
const MAX_PACKING: u8 = 29;

pub fn run(c: ClusterCommand) -> CmdResult {
    match c {
        ClusterCommand::Up {
            nodes,
            ports_per_node,
            mode,
            bfd_ms,
            name,
            dir,
            tesserad,
            wait,
        } => {
            let plan = bench::cluster::Plan::new(&name, nodes, ports_per_node, &mode, bfd_ms)?;
            let tesserad = match tesserad {
                Some(p) => p,
                None => std::env::current_exe()?
                    .parent()
                    .map(|d| d.join("tesserad"))
                    .ok_or("cannot locate tesserad; pass --tesserad")?,
            };
            let cfg = bench::cluster::UpConfig {
                plan,
                dir: dir.clone(),
                tesserad,
                wait: Duration::from_secs(wait),
            };
            bench::cluster::up(&cfg).map_err(|e| {
                format!(
                    "{e}\n(what was created is listed in {}; `tessera cluster down --dir {}` removes it)",
                    dir.join("state").display(),
                    dir.display()
                )
            })?;
            let st = bench::cluster::status(&dir)?;
            print!("{}", bench::cluster::render(&st));
            println!("cluster up: {nodes} nodes in {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        ClusterCommand::Status { dir } => {
            let st = bench::cluster::status(&dir)?;
            print!("{}", bench::cluster::render(&st));
            Ok(if st.iter().all(bench::cluster::NodeStatus::all_up) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            })
        }
        ClusterCommand::Down { dir } => {
            println!("{}", bench::cluster::down(&dir)?);
            Ok(ExitCode::SUCCESS)
        }
        ClusterCommand::Bench(a) => bench(*a),
    }
}
