//! Prints the in-process throughput of each UPDATE pipeline mode and
//! thread count (prefixes/s, median and spread of R runs, ratios against
//! sequential measured in the same run). Runs are interleaved across the
//! modes (round-robin), so a load change on a shared machine hits every
//! mode alike. The workload is `testkit::inproc::shared_table`: N peers x M shared
//! prefixes, one feeder thread per peer (in `per-peer` the feeders do the
//! RIB work themselves, standing in for the sessions' own threads).
//!
//! `cargo run --release -p bgp-speaker --example pipeline_modes -- [N] [M] [R] [THREADS,...] [P]`
//! (defaults 10 20000 5 1,2,4,8 8; P is prefixes per UPDATE). An optional
//! 6th argument keeps only the named modes (`sharded,per-peer`, or with
//! the locking `per-peer/fine,worker-pool/stripes`), plus `sequential`
//! unless `nosequential` is named too (then ratios are against the first
//! mode left; `all`: every mode).
//! `per-peer` and `worker-pool` run with both lockings (`router.locks`):
//! `stripes` (8 coarse mutexes) and `fine` (64 nodes, traversal and
//! modify locks).
//!
//! A 7th argument `raw` hands every mode the UPDATEs as wire bodies, so
//! parsing is measured too: the feeder (session) threads parse them, as
//! sessions do, except in `worker-pool/…/streams` (`router.streams =
//! "per-worker"`, added to the modes then), where the workers parse. With `PIPELINE_SVG=FILE` in the environment it also
//! writes the speedup curve (median against `sequential`, per RIB thread
//! count, with the ideal line) as an SVG chart.

use std::time::{Duration, Instant};

use bgp_core::msg::DecodedUpdate;
use bgp_speaker::msg::{RawUpdates, StreamLink};
use bgp_speaker::pipeline::{Locks, Mode};
use bgp_wire::{AttrValue, NextHop, ParseCtx, PathAttr, UpdateMessage};
use testkit::inproc::{process_cpu, shared_table, timed_load_stats, FakePeer, InProc};

/// Batches of UPDATE bodies, per peer.
type RawTable = Vec<Vec<bytes::Bytes>>;

fn ctx() -> ParseCtx {
    ParseCtx {
        four_octet_asn: true,
        ..ParseCtx::legacy()
    }
}

/// `table` as wire bodies (IPv4 NLRI with a NEXT_HOP attribute, as
/// `shared_table` makes them).
fn encode(table: &[Vec<DecodedUpdate>]) -> RawTable {
    table
        .iter()
        .map(|batch| {
            batch
                .iter()
                .map(|u| {
                    let mut attributes = Vec::new();
                    if let Some(a) = u.attrs.as_ref() {
                        attributes.extend(a.attrs().iter().cloned());
                        if let Some(NextHop::V4(nh)) = a.next_hop() {
                            attributes.push(PathAttr::new(AttrValue::NextHop(nh)));
                        }
                    }
                    let m = UpdateMessage {
                        withdrawn: u.withdraw.clone(),
                        attributes,
                        nlri: u.announce.clone(),
                    };
                    let mut out = Vec::new();
                    m.encode_body(ctx(), &mut out).expect("encodable");
                    bytes::Bytes::from(out)
                })
                .collect()
        })
        .collect()
}

/// `timed_load_cpu` with wire bodies: each feeder hands its batches over
/// raw, and the mode decides who parses them.
fn timed_load_raw_cpu(
    mode: Mode,
    peers: &[FakePeer],
    tables: &[RawTable],
    expected: usize,
) -> (Duration, Duration) {
    let Ok(ip) = InProc::start(mode, peers) else {
        return (Duration::ZERO, Duration::ZERO);
    };
    for i in 0..peers.len() {
        ip.up(i);
    }
    let _ = ip.settle();
    let (tx_reset, _rx_reset) = tokio::sync::mpsc::unbounded_channel();
    let t0 = Instant::now();
    let c0 = process_cpu();
    std::thread::scope(|s| {
        for (i, batches) in tables.iter().enumerate() {
            let tx = ip.sender();
            let link = StreamLink::new(
                i as u64 + 1,
                format!("peer{i}"),
                Default::default(),
                tx_reset.clone(),
            );
            s.spawn(move || {
                for bodies in batches {
                    let raw = RawUpdates {
                        bodies: bodies.clone(),
                        ctx: ctx(),
                        rx: bgp_core::decode::Receiver::of(true),
                        link: link.clone(),
                    };
                    tx.blocking_send_raw(InProc::id(i), raw);
                }
            });
        }
    });
    let _ = ip.settle();
    let dt = t0.elapsed();
    let cpu = process_cpu().saturating_sub(c0);
    let routes = ip.loc_rib().map(|r| r.len()).unwrap_or(0);
    assert_eq!(routes, expected, "{mode:?}: Loc-RIB size");
    for i in 0..peers.len() {
        let _ = ip.take_output(i);
    }
    ip.shutdown();
    (dt, cpu)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (n, m, reps) = (arg(0, 10), arg(1, 20_000), arg(2, 5).max(1));
    let threads: Vec<usize> = args
        .get(3)
        .map(|s| s.split(',').filter_map(|t| t.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 4, 8]);
    let per_update = arg(4, 8);
    let peers: Vec<FakePeer> = (0..n).map(FakePeer::nth).collect();
    let tables: Vec<_> = peers
        .iter()
        .enumerate()
        .map(|(i, p)| shared_table(i, p.asn, m, per_update))
        .collect();
    let raw = args.get(6).is_some_and(|a| a == "raw");
    let raw_tables: Vec<RawTable> = if raw {
        tables.iter().map(|t| encode(t)).collect()
    } else {
        Vec::new()
    };
    let mut modes = vec![
        Mode::Sequential,
        Mode::PerPeer(Locks::Stripes),
        Mode::PerPeer(Locks::Fine),
    ];
    modes.extend(threads.iter().map(|&t| Mode::Sharded(t)));
    for locks in [Locks::Stripes, Locks::Fine] {
        modes.extend(threads.iter().map(|&t| Mode::WorkerPool(t, locks)));
    }
    if raw {
        for locks in [Locks::Stripes, Locks::Fine] {
            modes.extend(threads.iter().map(|&t| Mode::WorkerStreams(t, locks)));
        }
    }
    // (wall, CPU, work counters: best-path changes exported and UPDATEs
    // encoded, counted on decoded input only).
    let load = |mode: Mode| {
        if raw {
            let (w, c) = timed_load_raw_cpu(mode, &peers, &raw_tables, m);
            (w, c, None)
        } else {
            let st = timed_load_stats(mode, &peers, &tables);
            (st.wall, st.cpu, Some((st.best_changes, st.updates_sent)))
        }
    };
    // Optional 6th argument: which modes to run (names, comma-separated;
    // sequential always runs, as the baseline, unless `nosequential` is
    // named too: then the first mode left is the baseline), e.g. for
    // profiling one mode alone.
    if let Some(only) = args.get(5).filter(|a| *a != "all") {
        let only: Vec<&str> = only.split(',').collect();
        let base = !only.contains(&"nosequential");
        modes.retain(|m| {
            (base && *m == Mode::Sequential)
                || only.contains(&m.name())
                || only.contains(&m.label().as_str())
        });
    }
    if modes.is_empty() {
        eprintln!("pipeline_modes: no mode left to run");
        return;
    }
    let mut secs: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut work: Vec<Vec<(u64, u64)>> = vec![Vec::new(); modes.len()];
    // One warm-up of each, not counted.
    for mode in &modes {
        load(*mode);
    }
    for _ in 0..reps {
        for (i, mode) in modes.iter().enumerate() {
            let (w, c, counts) = load(*mode);
            secs[i].push(w.as_secs_f64());
            cpu[i].push(c.as_secs_f64());
            work[i].extend(counts);
        }
    }
    let prefixes = (n * m) as f64;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&mut secs[0].clone());
    println!(
        "{n} peers x {m} shared prefixes, {per_update} per UPDATE, {reps} runs each, {} CPUs{}",
        bgp_speaker::pipeline::default_threads(),
        if raw { ", raw (parsing measured)" } else { "" }
    );
    println!(
        "| mode | RIB threads | median s | min..max s | prefixes/s | vs {} | CPU s (median) |",
        modes[0].label()
    );
    // per-peer: the feeder (session) threads do the RIB work, one per peer.
    println!("|---|---|---|---|---|---|---|");
    let mut curves: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (i, mode) in modes.iter().enumerate() {
        let mut v = secs[i].clone();
        let med = median(&mut v);
        let (lo, hi) = (v[0], v[v.len() - 1]);
        let c = median(&mut cpu[i].clone());
        println!(
            "| {} | {} | {med:.3} | {lo:.3}..{hi:.3} | {:.0} | {:.2}x | {c:.3} |",
            mode.label(),
            mode.threads()
                .map_or_else(|| format!("{n} (per peer)"), |t| t.to_string()),
            prefixes / med,
            base / med
        );
        if let Some(t) = mode.threads() {
            let name = mode.label();
            match curves.iter_mut().find(|(n, _)| *n == name) {
                Some((_, pts)) => pts.push((t as f64, base / med)),
                None => curves.push((name, vec![(t as f64, base / med)])),
            }
        }
    }
    // Where extra CPU goes: a mode that coalesces fewer best-path changes
    // per export round exports (and encodes) more for the same table.
    if !raw {
        println!();
        println!(
            "| mode | RIB threads | best-path changes exported (median) | UPDATEs encoded (median) |"
        );
        println!("|---|---|---|---|");
        for (i, mode) in modes.iter().enumerate() {
            let mut b: Vec<u64> = work[i].iter().map(|w| w.0).collect();
            let mut u: Vec<u64> = work[i].iter().map(|w| w.1).collect();
            b.sort_unstable();
            u.sort_unstable();
            println!(
                "| {} | {} | {} | {} |",
                mode.label(),
                mode.threads()
                    .map_or_else(|| format!("{n} (per peer)"), |t| t.to_string()),
                b.get(b.len() / 2).copied().unwrap_or(0),
                u.get(u.len() / 2).copied().unwrap_or(0)
            );
        }
    }
    if let Ok(path) = std::env::var("PIPELINE_SVG") {
        let top = threads.iter().copied().max().unwrap_or(1) as f64;
        let mut chart = plot::LineChart::new(
            &format!(
                "pipeline modes: {n} peers x {m} shared prefixes, {per_update} per UPDATE, {} CPUs",
                bgp_speaker::pipeline::default_threads()
            ),
            "RIB threads",
            "speedup over sequential (median)",
        )
        .series("ideal", vec![(1.0, 1.0), (top, top)]);
        for (name, pts) in curves {
            chart = chart.series_with_markers(&name, pts);
        }
        match std::fs::write(&path, chart.to_svg()) {
            Ok(()) => println!("chart: {path}"),
            Err(e) => eprintln!("pipeline_modes: {path}: {e}"),
        }
    }
}
