//! `tessera bench`: the bgperf-style benchmark of BGP daemons (issue 5),
//! driving the replay client ([`replay`]) against real daemons.
//!
//! One call of [`run()`] builds the topology ([`netns`]: the DUT in one
//! network namespace, generator and monitor in another, addresses from
//! 198.18.0.0/15 that exist only there), then for every case of every
//! [`Scenario`]:
//! 1. measures the generator ceiling: the same replay into a sink that
//!    only counts, at the DUT's address;
//! 2. for every DUT ([`daemons`]) and repetition: starts a fresh daemon,
//!    replays into it with a monitor session attached, stops it, and keeps
//!    the [`replay::RunResult`] (convergence at the monitor, UPDATEs/s,
//!    prefixes/s, DUT CPU-seconds and peak RSS from /proc).
//!
//! [`report`] then writes CSV, JSON and SVG charts into the output
//! directory. A DUT that cannot run a configuration (a tesserad pipeline
//! not implemented yet) is recorded as "not supported" and skipped; one
//! that fails or does not converge is recorded as such; neither stops the
//! benchmark.
//!
//! Limits: by default the DUT and the generator share the machine (on 2
//! cores they compete), so the ceiling is measured in the same run and
//! reported next to every figure; on a larger machine `--dut-cpus`
//! ([`cpus`]) gives the DUT CPUs of its own; generator sessions are IPv4 (RIB dumps replay their
//! IPv4 routes only; traces carry IPv6 routes over IPv4 sessions).

pub mod churn;
pub mod cluster;
pub mod cluster_bench;
pub mod cpus;
pub mod daemons;
mod error;
pub mod netns;
pub mod report;
mod results;
mod run;
pub mod scenario;

pub use daemons::{DutKind, DutSpec};
pub use error::BenchError;
pub use results::{BenchReport, ChurnStats, Measurement, Status, CEILING};
pub use run::{now_utc, run, BenchConfig};
pub use scenario::{Case, Scenario};
