//! What the benchmark produced: one [`Measurement`] per run and the whole
//! [`BenchReport`] that [`crate::report`] writes out.

use crate::error::BenchError;
use replay::run::RunResult;

/// How one run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Converged,
    /// With the reason (timeout, nothing received, ...).
    NotConverged(String),
    NotSupported(String),
    Failed(BenchError, String),
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Converged => "converged",
            Status::NotConverged(_) => "not-converged",
            Status::NotSupported(_) => "not-supported",
            Status::Failed(..) => "failed",
        }
    }

    pub fn detail(&self) -> String {
        match self {
            Status::Converged => String::new(),
            Status::NotConverged(s) | Status::NotSupported(s) => s.clone(),
            Status::Failed(e, s) => format!("{e}: {s}"),
        }
    }
}

/// One run: a case, a DUT (or the ceiling) and a repetition.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub case: String,
    /// The DUT label, or [`CEILING`].
    pub dut: String,
    pub rep: usize,
    pub status: Status,
    pub result: Option<RunResult>,
}

/// The DUT label of generator-ceiling runs.
pub const CEILING: &str = "generator-ceiling";

/// What a whole benchmark produced.
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    pub cases: Vec<(String, String)>,
    pub runs: Vec<Measurement>,
    /// (DUT label, version line).
    pub versions: Vec<(String, String)>,
    pub duts: Vec<String>,
    pub started: String,
    pub scale: f64,
    pub reps: usize,
    /// (case name, sessions the DUT exports to: the monitor, plus every
    /// generator peer with `--export all`).
    pub exporting_peers: Vec<(String, usize)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_words() {
        assert_eq!(Status::NotSupported("x".into()).word(), "not-supported");
        let nc = Status::NotConverged(replay::run::NOTHING_RECEIVED.into());
        assert_eq!(nc.word(), "not-converged");
        assert_eq!(nc.detail(), "monitor received no routes");
        assert_eq!(
            Status::Failed(BenchError::DutExited, "y".into()).detail(),
            "the DUT exited: y"
        );
    }
}
