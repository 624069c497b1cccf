//! `cargo bench -p tesserad --bench cluster_cc` (root): the cluster's
//! internal congestion control in the real cluster (issue 15). Four
//! tesserads in network namespaces (the lab of `tests/cluster_cc.rs`):
//! three ingress nodes send to one egress whose port is emulated by a TX
//! shaper at C = 5 kpps; the hosts offer 3 × C and 4 × C in total. For no
//! control and each scheme it prints egress TX / C, the injection into
//! the fabric (CcIngress's admitted frames over the load time), the egress queue's mean and σ (sampled once per 1 ms
//! interval with traffic), the per-ingress shares of the egress TX and
//! their Jain index normalised by the max-min fair share; beside each,
//! ccsim's prediction for the same cluster (port-only egress, the same
//! parameters, constant sources, one round per offered frame).
//!
//! `CC_BENCH_SECS` sets the load time per run (default 4). The per-ingress
//! rates at H3 over time, one SVG per scheme at 3 × C, go to
//! `CC_BENCH_OUT` (default `target/cc-bench`).

#[path = "../tests/cc_lab/mod.rs"]
mod cc_lab;
use e2e as common;

use std::time::Duration;

use cc::{EgressScheme, Increase, IngressScheme, Notify};
use ccsim::{Config, Control, NodeCfg, Pattern, Sim, SourceCfg};

const BIN: &str = env!("CARGO_BIN_EXE_tesserad");
const C: u64 = 5_000;

/// The schemes with tesserad's defaults scaled to C (config/src/cluster.rs):
/// W, K ∝ C, R ∝ C².
fn control(name: &str) -> Control {
    let f = C as f64 / 764_500.0;
    let (egress, ingress) = match name {
        "becn-aimd-weights" => (
            EgressScheme::Threshold {
                q_threshold: 100,
                notify: Notify::LastSource,
            },
            IngressScheme::Weight {
                incr: 20,
                max: 1000,
                min: 1,
                increase: Increase::EveryInterval,
            },
        ),
        "price" => (
            EgressScheme::QueuePrice {
                q_o: 100.0,
                u: 0.01,
                r: 5e11 * f * f,
            },
            IngressScheme::Price {
                k: 1e5 * f,
                w: 1.0,
                max_rate: 1e9,
            },
        ),
        "aimd-rate" => (
            EgressScheme::Threshold {
                q_threshold: 100,
                notify: Notify::All,
            },
            IngressScheme::RateAimd {
                w: 50_000.0 * f,
                m: 0.5,
                max_rate: 1e9,
            },
        ),
        _ => return Control::None,
    };
    Control::Scheme { egress, ingress }
}

struct Pred {
    tx: f64,
    injected: f64,
    q_mean: f64,
    q_sd: f64,
    shares: Vec<f64>,
}

fn predict(name: &str, per_host: f64, secs: f64) -> Pred {
    let mut cfg = Config::new((secs * 1e9) as u64, control(name));
    // The egress: a port at C, the same 1000-packet queue; the ingresses
    // pull one round per offered frame (CcIngress's weighted quantum).
    let mut node = NodeCfg::port(C as f64);
    node.round_pps = per_host;
    cfg.nodes = vec![node; 4];
    cfg.sources = (0..3)
        .map(|i| SourceCfg {
            node: i,
            dest: 3,
            rate_pps: per_host,
            pattern: Pattern::Constant,
            start_ns: 0,
        })
        .collect();
    let r = Sim::new(cfg).expect("valid").run(&mut |_| {});
    let s = &r.summary;
    Pred {
        tx: s.egress_tx_pps.get(3).copied().unwrap_or(0.0),
        injected: s.injected_to(3),
        q_mean: s.queue_mean.get(3).copied().unwrap_or(0.0),
        q_sd: s.queue_std.get(3).copied().unwrap_or(0.0),
        shares: s.flows.iter().map(|f| f.tx_pps).collect(),
    }
}

/// Rates at H3 per ingress over time, kpps.
fn chart(name: &str, series: &[[u64; 3]]) -> String {
    let bin_s = cc_lab::BIN_MS as f64 / 1e3;
    let mut c = plot::LineChart::new(
        &format!("netns cluster, 3 × C = 15 kpps offered, C = 5 kpps: {name}"),
        "time (s)",
        "egress TX by ingress (kpps)",
    );
    for k in 0..3 {
        let pts = series
            .iter()
            .enumerate()
            .map(|(i, b)| (i as f64 * bin_s, b[k] as f64 / bin_s / 1e3))
            .collect();
        c = c.series(&format!("from ingress {k}"), pts);
    }
    let total = series
        .iter()
        .enumerate()
        .map(|(i, b)| (i as f64 * bin_s, b.iter().sum::<u64>() as f64 / bin_s / 1e3))
        .collect();
    c.series("total", total).to_svg()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("cluster_cc: bench");
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("cluster_cc: needs root (network namespaces); not run");
        return;
    }
    let secs: u64 = std::env::var("CC_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let load = Duration::from_secs(secs);
    let out = std::path::PathBuf::from(
        std::env::var("CC_BENCH_OUT").unwrap_or_else(|_| "target/cc-bench".into()),
    );
    println!(
        "| load | scheme | egress TX / C | injected into fabric, pps (of offered) | queue mean ± σ | \
         shares of egress TX | Jain (norm. max-min) | ccsim: TX / C, injected pps, queue, Jain |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for x in [3u64, 4] {
        let per_host = x * C / 3;
        for name in ["none", "becn-aimd-weights", "price", "aimd-rate"] {
            let cc = match name {
                "none" => format!("egress_shape_pps = {C}\n"),
                s => format!("congestion_control = \"{s}\"\negress_shape_pps = {C}\n"),
            };
            let m = cc_lab::measure(BIN, &cc, per_host, load);
            if x == 3 {
                let _ = std::fs::create_dir_all(&out);
                let svg = chart(name, &m.series);
                let _ = std::fs::write(out.join(format!("cc-netns-{name}.svg")), svg);
            }
            let t = load.as_secs_f64();
            // TX / C over the load window only (what arrived after the
            // senders stopped drained the queue).
            let got: u64 = m.received_in_load.iter().sum();
            let fair = ccsim::max_min(&[per_host as f64; 3], C as f64);
            let norm: Vec<f64> = m
                .received
                .iter()
                .zip(&fair)
                .map(|(&r, f)| r as f64 / t / f)
                .collect();
            let p = predict(name, per_host as f64, 3.0);
            let pnorm: Vec<f64> = p.shares.iter().zip(&fair).map(|(r, f)| r / f).collect();
            let total = m.received.iter().sum::<u64>().max(1) as f64;
            println!(
                "| {x}×C | {name} | {:.3} | {:.0} ({:.2}) | {:.1} ± {:.1} | {} | {:.3} | \
                 {:.3}, {:.0}, {:.1} ± {:.1}, {:.3} |",
                got as f64 / t / C as f64,
                m.injected as f64 / t,
                m.injected as f64 / m.offered.max(1) as f64,
                m.egress.queue_mean,
                m.egress.queue_sd,
                m.received
                    .iter()
                    .map(|&r| format!("{:.2}", r as f64 / total))
                    .collect::<Vec<_>>()
                    .join("/"),
                ccsim::jain(&norm),
                p.tx / C as f64,
                p.injected,
                p.q_mean,
                p.q_sd,
                ccsim::jain(&pnorm),
            );
        }
    }
}
