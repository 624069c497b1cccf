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
    /// The DUT's resident set once started, before any session (the
    /// baseline of bytes per path).
    pub baseline_rss_kib: Option<u64>,
    /// Scenario (h)'s figures.
    pub churn: Option<ChurnStats>,
}

/// What one run of scenario (h) measured ([`crate::churn`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChurnStats {
    pub monitors: usize,
    /// UPDATEs/s asked for.
    pub rate: f64,
    pub duration_s: f64,
    pub table_prefixes: u64,
    /// From the table's first byte to every monitor holding it.
    pub table_secs: Option<f64>,
    pub updates_sent: u64,
    pub prefixes_stamped: u64,
    /// How long sending the churn took (more than the duration when the
    /// generator fell behind).
    pub churn_secs: f64,
    /// Largest delay of a write past its due time.
    pub max_send_lag_s: f64,
    /// Latency samples over all monitors.
    pub samples: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// (latency ms, fraction of samples at or below).
    pub cdf: Vec<(f64, f64)>,
    /// Negotiated keepalive time.
    pub keepalive_s: Option<f64>,
    /// Largest gap between two messages on any monitor session.
    pub max_gap_s: f64,
    /// Gaps above keepalive time plus tolerance, all monitors.
    pub late_gaps: u64,
    /// Per second of churn: (t, UPDATEs sent, prefix changes received per
    /// monitor).
    pub timeline: Vec<(f64, f64, f64)>,
    pub dut_cpu_secs: Option<f64>,
    pub dut_peak_rss_kib: Option<u64>,
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
    /// (case name, paths the DUT stores: every announced prefix of every
    /// peer) for cases without withdrawals: the summary's bytes per path.
    pub paths: Vec<(String, u64)>,
    /// `--dut-cpus`: where the DUT and the generator ran
    /// ([`crate::cpus::Placement::describe`]); `None`: every CPU shared.
    pub placement: Option<String>,
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
