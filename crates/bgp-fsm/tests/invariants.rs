//! Property test: arbitrary event sequences and time advances under
//! arbitrary configurations keep the FSM's invariants.

mod common;

use std::time::Duration;

use base::{Asn, Instant};
use bgp_fsm::{Action, ConnectionMode, DampConfig, Event, EventKind, Fsm, Jitter, State, Timer};
use bgp_wire::OpenMessage;
use common::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    Ev(u8),
    /// A valid OPEN with this hold time.
    GoodOpen(u16),
    /// An OPEN that fails validation (bad peer AS or hold time 1).
    BadOpen(bool),
    Advance(u32),
    UpdateSent,
}

fn event_of(i: u8) -> Event {
    let all = [
        Event::ManualStart,
        Event::ManualStop,
        Event::AutomaticStart,
        Event::ManualStartWithPassiveTcpEstablishment,
        Event::AutomaticStartWithPassiveTcpEstablishment,
        Event::AutomaticStartWithDampPeerOscillations,
        Event::AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment,
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
        Event::BgpHeaderErr(n(1, 2)),
        Event::BgpOpenMsgErr(n(2, 4)),
        Event::OpenCollisionDump,
        Event::NotifMsgVerErr,
        Event::NotifMsg(n(6, 2)),
        Event::KeepAliveMsg,
        Event::UpdateMsg,
        Event::UpdateMsgErr(n(3, 1)),
    ];
    all[usize::from(i) % all.len()].clone()
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => any::<u8>().prop_map(Step::Ev),
        // Bias towards the happy path so that Established is reached often.
        2 => Just(Step::Ev(0)),
        1 => Just(Step::Ev(24)),
        2 => Just(Step::Ev(15)),
        2 => Just(Step::Ev(16)),
        3 => Just(Step::Ev(23)),
        2 => prop_oneof![Just(0u16), Just(3), Just(90), Just(240)].prop_map(Step::GoodOpen),
        1 => any::<bool>().prop_map(Step::BadOpen),
        3 => (0u32..400_000).prop_map(Step::Advance),
        1 => Just(Step::UpdateSent),
    ]
}

#[derive(Clone, Debug)]
struct Cfg {
    hold: u16,
    delay_open: bool,
    damp: bool,
    mode: u8,
    notif_without_open: bool,
    collision_established: bool,
}

fn config() -> impl Strategy<Value = Cfg> {
    (
        prop_oneof![Just(0u16), Just(3), Just(90)],
        any::<bool>(),
        any::<bool>(),
        0u8..3,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(hold, delay_open, damp, mode, n, c)| Cfg {
            hold,
            delay_open,
            damp,
            mode,
            notif_without_open: n,
            collision_established: c,
        })
}

/// What the test knows, independently of the FSM, since the last reset.
#[derive(Default)]
struct Model {
    sent_open: bool,
    got_good_open: bool,
}

fn check(
    fsm: &Fsm,
    prev_state: State,
    prev_counter: u32,
    kind: Option<EventKind>,
    acts: &[Action],
    model: &mut Model,
    now: Instant,
) -> Result<(), TestCaseError> {
    let st = fsm.state();
    // In Idle no timer but IdleHold runs and no connection is held.
    if st == State::Idle {
        for t in [
            Timer::ConnectRetry,
            Timer::Hold,
            Timer::Keepalive,
            Timer::DelayOpen,
        ] {
            prop_assert_eq!(fsm.timer(t), None, "{:?} running in Idle", t);
        }
        prop_assert!(!fsm.holds_connection());
        prop_assert!(fsm.negotiated().is_none());
    }
    // IdleHold only ever runs in Idle.
    if fsm.timer(Timer::IdleHold).is_some() {
        prop_assert_eq!(st, State::Idle);
    }
    // Established only after our OPEN, an acceptable OPEN and a KEEPALIVE.
    if st == State::Established && prev_state != State::Established {
        prop_assert_eq!(kind, Some(EventKind::KeepAliveMsg));
        prop_assert!(model.sent_open, "Established without sending OPEN");
        prop_assert!(model.got_good_open, "Established without a good OPEN");
        prop_assert!(acts
            .iter()
            .any(|a| matches!(a, Action::SessionEstablished(_))));
    }
    // Errors out of OpenSent/OpenConfirm/Established send a NOTIFICATION,
    // except when the peer sent one or TCP failed.
    let open_states = [State::OpenSent, State::OpenConfirm, State::Established];
    if open_states.contains(&prev_state) && st == State::Idle {
        let exempt = matches!(
            kind,
            Some(EventKind::TcpConnectionFails | EventKind::NotifMsg | EventKind::NotifMsgVerErr)
        );
        if !exempt {
            prop_assert!(
                acts.iter()
                    .any(|a| matches!(a, Action::SendNotification(_))),
                "no NOTIFICATION on {:?} from {:?}: {:?}",
                kind,
                prev_state,
                acts
            );
        }
        prop_assert!(acts.contains(&Action::DropTcpConnection) || exempt);
    }
    if prev_state == State::Established && st != State::Established {
        prop_assert!(acts.iter().any(|a| matches!(a, Action::SessionDown(_))));
    }
    // The counter only decreases on ManualStop, or when a start in Idle
    // resets it (§8.2.2 Idle: "sets ConnectRetryCounter to zero").
    if fsm.connect_retry_counter() < prev_counter {
        prop_assert!(
            kind == Some(EventKind::ManualStop) || prev_state == State::Idle,
            "counter fell on {:?} in {:?}",
            kind,
            prev_state
        );
    }
    // Hold time 0: no keepalive timer, no hold timer after negotiation.
    if let Some(neg) = fsm.negotiated() {
        if neg.hold_time == 0 {
            prop_assert_eq!(fsm.timer(Timer::Keepalive), None);
            prop_assert_eq!(fsm.timer(Timer::Hold), None);
        }
    }
    if fsm.timer(Timer::Keepalive).is_some() {
        prop_assert!(matches!(st, State::OpenConfirm | State::Established));
        prop_assert!(fsm.negotiated().is_some_and(|n| n.hold_time > 0));
    }
    // No timer is left overdue.
    if let Some(d) = fsm.next_deadline() {
        prop_assert!(d > now || kind.is_some(), "overdue timer after on_timer");
    }
    // Track what the model needs.
    if acts.contains(&Action::SendOpen) {
        model.sent_open = true;
    }
    if matches!(st, State::Idle | State::Connect | State::Active) {
        if !acts.contains(&Action::SendOpen) {
            model.sent_open = false;
        }
        model.got_good_open = false;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]
    #[test]
    fn fsm_invariants(c in config(), steps in prop::collection::vec((step(), any::<u16>()), 0..120)) {
        let mut sc = cfg();
        sc.hold_time = c.hold;
        sc.delay_open = c.delay_open.then_some(Duration::from_secs(5));
        sc.damp = c.damp.then(|| DampConfig {
            idle_hold_time: Duration::from_secs(2),
            max_idle_hold_time: Duration::from_secs(60),
            stable_time: Duration::from_secs(120),
        });
        sc.connection_mode = [ConnectionMode::Both, ConnectionMode::ActiveOnly, ConnectionMode::Passive][usize::from(c.mode)];
        sc.send_notification_without_open = c.notif_without_open;
        sc.collision_detect_established_state = c.collision_established;
        let mut fsm = Fsm::new(sc);
        let mut now = Instant::from_secs(1);
        let mut model = Model::default();
        let mut out = Vec::new();
        for (s, j) in steps {
            let jitter = Jitter::new(j);
            let ev = match s {
                Step::Ev(i) => Some(event_of(i)),
                Step::GoodOpen(h) => Some(Event::BgpOpen(peer_open(h))),
                Step::BadOpen(true) => Some(Event::BgpOpen(bad_as_open())),
                Step::BadOpen(false) => {
                    Some(Event::BgpOpen(OpenMessage::new(Asn(65002), 1, PEER_ID, vec![])))
                }
                Step::Advance(ms) => {
                    let end = now + Duration::from_millis(u64::from(ms));
                    while let Some(t) = fsm.next_deadline().filter(|t| *t <= end) {
                        now = now.max(t);
                        let (ps, pc) = (fsm.state(), fsm.connect_retry_counter());
                        out.clear();
                        fsm.on_timer(now, jitter, &mut out);
                        check(&fsm, ps, pc, None, &out, &mut model, now)?;
                    }
                    now = end;
                    None
                }
                Step::UpdateSent => {
                    fsm.on_update_sent(now, jitter);
                    None
                }
            };
            if let Some(ev) = ev {
                let kind = ev.kind();
                let good = matches!(s, Step::GoodOpen(_));
                let (ps, pc) = (fsm.state(), fsm.connect_retry_counter());
                out.clear();
                fsm.handle(now, jitter, ev, &mut out);
                if good && fsm.state() == State::OpenConfirm && ps != State::OpenConfirm {
                    model.got_good_open = true;
                }
                check(&fsm, ps, pc, Some(kind), &out, &mut model, now)?;
            }
        }
    }
}
