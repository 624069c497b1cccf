//! Ch. 7: Tab 7.1, Fig 7.11 and the fairness of Figs 7.8-7.9.

use std::fmt::Write;

use plot::{BarChart, LineChart};

use super::build::{ch7, Scheme, C_REAL, C_SIM, MBIT_PPS, TX_RING_REAL};
use super::common::{k, near, rates_chart, secs, simulate, Check, Opts, Outcome, Progress};
use crate::model::Config;
use crate::model::Pattern;
use crate::report::{jain, max_min};

struct Row {
    scheme: Scheme,
    offered: [f64; 3],
    injected: [f64; 3],
    tx: f64,
}

fn rows() -> Vec<Row> {
    let r = |scheme, o: [f64; 3], i: [f64; 3], tx: f64| Row {
        scheme,
        offered: o.map(|v| v * 1e3),
        injected: i.map(|v| v * 1e3),
        tx: tx * 1e3,
    };
    let (opt, aimd) = (Scheme::QueuePrice, Scheme::Aimd);
    vec![
        r(opt, [299., 298., 74.], [299., 298., 74.], 671.),
        r(aimd, [300., 298., 75.], [300., 299., 75.], 674.),
        r(opt, [299., 299., 149.], [293., 293., 149.], 734.),
        r(aimd, [299., 299., 149.], [281., 283., 149.], 734.),
        r(opt, [300., 299., 224.], [257., 257., 224.], 737.),
        r(aimd, [299., 299., 224.], [256., 255., 216.], 723.),
        r(opt, [299., 299., 299.], [247., 247., 247.], 739.),
        r(aimd, [300., 299., 299.], [240., 241., 256.], 728.),
    ]
}

/// Tab 7.1's real system: the ch. 7 set-up at [`C_REAL`] with a NIC TX
/// ring of `ring` descriptors behind each egress queue.
fn real(scheme: Scheme, offered: &[f64], ring: u32, opts: Opts) -> Config {
    let mut cfg = ch7(scheme, offered, C_REAL, Pattern::Poisson, secs(4.0, opts));
    for n in cfg.nodes.iter_mut() {
        n.tx_ring = ring;
    }
    cfg.seed = opts.seed;
    cfg
}

fn triple(v: &[f64]) -> String {
    v.iter().map(|x| k(*x)).collect::<Vec<_>>().join("/")
}

pub(crate) fn tab71(opts: Opts, progress: Progress<'_>) -> Result<Outcome, String> {
    let mut o = Outcome::default();
    let mut csv = String::from(
        "scheme,offered1,offered2,offered3,thesis_inj1,thesis_inj2,thesis_inj3,thesis_tx,inj1,inj2,inj3,tx,queue_mean,queue_std\n",
    );
    let mut ours_tx = Vec::new();
    let mut opt_tx_by_row = Vec::new();
    for (i, row) in rows().iter().enumerate() {
        let cfg = real(row.scheme, &row.offered, TX_RING_REAL, opts);
        let label = format!("tab71 row {} {}", i / 2 + 1, row.scheme.name());
        let rep = simulate(cfg, &label, progress)?;
        let s = &rep.summary;
        let inj: Vec<f64> = s.flows.iter().map(|f| f.injected_pps).collect();
        let tx = s.egress_tx_pps[3];
        ours_tx.push(tx);
        let _ = writeln!(
            csv,
            "{},{},{},{:.0},{:.0},{:.0},{:.0},{:.0},{:.0},{:.0}",
            row.scheme.name(),
            row.offered.map(|v| format!("{v:.0}")).join(","),
            row.injected.map(|v| format!("{v:.0}")).join(","),
            row.tx,
            inj[0],
            inj[1],
            inj[2],
            tx,
            s.queue_mean[3],
            s.queue_std[3]
        );
        let what = format!(
            "Tab 7.1 {} offered {}",
            row.scheme.name(),
            triple(&row.offered)
        );
        if row.scheme == Scheme::QueuePrice {
            opt_tx_by_row.push(tx);
            let ok = inj
                .iter()
                .zip(row.injected.iter())
                .all(|(a, b)| (a - b).abs() <= 0.03 * b)
                && near(tx, row.tx, 0.015);
            o.checks.push(Check::judged(
                &what,
                format!("{} -> {}", triple(&row.injected), k(row.tx)),
                format!("{} -> {}", triple(&inj), k(tx)),
                "injection ±3 %, TX ±1.5 %",
                ok,
            ));
        } else {
            let overloaded = row.offered.iter().sum::<f64>() > C_REAL;
            if overloaded {
                // The thesis's own split of equal loads spreads 7 %
                // (240/241/256): injection is judged at ±8 %.
                let ok = inj
                    .iter()
                    .zip(row.injected.iter())
                    .all(|(a, b)| (a - b).abs() <= 0.08 * b)
                    && near(tx, row.tx, 0.04);
                o.checks.push(Check::judged(
                    &what,
                    format!("{} -> {}", triple(&row.injected), k(row.tx)),
                    format!("{} -> {}", triple(&inj), k(tx)),
                    "injection ±8 %, TX ±4 %",
                    ok,
                ));
            } else {
                let ok = inj
                    .iter()
                    .zip(row.injected.iter())
                    .all(|(a, b)| (a - b).abs() <= 0.03 * b)
                    && near(tx, row.tx, 0.015);
                o.checks.push(Check::judged(
                    &what,
                    format!("{} -> {}", triple(&row.injected), k(row.tx)),
                    format!("{} -> {}", triple(&inj), k(tx)),
                    "injection ±3 %, TX ±1.5 %",
                    ok,
                ));
            }
            let opt = opt_tx_by_row.last().copied().unwrap_or(0.0);
            if overloaded {
                o.checks.push(Check::judged(
                    &format!(
                        "Tab 7.1 optimal TX ≥ AIMD TX, offered {}",
                        triple(&row.offered)
                    ),
                    format!("{:+.1} %", (opt_tx(&rows(), i) / row.tx - 1.0) * 100.0),
                    format!("{:+.1} %", (opt / tx - 1.0) * 100.0),
                    "optimal ≥ AIMD",
                    opt >= tx,
                ));
            }
        }
    }
    o.file("tab71.csv", csv);
    let cats = ["row 1", "row 2", "row 3", "row 4"];
    let pick = |v: &[f64], odd: usize| {
        v.iter()
            .skip(odd)
            .step_by(2)
            .map(|x| x / 1e3)
            .collect::<Vec<_>>()
    };
    let thesis_tx: Vec<f64> = rows().iter().map(|r| r.tx).collect();
    let bars = BarChart::new("Tab 7.1: egress TX, thesis vs ours", "kpps", &cats)
        .series("optimal, thesis", pick(&thesis_tx, 0))
        .series("optimal, ours", pick(&ours_tx, 0))
        .series("AIMD, thesis", pick(&thesis_tx, 1))
        .series("AIMD, ours", pick(&ours_tx, 1));
    o.file("tab71_tx.svg", bars.to_svg());

    // Fig 7.11 and the time series: 3 x 299 kpps, the three schemes.
    let mut queue = LineChart::new(
        "Egress queue, 3 x 299 kpps into 740 kpps",
        "time (s)",
        "packets",
    );
    let mut stats = Vec::new();
    for scheme in [Scheme::None, Scheme::QueuePrice, Scheme::Aimd] {
        let cfg = real(scheme, &[299e3; 3], TX_RING_REAL, opts);
        let rep = simulate(cfg, &format!("fig711 {}", scheme.name()), progress)?;
        o.file(
            &format!("ch7_{}_rates.svg", scheme.name()),
            rates_chart(
                &format!("{}: 3 x 299 kpps into 740 kpps", scheme.name()),
                &rep,
                0.3,
            )
            .to_svg(),
        );
        o.file(
            &format!("ch7_{}_series.csv", scheme.name()),
            rep.series_csv(&[3]),
        );
        let pts = rep
            .samples
            .iter()
            .filter(|s| s.t <= 1.0)
            .map(|s| (s.t, s.queue[3]))
            .collect();
        queue = queue.series(scheme.name(), pts);
        // When the optimal queue settles near q_o: the first sample after
        // which it stays within 50..150.
        let settle = rep
            .samples
            .iter()
            .rposition(|s| !(50.0..=150.0).contains(&s.queue[3]))
            .and_then(|i| rep.samples.get(i + 1))
            .map(|s| s.t);
        stats.push((
            scheme,
            rep.summary.queue_mean[3],
            rep.summary.queue_std[3],
            settle,
        ));
    }
    o.file("ch7_queue.svg", queue.to_svg());
    let names: Vec<&str> = stats.iter().map(|s| s.0.name()).collect();
    let fig711 = BarChart::new("Fig 7.11: egress queue, 3 x 299 kpps", "packets", &names)
        .series("mean", stats.iter().map(|s| s.1).collect())
        .series("std dev", stats.iter().map(|s| s.2).collect());
    o.file("fig711_queue.svg", fig711.to_svg());
    let (none, opt, aimd) = (stats[0], stats[1], stats[2]);
    o.checks.push(Check::judged(
        "Fig 7.11 queue std dev, optimal vs AIMD",
        "optimal lower".into(),
        format!("{:.1} vs {:.1}", opt.2, aimd.2),
        "optimal lower",
        opt.2 < aimd.2,
    ));
    o.checks.push(Check::judged(
        "Fig 7.11 optimal queue mean settles near q_o",
        "~100".into(),
        format!(
            "{:.1}, within 50-150 from {:.2} s",
            opt.1,
            opt.3.unwrap_or(f64::NAN)
        ),
        "80-120, settled by 1 s",
        (80.0..=120.0).contains(&opt.1) && opt.3.is_some_and(|t| t <= 1.0),
    ));
    o.checks.push(Check::judged(
        "Fig 7.11 both schemes far below no control",
        "far below".into(),
        format!("{:.0} / {:.0} vs {:.0}", opt.1, aimd.1, none.1),
        "both means < none / 5",
        opt.1 < none.1 / 5.0 && aimd.1 < none.1 / 5.0,
    ));
    o.checks.push(Check::info(
        "Fig 7.11 queue mean, optimal vs AIMD",
        "optimal lower".into(),
        format!("{:.1} vs {:.1}", opt.1, aimd.1),
        "not reproduced with the 256-descriptor ring: Eq 7.9 holds the queue at q_o = 100, our AIMD queue drains empty after each halving (reproduced from 512 descriptors, below)",
    ));
    // Sensitivity to the TX ring (GAP): AIMD's TX and queue, optimal's TX.
    let mut csv = String::from("tx_ring,scheme,injected_pps,egress_tx_pps,queue_mean,queue_std\n");
    let mut aimd_tx = Vec::new();
    for ring in [0u32, 128, 256, 512, 1024] {
        for scheme in [Scheme::QueuePrice, Scheme::Aimd] {
            let rep = simulate(
                real(scheme, &[299e3; 3], ring, opts),
                &format!("tab71 tx ring {ring} {}", scheme.name()),
                progress,
            )?;
            let s = &rep.summary;
            let _ = writeln!(
                csv,
                "{ring},{},{:.0},{:.0},{:.1},{:.1}",
                scheme.name(),
                s.injected_to(3),
                s.egress_tx_pps[3],
                s.queue_mean[3],
                s.queue_std[3]
            );
            if scheme == Scheme::Aimd {
                aimd_tx.push(format!(
                    "{ring}: {} ({:.0}±{:.0})",
                    k(s.egress_tx_pps[3]),
                    s.queue_mean[3],
                    s.queue_std[3]
                ));
            }
        }
    }
    o.file("tab71_txring.csv", csv);
    o.checks.push(Check::info(
        "AIMD at 3 x 299 kpps vs the NIC TX ring (descriptors: TX kpps (queue mean±σ))",
        "728".into(),
        aimd_tx.join("; "),
        "the ring keeps the port busy while the monitored queue is empty; optimal stays at 740 throughout (tab71_txring.csv)",
    ));
    Ok(o)
}

fn opt_tx(rows: &[Row], aimd_index: usize) -> f64 {
    rows.get(aimd_index.wrapping_sub(1)).map_or(0.0, |r| r.tx)
}

pub(crate) fn fairness(opts: Opts, progress: Progress<'_>) -> Result<Outcome, String> {
    let mut o = Outcome::default();
    let offered = [500.0 * MBIT_PPS, 50.0 * MBIT_PPS, 5.0 * MBIT_PPS];
    let fair = max_min(&offered, C_SIM);
    let mut csv =
        String::from("scheme,source,offered_pps,maxmin_pps,injected_pps,tx_pps,egress_drop_pps\n");
    let mut series = Vec::new();
    for scheme in [Scheme::QueuePrice, Scheme::Aimd] {
        let mut cfg = ch7(scheme, &offered, C_SIM, Pattern::Poisson, secs(4.0, opts));
        cfg.seed = opts.seed;
        let rep = simulate(cfg, &format!("fairness {}", scheme.name()), progress)?;
        let inj: Vec<f64> = rep.summary.flows.iter().map(|f| f.injected_pps).collect();
        for (i, f) in rep.summary.flows.iter().enumerate() {
            let _ = writeln!(
                csv,
                "{},{},{:.0},{:.0},{:.0},{:.0},{:.0}",
                scheme.name(),
                i + 1,
                offered[i],
                fair[i],
                f.injected_pps,
                f.tx_pps,
                f.egress_drop_pps
            );
        }
        let norm: Vec<f64> = inj.iter().zip(fair.iter()).map(|(a, b)| a / b).collect();
        let j = jain(&norm);
        if scheme == Scheme::QueuePrice {
            let ok = inj.iter().zip(fair.iter()).all(|(a, b)| near(*a, *b, 0.02));
            o.checks.push(Check::judged(
                "Figs 7.8-7.9 optimal, 500/50/5 Mbit/s injected",
                format!("{} (max-min, DERIVED)", triple(&fair)),
                format!("{}, Jain(x/fair) {j:.3}", triple(&inj)),
                "each ±2 %",
                ok,
            ));
        } else {
            let ok = near(inj[1], offered[1], 0.01) && near(inj[2], offered[2], 0.01);
            o.checks.push(Check::judged(
                "Figs 7.8-7.9 AIMD, 50 and 5 Mbit/s served in full",
                "100 %".into(),
                format!(
                    "{:.1} % / {:.1} % (source 1 {}), Jain(x/fair) {j:.3}",
                    inj[1] / offered[1] * 100.0,
                    inj[2] / offered[2] * 100.0,
                    k(inj[0])
                ),
                "each ≥ 99 %",
                ok,
            ));
        }
        series.push((scheme.name(), inj));
    }
    o.file("fairness.csv", csv);
    let mut bars = BarChart::new(
        "Sources at 500 / 50 / 5 Mbit/s into 764.5 kpps",
        "kpps",
        &["source 1", "source 2", "source 3"],
    )
    .series("offered", offered.iter().map(|v| v / 1e3).collect())
    .series("max-min share", fair.iter().map(|v| v / 1e3).collect());
    for (name, inj) in series {
        bars = bars.series(
            &format!("injected, {name}"),
            inj.iter().map(|v| v / 1e3).collect(),
        );
    }
    o.file("fairness.svg", bars.to_svg());
    Ok(o)
}
