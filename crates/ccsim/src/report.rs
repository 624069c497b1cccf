//! What a run returns: a summary over the measured window and a time
//! series; CSV writers for both.

use std::fmt::Write;

/// Cumulative per-source packet counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets the source offered.
    pub offered: u64,
    /// Dropped at the ingress queue (full).
    pub ingress_drop: u64,
    /// Injected into the fabric.
    pub injected: u64,
    /// Dropped at the egress fabric interface (no posted buffer; invisible
    /// to the router's own counters).
    pub hca_drop: u64,
    /// Dropped at the egress output queue (full).
    pub egress_drop: u64,
    /// Transmitted on the egress port.
    pub tx: u64,
}

/// One source over the measured window (after the warm-up).
#[derive(Clone, Debug, PartialEq)]
pub struct FlowStats {
    /// Ingress node.
    pub node: usize,
    /// Egress node.
    pub dest: usize,
    /// Offered, pps.
    pub offered_pps: f64,
    /// Injected into the fabric, pps.
    pub injected_pps: f64,
    /// Transmitted on the egress port, pps.
    pub tx_pps: f64,
    /// Dropped at the ingress queue, pps.
    pub ingress_drop_pps: f64,
    /// Dropped unseen at the egress fabric interface, pps.
    pub hca_drop_pps: f64,
    /// Dropped at the egress output queue, pps.
    pub egress_drop_pps: f64,
    /// Counters over the whole run.
    pub totals: Counters,
}

/// The measured window.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Per source, in configuration order.
    pub flows: Vec<FlowStats>,
    /// Per node: egress port TX, pps.
    pub egress_tx_pps: Vec<f64>,
    /// Per node: mean output-queue length (sampled each sample period).
    pub queue_mean: Vec<f64>,
    /// Per node: its standard deviation.
    pub queue_std: Vec<f64>,
    /// Per node: mean occupancy of the fabric receive ring.
    pub ring_mean: Vec<f64>,
}

impl Summary {
    /// Σ injected over the sources sending to `dest`.
    pub fn injected_to(&self, dest: usize) -> f64 {
        self.flows
            .iter()
            .filter(|f| f.dest == dest)
            .map(|f| f.injected_pps)
            .sum()
    }

    /// Σ offered over the sources sending to `dest`.
    pub fn offered_to(&self, dest: usize) -> f64 {
        self.flows
            .iter()
            .filter(|f| f.dest == dest)
            .map(|f| f.offered_pps)
            .sum()
    }
}

/// One time-series sample (rates over the preceding sample period).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Time, s.
    pub t: f64,
    /// Per source: offered, pps.
    pub offered: Vec<f64>,
    /// Per source: injected, pps.
    pub injected: Vec<f64>,
    /// Per source: transmitted at the egress, pps.
    pub tx: Vec<f64>,
    /// Per source: the ingress allowance as a rate, pps (NaN: no control).
    pub limit: Vec<f64>,
    /// Per node: output-queue length at the sample instant, packets.
    pub queue: Vec<f64>,
    /// Per node: egress TX, pps.
    pub egress_tx: Vec<f64>,
}

/// A finished run.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The measured window.
    pub summary: Summary,
    /// The time series.
    pub samples: Vec<Sample>,
}

impl Report {
    /// The time series as CSV: t, then per source offered/injected/tx/limit,
    /// then per node queue and egress TX (only nodes in `nodes`).
    pub fn series_csv(&self, nodes: &[usize]) -> String {
        let mut out = String::from("t_s");
        let nf = self.summary.flows.len();
        for i in 0..nf {
            let _ = write!(out, ",offered{i},injected{i},tx{i},limit{i}");
        }
        for &n in nodes {
            let _ = write!(out, ",queue_node{n},egress_tx_node{n}");
        }
        out.push('\n');
        for s in &self.samples {
            let _ = write!(out, "{:.4}", s.t);
            for i in 0..nf {
                let _ = write!(
                    out,
                    ",{:.0},{:.0},{:.0},{:.0}",
                    s.offered[i], s.injected[i], s.tx[i], s.limit[i]
                );
            }
            for &n in nodes {
                let _ = write!(out, ",{:.0},{:.0}", s.queue[n], s.egress_tx[n]);
            }
            out.push('\n');
        }
        out
    }

    /// Per-source summary as CSV.
    pub fn flows_csv(&self) -> String {
        let mut out = String::from(
            "source,node,dest,offered_pps,injected_pps,tx_pps,ingress_drop_pps,hca_drop_pps,egress_drop_pps\n",
        );
        for (i, f) in self.summary.flows.iter().enumerate() {
            let _ = writeln!(
                out,
                "{i},{},{},{:.0},{:.0},{:.0},{:.0},{:.0},{:.0}",
                f.node,
                f.dest,
                f.offered_pps,
                f.injected_pps,
                f.tx_pps,
                f.ingress_drop_pps,
                f.hca_drop_pps,
                f.egress_drop_pps
            );
        }
        out
    }
}

/// Jain's index of `xs` (1 = equal).
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (xs.len() as f64 * s2)
    }
}

/// Max-min fair shares of `capacity` among `demands` (water-filling).
pub fn max_min(demands: &[f64], capacity: f64) -> Vec<f64> {
    let mut share = vec![0.0; demands.len()];
    let mut left: Vec<usize> = (0..demands.len()).collect();
    let mut cap = capacity.max(0.0);
    while !left.is_empty() {
        let fair = cap / left.len() as f64;
        let (sat, rest): (Vec<usize>, Vec<usize>) = left.iter().partition(|&&i| demands[i] <= fair);
        if sat.is_empty() {
            for &i in &rest {
                share[i] = fair;
            }
            break;
        }
        for &i in &sat {
            share[i] = demands[i];
            cap -= demands[i];
        }
        left = rest;
    }
    share
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_min_and_jain() {
        let s = max_min(&[976_562.0, 97_656.0, 9_766.0], 764_500.0);
        assert_eq!(s[1], 97_656.0);
        assert_eq!(s[2], 9_766.0);
        assert!((s[0] - 657_078.0).abs() < 1.0);
        assert_eq!(max_min(&[10.0, 10.0], 30.0), vec![10.0, 10.0]);
        assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    }
}
