//! Load balancing over the fabric (seed 003, spec §1.2-1.3): which node a
//! packet entering at this node crosses the fabric to, for a given egress.
//!
//! * [`Mode::Direct`]: one fabric hop to the egress (Ye's cluster).
//! * [`Mode::Vlb`]: Valiant load balancing: an intermediate drawn
//!   uniformly from the live nodes, then the egress. Drawing this node or
//!   the egress means going direct (spec §1.2 GAP, resolved as suggested:
//!   uniform over all N).
//! * [`Mode::DirectVlb`]: direct up to R/N per (this node, egress) pair,
//!   metered by a token bucket ([`TokenBucket`]); the excess as VLB.
//!
//! Flow affinity (RouteBricks "same-flow packets during a 100 msec burst
//! [are] assigned to one set of intermediate nodes"): the path chosen for
//! a flow's first packet is kept for the flow's packets in the next
//! `window` (100 ms by default), then drawn again. GAP: the notes do not
//! say whether the burst is a fixed window or an idle gap; a fixed window
//! from the first packet keeps long flows rebalancing. Flows are a 32-bit
//! hash of the 5-tuple (the caller's), kept in a fixed table
//! ([`AFFINITY_SLOTS`] slots in 4-way sets; a new flow takes a free or
//! expired way, else the oldest): memory is bounded and nothing is
//! allocated per packet.
//!
//! Membership (spec §5, our design): [`Balancer::set_live`] removes a
//! failed node from the intermediates and the direct targets; flows that
//! used it draw again at their next packet, the others keep their path.
//! Time and randomness are arguments and a seeded generator: nothing here
//! reads a clock.

use base::Instant;
use rand_core::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;

/// Flow-affinity table size (a power of two).
pub const AFFINITY_SLOTS: usize = 4096;
/// Ways of each affinity set.
const WAYS: usize = 4;
/// RouteBricks' burst window.
pub const DEFAULT_WINDOW_NS: u64 = 100_000_000;

/// The balancing mode (`[cluster] mode`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One hop to the egress.
    Direct,
    /// Random intermediate, then the egress.
    Vlb,
    /// Direct up to R/N per pair, the excess as VLB.
    DirectVlb,
}

/// Where a packet goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Path {
    /// The egress is this node: no fabric crossing.
    Local,
    /// Straight to the egress.
    Direct,
    /// To this intermediate, which forwards to the egress.
    Via(u16),
    /// The egress is not a live node (or out of range): drop and count.
    Unreachable,
}

/// A token bucket in bytes: `rate` bytes per second, at most `burst`
/// bytes of credit. Starts full.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    rate: u64,
    burst: u64,
    tokens: u64,
    last: u64,
}

impl TokenBucket {
    /// A full bucket at time `now`.
    pub fn new(rate: u64, burst: u64, now: Instant) -> Self {
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            last: now.as_nanos(),
        }
    }

    fn refill(&mut self, now: Instant) {
        // Time going backwards adds nothing.
        let dt = now.as_nanos().saturating_sub(self.last);
        if dt == 0 {
            return;
        }
        let add = u128::from(dt) * u128::from(self.rate) / 1_000_000_000;
        let add = u64::try_from(add).unwrap_or(u64::MAX);
        self.tokens = self.tokens.saturating_add(add).min(self.burst);
        // Keep the remainder: advance `last` only by the time paid for, or
        // a stream of tiny intervals would never earn a token.
        if self.rate == 0 || self.tokens == self.burst {
            self.last = now.as_nanos();
        } else {
            let used = u128::from(add) * 1_000_000_000 / u128::from(self.rate);
            self.last = self.last.saturating_add(u64::try_from(used).unwrap_or(dt));
        }
    }

    /// Takes `n` bytes if the bucket holds them.
    pub fn take(&mut self, now: Instant, n: u64) -> bool {
        self.refill(now);
        if self.tokens >= n {
            self.tokens -= n;
            true
        } else {
            false
        }
    }

    /// Takes up to `n` bytes (a packet that goes direct anyway, kept on
    /// its path by flow affinity, still uses the direct budget).
    pub fn drain(&mut self, now: Instant, n: u64) {
        self.refill(now);
        self.tokens = self.tokens.saturating_sub(n);
    }

    /// Credit now, in bytes.
    pub fn tokens(&mut self, now: Instant) -> u64 {
        self.refill(now);
        self.tokens
    }

    /// Changes the rate (membership changed), keeping the credit.
    pub fn set_rate(&mut self, now: Instant, rate: u64, burst: u64) {
        self.refill(now);
        self.rate = rate;
        self.burst = burst;
        self.tokens = self.tokens.min(burst);
    }
}

/// What the balancer needs (from `[cluster]`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LbConfig {
    /// The mode.
    pub mode: Mode,
    /// This node's id.
    pub me: u16,
    /// Node ids are `0..nodes`.
    pub nodes: u16,
    /// Flow affinity on or off.
    pub affinity: bool,
    /// The affinity window in nanoseconds ([`DEFAULT_WINDOW_NS`]).
    pub window_ns: u64,
    /// R: the external line rate of a node, bytes per second; the direct
    /// budget per pair is R/N, N the live nodes.
    pub port_rate: u64,
    /// Token-bucket depth as time at the pair's rate, in nanoseconds.
    pub burst_ns: u64,
    /// Seed of the intermediate draws.
    pub seed: u64,
}

/// Counters (plain integers, one balancer per core).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LbStats {
    /// Packets sent direct.
    pub direct: u64,
    /// Packets sent through an intermediate.
    pub via: u64,
    /// Packets with a dead or unknown egress.
    pub unreachable: u64,
    /// Packets that kept their flow's path.
    pub affinity_hits: u64,
    /// Flows whose kept path went through a node that died.
    pub affinity_redrawn: u64,
}

#[derive(Copy, Clone, Debug, Default)]
struct Slot {
    used: bool,
    flow: u32,
    egress: u16,
    /// `u16::MAX`: direct.
    via: u16,
    start: u64,
}

const DIRECT: u16 = u16::MAX;

/// The load balancer of one core.
#[derive(Debug)]
pub struct Balancer {
    cfg: LbConfig,
    live: Vec<bool>,
    live_ids: Vec<u16>,
    buckets: Vec<TokenBucket>,
    slots: Box<[Slot]>,
    rng: XorShiftRng,
    stats: LbStats,
}

impl Balancer {
    /// A balancer at time `now` with every node live.
    pub fn new(cfg: LbConfig, now: Instant) -> Self {
        let n = usize::from(cfg.nodes);
        let mut b = Balancer {
            cfg,
            live: vec![true; n],
            live_ids: (0..cfg.nodes).collect(),
            buckets: vec![TokenBucket::new(0, 0, now); n],
            slots: vec![Slot::default(); AFFINITY_SLOTS].into_boxed_slice(),
            rng: XorShiftRng::seed_from_u64(cfg.seed),
            stats: LbStats::default(),
        };
        b.rebucket(now);
        b
    }

    /// R/N for the live N, and the matching burst.
    fn pair_rate(&self) -> (u64, u64) {
        let n = self.live_ids.len().max(1) as u64;
        let rate = self.cfg.port_rate / n;
        let burst = u128::from(rate) * u128::from(self.cfg.burst_ns) / 1_000_000_000;
        // At least one full-size frame, or nothing ever goes direct.
        (rate, u64::try_from(burst).unwrap_or(u64::MAX).max(1518))
    }

    fn rebucket(&mut self, now: Instant) {
        let (rate, burst) = self.pair_rate();
        for b in &mut self.buckets {
            b.set_rate(now, rate, burst);
        }
    }

    /// Marks `node` live or dead (BFD up/down). Returns whether anything
    /// changed.
    pub fn set_live(&mut self, now: Instant, node: u16, live: bool) -> bool {
        let Some(l) = self.live.get_mut(usize::from(node)) else {
            return false;
        };
        if *l == live {
            return false;
        }
        *l = live;
        self.live_ids = (0..self.cfg.nodes)
            .filter(|&i| self.live.get(usize::from(i)) == Some(&true))
            .collect();
        self.rebucket(now);
        true
    }

    /// Whether `node` is live.
    pub fn is_live(&self, node: u16) -> bool {
        self.live.get(usize::from(node)) == Some(&true)
    }

    /// The live nodes, ascending.
    pub fn live_nodes(&self) -> &[u16] {
        &self.live_ids
    }

    /// The counters.
    pub fn stats(&self) -> LbStats {
        self.stats
    }

    /// The direct budget's credit towards `egress`, in bytes.
    pub fn direct_credit(&mut self, now: Instant, egress: u16) -> u64 {
        self.buckets
            .get_mut(usize::from(egress))
            .map_or(0, |b| b.tokens(now))
    }

    /// VLB phase 1: a live node drawn uniformly; this node or the egress
    /// means direct.
    fn draw(&mut self, egress: u16) -> u16 {
        let n = self.live_ids.len() as u64;
        if n == 0 {
            return DIRECT;
        }
        let i = self.rng.next_u64() % n;
        match self.live_ids.get(i as usize) {
            Some(&v) if v != egress && v != self.cfg.me => v,
            _ => DIRECT,
        }
    }

    /// The affinity slot of `flow` towards `egress` at time `t` (ns): the
    /// one it holds in its 4-way set, if any, with its entry when still
    /// inside the window; else the set's free, expired or oldest slot for
    /// a new entry. Four ways keep two flows whose hashes meet from
    /// evicting each other on every packet (which would spray them as if
    /// affinity were off).
    fn slot_for(&self, flow: u32, egress: u16, t: u64) -> (usize, Option<Slot>) {
        let base = flow as usize & (AFFINITY_SLOTS - 1) & !(WAYS - 1);
        let set = self.slots.get(base..base + WAYS).unwrap_or_default();
        let live = |s: &Slot| s.used && t.saturating_sub(s.start) < self.cfg.window_ns;
        if let Some(i) = set
            .iter()
            .position(|s| s.used && s.flow == flow && s.egress == egress)
        {
            let e = set.get(i).copied().filter(live);
            return (base + i, e);
        }
        let victim = set
            .iter()
            .position(|s| !live(s))
            .or_else(|| {
                set.iter()
                    .enumerate()
                    .min_by_key(|(_, s)| s.start)
                    .map(|(i, _)| i)
            })
            .unwrap_or(0);
        (base + victim, None)
    }

    /// A fresh path for one packet of `len` bytes.
    fn fresh(&mut self, now: Instant, egress: u16, len: u64) -> u16 {
        match self.cfg.mode {
            Mode::Direct => DIRECT,
            Mode::Vlb => self.draw(egress),
            Mode::DirectVlb => {
                let ok = self
                    .buckets
                    .get_mut(usize::from(egress))
                    .is_some_and(|b| b.take(now, len));
                if ok {
                    DIRECT
                } else {
                    self.draw(egress)
                }
            }
        }
    }

    /// The path of one packet of `len` bytes, of flow `flow` (a hash of
    /// its 5-tuple), towards `egress`.
    pub fn choose(&mut self, now: Instant, egress: u16, flow: u32, len: u32) -> Path {
        if egress == self.cfg.me {
            return Path::Local;
        }
        if !self.is_live(egress) {
            self.stats.unreachable += 1;
            return Path::Unreachable;
        }
        let len = u64::from(len);
        let t = now.as_nanos();
        let via = if self.cfg.affinity && self.cfg.mode != Mode::Direct {
            let (idx, kept) = self.slot_for(flow, egress, t);
            let kept = match kept {
                Some(s) if s.via == DIRECT || self.is_live(s.via) => Some(s.via),
                Some(_) => {
                    self.stats.affinity_redrawn += 1;
                    None
                }
                None => None,
            };
            match kept {
                Some(v) => {
                    self.stats.affinity_hits += 1;
                    if v == DIRECT && self.cfg.mode == Mode::DirectVlb {
                        if let Some(b) = self.buckets.get_mut(usize::from(egress)) {
                            b.drain(now, len);
                        }
                    }
                    v
                }
                None => {
                    let v = self.fresh(now, egress, len);
                    if let Some(s) = self.slots.get_mut(idx) {
                        *s = Slot {
                            used: true,
                            flow,
                            egress,
                            via: v,
                            start: t,
                        };
                    }
                    v
                }
            }
        } else {
            self.fresh(now, egress, len)
        };
        if via == DIRECT {
            self.stats.direct += 1;
            Path::Direct
        } else {
            self.stats.via += 1;
            Path::Via(via)
        }
    }
}

/// What a node does with a fabric data packet it received, from the
/// option alone (intermediates never parse the inner frames).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Receive {
    /// We are the egress: unpack, map each tag to its port.
    Deliver,
    /// We are the intermediate: clear the transit flag, send to `egress`.
    Forward(u16),
    /// Not for us and not in transit (a loop or a stale path), or the
    /// egress is dead: drop and count.
    Drop,
}

/// Decides [`Receive`] for a packet to `egress` with `transit` set or not.
pub fn on_receive(me: u16, egress: u16, transit: bool, egress_live: bool) -> Receive {
    if egress == me {
        Receive::Deliver
    } else if transit && egress_live {
        Receive::Forward(egress)
    } else {
        Receive::Drop
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn cfg(mode: Mode, affinity: bool) -> LbConfig {
        LbConfig {
            mode,
            me: 0,
            nodes: 4,
            affinity,
            window_ns: DEFAULT_WINDOW_NS,
            port_rate: 1_000_000, // 1 MB/s: 250 kB/s per pair with 4 nodes
            burst_ns: 10 * MS,    // 2500 bytes
            seed: 7,
        }
    }

    #[test]
    fn token_bucket_meters_rate_and_burst() {
        let t0 = Instant::from_nanos(0);
        let mut b = TokenBucket::new(1000, 1500, t0);
        assert!(b.take(t0, 1500));
        assert!(!b.take(t0, 1));
        // 1000 B/s: 1 ms earns 1 byte; 999 separate microseconds earn 0.999.
        for us in 1..1000u64 {
            assert!(!b.take(Instant::from_nanos(us * 1000), 1), "at {us} us");
        }
        assert!(b.take(Instant::from_nanos(MS), 1), "1 ms earns 1 byte");
        // Credit never exceeds the burst, and time going back adds none.
        assert_eq!(b.tokens(Instant::from_secs(100)), 1500);
        assert_eq!(b.tokens(Instant::from_secs(1)), 1500);
        b.set_rate(Instant::from_secs(100), 10, 100);
        assert_eq!(b.tokens(Instant::from_secs(100)), 100);
    }

    #[test]
    fn direct_mode_is_one_hop_and_local_and_dead_egress() {
        let mut b = Balancer::new(cfg(Mode::Direct, true), Instant::ZERO);
        assert_eq!(b.choose(Instant::ZERO, 2, 1, 100), Path::Direct);
        assert_eq!(b.choose(Instant::ZERO, 0, 1, 100), Path::Local);
        assert_eq!(b.choose(Instant::ZERO, 9, 1, 100), Path::Unreachable);
        b.set_live(Instant::ZERO, 2, false);
        assert_eq!(b.choose(Instant::ZERO, 2, 1, 100), Path::Unreachable);
        assert_eq!(b.stats().unreachable, 2);
    }

    #[test]
    fn vlb_draws_uniformly_over_live_nodes() {
        // Egress 3 from node 0 with 4 nodes: draws 0 and 3 go direct (1/2),
        // 1 and 2 are intermediates (1/4 each).
        let mut b = Balancer::new(cfg(Mode::Vlb, false), Instant::ZERO);
        let mut n = [0u32; 5];
        for f in 0..40_000u32 {
            match b.choose(Instant::ZERO, 3, f, 64) {
                Path::Direct => n[4] += 1,
                Path::Via(v) => n[usize::from(v)] += 1,
                p => panic!("{p:?}"),
            }
        }
        assert_eq!((n[0], n[3]), (0, 0), "never self or egress as intermediate");
        for (k, want) in [(1, 10_000), (2, 10_000), (4, 20_000)] {
            assert!((n[k] as i64 - want).abs() < 600, "{k}: {} vs {want}", n[k]);
        }
        // Node 1 dies: only node 2 is left as intermediate (1/3 of draws).
        b.set_live(Instant::ZERO, 1, false);
        let mut via2 = 0;
        for f in 0..30_000u32 {
            match b.choose(Instant::ZERO, 3, f, 64) {
                Path::Via(2) => via2 += 1,
                Path::Direct => {}
                p => panic!("dead node used: {p:?}"),
            }
        }
        assert!((via2 as i64 - 10_000).abs() < 500, "{via2}");
        // It rejoins.
        b.set_live(Instant::ZERO, 1, true);
        assert_eq!(b.live_nodes(), &[0, 1, 2, 3]);
    }

    #[test]
    fn same_seed_same_choices() {
        let run = || {
            let mut b = Balancer::new(cfg(Mode::Vlb, false), Instant::ZERO);
            (0..100u32)
                .map(|f| b.choose(Instant::ZERO, 2, f, 64))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn direct_vlb_sends_r_over_n_direct_and_the_excess_via() {
        // 250 kB/s per pair, 2500 B burst. Offer 1000 B every 1 ms (1 MB/s)
        // for one second: about 250 kB + burst direct, the rest via.
        let mut b = Balancer::new(cfg(Mode::DirectVlb, false), Instant::ZERO);
        let mut direct = 0u64;
        let mut via_bytes = 0u64;
        for ms in 0..1000u64 {
            match b.choose(Instant::from_nanos(ms * MS), 2, ms as u32, 1000) {
                Path::Direct => direct += 1000,
                Path::Via(_) => via_bytes += 1000,
                p => panic!("{p:?}"),
            }
        }
        // The VLB draws for the excess may themselves land direct (1/2), so
        // direct bytes = metered + half the excess.
        let metered = 250_000 + 2_000;
        assert!(direct >= metered, "{direct}");
        assert!((direct as i64 - (metered + (1_000_000 - metered) / 2) as i64).abs() < 40_000);
        assert!(via_bytes > 300_000, "{via_bytes}");
        // Light load (under R/N) is all direct.
        let mut b = Balancer::new(cfg(Mode::DirectVlb, false), Instant::ZERO);
        for ms in 0..1000u64 {
            let p = b.choose(Instant::from_nanos(ms * MS), 2, ms as u32, 200);
            assert_eq!(p, Path::Direct, "at {ms} ms");
        }
    }

    #[test]
    fn affinity_keeps_a_flow_on_one_path_within_the_window() {
        let mut b = Balancer::new(cfg(Mode::Vlb, true), Instant::ZERO);
        let at = |ms: u64| Instant::from_nanos(ms * MS);
        let first = b.choose(at(0), 3, 42, 64);
        for ms in 1..100 {
            assert_eq!(b.choose(at(ms), 3, 42, 64), first, "at {ms} ms");
        }
        // Across many windows the flow is redrawn: not always one path.
        let mut paths = std::collections::BTreeSet::new();
        for w in 1..50 {
            paths.insert(format!("{:?}", b.choose(at(w * 100), 3, 42, 64)));
        }
        assert!(paths.len() >= 2, "{paths:?}");
        // Off: one flow is sprayed over several paths within 100 ms.
        let mut b = Balancer::new(cfg(Mode::Vlb, false), Instant::ZERO);
        let mut paths = std::collections::BTreeSet::new();
        for ms in 0..50 {
            paths.insert(format!("{:?}", b.choose(at(ms), 3, 42, 64)));
        }
        assert!(paths.len() >= 2, "{paths:?}");
    }

    #[test]
    fn flows_meeting_in_one_slot_keep_their_paths() {
        // Five flows whose hashes pick the same 4-way set: four keep their
        // paths while interleaved; the fifth evicts the oldest each time.
        let mut b = Balancer::new(cfg(Mode::Vlb, true), Instant::ZERO);
        let at = |ms: u64| Instant::from_nanos(ms * MS);
        let flows: Vec<u32> = (0..4).map(|k| 5 + k * AFFINITY_SLOTS as u32).collect();
        let first: Vec<Path> = flows.iter().map(|&f| b.choose(at(0), 3, f, 64)).collect();
        for ms in 1..90 {
            for (f, p) in flows.iter().zip(&first) {
                assert_eq!(b.choose(at(ms), 3, *f, 64), *p, "flow {f} at {ms} ms");
            }
        }
        assert_eq!(b.stats().affinity_hits, 4 * 89);
    }

    #[test]
    fn affinity_redraws_only_flows_through_a_dead_node() {
        let mut b = Balancer::new(cfg(Mode::Vlb, true), Instant::ZERO);
        let t = Instant::from_nanos(MS);
        let mut kept = Vec::new();
        for f in 0..200u32 {
            kept.push(b.choose(Instant::ZERO, 3, f, 64));
        }
        b.set_live(t, 1, false);
        for (f, before) in kept.iter().enumerate() {
            let now = b.choose(t, 3, f as u32, 64);
            if *before == Path::Via(1) {
                assert_ne!(now, Path::Via(1), "flow {f} still through the dead node");
            } else {
                assert_eq!(now, *before, "flow {f} moved without cause");
            }
        }
        assert!(b.stats().affinity_redrawn > 20, "{:?}", b.stats());
    }

    #[test]
    fn receive_forwards_on_the_tag_only_in_transit() {
        assert_eq!(on_receive(1, 1, true, true), Receive::Deliver);
        assert_eq!(on_receive(1, 1, false, true), Receive::Deliver);
        assert_eq!(on_receive(1, 2, true, true), Receive::Forward(2));
        assert_eq!(on_receive(1, 2, false, true), Receive::Drop);
        assert_eq!(on_receive(1, 2, true, false), Receive::Drop);
    }
}
