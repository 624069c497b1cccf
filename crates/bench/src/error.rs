//! [`BenchError`]: the step a benchmark failed at.

use std::fmt;

/// What went wrong, by step; the detail text travels next to it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BenchError {
    /// Namespaces or links could not be built (not root, no iproute2).
    Netns,
    /// The DUT's config was refused or it never listened.
    DutStart,
    /// The DUT exited during the run.
    DutExited,
    /// The DUT does not support this configuration.
    Unsupported,
    /// The replay itself failed.
    Replay,
    /// The workload could not be built.
    Workload,
    /// Writing results failed.
    Output,
    /// `--dut-cpus` could not be applied.
    Placement,
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BenchError::Netns => "network namespaces",
            BenchError::DutStart => "starting the DUT",
            BenchError::DutExited => "the DUT exited",
            BenchError::Unsupported => "not supported",
            BenchError::Replay => "replay",
            BenchError::Workload => "building the workload",
            BenchError::Output => "writing results",
            BenchError::Placement => "placing the DUT on its CPUs",
        })
    }
}
