//! `tessera`: the command-line front end. Wiring only: every command parses
//! its arguments here and calls into a library crate.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd;

#[derive(Parser)]
#[command(name = "tessera", version, about = "Tessera router tools")]
struct Cli {
    /// `--socket`, `--json` for the daemon commands (show, neighbor, configure).
    #[command(flatten)]
    ctl: cmd::ctl::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The seeds' experiment: topology, BGP simulation, trace at a 12-peer
    /// AS, replay into tesserad in every pipeline mode, table and charts
    /// (--synthetic: decode a synthetic MRT RIB instead).
    Demo(cmd::demo::Args),
    /// MRT tools: dump, stats, write.
    Mrt {
        #[command(subcommand)]
        command: MrtCommand,
    },
    /// Replay BGP sessions into a router under test (or run a --sink).
    Replay(Box<cmd::replay::Args>),
    /// Benchmark BGP daemons (tesserad, BIRD, FRR, GoBGP, OpenBGPD) in
    /// network namespaces: convergence, CPU, memory (needs root).
    Bench(cmd::bench::Args),
    /// Simulation: topologies (`sim topo`), the vantage point (`sim pick`),
    /// BGP over an AS topology (`sim run`).
    Sim {
        #[command(subcommand)]
        command: cmd::sim::SimCommand,
    },
    /// Cluster congestion control: `cc sim SCENARIO` runs a reproduction of
    /// Ye 2010 ch. 5-7 in the discrete-event simulator (`cc sim list`).
    Cc {
        #[command(subcommand)]
        command: cmd::cc::CcCommand,
    },
    /// A cluster router in network namespaces: `cluster up N`,
    /// `cluster status`, `cluster down`.
    Cluster {
        #[command(subcommand)]
        command: cmd::cluster::ClusterCommand,
    },
    /// A live terminal view of a running tesserad: peers, UPDATE rates,
    /// RIB, per-stage latency, BFD (`q` quits).
    Top(cmd::top::Args),
    /// One traffic generator (sender and receiver, AF_PACKET) on an
    /// interface: per-flow loss, reordering and latency (needs root).
    Trafgen(cmd::trafgen::Args),
    /// Daemon commands over tesserad's control socket, in BIRD's words.
    #[command(flatten)]
    Ctl(cmd::ctl::CtlCommand),
    /// Write the manual pages tessera(1) and tessera-COMMAND(1) (roff)
    /// into DIR; the .deb (scripts/deb) installs them.
    #[command(hide = true)]
    Manpage { dir: std::path::PathBuf },
}

#[derive(Subcommand)]
enum MrtCommand {
    /// Print records like `bgpdump` (`-m` one line per entry), or as JSON.
    Dump(cmd::mrt_dump::Args),
    /// Records per type, peers, distinct prefixes, time span.
    Stats(cmd::mrt_stats::Args),
    /// Re-encode what was read into a new MRT file.
    Write(cmd::mrt_write::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.ctl.is_set() && !matches!(cli.command, Command::Ctl(_)) {
        eprintln!("tessera: --socket/--json before the command apply only to daemon commands");
        return ExitCode::from(2);
    }
    if matches!(cli.command, Command::Sim { .. } | Command::Mrt { .. }) {
        // Commands that only print: `tessera sim run ... | head` ends quietly
        // on a closed pipe, as Unix filters do, instead of panicking in
        // `println!`. Not for the commands with sockets: there a peer that
        // closes must be an error, not a signal.
        // SAFETY: restoring a signal's default disposition before any
        // thread is started.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let r = match cli.command {
        Command::Manpage { dir } => manpage(&dir).map_err(Into::into),
        Command::Ctl(c) => cmd::ctl::run(cli.ctl, c),
        Command::Top(a) => cmd::top::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Replay(a) => cmd::replay::run(*a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Sim { command } => cmd::sim::run(command),
        Command::Cc { command } => cmd::cc::run(command),
        Command::Cluster { command } => cmd::cluster::run(command),
        Command::Trafgen(a) => cmd::trafgen::run(a),
        Command::Mrt { command } => match command {
            MrtCommand::Dump(a) => cmd::mrt_dump::run(a),
            MrtCommand::Stats(a) => cmd::mrt_stats::run(a),
            MrtCommand::Write(a) => cmd::mrt_write::run(a),
        },
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tessera: {e}");
            ExitCode::from(1)
        }
    }
}

/// tessera(1) and one page per command (tessera-show(1), ...), as git
/// does, written into `dir`.
fn manpage(dir: &std::path::Path) -> Result<ExitCode, String> {
    use clap::CommandFactory;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(ExitCode::SUCCESS)
}
