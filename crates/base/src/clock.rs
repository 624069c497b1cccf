use std::cell::Cell;
use std::time::Duration;

/// A point in time, in nanoseconds since an arbitrary epoch.
///
/// Pure state machines take `Instant`s as arguments instead of reading a clock,
/// so that tests can drive them with a virtual clock.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

impl Instant {
    /// The epoch itself.
    pub const ZERO: Instant = Instant(0);

    /// `n` nanoseconds after the epoch.
    pub const fn from_nanos(n: u64) -> Instant {
        Instant(n)
    }
    /// `s` seconds after the epoch, saturating at `u64::MAX` nanoseconds.
    pub const fn from_secs(s: u64) -> Instant {
        Instant(s.saturating_mul(1_000_000_000))
    }
    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl std::ops::Add<Duration> for Instant {
    type Output = Instant;
    /// `self + d`, saturating at the end of time.
    fn add(self, d: Duration) -> Instant {
        Instant(
            self.0
                .saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        )
    }
}

/// A source of [`Instant`]s. Runtimes use [`MonotonicClock`]; tests and the
/// simulator use [`ManualClock`].
pub trait Clock {
    /// The current time. Never goes backwards for one clock.
    fn now(&self) -> Instant;
}

/// The operating system's monotonic clock.
#[derive(Clone, Debug)]
pub struct MonotonicClock {
    origin: std::time::Instant,
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock {
            origin: std::time::Instant::now(),
        }
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Instant {
        Instant(self.origin.elapsed().as_nanos().min(u64::MAX as u128) as u64)
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: Cell<Instant>,
}

impl ManualClock {
    /// A clock that reads `start` until moved.
    pub fn new(start: Instant) -> Self {
        ManualClock {
            now: Cell::new(start),
        }
    }
    /// Moves the clock forward by `d` (saturating).
    pub fn advance(&self, d: Duration) {
        self.now.set(self.now.get() + d);
    }
    /// Sets the clock to `t`, forwards or backwards.
    pub fn set(&self, t: Instant) {
        self.now.set(t);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.now.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Instant::from_secs(5));
        assert_eq!(c.now(), Instant::from_secs(5));
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.now().as_nanos(), 6_500_000_000);
        assert_eq!(
            c.now().since(Instant::from_secs(6)),
            Duration::from_millis(500)
        );
        assert_eq!(Instant::from_secs(1).since(c.now()), Duration::ZERO);
    }
}
