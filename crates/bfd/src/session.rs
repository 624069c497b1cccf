//! One BFD session in asynchronous mode (RFC 5880 §6.8): the state
//! variables of §6.8.1, reception (§6.8.6), transmission with jitter
//! (§6.8.7), timer negotiation with Poll/Final (§6.5, §6.8.3), detection
//! (§6.8.4) and administrative control (§6.8.16).
//!
//! The caller owns the clock and the socket: it hands every decoded packet
//! of this session to [`Session::receive`], calls [`Session::poll`] when
//! [`Session::next_deadline`] has passed, sends what comes back in
//! [`Step::send`] and reacts to [`Step::transition`].
//!
//! Choices where RFC 5880 leaves room, each as FRR's bfdd and BIRD do:
//! - a state change sends a packet at once instead of waiting for the
//!   periodic timer, so a session comes Up in one round trip;
//! - `bfd.LocalDiag` is cleared when the session comes Up;
//! - while not Up we advertise `Desired Min TX` of at least one second
//!   (§6.8.3, a MUST); on coming Up the configured value is announced with a
//!   Poll Sequence.

use std::time::Duration;

use base::Instant;

use crate::packet::{ControlPacket, Diag, State};

/// `bfd.DesiredMinTxInterval` while the session is not Up (§6.8.3).
pub const SLOW_TX_US: u32 = 1_000_000;

/// What a session is configured with.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// `bfd.DesiredMinTxInterval` once Up.
    pub desired_min_tx: Duration,
    /// `bfd.RequiredMinRxInterval`.
    pub required_min_rx: Duration,
    /// `bfd.DetectMult`, at least 1.
    pub detect_mult: u8,
}

impl Default for SessionConfig {
    /// 300 ms × 3, FRR's default.
    fn default() -> Self {
        SessionConfig {
            desired_min_tx: Duration::from_millis(300),
            required_min_rx: Duration::from_millis(300),
            detect_mult: 3,
        }
    }
}

fn us(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// A change of `bfd.SessionState`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// `bfd.LocalDiag` after the change.
    pub diag: Diag,
}

/// Why [`Session::receive`] discarded a packet (after the checks of
/// [`ControlPacket::decode`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Discard {
    /// The A bit is set and this session uses no authentication.
    Authentication,
    /// `Your Discriminator` is neither zero nor ours.
    YourDiscriminator,
    /// The session is AdminDown (the remote's variables were still taken).
    AdminDown,
}

/// What one call into the session produced.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// A packet to send now.
    pub send: Option<ControlPacket>,
    /// The session changed state.
    pub transition: Option<Transition>,
    /// The packet given to [`Session::receive`] was discarded.
    pub discard: Option<Discard>,
}

/// One session's state (§6.8.1). Times are µs as on the wire.
#[derive(Clone, Debug)]
pub struct Session {
    cfg: SessionConfig,
    state: State,
    remote_state: State,
    local_disc: u32,
    remote_disc: u32,
    diag: Diag,
    remote_diag: Diag,
    remote_demand: bool,
    /// What our packets advertise (`bfd.DesiredMinTxInterval`,
    /// `bfd.RequiredMinRxInterval`).
    adv_tx_us: u32,
    adv_rx_us: u32,
    /// What our transmission and detection use, which lags the
    /// advertisement while a Poll Sequence runs (§6.8.3).
    tx_eff_us: u32,
    rx_eff_us: u32,
    remote_min_rx_us: u32,
    remote_desired_tx_us: u32,
    remote_detect_mult: u8,
    /// A Poll Sequence is running.
    polling: bool,
    /// The configuration changed during a Poll Sequence: start another
    /// when it ends.
    poll_pending: bool,
    last_tx: Option<Instant>,
    next_tx: Instant,
    detect_at: Option<Instant>,
    rng: u64,
}

impl Session {
    /// A session in Down. `local_disc` must be non-zero and unique among
    /// the caller's sessions (0 is replaced by 1); `seed` feeds the
    /// transmission jitter.
    pub fn new(cfg: SessionConfig, local_disc: u32, seed: u64) -> Session {
        let mut s = Session {
            cfg: SessionConfig::default(),
            state: State::Down,
            remote_state: State::Down,
            local_disc: local_disc.max(1),
            remote_disc: 0,
            diag: Diag::None,
            remote_diag: Diag::None,
            remote_demand: false,
            adv_tx_us: SLOW_TX_US,
            adv_rx_us: 0,
            tx_eff_us: SLOW_TX_US,
            rx_eff_us: 0,
            // §6.8.1: bfd.RemoteMinRxInterval starts at 1.
            remote_min_rx_us: 1,
            remote_desired_tx_us: 0,
            remote_detect_mult: 0,
            polling: false,
            poll_pending: false,
            last_tx: None,
            next_tx: Instant::ZERO,
            detect_at: None,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15 | 1,
        };
        s.cfg = clean(cfg);
        s.apply_params(Instant::ZERO);
        s
    }

    /// `bfd.SessionState`.
    pub fn state(&self) -> State {
        self.state
    }
    /// `bfd.RemoteSessionState`.
    pub fn remote_state(&self) -> State {
        self.remote_state
    }
    /// `bfd.LocalDiag`.
    pub fn diag(&self) -> Diag {
        self.diag
    }
    /// The Diag of the last packet received.
    pub fn remote_diag(&self) -> Diag {
        self.remote_diag
    }
    /// `bfd.LocalDiscr`.
    pub fn local_disc(&self) -> u32 {
        self.local_disc
    }
    /// `bfd.RemoteDiscr` (0 until a packet arrives, and again after a
    /// Detection Time without one).
    pub fn remote_disc(&self) -> u32 {
        self.remote_disc
    }
    /// The configuration.
    pub fn config(&self) -> SessionConfig {
        self.cfg
    }
    /// A Poll Sequence is running.
    pub fn polling(&self) -> bool {
        self.polling
    }
    /// The interval between our periodic packets before jitter:
    /// `max(bfd.DesiredMinTxInterval, bfd.RemoteMinRxInterval)` (§6.8.7);
    /// `None` when the peer asked for none (Required Min RX 0).
    pub fn tx_interval(&self) -> Option<Duration> {
        (self.remote_min_rx_us != 0)
            .then(|| Duration::from_micros(u64::from(self.tx_eff_us.max(self.remote_min_rx_us))))
    }
    /// The Detection Time in asynchronous mode (§6.8.4): the remote's
    /// Detect Mult times `max(bfd.RequiredMinRxInterval, last received
    /// Desired Min TX)`; zero before any packet arrived.
    pub fn detection_time(&self) -> Duration {
        let per = u64::from(self.rx_eff_us.max(self.remote_desired_tx_us));
        Duration::from_micros(per.saturating_mul(u64::from(self.remote_detect_mult)))
    }
    /// The earliest time [`Session::poll`] has something to do.
    pub fn next_deadline(&self) -> Instant {
        match self.detect_at {
            Some(d) => d.min(self.next_tx),
            None => self.next_tx,
        }
    }

    fn rand_percent(&mut self, lo: u64, hi: u64) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        lo + (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % (hi - lo + 1)
    }

    /// The next periodic transmission: the interval less 0-25 % (0-10 %
    /// more, i.e. 75-90 %, when Detect Mult is 1), §6.8.7.
    fn jittered(&mut self) -> Option<Duration> {
        let base = self.tx_interval()?;
        let pct = if self.cfg.detect_mult == 1 {
            self.rand_percent(75, 90)
        } else {
            self.rand_percent(75, 100)
        };
        let ns = base.as_nanos().saturating_mul(u128::from(pct)) / 100;
        Some(Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)))
    }

    fn packet(&self, poll: bool, final_: bool) -> ControlPacket {
        ControlPacket {
            diag: self.diag,
            state: self.state,
            poll,
            final_,
            cpi: false,
            demand: false,
            detect_mult: self.cfg.detect_mult,
            my_disc: self.local_disc,
            your_disc: self.remote_disc,
            desired_min_tx_us: self.adv_tx_us,
            required_min_rx_us: self.adv_rx_us,
            required_min_echo_rx_us: 0,
            auth: None,
        }
    }

    /// Periodic packets stop while the remote is in Demand mode and both
    /// ends are Up, unless we poll (§6.8.7).
    fn periodic_allowed(&self) -> bool {
        !(self.remote_demand
            && self.state == State::Up
            && self.remote_state == State::Up
            && !self.polling)
    }

    /// Makes the advertised and effective intervals follow the
    /// configuration and the state, with a Poll Sequence when Up (§6.8.3).
    fn apply_params(&mut self, now: Instant) {
        let cfg_tx = us(self.cfg.desired_min_tx).max(1);
        let want_tx = if self.state == State::Up {
            cfg_tx
        } else {
            cfg_tx.max(SLOW_TX_US)
        };
        let want_rx = us(self.cfg.required_min_rx);
        if (want_tx, want_rx) == (self.adv_tx_us, self.adv_rx_us) {
            return;
        }
        if self.state != State::Up {
            self.adv_tx_us = want_tx;
            self.adv_rx_us = want_rx;
            self.tx_eff_us = want_tx;
            self.rx_eff_us = want_rx;
            return;
        }
        if self.polling {
            self.poll_pending = true;
            return;
        }
        // A faster transmission and a longer detection time are safe at
        // once; the others wait for the Final.
        self.tx_eff_us = self.tx_eff_us.min(want_tx);
        self.rx_eff_us = self.rx_eff_us.max(want_rx);
        self.adv_tx_us = want_tx;
        self.adv_rx_us = want_rx;
        self.polling = true;
        self.poll_pending = false;
        // Start polling with the next packet, now.
        self.next_tx = now;
    }

    fn end_poll(&mut self, now: Instant) {
        if !self.polling {
            return;
        }
        self.polling = false;
        self.tx_eff_us = self.adv_tx_us;
        self.rx_eff_us = self.adv_rx_us;
        if std::mem::take(&mut self.poll_pending) {
            self.apply_params(now);
        }
        self.reschedule();
    }

    /// After an interval changed: the next packet no later than one new
    /// (jittered) interval after the last one.
    fn reschedule(&mut self) {
        if let (Some(last), Some(j)) = (self.last_tx, self.jittered()) {
            self.next_tx = self.next_tx.min(last + j);
        }
    }

    fn set_state(&mut self, now: Instant, to: State, diag: Diag) -> Transition {
        let from = self.state;
        self.state = to;
        self.diag = if to == State::Up { Diag::None } else { diag };
        if from == State::Up || to == State::Up {
            // Leaving Up abandons a Poll Sequence; either way the
            // advertised intervals change (§6.8.3).
            if to != State::Up {
                self.polling = false;
                self.poll_pending = false;
            }
            self.apply_params(now);
        }
        Transition {
            from,
            to,
            diag: self.diag,
        }
    }

    fn transmit(&mut self, now: Instant, final_: bool) -> ControlPacket {
        let p = self.packet(self.polling && !final_, final_);
        self.last_tx = Some(now);
        if !final_ {
            self.next_tx = match self.jittered() {
                Some(j) => now + j,
                // The peer wants no packets: look again after our own
                // interval, in case it changes its mind.
                None => now + Duration::from_micros(u64::from(self.tx_eff_us)),
            };
        }
        p
    }

    /// §6.8.6 for a packet that passed [`ControlPacket::decode`] and was
    /// demultiplexed to this session.
    pub fn receive(&mut self, now: Instant, p: &ControlPacket) -> Step {
        let mut step = Step::default();
        if p.auth.is_some() {
            step.discard = Some(Discard::Authentication);
            return step;
        }
        if p.your_disc != 0 && p.your_disc != self.local_disc {
            step.discard = Some(Discard::YourDiscriminator);
            return step;
        }
        let old_interval = self.tx_interval();
        self.remote_disc = p.my_disc;
        self.remote_state = p.state;
        self.remote_diag = p.diag;
        self.remote_demand = p.demand;
        self.remote_min_rx_us = p.required_min_rx_us;
        self.remote_desired_tx_us = p.desired_min_tx_us;
        self.remote_detect_mult = p.detect_mult;
        if p.final_ {
            self.end_poll(now);
        }
        if self.tx_interval() != old_interval {
            self.reschedule();
        }
        let dt = self.detection_time();
        self.detect_at = Some(now + dt);
        if self.state == State::AdminDown {
            step.discard = Some(Discard::AdminDown);
            return step;
        }
        let to = match (self.state, p.state) {
            (s, State::AdminDown) if s != State::Down => Some((State::Down, Diag::NeighborDown)),
            (State::Down, State::Down) => Some((State::Init, Diag::None)),
            (State::Down, State::Init) => Some((State::Up, Diag::None)),
            (State::Init, State::Init | State::Up) => Some((State::Up, Diag::None)),
            (State::Up, State::Down) => Some((State::Down, Diag::NeighborDown)),
            _ => None,
        };
        if let Some((to, diag)) = to {
            step.transition = Some(self.set_state(now, to, diag));
        }
        if p.poll {
            // §6.8.7: answer at once, without respecting the timer, with F
            // and without P.
            step.send = Some(self.transmit(now, true));
        } else if step.transition.is_some() {
            step.send = Some(self.transmit(now, false));
        }
        step
    }

    /// Timers: the Detection Time (§6.8.4) and periodic transmission
    /// (§6.8.7). Call when [`Session::next_deadline`] is reached; calling
    /// earlier does nothing.
    pub fn poll(&mut self, now: Instant) -> Step {
        let mut step = Step::default();
        if let Some(d) = self.detect_at {
            if d <= now {
                self.detect_at = None;
                self.remote_disc = 0;
                if matches!(self.state, State::Init | State::Up) {
                    step.transition =
                        Some(self.set_state(now, State::Down, Diag::DetectionTimeExpired));
                }
            }
        }
        if now >= self.next_tx || step.transition.is_some() {
            if self.periodic_allowed() || step.transition.is_some() {
                step.send = Some(self.transmit(now, false));
            } else {
                self.next_tx = now + Duration::from_micros(u64::from(self.tx_eff_us));
            }
        }
        step
    }

    /// Administrative control (§6.8.16): `true` puts the session in
    /// AdminDown (Diag 7) and tells the peer; `false` brings it back to
    /// Down. Does nothing when already there.
    pub fn set_admin_down(&mut self, now: Instant, down: bool) -> Step {
        let mut step = Step::default();
        if down == (self.state == State::AdminDown) {
            return step;
        }
        let t = if down {
            self.set_state(now, State::AdminDown, Diag::AdminDown)
        } else {
            self.set_state(now, State::Down, self.diag)
        };
        step.transition = Some(t);
        step.send = Some(self.transmit(now, false));
        step
    }

    /// New intervals or multiplier. While Up a Poll Sequence announces
    /// them (§6.8.3); the multiplier applies at once.
    pub fn set_config(&mut self, now: Instant, cfg: SessionConfig) {
        self.cfg = clean(cfg);
        self.apply_params(now);
    }
}

fn clean(mut c: SessionConfig) -> SessionConfig {
    c.detect_mult = c.detect_mult.max(1);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn fast() -> SessionConfig {
        SessionConfig {
            desired_min_tx: ms(10),
            required_min_rx: ms(10),
            detect_mult: 3,
        }
    }

    /// Two sessions over a lossless wire with zero delay, stepped by
    /// deadlines; `drop_b_after`: b stops sending from then on.
    struct Pair {
        a: Session,
        b: Session,
        now: Instant,
        a_changes: Vec<(Instant, Transition)>,
    }

    impl Pair {
        fn new(ca: SessionConfig, cb: SessionConfig) -> Pair {
            Pair {
                a: Session::new(ca, 11, 1),
                b: Session::new(cb, 22, 2),
                now: Instant::ZERO,
                a_changes: Vec::new(),
            }
        }
        fn run_until(&mut self, end: Instant, b_alive: bool) {
            while self.now < end {
                let mut t = self.a.next_deadline();
                if b_alive {
                    t = t.min(self.b.next_deadline());
                }
                let t = t.max(self.now);
                if t > end {
                    self.now = end;
                    break;
                }
                self.now = t;
                let mut to_b = vec![];
                let mut to_a = vec![];
                let s = self.a.poll(t);
                if let Some(tr) = s.transition {
                    self.a_changes.push((t, tr));
                }
                to_b.extend(s.send);
                if b_alive {
                    to_a.extend(self.b.poll(t).send);
                }
                // Deliver until quiet (P/F answers, state-change packets).
                for _ in 0..8 {
                    if to_a.is_empty() && to_b.is_empty() {
                        break;
                    }
                    let mut na = vec![];
                    let mut nb = vec![];
                    for p in to_b.drain(..) {
                        if b_alive {
                            na.extend(self.b.receive(t, &p).send);
                        }
                    }
                    for p in to_a.drain(..) {
                        let s = self.a.receive(t, &p);
                        if let Some(tr) = s.transition {
                            self.a_changes.push((t, tr));
                        }
                        nb.extend(s.send);
                    }
                    to_a = na;
                    to_b = nb;
                }
            }
        }
    }

    #[test]
    fn comes_up_then_negotiates_fast_timers_with_poll() {
        let mut p = Pair::new(fast(), fast());
        p.run_until(Instant::from_secs(3), true);
        assert_eq!((p.a.state(), p.b.state()), (State::Up, State::Up));
        assert!(!p.a.polling() && !p.b.polling());
        assert_eq!(p.a.tx_interval(), Some(ms(10)));
        assert_eq!(p.a.detection_time(), ms(30));
    }

    #[test]
    fn detects_a_silent_peer_within_detection_time() {
        let mut p = Pair::new(fast(), fast());
        p.run_until(Instant::from_secs(3), true);
        let stop = p.now;
        p.run_until(Instant::from_secs(4), false);
        let (t, tr) = *p.a_changes.last().unwrap();
        assert_eq!(
            (tr.from, tr.to, tr.diag),
            (State::Up, State::Down, Diag::DetectionTimeExpired)
        );
        let took = t.since(stop);
        assert!(took <= ms(30), "{took:?}");
        assert!(took >= ms(20), "{took:?}");
    }

    #[test]
    fn jitter_stays_in_bounds() {
        for mult in [1u8, 3] {
            let mut s = Session::new(
                SessionConfig {
                    detect_mult: mult,
                    ..fast()
                },
                1,
                mult as u64,
            );
            let hi = if mult == 1 { 900 } else { 1000 };
            let mut seen = (u64::MAX, 0);
            for _ in 0..2000 {
                let j = s.jittered().unwrap().as_micros() as u64;
                seen = (seen.0.min(j), seen.1.max(j));
                // not Up: 1 s slow rate.
                assert!((750_000..=hi * 1000).contains(&j), "{j}");
            }
            assert!(seen.0 < 760_000 && seen.1 > (hi - 10) * 1000, "{seen:?}");
        }
    }

    #[test]
    fn admin_down_tells_the_peer() {
        let mut p = Pair::new(fast(), fast());
        p.run_until(Instant::from_secs(3), true);
        let now = p.now;
        let s = p.b.set_admin_down(now, true);
        let pk = s.send.unwrap();
        assert_eq!((pk.state, pk.diag), (State::AdminDown, Diag::AdminDown));
        let r = p.a.receive(now, &pk);
        assert_eq!(r.transition.unwrap().diag, Diag::NeighborDown);
        p.b.set_admin_down(now, false);
        p.run_until(Instant::from_secs(6), true);
        assert_eq!((p.a.state(), p.b.state()), (State::Up, State::Up));
    }

    #[test]
    fn slower_timers_wait_for_final() {
        let mut p = Pair::new(fast(), fast());
        p.run_until(Instant::from_secs(3), true);
        let slow = SessionConfig {
            desired_min_tx: ms(100),
            required_min_rx: ms(100),
            detect_mult: 3,
        };
        p.a.set_config(p.now, slow);
        assert!(p.a.polling());
        // Until the Final, a keeps its 10 ms tx rate.
        assert_eq!(p.a.tx_interval(), Some(ms(10)));
        p.run_until(p.now + ms(50), true);
        assert!(!p.a.polling());
        assert_eq!(p.a.tx_interval(), Some(ms(100)));
        assert_eq!(p.b.detection_time(), ms(300));
        assert_eq!((p.a.state(), p.b.state()), (State::Up, State::Up));
    }
}
