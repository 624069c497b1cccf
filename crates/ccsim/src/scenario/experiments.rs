//! The registry of named experiments and what they return.

use super::common::{Opts, Outcome, Progress};

/// A named experiment.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Name on the command line.
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
}

/// Every experiment, in the order `all` runs them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "fig61",
        about: "Fig 6.1/6.4-6.8: Eq 6.7 stability over K x R (W=1, C=764.5k, 3 sources, 500 iterations), heat map",
    },
    Scenario {
        name: "fig62",
        about: "Figs 6.2-6.5, 6.9: Eq 6.7 (rate-based price) in the simulator over K x R, 4x load, setpoint 700 of 760 kpps",
    },
    Scenario {
        name: "tab71",
        about: "Tab 7.1 and Fig 7.11: optimal (Eq 7.9) vs AIMD, injection, egress TX, queue mean/std; rates and queues over time",
    },
    Scenario {
        name: "fairness",
        about: "Figs 7.8-7.9: sources at 500/50/5 Mbit/s get max-min shares (optimal, AIMD)",
    },
    Scenario {
        name: "ch5",
        about: "Ch. 5: BECN + AIMD weights vs no control at >2x overload (+33% forwarding, -59% injection), subset vs broadcast BECN",
    },
    Scenario {
        name: "sweep-a",
        about: "Scheme A constants (GAP in the thesis): Incrweight x Q_threshold x increase rule",
    },
    Scenario {
        name: "scale",
        about: "64 nodes, 128 sources, 8 hot egresses, 10 simulated seconds (Eq 7.9)",
    },
];

/// Run experiment `name` (or `all`).
pub fn run(name: &str, opts: Opts, progress: Progress<'_>) -> Result<Outcome, String> {
    match name {
        "fig61" => Ok(super::fig61::run(progress)),
        "fig62" => super::fig62::run(opts, progress),
        "tab71" => super::ch7::tab71(opts, progress),
        "fairness" => super::ch7::fairness(opts, progress),
        "ch5" => super::ch5::run(opts, progress),
        "sweep-a" => super::ch5::sweep(opts, progress),
        "scale" => super::scale::run(opts, progress),
        "all" => {
            let mut all = Outcome::default();
            for s in SCENARIOS {
                all.merge(run(s.name, opts, progress)?);
            }
            Ok(all)
        }
        other => Err(format!(
            "unknown scenario {other:?}; known: {}, all",
            SCENARIOS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
