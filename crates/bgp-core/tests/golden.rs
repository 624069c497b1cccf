//! Golden event scripts for the RIB core: each `tests/golden/NAME.events`
//! is replayed against a [`bgp_core::RibCore`] on a virtual clock and the
//! transcript (every input, then what the core put in its outbox: session
//! messages decoded back from their bytes, commands, notes, best-route
//! changes) compared with `NAME.expected`. `TESSERA_BLESS=1 cargo test -p
//! bgp-core --test golden` rewrites the transcripts; review the diff.
//!
//! Script syntax, one item per line (`#` starts a comment):
//!
//! ```text
//! peer N KEY=VALUE...          before the first event: configure peer N
//!                              (common::peer_meta lists the keys)
//! nht                          before the first event: next-hop tracking on
//! SECONDS up N [gr=S] [err] [v6] [mc]     (mc: IPv4 multicast negotiated)
//! SECONDS announce N PREFIX[,PREFIX...] [path=A,B] [nh=ADDR] [med=N] [lp=N]
//! SECONDS withdraw N PREFIX[,PREFIX...]
//! SECONDS announce-mc N PREFIX[,PREFIX...] [ATTRS as announce]   SAFI 2
//! SECONDS withdraw-mc N PREFIX[,PREFIX...]
//! SECONDS eor N ipv4|ipv6
//! SECONDS refresh N ipv4|ipv6 [req|borr|eorr]    the peer sent ROUTE-REFRESH
//! SECONDS refresh-in N [wire]  re-import (CLI `neighbor refresh` with wire)
//! SECONDS down N [graceful]
//! SECONDS queue N BYTES        the session has BYTES unwritten (back-pressure)
//! SECONDS remove N             the neighbour is deconfigured
//! SECONDS nexthop ADDR COST|down  next-hop resolution found ADDR
//!                              reachable at COST, or unreachable
//! SECONDS defer SECONDS2       we restarted: defer selection (RFC 4724
//!                              §4.1) for at most SECONDS2
//! SECONDS tick                 time passes (timers)
//! SECONDS propagate            an export round and flush
//! ```
//!
//! Before each line, if the core's next deadline is due, a `tick` runs at
//! that deadline (shown as `DEADLINE tick`). Sessions write what they are
//! handed at once (queued bytes drop to 0) unless a `queue` line set them.

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base::{AfiSafi, Instant};
use bgp_core::{route_refresh, Part, RibInput};
use bgp_rib::PeerId;
use bgp_wire::NotificationMessage;
use common::*;

fn at(s: &str) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(s.parse::<f64>().expect("seconds"))
}

fn family(s: &str) -> AfiSafi {
    match s {
        "ipv4" => AfiSafi::IPV4_UNICAST,
        "ipv6" => AfiSafi::IPV6_UNICAST,
        _ => panic!("family {s:?}"),
    }
}

fn run_script(text: &str) -> String {
    let mut h = Harness::new(Part::WHOLE);
    let mut out = String::new();
    let mut held: Vec<u16> = Vec::new();
    let mut vrps = rov::VrpTable::default();
    for raw in text.lines() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        if w[0] == "nht" {
            h.core.enable_nexthop_tracking();
            let _ = writeln!(out, "{line}");
            continue;
        }
        if w[0] == "rov" {
            h.core.enable_rov();
            let _ = writeln!(out, "{line}");
            continue;
        }
        if w[0] == "peer" {
            let n: u16 = w[1].parse().expect("peer N");
            h.add_peer(n, &w[2..]);
            let _ = writeln!(out, "{line}");
            continue;
        }
        let now = at(w[0]);
        while let Some(d) = h.core.next_deadline().filter(|d| *d <= now) {
            h.core.tick(d, &mut h.out);
            let _ = writeln!(out, "{:.3} DEADLINE tick", d.as_nanos() as f64 / 1e9);
            out.push_str(&h.drain(&held));
        }
        let _ = writeln!(out, "{line}");
        let n = || -> u16 { w[2].parse().expect("peer number") };
        match w[1] {
            "up" => h.up(now, n(), &w[3..]),
            "announce" => {
                let p: Vec<_> = w[3].split(',').map(prefix).collect();
                h.announce(now, n(), &p, &w[4..]);
            }
            "withdraw" => {
                let p: Vec<_> = w[3].split(',').map(prefix).collect();
                h.withdraw(now, n(), &p);
            }
            "announce-mc" => {
                let p: Vec<_> = w[3].split(',').map(prefix).collect();
                h.announce_mc(now, n(), &p, &w[4..]);
            }
            "withdraw-mc" => {
                let p: Vec<_> = w[3].split(',').map(prefix).collect();
                h.withdraw_mc(now, n(), &p);
            }
            "eor" => h.end_of_rib(now, n(), family(w[3])),
            "refresh" => {
                let subtype = match w.get(4).copied().unwrap_or("req") {
                    "req" => route_refresh::REQUEST,
                    "borr" => route_refresh::BORR,
                    "eorr" => route_refresh::EORR,
                    s => panic!("subtype {s:?}"),
                };
                h.input(
                    now,
                    RibInput::RouteRefresh {
                        peer: PeerId(n()),
                        family: family(w[3]),
                        subtype,
                        barrier: None,
                    },
                );
            }
            "refresh-in" => {
                let wire = w.get(3) == Some(&"wire");
                h.core.refresh_in(PeerId(n()), wire, &mut h.out);
            }
            "down" => h.down(now, n(), w.get(3) == Some(&"graceful")),
            "queue" => {
                let bytes: u64 = w[3].parse().expect("bytes");
                let p = n();
                h.status(p)
                    .out_queued_bytes
                    .store(bytes, std::sync::atomic::Ordering::Relaxed);
                held.retain(|x| *x != p);
                if bytes > 0 {
                    held.push(p);
                }
            }
            "remove" => {
                let note = NotificationMessage::new(6, 3, Vec::new());
                h.core.remove_peer(PeerId(n()), note, &mut h.out);
            }
            "nexthop" => {
                let (reachable, igp_cost) = match w[3] {
                    "down" => (false, 0),
                    c => (true, c.parse().expect("cost")),
                };
                let u = bgp_core::NexthopUpdate {
                    nexthop: w[2].parse().expect("next hop address"),
                    reachable,
                    igp_cost,
                };
                h.core.nexthop_update(u, &mut h.out);
            }
            "defer" => {
                let limit: u64 = w[2].parse().expect("defer SECONDS");
                h.core.defer_selection(Duration::from_secs(limit));
            }
            "vrp" => {
                // vrp +|- PREFIX MAXLEN ASN: one VRP announced or withdrawn.
                let p = prefix(w[3]);
                let v = rov::Vrp::new(
                    p,
                    w[4].parse().expect("max len"),
                    w[5].parse().expect("asn"),
                )
                .expect("vrp");
                let ok = match w[2] {
                    "+" => vrps.insert(v),
                    _ => vrps.remove(&v),
                };
                assert!(ok, "vrp {line}");
                let n = h.core.vrp_update(Arc::new(vrps.clone()), &[p]);
                let _ = writeln!(out, "  reevaluated {n}");
            }
            "tick" => h.core.tick(now, &mut h.out),
            "propagate" => h.core.propagate(now, &mut h.out),
            other => panic!("unknown event {other:?}"),
        }
        out.push_str(&h.drain(&held));
    }
    out
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn golden_scripts() {
    let bless = std::env::var_os("TESSERA_BLESS").is_some();
    let mut names: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("tests/golden")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "events"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "golden scripts missing");
    let mut failed = Vec::new();
    for path in names {
        let script = std::fs::read_to_string(&path).expect("script");
        let got = run_script(&script);
        let exp_path = path.with_extension("expected");
        if bless {
            std::fs::write(&exp_path, &got).expect("write expected");
            continue;
        }
        let want = std::fs::read_to_string(&exp_path).unwrap_or_default();
        if got != want {
            eprintln!(
                "--- {} differs; got:\n{got}\n--- want:\n{want}",
                path.display()
            );
            failed.push(path);
        }
    }
    assert!(failed.is_empty(), "golden transcripts differ: {failed:?}");
}
