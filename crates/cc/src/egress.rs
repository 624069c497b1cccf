//! Egress side: once per control interval, look at one output queue and
//! decide what to send back to the ingresses.

use crate::monitor::{EgressSample, Interval, QueueMonitor};
use std::time::Duration;

use base::Instant;

use crate::{Notify, Signal};

/// How an egress queue turns its counters into a signal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EgressScheme {
    /// Schemes A (ch. 5) and C (ch. 7): a BECN when the queue is longer
    /// than `q_threshold` packets. `notify` says who gets it: the source
    /// of the last packet (subset notification, ch. 5) or every source
    /// (ch. 7's AIMD, and ch. 5's "without subset" baseline).
    Threshold {
        /// Q_threshold, packets.
        q_threshold: u32,
        /// Who gets the BECN.
        notify: Notify,
    },
    /// Scheme B (Eq 6.7, Fig 6.11): `p += (R_recv − C)/R`, broadcast.
    RatePrice {
        /// C, pps.
        capacity_pps: f64,
        /// R.
        r: f64,
    },
    /// Scheme B′ (Eq 7.9, Fig 7.13) in per-second units (cluster-spec
    /// §4.3 errata): `p += ((q − q_old)/T + (q − q_o)·u/T)/R`, broadcast.
    QueuePrice {
        /// q_o, the queue the loop settles at, packets.
        q_o: f64,
        /// u, the weight of the queue-offset term.
        u: f64,
        /// R.
        r: f64,
    },
}

impl EgressScheme {
    /// Who receives this scheme's signals.
    pub fn notify(&self) -> Notify {
        match *self {
            EgressScheme::Threshold { notify, .. } => notify,
            _ => Notify::All,
        }
    }
}

/// The controller of one egress output queue.
#[derive(Clone, Debug, PartialEq)]
pub struct EgressControl {
    scheme: EgressScheme,
    interval: u64,
    last: Instant,
    price: f64,
    mon: QueueMonitor,
    last_interval: Interval,
}

impl EgressControl {
    /// A controller started at `now`, run every `interval` (at least 1 ns).
    pub fn new(now: Instant, interval: Duration, scheme: EgressScheme) -> EgressControl {
        EgressControl {
            scheme,
            interval: nanos(interval),
            last: now,
            price: 0.0,
            mon: QueueMonitor::new(),
            last_interval: Interval::default(),
        }
    }

    /// Call as often as convenient (per batch, per poll); when at least one
    /// interval has passed since the last decision, decide with the counters
    /// in `s`. `None`: no interval yet, or nothing to send.
    pub fn poll(&mut self, now: Instant, s: EgressSample) -> Option<Signal> {
        let elapsed = now.as_nanos().saturating_sub(self.last.as_nanos());
        if elapsed < self.interval {
            return None;
        }
        let dt = elapsed as f64 * 1e-9;
        self.last = now;
        self.on_interval(dt, s)
    }

    /// Decide for one interval of `interval_s` seconds (a caller that keeps
    /// its own timer calls this directly).
    pub fn on_interval(&mut self, interval_s: f64, s: EgressSample) -> Option<Signal> {
        let first = self.mon.count() == 0;
        let iv = self.mon.sample(interval_s, s);
        self.last_interval = iv;
        match self.scheme {
            EgressScheme::Threshold { q_threshold, .. } => {
                (s.queue_len > q_threshold).then_some(Signal::Becn)
            }
            EgressScheme::RatePrice { capacity_pps, r } => {
                if !first {
                    self.price = clamp_price(self.price + (iv.in_pps - capacity_pps) / r);
                }
                Some(Signal::Price(self.price))
            }
            EgressScheme::QueuePrice { q_o, u, r } => {
                if interval_s > 0.0 {
                    let dq = if first { 0.0 } else { iv.dq };
                    let step = (dq / interval_s + (iv.q - q_o) * u / interval_s) / r;
                    self.price = clamp_price(self.price + step);
                }
                Some(Signal::Price(self.price))
            }
        }
    }

    /// The current price (0 for the threshold schemes).
    pub fn price(&self) -> f64 {
        self.price
    }

    /// The scheme.
    pub fn scheme(&self) -> EgressScheme {
        self.scheme
    }

    /// Statistics of the sampled queue length.
    pub fn monitor(&self) -> &QueueMonitor {
        &self.mon
    }

    /// What the last interval measured.
    pub fn last_interval(&self) -> Interval {
        self.last_interval
    }
}

/// An interval in ns, at least 1.
pub(crate) fn nanos(d: Duration) -> u64 {
    d.as_nanos().clamp(1, u128::from(u64::MAX)) as u64
}

/// `[p]⁺`, and a non-finite step leaves the price at 0 rather than NaN.
fn clamp_price(p: f64) -> f64 {
    if p.is_finite() {
        p.max(0.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn t(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn s(q: u32, i: u64) -> EgressSample {
        EgressSample {
            queue_len: q,
            pkts_in: i,
            pkts_out: 0,
        }
    }

    #[test]
    fn threshold_fires_once_per_interval_above_q() {
        let scheme = EgressScheme::Threshold {
            q_threshold: 100,
            notify: Notify::LastSource,
        };
        let mut e = EgressControl::new(t(0), MS, scheme);
        assert_eq!(e.poll(t(500_000), s(500, 0)), None); // no interval yet
        assert_eq!(e.poll(t(1_000_000), s(101, 0)), Some(Signal::Becn));
        assert_eq!(e.poll(t(1_500_000), s(900, 0)), None);
        assert_eq!(e.poll(t(2_000_000), s(100, 0)), None); // not above
    }

    #[test]
    fn rate_price_follows_excess() {
        let scheme = EgressScheme::RatePrice {
            capacity_pps: 764_500.0,
            r: 5e11,
        };
        let mut e = EgressControl::new(t(0), MS, scheme);
        assert_eq!(e.on_interval(0.001, s(0, 0)), Some(Signal::Price(0.0)));
        // 897 packets in 1 ms = 897 kpps: 132.5 kpps over C.
        let Some(Signal::Price(p)) = e.on_interval(0.001, s(0, 897)) else {
            panic!("no price")
        };
        assert!((p - 132_500.0 / 5e11).abs() < 1e-15);
        // Under-use brings it back down, never below 0.
        assert_eq!(e.on_interval(0.001, s(0, 897)), Some(Signal::Price(0.0)));
    }

    #[test]
    fn queue_price_is_in_per_second_units() {
        let scheme = EgressScheme::QueuePrice {
            q_o: 100.0,
            u: 0.01,
            r: 5e11,
        };
        let mut e = EgressControl::new(t(0), MS, scheme);
        e.on_interval(0.001, s(100, 0));
        let Some(Signal::Price(p)) = e.on_interval(0.001, s(300, 0)) else {
            panic!("no price")
        };
        // dq = 200 in 1 ms = 2e5 pps; offset (300-100)*0.01 = 2 per 1 ms = 2000/s.
        assert!((p - (2e5 + 2000.0) / 5e11).abs() < 1e-18);
    }
}
