//! Benchmark output: `runs.csv` (one row per run), `summary.csv` and
//! `summary.md` (median and spread per case and DUT), `results.json`
//! (everything, time series included), and SVG charts per case:
//! `prefixes-CASE.svg` (prefixes at the monitor over time, one line per
//! DUT, first converged repetition), `convergence-CASE.svg` (median
//! convergence per DUT with min-max whiskers, the generator ceiling
//! first) and, when tesserad ran in more than one thread count,
//! `speedup-CASE.svg` (speedup over `tesserad-sequential`, or over the
//! mode's smallest thread count, against threads).

use crate::daemons::{DutKind, DutSpec};
use crate::results::{BenchReport, ChurnStats, Measurement, Status, CEILING};
use replay::run::RunResult;
use std::fmt::Write as _;
use std::path::Path;

/// Median and spread of one (case, DUT) over its repetitions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SummaryRow {
    pub case: String,
    pub dut: String,
    pub runs: usize,
    pub converged: usize,
    /// (median, min, max) over converged runs.
    pub conv: Option<(f64, f64, f64)>,
    /// Median convergence minus the median generator ceiling.
    pub above_ceiling: Option<f64>,
    pub updates_per_s: Option<f64>,
    pub prefixes_per_s: Option<f64>,
    pub cpu: Option<(f64, f64, f64)>,
    /// Prefixes the monitor held at the end (median; traces differ per DUT).
    pub monitor_prefixes: Option<f64>,
    /// Peak RSS, MiB.
    pub rss_mib: Option<(f64, f64, f64)>,
    /// Median peak RSS divided by the sessions the DUT exports to (the
    /// monitor; with `--export all` every generator peer too), MiB.
    pub rss_per_exporting_peer_mib: Option<f64>,
    /// Median over converged runs of (peak RSS - idle RSS) / paths stored,
    /// for cases that say how many paths they store (scenario f, synthetic).
    pub bytes_per_path: Option<f64>,
    /// "converged", or the first status that was not.
    pub status: String,
}

/// (median, min, max); `None` for no values.
pub fn spread(v: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((med, v[0], v[n - 1]))
}

fn vals(runs: &[&Measurement], f: impl Fn(&RunResult) -> Option<f64>) -> Vec<f64> {
    runs.iter()
        .filter(|m| m.status == Status::Converged)
        .filter_map(|m| m.result.as_ref().and_then(&f))
        .collect()
}

/// One row per (case, DUT), the ceiling first, in run order.
pub fn summarize(rep: &BenchReport) -> Vec<SummaryRow> {
    let mut rows = Vec::new();
    for (case, _) in &rep.cases {
        let exporting = rep
            .exporting_peers
            .iter()
            .find(|(c, _)| c == case)
            .map_or(1, |&(_, n)| n.max(1));
        let mut duts: Vec<&str> = vec![CEILING];
        duts.extend(rep.duts.iter().map(String::as_str));
        let mut ceiling_med = None;
        for dut in duts {
            let runs: Vec<&Measurement> = rep
                .runs
                .iter()
                .filter(|m| &m.case == case && m.dut == dut)
                .collect();
            if runs.is_empty() {
                continue;
            }
            let conv = spread(&vals(&runs, |r| r.convergence_secs));
            if dut == CEILING {
                ceiling_med = conv.map(|c| c.0);
            }
            let status = runs.iter().find(|m| m.status != Status::Converged).map_or(
                "converged".to_string(),
                |m| {
                    let d = m.status.detail();
                    if d.is_empty() {
                        m.status.word().to_string()
                    } else {
                        format!("{}: {d}", m.status.word())
                    }
                },
            );
            let rss_mib = spread(&vals(&runs, |r| {
                r.dut_peak_rss_kib.map(|k| k as f64 / 1024.0)
            }));
            let paths = rep.paths.iter().find(|(c, _)| c == case).map(|p| p.1);
            let bpp: Vec<f64> = runs
                .iter()
                .filter(|m| m.status == Status::Converged && dut != CEILING)
                .filter_map(|m| {
                    let peak = m.result.as_ref()?.dut_peak_rss_kib?;
                    bytes_per_path(peak, m.baseline_rss_kib?, paths?)
                })
                .collect();
            rows.push(SummaryRow {
                case: case.clone(),
                dut: dut.to_string(),
                runs: runs.len(),
                converged: runs
                    .iter()
                    .filter(|m| m.status == Status::Converged)
                    .count(),
                conv,
                above_ceiling: match (conv, ceiling_med) {
                    (Some(c), Some(g)) if dut != CEILING => Some((c.0 - g).max(0.0)),
                    _ => None,
                },
                updates_per_s: spread(&vals(&runs, |r| r.updates_per_sec)).map(|s| s.0),
                prefixes_per_s: spread(&vals(&runs, |r| r.prefixes_per_sec)).map(|s| s.0),
                cpu: spread(&vals(&runs, |r| r.dut_cpu_secs)),
                monitor_prefixes: spread(&vals(&runs, |r| r.monitor_prefixes.map(|p| p as f64)))
                    .map(|s| s.0),
                rss_mib,
                rss_per_exporting_peer_mib: rss_mib
                    .filter(|_| dut != CEILING)
                    .map(|r| r.0 / exporting as f64),
                bytes_per_path: spread(&bpp).map(|s| s.0),
                status,
            });
        }
    }
    rows
}

/// (peak - idle) KiB over `paths`, in bytes; `None` without paths.
pub fn bytes_per_path(peak_kib: u64, idle_kib: u64, paths: u64) -> Option<f64> {
    (paths > 0).then(|| peak_kib.saturating_sub(idle_kib) as f64 * 1024.0 / paths as f64)
}

fn clean(s: &str) -> String {
    s.replace([',', '"', '\n', '\r', '|'], " ")
}

fn o(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x:.3}"))
}

fn o3(v: Option<(f64, f64, f64)>) -> [String; 3] {
    match v {
        Some((a, b, c)) => [format!("{a:.3}"), format!("{b:.3}"), format!("{c:.3}")],
        None => Default::default(),
    }
}

pub fn runs_csv(rep: &BenchReport) -> String {
    let mut s = format!("case,dut,rep,status,detail,{}\n", RunResult::CSV_HEADER);
    for m in &rep.runs {
        let label = format!("{}/{}/{}", m.case, m.dut, m.rep);
        let row = m.result.as_ref().map_or_else(
            || {
                format!(
                    "{label}{}",
                    ",".repeat(RunResult::CSV_HEADER.matches(',').count())
                )
            },
            |r| r.csv_row(&label),
        );
        let _ = writeln!(
            s,
            "{},{},{},{},{},{row}",
            clean(&m.case),
            clean(&m.dut),
            m.rep,
            m.status.word(),
            clean(&m.status.detail())
        );
    }
    s
}

pub const SUMMARY_HEADER: &str = "case,dut,runs,converged,conv_median_s,conv_min_s,conv_max_s,above_ceiling_s,updates_per_s,prefixes_per_s,cpu_median_s,cpu_min_s,cpu_max_s,rss_median_mib,rss_min_mib,rss_max_mib,rss_per_exporting_peer_mib,bytes_per_path,status";

pub fn summary_csv(rows: &[SummaryRow]) -> String {
    let mut s = format!("{SUMMARY_HEADER}\n");
    for r in rows {
        let [cm, cl, ch] = o3(r.conv);
        let [pm, pl, ph] = o3(r.cpu);
        let [rm, rl, rh] = o3(r.rss_mib);
        let _ = writeln!(
            s,
            "{},{},{},{},{cm},{cl},{ch},{},{},{},{pm},{pl},{ph},{rm},{rl},{rh},{},{},{}",
            clean(&r.case),
            clean(&r.dut),
            r.runs,
            r.converged,
            o(r.above_ceiling),
            o(r.updates_per_s),
            o(r.prefixes_per_s),
            o(r.rss_per_exporting_peer_mib),
            o(r.bytes_per_path),
            clean(&r.status)
        );
    }
    s
}

/// A Markdown table for docs/BENCHMARKS.md.
pub fn summary_md(rep: &BenchReport, rows: &[SummaryRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Started {} (UTC), scale {}, {} repetition(s); median [min-max].\n",
        rep.started, rep.scale, rep.reps
    );
    if let Some(p) = &rep.placement {
        let _ = writeln!(s, "{p}.\n");
    }
    s.push_str("| case | DUT | converged | convergence s | above ceiling s | prefixes/s | CPU-s | peak RSS MiB | RSS MiB / exporting peer | bytes/path | at monitor | note |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let f = |v: Option<(f64, f64, f64)>, p: usize| {
        v.map_or("-".to_string(), |(m, l, h)| {
            format!("{m:.p$} [{l:.p$}-{h:.p$}]")
        })
    };
    for r in rows {
        let note = if r.status == "converged" {
            String::new()
        } else {
            clean(&r.status).chars().take(120).collect()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {note} |",
            r.case,
            r.dut,
            r.converged,
            r.runs,
            f(r.conv, 2),
            r.above_ceiling.map_or("-".into(), |x| format!("{x:.2}")),
            r.prefixes_per_s.map_or("-".into(), |x| format!("{x:.0}")),
            f(r.cpu, 2),
            f(r.rss_mib, 0),
            r.rss_per_exporting_peer_mib
                .map_or("-".into(), |x| format!("{x:.2}")),
            r.bytes_per_path.map_or("-".into(), |x| format!("{x:.0}")),
            r.monitor_prefixes.map_or("-".into(), |x| format!("{x:.0}")),
        );
    }
    let churn = churn_md(rep);
    if !churn.is_empty() {
        s.push('\n');
        s.push_str(&churn);
    }
    s.push_str("\nVersions:\n\n");
    for (d, v) in &rep.versions {
        let _ = writeln!(s, "- {d}: {v}");
    }
    s
}

pub fn to_json(rep: &BenchReport, rows: &[SummaryRow]) -> serde_json::Value {
    let t = |v: Option<(f64, f64, f64)>| {
        v.map(|(m, l, h)| serde_json::json!({"median": m, "min": l, "max": h}))
    };
    serde_json::json!({
        "started": rep.started,
        "scale": rep.scale,
        "reps": rep.reps,
        "placement": rep.placement,
        "versions": rep.versions.iter().map(|(d, v)| serde_json::json!({"dut": d, "version": v})).collect::<Vec<_>>(),
        "cases": rep.cases.iter().map(|(n, a)| serde_json::json!({"name": n, "about": a})).collect::<Vec<_>>(),
        "summary": rows.iter().map(|r| serde_json::json!({
            "case": r.case, "dut": r.dut, "runs": r.runs, "converged": r.converged,
            "convergence_s": t(r.conv), "above_ceiling_s": r.above_ceiling,
            "updates_per_s": r.updates_per_s, "prefixes_per_s": r.prefixes_per_s,
            "dut_cpu_s": t(r.cpu), "monitor_prefixes": r.monitor_prefixes, "dut_peak_rss_mib": t(r.rss_mib), "rss_per_exporting_peer_mib": r.rss_per_exporting_peer_mib, "bytes_per_path": r.bytes_per_path, "status": r.status,
        })).collect::<Vec<_>>(),
        "runs": rep.runs.iter().map(|m| {
            let mut v = m.result.as_ref().map_or_else(
                || serde_json::json!({}),
                |r| r.to_json(&format!("{}/{}/{}", m.case, m.dut, m.rep)),
            );
            if let Some(obj) = v.as_object_mut() {
                obj.insert("case".into(), m.case.clone().into());
                obj.insert("dut".into(), m.dut.clone().into());
                obj.insert("rep".into(), m.rep.into());
                obj.insert("status".into(), m.status.word().into());
                obj.insert("detail".into(), m.status.detail().into());
                obj.insert("baseline_rss_kib".into(), m.baseline_rss_kib.into());
                if let Some(c) = &m.churn {
                    obj.insert("churn".into(), churn_json(c));
                }
            }
            v
        }).collect::<Vec<_>>(),
    })
}

fn prefixes_chart(rep: &BenchReport, case: &str) -> plot::LineChart {
    let mut c = plot::LineChart::new(
        &format!("Prefixes at the monitor: {case}"),
        "seconds since sending began",
        "prefixes",
    );
    let mut duts: Vec<&str> = rep.duts.iter().map(String::as_str).collect();
    duts.push(CEILING);
    for d in duts {
        let first = rep
            .runs
            .iter()
            .find(|m| m.case == case && m.dut == d && m.status == Status::Converged);
        if let Some(r) = first.and_then(|m| m.result.as_ref()) {
            let pts: Vec<(f64, f64)> = if d == CEILING {
                // The sink counts every copy received; show what was sent.
                r.series
                    .iter()
                    .map(|s| (s.t, s.prefixes_sent as f64))
                    .collect()
            } else {
                r.series
                    .iter()
                    .map(|s| (s.t, s.monitor_prefixes as f64))
                    .collect()
            };
            let name = if d == CEILING { "generator (sent)" } else { d };
            c = c.series(name, pts);
        }
    }
    c
}

fn convergence_chart(rows: &[SummaryRow], case: &str) -> plot::BarChart {
    let rs: Vec<&SummaryRow> = rows.iter().filter(|r| r.case == case).collect();
    let cats: Vec<&str> = rs.iter().map(|r| r.dut.as_str()).collect();
    let values = rs
        .iter()
        .map(|r| r.conv.map_or(f64::NAN, |c| c.0))
        .collect();
    let spread = rs
        .iter()
        .map(|r| r.conv.map_or((f64::NAN, f64::NAN), |c| (c.1, c.2)))
        .collect();
    plot::BarChart::new(
        &format!("Convergence time: {case} (median, min-max)"),
        "seconds",
        &cats,
    )
    .series_with_spread("convergence", values, spread)
}

/// Speedup curves of tesserad's modes; `None` with fewer than two points.
fn speedup_chart(rep: &BenchReport, rows: &[SummaryRow], case: &str) -> Option<plot::LineChart> {
    let med = |label: &str| {
        rows.iter()
            .find(|r| r.case == case && r.dut == label)
            .and_then(|r| r.conv)
            .map(|c| c.0)
    };
    let specs: Vec<DutSpec> = rep
        .duts
        .iter()
        .filter_map(|d| DutSpec::from_tesserad_label(d))
        .collect();
    let base_seq = med("tesserad-sequential");
    let mut c = plot::LineChart::new(
        &format!("tesserad speedup vs threads: {case}"),
        "threads",
        "speedup (baseline convergence / convergence)",
    );
    let mut points_total = 0;
    // One curve per mode: the pipeline with its `router.locks` and
    // `router.streams` when the DUT names them (`per-peer fine`).
    let mut modes: Vec<String> = Vec::new();
    for s in &specs {
        if let Some(m) = series_of(s) {
            if !modes.contains(&m) {
                modes.push(m);
            }
        }
    }
    for mode in modes {
        let mut pts: Vec<(f64, f64)> = Vec::new();
        for s in &specs {
            let DutKind::Tesserad(t) = &s.kind else {
                continue;
            };
            if series_of(s).as_deref() != Some(mode.as_str()) {
                continue;
            }
            if let (Some(n), Some(m)) = (t.threads, med(&s.label())) {
                pts.push((f64::from(n), m));
            }
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let Some(base) = base_seq.or(pts.first().map(|p| p.1)) else {
            continue;
        };
        if pts.is_empty() {
            continue;
        }
        points_total += pts.len();
        let sp = pts.iter().map(|&(t, m)| (t, base / m.max(1e-9))).collect();
        c = c.series_with_markers(&mode, sp);
    }
    (points_total >= 2).then_some(c)
}

/// The speedup curve a tesserad DUT belongs to: its pipeline, then the
/// locks and streams it names (`worker-pool fine per-worker`).
fn series_of(s: &DutSpec) -> Option<String> {
    let DutKind::Tesserad(t) = &s.kind else {
        return None;
    };
    let mut m = t.pipeline.clone();
    for f in [&t.locks, &t.streams].into_iter().flatten() {
        m.push(' ');
        m.push_str(f);
    }
    Some(m)
}

fn churn_json(c: &ChurnStats) -> serde_json::Value {
    serde_json::json!({
        "monitors": c.monitors, "rate": c.rate, "duration_s": c.duration_s,
        "table_prefixes": c.table_prefixes, "table_s": c.table_secs,
        "updates_sent": c.updates_sent, "prefixes_stamped": c.prefixes_stamped,
        "churn_s": c.churn_secs, "max_send_lag_s": c.max_send_lag_s,
        "samples": c.samples, "p50_ms": c.p50_ms, "p99_ms": c.p99_ms, "max_ms": c.max_ms,
        "keepalive_s": c.keepalive_s, "max_gap_s": c.max_gap_s, "late_gaps": c.late_gaps,
        "never_late": c.late_gaps == 0,
        "dut_cpu_s": c.dut_cpu_secs, "dut_peak_rss_kib": c.dut_peak_rss_kib,
        "cdf": c.cdf, "timeline": c.timeline,
    })
}

/// Scenario (h)'s table: one row per run (empty without churn runs).
pub fn churn_md(rep: &BenchReport) -> String {
    let runs: Vec<(&Measurement, &ChurnStats)> = rep
        .runs
        .iter()
        .filter_map(|m| m.churn.as_ref().map(|c| (m, c)))
        .collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "| churn case | DUT | rep | table s | UPDATEs sent | samples | p50 ms | p99 ms | max ms | keepalive s | max gap s | late gaps | CPU-s | peak RSS MiB |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let f = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |x| format!("{x:.p$}"));
    for (m, c) in runs {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {} | {} |",
            m.case,
            m.dut,
            m.rep,
            f(c.table_secs, 2),
            c.updates_sent,
            c.samples,
            f(c.p50_ms, 2),
            f(c.p99_ms, 2),
            f(c.max_ms, 1),
            f(c.keepalive_s, 0),
            c.max_gap_s,
            c.late_gaps,
            f(c.dut_cpu_secs, 2),
            f(c.dut_peak_rss_kib.map(|k| k as f64 / 1024.0), 0),
        );
    }
    s
}

/// Latency CDF of scenario (h), one line per DUT (first run with samples).
fn latency_cdf_chart(rep: &BenchReport, case: &str) -> Option<plot::LineChart> {
    let mut c = plot::LineChart::new(
        &format!("UPDATE in to out latency CDF: {case}"),
        "latency, log10 ms (-1 = 0.1 ms, 0 = 1 ms, 1 = 10 ms, 2 = 100 ms, 3 = 1 s)",
        "fraction of prefix changes",
    );
    let mut any = false;
    for d in &rep.duts {
        let first = rep
            .runs
            .iter()
            .filter(|m| m.case == case && &m.dut == d)
            .find_map(|m| m.churn.as_ref().filter(|c| !c.cdf.is_empty()));
        if let Some(ch) = first {
            // A log axis: the tail (seconds) would squash the body (ms).
            let pts = ch
                .cdf
                .iter()
                .map(|&(ms, f)| (ms.max(0.001).log10(), f))
                .collect();
            c = c.series(d, pts);
            any = true;
        }
    }
    any.then_some(c)
}

/// Per-second timeline of scenario (h): sent, and received per monitor.
fn churn_timeline_chart(rep: &BenchReport, case: &str) -> Option<plot::LineChart> {
    let mut c = plot::LineChart::new(
        &format!("Churn timeline: {case}"),
        "seconds since the churn began",
        "per second",
    );
    let mut sent = None;
    for d in &rep.duts {
        let first = rep
            .runs
            .iter()
            .filter(|m| m.case == case && &m.dut == d)
            .find_map(|m| m.churn.as_ref().filter(|c| !c.timeline.is_empty()));
        if let Some(ch) = first {
            sent.get_or_insert_with(|| ch.timeline.iter().map(|p| (p.0, p.1)).collect());
            c = c.series(
                &format!("{d}: prefix changes received per monitor"),
                ch.timeline.iter().map(|p| (p.0, p.2)).collect(),
            );
        }
    }
    // Last, so that each DUT keeps the colour it has in the CDF.
    sent.map(|s| c.series("UPDATEs sent by the generator", s))
}

/// Writes every output file into `out` (created if needed).
pub fn write_all(rep: &BenchReport, out: &Path) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(out).map_err(|e| err(out, e))?;
    let rows = summarize(rep);
    let put = |name: &str, text: String| {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| err(&p, e))
    };
    put("runs.csv", runs_csv(rep))?;
    put("summary.csv", summary_csv(&rows))?;
    put("summary.md", summary_md(rep, &rows))?;
    let json = serde_json::to_string_pretty(&to_json(rep, &rows)).unwrap_or_default();
    put("results.json", json + "\n")?;
    for (case, _) in &rep.cases {
        if !rows.iter().any(|r| &r.case == case) {
            continue;
        }
        put(
            &format!("prefixes-{case}.svg"),
            prefixes_chart(rep, case).to_svg(),
        )?;
        put(
            &format!("convergence-{case}.svg"),
            convergence_chart(&rows, case).to_svg(),
        )?;
        if let Some(c) = speedup_chart(rep, &rows, case) {
            put(&format!("speedup-{case}.svg"), c.to_svg())?;
        }
        if let Some(c) = latency_cdf_chart(rep, case) {
            put(&format!("latency-cdf-{case}.svg"), c.to_svg())?;
        }
        if let Some(c) = churn_timeline_chart(rep, case) {
            put(&format!("timeline-{case}.svg"), c.to_svg())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BenchError;

    fn m(case: &str, dut: &str, rep: usize, conv: Option<f64>) -> Measurement {
        let r = RunResult {
            converged: conv.is_some(),
            convergence_secs: conv,
            dut_cpu_secs: conv.map(|c| c / 2.0),
            dut_peak_rss_kib: Some(2048),
            ..RunResult::default()
        };
        Measurement {
            case: case.into(),
            dut: dut.into(),
            rep,
            status: if conv.is_some() {
                Status::Converged
            } else {
                Status::Failed(BenchError::DutExited, "boom, bang".into())
            },
            result: Some(r),
            baseline_rss_kib: Some(1024),
            churn: None,
        }
    }

    #[test]
    fn churn_runs_get_a_table_a_cdf_and_a_timeline() {
        let mut run = m("h", "bird", 1, Some(0.5));
        run.churn = Some(ChurnStats {
            monitors: 2,
            updates_sent: 10,
            samples: 3,
            p50_ms: Some(1.0),
            p99_ms: Some(2.0),
            max_ms: Some(3.0),
            cdf: vec![(1.0, 0.5), (3.0, 1.0)],
            keepalive_s: Some(3.0),
            max_gap_s: 1.5,
            timeline: vec![(0.0, 10.0, 5.0)],
            ..ChurnStats::default()
        });
        let rep = BenchReport {
            cases: vec![("h".into(), "churn".into())],
            duts: vec!["bird".into()],
            runs: vec![run],
            ..BenchReport::default()
        };
        let md = churn_md(&rep);
        assert!(
            md.contains("| h | bird | 1 | - | 10 | 3 | 1.00 | 2.00 | 3.0 | 3 | 1.50 | 0 |"),
            "{md}"
        );
        let cdf = latency_cdf_chart(&rep, "h")
            .map(|c| c.series)
            .unwrap_or_default();
        assert_eq!(cdf.len(), 1);
        assert_eq!(cdf[0].points[0], (0.0, 0.5), "log10 of 1 ms");
        let tl = churn_timeline_chart(&rep, "h")
            .map(|c| c.series)
            .unwrap_or_default();
        assert_eq!(tl.len(), 2, "sent, and received per monitor");
        assert!(churn_md(&BenchReport::default()).is_empty());
        assert!(latency_cdf_chart(&BenchReport::default(), "h").is_none());
    }

    #[test]
    fn spread_is_median_min_max() {
        assert_eq!(spread(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(spread(&[4.0, 1.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(spread(&[f64::NAN]), None);
        assert_eq!(spread(&[]), None);
    }

    #[test]
    fn summary_subtracts_the_ceiling_and_keeps_failures() {
        let rep = BenchReport {
            cases: vec![("b".into(), "about".into())],
            duts: vec![
                "bird".into(),
                "tesserad-sharded-1".into(),
                "tesserad-sharded-2".into(),
            ],
            runs: vec![
                m("b", CEILING, 1, Some(1.0)),
                m("b", "bird", 1, Some(3.0)),
                m("b", "bird", 2, Some(5.0)),
                m("b", "bird", 3, None),
                m("b", "tesserad-sharded-1", 1, Some(4.0)),
                m("b", "tesserad-sharded-2", 1, Some(2.0)),
            ],
            ..BenchReport::default()
        };
        let rows = summarize(&rep);
        assert_eq!(rows.len(), 4);
        let bird = &rows[1];
        assert_eq!(bird.dut, "bird");
        assert_eq!((bird.runs, bird.converged), (3, 2));
        assert_eq!(bird.conv, Some((4.0, 3.0, 5.0)));
        assert_eq!(bird.above_ceiling, Some(3.0));
        assert_eq!(bird.rss_mib, Some((2.0, 2.0, 2.0)));
        // Without --export all the DUT exports to the monitor only.
        assert_eq!(bird.rss_per_exporting_peer_mib, Some(2.0));
        assert_eq!(rows[0].rss_per_exporting_peer_mib, None);
        let all = summarize(&BenchReport {
            exporting_peers: vec![("b".into(), 4)],
            ..rep.clone()
        });
        assert_eq!(all[1].rss_per_exporting_peer_mib, Some(0.5));
        assert_eq!(bird.bytes_per_path, None, "no paths given");
        let with_paths = summarize(&BenchReport {
            paths: vec![("b".into(), 1024)],
            ..rep.clone()
        });
        // (2048 - 1024) KiB over 1024 paths.
        assert_eq!(with_paths[1].bytes_per_path, Some(1024.0));
        assert_eq!(with_paths[0].bytes_per_path, None, "not for the ceiling");
        assert!(
            bird.status.starts_with("failed: the DUT exited"),
            "{}",
            bird.status
        );
        let csv = summary_csv(&rows);
        assert_eq!(csv.lines().count(), 5);
        let cols = SUMMARY_HEADER.split(',').count();
        for l in csv.lines() {
            assert_eq!(l.split(',').count(), cols, "{l}");
        }
        let runs = runs_csv(&rep);
        let cols = runs.lines().next().map_or(0, |h| h.split(',').count());
        for l in runs.lines() {
            assert_eq!(l.split(',').count(), cols, "{l}");
        }
        let sp = speedup_chart(&rep, &rows, "b").map(|c| c.series);
        let sp = sp.unwrap_or_default();
        assert_eq!(sp.len(), 1);
        assert_eq!(sp[0].points, vec![(1.0, 1.0), (2.0, 2.0)]);
        let md = summary_md(&rep, &rows);
        assert!(
            md.contains("| b | bird | 2/3 | 4.00 [3.00-5.00] | 3.00 |"),
            "{md}"
        );
    }
}
