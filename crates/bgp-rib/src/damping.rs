//! Route-flap damping (RFC 2439), with the parameters RFC 7196 recommends
//! as defaults. Pure: every function takes the current time as an
//! argument; nothing here reads a clock.
//!
//! * A [`FigureOfMerit`] is one route's penalty: it decays exponentially
//!   (halving every `half_life`) and grows by a fixed amount per flap
//!   ([`Flap`]: a withdrawal, a re-advertisement after a withdrawal, or an
//!   attribute change). It is stored as (value, time of that value), so
//!   decay is computed on demand and exactly, never by periodic ticks.
//! * The penalty is capped at the ceiling `reuse * 2^(max_suppress /
//!   half_life)` (RFC 2439 §4.8), so a route is never held longer than
//!   `max_suppress` after its last flap.
//! * A route is suppressed when its penalty exceeds `suppress` and
//!   released when it has decayed to `reuse`; [`DampTable`] keeps every
//!   (peer, prefix, path id) with a history and a queue of deadlines
//!   ordered by time (the reuse list): the reuse time of suppressed
//!   routes, and the time unsuppressed histories fall below `reuse / 2`
//!   and are forgotten. [`DampTable::due`] pops what is due.
//!
//! Written here rather than taken from a crate: no maintained Rust crate
//! implements RFC 2439, and the table must hook into this RIB's selection.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::time::Duration;

use base::Instant;

/// A route as the RIB's damping knows it: (peer, masked prefix, path id).
pub type DampKey = (crate::PeerId, base::Prefix, u32);

/// A shard's damping state (driven from `damp_shard.rs`).
#[derive(Debug)]
pub(crate) struct ShardDamp {
    pub(crate) table: DampTable<DampKey>,
    /// Peers whose routes are damped, by id.
    pub(crate) peers: Vec<bool>,
    /// The time the caller last gave.
    pub(crate) now: Instant,
}

/// Damping parameters. [`Default`] gives RFC 7196's: suppress 6000, reuse
/// 750, half-life 15 min, max suppress 60 min, and the usual penalties
/// (1000 per withdrawal, 1000 per re-advertisement, 500 per attribute
/// change).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DampParams {
    /// The penalty halves in this time. Not zero.
    pub half_life: Duration,
    /// A suppressed route is released when its penalty has decayed to this.
    pub reuse: u32,
    /// A route is suppressed when its penalty exceeds this (> `reuse`).
    pub suppress: u32,
    /// Longest suppression after the last flap (>= `half_life`).
    pub max_suppress: Duration,
    /// Added when the route is withdrawn.
    pub withdraw_penalty: u32,
    /// Added when a withdrawn route is announced again.
    pub readvertise_penalty: u32,
    /// Added when an announced route's attributes change.
    pub attr_change_penalty: u32,
}

impl Default for DampParams {
    fn default() -> Self {
        DampParams {
            half_life: Duration::from_secs(15 * 60),
            reuse: 750,
            suppress: 6000,
            max_suppress: Duration::from_secs(60 * 60),
            withdraw_penalty: 1000,
            readvertise_penalty: 1000,
            attr_change_penalty: 500,
        }
    }
}

impl DampParams {
    /// Why these parameters cannot work, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.half_life.is_zero() {
            return Err("half_life must be at least 1 second".into());
        }
        if self.reuse == 0 {
            return Err("reuse must be at least 1".into());
        }
        if self.suppress <= self.reuse {
            return Err(format!(
                "suppress ({}) must be greater than reuse ({})",
                self.suppress, self.reuse
            ));
        }
        if self.max_suppress < self.half_life {
            return Err("max_suppress must be at least half_life".into());
        }
        if self.ceiling() <= f64::from(self.suppress) {
            return Err(format!(
                "the penalty ceiling reuse * 2^(max_suppress / half_life) = {:.0} must exceed suppress ({}): \
                 raise max_suppress or reuse",
                self.ceiling(),
                self.suppress
            ));
        }
        Ok(())
    }

    /// The highest penalty: from it, the route decays to `reuse` in
    /// exactly `max_suppress`.
    pub fn ceiling(&self) -> f64 {
        let hl = self.half_life.as_secs_f64().max(1e-9);
        f64::from(self.reuse) * (self.max_suppress.as_secs_f64() / hl).exp2()
    }

    fn penalty_of(&self, f: Flap) -> f64 {
        f64::from(match f {
            Flap::Withdraw => self.withdraw_penalty,
            Flap::Readvertise => self.readvertise_penalty,
            Flap::AttrChange => self.attr_change_penalty,
        })
    }
}

/// One instability event of a route.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Flap {
    /// The route was withdrawn.
    Withdraw,
    /// A withdrawn route was announced again.
    Readvertise,
    /// An announced route was announced with other attributes.
    AttrChange,
}

/// One route's damping state: its penalty at time `at`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct FigureOfMerit {
    /// The penalty at `at`.
    pub penalty: f64,
    /// When `penalty` was computed (the last flap).
    pub at: Instant,
    /// Not eligible for selection.
    pub suppressed: bool,
    /// The last flap was a withdrawal (the route is not announced).
    pub withdrawn: bool,
}

/// `half_life` multiples between `from` and `to`.
fn half_lives(p: &DampParams, from: Instant, to: Instant) -> f64 {
    to.since(from).as_secs_f64() / p.half_life.as_secs_f64().max(1e-9)
}

/// `from` plus the time the penalty takes to decay by `ratio` (>= 1).
fn after_decay(p: &DampParams, from: Instant, ratio: f64) -> Instant {
    if ratio <= 1.0 {
        return from;
    }
    let secs = p.half_life.as_secs_f64() * ratio.log2();
    // Rounded up to the next nanosecond: at the result the penalty is at
    // or below the target, never above it.
    let ns = (secs * 1e9).ceil();
    from + Duration::from_nanos(if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns as u64
    })
}

impl FigureOfMerit {
    /// The first flap of a route without history.
    pub fn new(now: Instant, flap: Flap, p: &DampParams) -> Self {
        let mut f = FigureOfMerit {
            penalty: 0.0,
            at: now,
            suppressed: false,
            withdrawn: false,
        };
        f.flap(now, flap, p);
        f
    }

    /// The penalty at `now` (not before `at`: an earlier `now` reads as `at`).
    pub fn penalty_at(&self, now: Instant, p: &DampParams) -> f64 {
        self.penalty * (-half_lives(p, self.at, now)).exp2()
    }

    /// Adds `flap`'s penalty at `now` (decaying the old value first),
    /// capped at the ceiling, and suppresses the route once the penalty
    /// exceeds `suppress`.
    pub fn flap(&mut self, now: Instant, flap: Flap, p: &DampParams) {
        let now = now.max(self.at);
        self.penalty = (self.penalty_at(now, p) + p.penalty_of(flap)).min(p.ceiling());
        self.at = now;
        self.withdrawn = flap == Flap::Withdraw;
        if self.penalty > f64::from(p.suppress) {
            self.suppressed = true;
        }
    }

    /// When a suppressed route's penalty reaches `reuse`; `None` when it
    /// is not suppressed.
    pub fn reuse_at(&self, p: &DampParams) -> Option<Instant> {
        self.suppressed
            .then(|| after_decay(p, self.at, self.penalty / f64::from(p.reuse)))
    }

    /// When the penalty falls to `reuse / 2`, after which an unsuppressed
    /// history carries no weight worth keeping (RFC 2439 §4.8.7).
    pub fn forget_at(&self, p: &DampParams) -> Instant {
        after_decay(p, self.at, self.penalty * 2.0 / f64::from(p.reuse))
    }

    /// When this route next needs attention: its reuse time if
    /// suppressed, else the time to forget it.
    fn deadline(&self, p: &DampParams) -> Instant {
        self.reuse_at(p).unwrap_or_else(|| self.forget_at(p))
    }
}

struct Slot {
    fom: FigureOfMerit,
    /// The deadline this key is queued under.
    queued: Instant,
}

/// Damping state of many routes, keyed by `K` (per peer, prefix and path
/// id in the RIB), with the reuse list. See the module docs.
pub struct DampTable<K> {
    params: DampParams,
    slots: HashMap<K, Slot>,
    queue: BTreeSet<(Instant, K)>,
}

impl<K: Copy + Eq + Hash + Ord> DampTable<K> {
    /// An empty table.
    pub fn new(params: DampParams) -> Self {
        DampTable {
            params,
            slots: HashMap::new(),
            queue: BTreeSet::new(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &DampParams {
        &self.params
    }

    /// Records `flap` of `key` at `now`; returns whether the route is now
    /// suppressed.
    pub fn flap(&mut self, now: Instant, key: K, flap: Flap) -> bool {
        let p = self.params;
        let fom = match self.slots.get_mut(&key) {
            Some(s) => {
                self.queue.remove(&(s.queued, key));
                s.fom.flap(now, flap, &p);
                s.queued = s.fom.deadline(&p);
                s
            }
            None => {
                let fom = FigureOfMerit::new(now, flap, &p);
                let queued = fom.deadline(&p);
                self.slots.entry(key).or_insert(Slot { fom, queued })
            }
        };
        self.queue.insert((fom.queued, key));
        fom.fom.suppressed
    }

    /// The state of `key`, if it has a history.
    pub fn get(&self, key: &K) -> Option<&FigureOfMerit> {
        self.slots.get(key).map(|s| &s.fom)
    }

    /// Whether `key` is suppressed.
    pub fn is_suppressed(&self, key: &K) -> bool {
        self.get(key).is_some_and(|f| f.suppressed)
    }

    /// Whether `key` has a history (a flap not forgotten yet).
    pub fn has_history(&self, key: &K) -> bool {
        self.slots.contains_key(key)
    }

    /// Routes with a history.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no route has a history.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Every route with a history.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &FigureOfMerit)> + '_ {
        self.slots.iter().map(|(k, s)| (k, &s.fom))
    }

    /// The earliest deadline (reuse or forget), if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.first().map(|&(t, _)| t)
    }

    /// Handles every deadline at or before `now`: suppressed routes whose
    /// penalty reached `reuse` are released (appended to `released`),
    /// histories that decayed below `reuse / 2` are dropped.
    pub fn due(&mut self, now: Instant, released: &mut Vec<K>) {
        let p = self.params;
        while let Some(&(t, key)) = self.queue.first() {
            if t > now {
                break;
            }
            self.queue.pop_first();
            let Some(s) = self.slots.get_mut(&key) else {
                continue;
            };
            if s.fom.suppressed {
                s.fom.suppressed = false;
                released.push(key);
                s.queued = s.fom.forget_at(&p).max(now);
                self.queue.insert((s.queued, key));
            } else {
                self.slots.remove(&key);
            }
        }
    }

    /// Drops the histories of the keys `drop` selects (a peer that went
    /// down); returns those that were suppressed.
    pub fn remove_where(&mut self, mut drop: impl FnMut(&K) -> bool) -> Vec<K> {
        let mut was = Vec::new();
        self.slots.retain(|k, s| {
            if !drop(k) {
                return true;
            }
            if s.fom.suppressed {
                was.push(*k);
            }
            false
        });
        self.queue.retain(|(_, k)| !drop(k));
        was
    }
}

impl<K> std::fmt::Debug for DampTable<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DampTable")
            .field("params", &self.params)
            .field("routes", &self.slots.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }
    fn at(s: f64) -> Instant {
        Instant::ZERO + secs(s)
    }

    #[test]
    fn rfc7196_defaults() {
        let p = DampParams::default();
        assert_eq!(p.suppress, 6000);
        assert_eq!(p.reuse, 750);
        assert_eq!(p.half_life, Duration::from_secs(900));
        assert_eq!(p.max_suppress, Duration::from_secs(3600));
        assert_eq!(
            (
                p.withdraw_penalty,
                p.readvertise_penalty,
                p.attr_change_penalty
            ),
            (1000, 1000, 500)
        );
        assert!(p.check().is_ok());
        // 750 * 2^(60/15)
        assert!((p.ceiling() - 12000.0).abs() < 1e-6);
    }

    #[test]
    fn check_rejects_unworkable() {
        let ok = DampParams::default();
        for bad in [
            DampParams {
                half_life: Duration::ZERO,
                ..ok
            },
            DampParams { reuse: 0, ..ok },
            DampParams {
                suppress: 750,
                ..ok
            },
            DampParams {
                max_suppress: Duration::from_secs(60),
                ..ok
            },
            // ceiling 750 * 2 = 1500 < 6000
            DampParams {
                max_suppress: Duration::from_secs(900),
                ..ok
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    /// Three withdraw/re-announce cycles at RFC 7196's defaults do not
    /// suppress (6000 is not exceeded); a fourth does.
    #[test]
    fn suppress_after_enough_flaps() {
        let p = DampParams::default();
        let mut t = DampTable::new(p);
        let mut s = false;
        for i in 0..3 {
            s = t.flap(at(i as f64 * 2.0), 1u32, Flap::Withdraw);
            s |= t.flap(at(i as f64 * 2.0 + 1.0), 1u32, Flap::Readvertise);
        }
        assert!(!s, "{:?}", t.get(&1));
        assert!(t.flap(at(6.0), 1, Flap::Withdraw));
        let f = *t.get(&1).unwrap();
        assert!(f.suppressed && f.withdrawn);
        assert!(f.penalty > 6000.0 && f.penalty < 7000.0);
    }

    /// Release exactly at the reuse time: not a nanosecond before.
    #[test]
    fn released_at_reuse_time() {
        let p = DampParams {
            half_life: secs(2.0),
            suppress: 2500,
            reuse: 1000,
            max_suppress: secs(10.0),
            ..DampParams::default()
        };
        let mut t = DampTable::new(p);
        t.flap(at(0.0), 7u8, Flap::Withdraw);
        t.flap(at(0.0), 7, Flap::Readvertise);
        assert!(t.flap(at(0.0), 7, Flap::Withdraw));
        // 3000 -> 1000 takes log2(3) half-lives.
        let reuse = t.get(&7).unwrap().reuse_at(&p).unwrap();
        let want = 2.0 * 3f64.log2();
        assert!((reuse.since(Instant::ZERO).as_secs_f64() - want).abs() < 1e-6);
        assert_eq!(t.next_deadline(), Some(reuse));
        let mut rel = Vec::new();
        t.due(Instant::from_nanos(reuse.as_nanos() - 1), &mut rel);
        assert!(rel.is_empty() && t.is_suppressed(&7));
        t.due(reuse, &mut rel);
        assert_eq!(rel, vec![7]);
        assert!(!t.is_suppressed(&7));
        // Still remembered until the penalty falls to reuse / 2 ...
        assert!(t.has_history(&7));
        let forget = t.next_deadline().unwrap();
        assert!((forget.since(reuse).as_secs_f64() - 2.0).abs() < 1e-6);
        t.due(forget, &mut rel);
        // ... then forgotten.
        assert!(!t.has_history(&7));
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn remove_where_drops_queue_too() {
        let p = DampParams {
            suppress: 1500,
            ..DampParams::default()
        };
        let mut t = DampTable::new(p);
        t.flap(at(0.0), (1u8, 1u8), Flap::Withdraw);
        t.flap(at(0.0), (1, 1), Flap::Readvertise);
        t.flap(at(0.0), (2, 1), Flap::Withdraw);
        let was = t.remove_where(|k| k.0 == 1);
        assert_eq!(was, vec![(1, 1)]);
        assert_eq!(t.len(), 1);
        assert_eq!(t.queue.len(), 1);
    }

    fn params() -> impl Strategy<Value = DampParams> {
        (1u64..=1800, 1u32..3000, 1u32..20_000, 1u64..=8).prop_filter_map(
            "workable",
            |(hl, reuse, extra, k)| {
                let p = DampParams {
                    half_life: Duration::from_secs(hl),
                    reuse,
                    suppress: reuse + extra,
                    max_suppress: Duration::from_secs(hl * k),
                    ..DampParams::default()
                };
                p.check().is_ok().then_some(p)
            },
        )
    }

    fn flap() -> impl Strategy<Value = Flap> {
        prop_oneof![
            Just(Flap::Withdraw),
            Just(Flap::Readvertise),
            Just(Flap::AttrChange)
        ]
    }

    proptest! {
        /// A flap never lowers the penalty; below the ceiling it raises it
        /// by exactly the flap's amount.
        #[test]
        fn penalty_monotone_under_flaps(
            p in params(),
            events in prop::collection::vec((0u64..120_000, flap()), 1..40),
        ) {
            let mut now = Instant::ZERO;
            let mut f: Option<FigureOfMerit> = None;
            for (gap_ms, fl) in events {
                now = now + Duration::from_millis(gap_ms);
                match f.as_mut() {
                    None => f = Some(FigureOfMerit::new(now, fl, &p)),
                    Some(f) => {
                        let before = f.penalty_at(now, &p);
                        f.flap(now, fl, &p);
                        prop_assert!(f.penalty >= before - 1e-9);
                        let want = (before + p.penalty_of(fl)).min(p.ceiling());
                        prop_assert!((f.penalty - want).abs() <= 1e-6 * want.max(1.0));
                        prop_assert!(f.penalty <= p.ceiling() + 1e-9);
                    }
                }
            }
        }

        /// The penalty halves in one half-life, from any value and time.
        #[test]
        fn decays_to_half_in_one_half_life(
            p in params(),
            n in 1usize..20,
            t0 in 0u64..1_000_000,
        ) {
            let mut f = FigureOfMerit::new(Instant::from_secs(t0), Flap::Withdraw, &p);
            for _ in 1..n {
                f.flap(Instant::from_secs(t0), Flap::Readvertise, &p);
            }
            let later = f.penalty_at(Instant::from_secs(t0) + p.half_life, &p);
            prop_assert!((later - f.penalty / 2.0).abs() <= 1e-9 * f.penalty);
        }

        /// However a route flaps, once it stops it is released no later
        /// than max-suppress after its last flap, at the moment its penalty
        /// has decayed to the reuse threshold and not before.
        #[test]
        fn released_at_reuse_within_max_suppress(
            p in params(),
            events in prop::collection::vec((0u64..30_000, flap()), 1..60),
        ) {
            let mut t = DampTable::new(p);
            let mut now = Instant::ZERO;
            let mut released = Vec::new();
            for (gap_ms, fl) in events {
                now = now + Duration::from_millis(gap_ms);
                t.due(now, &mut released);
                t.flap(now, 0u8, fl);
            }
            let last = now;
            let Some(f) = t.get(&0).copied() else {
                return Ok(());
            };
            if !f.suppressed {
                // Released (or never suppressed): the penalty is at most
                // the threshold it was suppressed above.
                prop_assert!(f.penalty <= p.ceiling() + 1e-9);
                return Ok(());
            }
            let reuse_at = f.reuse_at(&p).unwrap();
            prop_assert!(reuse_at.since(last) <= p.max_suppress + Duration::from_nanos(1));
            // At the reuse time the penalty is at the threshold ...
            let at_reuse = f.penalty_at(reuse_at, &p);
            prop_assert!(at_reuse <= f64::from(p.reuse) * (1.0 + 1e-9));
            prop_assert!(at_reuse >= f64::from(p.reuse) * (1.0 - 1e-6));
            // ... and the table releases it then, not earlier.
            released.clear();
            if reuse_at > last {
                t.due(Instant::from_nanos(reuse_at.as_nanos() - 1), &mut released);
                prop_assert!(released.is_empty());
                prop_assert!(t.is_suppressed(&0));
            }
            t.due(reuse_at, &mut released);
            prop_assert_eq!(released, vec![0u8]);
            prop_assert!(!t.is_suppressed(&0));
        }
    }
}
