//! The scale run: 64 nodes, 10 simulated seconds.

use std::fmt::Write;

use super::build::{scale, Scheme, C_SIM};
use super::common::{k, secs, simulate, Check, Opts, Outcome, Progress};

pub(crate) fn run(opts: Opts, progress: Progress<'_>) -> Result<Outcome, String> {
    let mut o = Outcome::default();
    let mut cfg = scale(Scheme::QueuePrice, 64, secs(10.0, opts));
    cfg.seed = opts.seed;
    let rep = simulate(cfg, "scale 64 nodes", progress)?;
    let s = &rep.summary;
    let mut csv =
        String::from("node,egress_tx_pps,offered_pps,injected_pps,queue_mean,queue_std\n");
    for n in 0..s.egress_tx_pps.len() {
        let _ = writeln!(
            csv,
            "{n},{:.0},{:.0},{:.0},{:.1},{:.1}",
            s.egress_tx_pps[n],
            s.offered_to(n),
            s.injected_to(n),
            s.queue_mean[n],
            s.queue_std[n]
        );
    }
    o.file("scale.csv", csv);
    let hot_min = (0..8)
        .map(|n| s.egress_tx_pps[n])
        .fold(f64::INFINITY, f64::min);
    let q_hot = (0..8).map(|n| s.queue_mean[n]).sum::<f64>() / 8.0;
    o.checks.push(Check::judged(
        "64 nodes: the 8 hot egresses (offered ~950 kpps) run at capacity",
        "(no thesis figure)".into(),
        format!(
            "min TX {} of {} kpps, mean queue {q_hot:.0}",
            k(hot_min),
            k(C_SIM)
        ),
        "≥ 98 % of C",
        hot_min >= 0.98 * C_SIM,
    ));
    Ok(o)
}
