//! Figs 6.2-6.3 and 6.9: Eq 6.7 (rate-based price, scheme B) in the
//! simulator over a K × R grid, 3 sources at 4× the egress port, 500
//! control intervals; the §6.5 set-up (port 760 kpps, setpoint C = 700 kpps).

use std::fmt::Write;

use cc::{EgressScheme, IngressScheme};
use plot::{HeatMap, LineChart};

use super::build::{ch7, Scheme};
use super::common::{k, simulate, Check, Opts, Outcome, Progress};
use crate::model::{Control, Pattern};
use crate::report::Report;

/// Port capacity of §6.5, pps.
const PORT: f64 = 760_000.0;
/// The controller's capacity setpoint of §6.5, pps.
const SETPOINT: f64 = 700_000.0;
/// Signal lag: one control interval, so the loop is Eq 6.7 as printed.
const LAG: u64 = 1_000_000;

fn one(kk: f64, r: f64, lag: u64, opts: Opts, progress: Progress<'_>) -> Result<Report, String> {
    let offered = [PORT * 4.0 / 3.0; 3];
    // 500 intervals of 1 ms, statistics over the second half.
    let mut cfg = ch7(
        Scheme::RatePrice(SETPOINT),
        &offered,
        PORT,
        Pattern::Poisson,
        500_000_000,
    );
    cfg.warmup_ns = 250_000_000;
    cfg.seed = opts.seed;
    cfg.signal_lag_ns = lag;
    cfg.control = Control::Scheme {
        egress: EgressScheme::RatePrice {
            capacity_pps: SETPOINT,
            r,
        },
        ingress: IngressScheme::Price {
            k: kk,
            w: 1.0,
            max_rate: 2e6,
        },
    };
    simulate(cfg, &format!("fig62 K={kk:.0} R={r:.1e}"), progress)
}

pub(crate) fn run(opts: Opts, progress: Progress<'_>) -> Result<Outcome, String> {
    let mut o = Outcome::default();
    let ks = [2e4, 5e4, 1e5, 1.5e5, 2e5, 2.5e5];
    let rs = [1e11, 1.5e11, 2e11, 3e11, 5e11, 1e12, 2e12];
    let mut csv =
        String::from("k,r,egress_tx_pps,injected_pps,queue_mean,queue_std,egress_drop_pps\n");
    let mut tx = vec![vec![0.0; ks.len()]; rs.len()];
    let mut qm = vec![vec![0.0; ks.len()]; rs.len()];
    for (j, &r) in rs.iter().enumerate() {
        for (i, &kk) in ks.iter().enumerate() {
            let rep = one(kk, r, LAG, opts, progress)?;
            let s = &rep.summary;
            let drops: f64 = s.flows.iter().map(|f| f.egress_drop_pps).sum();
            let _ = writeln!(
                csv,
                "{kk},{r:e},{:.0},{:.0},{:.1},{:.1},{drops:.0}",
                s.egress_tx_pps[3],
                s.injected_to(3),
                s.queue_mean[3],
                s.queue_std[3]
            );
            tx[j][i] = s.egress_tx_pps[3] / 1e3;
            qm[j][i] = s.queue_mean[3];
        }
    }
    o.file("fig62.csv", csv);
    let heat = |title: &str, label: &str, v: Vec<Vec<f64>>| {
        HeatMap::new(title, "K", "R", label)
            .grid(ks.to_vec(), rs.to_vec(), v)
            .to_svg()
    };
    o.file(
        "fig62_tx_heat.svg",
        heat(
            "Eq 6.7 in the simulator: egress TX (kpps), setpoint 700, port 760, 4x load",
            "kpps",
            tx.clone(),
        ),
    );
    o.file(
        "fig63_queue_heat.svg",
        heat(
            "Eq 6.7 in the simulator: mean egress queue (packets)",
            "packets",
            qm.clone(),
        ),
    );
    // The stable region (K 50k-200k, R >= 3e11): TX at the setpoint, queue small.
    let mut worst_tx = f64::INFINITY;
    let mut worst_q = 0.0f64;
    for (j, &r) in rs.iter().enumerate() {
        for (i, &kk) in ks.iter().enumerate() {
            if (5e4..=2e5).contains(&kk) && r >= 3e11 {
                worst_tx = worst_tx.min(tx[j][i]);
                worst_q = worst_q.max(qm[j][i]);
            }
        }
    }
    o.checks.push(Check::judged(
        "Figs 6.2/6.9: egress TX for K 50k-200k, R ≥ 3e11",
        "≈ 700 kpps (the setpoint)".into(),
        format!("lowest {worst_tx:.0} kpps"),
        "≥ 97 % of 700",
        worst_tx >= 0.97 * SETPOINT / 1e3,
    ));
    o.checks.push(Check::judged(
        "Fig 6.3: egress queue for K > 50k, R > 3e11",
        "small".into(),
        format!("largest mean {worst_q:.0} packets"),
        "< 100 packets",
        worst_q < 100.0,
    ));
    // R = 1.5e11 (below C²/(nW) = 1.63e11 at C = 700k): swings.
    let bad = one(1e5, 1.5e11, LAG, opts, progress)?;
    let good = one(1e5, 5e11, LAG, opts, progress)?;
    let (b, g) = (&bad.summary, &good.summary);
    o.checks.push(Check::judged(
        "Figs 6.5/6.9: K=1e5, R=1.5e11 against R=5e11",
        "unstable: injection swings overflow the queue, TX falls below the setpoint".into(),
        format!(
            "queue {:.0}±{:.0} vs {:.0}±{:.0}; TX {} vs {} kpps",
            b.queue_mean[3],
            b.queue_std[3],
            g.queue_mean[3],
            g.queue_std[3],
            k(b.egress_tx_pps[3]),
            k(g.egress_tx_pps[3])
        ),
        "queue σ ≥ 5× the stable one",
        b.queue_std[3] >= 5.0 * g.queue_std[3].max(1.0),
    ));
    let gs = one(1e5, 1.5e11, 0, opts, progress)?;
    o.checks.push(Check::info(
        "K=1e5, R=1.5e11 without the one-interval signal lag",
        "(Eq 6.7 has it)".into(),
        format!(
            "queue {:.0}±{:.0}, TX {} kpps: stable",
            gs.summary.queue_mean[3],
            gs.summary.queue_std[3],
            k(gs.summary.egress_tx_pps[3])
        ),
        "a price applied in the interval it was computed gives a Gauss-Seidel loop, stable far below C²/(nW)",
    ));
    let low = one(1e5, 1e11, LAG, opts, progress)?;
    o.checks.push(Check::info(
        "Fig 6.9: TX below the setpoint when unstable",
        "falls below 700 at R=1.5e11".into(),
        format!(
            "{} kpps at R=1.5e11, {} at R=1e11",
            k(b.egress_tx_pps[3]),
            k(low.summary.egress_tx_pps[3])
        ),
        "our 1000-packet queue and the 60 kpps of port headroom absorb the swings at 1.5e11",
    ));
    let mut chart = LineChart::new(
        "Eq 6.7 in the simulator: injection of source 1, K=1e5",
        "time (s)",
        "kpps",
    );
    for (name, rep) in [("R=5e11", &good), ("R=1.5e11", &bad)] {
        let pts = rep
            .samples
            .iter()
            .filter(|s| s.t <= 0.1)
            .map(|s| (s.t, s.injected[0] / 1e3))
            .collect();
        chart = chart.series(name, pts);
    }
    o.file("fig65_rates.svg", chart.to_svg());
    Ok(o)
}
