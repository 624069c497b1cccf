//! Lock-free latency histograms with fixed logarithmic buckets.
//!
//! Bucket `i` counts durations up to `1 µs * 2^i` (1 µs .. ~33.5 s); a
//! last bucket counts anything longer. Recording is two relaxed atomic
//! adds and a `leading_zeros`, so sessions and the RIB thread can record
//! every UPDATE without contention worth measuring. A snapshot reads the
//! buckets one by one: it is not an atomic cut across them, but the count
//! it reports is the sum of the buckets it read, so the exposition is
//! always self-consistent (the `+Inf` bucket equals `_count`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Finite buckets; bounds are `1_000 << i` nanoseconds.
pub const LATENCY_BUCKETS: usize = 26;

/// Upper bound of finite bucket `i`, in nanoseconds.
pub const fn bucket_bound_ns(i: usize) -> u64 {
    1_000u64 << i
}

/// Index of the bucket `ns` falls in: the smallest `i` with
/// `ns <= 1000 * 2^i`, or [`LATENCY_BUCKETS`] for the overflow bucket.
pub fn bucket_index(ns: u64) -> usize {
    let micros = ns.div_ceil(1_000);
    if micros <= 1 {
        return 0;
    }
    // Smallest i with micros <= 2^i is the bit length of (micros - 1).
    let i = (u64::BITS - (micros - 1).leading_zeros()) as usize;
    i.min(LATENCY_BUCKETS)
}

/// A latency histogram (see the module docs).
#[derive(Debug)]
pub struct LatencyHistogram {
    buckets: [AtomicU64; LATENCY_BUCKETS + 1],
    sum_ns: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub const fn new() -> Self {
        LatencyHistogram {
            buckets: [const { AtomicU64::new(0) }; LATENCY_BUCKETS + 1],
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Records one duration in nanoseconds.
    #[inline]
    pub fn record_ns(&self, ns: u64) {
        if let Some(b) = self.buckets.get(bucket_index(ns)) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        // Wraps after 584 years of summed latency; Prometheus' rate()
        // treats a decrease as a counter reset anyway.
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Records `n` samples of `ns` each (a batch's per-item average) with
    /// two atomic adds instead of `2n`.
    #[inline]
    pub fn record_ns_n(&self, ns: u64, n: u64) {
        if let Some(b) = self.buckets.get(bucket_index(ns)) {
            b.fetch_add(n, Ordering::Relaxed);
        }
        self.sum_ns
            .fetch_add(ns.saturating_mul(n), Ordering::Relaxed);
    }

    /// Records the time elapsed since `start`.
    #[inline]
    pub fn record_since(&self, start: std::time::Instant) {
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.record_ns(ns);
    }

    /// Current counts.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut counts = [0u64; LATENCY_BUCKETS + 1];
        for (c, b) in counts.iter_mut().zip(&self.buckets) {
            *c = b.load(Ordering::Relaxed);
        }
        HistogramSnapshot {
            counts,
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
        }
    }
}

/// Counts of a [`LatencyHistogram`] at one moment (not cumulative).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Per bucket; the last one is the overflow bucket.
    pub counts: [u64; LATENCY_BUCKETS + 1],
    pub sum_ns: u64,
}

impl HistogramSnapshot {
    /// Observations.
    pub fn count(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// Upper bound (ns) of the bucket holding quantile `q` (0..=1); `None`
    /// when empty, `u64::MAX` when it lies in the overflow bucket. An upper
    /// bound, not an interpolation: the answer is within a factor 2.
    pub fn quantile_upper_ns(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(c);
            if seen >= rank {
                return Some(if i < LATENCY_BUCKETS {
                    bucket_bound_ns(i)
                } else {
                    u64::MAX
                });
            }
        }
        Some(u64::MAX)
    }
}

/// Processing stages of an UPDATE, for per-stage latency histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    SocketRead,
    Framing,
    Parse,
    Policy,
    RibUpdate,
    BestPath,
    Export,
    Write,
}

impl Stage {
    pub const ALL: [Stage; 8] = [
        Stage::SocketRead,
        Stage::Framing,
        Stage::Parse,
        Stage::Policy,
        Stage::RibUpdate,
        Stage::BestPath,
        Stage::Export,
        Stage::Write,
    ];

    /// The `stage` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::SocketRead => "socket_read",
            Stage::Framing => "framing",
            Stage::Parse => "parse",
            Stage::Policy => "policy",
            Stage::RibUpdate => "rib_update",
            Stage::BestPath => "best_path",
            Stage::Export => "export",
            Stage::Write => "write",
        }
    }
}

/// One histogram per [`Stage`].
#[derive(Debug, Default)]
pub struct StageLatencies {
    hist: [LatencyHistogram; 8],
}

impl StageLatencies {
    pub const fn new() -> Self {
        StageLatencies {
            hist: [const { LatencyHistogram::new() }; 8],
        }
    }

    #[inline]
    pub fn record_ns(&self, stage: Stage, ns: u64) {
        if let Some(h) = self.hist.get(stage as usize) {
            h.record_ns(ns);
        }
    }

    /// Records `n` samples of `ns` each (a batch's per-item average).
    #[inline]
    pub fn record_ns_n(&self, stage: Stage, ns: u64, n: u64) {
        if let Some(h) = self.hist.get(stage as usize) {
            h.record_ns_n(ns, n);
        }
    }

    pub fn get(&self, stage: Stage) -> &LatencyHistogram {
        // `Stage` has exactly as many variants as the array has entries.
        &self.hist[stage as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_edges() {
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(1_000), 0);
        assert_eq!(bucket_index(1_001), 1);
        assert_eq!(bucket_index(2_000), 1);
        assert_eq!(bucket_index(2_001), 2);
        assert_eq!(bucket_index(bucket_bound_ns(10)), 10);
        assert_eq!(bucket_index(bucket_bound_ns(10) + 1), 11);
        assert_eq!(bucket_index(bucket_bound_ns(LATENCY_BUCKETS - 1)), 25);
        assert_eq!(
            bucket_index(bucket_bound_ns(LATENCY_BUCKETS - 1) + 1),
            LATENCY_BUCKETS
        );
        assert_eq!(bucket_index(u64::MAX), LATENCY_BUCKETS);
        // Every value lands in a bucket whose bound is >= it and whose
        // previous bound is < it.
        for ns in [1u64, 999, 1_500, 123_456, 9_999_999, 40_000_000_000] {
            let i = bucket_index(ns);
            if i < LATENCY_BUCKETS {
                assert!(ns <= bucket_bound_ns(i), "{ns} in {i}");
            }
            if i > 0 {
                assert!(ns > bucket_bound_ns(i - 1), "{ns} in {i}");
            }
        }
    }

    #[test]
    fn record_and_snapshot() {
        let h = LatencyHistogram::new();
        for ns in [500, 1_500, 1_500, 3_000_000, u64::MAX / 4] {
            h.record_ns(ns);
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 5);
        assert_eq!(s.counts[0], 1);
        assert_eq!(s.counts[1], 2);
        assert_eq!(s.counts[LATENCY_BUCKETS], 1);
        assert_eq!(s.quantile_upper_ns(0.5), Some(2_000));
        assert_eq!(s.quantile_upper_ns(1.0), Some(u64::MAX));
        assert_eq!(
            LatencyHistogram::new().snapshot().quantile_upper_ns(0.5),
            None
        );
    }

    #[test]
    fn concurrent_recording_loses_nothing() {
        let h = std::sync::Arc::new(LatencyHistogram::new());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let h = std::sync::Arc::clone(&h);
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        h.record_ns(i * 100 + t);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(h.snapshot().count(), 40_000);
    }

    #[test]
    fn stages() {
        let s = StageLatencies::new();
        s.record_ns(Stage::Parse, 10_000);
        assert_eq!(s.get(Stage::Parse).snapshot().count(), 1);
        assert_eq!(s.get(Stage::Policy).snapshot().count(), 0);
        assert_eq!(Stage::ALL.len(), 8);
    }
}
