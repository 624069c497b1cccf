//! Flat router-level-style graphs as BRITE makes them: nodes placed
//! uniformly at random on an `hs` x `hs` plane (distinct integer points),
//! then joined one at a time ("incremental growth"), each new node linking
//! to nodes already placed.
//!
//! Models (BRITE's names):
//! - **Waxman**: a new node links to an existing node `v` with probability
//!   proportional to `exp(-d / (beta * L))`, `d` the distance, `L` the
//!   plane's diagonal. BRITE accepts candidates with probability
//!   `alpha * exp(...)` by rejection; drawing in proportion to the same
//!   weight gives the same choice distribution, so `alpha` only changes how
//!   long BRITE's loop runs and is not a parameter here. Default `beta`
//!   0.2 (BRITE's default).
//! - **BA** (Barabási-Albert, "preferential connectivity"): probability
//!   proportional to the degree of `v` (1 for a node still without links).
//!
//! Degrees:
//! - [`Degree::PerNode`]`(m)` is BRITE's own rule: every new node adds `m`
//!   links, so the minimum degree is `m`, the mean about `2m`, and (BA) the
//!   maximum grows with the graph.
//! - [`Degree::Range`]`{min, max}` (the default, 10-15: the seeds' "each
//!   node connected to 10-15 neighbouring nodes", which BRITE's GUI offers
//!   as a per-node degree): each node draws a target degree uniformly in
//!   `min..=max`; it adds half its target (rounded down) when it joins,
//!   choosing only nodes still under their targets; a closing pass then
//!   links nodes still under target to each other (same model weights;
//!   nodes at target but under `max` only when no one else is left). Every
//!   node ends with a degree in `min..=max` unless the graph is too small to
//!   allow it.
//!
//! Latency is the plane distance ([`crate::latency::from_distance`]).

use crate::latency::from_distance;
use crate::util::{between, pair, unit};
use crate::{asn_for, Graph, Link, Node, Point, Rel};
use sim::Rng;
use std::collections::HashSet;

/// Which attachment rule.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Model {
    /// Distance-weighted (BRITE's RTWaxman/ASWaxman).
    Waxman {
        /// Distance decay: larger means long links are likelier.
        beta: f64,
    },
    /// Degree-weighted (BRITE's RTBarabasiAlbert).
    Ba,
}

/// How many links each node gets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Degree {
    /// BRITE's `m`: links added by each new node.
    PerNode(u32),
    /// Every node ends with a degree in `min..=max`.
    Range {
        /// Lowest degree.
        min: u32,
        /// Highest degree.
        max: u32,
    },
}

/// Parameters of a flat graph.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Params {
    /// The model.
    pub model: Model,
    /// Number of nodes.
    pub nodes: u32,
    /// Degree rule.
    pub degree: Degree,
    /// Side of the plane (BRITE's HS), in plane units.
    pub hs: u32,
    /// RNG seed.
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            model: Model::Waxman { beta: 0.2 },
            nodes: 1000,
            degree: Degree::Range { min: 10, max: 15 },
            hs: 1000,
            seed: 1,
        }
    }
}

/// A generated flat graph (relationships [`Rel::Unknown`]) and where its
/// nodes lie on the plane.
#[derive(Clone, Debug, PartialEq)]
pub struct Flat {
    /// The graph.
    pub graph: Graph,
    /// `pos[i]` is node `i`'s point.
    pub pos: Vec<Point>,
}

/// Why a flat graph cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError(pub String);

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamError {}

/// Place `n` nodes on distinct integer points of an `hs` x `hs` plane.
pub(crate) fn place(rng: &mut Rng, n: u32, hs: u32) -> Result<Vec<Point>, ParamError> {
    let cells = u64::from(hs) * u64::from(hs);
    if u64::from(n) * 2 > cells {
        return Err(ParamError(format!(
            "{n} nodes do not fit on a {hs} x {hs} plane (at most half its points)"
        )));
    }
    let mut used = HashSet::with_capacity(n as usize);
    let mut pos = Vec::with_capacity(n as usize);
    while pos.len() < n as usize {
        let x = rng.below(u64::from(hs));
        let y = rng.below(u64::from(hs));
        if used.insert((x, y)) {
            pos.push(Point {
                x: x as f64,
                y: y as f64,
            });
        }
    }
    Ok(pos)
}

/// Generate a flat graph.
pub fn generate(p: &Params) -> Result<Flat, ParamError> {
    if p.nodes == 0 {
        return Err(ParamError("at least one node".into()));
    }
    if p.hs == 0 {
        return Err(ParamError("the plane side must be positive".into()));
    }
    match p.degree {
        Degree::Range { min, max } if min > max => {
            return Err(ParamError(format!(
                "minimum degree {min} above maximum {max}"
            )))
        }
        Degree::Range { min: 0, .. } | Degree::PerNode(0) => {
            return Err(ParamError("degrees must be at least 1".into()))
        }
        _ => {}
    }
    let mut rng = Rng::new(p.seed);
    let pos = place(&mut rng, p.nodes, p.hs)?;
    let n = p.nodes as usize;
    let (targets, cap): (Vec<u32>, Vec<u32>) = match p.degree {
        Degree::PerNode(m) => (vec![m; n], vec![u32::MAX; n]),
        Degree::Range { min, max } => {
            let t: Vec<u32> = (0..n).map(|_| between(&mut rng, min, max)).collect();
            (t, vec![max; n])
        }
    };
    let l_diag = f64::from(p.hs) * std::f64::consts::SQRT_2;
    let mut deg = vec![0u32; n];
    let mut links: Vec<Link> = Vec::new();
    let mut linked: HashSet<u64> = HashSet::new();
    let weight = |model: Model, deg: &[u32], a: usize, b: usize| -> f64 {
        match model {
            Model::Waxman { beta } => {
                let d = match (pos.get(a), pos.get(b)) {
                    (Some(&x), Some(&y)) => x.dist(y),
                    _ => 0.0,
                };
                (-d / (beta * l_diag)).exp()
            }
            Model::Ba => f64::from(deg.get(b).copied().unwrap_or(0).max(1)),
        }
    };
    let add =
        |a: usize, b: usize, deg: &mut [u32], links: &mut Vec<Link>, linked: &mut HashSet<u64>| {
            linked.insert(pair(a as u32, b as u32));
            for e in [a, b] {
                if let Some(d) = deg.get_mut(e) {
                    *d += 1;
                }
            }
            let lat = match (pos.get(a), pos.get(b)) {
                (Some(&x), Some(&y)) => from_distance(x, y),
                _ => 1,
            };
            links.push(Link {
                a: a as u32,
                b: b as u32,
                rel: Rel::Unknown,
                latency_us: lat,
            });
        };
    let per_node = matches!(p.degree, Degree::PerNode(_));
    // Incremental growth. Each arrival builds one cumulative table of
    // weights over the nodes it may link to and draws from it, redrawing
    // when it hits a node taken since (BRITE's own loop is a rejection
    // sampler too); the table is rebuilt after 32 misses.
    let mut cum: Vec<f64> = Vec::with_capacity(n);
    let mut cum2: Vec<f64> = Vec::with_capacity(n);
    for i in 1..n {
        let t = targets.get(i).copied().unwrap_or(0);
        let want = if per_node { t } else { t / 2 };
        let mut total = -1.0;
        for _ in 0..want {
            let ok = |j: usize| {
                j < i
                    && !linked.contains(&pair(i as u32, j as u32))
                    && (per_node || deg.get(j) < targets.get(j))
            };
            let picked = choose(
                &mut rng,
                &mut cum,
                &mut total,
                i,
                |j| weight(p.model, &deg, i, j),
                ok,
            );
            let Some(j) = picked else {
                break;
            };
            add(i, j, &mut deg, &mut links, &mut linked);
        }
    }
    // Closing pass (degree ranges only): first nodes under target, then
    // nodes under the maximum.
    if !per_node {
        for u in 0..n {
            let mut totals = [-1.0f64, -1.0f64];
            while deg.get(u) < targets.get(u) {
                let mut any = false;
                for pass in 0..2 {
                    let ok = |j: usize| {
                        let room = if pass == 0 {
                            deg.get(j) < targets.get(j)
                        } else {
                            deg.get(j) < cap.get(j)
                        };
                        j != u && room && !linked.contains(&pair(u as u32, j as u32))
                    };
                    let (table, total) = if pass == 0 {
                        (&mut cum, &mut totals[0])
                    } else {
                        (&mut cum2, &mut totals[1])
                    };
                    let picked = choose(
                        &mut rng,
                        table,
                        total,
                        n,
                        |j| weight(p.model, &deg, u, j),
                        ok,
                    );
                    if let Some(j) = picked {
                        add(u, j, &mut deg, &mut links, &mut linked);
                        any = true;
                        break;
                    }
                }
                if !any {
                    // Nobody left to link to: below the minimum, rewire.
                    let min = match p.degree {
                        Degree::Range { min, .. } => min,
                        Degree::PerNode(_) => 0,
                    };
                    if deg.get(u).copied().unwrap_or(0) >= min
                        || !rewire(u, &mut deg, &cap, &mut links, &mut linked, &pos, &mut rng)
                    {
                        break;
                    }
                }
            }
        }
    }
    let nodes = (0..p.nodes)
        .map(|i| Node {
            asn: asn_for(i),
            prefixes: Vec::new(),
        })
        .collect();
    Ok(Flat {
        graph: Graph { nodes, links },
        pos,
    })
}

/// A node drawn from the cumulative weights `cum` (`*total` their sum; a
/// negative total means "not built yet"), accepted only if `ok`; after 32
/// misses, or at first, the table is rebuilt over the nodes `0..n` that are
/// `ok`, which makes the next draw exact. `None` when no node is.
fn choose(
    rng: &mut Rng,
    cum: &mut Vec<f64>,
    total: &mut f64,
    n: usize,
    weight: impl Fn(usize) -> f64,
    ok: impl Fn(usize) -> bool,
) -> Option<usize> {
    let draw = |rng: &mut Rng, cum: &[f64], total: f64| -> Option<usize> {
        if total <= 0.0 || !total.is_finite() {
            return None;
        }
        let x = unit(rng) * total;
        let j = cum.partition_point(|&c| c <= x);
        (j < cum.len()).then_some(j)
    };
    if *total >= 0.0 {
        for _ in 0..32 {
            match draw(rng, cum, *total) {
                Some(j) if ok(j) => return Some(j),
                Some(_) => {}
                None => return None,
            }
        }
    }
    cum.clear();
    let mut t = 0.0;
    for j in 0..n {
        if ok(j) {
            t += weight(j).max(0.0);
        }
        cum.push(t);
    }
    *total = t;
    draw(rng, cum, t).filter(|&j| ok(j))
}

/// Raise `u`'s degree by rewiring one link `x-y` that touches neither `u`
/// nor its neighbours: it becomes `u-x` and `u-y` (`u` gains two), or, when
/// `u` can take only one more, `u-x` and `w-y` for a neighbour `w` of `u`
/// with room. Degrees of `x` and `y` are unchanged. False if no link fits.
fn rewire(
    u: usize,
    deg: &mut [u32],
    cap: &[u32],
    links: &mut Vec<Link>,
    linked: &mut HashSet<u64>,
    pos: &[Point],
    rng: &mut Rng,
) -> bool {
    let room = |deg: &[u32], v: usize| {
        cap.get(v).copied().unwrap_or(0)
            - deg
                .get(v)
                .copied()
                .unwrap_or(0)
                .min(cap.get(v).copied().unwrap_or(0))
    };
    let uu = u as u32;
    let lat = |a: u32, b: u32| match (pos.get(a as usize), pos.get(b as usize)) {
        (Some(&x), Some(&y)) => from_distance(x, y),
        _ => 1,
    };
    let partner: Option<u32> = if room(deg, u) >= 2 {
        Some(uu)
    } else {
        (0..deg.len() as u32)
            .find(|&w| w != uu && room(deg, w as usize) >= 1 && linked.contains(&pair(uu, w)))
    };
    let Some(w) = partner else {
        return false;
    };
    let m = links.len();
    if m == 0 {
        return false;
    }
    let start = rng.below(m as u64) as usize;
    for k in 0..m {
        let i = (start + k) % m;
        let Some(l) = links.get(i).copied() else {
            continue;
        };
        for (x, y) in [(l.a, l.b), (l.b, l.a)] {
            let ends = [uu, w];
            if ends.contains(&x) || ends.contains(&y) {
                continue;
            }
            if linked.contains(&pair(uu, x))
                || linked.contains(&pair(w, y))
                || (w == uu && linked.contains(&pair(uu, y)))
            {
                continue;
            }
            linked.remove(&pair(x, y));
            linked.insert(pair(uu, x));
            linked.insert(pair(w, y));
            if let Some(slot) = links.get_mut(i) {
                *slot = Link {
                    a: uu,
                    b: x,
                    rel: Rel::Unknown,
                    latency_us: lat(uu, x),
                };
            }
            links.push(Link {
                a: w,
                b: y,
                rel: Rel::Unknown,
                latency_us: lat(w, y),
            });
            for e in [uu, w] {
                if let Some(d) = deg.get_mut(e as usize) {
                    *d += 1;
                }
            }
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(g: &Graph) -> (u32, f64, u32) {
        let d = g.degrees();
        let min = d.iter().copied().min().unwrap_or(0);
        let max = d.iter().copied().max().unwrap_or(0);
        (
            min,
            d.iter().map(|&x| f64::from(x)).sum::<f64>() / d.len() as f64,
            max,
        )
    }

    #[test]
    fn default_waxman_and_ba_have_degrees_10_to_15() {
        for model in [Model::Waxman { beta: 0.2 }, Model::Ba] {
            let f = generate(&Params {
                model,
                ..Params::default()
            })
            .unwrap();
            assert_eq!(f.graph.nodes.len(), 1000);
            let (min, mean, max) = stats(&f.graph);
            assert!(min >= 10 && max <= 15, "{model:?}: {min}..{max}");
            assert!((11.5..13.5).contains(&mean), "{model:?}: mean {mean}");
            let mut seen = HashSet::new();
            for l in &f.graph.links {
                assert_ne!(l.a, l.b);
                assert!(seen.insert(pair(l.a, l.b)), "duplicate link");
                let d = f.pos[l.a as usize].dist(f.pos[l.b as usize]);
                assert_eq!(
                    l.latency_us,
                    from_distance(f.pos[l.a as usize], f.pos[l.b as usize])
                );
                assert!(d > 0.0);
            }
        }
    }

    #[test]
    fn brite_m_gives_min_m_and_mean_2m_and_ba_has_a_heavy_tail() {
        let f = generate(&Params {
            model: Model::Ba,
            degree: Degree::PerNode(2),
            ..Params::default()
        })
        .unwrap();
        let (min, mean, max) = stats(&f.graph);
        assert!(min >= 1, "{min}");
        assert!((3.8..4.01).contains(&mean), "{mean}");
        // Preferential attachment: hubs far above the mean.
        assert!(max >= 25, "{max}");
        let w = generate(&Params {
            degree: Degree::PerNode(2),
            ..Params::default()
        })
        .unwrap();
        let (_, _, wmax) = stats(&w.graph);
        assert!(wmax < max, "waxman {wmax} vs ba {max}");
    }

    #[test]
    fn same_seed_same_graph_other_seed_other_graph() {
        let p = Params {
            nodes: 200,
            ..Params::default()
        };
        let a = generate(&p).unwrap();
        assert_eq!(a, generate(&p).unwrap());
        let b = generate(&Params { seed: 2, ..p }).unwrap();
        assert_ne!(a.graph.links, b.graph.links);
    }

    #[test]
    fn bad_parameters_are_errors() {
        for p in [
            Params {
                nodes: 0,
                ..Params::default()
            },
            Params {
                degree: Degree::Range { min: 5, max: 4 },
                ..Params::default()
            },
            Params {
                nodes: 100,
                hs: 10,
                ..Params::default()
            },
        ] {
            assert!(generate(&p).is_err(), "{p:?}");
        }
    }
}
