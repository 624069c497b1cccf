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
//! 6th argument keeps only the named modes (`sharded,per-peer`), plus
//! `sequential` unless `nosequential` is named too (then ratios are
//! against the first mode left). With `PIPELINE_SVG=FILE` in the environment it also
//! writes the speedup curve (median against `sequential`, per RIB thread
//! count, with the ideal line) as an SVG chart.

use bgp_speaker::pipeline::Mode;
use testkit::inproc::{shared_table, timed_load_cpu, timed_load_stats, FakePeer};

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
    let mut modes = vec![Mode::Sequential, Mode::PerPeer];
    modes.extend(threads.iter().map(|&t| Mode::Sharded(t)));
    modes.extend(threads.iter().map(|&t| Mode::WorkerPool(t)));
    // Optional 6th argument: which modes to run (names, comma-separated;
    // sequential always runs, as the baseline, unless `nosequential` is
    // named too: then the first mode left is the baseline), e.g. for
    // profiling one mode alone.
    if let Some(only) = args.get(5) {
        let only: Vec<&str> = only.split(',').collect();
        let base = !only.contains(&"nosequential");
        modes.retain(|m| (base && *m == Mode::Sequential) || only.contains(&m.name()));
    }
    if modes.is_empty() {
        eprintln!("pipeline_modes: no mode left to run");
        return;
    }
    let mut secs: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    // Work counters per run: best-path changes exported, UPDATEs encoded.
    let mut work: Vec<Vec<(u64, u64)>> = vec![Vec::new(); modes.len()];
    // One warm-up of each, not counted.
    for mode in &modes {
        timed_load_cpu(*mode, &peers, &tables);
    }
    for _ in 0..reps {
        for (i, mode) in modes.iter().enumerate() {
            let st = timed_load_stats(*mode, &peers, &tables);
            secs[i].push(st.wall.as_secs_f64());
            cpu[i].push(st.cpu.as_secs_f64());
            work[i].push((st.best_changes, st.updates_sent));
        }
    }
    let prefixes = (n * m) as f64;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&mut secs[0].clone());
    println!(
        "{n} peers x {m} shared prefixes, {per_update} per UPDATE, {reps} runs each, {} CPUs",
        bgp_speaker::pipeline::default_threads()
    );
    println!(
        "| mode | RIB threads | median s | min..max s | prefixes/s | vs {} | CPU s (median) |",
        modes[0].name()
    );
    // per-peer: the feeder (session) threads do the RIB work, one per peer.
    println!("|---|---|---|---|---|---|---|");
    let mut curves: Vec<(&'static str, Vec<(f64, f64)>)> = Vec::new();
    for (i, mode) in modes.iter().enumerate() {
        let mut v = secs[i].clone();
        let med = median(&mut v);
        let (lo, hi) = (v[0], v[v.len() - 1]);
        let c = median(&mut cpu[i].clone());
        println!(
            "| {} | {} | {med:.3} | {lo:.3}..{hi:.3} | {:.0} | {:.2}x | {c:.3} |",
            mode.name(),
            mode.threads()
                .map_or_else(|| format!("{n} (per peer)"), |t| t.to_string()),
            prefixes / med,
            base / med
        );
        if let Some(t) = mode.threads() {
            let name = mode.name();
            match curves.iter_mut().find(|(n, _)| *n == name) {
                Some((_, pts)) => pts.push((t as f64, base / med)),
                None => curves.push((name, vec![(t as f64, base / med)])),
            }
        }
    }
    // Where extra CPU goes: a mode that coalesces fewer best-path changes
    // per export round exports (and encodes) more for the same table.
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
            mode.name(),
            mode.threads()
                .map_or_else(|| format!("{n} (per peer)"), |t| t.to_string()),
            b[b.len() / 2],
            u[u.len() / 2]
        );
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
            chart = chart.series_with_markers(name, pts);
        }
        match std::fs::write(&path, chart.to_svg()) {
            Ok(()) => println!("chart: {path}"),
            Err(e) => eprintln!("pipeline_modes: {path}: {e}"),
        }
    }
}
