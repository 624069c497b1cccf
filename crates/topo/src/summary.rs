//! A one-screen description of a graph.

use crate::annotate::customer_cones;
use crate::{Graph, Rel};
use std::fmt;

/// Counts and degree statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Nodes.
    pub nodes: usize,
    /// Links.
    pub links: usize,
    /// Lowest degree.
    pub degree_min: u32,
    /// Mean degree.
    pub degree_mean: f64,
    /// Highest degree.
    pub degree_max: u32,
    /// Customer-provider links.
    pub p2c: usize,
    /// Peer links.
    pub peer: usize,
    /// Links without a relationship.
    pub unknown: usize,
    /// Connected components.
    pub components: usize,
    /// ASes with no customers (of those with any relationship).
    pub stubs: usize,
    /// Largest customer cone (ASes, itself included).
    pub largest_cone: u32,
    /// Whether a customer-provider cycle exists.
    pub provider_cycle: bool,
    /// Prefixes originated, all ASes together.
    pub prefixes: usize,
    /// ASes originating at least one prefix.
    pub origins: usize,
}

impl Summary {
    /// Describe `g`.
    pub fn of(g: &Graph) -> Summary {
        let deg = g.degrees();
        let n = g.nodes.len();
        let count = |r: Rel| g.links.iter().filter(|l| l.rel == r).count();
        let mut has_customer = vec![false; n];
        for l in g.links.iter().filter(|l| l.rel == Rel::ProviderCustomer) {
            if let Some(x) = has_customer.get_mut(l.a as usize) {
                *x = true;
            }
        }
        let p2c = count(Rel::ProviderCustomer);
        Summary {
            nodes: n,
            links: g.links.len(),
            degree_min: deg.iter().copied().min().unwrap_or(0),
            degree_mean: if n == 0 {
                0.0
            } else {
                deg.iter().map(|&d| f64::from(d)).sum::<f64>() / n as f64
            },
            degree_max: deg.iter().copied().max().unwrap_or(0),
            p2c,
            peer: count(Rel::Peer),
            unknown: count(Rel::Unknown),
            components: components(g),
            stubs: if p2c == 0 {
                0
            } else {
                has_customer.iter().filter(|&&c| !c).count()
            },
            largest_cone: if p2c == 0 {
                0
            } else {
                customer_cones(g).into_iter().max().unwrap_or(0)
            },
            provider_cycle: g.provider_cycle().is_some(),
            prefixes: g.nodes.iter().map(|n| n.prefixes.len()).sum(),
            origins: g.nodes.iter().filter(|n| !n.prefixes.is_empty()).count(),
        }
    }
}

fn components(g: &Graph) -> usize {
    let n = g.nodes.len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while let Some(&px) = p.get(x as usize) {
            if px == x {
                break;
            }
            let gp = p.get(px as usize).copied().unwrap_or(px);
            if let Some(s) = p.get_mut(x as usize) {
                *s = gp;
            }
            x = gp;
        }
        x
    }
    let mut k = n;
    for l in &g.links {
        let (a, b) = (find(&mut parent, l.a), find(&mut parent, l.b));
        if a != b {
            if let Some(s) = parent.get_mut(a as usize) {
                *s = b;
            }
            k -= 1;
        }
    }
    k
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "nodes:         {}", self.nodes)?;
        writeln!(f, "links:         {}", self.links)?;
        writeln!(
            f,
            "degree:        min {} mean {:.2} max {}",
            self.degree_min, self.degree_mean, self.degree_max
        )?;
        writeln!(
            f,
            "relationships: {} customer-provider, {} peer, {} unknown",
            self.p2c, self.peer, self.unknown
        )?;
        if self.p2c > 0 {
            writeln!(
                f,
                "hierarchy:     {} stub ASes, largest customer cone {}, provider cycle: {}",
                self.stubs,
                self.largest_cone,
                if self.provider_cycle { "YES" } else { "none" }
            )?;
        }
        writeln!(f, "components:    {}", self.components)?;
        writeln!(
            f,
            "prefixes:      {} from {} origin ASes",
            self.prefixes, self.origins
        )
    }
}
