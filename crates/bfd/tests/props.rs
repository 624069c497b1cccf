//! Properties: the decoder never panics and round-trips what we encode;
//! the session never panics on any packet, time or command sequence, only
//! changes state along the edges of RFC 5880 §6.2 (plus AdminDown,
//! §6.8.16), never sends P and F together, and keeps its deadline ahead.

use std::time::Duration;

use base::Instant;
use bfd::packet::{ControlPacket, Diag, State};
use bfd::session::{Session, SessionConfig};
use proptest::prelude::*;

fn allowed(from: State, to: State) -> bool {
    use State::*;
    matches!(
        (from, to),
        (Down, Init)
            | (Down, Up)
            | (Init, Up)
            | (Init, Down)
            | (Up, Down)
            | (Down | Init | Up, AdminDown)
            | (AdminDown, Down)
    )
}

#[derive(Clone, Debug)]
enum Op {
    /// Advance the clock by this many µs, then poll if due.
    Wait(u32),
    /// Receive these bytes (if they decode).
    Bytes(Vec<u8>),
    /// Receive a well-formed packet.
    Pkt {
        sta: u8,
        your_ours: bool,
        p: bool,
        f: bool,
        d: bool,
        mult: u8,
        tx: u32,
        rx: u32,
    },
    Admin(bool),
    Config {
        tx_ms: u16,
        rx_ms: u16,
        mult: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u32..2_000_000).prop_map(Op::Wait),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(Op::Bytes),
        (
            0u8..4,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            1u8..6,
            0u32..2_000_000,
            0u32..2_000_000
        )
            .prop_map(|(sta, your_ours, p, f, d, mult, tx, rx)| Op::Pkt {
                sta,
                your_ours,
                p,
                f,
                d,
                mult,
                tx,
                rx
            }),
        any::<bool>().prop_map(Op::Admin),
        (0u16..2000, 0u16..2000, 0u8..5).prop_map(|(tx_ms, rx_ms, mult)| Op::Config {
            tx_ms,
            rx_ms,
            mult
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
        if let Ok(p) = ControlPacket::decode(&b) {
            // What decodes re-encodes to the same mandatory section
            // (without the A bit, which we never send).
            let e = p.encode();
            prop_assert_eq!(e[0], b[0]);
            prop_assert_eq!(e[1], b[1] & !0x04);
            prop_assert_eq!(&e[2..3], &b[2..3]);
            prop_assert_eq!(&e[4..24], &b[4..24]);
        }
    }

    #[test]
    fn encode_decode_round_trip(diag in 0u8..32, sta in 0u8..4, p in any::<bool>(), f in any::<bool>(),
                                c in any::<bool>(), d in any::<bool>(), mult in 1u8..=255,
                                my in 1u32.., your in any::<u32>(), tx in any::<u32>(), rx in any::<u32>(), echo in any::<u32>()) {
        let state = State::from_code(sta);
        let your = if matches!(state, State::Init | State::Up) { your.max(1) } else { your };
        let pk = ControlPacket { diag: Diag::from_code(diag), state, poll: p, final_: f, cpi: c, demand: d,
            detect_mult: mult, my_disc: my, your_disc: your, desired_min_tx_us: tx, required_min_rx_us: rx,
            required_min_echo_rx_us: echo, auth: None };
        prop_assert_eq!(ControlPacket::decode(&pk.encode()), Ok(pk));
    }

    #[test]
    fn session_transitions_follow_the_figure(ops in proptest::collection::vec(op(), 1..120), seed in any::<u64>()) {
        let mut s = Session::new(SessionConfig { desired_min_tx: Duration::from_millis(10),
            required_min_rx: Duration::from_millis(10), detect_mult: 3 }, 7, seed);
        let mut now = Instant::from_secs(1);
        for op in ops {
            let before = s.state();
            let is_wait = matches!(op, Op::Wait(_));
            let step = match op {
                Op::Wait(us) => {
                    now = now + Duration::from_micros(u64::from(us));
                    let mut last = bfd::Step::default();
                    // Everything due by now, bounded.
                    for _ in 0..10_000 {
                        if s.next_deadline() > now { break; }
                        let st = s.poll(now);
                        if let Some(t) = st.transition {
                            prop_assert!(allowed(t.from, t.to), "{:?}", t);
                        }
                        last = st;
                    }
                    prop_assert!(s.next_deadline() > now, "deadline stuck at {:?}", s.next_deadline());
                    last
                }
                Op::Bytes(b) => match ControlPacket::decode(&b) {
                    Ok(p) => s.receive(now, &p),
                    Err(_) => bfd::Step::default(),
                },
                Op::Pkt { sta, your_ours, p, f, d, mult, tx, rx } => {
                    let state = State::from_code(sta);
                    let pk = ControlPacket { diag: Diag::None, state, poll: p, final_: f, cpi: false, demand: d,
                        detect_mult: mult, my_disc: 99, your_disc: if your_ours { 7 } else { 0 },
                        desired_min_tx_us: tx, required_min_rx_us: rx, required_min_echo_rx_us: 0, auth: None };
                    match ControlPacket::decode(&pk.encode()) {
                        Ok(pk) => s.receive(now, &pk),
                        Err(_) => bfd::Step::default(),
                    }
                }
                Op::Admin(down) => s.set_admin_down(now, down),
                Op::Config { tx_ms, rx_ms, mult } => {
                    s.set_config(now, SessionConfig { desired_min_tx: Duration::from_millis(u64::from(tx_ms)),
                        required_min_rx: Duration::from_millis(u64::from(rx_ms)), detect_mult: mult });
                    bfd::Step::default()
                }
            };
            if let Some(t) = step.transition {
                prop_assert!(allowed(t.from, t.to), "{:?}", t);
            } else if !is_wait {
                // Every change is reported (those of Wait's loop above).
                prop_assert_eq!(before, s.state());
            }
            if let Some(p) = step.send {
                prop_assert!(!(p.poll && p.final_));
                prop_assert_eq!(p.state, s.state());
                prop_assert_eq!(p.my_disc, 7);
                // Not Up: at least one second advertised (§6.8.3).
                if s.state() != State::Up {
                    prop_assert!(p.desired_min_tx_us >= 1_000_000);
                }
                prop_assert!(ControlPacket::decode(&p.encode()).is_ok() || p.your_disc == 0);
            }
        }
    }
}
