//! Ingress side: one controller per (ingress, egress queue) pair. It is told
//! each interval how many packets it injected, and each signal that came
//! back; it answers with a scheduling weight or a rate.

use std::time::Duration;

use base::Instant;

use crate::egress::nanos;
use crate::Signal;

/// When scheme A adds its weight increment (cluster-spec §4.1 errata: the
/// text and the code of the thesis disagree; both are offered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Increase {
    /// Every interval, whatever happened (the printed code, Fig 5.13).
    EveryInterval,
    /// Only after an interval without a BECN (the printed text).
    IfNoBecn,
}

/// The ingress reaction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IngressScheme {
    /// Scheme A (ch. 5): a queue-scheduling weight, `+incr` per interval up
    /// to `max`, halved per BECN (never below `min`, at least 1).
    Weight {
        /// Incrweight.
        incr: u32,
        /// MAXWEIGHT.
        max: u32,
        /// Floor of the weight.
        min: u32,
        /// When the increment applies.
        increase: Increase,
    },
    /// Scheme C (ch. 7, Eq 7.10): `MaxRate += w` per interval (up to
    /// `max_rate`); per BECN `MaxRate = m · CurrentRate`.
    RateAimd {
        /// Additive increase W, pps per interval.
        w: f64,
        /// Multiplicative decrease M.
        m: f64,
        /// Cap on MaxRate, pps (the ingress's line rate).
        max_rate: f64,
    },
    /// Schemes B and B′ (Eq 6.7, Fig 6.12): per price p,
    /// `MaxRate = [CurrentRate + K·(W − CurrentRate·p)]⁺` (up to `max_rate`).
    Price {
        /// K.
        k: f64,
        /// W, the utility weight.
        w: f64,
        /// Cap on MaxRate, pps.
        max_rate: f64,
    },
}

/// What the scheduler of the ingress should apply to this queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Allowance {
    /// A weight for [`crate::Quantum::serve`].
    Weight(u32),
    /// A rate for [`crate::TokenBucket::set_rate`], pps.
    Rate(f64),
}

/// The controller of one ingress queue.
#[derive(Clone, Debug, PartialEq)]
pub struct IngressControl {
    scheme: IngressScheme,
    interval: u64,
    last: Instant,
    prev_injected: Option<u64>,
    current_rate: f64,
    weight: u32,
    rate: f64,
    becn_since_interval: bool,
}

impl IngressControl {
    /// A controller started at `now`, run every `interval` (at least 1 ns).
    /// It starts fully open: weight `max`, or rate `max_rate`.
    pub fn new(now: Instant, interval: Duration, scheme: IngressScheme) -> IngressControl {
        let (weight, rate) = match scheme {
            IngressScheme::Weight { max, .. } => (max.max(1), 0.0),
            IngressScheme::RateAimd { max_rate, .. } | IngressScheme::Price { max_rate, .. } => {
                (0, sane(max_rate))
            }
        };
        IngressControl {
            scheme,
            interval: nanos(interval),
            last: now,
            prev_injected: None,
            current_rate: 0.0,
            weight,
            rate,
            becn_since_interval: false,
        }
    }

    /// Call as often as convenient with the cumulative count of packets
    /// this queue has injected into the fabric; runs the interval step when
    /// one has passed. Returns the allowance in force.
    pub fn poll(&mut self, now: Instant, injected: u64) -> Allowance {
        let elapsed = now.as_nanos().saturating_sub(self.last.as_nanos());
        if elapsed >= self.interval {
            let dt = elapsed as f64 * 1e-9;
            self.last = now;
            self.on_interval(dt, injected);
        }
        self.allowance()
    }

    /// The interval step: measure CurrentRate, apply the additive increase.
    pub fn on_interval(&mut self, interval_s: f64, injected: u64) {
        if let Some(prev) = self.prev_injected {
            if interval_s > 0.0 {
                self.current_rate = injected.wrapping_sub(prev) as f64 / interval_s;
            }
        }
        self.prev_injected = Some(injected);
        let becn = std::mem::take(&mut self.becn_since_interval);
        match self.scheme {
            IngressScheme::Weight {
                incr,
                max,
                increase,
                ..
            } => {
                if increase == Increase::EveryInterval || !becn {
                    self.weight = self.weight.saturating_add(incr).min(max.max(1));
                }
            }
            IngressScheme::RateAimd { w, max_rate, .. } => {
                self.rate = sane(self.rate + w).min(sane(max_rate));
            }
            IngressScheme::Price { .. } => {}
        }
    }

    /// A signal from the egress of this queue arrived.
    pub fn on_signal(&mut self, sig: Signal) -> Allowance {
        match (self.scheme, sig) {
            (IngressScheme::Weight { min, .. }, Signal::Becn) => {
                self.becn_since_interval = true;
                self.weight = (self.weight / 2).max(min.max(1));
            }
            (IngressScheme::RateAimd { m, max_rate, .. }, Signal::Becn) => {
                self.becn_since_interval = true;
                self.rate = sane(m * self.current_rate).min(sane(max_rate));
            }
            (IngressScheme::Price { k, w, max_rate }, Signal::Price(p)) if p.is_finite() => {
                let x = self.current_rate;
                self.rate = sane(x + k * (w - x * p)).min(sane(max_rate));
            }
            // A signal of the other kind (a mixed configuration) is ignored.
            _ => {}
        }
        self.allowance()
    }

    /// The allowance in force.
    pub fn allowance(&self) -> Allowance {
        match self.scheme {
            IngressScheme::Weight { .. } => Allowance::Weight(self.weight),
            _ => Allowance::Rate(self.rate),
        }
    }

    /// The injection rate measured over the last interval, pps.
    pub fn current_rate(&self) -> f64 {
        self.current_rate
    }

    /// The scheme.
    pub fn scheme(&self) -> IngressScheme {
        self.scheme
    }
}

/// `[r]⁺` with NaN read as 0 (an infinite cap stays infinite).
fn sane(r: f64) -> f64 {
    if r > 0.0 {
        r
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

    #[test]
    fn weight_aimd_halves_per_becn_and_adds_per_interval() {
        let scheme = IngressScheme::Weight {
            incr: 10,
            max: 1000,
            min: 1,
            increase: Increase::EveryInterval,
        };
        let mut c = IngressControl::new(t(0), MS, scheme);
        assert_eq!(c.allowance(), Allowance::Weight(1000));
        c.on_signal(Signal::Becn);
        assert_eq!(c.on_signal(Signal::Becn), Allowance::Weight(250));
        assert_eq!(c.poll(t(1_000_000), 0), Allowance::Weight(260));
        assert_eq!(c.on_signal(Signal::Price(1.0)), Allowance::Weight(260)); // wrong kind
        let mut t = IngressControl::new(
            t(0),
            MS,
            IngressScheme::Weight {
                incr: 10,
                max: 1000,
                min: 1,
                increase: Increase::IfNoBecn,
            },
        );
        t.on_signal(Signal::Becn);
        t.on_interval(0.001, 0);
        assert_eq!(t.allowance(), Allowance::Weight(500)); // no increase after a BECN
        t.on_interval(0.001, 0);
        assert_eq!(t.allowance(), Allowance::Weight(510));
    }

    #[test]
    fn rate_aimd_halves_the_measured_rate() {
        let scheme = IngressScheme::RateAimd {
            w: 50_000.0,
            m: 0.5,
            max_rate: 1e6,
        };
        let mut c = IngressControl::new(t(0), MS, scheme);
        c.on_interval(0.001, 0);
        c.on_interval(0.001, 300); // 300 kpps measured
        assert_eq!(c.allowance(), Allowance::Rate(1e6)); // capped
        assert_eq!(c.on_signal(Signal::Becn), Allowance::Rate(150_000.0));
        c.on_interval(0.001, 450);
        assert_eq!(c.allowance(), Allowance::Rate(200_000.0));
    }

    #[test]
    fn price_law_is_eq_6_7() {
        let scheme = IngressScheme::Price {
            k: 1e5,
            w: 1.0,
            max_rate: f64::INFINITY,
        };
        let mut c = IngressControl::new(t(0), MS, scheme);
        c.on_interval(0.001, 0);
        c.on_interval(0.001, 250); // 250 kpps
        let Allowance::Rate(r) = c.on_signal(Signal::Price(2e-6)) else {
            panic!("weight")
        };
        assert!((r - (250_000.0 + 1e5 * (1.0 - 0.5))).abs() < 1e-6);
        assert_eq!(c.on_signal(Signal::Price(1.0)), Allowance::Rate(0.0)); // [ ]⁺
        assert_eq!(c.on_signal(Signal::Price(f64::NAN)), Allowance::Rate(0.0)); // ignored
    }
}
