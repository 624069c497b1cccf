//! One entry point for the command line and the simulator: make or read a
//! topology, then complete it (relationships, latency, prefixes), then
//! write it.

use crate::flat::{self, Degree, Model};
use crate::format::{self, Format};
use crate::prefixes::{self, Counts};
use crate::{annotate, asrel, latency, transit_stub, Graph, ParseError, Point, Rel};
use std::fmt;

/// Most nodes of a flat graph: each link added scans every node, so time
/// grows with the square of the size (20,000 nodes: seconds).
pub const MAX_FLAT_NODES: u32 = 20_000;
/// Most nodes of the other models (linear time; memory bounds them).
pub const MAX_NODES: u32 = 5_000_000;

/// Which generator.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// BRITE Waxman ([`flat`]).
    Waxman,
    /// BRITE Barabási-Albert ([`flat`]).
    Ba,
    /// [`transit_stub`].
    TransitStub,
    /// [`asrel`].
    AsRel,
}

/// Everything that chooses a generated topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Generator.
    pub kind: Kind,
    /// Number of ASes.
    pub nodes: u32,
    /// Degree rule (flat generators).
    pub degree: Degree,
    /// Waxman's beta.
    pub beta: f64,
    /// Transit ASes (transit-stub; `None`: one per 20).
    pub transit: Option<u32>,
    /// Tier-1 clique size (AS-relationship).
    pub tier1: u32,
    /// RNG seed.
    pub seed: u64,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            kind: Kind::Waxman,
            nodes: 1000,
            degree: Degree::Range { min: 10, max: 15 },
            beta: 0.2,
            transit: None,
            tier1: 12,
            seed: 1,
        }
    }
}

/// How to complete a graph.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Finish {
    /// Annotate graphs without relationships by degree, with this peer
    /// tolerance ([`annotate::by_degree`]); `None` leaves them unknown.
    pub annotate: Option<f64>,
    /// Prefix counts; `None` keeps what the graph has.
    pub prefixes: Option<Counts>,
    /// Seed for latencies of formats without them and for prefixes.
    pub seed: u64,
}

/// A topology and what some formats carry besides the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Built {
    /// The graph.
    pub graph: Graph,
    /// Plane positions, when known.
    pub pos: Option<Vec<Point>>,
    /// Tier-1 clique (AS numbers), when known.
    pub clique: Vec<u32>,
    /// IXP ASes (AS numbers), when known.
    pub ixps: Vec<u32>,
}

/// A generator refused its parameters, or prefixes did not fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError(pub String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

/// Generate the topology `s` describes (relationships only where the model
/// has them; no prefixes).
pub fn generate(s: &Spec) -> Result<Built, BuildError> {
    let e = |x: flat::ParamError| BuildError(x.0);
    if s.nodes == 0 {
        return Err(BuildError("at least one node".into()));
    }
    let limit = match s.kind {
        Kind::Waxman | Kind::Ba => MAX_FLAT_NODES,
        Kind::TransitStub | Kind::AsRel => MAX_NODES,
    };
    if s.nodes > limit {
        return Err(BuildError(format!(
            "{} nodes: this model takes at most {limit}",
            s.nodes
        )));
    }
    if s.kind == Kind::TransitStub && s.transit.unwrap_or(s.nodes / 20) > MAX_FLAT_NODES {
        return Err(BuildError(format!(
            "at most {MAX_FLAT_NODES} transit ASes (their core is a flat graph)"
        )));
    }
    Ok(match s.kind {
        Kind::Waxman | Kind::Ba => {
            let f = flat::generate(&flat::Params {
                model: if s.kind == Kind::Ba {
                    Model::Ba
                } else {
                    Model::Waxman { beta: s.beta }
                },
                nodes: s.nodes,
                degree: s.degree,
                hs: 1000.max(((f64::from(s.nodes) * 2.0).sqrt().ceil()) as u32),
                seed: s.seed,
            })
            .map_err(e)?;
            Built {
                graph: f.graph,
                pos: Some(f.pos),
                clique: Vec::new(),
                ixps: Vec::new(),
            }
        }
        Kind::TransitStub => {
            let mut p = transit_stub::Params::for_nodes(s.nodes, s.seed);
            if let Some(t) = s.transit {
                p.transit = t;
            }
            p.hs =
                p.hs.max(((f64::from(p.transit) * 2.0).sqrt().ceil()) as u32);
            let f = transit_stub::generate(&p).map_err(e)?;
            Built {
                graph: f.graph,
                pos: Some(f.pos),
                clique: Vec::new(),
                ixps: Vec::new(),
            }
        }
        Kind::AsRel => {
            let mut p = asrel::Params::for_nodes(s.nodes, s.seed);
            p.tier1 = s.tier1;
            let r = asrel::generate(&p);
            let clique = r
                .clique
                .iter()
                .filter_map(|&i| r.graph.nodes.get(i as usize).map(|n| n.asn))
                .collect();
            Built {
                graph: r.graph,
                pos: None,
                clique,
                ixps: Vec::new(),
            }
        }
    })
}

/// Read a topology file (GraphViz cannot be read).
pub fn import(text: &str, file: &str, fmt: Format) -> Result<Built, ParseError> {
    Ok(match fmt {
        Format::Caida => {
            let f = format::caida::parse(text, file)?;
            Built {
                graph: f.graph,
                pos: None,
                clique: f.clique,
                ixps: f.ixps,
            }
        }
        Format::Brite => {
            let f = format::brite::parse(text, file)?;
            Built {
                graph: f.graph,
                pos: Some(f.pos),
                clique: Vec::new(),
                ixps: Vec::new(),
            }
        }
        Format::Gml => Built {
            graph: format::gml::parse(text, file)?,
            pos: None,
            clique: Vec::new(),
            ixps: Vec::new(),
        },
        Format::Dot => {
            return Err(ParseError::new(
                file,
                1,
                "GraphViz files can be written, not read",
            ))
        }
    })
}

/// Complete a topology: relationships for a graph that has none, latency
/// for links without, prefixes.
pub fn finish(b: &mut Built, f: &Finish) -> Result<(), BuildError> {
    if let Some(tol) = f.annotate {
        if b.graph.links.iter().all(|l| l.rel == Rel::Unknown) {
            annotate::by_degree(&mut b.graph, tol);
        }
    }
    latency::fill_missing(&mut b.graph, f.seed);
    if let Some(c) = f.prefixes {
        prefixes::assign(&mut b.graph, c, f.seed).map_err(|e| BuildError(e.0))?;
    }
    Ok(())
}

/// Write a topology in a format (GML cannot be written).
pub fn export(b: &Built, fmt: Format) -> Result<String, BuildError> {
    Ok(match fmt {
        Format::Caida => format::caida::write(&b.graph, &b.clique, &b.ixps),
        Format::Brite => format::brite::write(&b.graph, b.pos.as_deref()),
        Format::Dot => format::dot::write(&b.graph),
        Format::Gml => return Err(BuildError("GML can be read, not written".into())),
    })
}
