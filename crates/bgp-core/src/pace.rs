//! Export round pacing: when a RIB thread's next export round
//! ([`crate::RibCore::propagate`]) may run.
//!
//! The runtime applies input as it comes and runs an export round for the
//! best-path changes it left. Spacing the rounds coalesces: a prefix
//! announced by ten peers within one interval is exported once, not ten
//! times, and each round pays its fixed costs (sorting the changed
//! prefixes, walking every update group, one encoding per group) once for
//! many changes. But every change waits for the next round, so a fixed
//! spacing is also a floor on latency: with rounds 5 ms apart, a trickle
//! of input (scenario (h) of `tessera bench`: 10,000 UPDATEs/s of steady
//! churn) waited 2.5 ms on average for a round that then took a few
//! microseconds, and the median UPDATE-in to UPDATE-out latency was 4.5x
//! BIRD's (docs/BENCHMARKS.md, issue 17).
//!
//! The rule here ([`RoundPacer`]): the spacing after a round is
//! [`ROUND_COST_FACTOR`] times what that round cost, at least
//! [`ROUND_FLOOR`] and at most [`ROUND_MIN`]. Export rounds thereby take
//! at most about 1 / ([`ROUND_COST_FACTOR`] + 1) of the thread while input
//! keeps coming, which is what the spacing is for; a cheap round (a
//! trickle: a handful of changes) is followed after [`ROUND_FLOOR`] by the
//! next, and an expensive one (a table load: thousands of changes,
//! encoding for many peers) by the full [`ROUND_MIN`], as before. Idle
//! (no round yet, or the spacing over), a round runs at once: input that
//! comes less often than [`ROUND_FLOOR`] waits for nothing.
//!
//! Why a floor: a round's cost on the RIB thread is not all it costs. Each
//! round with changes hands every exporting peer's writer a buffer: one
//! wake-up and one `write` per peer and round on the session threads. With
//! no floor, scenario (h) (10 monitors) ran 17x the rounds of the fixed
//! spacing, 1.9M writes in 30 s, and the daemon used 1.3-1.75x the CPU
//! time for a median latency of 0.2 ms. One millisecond keeps the added
//! wait below BIRD's median in (h) (0.75 ms) and bounds rounds to 1000 a
//! second per RIB thread.
//!
//! Pure: the caller passes the time and the round's cost (the daemon
//! passes the RIB thread's CPU time for the round, so that a round
//! preempted by other processes does not count as expensive).

use std::time::Duration;

use base::Instant;

/// The most time between two export rounds while input keeps arriving.
/// Far below any MRAI (RFC 4271 §9.2.1.1: 30 s for eBGP by default
/// elsewhere); it bounds the delay a route waits under load.
pub const ROUND_MIN: Duration = Duration::from_millis(5);

/// The least time between two export rounds while input keeps arriving
/// (see the module docs).
pub const ROUND_FLOOR: Duration = Duration::from_millis(1);

/// The spacing after a round is this many times the round's cost (within
/// [`ROUND_FLOOR`]..=[`ROUND_MIN`]): rounds costing
/// `ROUND_MIN / ROUND_COST_FACTOR` (625 µs) or more get the whole
/// [`ROUND_MIN`].
pub const ROUND_COST_FACTOR: u32 = 8;

/// When the next export round may run (see the module docs).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundPacer {
    /// The end of the last round; `None` before the first.
    last_end: Option<Instant>,
    /// The spacing the last round earned.
    spacing: Duration,
}

impl RoundPacer {
    /// A pacer with no round yet: the first may run at once.
    pub const fn new() -> RoundPacer {
        RoundPacer {
            last_end: None,
            spacing: Duration::ZERO,
        }
    }

    /// The spacing a round costing `cost` earns.
    pub fn spacing_for(cost: Duration) -> Duration {
        cost.saturating_mul(ROUND_COST_FACTOR)
            .clamp(ROUND_FLOOR, ROUND_MIN)
    }

    /// The earliest time the next round may run; `None`: at once.
    pub fn due(&self) -> Option<Instant> {
        self.last_end.map(|e| e + self.spacing)
    }

    /// Whether a round may run at `now`.
    pub fn ready(&self, now: Instant) -> bool {
        self.due().is_none_or(|d| now >= d)
    }

    /// How long from `now` until a round may run (zero: now).
    pub fn wait(&self, now: Instant) -> Duration {
        self.due().map_or(Duration::ZERO, |d| d.since(now))
    }

    /// A round ended at `end` and cost `cost`.
    pub fn round_done(&mut self, end: Instant, cost: Duration) {
        self.last_end = Some(end);
        self.spacing = Self::spacing_for(cost);
    }

    /// The spacing the last round earned (zero before the first).
    pub fn spacing(&self) -> Duration {
        self.spacing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_round_at_once() {
        let p = RoundPacer::new();
        assert!(p.ready(Instant::ZERO));
        assert_eq!(p.wait(Instant::ZERO), Duration::ZERO);
    }

    #[test]
    fn spacing_is_capped() {
        assert_eq!(RoundPacer::spacing_for(Duration::from_secs(3)), ROUND_MIN);
        assert_eq!(
            RoundPacer::spacing_for(Duration::from_micros(10)),
            ROUND_FLOOR
        );
        assert_eq!(
            RoundPacer::spacing_for(Duration::from_micros(200)),
            Duration::from_micros(1600)
        );
        assert_eq!(RoundPacer::spacing_for(Duration::MAX), ROUND_MIN);
    }
}
