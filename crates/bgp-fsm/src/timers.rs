//! The five FSM timers as deadlines (RFC 4271 §8, §10), and jitter.
//!
//! Model: the FSM keeps absolute deadlines; the runtime sleeps until
//! [`crate::Fsm::next_deadline`] and then calls [`crate::Fsm::on_timer`],
//! which fires every expired timer as its RFC event (9-13).

use std::time::Duration;

use base::Instant;

/// The timers of RFC 4271 §8.1.3 events 9-13.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// ConnectRetryTimer (event 9).
    ConnectRetry,
    /// HoldTimer (event 10).
    Hold,
    /// KeepaliveTimer (event 11).
    Keepalive,
    /// DelayOpenTimer (event 12).
    DelayOpen,
    /// IdleHoldTimer (event 13).
    IdleHold,
}

impl Timer {
    /// Firing order for deadlines that fall on the same instant: a dead
    /// session (Hold) is noticed before a KEEPALIVE would be sent.
    pub const PRIORITY: [Timer; 5] = [
        Timer::Hold,
        Timer::ConnectRetry,
        Timer::DelayOpen,
        Timer::IdleHold,
        Timer::Keepalive,
    ];

    const fn index(self) -> usize {
        match self {
            Timer::ConnectRetry => 0,
            Timer::Hold => 1,
            Timer::Keepalive => 2,
            Timer::DelayOpen => 3,
            Timer::IdleHold => 4,
        }
    }
}

/// RFC 4271 §10 jitter: ConnectRetry and Keepalive intervals are multiplied
/// by a factor in [0.75, 1.0]. The runtime supplies the randomness (one
/// `u16` per call, from its own seeded generator) so that the FSM stays
/// deterministic; [`Jitter::NONE`] (factor 1.0) is the default.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Jitter(u16);

impl Default for Jitter {
    fn default() -> Self {
        Jitter::NONE
    }
}

impl Jitter {
    /// Factor 1.0.
    pub const NONE: Jitter = Jitter(u16::MAX);

    /// Factor 0.75 + 0.25 * r / 65535.
    pub const fn new(r: u16) -> Jitter {
        Jitter(r)
    }

    /// `d` scaled by the jitter factor (between 0.75 and 1.0).
    pub fn apply(self, d: Duration) -> Duration {
        const M: u128 = u16::MAX as u128;
        let n = d.as_nanos() * (3 * M + u128::from(self.0)) / (4 * M);
        Duration::from_nanos(n.min(u128::from(u64::MAX)) as u64)
    }
}

/// Deadlines of the running timers; `None` = stopped ("set to zero").
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Timers {
    deadline: [Option<Instant>; 5],
}

impl Timers {
    pub fn get(&self, t: Timer) -> Option<Instant> {
        self.deadline.get(t.index()).copied().flatten()
    }

    pub fn is_running(&self, t: Timer) -> bool {
        self.get(t).is_some()
    }

    pub fn start(&mut self, t: Timer, now: Instant, d: Duration) {
        if let Some(s) = self.deadline.get_mut(t.index()) {
            *s = Some(now + d);
        }
    }

    pub fn stop(&mut self, t: Timer) {
        if let Some(s) = self.deadline.get_mut(t.index()) {
            *s = None;
        }
    }

    /// The earliest deadline of any running timer.
    pub fn next(&self) -> Option<Instant> {
        self.deadline.iter().flatten().min().copied()
    }

    /// The timer to fire at `now`: the earliest expired deadline, ties
    /// broken by [`Timer::PRIORITY`].
    pub fn expired(&self, now: Instant) -> Option<Timer> {
        let mut best: Option<(Instant, Timer)> = None;
        for t in Timer::PRIORITY {
            if let Some(d) = self.get(t).filter(|d| *d <= now) {
                if best.is_none_or(|(b, _)| d < b) {
                    best = Some((d, t));
                }
            }
        }
        best.map(|(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_range() {
        let d = Duration::from_secs(120);
        assert_eq!(Jitter::NONE.apply(d), d);
        assert_eq!(Jitter::new(0).apply(d), Duration::from_secs(90));
        let mid = Jitter::new(u16::MAX / 2).apply(d);
        assert!(mid > Duration::from_secs(104) && mid < Duration::from_secs(106));
    }

    #[test]
    fn expiry_order() {
        let mut t = Timers::default();
        assert_eq!(t.next(), None);
        t.start(
            Timer::Keepalive,
            Instant::from_secs(0),
            Duration::from_secs(30),
        );
        t.start(Timer::Hold, Instant::from_secs(0), Duration::from_secs(30));
        t.start(
            Timer::ConnectRetry,
            Instant::from_secs(0),
            Duration::from_secs(10),
        );
        assert_eq!(t.next(), Some(Instant::from_secs(10)));
        assert_eq!(t.expired(Instant::from_secs(9)), None);
        assert_eq!(t.expired(Instant::from_secs(40)), Some(Timer::ConnectRetry));
        t.stop(Timer::ConnectRetry);
        assert_eq!(t.expired(Instant::from_secs(40)), Some(Timer::Hold));
        t.stop(Timer::Hold);
        assert_eq!(t.expired(Instant::from_secs(40)), Some(Timer::Keepalive));
    }
}
