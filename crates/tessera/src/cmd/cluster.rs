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
}

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
    }
}
