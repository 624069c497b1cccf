//! `tessera cluster bench`: the experiments of issue 14 on clusters that
//! [`crate::cluster::up`] builds, with Tessera's own generator
//! (`tessera trafgen`, crate `trafgen`) in the external host namespaces.
//!
//! Every case builds its cluster, runs its traffic and takes the cluster
//! down ([`crate::cluster::down`], also on error and after a stop
//! request). Experiments (seed figures in `../shared/docs/cluster-spec.md`):
//! * `packing`: 64 B, packed (`[cluster] packing`, default 16) against
//!   unpacked (1), on 2 nodes one-to-one and on 4 nodes one-to-one and
//!   uniform: delivered pps ratio (Ye Tab 2.1: 1328 vs 714 kpps, x1.86),
//!   and one-way latency at light load with and without packing (Fig
//!   2.10: the same).
//! * `reorder`: `vlb` with and without flow affinity, uniform traffic
//!   (RouteBricks: 0.15 % vs 5.5 % reordered).
//! * `load`: `direct-vlb` (R = the offered per-port rate), packing off so
//!   fabric packets are frames: per-node processing load (external RX +
//!   fabric RX, in units of R) and fabric link load under a uniform
//!   matrix and a worst-case permutation, against RouteBricks' 2R, 3R
//!   and 2R/N.
//! * `scaling`: delivered pps at 2, 4, 8 nodes (direct, packed),
//!   one-to-one and uniform.
//! * `failure`: `vlb` on 4 nodes, traffic among nodes 1-3, node 4 killed
//!   (SIGKILL) half-way: loss window and recovery time from the
//!   receivers' 10 ms bins.
//!
//! The pure parts ([`Matrix`], [`figures`], the CSV) are unit tested; the
//! rest runs `ip`, `ping`, tesserad, BIRD and the generator.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use trafgen::Report;

use crate::cluster::{self, FabricKnobs, Plan, UpConfig};
use crate::netns::sh;

/// The experiments, in priority order.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Experiment {
    Packing,
    Reorder,
    Load,
    Scaling,
    Failure,
}

impl Experiment {
    pub const ALL: [Experiment; 5] = [
        Experiment::Packing,
        Experiment::Reorder,
        Experiment::Load,
        Experiment::Scaling,
        Experiment::Failure,
    ];

    pub fn parse(s: &str) -> Result<Experiment, String> {
        Ok(match s {
            "packing" => Experiment::Packing,
            "reorder" => Experiment::Reorder,
            "load" => Experiment::Load,
            "scaling" => Experiment::Scaling,
            "failure" => Experiment::Failure,
            _ => {
                return Err(format!(
                    "experiment {s:?}: packing, reorder, load, scaling, failure"
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Experiment::Packing => "packing",
            Experiment::Reorder => "reorder",
            Experiment::Load => "load",
            Experiment::Scaling => "scaling",
            Experiment::Failure => "failure",
        }
    }
}

/// Who sends to whom (node k's host on port 1 sends; destinations are
/// hosts on port 1 of other nodes).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Matrix {
    /// Pairs 1<->2, 3<->4, ...; an odd last node sends to node 1.
    OneToOne,
    /// Every node to every other, evenly.
    Uniform,
    /// Node k to node k+1 (mod N): RouteBricks' worst case for Direct
    /// VLB (each input's whole rate to one output).
    Permutation,
}

impl Matrix {
    pub fn name(self) -> &'static str {
        match self {
            Matrix::OneToOne => "one-to-one",
            Matrix::Uniform => "uniform",
            Matrix::Permutation => "permutation",
        }
    }

    /// The destinations of node `k` (1-based) among nodes `1..=n`.
    pub fn dsts(self, k: usize, n: usize) -> Vec<usize> {
        match self {
            Matrix::OneToOne => {
                if k % 2 == 1 {
                    vec![if k < n { k + 1 } else { 1 }]
                } else {
                    vec![k - 1]
                }
            }
            Matrix::Uniform => (1..=n).filter(|&j| j != k).collect(),
            Matrix::Permutation => vec![k % n + 1],
        }
    }
}

/// What `tessera cluster bench` runs.
#[derive(Clone, Debug)]
pub struct BenchOpts {
    pub name: String,
    pub dir: PathBuf,
    pub tesserad: PathBuf,
    /// The tessera binary (`tessera trafgen` runs in the hosts).
    pub tessera: PathBuf,
    pub experiments: Vec<Experiment>,
    /// Node counts of the packing experiment (2 and 4: Ye's Tab 2.1).
    pub packing_nodes: Vec<usize>,
    /// Node counts of the scaling experiment.
    pub scaling_nodes: Vec<usize>,
    /// Nodes of the reorder, load and failure experiments.
    pub nodes: usize,
    pub duration: Duration,
    /// Offered load per sender for the throughput runs (packing,
    /// scaling), pps; 0 = as fast as the generator can.
    pub rate_pps: u64,
    /// Per sender at light load (latency, load, reorder, failure), pps.
    pub light_pps: u64,
    /// Per sender in the reorder runs, pps, with `reorder_flows` flows:
    /// reordering needs packets of one flow closer together than the
    /// paths' delays differ.
    pub reorder_pps: u64,
    pub reorder_flows: u32,
    /// Frame size with FCS.
    pub size: usize,
    /// Flows per sender.
    pub flows: u32,
    /// The packed case's packing degree.
    pub packing: u8,
    pub bfd_ms: u32,
    pub wait: Duration,
}

/// One traffic run: the generators' sum and the nodes' counters.
#[derive(Clone, Debug)]
pub struct Row {
    pub experiment: String,
    pub case: String,
    pub nodes: usize,
    pub mode: String,
    pub packing: u8,
    pub affinity: bool,
    pub matrix: String,
    pub rate_pps: u64,
    pub report: Report,
    /// Per node: CPU % of one core over the run.
    pub cpu_pct: Vec<f64>,
    /// Per node: (external RX + fabric RX) packets / s.
    pub node_pps: Vec<f64>,
    /// Per node: external RX packets / s (its input rate R).
    pub ext_pps: Vec<f64>,
    /// Per node: fabric TX packets / s.
    pub fab_tx_pps: Vec<f64>,
    /// Failure runs: loss window and recovery, ms.
    pub loss_window_ms: Option<f64>,
    pub recovery_ms: Option<f64>,
}

impl Row {
    /// Max over nodes of node_pps / R (R = mean external input rate).
    pub fn node_load_r(&self) -> f64 {
        let r = mean(&self.ext_pps);
        if r <= 0.0 {
            return 0.0;
        }
        self.node_pps.iter().cloned().fold(0.0, f64::max) / r
    }

    /// Max over nodes of the fabric TX per peer link / R.
    pub fn link_load_r(&self) -> f64 {
        let r = mean(&self.ext_pps);
        if r <= 0.0 || self.nodes < 2 {
            return 0.0;
        }
        self.fab_tx_pps.iter().cloned().fold(0.0, f64::max) / (self.nodes - 1) as f64 / r
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// A derived figure beside the seeds'.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub name: String,
    pub ours: f64,
    pub seed: String,
    /// Met, missed, or "-" (no target).
    pub verdict: String,
}

/// The derived figures from the rows: packing gains (packed / unpacked
/// delivered pps per nodes and matrix), light-load latency ratio,
/// reordering with and without affinity, loads against 2R / 3R / 2R/N,
/// scaling against 2 nodes, and the failure's loss window and recovery.
pub fn figures(rows: &[Row]) -> Vec<Figure> {
    let mut out = Vec::new();
    let find = |exp: &str, case: &str| rows.iter().find(|r| r.experiment == exp && r.case == case);
    let mut cases: Vec<(usize, String)> = rows
        .iter()
        .filter(|r| r.experiment == "packing" && r.case.starts_with("packed "))
        .map(|r| (r.nodes, r.matrix.clone()))
        .collect();
    cases.dedup();
    for (n, m) in cases {
        let (Some(p), Some(u)) = (
            find("packing", &format!("packed {n}n {m}")),
            find("packing", &format!("unpacked {n}n {m}")),
        ) else {
            continue;
        };
        if u.report.rx_pps() > 0.0 {
            let g = p.report.rx_pps() / u.report.rx_pps();
            let (seed, target) = match (n, m.as_str()) {
                (2, _) => ("x1.86 (1328/714 kpps, 2 nodes)", Some(1.86)),
                (_, "one-to-one") => ("x2.0 (8 nodes one-to-one 5712/2856)", Some(1.86)),
                _ => ("gain shrinks under uniform (Ye 2.4.2)", None),
            };
            out.push(Figure {
                name: format!("packing gain, {n} nodes {m}, 64 B"),
                ours: g,
                seed: seed.into(),
                verdict: match target {
                    Some(t) if g >= t => "met".into(),
                    Some(_) => "missed".into(),
                    None => "-".into(),
                },
            });
        }
    }
    if let (Some(p), Some(u)) = (
        rows.iter()
            .find(|r| r.experiment == "packing" && r.case.starts_with("light packed")),
        rows.iter()
            .find(|r| r.experiment == "packing" && r.case.starts_with("light unpacked")),
    ) {
        let (a, b) = (
            p.report.latency.quantile(0.5),
            u.report.latency.quantile(0.5),
        );
        if b > 0 {
            let x = a as f64 / b as f64;
            out.push(Figure {
                name: "light-load latency p50, packed / unpacked".into(),
                ours: x,
                seed: "the same (Fig 2.10)".into(),
                verdict: if (0.8..=1.25).contains(&x) {
                    "met".into()
                } else {
                    "missed".into()
                },
            });
        }
    }
    for (case, seed, ok) in [
        ("affinity on", "0.15 %", 1.0),
        ("affinity off", "5.5 %", f64::INFINITY),
    ] {
        if let Some(r) = find("reorder", case) {
            let x = r.report.reorder_pct();
            out.push(Figure {
                name: format!("reordered %, vlb, {case}"),
                ours: x,
                seed: seed.into(),
                verdict: if case == "affinity on" {
                    if x <= ok {
                        "met".into()
                    } else {
                        "missed".into()
                    }
                } else {
                    "-".into()
                },
            });
        }
    }
    for case in ["uniform", "permutation"] {
        if let Some(r) = find("load", case) {
            let x = r.node_load_r();
            let n = r.nodes as f64;
            // RouteBricks' uniform matrix sends R/N to every output, its
            // own included, all within the direct budget: 2R. Ours sends
            // R/(N-1) to each other node; the excess R/N per source goes
            // through a random intermediate, a transit at one of the N-2
            // others with probability (N-2)/N: 2R + R(N-2)/N^2 per node.
            let (bound, seed) = if case == "uniform" {
                let b = 2.0 + (n - 2.0) / (n * n);
                (
                    b,
                    format!("2R (RB, own output included); ours: 2R + R(N-2)/N^2 = {b:.3}R"),
                )
            } else {
                (3.0, "<= 3R".to_string())
            };
            out.push(Figure {
                name: format!("max node load / R, direct-vlb, {case}"),
                ours: x,
                seed,
                verdict: if x <= bound * 1.05 { "met" } else { "missed" }.into(),
            });
            let l = r.link_load_r();
            let lb = 2.0 / r.nodes as f64;
            out.push(Figure {
                name: format!("max fabric link load / R, direct-vlb, {case}"),
                ours: l,
                seed: format!("<= 2R/N = {lb:.2}R"),
                verdict: if l <= lb * 1.05 { "met" } else { "missed" }.into(),
            });
        }
    }
    for m in ["one-to-one", "uniform"] {
        let pts: Vec<&Row> = rows
            .iter()
            .filter(|r| r.experiment == "scaling" && r.matrix == m)
            .collect();
        // At 2 nodes uniform is one-to-one (the only other node).
        let base = pts.iter().find(|r| r.nodes == 2).copied().or_else(|| {
            rows.iter()
                .find(|r| r.experiment == "scaling" && r.nodes == 2)
        });
        if let Some(base) = base {
            for r in pts.iter().filter(|r| r.nodes > 2) {
                if base.report.rx_pps() > 0.0 {
                    let x = r.report.rx_pps() / base.report.rx_pps();
                    out.push(Figure {
                        name: format!("scaling {m}, {} nodes / 2 nodes", r.nodes),
                        ours: x,
                        seed: format!(
                            "linear: x{} (Ye: 8n one-to-one x4.3, uniform dips)",
                            r.nodes / 2
                        ),
                        verdict: "-".into(),
                    });
                }
            }
        }
    }
    if let Some(r) = rows.iter().find(|r| r.experiment == "failure") {
        if let Some(w) = r.loss_window_ms {
            out.push(Figure {
                name: "failure: loss window, ms".into(),
                ours: w,
                seed: "<= BFD detection time (3 x interval); seeds: none".into(),
                verdict: "-".into(),
            });
        }
        if let Some(w) = r.recovery_ms {
            out.push(Figure {
                name: "failure: recovery time, ms".into(),
                ours: w,
                seed: "seeds: none (our design)".into(),
                verdict: "-".into(),
            });
        }
    }
    out
}

/// One line per row.
pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "experiment,case,nodes,mode,packing,affinity,matrix,size,rate_pps_per_sender,send_s,sent,received,loss_pct,reordered,reorder_pct,seq_gaps,bad_checksum,rx_kpps,lat_p50_us,lat_p99_us,lat_mean_us,cpu_pct_mean,node_load_r_max,link_load_r_max,loss_window_ms,recovery_ms\n",
    );
    for r in rows {
        let p = &r.report;
        let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.1}"));
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{:.3},{},{},{:.3},{},{:.3},{},{},{:.2},{:.1},{:.1},{:.1},{:.1},{:.2},{:.3},{},{}\n",
            r.experiment,
            r.case,
            r.nodes,
            r.mode,
            r.packing,
            r.affinity,
            r.matrix,
            p.size,
            r.rate_pps,
            p.send_s,
            p.sent,
            p.received,
            p.loss_pct(),
            p.reordered,
            p.reorder_pct(),
            p.seq_gaps,
            p.bad_checksum,
            p.rx_pps() / 1e3,
            p.latency.quantile(0.5) as f64 / 1e3,
            p.latency.quantile(0.99) as f64 / 1e3,
            p.latency.mean() / 1e3,
            mean(&r.cpu_pct),
            r.node_load_r(),
            r.link_load_r(),
            opt(r.loss_window_ms),
            opt(r.recovery_ms),
        );
    }
    s
}

pub fn row_json(r: &Row) -> Value {
    let p = &r.report;
    json!({
        "experiment": r.experiment, "case": r.case, "nodes": r.nodes, "mode": r.mode,
        "packing": r.packing, "affinity": r.affinity, "matrix": r.matrix,
        "rate_pps_per_sender": r.rate_pps,
        "size": p.size, "send_s": p.send_s, "sent": p.sent, "received": p.received,
        "loss_pct": p.loss_pct(), "reordered": p.reordered, "reorder_pct": p.reorder_pct(),
        "duplicates": p.duplicates, "seq_gaps": p.seq_gaps, "bad_checksum": p.bad_checksum,
        "tx_ring_full": p.tx_ring_full, "pacer_late": p.pacer_late,
        "rx_pps": p.rx_pps(), "tx_pps": p.tx_pps(),
        "latency_us": {"p50": p.latency.quantile(0.5) as f64 / 1e3,
                       "p99": p.latency.quantile(0.99) as f64 / 1e3,
                       "mean": p.latency.mean() / 1e3},
        "cpu_pct": r.cpu_pct, "node_pps": r.node_pps, "ext_pps": r.ext_pps,
        "fab_tx_pps": r.fab_tx_pps,
        "node_load_r_max": r.node_load_r(), "link_load_r_max": r.link_load_r(),
        "loss_window_ms": r.loss_window_ms, "recovery_ms": r.recovery_ms,
        "bin_ms": p.bin_ms, "rx_bins": p.bins,
    })
}

pub fn figure_json(f: &Figure) -> Value {
    json!({"name": f.name, "ours": f.ours, "seed": f.seed, "verdict": f.verdict})
}

/// The figures as a Markdown table.
pub fn figures_md(figs: &[Figure]) -> String {
    let mut s = String::from("| figure | ours | seeds | verdict |\n|---|---|---|---|\n");
    for f in figs {
        s += &format!(
            "| {} | {:.3} | {} | {} |\n",
            f.name, f.ours, f.seed, f.verdict
        );
    }
    s
}

/// SVG charts of the rows: (file name, SVG).
pub fn charts(rows: &[Row]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let packed: Vec<&Row> = rows
        .iter()
        .filter(|r| r.experiment == "packing" && r.case.starts_with("packed "))
        .collect();
    if !packed.is_empty() {
        let cats: Vec<String> = packed
            .iter()
            .map(|r| format!("{} nodes {}", r.nodes, r.matrix))
            .collect();
        let unp: Vec<f64> = packed
            .iter()
            .map(|p| {
                rows.iter()
                    .find(|r| {
                        r.experiment == "packing"
                            && r.case == p.case.replacen("packed", "unpacked", 1)
                    })
                    .map_or(f64::NAN, |r| r.report.rx_pps() / 1e3)
            })
            .collect();
        let c: Vec<&str> = cats.iter().map(String::as_str).collect();
        let svg = plot::BarChart::new(
            "Fabric packing at 64 B: delivered rate (tessera cluster bench)",
            "delivered kpps",
            &c,
        )
        .series(
            "packed",
            packed.iter().map(|r| r.report.rx_pps() / 1e3).collect(),
        )
        .series("unpacked (packing = 1)", unp)
        .to_svg();
        out.push(("cluster-packing.svg".into(), svg));
    }
    let reo: Vec<&Row> = rows.iter().filter(|r| r.experiment == "reorder").collect();
    if !reo.is_empty() {
        let cats: Vec<&str> = reo.iter().map(|r| r.case.as_str()).collect();
        let svg = plot::BarChart::new("Reordering under VLB", "reordered packets, %", &cats)
            .series("ours", reo.iter().map(|r| r.report.reorder_pct()).collect())
            .series(
                "RouteBricks",
                reo.iter()
                    .map(|r| if r.case == "affinity on" { 0.15 } else { 5.5 })
                    .collect(),
            )
            .to_svg();
        out.push(("cluster-reorder.svg".into(), svg));
    }
    let load: Vec<&Row> = rows.iter().filter(|r| r.experiment == "load").collect();
    if !load.is_empty() {
        let cats: Vec<&str> = load.iter().map(|r| r.case.as_str()).collect();
        let svg = plot::BarChart::new(
            "Direct VLB: max per-node load and per-link fabric load, in units of R",
            "x R",
            &cats,
        )
        .series(
            "node load (ours)",
            load.iter().map(|r| r.node_load_r()).collect(),
        )
        .series(
            "RouteBricks node bound (2R uniform, 3R worst)",
            load.iter()
                .map(|r| if r.case == "uniform" { 2.0 } else { 3.0 })
                .collect(),
        )
        .series(
            "link load (ours)",
            load.iter().map(|r| r.link_load_r()).collect(),
        )
        .series(
            "RouteBricks link bound 2R/N",
            load.iter().map(|r| 2.0 / r.nodes as f64).collect(),
        )
        .to_svg();
        out.push(("cluster-load.svg".into(), svg));
    }
    let sc: Vec<&Row> = rows.iter().filter(|r| r.experiment == "scaling").collect();
    if !sc.is_empty() {
        let mut ch = plot::LineChart::new(
            "Scaling: delivered rate at 64 B (direct, packed)",
            "nodes",
            "delivered kpps",
        );
        for m in ["one-to-one", "uniform"] {
            let pts: Vec<(f64, f64)> = sc
                .iter()
                .filter(|r| r.matrix == m)
                .map(|r| (r.nodes as f64, r.report.rx_pps() / 1e3))
                .collect();
            if !pts.is_empty() {
                ch = ch.series_with_markers(m, pts);
            }
        }
        out.push(("cluster-scaling.svg".into(), ch.to_svg()));
    }
    if let Some(r) = rows.iter().find(|r| r.experiment == "failure") {
        let b = r.report.bin_ms;
        let pts: Vec<(f64, f64)> = r
            .report
            .bins
            .iter()
            .enumerate()
            .map(|(i, c)| (i as f64 * b / 1e3, *c as f64 / b))
            .collect();
        let svg = plot::LineChart::new(
            "Node 4 killed under load (vlb): received rate of nodes 1-3",
            "time, s",
            "received kpps (per 10 ms bin)",
        )
        .series("received", pts)
        .to_svg();
        out.push(("cluster-failure.svg".into(), svg));
    }
    out
}

/// Kernel counters of `dev` in namespace `ns`: (rx packets, tx packets).
fn link_counters(ns: &str, dev: &str) -> (u64, u64) {
    let Ok(out) = sh("ip", &["-n", ns, "-s", "-j", "link", "show", dev]) else {
        return (0, 0);
    };
    let Ok(v) = serde_json::from_str::<Value>(&out) else {
        return (0, 0);
    };
    let s = &v[0]["stats64"];
    (
        s["rx"]["packets"].as_u64().unwrap_or(0),
        s["tx"]["packets"].as_u64().unwrap_or(0),
    )
}

fn link_mac(ns: &str, dev: &str) -> Result<String, String> {
    let out = sh("ip", &["-n", ns, "-j", "link", "show", dev])?;
    let v: Value = serde_json::from_str(&out).map_err(|e| format!("ip -j link: {e}"))?;
    v[0]["address"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no MAC for {dev} in {ns}"))
}

/// Per node: (cpu seconds, x1 rx, f0 rx, f0 tx); and when (CLOCK_MONOTONIC
/// ns, the middle of the sampling).
type Snapshot = (Vec<(f64, u64, u64, u64)>, u64);

fn snapshot(plan: &Plan, dir: &Path) -> Snapshot {
    let t0 = trafgen::edge::mono_ns();
    let st = cluster::status(dir).unwrap_or_default();
    let v = (1..=plan.nodes)
        .map(|k| {
            let cpu = st.iter().find(|n| n.k == k).map_or(0.0, |n| n.cpu_s);
            let ns = plan.node_ns(k);
            let (x_rx, _) = link_counters(&ns, "x1");
            let (f_rx, f_tx) = link_counters(&ns, "f0");
            (cpu, x_rx, f_rx, f_tx)
        })
        .collect();
    let t1 = trafgen::edge::mono_ns();
    (v, t0 + (t1 - t0) / 2)
}

/// A generator child and where its stdout goes.
struct Gen {
    child: Child,
    k: usize,
}

impl Drop for Gen {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What one traffic run does.
struct Traffic<'a> {
    senders: &'a [usize],
    matrix: Matrix,
    rate_pps: u64,
    size: usize,
    flows: u32,
    duration: Duration,
    /// Kill this node's tesserad this far into the run.
    kill: Option<(usize, Duration)>,
}

/// Runs the generators on node `senders`' hosts (port 1) with `matrix`
/// among them; the summed report and per-node rates.
fn traffic(
    o: &BenchOpts,
    plan: &Plan,
    t: &Traffic<'_>,
    stop: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<Measured, String> {
    let n = plan.nodes;
    // Which senders' destinations: the matrix over the senders only.
    let dsts = |k: usize| -> Vec<usize> {
        let idx = t.senders.iter().position(|&s| s == k).unwrap_or(0);
        t.matrix
            .dsts(idx + 1, t.senders.len())
            .into_iter()
            .map(|j| t.senders[j - 1])
            .collect()
    };
    // Warm the egress nodes' neighbour caches (ARP of the hosts).
    let mut pings = Vec::new();
    for &k in t.senders {
        for j in dsts(k) {
            let (_, dst) = Plan::data(j, 1);
            pings.push(
                Command::new("ip")
                    .args(["netns", "exec", &plan.host_ns(k, 1), "ping", "-c", "3"])
                    .args(["-i", "0.2", "-W", "1", "-q", &dst.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("ping: {e}"))?,
            );
        }
    }
    for mut p in pings {
        let _ = p.wait();
    }
    let t0 = Instant::now();
    let start_ns = trafgen::edge::mono_ns() + 1_500_000_000;
    let mut gens = Vec::new();
    for &k in t.senders {
        let mac = link_mac(&plan.node_ns(k), "x1")?;
        let (_, src) = Plan::data(k, 1);
        let d: Vec<String> = dsts(k)
            .into_iter()
            .map(|j| Plan::data(j, 1).1.to_string())
            .collect();
        let log = std::fs::File::create(o.dir.join(format!("trafgen-h{k}.log")))
            .map_err(|e| format!("trafgen log: {e}"))?;
        let child = Command::new("ip")
            .args(["netns", "exec", &plan.host_ns(k, 1)])
            .arg(&o.tessera)
            .args(["trafgen", "--iface", "e0", "--dst-mac", &mac])
            .args(["--src", &src.to_string(), "--dst", &d.join(",")])
            .args(["--flows", &t.flows.to_string()])
            .args(["--sender-id", &k.to_string()])
            .args(["--size", &t.size.to_string()])
            .args(["--rate", &t.rate_pps.to_string()])
            .args(["--duration", &format!("{:.3}", t.duration.as_secs_f64())])
            .args(["--drain-ms", "700", "--bin-ms", "10"])
            .args(["--start-mono-ns", &start_ns.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("{}: {e}", o.tessera.display()))?;
        gens.push(Gen { child, k });
    }
    let limit = t.duration + Duration::from_secs(20);
    let mut killed_at: Option<u64> = None;
    let mut next_say = Instant::now() + Duration::from_secs(1);
    // The nodes' counters at the start and the end of the send window.
    let (mut before, mut after): (Option<Snapshot>, Option<Snapshot>) = (None, None);
    let end_ns = start_ns + t.duration.as_nanos() as u64;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err("stopped".into());
        }
        let now = trafgen::edge::mono_ns();
        if before.is_none() && now >= start_ns {
            before = Some(snapshot(plan, &o.dir));
        }
        if after.is_none() && now >= end_ns {
            after = Some(snapshot(plan, &o.dir));
        }
        if let Some((node, after)) = t.kill {
            let at = start_ns + after.as_nanos() as u64;
            if killed_at.is_none() && trafgen::edge::mono_ns() >= at {
                let st = cluster::status(&o.dir)?;
                let pid = st
                    .iter()
                    .find(|s| s.k == node)
                    .and_then(|s| s.pid)
                    .ok_or("no pid of the node to kill")?;
                // SAFETY: kill(2) has no memory preconditions; the pid is
                // the node's tesserad, from the state file, checked alive
                // by status.
                unsafe {
                    libc::kill(pid as i32, libc::SIGKILL);
                }
                killed_at = Some(trafgen::edge::mono_ns());
                say(&format!("    killed node {node} (tesserad pid {pid})"));
            }
        }
        let mut done = true;
        for g in &mut gens {
            if g.child.try_wait().map_err(|e| e.to_string())?.is_none() {
                done = false;
            }
        }
        if done {
            break;
        }
        if t0.elapsed() > limit {
            return Err(format!("the generators did not finish within {limit:?}"));
        }
        if Instant::now() >= next_say {
            let el = trafgen::edge::mono_ns().saturating_sub(start_ns) as f64 / 1e9;
            eprint!(
                "\r    traffic {:>5.1} / {:.1} s ",
                el.max(0.0),
                t.duration.as_secs_f64()
            );
            next_say += Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!();
    let (before, after) = match (before, after) {
        (Some(b), Some(a)) => (b, a),
        _ => return Err("the generators ended before the send window did".into()),
    };
    let mut sum = Report::default();
    for g in &mut gens {
        let st = g.child.wait().map_err(|e| e.to_string())?;
        let mut out = String::new();
        if let Some(s) = g.child.stdout.as_mut() {
            let _ = s.read_to_string(&mut out);
        }
        if !st.success() {
            return Err(format!(
                "trafgen on host {} failed ({st}); see {}",
                g.k,
                o.dir.join(format!("trafgen-h{}.log", g.k)).display()
            ));
        }
        let v: Value = serde_json::from_str(out.trim())
            .map_err(|e| format!("trafgen on host {}: {e}: {out}", g.k))?;
        sum.add(&Report::from_json(&v));
    }
    // Counters over the send window.
    let secs = (after.1.saturating_sub(before.1) as f64 / 1e9).max(1e-3);
    let (before, after) = (before.0, after.0);
    let mut cpu = Vec::new();
    let mut node = Vec::new();
    let mut ext = Vec::new();
    let mut fab = Vec::new();
    for k in 0..n {
        let (b, a) = (before[k], after[k]);
        cpu.push(100.0 * (a.0 - b.0).max(0.0) / secs);
        let x = a.1.saturating_sub(b.1) as f64 / secs;
        let fr = a.2.saturating_sub(b.2) as f64 / secs;
        ext.push(x);
        node.push(x + fr);
        fab.push(a.3.saturating_sub(b.3) as f64 / secs);
    }
    let event_bin = killed_at.map(|k| ((k.saturating_sub(start_ns)) / 10_000_000) as f64);
    Ok(Measured {
        report: sum,
        cpu_pct: cpu,
        node_pps: node,
        ext_pps: ext,
        fab_tx_pps: fab,
        event_bin,
    })
}

/// What one traffic run measured (see [`Row`]).
struct Measured {
    report: Report,
    cpu_pct: Vec<f64>,
    node_pps: Vec<f64>,
    ext_pps: Vec<f64>,
    fab_tx_pps: Vec<f64>,
    /// The 10 ms bin in which the node was killed.
    event_bin: Option<f64>,
}

/// What runs on a cluster: the plan it was built from, the progress sink.
type OnCluster<'a, T> = dyn FnMut(&Plan, &mut dyn FnMut(&str)) -> Result<T, String> + 'a;

/// Builds a cluster, runs `f`, always takes it down.
fn with_cluster<T>(
    o: &BenchOpts,
    plan: Plan,
    stop: &AtomicBool,
    say: &mut dyn FnMut(&str),
    f: &mut OnCluster<'_, T>,
) -> Result<T, String> {
    if stop.load(Ordering::Relaxed) {
        return Err("stopped".into());
    }
    say(&format!(
        "  cluster: {} nodes, {}, packing {}, affinity {}",
        plan.nodes,
        plan.mode,
        plan.fabric
            .packing
            .map_or("default".into(), |p| p.to_string()),
        plan.fabric
            .affinity
            .map_or("default".into(), |a| a.to_string()),
    ));
    let up = cluster::up(&UpConfig {
        plan: plan.clone(),
        dir: o.dir.clone(),
        tesserad: o.tesserad.clone(),
        wait: o.wait,
    });
    let r = up.and_then(|()| f(&plan, say));
    let d = cluster::down(&o.dir);
    let r = r?;
    d.map(|_| r)
}

fn plan(o: &BenchOpts, nodes: usize, mode: &str, knobs: FabricKnobs) -> Result<Plan, String> {
    let mut p = Plan::new(&o.name, nodes, 1, mode, o.bfd_ms)?;
    p.fabric = knobs;
    Ok(p)
}

#[allow(clippy::too_many_arguments)]
fn row(exp: &str, case: String, plan: &Plan, matrix: Matrix, rate: u64, r: Measured) -> Row {
    let Measured {
        report,
        cpu_pct,
        node_pps,
        ext_pps,
        fab_tx_pps,
        event_bin: event,
    } = r;
    let mut row = Row {
        experiment: exp.into(),
        case,
        nodes: plan.nodes,
        mode: plan.mode.clone(),
        packing: plan.fabric.packing.unwrap_or(16),
        affinity: plan.fabric.affinity.unwrap_or(true),
        matrix: matrix.name().into(),
        rate_pps: rate,
        report,
        cpu_pct,
        node_pps,
        ext_pps,
        fab_tx_pps,
        loss_window_ms: None,
        recovery_ms: None,
    };
    if let Some(e) = event {
        let b = row.report.bin_ms;
        if let Some(out) = trafgen::outage(&row.report.bins, e as usize, 0.5) {
            row.loss_window_ms = Some(out.loss_window_bins * b);
            row.recovery_ms = Some(out.recovery_bins as f64 * b);
        }
    }
    row
}

fn summary(r: &Row) -> String {
    let p = &r.report;
    format!(
        "    {:<8} {:<28} sent {:>8} recv {:>8} loss {:>6.2}% reord {:>6.3}% rx {:>8.1} kpps p50 {:>7.1} us p99 {:>8.1} us cpu {:>5.1}%",
        r.experiment,
        r.case,
        p.sent,
        p.received,
        p.loss_pct(),
        p.reorder_pct(),
        p.rx_pps() / 1e3,
        p.latency.quantile(0.5) as f64 / 1e3,
        p.latency.quantile(0.99) as f64 / 1e3,
        mean(&r.cpu_pct),
    )
}

/// Runs the chosen experiments; the rows measured so far also when one
/// fails (the error comes second).
pub fn run(
    o: &BenchOpts,
    stop: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> (Vec<Row>, Option<String>) {
    let mut rows = Vec::new();
    let err = run_into(o, stop, say, &mut rows).err();
    (rows, err)
}

fn run_into(
    o: &BenchOpts,
    stop: &AtomicBool,
    say: &mut dyn FnMut(&str),
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let all: Vec<usize> = (1..=MAX_SENDERS).collect();
    let senders = |n: usize| &all[..n];
    for &e in &o.experiments {
        say(&format!("experiment {}", e.name()));
        match e {
            Experiment::Packing | Experiment::Scaling => {
                let (nodes, degrees): (&[usize], Vec<(u8, &str)>) = if e == Experiment::Packing {
                    (
                        &o.packing_nodes,
                        vec![(o.packing, "packed"), (1, "unpacked")],
                    )
                } else {
                    (&o.scaling_nodes, vec![(o.packing, "packed")])
                };
                for &n in nodes {
                    for (deg, label) in &degrees {
                        let p = plan(
                            o,
                            n,
                            "direct",
                            FabricKnobs {
                                packing: Some(*deg),
                                ..Default::default()
                            },
                        )?;
                        let matrices: Vec<Matrix> = if n == 2 {
                            vec![Matrix::OneToOne]
                        } else {
                            vec![Matrix::OneToOne, Matrix::Uniform]
                        };
                        let got = with_cluster(o, p, stop, say, &mut |p, say| {
                            let mut out = Vec::new();
                            for &m in &matrices {
                                let t = Traffic {
                                    senders: senders(n),
                                    matrix: m,
                                    rate_pps: o.rate_pps,
                                    size: o.size,
                                    flows: o.flows,
                                    duration: o.duration,
                                    kill: None,
                                };
                                let r = traffic(o, p, &t, stop, say)?;
                                let r = row(
                                    e.name(),
                                    format!("{label} {n}n {}", m.name()),
                                    p,
                                    m,
                                    o.rate_pps,
                                    r,
                                );
                                say(&summary(&r));
                                out.push(r);
                            }
                            if e == Experiment::Packing && n == o.packing_nodes[0] {
                                let t = Traffic {
                                    senders: senders(n),
                                    matrix: Matrix::OneToOne,
                                    rate_pps: o.light_pps,
                                    size: o.size,
                                    flows: o.flows,
                                    duration: o.duration,
                                    kill: None,
                                };
                                let r = traffic(o, p, &t, stop, say)?;
                                let r = row(
                                    e.name(),
                                    format!("light {label} {n}n one-to-one"),
                                    p,
                                    Matrix::OneToOne,
                                    o.light_pps,
                                    r,
                                );
                                say(&summary(&r));
                                out.push(r);
                            }
                            Ok(out)
                        })?;
                        rows.extend(got);
                    }
                }
            }
            Experiment::Reorder => {
                for aff in [true, false] {
                    let p = plan(
                        o,
                        o.nodes,
                        "vlb",
                        FabricKnobs {
                            affinity: Some(aff),
                            ..Default::default()
                        },
                    )?;
                    let got = with_cluster(o, p, stop, say, &mut |p, say| {
                        let t = Traffic {
                            senders: senders(o.nodes),
                            matrix: Matrix::Uniform,
                            rate_pps: o.reorder_pps,
                            size: o.size,
                            flows: o.reorder_flows,
                            duration: o.duration,
                            kill: None,
                        };
                        let r = traffic(o, p, &t, stop, say)?;
                        let case = if aff { "affinity on" } else { "affinity off" };
                        let r = row("reorder", case.into(), p, Matrix::Uniform, o.reorder_pps, r);
                        say(&summary(&r));
                        Ok(r)
                    })?;
                    rows.push(got);
                }
            }
            Experiment::Load => {
                // R: the offered per-port rate. `port_rate_mbps` is whole
                // Mbit/s, so the rate is the light rate rounded to a whole
                // number of Mbit/s of frames (2000 pps at 64 B: 1 Mbit/s =
                // 1953 pps).
                let bits = o.size as u64 * 8;
                let mbps = ((o.light_pps * bits + 500_000) / 1_000_000).max(1);
                let rate = mbps * 1_000_000 / bits;
                let mbps = mbps as u32;
                let p = plan(
                    o,
                    o.nodes,
                    "direct-vlb",
                    FabricKnobs {
                        packing: Some(1),
                        affinity: Some(true),
                        port_rate_mbps: Some(mbps),
                    },
                )?;
                let got = with_cluster(o, p, stop, say, &mut |p, say| {
                    let mut out = Vec::new();
                    for m in [Matrix::Uniform, Matrix::Permutation] {
                        let t = Traffic {
                            senders: senders(o.nodes),
                            matrix: m,
                            rate_pps: rate,
                            size: o.size,
                            flows: o.flows,
                            duration: o.duration,
                            kill: None,
                        };
                        let r = traffic(o, p, &t, stop, say)?;
                        let r = row("load", m.name().into(), p, m, rate, r);
                        say(&format!(
                            "{}  node load {:.2}R link load {:.3}R",
                            summary(&r),
                            r.node_load_r(),
                            r.link_load_r()
                        ));
                        out.push(r);
                    }
                    Ok(out)
                })?;
                rows.extend(got);
            }
            Experiment::Failure => {
                let n = o.nodes.max(3);
                let p = plan(o, n, "vlb", FabricKnobs::default())?;
                let got = with_cluster(o, p, stop, say, &mut |p, say| {
                    let dur = o.duration.max(Duration::from_secs(4));
                    let t = Traffic {
                        senders: senders(n - 1),
                        matrix: Matrix::Uniform,
                        rate_pps: o.light_pps,
                        size: o.size,
                        flows: o.flows,
                        duration: dur,
                        kill: Some((n, dur / 2)),
                    };
                    let r = traffic(o, p, &t, stop, say)?;
                    let r = row(
                        "failure",
                        format!("kill node {n} of {n}"),
                        p,
                        Matrix::Uniform,
                        o.light_pps,
                        r,
                    );
                    say(&format!(
                        "{}  loss window {:.0} ms recovery {:.0} ms",
                        summary(&r),
                        r.loss_window_ms.unwrap_or(f64::NAN),
                        r.recovery_ms.unwrap_or(f64::NAN)
                    ));
                    Ok(r)
                })?;
                rows.push(got);
            }
        }
    }
    Ok(())
}

/// The most senders (nodes) a run has.
const MAX_SENDERS: usize = cluster::MAX_NODES;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices() {
        assert_eq!(Matrix::OneToOne.dsts(1, 4), vec![2]);
        assert_eq!(Matrix::OneToOne.dsts(2, 4), vec![1]);
        assert_eq!(Matrix::OneToOne.dsts(3, 3), vec![1]);
        assert_eq!(Matrix::Uniform.dsts(2, 4), vec![1, 3, 4]);
        assert_eq!(Matrix::Permutation.dsts(4, 4), vec![1]);
        assert_eq!(Matrix::Permutation.dsts(1, 4), vec![2]);
        // No node sends to itself, every destination exists.
        for n in 2..=8 {
            for m in [Matrix::OneToOne, Matrix::Uniform, Matrix::Permutation] {
                for k in 1..=n {
                    for j in m.dsts(k, n) {
                        assert!(j != k && (1..=n).contains(&j), "{m:?} {k} {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn fabric_knobs_reach_the_node_configuration() {
        let mut p = Plan::new("tcl", 3, 1, "direct-vlb", 100).expect("plan");
        p.fabric = FabricKnobs {
            packing: Some(1),
            affinity: Some(false),
            port_rate_mbps: Some(5),
        };
        let text = p.tesserad_conf(1, Path::new("/tmp/x"));
        let c = config::parse(&text, "n.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let kc = c.cluster.expect("cluster");
        assert_eq!(kc.packing, 1);
        assert!(!kc.affinity);
        assert_eq!(kc.port_rate_mbps, 5);
        // Defaults stay defaults.
        let p = Plan::new("tcl", 3, 1, "direct", 100).expect("plan");
        let c = config::parse(&p.tesserad_conf(1, Path::new("/tmp/x")), "n.toml").expect("cfg");
        assert_eq!(c.cluster.expect("cluster").packing, 16);
    }

    fn rep(sent: u64, received: u64, reordered: u64) -> Report {
        Report {
            sent,
            received,
            reordered,
            send_s: 1.0,
            size: 64,
            ..Default::default()
        }
    }

    fn r(exp: &str, case: &str, nodes: usize, matrix: &str, report: Report) -> Row {
        Row {
            experiment: exp.into(),
            case: case.into(),
            nodes,
            mode: "direct".into(),
            packing: 16,
            affinity: true,
            matrix: matrix.into(),
            rate_pps: 0,
            report,
            cpu_pct: vec![50.0; nodes],
            node_pps: vec![200.0; nodes],
            ext_pps: vec![100.0; nodes],
            fab_tx_pps: vec![150.0; nodes],
            loss_window_ms: None,
            recovery_ms: None,
        }
    }

    #[test]
    fn figures_compute_ratios_from_the_same_run() {
        let rows = vec![
            r(
                "packing",
                "packed 2n one-to-one",
                2,
                "one-to-one",
                rep(1000, 900, 0),
            ),
            r(
                "packing",
                "unpacked 2n one-to-one",
                2,
                "one-to-one",
                rep(1000, 450, 0),
            ),
            r("reorder", "affinity on", 4, "uniform", rep(1000, 1000, 1)),
            r("reorder", "affinity off", 4, "uniform", rep(1000, 1000, 60)),
            r("load", "uniform", 4, "uniform", rep(1, 1, 0)),
        ];
        let f = figures(&rows);
        let g = f
            .iter()
            .find(|f| f.name.starts_with("packing gain, 2"))
            .expect("gain");
        assert!((g.ours - 2.0).abs() < 1e-9);
        assert_eq!(g.verdict, "met");
        let on = f
            .iter()
            .find(|f| f.name.ends_with("affinity on"))
            .expect("on");
        assert!((on.ours - 0.1).abs() < 1e-9);
        assert_eq!(on.verdict, "met");
        let off = f
            .iter()
            .find(|f| f.name.ends_with("affinity off"))
            .expect("off");
        assert!((off.ours - 6.0).abs() < 1e-9);
        let nl = f
            .iter()
            .find(|f| f.name.starts_with("max node load"))
            .expect("load");
        assert!((nl.ours - 2.0).abs() < 1e-9);
        assert_eq!(nl.verdict, "met");
        let ll = f
            .iter()
            .find(|f| f.name.starts_with("max fabric link"))
            .expect("link");
        // 150 pps over 3 peer links / R 100 = 0.5 = 2R/N at N = 4.
        assert!((ll.ours - 0.5).abs() < 1e-9);
        assert_eq!(ll.verdict, "met");
        let c = csv(&rows);
        assert_eq!(c.lines().count(), 6);
        assert!(c.lines().nth(1).expect("row").contains(",900,"));
        assert_eq!(charts(&rows).len(), 3);
        assert!(figures_md(&f).contains("| packing gain, 2 nodes one-to-one, 64 B | 2.000 |"));
    }

    #[test]
    fn experiments_parse() {
        for e in Experiment::ALL {
            assert_eq!(Experiment::parse(e.name()), Ok(e));
        }
        assert!(Experiment::parse("nope").is_err());
    }
}
