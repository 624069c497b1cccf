//! `tessera sim pick --degree 12 [FILE] [generator arguments]`: the most
//! central node (closeness, see `topo::centrality`) with that many
//! neighbours, the node the seeds took their trace at.

use super::{load, TopoArgs};
use crate::cmd::CmdResult;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Wanted number of neighbours.
    #[arg(long, default_value_t = 12)]
    degree: u32,
    /// A topology file (same as --import).
    #[arg(value_name = "FILE", conflicts_with = "import")]
    file: Option<PathBuf>,
    #[command(flatten)]
    topo: TopoArgs,
}

pub fn run(mut a: Args) -> CmdResult {
    if a.file.is_some() {
        a.topo.import = a.file.take();
    }
    let b = load(&a.topo)?;
    let Some(p) = topo::centrality::pick(&b.graph, a.degree) else {
        return Err("the topology has no nodes".into());
    };
    if p.nearest {
        println!(
            "note: no node has degree {}; nearest degree present is {}",
            a.degree, p.degree
        );
    }
    println!(
        "AS{} (node {}): degree {}, closeness {:.4}, mean {:.2} hops to the {} of {} other nodes it reaches",
        p.asn,
        p.node,
        p.degree,
        p.closeness,
        p.mean_hops,
        p.reached,
        b.graph.nodes.len().saturating_sub(1)
    );
    Ok(ExitCode::SUCCESS)
}
