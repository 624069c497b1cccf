//! Token buckets per client address: pure, time is an argument.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

/// Most clients tracked; beyond it, full (idle) buckets are forgotten and,
/// if that is not enough, new clients share one overflow bucket.
pub const MAX_CLIENTS: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Duration,
}

/// A token bucket per source address: `burst` requests at once, then
/// `rate` per second.
#[derive(Debug)]
pub struct RateLimiter {
    burst: f64,
    rate: f64,
    clients: HashMap<IpAddr, Bucket>,
    overflow: Option<Bucket>,
}

impl RateLimiter {
    pub fn new(burst: u32, rate_per_s: u32) -> Self {
        RateLimiter {
            burst: f64::from(burst.max(1)),
            rate: f64::from(rate_per_s),
            clients: HashMap::new(),
            overflow: None,
        }
    }

    fn take(&self, b: &mut Bucket, now: Duration) -> bool {
        let dt = now.saturating_sub(b.at).as_secs_f64();
        b.tokens = (b.tokens + dt * self.rate).min(self.burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether a request from `ip` at `now` (any monotonic clock) may go on.
    pub fn allow(&mut self, ip: IpAddr, now: Duration) -> bool {
        if !self.clients.contains_key(&ip) && self.clients.len() >= MAX_CLIENTS {
            let (burst, rate) = (self.burst, self.rate);
            self.clients
                .retain(|_, b| b.tokens + now.saturating_sub(b.at).as_secs_f64() * rate < burst);
            if self.clients.len() >= MAX_CLIENTS {
                let mut b = self.overflow.unwrap_or(Bucket {
                    tokens: self.burst,
                    at: now,
                });
                let ok = self.take(&mut b, now);
                self.overflow = Some(b);
                return ok;
            }
        }
        let mut b = self.clients.get(&ip).copied().unwrap_or(Bucket {
            tokens: self.burst,
            at: now,
        });
        let ok = self.take(&mut b, now);
        self.clients.insert(ip, b);
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_rate_per_client() {
        let mut r = RateLimiter::new(3, 2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let t = Duration::from_secs(10);
        assert!((0..3).all(|_| r.allow(a, t)));
        assert!(!r.allow(a, t));
        // Another client has its own bucket.
        assert!(r.allow(b, t));
        // Half a second refills one token at 2/s.
        assert!(r.allow(a, t + Duration::from_millis(500)));
        assert!(!r.allow(a, t + Duration::from_millis(500)));
        // Never more than the burst.
        let later = t + Duration::from_secs(100);
        assert!((0..3).all(|_| r.allow(a, later)));
        assert!(!r.allow(a, later));
    }

    #[test]
    fn bounded_client_table() {
        let mut r = RateLimiter::new(1, 1);
        let t = Duration::from_secs(1);
        for i in 0..(MAX_CLIENTS as u32 + 10) {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x7f00_0000 + i));
            r.allow(ip, t);
        }
        assert!(r.clients.len() <= MAX_CLIENTS);
        // All buckets are empty at t: newcomers share the (spent) overflow
        // bucket; a second later the idle full buckets are forgotten.
        let x: IpAddr = "127.255.0.1".parse().unwrap();
        assert!(!r.allow(x, t));
        assert!(r.allow(x, t + Duration::from_secs(1)));
        assert!(r.clients.len() < 10);
    }
}
