//! Per-stage latency histograms of UPDATE processing, after the stages of
//! seed 000's Table 4.2: socket read, framing, parse, policy, RIB update,
//! best path, export and write. Process-wide (one daemon per process), so
//! every thread of every pipeline mode records into the same lock-free
//! histograms without plumbing; `/metrics` exposes them as
//! `tessera_stage_seconds{stage=...}` and `tessera_stage_total{stage=...}`.
//!
//! What each stage measures (per message for the session stages, per
//! UPDATE or per prefix batch average for the RIB stages):
//! * `socket_read`: one non-blocking `read` system call that returned data
//!   (waiting for readiness is not counted).
//! * `framing`: cutting one message out of the read buffer and copying it.
//! * `parse`: decoding and validating one UPDATE (RFC 7606 included).
//! * `policy`: ingress checks (loops, OTC) and the import policy, per
//!   UPDATE of a batch (named policies run inside the RIB update and are
//!   timed there too, so `rib_update` includes them).
//! * `rib_update`: applying one UPDATE to the shard's tables; best-path
//!   reselection of each touched prefix happens inline here.
//! * `best_path`: per export round, collecting the prefixes whose best
//!   path changed (sort, dedup) and publishing them to the best-route feed.
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
