//! Fig 6.1 (stability of the discrete Eq 6.7 over K × R) and the
//! convergence curves of Figs 6.4-6.8, from [`cc::Eq67`] unchanged.

use std::fmt::Write;

use cc::Eq67;
use plot::{HeatMap, LineChart};

use super::common::{Check, Outcome, Progress};

const ITERS: usize = 500;
const TOL: f64 = 0.001;

/// One grid point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridCell {
    /// K.
    pub k: f64,
    /// R.
    pub r: f64,
    /// Largest relative rate error after 500 iterations.
    pub error: f64,
    /// Iterations to settle within 0.1 % (None: not stable).
    pub settled_at: Option<usize>,
}

/// Fig 6.1's grid: K = 5k..255k step 10k, R = 0.5e11..2.75e12 step 0.75e11
/// (ranges of the printed axes: K < 255,000, R < 2.8e12).
pub fn grid() -> (Vec<f64>, Vec<f64>, Vec<GridCell>) {
    let ks: Vec<f64> = (0..26).map(|i| 5_000.0 + 10_000.0 * i as f64).collect();
    let rs: Vec<f64> = (0..31).map(|j| 0.5e11 + 0.75e11 * j as f64).collect();
    let mut cells = Vec::with_capacity(ks.len() * rs.len());
    for &r in &rs {
        for &k in &ks {
            let out = Eq67::fig61(k, r).run(&[0.0; 3], 0.0, ITERS, TOL);
            cells.push(GridCell {
                k,
                r,
                error: out.error,
                settled_at: out.settled_at.filter(|_| out.error <= TOL),
            });
        }
    }
    (ks, rs, cells)
}

fn settle(k: f64, r: f64, tol: f64) -> Option<usize> {
    Eq67::fig61(k, r).run(&[0.0; 3], 0.0, ITERS, tol).settled_at
}

pub(crate) fn run(progress: Progress<'_>) -> Outcome {
    progress("fig61 grid", 0.0);
    let (ks, rs, cells) = grid();
    progress("fig61 grid", 1.0);
    let mut o = Outcome::default();
    let mut csv = String::from("k,r,error,settled_at,analytic_stable\n");
    let rmin = Eq67::fig61(1.0, 1.0).r_min();
    for c in &cells {
        let _ = writeln!(
            csv,
            "{},{:e},{:e},{},{}",
            c.k,
            c.r,
            c.error,
            c.settled_at.map_or(String::new(), |s| s.to_string()),
            c.r > rmin && c.k < Eq67::fig61(1.0, 1.0).k_max()
        );
    }
    o.file("fig61.csv", csv);
    let values: Vec<Vec<f64>> = rs
        .iter()
        .enumerate()
        .map(|(j, _)| {
            (0..ks.len())
                .map(|i| {
                    cells[j * ks.len() + i]
                        .settled_at
                        .map_or(f64::NAN, |s| s as f64)
                })
                .collect()
        })
        .collect();
    let heat = HeatMap::new(
        "Eq 6.7 stability (W=1, C=764.5 kpps, 3 sources): intervals to within 0.1 %",
        "K",
        "R",
        "intervals",
    )
    .grid(ks.clone(), rs.clone(), values)
    .missing("not within 0.1 % after 500");
    o.file("fig61_heat.svg", heat.to_svg());

    // Figs 6.4-6.8: the rate of source 1 over the first 120 intervals.
    let mut chart = LineChart::new(
        "Eq 6.7: rate of one source (x* = 254.8 kpps)",
        "interval",
        "kpps",
    );
    for (k, r, name) in [
        (1e5, 5e11, "K=1e5 R=5e11 (Fig 6.4)"),
        (1e5, 1.5e11, "K=1e5 R=1.5e11 (Fig 6.5)"),
        (1e5, 1e12, "K=1e5 R=1e12 (Fig 6.6)"),
        (2e4, 5e11, "K=2e4 R=5e11 (Fig 6.7)"),
        (1.5e5, 5e11, "K=1.5e5 R=5e11 (Fig 6.8)"),
    ] {
        let m = Eq67::fig61(k, r);
        let (mut x, mut p) = (vec![0.0; 3], 0.0);
        let mut pts = vec![(0.0, 0.0)];
        for i in 1..=120 {
            m.step(&mut x, &mut p);
            pts.push((i as f64, x[0] / 1e3));
        }
        chart = chart.series(name, pts);
    }
    o.file("fig64_rates.svg", chart.to_svg());

    // Checks.
    let unstable = Eq67::fig61(1e5, 1.5e11).run(&[0.0; 3], 0.0, ITERS, TOL);
    o.checks.push(Check::judged(
        "Eq 6.7 K=1e5 R=1.5e11 (Fig 6.5)",
        "unstable".into(),
        format!("error {:.2} after 500", unstable.error),
        "error > 1 %",
        unstable.error > 0.01,
    ));
    let base = settle(1e5, 5e11, 0.1);
    o.checks.push(Check::judged(
        "Eq 6.7 K=1e5 R=5e11 intervals to converge (Fig 6.4)",
        "~20".into(),
        format!(
            "{} to 10 %, {} to 0.1 %",
            base.map_or("-".into(), |v| v.to_string()),
            settle(1e5, 5e11, TOL).map_or("-".into(), |v| v.to_string())
        ),
        "12-30 to 10 % (read off a plot)",
        base.is_some_and(|b| (12..=30).contains(&b)),
    ));
    let (r12, k2, k15) = (
        settle(1e5, 1e12, 0.1),
        settle(2e4, 5e11, 0.1),
        settle(1.5e5, 5e11, 0.1),
    );
    let order = matches!((base, r12, k2, k15), (Some(b), Some(r), Some(s), Some(f)) if r > b && s > b && f < b);
    o.checks.push(Check::judged(
        "Figs 6.6-6.8: R=1e12 slow, K=2e4 slower, K=1.5e5 fastest (intervals to 10 %)",
        "slow / slower / fastest".into(),
        format!("{r12:?} / {k2:?} / {k15:?} vs {base:?}"),
        "ordering",
        order,
    ));
    let below = cells
        .iter()
        .filter(|c| c.settled_at.is_some() && c.r < rmin)
        .count();
    o.checks.push(Check::judged(
        "stable cells below the analytic bound R > C²/(nW)",
        format!("bound {rmin:.3e} (DERIVED)"),
        below.to_string(),
        "0",
        below == 0,
    ));
    // The edge of the region along K = 105k and along R = 5.75e11.
    let first_r = cells
        .iter()
        .filter(|c| c.k == 105_000.0 && c.settled_at.is_some())
        .map(|c| c.r)
        .fold(f64::INFINITY, f64::min);
    o.checks.push(Check::judged(
        "smallest stable R at K=105k",
        "~3e11 (Fig 6.1)".into(),
        format!("{first_r:.3e}"),
        "2e11-3.5e11",
        (2e11..=3.5e11).contains(&first_r),
    ));
    let first_k = cells
        .iter()
        .filter(|c| c.r == 5.75e11 && c.settled_at.is_some())
        .map(|c| c.k)
        .fold(f64::INFINITY, f64::min);
    o.checks.push(Check::judged(
        "smallest stable K at R=5.75e11",
        "~25k (Fig 6.1)".into(),
        format!("{first_k:.0}"),
        "5k-35k",
        (5_000.0..=35_000.0).contains(&first_k),
    ));
    o
}
