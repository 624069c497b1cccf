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
//! Shards ([`RoundPacer::burst_ended`]): a session's batch is split over
//! every shard thread, so while one shard is still applying input the
//! others' input is most likely still arriving too. A shard whose own
//! channel ran dry then is not idle, and a round at once would coalesce
//! fewer best-path changes than the single RIB thread does; its round is
//! held back while another shard is busy, at most [`ROUND_MIN`] from when
//! it was first held, and runs at once when no shard has input left. One
//! shard alone behaves as [`RoundPacer::ready`] says.
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
    /// Since when a ready round is held back because another shard is
    /// busy ([`Self::burst_ended`]).
    held: Option<Instant>,
}

impl RoundPacer {
    /// A pacer with no round yet: the first may run at once.
    pub const fn new() -> RoundPacer {
        RoundPacer {
            last_end: None,
            spacing: Duration::ZERO,
            held: None,
        }
    }

    /// The spacing a round costing `cost` earns.
    pub fn spacing_for(cost: Duration) -> Duration {
        cost.saturating_mul(ROUND_COST_FACTOR)
            .clamp(ROUND_FLOOR, ROUND_MIN)
    }

    /// The earliest time the next round may run; `None`: at once.
    pub fn due(&self) -> Option<Instant> {
        let paced = self.last_end.map(|e| e + self.spacing);
        match (paced, self.held.map(|h| h + ROUND_MIN)) {
            (Some(p), Some(h)) => Some(p.max(h)),
            (p, h) => p.or(h),
        }
    }

    /// A burst of input ended at `now`; `others_busy`: another shard of
    /// the pipeline is still applying one. Whether the round runs now: as
    /// [`Self::ready`] when no other shard is busy; otherwise a round the
    /// spacing allows is held back, [`ROUND_MIN`] at most from when it was
    /// first held (not from each later burst).
    pub fn burst_ended(&mut self, now: Instant, others_busy: bool) -> bool {
        if !others_busy {
            self.held = None;
        } else if self.held.is_none() && self.ready(now) {
            self.held = Some(now);
        }
        self.ready(now)
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
        self.held = None;
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

    const MS: Duration = Duration::from_millis(1);
    /// A round expensive enough to earn the whole [`ROUND_MIN`].
    const DEAR: Duration = Duration::from_secs(1);

    /// Alone (no other shard busy): a burst ending once the spacing has
    /// passed runs the round at once, one ending sooner waits for it.
    #[test]
    fn alone_the_round_runs_when_the_spacing_has_passed() {
        let t = Instant::from_secs(10);
        let mut c = RoundPacer::new();
        assert!(c.burst_ended(t, false), "the first round runs at once");
        c.round_done(t, DEAR);
        assert!(!c.burst_ended(t + MS, false));
        assert_eq!(c.due(), Some(t + ROUND_MIN));
        assert!(c.burst_ended(t + ROUND_MIN, false));
    }

    /// While another shard is busy the round is held back, by ROUND_MIN
    /// from when it was first held (not from each later burst), and runs
    /// at once when no shard has input left.
    #[test]
    fn another_busy_shard_holds_the_round_back_boundedly() {
        let t = Instant::from_secs(10);
        let mut c = RoundPacer::new();
        c.round_done(t, DEAR);
        let t1 = t + ROUND_MIN + MS;
        assert!(!c.burst_ended(t1, true), "held back while another is busy");
        assert_eq!(c.due(), Some(t1 + ROUND_MIN));
        // A later burst, the other shard still busy: same deadline.
        assert!(!c.burst_ended(t1 + 2 * MS, true));
        assert_eq!(c.due(), Some(t1 + ROUND_MIN));
        // The deadline passes even if the other shard stays busy.
        assert!(c.burst_ended(t1 + ROUND_MIN, true));
        c.round_done(t1 + ROUND_MIN, DEAR);
        // Held again, then every shard's input runs dry: at once.
        let t2 = t1 + 3 * ROUND_MIN;
        assert!(!c.burst_ended(t2, true));
        assert!(c.burst_ended(t2 + MS, false));
    }

    /// A burst within the spacing is not held beyond it just because
    /// another shard is busy; a cheap round's short spacing holds too.
    #[test]
    fn within_the_spacing_the_spacing_alone_decides() {
        let t = Instant::from_secs(10);
        let mut c = RoundPacer::new();
        c.round_done(t, DEAR);
        assert!(!c.burst_ended(t + MS, true));
        assert_eq!(c.due(), Some(t + ROUND_MIN), "no hold inside the spacing");
        let mut c = RoundPacer::new();
        c.round_done(t, Duration::from_micros(10));
        assert!(!c.burst_ended(t + MS / 2, true));
        assert_eq!(c.due(), Some(t + ROUND_FLOOR));
    }
}
