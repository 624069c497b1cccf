//! What every experiment shares: options, checks, outcomes, helpers.

use std::fmt::Write;

use crate::engine::Sim;
use crate::model::Config;
use plot::LineChart;

use crate::report::Report;

/// Options common to all experiments.
#[derive(Clone, Copy, Debug)]
pub struct Opts {
    /// Seed of every run.
    pub seed: u64,
    /// Shorter runs (a quarter of the simulated time; the checks are
    /// still judged).
    pub quick: bool,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            seed: 1,
            quick: false,
        }
    }
}

/// One comparison with the thesis.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What is compared.
    pub what: String,
    /// The thesis's value (or claim).
    pub thesis: String,
    /// Ours.
    pub ours: String,
    /// How it is judged ("info" when it is not: a known difference,
    /// explained in docs/cc.md).
    pub tolerance: String,
    /// Judged and within tolerance (always true for info rows).
    pub pass: bool,
    /// Whether it is judged at all.
    pub judged: bool,
}

impl Check {
    /// A judged comparison.
    pub fn judged(what: &str, thesis: String, ours: String, tolerance: &str, pass: bool) -> Check {
        Check {
            what: what.into(),
            thesis,
            ours,
            tolerance: tolerance.into(),
            pass,
            judged: true,
        }
    }

    /// A comparison shown but not judged.
    pub fn info(what: &str, thesis: String, ours: String, note: &str) -> Check {
        Check {
            what: what.into(),
            thesis,
            ours,
            tolerance: format!("info: {note}"),
            pass: true,
            judged: false,
        }
    }
}

/// What an experiment produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// (file name, contents): CSV and SVG.
    pub files: Vec<(String, String)>,
    /// The comparisons.
    pub checks: Vec<Check>,
}

impl Outcome {
    /// The checks as a Markdown table.
    pub fn table(&self) -> String {
        let mut out =
            String::from("| what | thesis | ours | tolerance | ok |\n|---|---|---|---|---|\n");
        for c in &self.checks {
            let ok = match (c.judged, c.pass) {
                (false, _) => "-",
                (true, true) => "yes",
                (true, false) => "NO",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {ok} |",
                c.what, c.thesis, c.ours, c.tolerance
            );
        }
        out
    }

    /// Judged checks that failed.
    pub fn failures(&self) -> Vec<&Check> {
        self.checks.iter().filter(|c| c.judged && !c.pass).collect()
    }

    pub(crate) fn file(&mut self, name: &str, contents: String) {
        self.files.push((name.to_string(), contents));
    }

    pub(crate) fn merge(&mut self, other: Outcome) {
        self.files.extend(other.files);
        self.checks.extend(other.checks);
    }
}

/// Progress callback: (what is running, fraction of it done).
pub type Progress<'a> = &'a mut dyn FnMut(&str, f64);

/// Run one configuration, reporting progress under `label`.
pub(crate) fn simulate(cfg: Config, label: &str, progress: Progress<'_>) -> Result<Report, String> {
    let sim = Sim::new(cfg)?;
    Ok(sim.run(&mut |f| progress(label, f)))
}

/// Simulated seconds as ns, shortened by `quick`.
pub(crate) fn secs(s: f64, opts: Opts) -> u64 {
    let s = if opts.quick { s / 4.0 } else { s };
    (s * 1e9) as u64
}

/// `a` within `tol` (relative) of `b`.
pub(crate) fn near(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs()
}

/// kpps with no decimals.
pub(crate) fn k(v: f64) -> String {
    format!("{:.0}", v / 1e3)
}

/// Per-source injected (and egress TX) over time, first `until` s.
pub(crate) fn rates_chart(title: &str, r: &Report, until: f64) -> LineChart {
    let mut c = LineChart::new(title, "time (s)", "kpps");
    let n = r.summary.flows.len();
    for i in 0..n {
        let pts = r
            .samples
            .iter()
            .filter(|s| s.t <= until)
            .map(|s| (s.t, s.injected[i] / 1e3))
            .collect();
        c = c.series(&format!("injected, source {}", i + 1), pts);
    }
    let dest = r.summary.flows.first().map_or(0, |f| f.dest);
    let pts = r
        .samples
        .iter()
        .filter(|s| s.t <= until)
        .map(|s| (s.t, s.egress_tx[dest] / 1e3))
        .collect();
    c.series("egress TX", pts)
}
