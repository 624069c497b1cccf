//! The FSM object: state, timers, counters, and the shared steps of the
//! RFC 4271 §8.2.2 transition tables (the tables themselves are in
//! `states.rs`).

use std::time::Duration;

use base::Instant;
use bgp_wire::consts::notify;
use bgp_wire::{NotificationMessage, OpenMessage};

use crate::action::{Action, DownReason};
use crate::config::{ConnectionMode, SessionConfig};
use crate::event::{Event, EventKind};
use crate::negotiate::Negotiated;
use crate::timers::{Jitter, Timer, Timers};

/// RFC 4271 §8.2.2 states.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// No resources held; waits for a start event.
    Idle,
    /// Waiting for our outgoing TCP connection to complete.
    Connect,
    /// Listening for the peer's connection.
    Active,
    /// Our OPEN sent, waiting for the peer's.
    OpenSent,
    /// OPENs exchanged, waiting for the first KEEPALIVE.
    OpenConfirm,
    /// The session is up.
    Established,
}

/// What happens to the ConnectRetryCounter on the way to Idle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    Keep,
    Increment,
    /// Only ManualStop (RFC 4271 §8.2.2) resets it.
    Zero,
}

/// One BGP peer's finite state machine (RFC 4271 §8).
///
/// Pure: no sockets, no clock, no threads, no randomness. Every entry
/// point takes the current [`Instant`] and a [`Jitter`] value and appends
/// [`Action`]s to a caller-owned `Vec` (reuse it across calls). Invalid
/// events never fail: per the RFC they lead to a NOTIFICATION and Idle, or
/// are ignored.
///
/// Timers: the FSM keeps their deadlines. Sleep until
/// [`Fsm::next_deadline`] and call [`Fsm::on_timer`]; it fires the expired
/// timers as events 9-13.
#[derive(Clone, Debug)]
pub struct Fsm {
    pub(crate) cfg: SessionConfig,
    pub(crate) open: OpenMessage,
    pub(crate) state: State,
    pub(crate) timers: Timers,
    pub(crate) connect_retry_counter: u32,
    /// A TCP connection is held (events 16/17 accepted and not dropped).
    pub(crate) conn: bool,
    pub(crate) negotiated: Option<Negotiated>,
    pub(crate) last_down: Option<DownReason>,
    /// Damping: flaps since the last stable period, and the start events
    /// (passive or not) waiting for the IdleHoldTimer.
    pub(crate) flaps: u32,
    pub(crate) pending_start: Option<bool>,
    pub(crate) established_at: Option<Instant>,
    /// Set for the duration of one call.
    pub(crate) now: Instant,
    pub(crate) jitter: Jitter,
}

impl Fsm {
    /// A new FSM in Idle.
    pub fn new(cfg: SessionConfig) -> Fsm {
        let open = cfg.open_message();
        Fsm {
            cfg,
            open,
            state: State::Idle,
            timers: Timers::default(),
            connect_retry_counter: 0,
            conn: false,
            negotiated: None,
            last_down: None,
            flaps: 0,
            pending_start: None,
            established_at: None,
            now: Instant::ZERO,
            jitter: Jitter::NONE,
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The configuration the FSM was built with.
    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    /// The OPEN to send when [`Action::SendOpen`] comes out.
    pub fn open_message(&self) -> &OpenMessage {
        &self.open
    }

    /// The ConnectRetryCounter (RFC 4271 §8).
    pub fn connect_retry_counter(&self) -> u32 {
        self.connect_retry_counter
    }

    /// The negotiated parameters, from OpenConfirm on.
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    /// Whether the FSM believes it holds a TCP connection.
    pub fn holds_connection(&self) -> bool {
        self.conn
    }

    /// The deadline of one timer, if it runs.
    pub fn timer(&self, t: Timer) -> Option<Instant> {
        self.timers.get(t)
    }

    /// When [`Fsm::on_timer`] must next be called.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// Why the FSM last went to Idle.
    pub fn last_down_reason(&self) -> Option<DownReason> {
        self.last_down
    }

    /// Whether the runtime should accept an incoming connection for this
    /// peer now: never in Idle (§8.2.2 "refuses all incoming BGP
    /// connections") nor in [`ConnectionMode::ActiveOnly`].
    pub fn accepts_incoming(&self) -> bool {
        self.state != State::Idle && self.cfg.connection_mode != ConnectionMode::ActiveOnly
    }

    /// The start event that matches the configuration: manual or automatic,
    /// passive or not, damped or not (RFC 4271 §8.1.2).
    pub fn start_event(&self, manual: bool) -> Event {
        let passive = self.cfg.connection_mode == ConnectionMode::Passive;
        match (manual, passive, self.cfg.damp.is_some()) {
            (true, false, _) => Event::ManualStart,
            (true, true, _) => Event::ManualStartWithPassiveTcpEstablishment,
            (false, false, false) => Event::AutomaticStart,
            (false, true, false) => Event::AutomaticStartWithPassiveTcpEstablishment,
            (false, false, true) => Event::AutomaticStartWithDampPeerOscillations,
            (false, true, true) => {
                Event::AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment
            }
        }
    }

    /// The IdleHoldTimer value the next damped automatic start will use:
    /// IdleHoldTime doubled per flap, capped.
    pub fn idle_hold_time(&self) -> Duration {
        let Some(d) = self.cfg.damp else {
            return Duration::ZERO;
        };
        let shift = self.flaps.saturating_sub(1).min(32);
        d.idle_hold_time
            .checked_mul(1u32 << shift.min(31))
            .unwrap_or(d.max_idle_hold_time)
            .min(d.max_idle_hold_time)
    }

    /// Feeds one event. Actions are appended to `out`.
    pub fn handle(&mut self, now: Instant, jitter: Jitter, ev: Event, out: &mut Vec<Action>) {
        self.now = now;
        self.jitter = jitter;
        // Events 19 and 20 differ only by the DelayOpenTimer (§8.1.5).
        let ev = match ev {
            Event::BgpOpen(o) | Event::BgpOpenWithDelayOpenTimerRunning(o) => {
                if self.timers.is_running(Timer::DelayOpen) {
                    Event::BgpOpenWithDelayOpenTimerRunning(o)
                } else {
                    Event::BgpOpen(o)
                }
            }
            e => e,
        };
        match self.state {
            State::Idle => self.idle(ev, out),
            State::Connect => self.connect(ev, out),
            State::Active => self.active(ev, out),
            State::OpenSent => self.open_sent(ev, out),
            State::OpenConfirm => self.open_confirm(ev, out),
            State::Established => self.established(ev, out),
        }
    }

    /// Fires every timer whose deadline is at or before `now`, earliest
    /// first, as its RFC event.
    pub fn on_timer(&mut self, now: Instant, jitter: Jitter, out: &mut Vec<Action>) {
        // Each firing stops its timer; a restarted timer lies in the
        // future, so this terminates. The bound is belt and braces.
        for _ in 0..16 {
            let Some(t) = self.timers.expired(now) else {
                return;
            };
            self.timers.stop(t);
            let ev = match t {
                Timer::ConnectRetry => Event::ConnectRetryTimerExpires,
                Timer::Hold => Event::HoldTimerExpires,
                Timer::Keepalive => Event::KeepaliveTimerExpires,
                Timer::DelayOpen => Event::DelayOpenTimerExpires,
                Timer::IdleHold => Event::IdleHoldTimerExpires,
            };
            self.handle(now, jitter, ev, out);
        }
    }

    /// Tell the FSM an UPDATE was sent: §8.2.2 Established restarts the
    /// KeepaliveTimer "each time the local system sends a KEEPALIVE or
    /// UPDATE message" (unless the hold time is zero).
    pub fn on_update_sent(&mut self, now: Instant, jitter: Jitter) {
        self.now = now;
        self.jitter = jitter;
        if self.state == State::Established {
            self.restart_keepalive();
        }
    }

    // ---- shared steps -------------------------------------------------

    pub(crate) fn start_connect_retry(&mut self) {
        let d = self.jitter.apply(self.cfg.connect_retry_time);
        self.timers.start(Timer::ConnectRetry, self.now, d);
    }

    pub(crate) fn start_delay_open(&mut self) {
        let d = self.cfg.delay_open.unwrap_or(Duration::ZERO);
        self.timers.start(Timer::DelayOpen, self.now, d);
    }

    /// §8.2.2: "sets the HoldTimer to a large value" on sending OPEN.
    pub(crate) fn send_open(&mut self, out: &mut Vec<Action>) {
        out.push(Action::SendOpen);
        self.timers
            .start(Timer::Hold, self.now, self.cfg.open_hold_time);
    }

    pub(crate) fn negotiated_hold(&self) -> u16 {
        self.negotiated.as_ref().map_or(0, |n| n.hold_time)
    }

    pub(crate) fn restart_hold(&mut self) {
        let h = self.negotiated_hold();
        if h == 0 {
            self.timers.stop(Timer::Hold);
        } else {
            self.timers
                .start(Timer::Hold, self.now, Duration::from_secs(u64::from(h)));
        }
    }

    pub(crate) fn restart_keepalive(&mut self) {
        match self.negotiated.as_ref().map_or(0, |n| n.keepalive_interval) {
            // Hold time 0 (or < 3): no KEEPALIVEs at all (RFC 4271 §4.4).
            0 => self.timers.stop(Timer::Keepalive),
            k => {
                let d = self.jitter.apply(Duration::from_secs(u64::from(k)));
                self.timers.start(Timer::Keepalive, self.now, d);
            }
        }
    }

    pub(crate) fn notify(&mut self, out: &mut Vec<Action>, n: NotificationMessage) {
        out.push(Action::SendNotification(n));
    }

    pub(crate) fn cease(&mut self, out: &mut Vec<Action>, subcode: u8) {
        self.notify(
            out,
            NotificationMessage::new(notify::CEASE, subcode, Vec::new()),
        );
    }

    /// 5/x; RFC 6608 subcodes for unexpected messages.
    pub(crate) fn fsm_error(&mut self, out: &mut Vec<Action>, kind: EventKind) {
        let sub = match (kind.is_message(), self.state) {
            (true, State::OpenSent) => 1,
            (true, State::OpenConfirm) => 2,
            (true, State::Established) => 3,
            _ => notify::UNSPECIFIC,
        };
        self.notify(
            out,
            NotificationMessage::new(notify::FSM_ERROR, sub, Vec::new()),
        );
    }

    /// Peer oscillation damping (§8.1.1 DampPeerOscillations): count a
    /// flap unless the last Established period was stable.
    pub(crate) fn damp(&mut self) {
        let Some(d) = self.cfg.damp else {
            return;
        };
        if let Some(t) = self.established_at {
            if self.now.since(t) >= d.stable_time {
                self.flaps = 0;
            }
        }
        self.flaps = self.flaps.saturating_add(1);
    }

    /// The common tail of every transition to Idle: releases all BGP
    /// resources (all timers but IdleHold stop; the RFC's "restarts the
    /// ConnectRetryTimer" in Active/event 18 would only be ignored in
    /// Idle), optionally drops the connection, updates the counter and
    /// damping, and reports a lost Established session.
    pub(crate) fn go_idle(
        &mut self,
        out: &mut Vec<Action>,
        reason: DownReason,
        counter: Counter,
        drop: bool,
        damp: bool,
    ) {
        for t in [
            Timer::ConnectRetry,
            Timer::Hold,
            Timer::Keepalive,
            Timer::DelayOpen,
        ] {
            self.timers.stop(t);
        }
        if drop {
            out.push(Action::DropTcpConnection);
        }
        match counter {
            Counter::Keep => {}
            Counter::Increment => {
                self.connect_retry_counter = self.connect_retry_counter.saturating_add(1)
            }
            Counter::Zero => self.connect_retry_counter = 0,
        }
        if damp {
            self.damp();
        }
        if self.state == State::Established {
            out.push(Action::SessionDown(reason));
        }
        self.established_at = None;
        self.negotiated = None;
        self.conn = false;
        self.last_down = Some(reason);
        self.state = State::Idle;
    }
}
