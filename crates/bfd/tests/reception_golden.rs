//! RFC 5880 §6.8.6 reception goldens: every row of
//! `tests/golden/reception.txt` is a session in a known state, one received
//! packet, and the expected state, diagnostic, transmission and discard.

use std::time::Duration;

use base::Instant;
use bfd::packet::{ControlPacket, Diag, State};
use bfd::session::{Discard, Session, SessionConfig, Step};

const OURS: u32 = 11;
const PEER: u32 = 22;

fn cfg() -> SessionConfig {
    SessionConfig {
        desired_min_tx: Duration::from_millis(10),
        required_min_rx: Duration::from_millis(10),
        detect_mult: 3,
    }
}

fn state(s: &str) -> State {
    match s {
        "AdminDown" => State::AdminDown,
        "Down" => State::Down,
        "Init" => State::Init,
        "Up" => State::Up,
        _ => panic!("unknown state {s}"),
    }
}

fn peer_pkt(sta: State, your: u32) -> ControlPacket {
    ControlPacket {
        diag: Diag::None,
        state: sta,
        poll: false,
        final_: false,
        cpi: false,
        demand: false,
        detect_mult: 3,
        my_disc: PEER,
        your_disc: your,
        desired_min_tx_us: 10_000,
        required_min_rx_us: 10_000,
        required_min_echo_rx_us: 0,
        auth: None,
    }
}

/// A session brought to `local` by what a peer would send.
fn session_in(local: &str, t: Instant) -> Session {
    let mut s = Session::new(cfg(), OURS, 5);
    match local {
        "Down" => {}
        "Init" => {
            s.receive(t, &peer_pkt(State::Down, 0));
        }
        "Up" | "UpPolling" => {
            s.receive(t, &peer_pkt(State::Init, OURS));
            assert!(s.polling());
            if local == "Up" {
                let mut f = peer_pkt(State::Up, OURS);
                f.final_ = true;
                s.receive(t, &f);
                assert!(!s.polling());
            }
        }
        "AdminDown" => {
            s.receive(t, &peer_pkt(State::Init, OURS));
            s.set_admin_down(t, true);
        }
        _ => panic!("unknown local state {local}"),
    }
    assert_eq!(
        s.state(),
        state(if local == "UpPolling" { "Up" } else { local })
    );
    s
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The received packet of a row, as bytes.
fn wire(fields: &str) -> Vec<u8> {
    let mut p = peer_pkt(State::Down, 0);
    let (mut vers, mut len, mut m, mut a, mut trunc, mut auth) =
        (None, None, false, false, None, None);
    for f in fields.split_whitespace() {
        let (k, v) = f.split_once('=').unwrap_or((f, ""));
        let n = || v.parse::<u32>().unwrap();
        match k {
            "sta" => p.state = state(v),
            "your" => {
                p.your_disc = match v {
                    "0" => 0,
                    "ours" => OURS,
                    "other" => 99,
                    _ => panic!("your={v}"),
                }
            }
            "P" => p.poll = true,
            "F" => p.final_ = true,
            "D" => p.demand = true,
            "A" => a = true,
            "M" => m = true,
            "diag" => p.diag = Diag::from_code(n() as u8),
            "mult" => p.detect_mult = n() as u8,
            "tx" => p.desired_min_tx_us = n(),
            "rx" => p.required_min_rx_us = n(),
            "mydisc" => p.my_disc = n(),
            "vers" => vers = Some(n() as u8),
            "len" => len = Some(n() as u8),
            "trunc" => trunc = Some(n() as usize),
            "auth" => auth = Some(hex(v)),
            _ => panic!("unknown field {k}"),
        }
    }
    let mut b = p.encode().to_vec();
    if let Some(x) = auth {
        b.extend_from_slice(&x);
        a = true;
        b[3] = b.len() as u8;
    }
    if a {
        b[1] |= 0x04;
    }
    if m {
        b[1] |= 0x01;
    }
    if let Some(v) = vers {
        b[0] = (b[0] & 0x1f) | (v << 5);
    }
    if let Some(l) = len {
        b[3] = l;
    }
    if let Some(t) = trunc {
        b.truncate(t);
    }
    b
}

fn discard_name(d: Option<Discard>) -> &'static str {
    match d {
        None => "-",
        Some(Discard::Authentication) => "authentication",
        Some(Discard::YourDiscriminator) => "your-discriminator",
        Some(Discard::AdminDown) => "admin-down",
    }
}

fn send_name(st: &Step) -> &'static str {
    match st.send {
        None => "none",
        Some(p) if p.final_ => {
            assert!(!p.poll, "P and F together");
            "final"
        }
        Some(p) if p.poll => "pkt+P",
        Some(_) => "pkt",
    }
}

#[test]
fn reception_goldens() {
    let text = include_str!("golden/reception.txt");
    let mut n = 0;
    let mut failures = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cols.len(), 3, "line {}: three columns", i + 1);
        n += 1;
        let bytes = wire(cols[1]);
        let decoded = ControlPacket::decode(&bytes);
        let mut got: Vec<(String, String)> = Vec::new();
        if cols[0] == "decode" {
            let v = match decoded {
                Ok(_) => "ok".to_string(),
                Err(e) => format!("error={}", e.name()),
            };
            if v != cols[2] {
                failures.push(format!("line {}: {line}\n   got {v}", i + 1));
            }
            continue;
        }
        let p = match decoded {
            Ok(p) => p,
            // A-bit rows without a section: give the session a parsed
            // section so that it is the session that rejects it.
            Err(_) if cols[1].split_whitespace().any(|f| f == "A") => {
                let mut b = bytes.clone();
                b.extend_from_slice(&[1, 4, 1, b'x']);
                b[3] = b.len() as u8;
                ControlPacket::decode(&b).expect("packet with a section")
            }
            Err(e) => panic!("line {}: does not decode: {e:?}", i + 1),
        };
        let t = Instant::from_secs(10);
        let mut s = session_in(cols[0], t);
        let st = s.receive(t, &p);
        if let Some(tr) = st.transition {
            assert_ne!(tr.from, tr.to, "line {}: a transition to itself", i + 1);
        }
        for kv in cols[2].split_whitespace() {
            let (k, want) = kv.split_once('=').unwrap();
            let have = match k {
                "state" => s.state().name().to_string(),
                "diag" => s.diag().name().to_string(),
                "send" => send_name(&st).to_string(),
                "discard" => discard_name(st.discard).to_string(),
                "polling" => if s.polling() { "yes" } else { "no" }.to_string(),
                "remote" => s.remote_disc().to_string(),
                "detect" => s.detection_time().as_micros().to_string(),
                _ => panic!("line {}: unknown expectation {k}", i + 1),
            };
            // Names of states are case-sensitive as written.
            if have != want {
                got.push((k.to_string(), have));
            }
        }
        if let Some(pk) = st.send {
            // What we send carries our state and discriminators.
            assert_eq!(pk.state, s.state(), "line {}", i + 1);
            assert_eq!(pk.my_disc, OURS, "line {}", i + 1);
        }
        if !got.is_empty() {
            failures.push(format!("line {}: {line}\n   got {got:?}", i + 1));
        }
    }
    assert!(n >= 40, "only {n} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
