//! Per-flow accounting at the receiver (pure: the edge passes the receive
//! time in).
//!
//! * Reordering, as RouteBricks counts it: a packet is reordered when its
//!   sequence number is lower than the highest already seen in its flow.
//! * Duplicates: the same sequence number as the highest seen.
//! * Sequence gaps: per flow, `highest + 1 - received` (packets the
//!   receiver never saw up to the last one it saw; loss inside the run,
//!   without the sender's count).
//! * One-way latency: receive time minus the payload's send time (both
//!   CLOCK_MONOTONIC of one machine: the namespaces share the clock) in a
//!   log-linear histogram.
//! * Receive counts per time bin since the start, for the failure
//!   experiment's loss window and recovery time ([`outage`]).

use std::collections::HashMap;

use crate::payload::Payload;

/// One flow at the receiver.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowRx {
    pub received: u64,
    /// Highest sequence number seen.
    pub max_seq: Option<u32>,
    pub reordered: u64,
    pub duplicates: u64,
}

/// A log-linear histogram of non-negative values (ns): 16 sub-buckets per
/// power of two, so a percentile is within 1/16 (6.25 %) of the truth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    pub count: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; 64 * 16],
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

const SUB: u32 = 4; // 2^4 = 16 sub-buckets

fn bucket(v: u64) -> usize {
    if v < 16 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= 4
    let sub = (v >> (e - SUB)) & 15;
    ((e - SUB + 1) * 16) as usize + sub as usize
}

fn bucket_low(i: usize) -> u64 {
    if i < 16 {
        return i as u64;
    }
    let e = (i / 16) as u32 + SUB - 1;
    let sub = (i % 16) as u64;
    (1u64 << e) | (sub << (e - SUB))
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// The lower bound of the bucket holding the `q`-quantile (0..=1);
    /// 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_low(i).max(self.min).min(self.max);
            }
        }
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The bucket counts (index = bucket).
    pub fn buckets(&self) -> &[u64] {
        &self.counts
    }

    /// Adds `c` values to bucket `i` (ignored when out of range); min,
    /// max and sum are the caller's.
    pub fn add_bucket(&mut self, i: usize, c: u64) {
        if let Some(b) = self.counts.get_mut(i) {
            *b += c;
            self.count += c;
        }
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.count += o.count;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
}

/// Everything the receiver counts.
#[derive(Clone, Debug)]
pub struct RxStats {
    pub flows: HashMap<u32, FlowRx>,
    pub received: u64,
    pub reordered: u64,
    pub duplicates: u64,
    /// Frames with our magic but a bad IPv4 checksum.
    pub bad_checksum: u64,
    /// Frames that were not generator traffic (ARP, BGP, ...).
    pub foreign: u64,
    pub latency: Histogram,
    /// Packets received per bin since `start_ns`.
    pub bins: Vec<u64>,
    pub start_ns: u64,
    pub bin_ns: u64,
}

impl RxStats {
    /// Bins of `bin_ns` (at least 1) from `start_ns`.
    pub fn new(start_ns: u64, bin_ns: u64) -> RxStats {
        RxStats {
            flows: HashMap::new(),
            received: 0,
            reordered: 0,
            duplicates: 0,
            bad_checksum: 0,
            foreign: 0,
            latency: Histogram::default(),
            bins: Vec::new(),
            start_ns,
            bin_ns: bin_ns.max(1),
        }
    }

    /// One generator packet received at `now_ns`.
    pub fn on_packet(&mut self, now_ns: u64, p: &Payload) {
        let f = self.flows.entry(p.flow).or_default();
        f.received += 1;
        self.received += 1;
        match f.max_seq {
            Some(m) if p.seq < m => {
                f.reordered += 1;
                self.reordered += 1;
            }
            Some(m) if p.seq == m => {
                f.duplicates += 1;
                self.duplicates += 1;
            }
            _ => f.max_seq = Some(p.seq),
        }
        self.latency.record(now_ns.saturating_sub(p.ts_ns));
        if now_ns >= self.start_ns {
            // Bins past ~10 minutes are not kept (bounded memory).
            let b = ((now_ns - self.start_ns) / self.bin_ns) as usize;
            if b < 1 << 20 {
                if self.bins.len() <= b {
                    self.bins.resize(b + 1, 0);
                }
                self.bins[b] += 1;
            }
        }
    }

    /// Σ over flows of `highest + 1 - received` (not below 0).
    pub fn seq_gaps(&self) -> u64 {
        self.flows
            .values()
            .map(|f| {
                let expect = f.max_seq.map_or(0, |m| u64::from(m) + 1);
                expect.saturating_sub(f.received - f.duplicates)
            })
            .sum()
    }

    /// Reordered packets per received packet, in %.
    pub fn reorder_pct(&self) -> f64 {
        pct(self.reordered, self.received)
    }
}

/// `a / b` in %, 0 when `b` is 0.
pub fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// A traffic outage in a series of per-bin receive counts.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Outage {
    /// The rate before the event: mean packets per bin over the bins
    /// before `event_bin`.
    pub baseline: f64,
    /// Bins from the event until the cumulative deficit (baseline minus
    /// received, summed from the event) first comes within the tolerance
    /// of its final value: after that, no more is lost (recovery time).
    pub recovery_bins: usize,
    /// The final deficit in bins of baseline traffic: the loss window (the
    /// time the whole offered load would take to lose as many packets).
    pub loss_window_bins: f64,
}

/// The outage after `event_bin` in `bins` (packets received per bin),
/// `None` without at least one bin before and after the event or with no
/// traffic before it. The last bin is left out (the run may end inside
/// it). The deficit is signed, so packets only delayed across a bin edge
/// (one short bin, one long one: scheduling on shared cores) are not
/// counted as lost; `tolerance_bins` (in bins of baseline traffic) absorbs
/// the noise of the baseline.
pub fn outage(bins: &[u64], event_bin: usize, tolerance_bins: f64) -> Option<Outage> {
    if event_bin == 0 || bins.len() < event_bin + 2 {
        return None;
    }
    let bins = &bins[..bins.len() - 1];
    let before = &bins[..event_bin];
    let baseline = before.iter().sum::<u64>() as f64 / before.len() as f64;
    if baseline <= 0.0 {
        return None;
    }
    let mut m = 0.0;
    let cum: Vec<f64> = bins[event_bin..]
        .iter()
        .map(|&c| {
            m += baseline - c as f64;
            m
        })
        .collect();
    let total = m.max(0.0);
    let tol = tolerance_bins.max(0.0) * baseline;
    let recovery_bins = if total <= tol {
        0
    } else {
        cum.iter()
            .position(|&x| x >= total - tol)
            .map_or(cum.len(), |i| i + 1)
    };
    Some(Outage {
        baseline,
        recovery_bins,
        loss_window_bins: total / baseline,
    })
}

/// Open-loop pacing at `rate_pps` (0: as fast as possible), pure: the
/// caller passes the time in and records what it sent.
#[derive(Clone, Debug)]
pub struct Pacer {
    rate_pps: u64,
    start_ns: u64,
    sent: u64,
    /// At most this far behind: a sender that was descheduled does not
    /// catch up in one huge burst (the start moves forward instead).
    max_lag_ns: u64,
    /// Times the sender fell more than `max_lag_ns` behind.
    pub late: u64,
}

impl Pacer {
    pub fn new(rate_pps: u64, start_ns: u64) -> Pacer {
        Pacer {
            rate_pps,
            start_ns,
            sent: 0,
            max_lag_ns: 10_000_000,
            late: 0,
        }
    }

    /// Packets due by `now_ns` and not sent yet (`u64::MAX` unpaced).
    pub fn due(&mut self, now_ns: u64) -> u64 {
        if self.rate_pps == 0 {
            return u64::MAX;
        }
        if now_ns < self.start_ns {
            return 0;
        }
        let lag_pkts =
            (u128::from(self.max_lag_ns) * u128::from(self.rate_pps) / 1_000_000_000).max(1) as u64;
        let due = self.allowed(now_ns).saturating_sub(self.sent);
        if due > lag_pkts {
            // Move the start so that exactly `lag_pkts` are due.
            self.late += 1;
            let skip = due - lag_pkts;
            self.start_ns += (u128::from(skip) * 1_000_000_000 / u128::from(self.rate_pps)) as u64;
            return self.allowed(now_ns).saturating_sub(self.sent);
        }
        due
    }

    fn allowed(&self, now_ns: u64) -> u64 {
        (u128::from(now_ns - self.start_ns.min(now_ns)) * u128::from(self.rate_pps) / 1_000_000_000)
            as u64
            + 1
    }

    pub fn sent(&mut self, n: u64) {
        self.sent += n;
    }

    /// When the next packet is due (`None` unpaced).
    pub fn next_ns(&self) -> Option<u64> {
        if self.rate_pps == 0 {
            return None;
        }
        Some(
            self.start_ns
                + (u128::from(self.sent) * 1_000_000_000 / u128::from(self.rate_pps)) as u64,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(flow: u32, seq: u32, ts_ns: u64) -> Payload {
        Payload { flow, seq, ts_ns }
    }

    #[test]
    fn routebricks_reordering_counts_packets_below_the_highest_seen() {
        let mut s = RxStats::new(0, 1_000_000);
        for seq in [0, 1, 3, 2, 4, 5] {
            s.on_packet(10, &p(1, seq, 0));
        }
        // 2 arrives after 3: one reordered packet of six.
        assert_eq!(s.reordered, 1);
        assert_eq!(s.received, 6);
        assert_eq!(s.seq_gaps(), 0);
        // Flows are independent: flow 2's seq 0 after flow 1's 5 is fine.
        s.on_packet(10, &p(2, 0, 0));
        assert_eq!(s.reordered, 1);
        // One late packet behind a burst counts once, not per overtaker.
        let mut t = RxStats::new(0, 1);
        for seq in [1, 2, 3, 4, 0] {
            t.on_packet(0, &p(1, seq, 0));
        }
        assert_eq!(t.reordered, 1);
        assert!((t.reorder_pct() - 20.0).abs() < 1e-9);
    }

    #[test]
    fn gaps_and_duplicates() {
        let mut s = RxStats::new(0, 1);
        for seq in [0, 1, 5, 5, 9] {
            s.on_packet(0, &p(7, seq, 0));
        }
        assert_eq!(s.duplicates, 1);
        // 10 expected up to seq 9, 4 distinct seen.
        assert_eq!(s.seq_gaps(), 6);
    }

    #[test]
    fn latency_and_bins() {
        let mut s = RxStats::new(1_000, 100);
        s.on_packet(1_050, &p(1, 0, 1_000));
        s.on_packet(1_250, &p(1, 1, 1_200));
        s.on_packet(1_260, &p(1, 2, 1_100));
        assert_eq!(s.bins, vec![1, 0, 2]);
        assert_eq!(s.latency.count, 3);
        assert_eq!(s.latency.min, 50);
        assert_eq!(s.latency.max, 160);
        // A send time after the receive time (clock mix-up) is 0, not a
        // wrapped huge value.
        s.on_packet(1_300, &p(1, 3, 5_000));
        assert_eq!(s.latency.min, 0);
    }

    #[test]
    fn histogram_quantiles_are_within_a_sixteenth() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        for (q, want) in [(0.5, 5_000_000.0), (0.99, 9_900_000.0), (1.0, 10_000_000.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() / want <= 1.0 / 16.0 + 1e-9, "{q}: {got}");
        }
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }

    #[test]
    fn outage_finds_the_loss_window_and_the_recovery() {
        // 100 per bin, 3 bins nothing, 1 bin half, then back.
        let bins = [100, 100, 100, 100, 0, 0, 0, 50, 100, 100, 100, 40];
        let o = outage(&bins, 4, 0.25).expect("outage");
        assert_eq!(o.baseline, 100.0);
        assert_eq!(o.recovery_bins, 4);
        assert!((o.loss_window_bins - 3.5).abs() < 1e-9);
        // No drop at all: recovered at once.
        let o = outage(&[10, 10, 10, 10, 10], 2, 0.5).expect("outage");
        assert_eq!(o.recovery_bins, 0);
        assert_eq!(o.loss_window_bins, 0.0);
        assert_eq!(outage(&[10, 10], 0, 0.5), None);
        assert_eq!(outage(&[0, 0, 0, 0], 2, 0.5), None);
        // Jitter long after the outage (a short bin, then a long one: the
        // packets were late, not lost) moves neither figure.
        let noisy = [
            100, 100, 100, 100, 0, 0, 100, 100, 100, 100, 30, 170, 100, 100, 100,
        ];
        let o = outage(&noisy, 4, 0.25).expect("o");
        assert_eq!(o.recovery_bins, 2);
        assert!((o.loss_window_bins - 2.0).abs() < 1e-9);
    }

    #[test]
    fn pacer_spreads_sends_and_does_not_burst_after_a_stall() {
        let mut pc = Pacer::new(1000, 0);
        assert_eq!(pc.due(0), 1);
        pc.sent(1);
        assert_eq!(pc.due(500_000), 0);
        assert_eq!(pc.next_ns(), Some(1_000_000));
        assert_eq!(pc.due(1_000_000), 1);
        pc.sent(1);
        // Stalled for 1 s: at most 10 ms worth (10 packets) at once.
        assert_eq!(pc.due(1_001_000_000), 10);
        assert_eq!(pc.late, 1);
        assert_eq!(Pacer::new(0, 0).due(5), u64::MAX);
        assert_eq!(Pacer::new(100, 50).due(10), 0);
    }

    proptest! {
        #[test]
        fn the_pacer_never_exceeds_its_rate(rate in 1u64..2_000_000, steps in proptest::collection::vec(1u64..3_000_000, 1..200)) {
            let mut pc = Pacer::new(rate, 0);
            let mut now = 0u64;
            let mut total = 0u64;
            for d in steps {
                now += d;
                let n = pc.due(now).min(1_000_000);
                pc.sent(n);
                total += n;
                // Never more than rate * elapsed + 1 (the first packet).
                prop_assert!(u128::from(total) <= u128::from(rate) * u128::from(now) / 1_000_000_000 + 1);
            }
        }

        #[test]
        fn received_splits_into_in_order_reordered_and_duplicates(seqs in proptest::collection::vec((0u32..4, 0u32..50), 0..300)) {
            let mut s = RxStats::new(0, 1);
            for (f, q) in &seqs {
                s.on_packet(0, &p(*f, *q, 0));
            }
            prop_assert_eq!(s.received, seqs.len() as u64);
            let per_flow: u64 = s.flows.values().map(|f| f.received).sum();
            prop_assert_eq!(per_flow, s.received);
            prop_assert!(s.reordered + s.duplicates <= s.received);
            // A sorted, distinct sequence is never reordered.
            let mut t = RxStats::new(0, 1);
            let mut sorted: Vec<u32> = seqs.iter().map(|x| x.1).collect();
            sorted.sort_unstable();
            sorted.dedup();
            for q in &sorted {
                t.on_packet(0, &p(1, *q, 0));
            }
            prop_assert_eq!(t.reordered, 0);
            prop_assert_eq!(t.duplicates, 0);
        }
    }
}
