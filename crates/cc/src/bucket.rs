//! Token bucket: ingress rate enforcement per egress queue (§4.2, §7.3:
//! "IBBECNPack pulls from queue q at no more than MaxRate[q]").

use base::Instant;

/// A token bucket in packets. Tokens accrue at `rate` packets per second
/// up to `burst`; each packet sent takes one token. Time comes from the
/// caller; a clock going backwards adds nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket at time `now`. `rate` in packets/s (negative and NaN
    /// read as 0), `burst` in packets (at least 1).
    pub fn new(now: Instant, rate: f64, burst: f64) -> TokenBucket {
        let burst = if burst.is_finite() {
            burst.max(1.0)
        } else {
            1.0
        };
        TokenBucket {
            rate: sane(rate),
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Current rate, packets/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Tokens available now (after [`TokenBucket::refill`]).
    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    /// Accrue tokens for the time since the last call.
    pub fn refill(&mut self, now: Instant) {
        if now > self.last {
            let dt = (now.as_nanos() - self.last.as_nanos()) as f64 * 1e-9;
            self.tokens = (self.tokens + self.rate * dt).min(self.burst);
            self.last = now;
        }
    }

    /// Change the rate at `now`; tokens earned at the old rate are kept.
    pub fn set_rate(&mut self, now: Instant, rate: f64) {
        self.refill(now);
        self.rate = sane(rate);
    }

    /// Grant up to `want` packets at `now`; returns how many may go.
    pub fn take(&mut self, now: Instant, want: u64) -> u64 {
        self.refill(now);
        let n = (self.tokens.floor() as u64).min(want);
        self.tokens -= n as f64;
        n
    }
}

fn sane(rate: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    #[test]
    fn rate_and_burst_bound_what_is_granted() {
        let mut b = TokenBucket::new(t(0), 1000.0, 10.0);
        assert_eq!(b.take(t(0), 100), 10); // the initial burst
        assert_eq!(b.take(t(0), 100), 0);
        assert_eq!(b.take(t(5_000_000), 100), 5); // 5 ms at 1 kpps
        assert_eq!(b.take(t(1_000_000_000), 100), 10); // capped at burst
        b.set_rate(t(1_000_000_000), -3.0);
        assert_eq!(b.take(t(2_000_000_000), 100), 0);
    }
}
