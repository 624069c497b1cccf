//! The RFC 4271 §8.2.2 transition tables, one function per state.
//!
//! Each arm quotes the RFC step list in order. Deviations are marked
//! "Tessera:" with the reason.

use bgp_wire::consts::notify;
use bgp_wire::NotificationMessage;

use crate::action::{Action, DownReason};
use crate::config::ConnectionMode;
use crate::event::Event;
use crate::fsm::{Counter, Fsm, State};
use crate::negotiate::negotiate;
use crate::timers::Timer;

use Event as E;

fn msg_reason(n: &NotificationMessage) -> DownReason {
    DownReason::MessageError {
        code: n.code,
        subcode: n.subcode,
    }
}

const VER_ERR: DownReason = DownReason::NotificationReceived {
    code: notify::OPEN_MESSAGE_ERROR,
    subcode: notify::UNSUPPORTED_VERSION_NUMBER,
};

impl Fsm {
    fn is_start(&self, ev: &Event) -> bool {
        ev.kind().is_start()
    }

    fn automatic_start_allowed(&self, ev: &Event) -> bool {
        !matches!(
            ev,
            E::AutomaticStart
                | E::AutomaticStartWithPassiveTcpEstablishment
                | E::AutomaticStartWithDampPeerOscillations
                | E::AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment
        ) || self.cfg.allow_automatic_start
    }

    /// Idle, events 1 and 3-5: "initializes all BGP resources, sets the
    /// ConnectRetryCounter to zero, starts the ConnectRetryTimer with the
    /// initial value, [initiates a TCP connection to the other BGP peer,]
    /// listens for a connection that may be initiated by the remote BGP
    /// peer, and changes its state to Connect [Active]."
    fn start(&mut self, passive: bool, out: &mut Vec<Action>) {
        let passive = passive || self.cfg.connection_mode == ConnectionMode::Passive;
        self.pending_start = None;
        self.timers.stop(Timer::IdleHold);
        self.connect_retry_counter = 0;
        self.start_connect_retry();
        if passive {
            self.state = State::Active;
        } else {
            out.push(Action::InitiateTcpConnection);
            self.state = State::Connect;
        }
    }

    /// §8.2.2 Idle state.
    pub(crate) fn idle(&mut self, ev: Event, out: &mut Vec<Action>) {
        if !self.automatic_start_allowed(&ev) {
            // §8.1.1 AllowAutomaticStart FALSE: these events do not occur.
            return;
        }
        match ev {
            E::ManualStart | E::AutomaticStart => self.start(false, out),
            E::ManualStartWithPassiveTcpEstablishment
            | E::AutomaticStartWithPassiveTcpEstablishment => self.start(true, out),
            // Events 6, 7 and 13: "the local system will use these events to
            // prevent peer oscillations"; the method is ours: hold the
            // start for the (backed-off) IdleHoldTime.
            E::AutomaticStartWithDampPeerOscillations
            | E::AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment => {
                let passive = !matches!(ev, E::AutomaticStartWithDampPeerOscillations);
                if self.cfg.damp.is_none() {
                    self.start(passive, out);
                } else {
                    self.pending_start = Some(passive);
                    if !self.timers.is_running(Timer::IdleHold) {
                        let d = self.idle_hold_time();
                        self.timers.start(Timer::IdleHold, self.now, d);
                    }
                }
            }
            E::IdleHoldTimerExpires => {
                if let Some(passive) = self.pending_start.take() {
                    self.start(passive, out);
                }
            }
            // "The ManualStop event and AutomaticStop event are ignored in
            // the Idle state." Tessera: they also cancel a damped start
            // that is waiting for the IdleHoldTimer (nothing is emitted),
            // and an operator's ManualStop forgets past flaps.
            E::ManualStop => {
                self.pending_start = None;
                self.timers.stop(Timer::IdleHold);
                self.flaps = 0;
            }
            E::AutomaticStop if self.cfg.allow_automatic_stop => {
                self.pending_start = None;
                self.timers.stop(Timer::IdleHold);
            }
            // "Any other event (Events 9-12, 15-28) received in the Idle
            // state does not cause change in the state of the local
            // system." Incoming connections are refused (the runtime sees
            // `accepts_incoming() == false`).
            _ => {}
        }
    }

    /// Events 20 in Connect/Active and 19 in OpenSent: check the OPEN and
    /// negotiate. `Err` carries the event-22 NOTIFICATION.
    fn accept_open(&mut self, open: &bgp_wire::OpenMessage) -> Result<(), NotificationMessage> {
        match negotiate(&self.cfg, &self.open, open) {
            Ok(n) => {
                self.negotiated = Some(n);
                Ok(())
            }
            Err(e) => Err(e.notification(&self.cfg)),
        }
    }

    /// "... sends a KEEPALIVE message, and if the HoldTimer initial value
    /// is non-zero, starts the KeepaliveTimer with the initial value and
    /// resets the HoldTimer to the negotiated value, else ... resets the
    /// KeepaliveTimer and the HoldTimer values to zero, and changes its
    /// state to OpenConfirm."
    fn enter_open_confirm(&mut self, out: &mut Vec<Action>) {
        out.push(Action::SendKeepalive);
        self.restart_keepalive();
        self.restart_hold();
        self.state = State::OpenConfirm;
    }

    /// Connect/Active, event 20.
    fn delayed_open(&mut self, open: &bgp_wire::OpenMessage, out: &mut Vec<Action>) {
        match self.accept_open(open) {
            Ok(()) => {
                // "stops the ConnectRetryTimer (if running) and sets the
                // ConnectRetryTimer to zero, completes the BGP
                // initialization, stops and clears the DelayOpenTimer, sends
                // an OPEN message, sends a KEEPALIVE message, ..."
                self.timers.stop(Timer::ConnectRetry);
                self.timers.stop(Timer::DelayOpen);
                self.send_open(out);
                self.enter_open_confirm(out);
            }
            Err(n) => self.open_err_before_open_sent(n, out),
        }
    }

    /// Connect/Active, events 21 and 22: "(optionally) If the
    /// SendNOTIFICATIONwithoutOPEN attribute is set to TRUE, then the local
    /// system first sends a NOTIFICATION message with the appropriate error
    /// code, and then stops the ConnectRetryTimer (if running) and sets the
    /// ConnectRetryTimer to zero, releases all BGP resources, drops the TCP
    /// connection, increments the ConnectRetryCounter by 1, (optionally)
    /// performs peer oscillation damping ..., and changes its state to
    /// Idle."
    fn open_err_before_open_sent(&mut self, n: NotificationMessage, out: &mut Vec<Action>) {
        let reason = msg_reason(&n);
        if self.cfg.send_notification_without_open {
            self.notify(out, n);
        }
        self.go_idle(out, reason, Counter::Increment, true, true);
    }

    /// Connect/Active, event 24: with the DelayOpenTimer running the
    /// counter is left alone and no damping happens; otherwise both.
    fn ver_err_before_open_sent(&mut self, out: &mut Vec<Action>) {
        if self.timers.is_running(Timer::DelayOpen) {
            self.go_idle(out, VER_ERR, Counter::Keep, true, false);
        } else {
            self.go_idle(out, VER_ERR, Counter::Increment, true, true);
        }
    }

    /// Events 16/17 in Connect and Active.
    fn connection_up(&mut self, out: &mut Vec<Action>) {
        self.conn = true;
        // "stops the ConnectRetryTimer (if running) and sets the
        // ConnectRetryTimer to zero"
        self.timers.stop(Timer::ConnectRetry);
        if self.cfg.delay_open.is_some() {
            // "sets the DelayOpenTimer to the initial value, and stays in
            // the Connect [Active] state"
            self.start_delay_open();
        } else {
            // "completes BGP initialization, sends the OPEN message to its
            // peer, sets the HoldTimer to a large value, and changes its
            // state to OpenSent."
            self.send_open(out);
            self.state = State::OpenSent;
        }
    }

    /// Tessera: in ActiveOnly mode an incoming connection (event 17) is
    /// handled as an invalid connection request (event 15).
    fn refuse_incoming(&self, ev: &Event) -> bool {
        matches!(ev, E::TcpConnectionConfirmed)
            && self.cfg.connection_mode == ConnectionMode::ActiveOnly
    }

    /// §8.2.2 Connect state.
    pub(crate) fn connect(&mut self, ev: Event, out: &mut Vec<Action>) {
        if self.is_start(&ev) || self.refuse_incoming(&ev) {
            // "the start events (Events 1, 3-7) are ignored"
            return;
        }
        match ev {
            // "drops the TCP connection, releases all BGP resources, sets
            // ConnectRetryCounter to zero, stops the ConnectRetryTimer and
            // sets ConnectRetryTimer to zero, and changes its state to
            // Idle."
            E::ManualStop => self.go_idle(out, DownReason::ManualStop, Counter::Zero, true, false),
            // "drops the TCP connection, restarts the ConnectRetryTimer,
            // stops the DelayOpenTimer and resets the timer to zero,
            // initiates a TCP connection to the other BGP peer, continues to
            // listen ..., and stays in the Connect state."
            E::ConnectRetryTimerExpires => {
                out.push(Action::DropTcpConnection);
                self.conn = false;
                self.start_connect_retry();
                self.timers.stop(Timer::DelayOpen);
                out.push(Action::InitiateTcpConnection);
            }
            // "sends an OPEN message to its peer, sets the HoldTimer to a
            // large value, and changes its state to OpenSent."
            E::DelayOpenTimerExpires => {
                self.send_open(out);
                self.state = State::OpenSent;
            }
            // "the TCP connection is processed, and the connection remains
            // in the Connect state" / "the local system rejects the TCP
            // connection and remains in the Connect State."
            E::TcpConnectionValid | E::TcpCrInvalid => {}
            E::TcpCrAcked | E::TcpConnectionConfirmed => self.connection_up(out),
            E::TcpConnectionFails => {
                if self.timers.is_running(Timer::DelayOpen) {
                    // "restarts the ConnectRetryTimer with the initial
                    // value, stops the DelayOpenTimer and resets its value
                    // to zero, continues to listen ..., and changes its
                    // state to Active."
                    self.conn = false;
                    self.start_connect_retry();
                    self.timers.stop(Timer::DelayOpen);
                    self.state = State::Active;
                } else {
                    // "stops the ConnectRetryTimer to zero, drops the TCP
                    // connection, releases all BGP resources, and changes
                    // its state to Idle."
                    self.go_idle(
                        out,
                        DownReason::TcpConnectionFails,
                        Counter::Keep,
                        true,
                        false,
                    )
                }
            }
            E::BgpOpenWithDelayOpenTimerRunning(o) => self.delayed_open(&o, out),
            E::BgpHeaderErr(n) | E::BgpOpenMsgErr(n) => self.open_err_before_open_sent(n, out),
            E::NotifMsgVerErr => self.ver_err_before_open_sent(out),
            // "In response to any other events (Events 8, 10-11, 13, 19,
            // 23, 25-28), the local system: if the ConnectRetryTimer is
            // running, stops and resets the ConnectRetryTimer (sets to
            // zero), if the DelayOpenTimer is running, stops and resets the
            // DelayOpenTimer (sets to zero), releases all BGP resources,
            // drops the TCP connection, increments the ConnectRetryCounter
            // by 1, performs peer oscillation damping if the
            // DampPeerOscillations attribute is set to True, and changes its
            // state to Idle."
            other => self.any_other_before_open_sent(other, out),
        }
    }

    fn any_other_before_open_sent(&mut self, ev: Event, out: &mut Vec<Action>) {
        let kind = ev.kind();
        if matches!(ev, E::AutomaticStop) {
            if !self.cfg.allow_automatic_stop {
                return; // §8.1.1 AllowAutomaticStop FALSE
            }
            self.go_idle(
                out,
                DownReason::AutomaticStop,
                Counter::Increment,
                true,
                true,
            );
            return;
        }
        self.go_idle(
            out,
            DownReason::FsmError(kind),
            Counter::Increment,
            true,
            true,
        );
    }

    /// §8.2.2 Active state.
    pub(crate) fn active(&mut self, ev: Event, out: &mut Vec<Action>) {
        if self.is_start(&ev) || self.refuse_incoming(&ev) {
            // "The start events (Events 1, 3-7) are ignored"
            return;
        }
        match ev {
            // "If the DelayOpenTimer is running and the
            // SendNOTIFICATIONwithoutOPEN session attribute is set, the
            // local system sends a NOTIFICATION with a Cease, releases all
            // BGP resources including stopping the DelayOpenTimer, drops
            // the TCP connection, sets ConnectRetryCounter to zero, stops
            // the ConnectRetryTimer and sets the ConnectRetryTimer to zero,
            // and changes its state to Idle."
            E::ManualStop => {
                if self.timers.is_running(Timer::DelayOpen)
                    && self.cfg.send_notification_without_open
                {
                    self.cease(out, notify::ADMINISTRATIVE_SHUTDOWN);
                }
                self.go_idle(out, DownReason::ManualStop, Counter::Zero, true, false)
            }
            // "restarts the ConnectRetryTimer (with initial value),
            // initiates a TCP connection to the other BGP peer, continues
            // to listen ..., and changes its state to Connect."
            E::ConnectRetryTimerExpires => {
                self.start_connect_retry();
                if self.cfg.connection_mode != ConnectionMode::Passive {
                    out.push(Action::InitiateTcpConnection);
                    self.state = State::Connect;
                }
                // Tessera: a Passive peer never initiates; it keeps
                // waiting in Active.
            }
            // "sets the ConnectRetryTimer to zero, stops and clears the
            // DelayOpenTimer (set to zero), completes the BGP
            // initialization, sends the OPEN message to its remote peer,
            // sets its hold timer to a large value, and changes its state
            // to OpenSent."
            E::DelayOpenTimerExpires => {
                self.timers.stop(Timer::ConnectRetry);
                self.timers.stop(Timer::DelayOpen);
                self.send_open(out);
                self.state = State::OpenSent;
            }
            E::TcpConnectionValid | E::TcpCrInvalid => {}
            E::TcpCrAcked | E::TcpConnectionConfirmed => self.connection_up(out),
            // "restarts the ConnectRetryTimer (with the initial value),
            // stops and clears the DelayOpenTimer (sets the value to zero),
            // releases all BGP resource, increments the ConnectRetryCounter
            // by 1, optionally performs peer oscillation damping ..., and
            // changes its state to Idle."
            E::TcpConnectionFails => self.go_idle(
                out,
                DownReason::TcpConnectionFails,
                Counter::Increment,
                false,
                true,
            ),
            E::BgpOpenWithDelayOpenTimerRunning(o) => self.delayed_open(&o, out),
            E::BgpHeaderErr(n) | E::BgpOpenMsgErr(n) => self.open_err_before_open_sent(n, out),
            E::NotifMsgVerErr => self.ver_err_before_open_sent(out),
            // "In response to any other event (Events 8, 10-11, 13, 19, 23,
            // 25-28), the local system: sets the ConnectRetryTimer to zero,
            // releases all BGP resources, drops the TCP connection,
            // increments the ConnectRetryCounter by one, (optionally)
            // performs peer oscillation damping ..., and changes its state
            // to Idle."
            other => self.any_other_before_open_sent(other, out),
        }
    }

    /// The error exit of OpenSent, OpenConfirm and Established: "sends the
    /// NOTIFICATION ..., sets the ConnectRetryTimer to zero, [deletes all
    /// routes,] releases all BGP resources, drops the TCP connection,
    /// increments the ConnectRetryCounter by 1, (optionally) performs peer
    /// oscillation damping ..., and changes its state to Idle."
    fn error_exit(
        &mut self,
        out: &mut Vec<Action>,
        n: Option<NotificationMessage>,
        reason: DownReason,
    ) {
        if let Some(n) = n {
            self.notify(out, n);
        }
        self.go_idle(out, reason, Counter::Increment, true, true);
    }

    /// ManualStop / AutomaticStop / HoldTimerExpires / OpenCollisionDump,
    /// common to OpenSent, OpenConfirm and Established. Returns the event
    /// back when it is none of these.
    fn common_exits(&mut self, ev: Event, out: &mut Vec<Action>) -> Option<Event> {
        let cease = |sub| Some(NotificationMessage::new(notify::CEASE, sub, Vec::new()));
        match ev {
            // "sends the NOTIFICATION with a Cease, sets the
            // ConnectRetryTimer to zero, [deletes all routes,] releases all
            // BGP resources, drops the TCP connection, sets the
            // ConnectRetryCounter to zero, and changes its state to Idle."
            E::ManualStop => {
                self.cease(out, notify::ADMINISTRATIVE_SHUTDOWN);
                self.go_idle(out, DownReason::ManualStop, Counter::Zero, true, false);
            }
            E::AutomaticStop => {
                if self.cfg.allow_automatic_stop {
                    self.error_exit(out, cease(notify::UNSPECIFIC), DownReason::AutomaticStop);
                }
            }
            // "sends a NOTIFICATION message with the Error Code Hold Timer
            // Expired, ..."
            E::HoldTimerExpires => {
                let n = NotificationMessage::new(notify::HOLD_TIMER_EXPIRED, 0, Vec::new());
                self.error_exit(out, Some(n), DownReason::HoldTimerExpired);
            }
            // §6.8 / event 23: "sends a NOTIFICATION with a Cease, ..."
            E::OpenCollisionDump => {
                if self.state != State::Established || self.cfg.collision_detect_established_state {
                    let n = cease(notify::CONNECTION_COLLISION_RESOLUTION);
                    self.error_exit(out, n, DownReason::CollisionDump);
                }
                // Tessera: without CollisionDetectEstablishedState the event
                // does not exist in Established (§6.8 closes the new
                // connection instead); ignore it.
            }
            // "If a TcpConnection_Valid (Event 14), Tcp_CR_Acked (Event
            // 16), or a TcpConnectionConfirmed event (Event 17) is
            // received, a second TCP connection may be in progress. This
            // second TCP connection is tracked per Connection Collision
            // processing (Section 6.8) until an OPEN message is received."
            // "A TCP Connection Request for an Invalid port
            // (Tcp_CR_Invalid (Event 15)) is ignored."
            // Tessera: the runtime tracks the second connection with its
            // own FSM; this one ignores them.
            E::TcpConnectionValid | E::TcpCrInvalid | E::TcpCrAcked | E::TcpConnectionConfirmed => {
            }
            // "If any start event (Events 1, 3-7) is received, it is
            // ignored."
            e if e.kind().is_start() => {}
            e => return Some(e),
        }
        None
    }

    /// §8.2.2 OpenSent state.
    pub(crate) fn open_sent(&mut self, ev: Event, out: &mut Vec<Action>) {
        let Some(ev) = self.common_exits(ev, out) else {
            return;
        };
        match ev {
            // "the local system closes the BGP connection, restarts the
            // ConnectRetryTimer, continues to listen for a connection that
            // may be initiated by the remote BGP peer, and changes its
            // state to Active."
            E::TcpConnectionFails => {
                self.conn = false;
                self.timers.stop(Timer::Hold);
                self.start_connect_retry();
                self.state = State::Active;
            }
            // "resets the DelayOpenTimer to zero, sets the BGP
            // ConnectRetryTimer to zero, sends a KEEPALIVE message, and sets
            // a KeepaliveTimer ..., sets the HoldTimer according to the
            // negotiated value ..., changes its state to OpenConfirm." A
            // failed check is event 22.
            E::BgpOpen(o) => match self.accept_open(&o) {
                Ok(()) => {
                    self.timers.stop(Timer::DelayOpen);
                    self.timers.stop(Timer::ConnectRetry);
                    self.enter_open_confirm(out);
                }
                Err(n) => {
                    let r = msg_reason(&n);
                    self.error_exit(out, Some(n), r)
                }
            },
            // "sends a NOTIFICATION message with the appropriate error code,
            // ..."
            E::BgpHeaderErr(n) | E::BgpOpenMsgErr(n) => {
                let r = msg_reason(&n);
                self.error_exit(out, Some(n), r)
            }
            // "sets the ConnectRetryTimer timer to zero, releases all BGP
            // resources, drops the TCP connection, and changes its state to
            // Idle."
            E::NotifMsgVerErr => self.go_idle(out, VER_ERR, Counter::Keep, true, false),
            // "In response to any other event (Events 9, 11-13, 20, 25-28),
            // the local system: sends the NOTIFICATION with the Error Code
            // Finite State Machine Error, ..."
            other => self.fsm_error_exit(other, out),
        }
    }

    fn fsm_error_exit(&mut self, ev: Event, out: &mut Vec<Action>) {
        let kind = ev.kind();
        self.fsm_error(out, kind);
        self.go_idle(
            out,
            DownReason::FsmError(kind),
            Counter::Increment,
            true,
            true,
        );
    }

    /// §8.2.2 OpenConfirm state.
    pub(crate) fn open_confirm(&mut self, ev: Event, out: &mut Vec<Action>) {
        let Some(ev) = self.common_exits(ev, out) else {
            return;
        };
        match ev {
            // "sends a KEEPALIVE message, restarts the KeepaliveTimer, and
            // remains in the OpenConfirmed state."
            E::KeepaliveTimerExpires => {
                out.push(Action::SendKeepalive);
                self.restart_keepalive();
            }
            // "sets the ConnectRetryTimer to zero, releases all BGP
            // resources, drops the TCP connection, increments the
            // ConnectRetryCounter by 1, (optionally) performs peer
            // oscillation damping ..., and changes its state to Idle."
            E::TcpConnectionFails => self.error_exit(out, None, DownReason::TcpConnectionFails),
            E::NotifMsg(n) => self.error_exit(
                out,
                None,
                DownReason::NotificationReceived {
                    code: n.code,
                    subcode: n.subcode,
                },
            ),
            // "sets the ConnectRetryTimer to zero, releases all BGP
            // resources, drops the TCP connection, and changes its state to
            // Idle."
            E::NotifMsgVerErr => self.go_idle(out, VER_ERR, Counter::Keep, true, false),
            // "sends a NOTIFICATION message with the appropriate error code,
            // ..."
            E::BgpHeaderErr(n) | E::BgpOpenMsgErr(n) => {
                let r = msg_reason(&n);
                self.error_exit(out, Some(n), r)
            }
            // "restarts the HoldTimer and changes its state to
            // Established."
            E::KeepAliveMsg => {
                self.restart_hold();
                self.state = State::Established;
                self.established_at = Some(self.now);
                if let Some(n) = &self.negotiated {
                    out.push(Action::SessionEstablished(Box::new(n.clone())));
                }
            }
            // Event 19 here is the OPEN of a colliding connection in the
            // RFC's single-FSM model. Tessera runs one FSM per connection
            // and resolves collisions with `collision::resolve` (firing
            // event 23 on the loser), so a second OPEN on *this* connection
            // is unexpected: "any other event (Events 9, 12-13, 20, 27-28)"
            // -> Finite State Machine Error (RFC 6608 subcode 2).
            other => self.fsm_error_exit(other, out),
        }
    }

    /// §8.2.2 Established state.
    pub(crate) fn established(&mut self, ev: Event, out: &mut Vec<Action>) {
        let Some(ev) = self.common_exits(ev, out) else {
            return;
        };
        match ev {
            // "sends a KEEPALIVE message, and restarts its KeepaliveTimer,
            // unless the negotiated HoldTime value is zero."
            E::KeepaliveTimerExpires => {
                out.push(Action::SendKeepalive);
                self.restart_keepalive();
            }
            // "sets the ConnectRetryTimer to zero, deletes all routes
            // associated with this connection, releases all the BGP
            // resources, drops the TCP connection, increments the
            // ConnectRetryCounter by 1, and changes its state to Idle."
            // Tessera: these count as flaps for damping too; a peer that
            // resets its Established sessions is what damping is for.
            E::TcpConnectionFails => self.error_exit(out, None, DownReason::TcpConnectionFails),
            E::NotifMsgVerErr => self.error_exit(out, None, VER_ERR),
            E::NotifMsg(n) => self.error_exit(
                out,
                None,
                DownReason::NotificationReceived {
                    code: n.code,
                    subcode: n.subcode,
                },
            ),
            // "restarts its HoldTimer, if the negotiated HoldTime value is
            // non-zero, and remains in the Established state."
            E::KeepAliveMsg => self.restart_hold(),
            // "processes the message, restarts its HoldTimer, if the
            // negotiated HoldTime value is non-zero, and remains in the
            // Established state."
            E::UpdateMsg => {
                out.push(Action::ProcessUpdate);
                self.restart_hold();
            }
            // "sends a NOTIFICATION message with an Update error, ..."
            E::UpdateMsgErr(n) => {
                let r = msg_reason(&n);
                self.error_exit(out, Some(n), r)
            }
            // Tessera: RFC 4271 §6.1 requires the Message Header Error
            // NOTIFICATION for a header error, whatever the state; the
            // table's "any other event (9, 12-13, 20-22)" would send an FSM
            // error instead.
            E::BgpHeaderErr(n) => {
                let r = msg_reason(&n);
                self.error_exit(out, Some(n), r)
            }
            // Any other event (9, 12-13, 19-22): FSM Error (RFC 6608
            // subcode 3 for messages). Event 19 is a second OPEN on this
            // connection; see `open_confirm`.
            other => self.fsm_error_exit(other, out),
        }
    }
}
