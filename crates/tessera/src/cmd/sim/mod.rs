//! `tessera sim ...`: the simulation commands. `topo` makes or converts a
//! topology, `pick` names the vantage point the seeds would choose, `run`
//! simulates BGP over a topology. The
//! shared [`TopoArgs`] (generator or `--import`) and [`load`] are what any
//! further `sim` command uses to get its topology.
//!
//! Wiring only: generators, formats and centrality are the `topo` crate.

use super::CmdResult;
use clap::{Subcommand, ValueEnum};
use std::path::PathBuf;
use topo::build::{self, Built, Finish, Kind, Spec};
use topo::flat::Degree;
use topo::format::Format;
use topo::prefixes::Counts;

pub mod pick;
pub mod run;
pub mod topo_cmd;

/// The `sim` command group.
#[derive(Subcommand)]
pub enum SimCommand {
    /// Generate a topology (BRITE Waxman/BA, transit-stub, AS-relationship)
    /// or import one (CAIDA, BRITE, GML); summarise it and write it out.
    Topo(topo_cmd::Args),
    /// Print the most central node of a given degree (the seeds' vantage point).
    Pick(pick::Args),
    /// Simulate BGP over an AS topology: every AS runs Tessera's RIB core;
    /// write an MRT trace, RIB snapshots and convergence figures.
    Run(Box<run::Args>),
}

/// Run a `sim` command.
pub fn run(c: SimCommand) -> CmdResult {
    match c {
        SimCommand::Topo(a) => topo_cmd::run(a),
        SimCommand::Pick(a) => pick::run(a),
        SimCommand::Run(a) => run::run(*a),
    }
}

/// Generators.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    /// BRITE Waxman: distance-weighted incremental growth on a plane.
    Waxman,
    /// BRITE Barabási-Albert: degree-weighted incremental growth.
    Ba,
    /// Two-level transit-stub hierarchy.
    TransitStub,
    /// Internet-like customer/provider/peer graph with a tier-1 clique.
    AsRel,
}

/// Prefix counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrefixArg {
    /// `--per-origin` prefixes for every AS.
    PerOrigin,
    /// Counts from the origin-AS histogram of a real table.
    Real,
    /// Keep what the topology has (none for generated graphs).
    None,
}

/// File formats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// CAIDA AS-relationship (`a|b|rel`).
    Caida,
    /// BRITE `.brite`.
    Brite,
    /// TopologyZoo GML (import only).
    Gml,
    /// GraphViz (export only).
    Dot,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Caida => Format::Caida,
            FormatArg::Brite => Format::Brite,
            FormatArg::Gml => Format::Gml,
            FormatArg::Dot => Format::Dot,
        }
    }
}

/// Where a topology comes from, and how it is completed.
#[derive(clap::Args, Debug)]
pub struct TopoArgs {
    /// Read this topology file instead of generating one.
    #[arg(long, value_name = "FILE")]
    pub import: Option<PathBuf>,
    /// Format of --import (default: from the extension: .txt/as-rel caida,
    /// .brite, .gml).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub import_format: Option<FormatArg>,
    /// Generator.
    #[arg(long, value_enum, default_value = "waxman")]
    pub model: ModelArg,
    /// Number of ASes.
    #[arg(long, default_value_t = 1000)]
    pub nodes: u32,
    /// Lowest degree (waxman, ba).
    #[arg(long, default_value_t = 10)]
    pub min_degree: u32,
    /// Highest degree (waxman, ba).
    #[arg(long, default_value_t = 15)]
    pub max_degree: u32,
    /// BRITE's m instead of a degree range: links each new node adds
    /// (waxman, ba).
    #[arg(long)]
    pub m: Option<u32>,
    /// Waxman's beta (distance decay).
    #[arg(long, default_value_t = 0.2)]
    pub beta: f64,
    /// Transit ASes (transit-stub; default one per 20 ASes).
    #[arg(long)]
    pub transit: Option<u32>,
    /// Tier-1 clique size (as-rel).
    #[arg(long, default_value_t = 12)]
    pub tier1: u32,
    /// RNG seed: same seed, same topology.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Prefix counts per AS (lengths always follow the real mix).
    #[arg(long, value_enum, default_value = "real")]
    pub prefixes: PrefixArg,
    /// Prefixes per AS with --prefixes per-origin.
    #[arg(long, default_value_t = 1)]
    pub per_origin: u32,
    /// This many prefixes in all instead of --prefixes: at least one per AS
    /// when there are enough, the rest in proportion to real origin counts.
    #[arg(long, value_name = "N")]
    pub total_prefixes: Option<u32>,
    /// Share of the prefixes (0..1) that are IPv6 (lengths from
    /// route-views6; carved from 2000::/3).
    #[arg(long, default_value_t = 0.0, value_name = "F")]
    pub v6_share: f64,
    /// Keep graphs without relationships (waxman, ba, BRITE/GML files)
    /// unannotated instead of ranking them by degree.
    #[arg(long)]
    pub no_annotate: bool,
    /// Degrees within this fraction of each other make peers when annotating.
    #[arg(long, default_value_t = 0.0)]
    pub peer_tolerance: f64,
}

/// Make or read the topology the arguments describe, and complete it.
pub fn load(a: &TopoArgs) -> Result<Built, Box<dyn std::error::Error>> {
    if a.min_degree > a.max_degree {
        return Err(format!(
            "--min-degree {} is above --max-degree {}",
            a.min_degree, a.max_degree
        )
        .into());
    }
    let mut b = match &a.import {
        Some(path) => {
            let fmt = match a.import_format {
                Some(f) => Format::from(f),
                None => Format::from_path(path).ok_or_else(|| {
                    format!(
                        "{}: cannot tell the format from the name; give --import-format",
                        path.display()
                    )
                })?,
            };
            let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let text = String::from_utf8_lossy(&text);
            build::import(&text, &path.display().to_string(), fmt)?
        }
        None => {
            // A status line where generation takes more than a second or two.
            let flat = matches!(a.model, ModelArg::Waxman | ModelArg::Ba);
            if a.nodes > if flat { 5_000 } else { 20_000 } {
                eprintln!("tessera: generating {} ASes...", a.nodes);
            }
            build::generate(&Spec {
                kind: match a.model {
                    ModelArg::Waxman => Kind::Waxman,
                    ModelArg::Ba => Kind::Ba,
                    ModelArg::TransitStub => Kind::TransitStub,
                    ModelArg::AsRel => Kind::AsRel,
                },
                nodes: a.nodes,
                degree: match a.m {
                    Some(m) => Degree::PerNode(m),
                    None => Degree::Range {
                        min: a.min_degree,
                        max: a.max_degree,
                    },
                },
                beta: a.beta,
                transit: a.transit,
                tier1: a.tier1,
                seed: a.seed,
            })?
        }
    };
    build::finish(
        &mut b,
        &Finish {
            annotate: (!a.no_annotate).then_some(a.peer_tolerance),
            prefixes: match (a.total_prefixes, a.prefixes) {
                (Some(n), _) => Some(Counts::Total(n)),
                (None, PrefixArg::PerOrigin) => Some(Counts::PerOrigin(a.per_origin)),
                (None, PrefixArg::Real) => Some(Counts::Real),
                (None, PrefixArg::None) => None,
            },
            seed: a.seed,
        },
    )?;
    topo::prefixes::to_v6(&mut b.graph, a.v6_share, a.seed)?;
    Ok(b)
}
