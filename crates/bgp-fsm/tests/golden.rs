//! Golden conformance tests: each `tests/golden/NAME.events` script (events
//! with timestamps) is replayed and its action transcript compared with
//! `NAME.expected`. `TESSERA_BLESS=1 cargo test -p bgp-fsm --test golden`
//! rewrites the transcripts.
//!
//! Script syntax, one item per line (`#` starts a comment):
//!
//! ```text
//! config KEY=VALUE...        before the first event; keys below
//! SECONDS EVENT [ARGS]       e.g. `0.5 TcpCrAcked`, `3 NotifMsg 6/2`
//! SECONDS advance            only let time pass
//! ```
//!
//! Before each line, every timer due at or before its time fires, at its
//! own deadline. Config keys: `hold`, `keepalive`, `delay_open` (s), `passive`,
//! `active_only`, `damp=IDLE,MAX,STABLE` (s), `notif_without_open`,
//! `collision_established`, `no_auto_start`, `connect_retry` (s).
//! BgpOpen args: `as=`, `hold=`, `id=`, `version=`, `as4=ASN|none`.
//! NOTIFICATION-carrying events take `CODE/SUBCODE`.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base::{AfiSafi, Asn, Instant};
use bgp_fsm::{Action, ConnectionMode, DampConfig, Event, Fsm, Jitter, SessionConfig, Timer};
use bgp_wire::{Capability, NotificationMessage, OpenMessage};

fn secs(s: &str) -> Duration {
    Duration::from_secs_f64(
        s.parse::<f64>()
            .unwrap_or_else(|_| panic!("bad seconds {s:?}")),
    )
}

fn config(words: &[&str]) -> SessionConfig {
    let mut c = SessionConfig::new(Asn(65001), Some(Asn(65002)), Ipv4Addr::new(10, 0, 0, 1));
    for w in words {
        let (k, v) = w.split_once('=').unwrap_or((w, ""));
        match k {
            "hold" => c.hold_time = v.parse().expect("hold"),
            "keepalive" => c.keepalive = Some(v.parse().expect("keepalive")),
            "delay_open" => c.delay_open = Some(secs(v)),
            "connect_retry" => c.connect_retry_time = secs(v),
            "passive" => c.connection_mode = ConnectionMode::Passive,
            "active_only" => c.connection_mode = ConnectionMode::ActiveOnly,
            "notif_without_open" => c.send_notification_without_open = true,
            "collision_established" => c.collision_detect_established_state = true,
            "no_auto_start" => c.allow_automatic_start = false,
            "damp" => {
                let p: Vec<Duration> = v.split(',').map(secs).collect();
                assert_eq!(p.len(), 3, "damp=IDLE,MAX,STABLE");
                c.damp = Some(DampConfig {
                    idle_hold_time: p[0],
                    max_idle_hold_time: p[1],
                    stable_time: p[2],
                });
            }
            _ => panic!("unknown config key {k:?}"),
        }
    }
    c
}

fn notification(arg: Option<&&str>) -> NotificationMessage {
    let a = arg.expect("CODE/SUBCODE");
    let (c, s) = a.split_once('/').expect("CODE/SUBCODE");
    NotificationMessage::new(
        c.parse().expect("code"),
        s.parse().expect("subcode"),
        vec![],
    )
}

fn open(args: &[&str]) -> OpenMessage {
    let (mut asn, mut hold, mut id, mut version, mut as4) = (
        65002u32,
        90u16,
        Ipv4Addr::new(10, 0, 0, 2),
        4u8,
        Some(65002u32),
    );
    for w in args {
        let (k, v) = w.split_once('=').expect("KEY=VALUE");
        match k {
            "as" => {
                asn = v.parse().expect("as");
                if as4.is_some() {
                    as4 = Some(asn);
                }
            }
            "hold" => hold = v.parse().expect("hold"),
            "id" => id = v.parse().expect("id"),
            "version" => version = v.parse().expect("version"),
            "as4" => {
                as4 = if v == "none" {
                    None
                } else {
                    Some(v.parse().expect("as4"))
                }
            }
            _ => panic!("unknown OPEN key {k:?}"),
        }
    }
    let mut caps = vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST)];
    if let Some(a) = as4 {
        caps.push(Capability::FourOctetAsn(Asn(a)));
    }
    let mut m = OpenMessage::new(Asn(asn), hold, id, caps);
    m.version = version;
    m
}

fn event(name: &str, args: &[&str]) -> Event {
    match name {
        "ManualStart" => Event::ManualStart,
        "ManualStop" => Event::ManualStop,
        "AutomaticStart" => Event::AutomaticStart,
        "ManualStartWithPassiveTcpEstablishment" => Event::ManualStartWithPassiveTcpEstablishment,
        "AutomaticStartWithPassiveTcpEstablishment" => {
            Event::AutomaticStartWithPassiveTcpEstablishment
        }
        "AutomaticStartWithDampPeerOscillations" => Event::AutomaticStartWithDampPeerOscillations,
        "AutomaticStop" => Event::AutomaticStop,
        "TcpConnectionValid" => Event::TcpConnectionValid,
        "TcpCrInvalid" => Event::TcpCrInvalid,
        "TcpCrAcked" => Event::TcpCrAcked,
        "TcpConnectionConfirmed" => Event::TcpConnectionConfirmed,
        "TcpConnectionFails" => Event::TcpConnectionFails,
        "BgpOpen" => Event::BgpOpen(open(args)),
        "BgpHeaderErr" => Event::BgpHeaderErr(notification(args.first())),
        "BgpOpenMsgErr" => Event::BgpOpenMsgErr(notification(args.first())),
        "OpenCollisionDump" => Event::OpenCollisionDump,
        "NotifMsgVerErr" => Event::NotifMsgVerErr,
        "NotifMsg" => Event::NotifMsg(notification(args.first())),
        "KeepAliveMsg" => Event::KeepAliveMsg,
        "UpdateMsg" => Event::UpdateMsg,
        "UpdateMsgErr" => Event::UpdateMsgErr(notification(args.first())),
        _ => panic!("unknown event {name:?}"),
    }
}

fn t(i: Instant) -> String {
    let n = i.as_nanos();
    format!(
        "{}.{:03}",
        n / 1_000_000_000,
        (n % 1_000_000_000) / 1_000_000
    )
}

fn record(out: &mut String, now: Instant, what: &str, fsm: &Fsm, before: String, acts: &[Action]) {
    let a: Vec<String> = acts.iter().map(Action::describe).collect();
    let _ = writeln!(
        out,
        "{} {what}: {before} -> {:?} [{}] crc={}",
        t(now),
        fsm.state(),
        a.join(", "),
        fsm.connect_retry_counter()
    );
}

/// Replays a script; returns the transcript.
fn replay(script: &str) -> String {
    let mut fsm: Option<Fsm> = None;
    let mut out = String::new();
    let mut acts = Vec::new();
    for line in script.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words[0] == "config" {
            fsm = Some(Fsm::new(config(&words[1..])));
            continue;
        }
        let fsm = fsm.get_or_insert_with(|| Fsm::new(config(&[])));
        let at = Instant::ZERO + secs(words[0]);
        // Timers due first, each at its deadline.
        while let Some(d) = fsm.next_deadline().filter(|d| *d <= at) {
            let due: Vec<String> = Timer::PRIORITY
                .iter()
                .filter(|x| fsm.timer(**x) == Some(d))
                .map(|x| format!("{x:?}"))
                .collect();
            let before = format!("{:?}", fsm.state());
            acts.clear();
            fsm.on_timer(d, Jitter::NONE, &mut acts);
            record(
                &mut out,
                d,
                &format!("timer {}", due.join("+")),
                fsm,
                before,
                &acts,
            );
        }
        let name = words.get(1).copied().unwrap_or("advance");
        if name == "advance" {
            continue;
        }
        let ev = event(name, words.get(2..).unwrap_or(&[]));
        let before = format!("{:?}", fsm.state());
        acts.clear();
        fsm.handle(at, Jitter::NONE, ev, &mut acts);
        record(&mut out, at, name, fsm, before, &acts);
    }
    out
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn golden_transcripts() {
    let bless = std::env::var("TESSERA_BLESS").is_ok_and(|v| v == "1");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("tests/golden exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "events"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 5, "golden scripts missing");
    let mut failures = Vec::new();
    for s in &scripts {
        let got = replay(&std::fs::read_to_string(s).expect("read script"));
        let exp_path = s.with_extension("expected");
        if bless {
            std::fs::write(&exp_path, &got).expect("write expected");
            continue;
        }
        let want = std::fs::read_to_string(&exp_path)
            .unwrap_or_else(|_| panic!("{} missing; run with TESSERA_BLESS=1", exp_path.display()));
        if got != want {
            failures.push(format!(
                "{}:\n--- expected\n{want}--- got\n{got}",
                s.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
