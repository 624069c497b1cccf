//! `tessera sim`: network simulation. (`run` here; the topology commands
//! `topo` and `pick` come from the topology branch.)

pub mod run;

/// The `sim` subcommands.
#[derive(clap::Subcommand)]
pub enum SimCommand {
    /// Simulate BGP over an AS topology: every AS runs Tessera's RIB core;
    /// write an MRT trace, RIB snapshots and convergence figures.
    Run(Box<run::Args>),
}

/// Runs a `sim` subcommand.
pub fn run(c: SimCommand) -> super::CmdResult {
    match c {
        SimCommand::Run(a) => run::run(*a),
    }
}
