//! RFC 4271 §8.2.2, state by state.

mod common;

use std::time::Duration;

use base::Instant;
use bgp_fsm::{
    Action, ConnectionMode, DampConfig, DownReason, Event, EventKind, Fsm, Jitter, State, Timer,
};
use common::*;

const SEC: Duration = Duration::from_secs(1);

// ---- Idle ---------------------------------------------------------------

#[test]
fn idle_ignores_everything_but_start_events() {
    let mut h = Harness::new(cfg());
    let others = [
        Event::ManualStop,
        Event::AutomaticStop,
        Event::ConnectRetryTimerExpires,
        Event::HoldTimerExpires,
        Event::KeepaliveTimerExpires,
        Event::DelayOpenTimerExpires,
        Event::IdleHoldTimerExpires,
        Event::TcpConnectionValid,
        Event::TcpCrInvalid,
        Event::TcpCrAcked,
        Event::TcpConnectionConfirmed,
        Event::TcpConnectionFails,
        Event::BgpOpen(peer_open(90)),
        Event::BgpHeaderErr(n(1, 2)),
        Event::BgpOpenMsgErr(n(2, 2)),
        Event::OpenCollisionDump,
        Event::NotifMsgVerErr,
        Event::NotifMsg(n(6, 2)),
        Event::KeepAliveMsg,
        Event::UpdateMsg,
        Event::UpdateMsgErr(n(3, 1)),
    ];
    for e in others {
        let k = e.kind();
        assert_eq!(h.ev(e), vec![], "{k:?}");
        assert_eq!(h.state(), State::Idle, "{k:?}");
        assert_eq!(h.fsm.next_deadline(), None);
    }
    assert!(!h.fsm.accepts_incoming());
}

#[test]
fn idle_manual_start_connects() {
    let mut h = Harness::new(cfg());
    assert_eq!(
        h.ev(Event::ManualStart),
        vec![Action::InitiateTcpConnection]
    );
    assert_eq!(h.state(), State::Connect);
    assert_eq!(h.fsm.timer(Timer::ConnectRetry), Some(h.now + 120 * SEC));
    assert_eq!(h.fsm.connect_retry_counter(), 0);
    assert!(h.fsm.accepts_incoming());
}

#[test]
fn idle_passive_start_goes_to_active() {
    let mut h = Harness::new(cfg());
    assert_eq!(h.ev(Event::ManualStartWithPassiveTcpEstablishment), vec![]);
    assert_eq!(h.state(), State::Active);
    assert!(h.fsm.timer(Timer::ConnectRetry).is_some());
    // Configured passive: a plain start is passive too.
    let mut c = cfg();
    c.connection_mode = ConnectionMode::Passive;
    let mut h = Harness::new(c);
    assert_eq!(
        h.fsm.start_event(true),
        Event::ManualStartWithPassiveTcpEstablishment
    );
    h.ev(Event::AutomaticStart);
    assert_eq!(h.state(), State::Active);
    // A passive peer never initiates, even when ConnectRetry expires.
    assert_eq!(h.advance(121 * SEC), vec![]);
    assert_eq!(h.state(), State::Active);
}

#[test]
fn idle_automatic_start_obeys_allow_automatic_start() {
    let mut c = cfg();
    c.allow_automatic_start = false;
    let mut h = Harness::new(c);
    assert_eq!(h.ev(Event::AutomaticStart), vec![]);
    assert_eq!(h.state(), State::Idle);
    h.ev(Event::ManualStart);
    assert_eq!(h.state(), State::Connect);
}

// ---- Connect ------------------------------------------------------------

#[test]
fn connect_retry_expiry_reconnects() {
    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStart);
    let a = h.advance(120 * SEC);
    assert_eq!(
        a,
        vec![Action::DropTcpConnection, Action::InitiateTcpConnection]
    );
    assert_eq!(h.state(), State::Connect);
    assert_eq!(h.fsm.timer(Timer::ConnectRetry), Some(h.now + 120 * SEC));
}

#[test]
fn connect_retry_uses_jitter() {
    let mut fsm = Fsm::new(cfg());
    let mut out = Vec::new();
    fsm.handle(Instant::ZERO, Jitter::new(0), Event::ManualStart, &mut out);
    assert_eq!(fsm.timer(Timer::ConnectRetry), Some(Instant::from_secs(90)));
}

#[test]
fn connect_tcp_up_sends_open_with_large_hold_timer() {
    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStart);
    assert_eq!(h.ev(Event::TcpConnectionConfirmed), vec![Action::SendOpen]);
    assert_eq!(h.state(), State::OpenSent);
    assert_eq!(h.fsm.timer(Timer::ConnectRetry), None);
    assert_eq!(h.fsm.timer(Timer::Hold), Some(h.now + 240 * SEC));
}

#[test]
fn connect_tcp_fails_goes_idle() {
    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStart);
    assert_eq!(
        h.ev(Event::TcpConnectionFails),
        vec![Action::DropTcpConnection]
    );
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.next_deadline(), None);
}

#[test]
fn connect_any_other_event_increments_counter() {
    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStart);
    assert_eq!(h.ev(Event::KeepAliveMsg), vec![Action::DropTcpConnection]);
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.connect_retry_counter(), 1);
    assert_eq!(
        h.fsm.last_down_reason(),
        Some(DownReason::FsmError(EventKind::KeepAliveMsg))
    );
    // A start resets the counter (§8.2.2 Idle).
    h.ev(Event::ManualStart);
    assert_eq!(h.fsm.connect_retry_counter(), 0);
}

#[test]
fn connect_manual_stop_zeroes_counter() {
    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStart);
    h.ev(Event::UpdateMsg);
    h.ev(Event::ManualStart);
    h.ev(Event::UpdateMsg);
    assert_eq!(h.fsm.connect_retry_counter(), 1);
    h.ev(Event::ManualStart);
    assert_eq!(h.ev(Event::ManualStop), vec![Action::DropTcpConnection]);
    assert_eq!(h.fsm.connect_retry_counter(), 0);
}

#[test]
fn connect_delay_open() {
    let mut c = cfg();
    c.delay_open = Some(5 * SEC);
    let mut h = Harness::new(c.clone());
    h.ev(Event::ManualStart);
    assert_eq!(h.ev(Event::TcpCrAcked), vec![]);
    assert_eq!(h.state(), State::Connect);
    assert_eq!(h.fsm.timer(Timer::DelayOpen), Some(h.now + 5 * SEC));
    assert_eq!(h.fsm.timer(Timer::ConnectRetry), None);
    // The timer expires: OPEN goes out.
    assert_eq!(h.advance(5 * SEC), vec![Action::SendOpen]);
    assert_eq!(h.state(), State::OpenSent);

    // The peer's OPEN arrives first (event 20): OPEN + KEEPALIVE, to
    // OpenConfirm directly.
    let mut h = Harness::new(c.clone());
    h.ev(Event::ManualStart);
    h.ev(Event::TcpCrAcked);
    let a = h.ev(Event::BgpOpen(peer_open(90)));
    assert_eq!(a, vec![Action::SendOpen, Action::SendKeepalive]);
    assert_eq!(h.state(), State::OpenConfirm);
    assert_eq!(h.fsm.timer(Timer::DelayOpen), None);
    assert_eq!(h.fsm.timer(Timer::Hold), Some(h.now + 90 * SEC));
    assert_eq!(h.fsm.timer(Timer::Keepalive), Some(h.now + 30 * SEC));

    // TCP fails while DelayOpen runs: to Active, ConnectRetry restarted.
    let mut h = Harness::new(c.clone());
    h.ev(Event::ManualStart);
    h.ev(Event::TcpCrAcked);
    assert_eq!(h.ev(Event::TcpConnectionFails), vec![]);
    assert_eq!(h.state(), State::Active);
    assert!(h.fsm.timer(Timer::ConnectRetry).is_some());

    // A bad OPEN while DelayOpen runs: Idle, NOTIFICATION only with
    // SendNOTIFICATIONwithoutOPEN.
    let mut h = Harness::new(c.clone());
    h.ev(Event::ManualStart);
    h.ev(Event::TcpCrAcked);
    assert_eq!(
        h.ev(Event::BgpOpen(bad_as_open())),
        vec![Action::DropTcpConnection]
    );
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.connect_retry_counter(), 1);
    let mut c2 = c.clone();
    c2.send_notification_without_open = true;
    let mut h = Harness::new(c2);
    h.ev(Event::ManualStart);
    h.ev(Event::TcpCrAcked);
    let a = h.ev(Event::BgpOpen(bad_as_open()));
    assert_eq!(notif(&a), Some((2, 2)));
    assert_eq!(a.last(), Some(&Action::DropTcpConnection));

    // NotifMsgVerErr with DelayOpen running: no counter increment.
    let mut h = Harness::new(c);
    h.ev(Event::ManualStart);
    h.ev(Event::TcpCrAcked);
    h.ev(Event::NotifMsgVerErr);
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.connect_retry_counter(), 0);
}

#[test]
fn connect_bgp_open_without_delay_open_is_an_fsm_error() {
    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStart);
    h.ev(Event::BgpOpen(peer_open(90)));
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.connect_retry_counter(), 1);
}

#[test]
fn active_only_refuses_incoming() {
    let mut c = cfg();
    c.connection_mode = ConnectionMode::ActiveOnly;
    let mut h = Harness::new(c);
    h.ev(Event::ManualStart);
    assert!(!h.fsm.accepts_incoming());
    assert_eq!(h.ev(Event::TcpConnectionConfirmed), vec![]);
    assert_eq!(h.state(), State::Connect);
    assert_eq!(h.ev(Event::TcpCrAcked), vec![Action::SendOpen]);
}

// ---- Active -------------------------------------------------------------

#[test]
fn active_transitions() {
    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStartWithPassiveTcpEstablishment);
    // ConnectRetry expires: connect out, to Connect.
    assert_eq!(h.advance(120 * SEC), vec![Action::InitiateTcpConnection]);
    assert_eq!(h.state(), State::Connect);

    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStartWithPassiveTcpEstablishment);
    assert_eq!(h.ev(Event::TcpConnectionConfirmed), vec![Action::SendOpen]);
    assert_eq!(h.state(), State::OpenSent);

    // TCP fails in Active: Idle, counter + 1, no timers left.
    let mut h = Harness::new(cfg());
    h.ev(Event::ManualStartWithPassiveTcpEstablishment);
    assert_eq!(h.ev(Event::TcpConnectionFails), vec![]);
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.connect_retry_counter(), 1);
    assert_eq!(h.fsm.next_deadline(), None);

    // ManualStop with DelayOpen running and SendNOTIFICATIONwithoutOPEN.
    let mut c = cfg();
    c.delay_open = Some(3 * SEC);
    c.send_notification_without_open = true;
    let mut h = Harness::new(c);
    h.ev(Event::ManualStartWithPassiveTcpEstablishment);
    h.ev(Event::TcpConnectionConfirmed);
    assert_eq!(h.state(), State::Active);
    let a = h.ev(Event::ManualStop);
    assert_eq!(notif(&a), Some((6, 2)));
    assert_eq!(h.state(), State::Idle);
}

// ---- OpenSent -----------------------------------------------------------

#[test]
fn open_sent_tcp_fails_goes_to_active() {
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    assert_eq!(h.ev(Event::TcpConnectionFails), vec![]);
    assert_eq!(h.state(), State::Active);
    assert_eq!(h.fsm.timer(Timer::Hold), None);
    assert_eq!(h.fsm.timer(Timer::ConnectRetry), Some(h.now + 120 * SEC));
    assert!(!h.fsm.holds_connection());
}

#[test]
fn open_sent_hold_timer_expires_sends_4_0() {
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    assert_eq!(h.advance(239 * SEC), vec![]);
    let a = h.advance(SEC);
    assert_eq!(notif(&a), Some((4, 0)));
    assert_eq!(a.last(), Some(&Action::DropTcpConnection));
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.connect_retry_counter(), 1);
}

#[test]
fn open_sent_open_errors() {
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    let a = h.ev(Event::BgpOpen(bad_as_open()));
    assert_eq!(notif(&a), Some((2, 2)));
    assert_eq!(h.state(), State::Idle);
    assert_eq!(
        h.fsm.last_down_reason(),
        Some(DownReason::MessageError {
            code: 2,
            subcode: 2
        })
    );
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    let a = h.ev(Event::BgpHeaderErr(n(1, 1)));
    assert_eq!(notif(&a), Some((1, 1)));
    // NotifMsgVerErr: no NOTIFICATION, no counter increment.
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    assert_eq!(h.ev(Event::NotifMsgVerErr), vec![Action::DropTcpConnection]);
    assert_eq!(h.fsm.connect_retry_counter(), 0);
    assert_eq!(h.state(), State::Idle);
}

#[test]
fn open_sent_unexpected_message_is_fsm_error_6608() {
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    let a = h.ev(Event::KeepAliveMsg);
    assert_eq!(notif(&a), Some((5, 1)));
    assert_eq!(h.state(), State::Idle);
    // A timer event is FSM error with the unspecific subcode.
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    assert_eq!(notif(&h.ev(Event::KeepaliveTimerExpires)), Some((5, 0)));
}

#[test]
fn open_sent_collision_dump_and_stops() {
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    let a = h.ev(Event::OpenCollisionDump);
    assert_eq!(notif(&a), Some((6, 7)));
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.connect_retry_counter(), 1);
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    assert_eq!(notif(&h.ev(Event::AutomaticStop)), Some((6, 0)));
    assert_eq!(h.fsm.connect_retry_counter(), 1);
    // Start events and second connections are ignored.
    let mut h = Harness::new(cfg());
    h.reach_open_sent();
    for e in [
        Event::ManualStart,
        Event::AutomaticStart,
        Event::TcpCrAcked,
        Event::TcpCrInvalid,
    ] {
        assert_eq!(h.ev(e), vec![]);
    }
    assert_eq!(h.state(), State::OpenSent);
}

// ---- OpenConfirm --------------------------------------------------------

#[test]
fn open_confirm_keepalives_and_hold() {
    let mut h = Harness::new(cfg());
    h.reach_open_confirm(30);
    let n = h.fsm.negotiated().unwrap();
    assert_eq!((n.hold_time, n.keepalive_interval), (30, 10));
    assert_eq!(h.advance(10 * SEC), vec![Action::SendKeepalive]);
    assert_eq!(h.advance(10 * SEC), vec![Action::SendKeepalive]);
    // Nothing received for 30 s: hold timer expiry beats the keepalive due
    // at the same instant.
    let a = h.advance(10 * SEC);
    assert_eq!(notif(&a), Some((4, 0)));
    assert!(!a.contains(&Action::SendKeepalive));
    assert_eq!(h.state(), State::Idle);
}

#[test]
fn open_confirm_exits() {
    // NOTIFICATION received: no NOTIFICATION back, counter + 1.
    let mut h = Harness::new(cfg());
    h.reach_open_confirm(90);
    assert_eq!(
        h.ev(Event::NotifMsg(n(6, 2))),
        vec![Action::DropTcpConnection]
    );
    assert_eq!(h.fsm.connect_retry_counter(), 1);
    assert_eq!(h.state(), State::Idle);
    assert!(h.fsm.negotiated().is_none());
    // Version error: counter unchanged.
    let mut h = Harness::new(cfg());
    h.reach_open_confirm(90);
    h.ev(Event::NotifMsgVerErr);
    assert_eq!(h.fsm.connect_retry_counter(), 0);
    // An UPDATE before the KEEPALIVE is an FSM error (RFC 6608 subcode 2).
    let mut h = Harness::new(cfg());
    h.reach_open_confirm(90);
    assert_eq!(notif(&h.ev(Event::UpdateMsg)), Some((5, 2)));
    // ManualStop: Cease, counter zero.
    let mut h = Harness::new(cfg());
    h.reach_open_confirm(90);
    let a = h.ev(Event::ManualStop);
    assert_eq!(
        a,
        vec![Action::SendNotification(n(6, 2)), Action::DropTcpConnection]
    );
    assert_eq!(h.fsm.connect_retry_counter(), 0);
    // Collision dump.
    let mut h = Harness::new(cfg());
    h.reach_open_confirm(90);
    assert_eq!(notif(&h.ev(Event::OpenCollisionDump)), Some((6, 7)));
}

#[test]
fn hold_time_zero_means_no_keepalives_and_no_hold_timer() {
    let mut h = Harness::new(cfg());
    h.reach_open_confirm(0);
    assert_eq!(h.fsm.timer(Timer::Keepalive), None);
    assert_eq!(h.fsm.timer(Timer::Hold), None);
    h.ev(Event::KeepAliveMsg);
    assert_eq!(h.state(), State::Established);
    assert_eq!(h.fsm.next_deadline(), None);
    assert_eq!(h.advance(Duration::from_secs(100_000)), vec![]);
    assert_eq!(h.ev(Event::UpdateMsg), vec![Action::ProcessUpdate]);
    assert_eq!(h.fsm.next_deadline(), None);
}

// ---- Established --------------------------------------------------------

#[test]
fn established_traffic() {
    let mut h = Harness::new(cfg());
    h.reach_established(90);
    assert_eq!(h.fsm.timer(Timer::Hold), Some(h.now + 90 * SEC));
    h.advance(20 * SEC);
    assert_eq!(h.ev(Event::UpdateMsg), vec![Action::ProcessUpdate]);
    assert_eq!(h.fsm.timer(Timer::Hold), Some(h.now + 90 * SEC));
    h.advance(5 * SEC);
    assert_eq!(h.ev(Event::KeepAliveMsg), vec![]);
    assert_eq!(h.fsm.timer(Timer::Hold), Some(h.now + 90 * SEC));
    // Keepalives every 30 s; an UPDATE sent pushes the next one back.
    let ka = h.fsm.timer(Timer::Keepalive).unwrap();
    h.fsm.on_update_sent(h.now, Jitter::NONE);
    assert!(h.fsm.timer(Timer::Keepalive).unwrap() > ka);
    assert_eq!(h.advance(30 * SEC), vec![Action::SendKeepalive]);
    assert_eq!(h.state(), State::Established);
}

#[test]
fn established_errors() {
    let mut h = Harness::new(cfg());
    h.reach_established(90);
    let a = h.ev(Event::UpdateMsgErr(n(3, 11)));
    assert_eq!(
        a,
        vec![
            Action::SendNotification(n(3, 11)),
            Action::DropTcpConnection,
            Action::SessionDown(DownReason::MessageError {
                code: 3,
                subcode: 11
            }),
        ]
    );
    assert_eq!(h.fsm.connect_retry_counter(), 1);

    let mut h = Harness::new(cfg());
    h.reach_established(90);
    let a = h.advance(90 * SEC);
    assert_eq!(notif(&a), Some((4, 0)));
    assert!(a.contains(&Action::SessionDown(DownReason::HoldTimerExpired)));

    let mut h = Harness::new(cfg());
    h.reach_established(90);
    let a = h.ev(Event::TcpConnectionFails);
    assert_eq!(notif(&a), None);
    assert!(a.contains(&Action::SessionDown(DownReason::TcpConnectionFails)));

    let mut h = Harness::new(cfg());
    h.reach_established(90);
    assert_eq!(notif(&h.ev(Event::BgpOpen(peer_open(90)))), Some((5, 3)));

    let mut h = Harness::new(cfg());
    h.reach_established(90);
    assert_eq!(notif(&h.ev(Event::BgpHeaderErr(n(1, 2)))), Some((1, 2)));

    let mut h = Harness::new(cfg());
    h.reach_established(90);
    assert_eq!(notif(&h.ev(Event::ConnectRetryTimerExpires)), Some((5, 0)));
}

#[test]
fn established_collision_dump_needs_the_attribute() {
    let mut h = Harness::new(cfg());
    h.reach_established(90);
    assert_eq!(h.ev(Event::OpenCollisionDump), vec![]);
    assert_eq!(h.state(), State::Established);
    let mut c = cfg();
    c.collision_detect_established_state = true;
    let mut h = Harness::new(c);
    h.reach_established(90);
    let a = h.ev(Event::OpenCollisionDump);
    assert_eq!(notif(&a), Some((6, 7)));
    assert!(a.contains(&Action::SessionDown(DownReason::CollisionDump)));
}

#[test]
fn automatic_stop_obeys_allow_automatic_stop() {
    let mut c = cfg();
    c.allow_automatic_stop = false;
    let mut h = Harness::new(c);
    h.reach_established(90);
    assert_eq!(h.ev(Event::AutomaticStop), vec![]);
    assert_eq!(h.state(), State::Established);
}

// ---- Damping ------------------------------------------------------------

#[test]
fn damp_peer_oscillations_backs_off_and_resets() {
    let mut c = cfg();
    c.damp = Some(DampConfig {
        idle_hold_time: 10 * SEC,
        max_idle_hold_time: 40 * SEC,
        stable_time: 300 * SEC,
    });
    let mut h = Harness::new(c);
    let start = h.fsm.start_event(false);
    assert_eq!(start, Event::AutomaticStartWithDampPeerOscillations);
    // Without any flap the first damped start waits IdleHoldTime.
    assert_eq!(h.ev(start.clone()), vec![]);
    assert_eq!(h.state(), State::Idle);
    assert_eq!(h.fsm.timer(Timer::IdleHold), Some(h.now + 10 * SEC));
    assert_eq!(h.advance(10 * SEC), vec![Action::InitiateTcpConnection]);
    assert_eq!(h.state(), State::Connect);

    // Flap repeatedly (UPDATE in Connect is an error with damping).
    let mut waits = Vec::new();
    for _ in 0..5 {
        h.ev(Event::UpdateMsg);
        assert_eq!(h.state(), State::Idle);
        h.ev(start.clone());
        let t = h.fsm.timer(Timer::IdleHold).unwrap();
        waits.push(t.since(h.now).as_secs());
        h.advance(t.since(h.now));
        assert_eq!(h.state(), State::Connect);
    }
    assert_eq!(waits, vec![10, 20, 40, 40, 40]);

    // A stable Established period resets the back-off.
    h.ev(Event::TcpCrAcked);
    h.ev(Event::BgpOpen(peer_open(0)));
    h.ev(Event::KeepAliveMsg);
    assert_eq!(h.state(), State::Established);
    h.advance(400 * SEC);
    h.ev(Event::NotifMsg(n(6, 4)));
    h.ev(start.clone());
    assert_eq!(h.fsm.timer(Timer::IdleHold), Some(h.now + 10 * SEC));
    // ManualStop in Idle cancels the waiting start.
    h.ev(Event::ManualStop);
    assert_eq!(h.fsm.next_deadline(), None);
    assert_eq!(h.advance(60 * SEC), vec![]);
    assert_eq!(h.state(), State::Idle);
}
