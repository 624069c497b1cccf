//! The MRT records: the same seed gives the same bytes, `bgpdump -m`
//! reads the trace and the snapshot, and what it prints matches what the
//! simulation did.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use mrt::{Body, MrtReader, MrtWriter};
use netsim::trace::{write_snapshot, MrtTrace, Realism};
use netsim::{Action, Event, NodeId, Scenario, Sim, SimConfig};

fn scenario(g: &netsim::Graph) -> Scenario {
    let l = g.links[3];
    let (a, b) = (BASE_ASN + l.a, BASE_ASN + l.b);
    let at = |s: u64| Duration::from_secs(s);
    let events = vec![
        Event {
            at: at(300),
            action: Action::LinkDown(a, b),
        },
        Event {
            at: at(400),
            action: Action::LinkUp(a, b),
        },
        Event {
            at: at(500),
            action: Action::Flap {
                asn: BASE_ASN + 40,
                prefix: prefix_of(40),
                period: at(40),
                count: 2,
            },
        },
        Event {
            at: at(700),
            action: Action::Hijack(BASE_ASN + 45, prefix_of(3)),
        },
        Event {
            at: at(800),
            action: Action::Surge {
                duration: at(30),
                rate: 1.0,
                hold: at(40),
            },
        },
        Event {
            at: at(900),
            action: Action::Leak(BASE_ASN + 47),
        },
        Event {
            at: at(1000),
            action: Action::SessionReset(a, b),
        },
    ];
    Scenario { events }
}

const TRACED: [NodeId; 3] = [0, 5, 20];

/// The trace bytes and realism figures of one run.
fn trace(seed: u64) -> (Vec<u8>, Realism, Sim) {
    trace_with(seed, 1)
}

fn trace_with(seed: u64, threads: usize) -> (Vec<u8>, Realism, Sim) {
    let g = random_graph(50, 77);
    let mut s = Sim::new(
        &g,
        SimConfig {
            seed,
            threads,
            ..SimConfig::default()
        },
    );
    assert_eq!(s.threads(), threads);
    for x in TRACED {
        s.trace(x);
    }
    s.start(&scenario(&g)).unwrap();
    let mut obs = (
        MrtTrace::new(MrtWriter::new(Vec::new()), s.asns()),
        Realism::default(),
    );
    s.run_to_end(u64::MAX, &mut obs);
    let (t, r) = obs;
    (t.finish().unwrap(), r, s)
}

#[test]
fn the_same_seed_gives_a_byte_identical_trace() {
    let (a, _, _) = trace(7);
    let (b, _, _) = trace(7);
    let (c, _, _) = trace(8);
    assert!(a.len() > 10_000, "{} bytes", a.len());
    assert!(a == b, "same seed, different traces");
    // Another seed draws other MRAI jitter and surge flaps.
    assert!(a != c);
}

#[test]
fn two_threads_give_a_deterministic_trace_and_the_sequential_ribs() {
    let (a, ra, sa) = trace_with(7, 2);
    let (b, _, _) = trace_with(7, 2);
    assert!(a == b, "two threads, same seed, different traces");
    let (_, r1, s1) = trace_with(7, 1);
    // Same events and jitter: the same messages reach the traced ASes and
    // every AS ends with the same routes (only the order of messages that
    // arrive at the same instant may differ).
    assert_eq!(ra.updates, r1.updates);
    assert_eq!(ra.prefixes, r1.prefixes);
    assert_eq!(sa.messages(), s1.messages());
    for x in 0..sa.len() as NodeId {
        assert_eq!(sa.best_routes(x), s1.best_routes(x), "AS index {x}");
    }
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("netsim-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn bgpdump_reads_the_trace_and_it_matches_the_simulation() {
    let (bytes, realism, s) = trace(1);
    // Our reader: every record is a BGP4MP_ET message from a neighbour of
    // a traced AS, addressed to that AS.
    let mut rd = MrtReader::new(&bytes[..]);
    let (mut records, mut states) = (0u64, 0u64);
    while let Some(r) = rd.next_record() {
        let r = r.unwrap();
        assert!(r.header.microseconds.is_some());
        let peering = match &r.body {
            Body::Message(m) => m.peering,
            Body::StateChange(c) => {
                states += 1;
                c.peering
            }
            b => panic!("unexpected record {b:?}"),
        };
        let at = s.node(peering.local_as.0).unwrap();
        let from = s.node(peering.peer_as.0).unwrap();
        assert!(TRACED.contains(&at));
        assert!(s.neighbours(at).iter().any(|n| n.0 == from));
        assert_eq!(
            peering.peer_ip,
            std::net::IpAddr::V4(netsim::node_addr(from))
        );
        records += 1;
    }
    assert!(records > 100);
    // Every traced session came up at 0; the link-down/up and the reset
    // touch a traced AS only if one of its links is the one chosen.
    let first_up: usize = TRACED.iter().map(|&x| s.neighbours(x).len()).sum();
    assert!(states as usize >= first_up, "{states} state changes");

    let path = tmp("trace.mrt");
    std::fs::write(&path, &bytes).unwrap();
    let out = Command::new("bgpdump")
        .arg("-m")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let (mut a, mut w) = (0u64, 0u64);
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f[0], "BGP4MP_ET", "{line}");
        match f[2] {
            "A" => {
                a += 1;
                // The path starts with the sending neighbour's AS.
                let first = f[6].split(' ').next().unwrap();
                assert_eq!(first, f[4], "{line}");
            }
            "W" => w += 1,
            _ => {}
        }
    }
    // bgpdump prints one line per prefix: as many as the UPDATEs carried.
    assert_eq!(a + w, realism.prefixes, "A {a} W {w}");
    assert!(a > 0 && w > 0);
    assert!(realism.updates > 0 && realism.one_prefix_share() > 0.0);
    let report = realism.report();
    assert!(report.contains("RIS"), "{report}");
    std::fs::remove_file(&path).ok();
}

#[test]
fn snapshot_holds_every_path_of_the_traced_ases() {
    let (_, _, s) = trace(2);
    let mut w = MrtWriter::new(Vec::new());
    let n = write_snapshot(&s, &TRACED, s.now_ns(), &mut w).unwrap();
    let bytes = w.finish().unwrap();
    let want: usize = TRACED
        .iter()
        .map(|&x| s.all_paths(x).iter().filter(|r| r.from.is_some()).count())
        .sum();
    assert_eq!(n as usize, want);
    let path = tmp("snapshot.mrt");
    std::fs::write(&path, &bytes).unwrap();
    let out = Command::new("bgpdump")
        .arg("-m")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), want);
    for l in &lines {
        let f: Vec<&str> = l.split('|').collect();
        assert_eq!(f[0], "TABLE_DUMP2", "{l}");
        assert_eq!(f[6].split(' ').next().unwrap(), f[4], "{l}");
    }
    std::fs::remove_file(&path).ok();
}
