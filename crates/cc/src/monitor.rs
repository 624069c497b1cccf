//! Egress queue monitor: what an egress element samples once per control
//! interval (§4.0: "monitoring egress output queues alone suffices").

/// Counters of one egress output queue as the dataplane keeps them.
/// `pkts_in` and `pkts_out` are cumulative (they may wrap; differences
/// are taken with wrapping arithmetic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EgressSample {
    /// Packets in the output queue now.
    pub queue_len: u32,
    /// Packets received for this queue since start (enqueued or dropped).
    pub pkts_in: u64,
    /// Packets transmitted from this queue since start.
    pub pkts_out: u64,
}

/// One interval's view of a queue, derived from two samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interval {
    /// Arrival rate over the interval, packets/s.
    pub in_pps: f64,
    /// Transmit rate over the interval, packets/s.
    pub out_pps: f64,
    /// Queue length now.
    pub q: f64,
    /// Queue change since the previous sample, packets.
    pub dq: f64,
}

/// Keeps the previous sample and running statistics of the sampled queue
/// length (Welford), for Fig 7.11's mean and standard deviation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueMonitor {
    prev: Option<EgressSample>,
    n: u64,
    mean: f64,
    m2: f64,
}

impl QueueMonitor {
    /// A monitor with no sample yet.
    pub fn new() -> QueueMonitor {
        QueueMonitor::default()
    }

    /// Take this interval's sample; `interval_s` is the time since the
    /// previous one. The first call reports rates of 0 and dq of 0.
    pub fn sample(&mut self, interval_s: f64, s: EgressSample) -> Interval {
        let q = f64::from(s.queue_len);
        self.n += 1;
        let d = q - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (q - self.mean);
        let out = match self.prev {
            Some(p) if interval_s > 0.0 => Interval {
                in_pps: s.pkts_in.wrapping_sub(p.pkts_in) as f64 / interval_s,
                out_pps: s.pkts_out.wrapping_sub(p.pkts_out) as f64 / interval_s,
                q,
                dq: q - f64::from(p.queue_len),
            },
            _ => Interval {
                q,
                ..Interval::default()
            },
        };
        self.prev = Some(s);
        out
    }

    /// Samples taken.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean sampled queue length.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Population standard deviation of the sampled queue length.
    pub fn std_dev(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            (self.m2 / self.n as f64).max(0.0).sqrt()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_statistics() {
        let mut m = QueueMonitor::new();
        let s = |q, i, o| EgressSample {
            queue_len: q,
            pkts_in: i,
            pkts_out: o,
        };
        assert_eq!(m.sample(0.001, s(10, 100, 90)).in_pps, 0.0);
        let iv = m.sample(0.001, s(30, 900, 870));
        assert!((iv.in_pps - 800_000.0).abs() < 1e-6);
        assert!((iv.out_pps - 780_000.0).abs() < 1e-6);
        assert_eq!(iv.dq, 20.0);
        assert_eq!(m.mean(), 20.0);
        assert_eq!(m.std_dev(), 10.0);
        // Counters that wrap still give the right difference.
        let mut w = QueueMonitor::new();
        w.sample(1.0, s(0, u64::MAX - 4, 0));
        assert_eq!(w.sample(1.0, s(0, 5, 0)).in_pps, 10.0);
    }
}
