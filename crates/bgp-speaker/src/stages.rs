//! Per-stage latency histograms of UPDATE processing, after the stages of
//! seed 000's Table 4.2: socket read, framing, parse, policy, RIB update,
//! best path, export and write. Process-wide (one daemon per process), so
//! every thread of every pipeline mode records into the same lock-free
//! histograms without plumbing; `/metrics` exposes them as
//! `tessera_update_stage_seconds{stage=...}` (its `_count` is the number
//! of items timed).
//!
//! What each stage measures (per message for the session stages, per
//! UPDATE or per prefix batch average for the RIB stages):
//! * `socket_read`: one non-blocking `read` system call that returned data
//!   (waiting for readiness is not counted).
//! * `framing`: cutting one message out of the read buffer and copying it.
//! * `parse`: decoding and validating one UPDATE (RFC 7606 included).
//! * `policy`: one item per UPDATE for its ingress checks (loops, OTC),
//!   plus one item per prefix a named import policy (`[policy.NAME]`) was
//!   run over, timed around that evaluation.
//! * `rib_update`: applying one UPDATE to the shard's tables, named import
//!   policies excluded; best-path reselection of each touched prefix
//!   happens inline here (per prefix, too fine to time on its own).
//! * `best_path`: per export round, one item per prefix whose best path
//!   changed: collecting them (sort, dedup) and publishing them to the
//!   best-route feed; not the reselection (see `rib_update`).
//! * `export`: per export round, running export policy for the changed
//!   prefixes and encoding the packed UPDATEs for each peer.
//! * `write`: writing one chunk of UPDATE bytes to a peer's socket (this
//!   includes waiting for room in the socket's send buffer).

use std::time::Instant;

pub use mgmt::metrics::{Stage, StageLatencies};

/// The histograms (see the module docs).
pub static STAGES: StageLatencies = StageLatencies::new();

/// Records the time since `t0` as one sample of `stage`.
#[inline]
pub fn record(stage: Stage, t0: Instant) {
    STAGES.record_ns(stage, elapsed_ns(t0));
}

/// Records `n` samples averaging the time since `t0`.
#[inline]
pub fn record_n(stage: Stage, t0: Instant, n: u64) {
    let n = n.max(1);
    STAGES.record_ns_n(stage, elapsed_ns(t0) / n, n);
}

#[inline]
pub fn elapsed_ns(t0: Instant) -> u64 {
    u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
