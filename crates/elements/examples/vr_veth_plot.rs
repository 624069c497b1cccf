//! The plot of `crates/fib/scripts/bench-vr-veth` (virtual routers on
//! veth, docs/BENCHMARKS.md "Virtual routers: isolation under overload"):
//! reads its `rows.csv` and writes one SVG bar chart through crate `plot`,
//! per mode: the CPU efficiency against seed 002's (66.2 % batching off,
//! 81.6 % with a 30 us slice), the QoS routers' forwarded / offered, and
//! best effort's CPU share. Bars are medians over the repeats, whiskers
//! the range.
//!
//! Usage: `vr_veth_plot ROWS.csv OUT.svg`

use std::collections::BTreeMap;

/// Median, min and max of `v` (NaN when empty).
fn stats(v: &[f64]) -> (f64, (f64, f64)) {
    if v.is_empty() {
        return (f64::NAN, (f64::NAN, f64::NAN));
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let med = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    (med, (s[0], s[n - 1]))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(inp), Some(out)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: vr_veth_plot ROWS.csv OUT.svg");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(inp) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("vr_veth_plot: {inp}: {e}");
            std::process::exit(1);
        }
    };
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name);
    let (Some(mode), Some(rep), Some(vr), Some(eff), Some(fo), Some(share)) = (
        col("mode"),
        col("repeat"),
        col("vr"),
        col("efficiency_pct"),
        col("trial_forwarded_pct"),
        col("cpu_share_pct"),
    ) else {
        eprintln!("vr_veth_plot: {inp}: not a bench-vr-veth rows.csv");
        std::process::exit(1);
    };
    // mode -> (efficiency per repeat, QoS forwarded/offered per repeat
    // (mean of the QoS routers), BE share per repeat)
    let mut order: Vec<String> = Vec::new();
    type PerRep = BTreeMap<String, Vec<f64>>;
    let mut m: BTreeMap<String, (PerRep, PerRep, PerRep)> = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let get = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok());
        let (Some(md), Some(r), Some(v)) = (f.get(mode), f.get(rep), f.get(vr)) else {
            continue;
        };
        if *md == "calib" {
            continue;
        }
        if !order.iter().any(|o| o == md) {
            order.push((*md).to_string());
        }
        let e = m.entry((*md).to_string()).or_default();
        if let Some(x) = get(eff) {
            e.0.entry((*r).to_string()).or_default().push(x);
        }
        if v.starts_with("qos") {
            if let Some(x) = get(fo) {
                e.1.entry((*r).to_string()).or_default().push(x);
            }
        } else if let Some(x) = get(share) {
            e.2.entry((*r).to_string()).or_default().push(x);
        }
    }
    let per_rep = |p: &PerRep| -> Vec<f64> {
        p.values()
            .filter(|v| !v.is_empty())
            .map(|v| v.iter().sum::<f64>() / v.len() as f64)
            .collect()
    };
    let cats: Vec<&str> = order.iter().map(String::as_str).collect();
    let mut effs = (Vec::new(), Vec::new());
    let mut qos = (Vec::new(), Vec::new());
    let mut be = (Vec::new(), Vec::new());
    let mut seed = Vec::new();
    for c in &cats {
        let (e, q, b) = &m[*c];
        for (dst, src) in [(&mut effs, e), (&mut qos, q), (&mut be, b)] {
            let (med, sp) = stats(&per_rep(src));
            dst.0.push(med);
            dst.1.push(sp);
        }
        seed.push(match *c {
            "off" => 66.2,
            "slice30" => 81.6,
            _ => f64::NAN,
        });
    }
    let chart = plot::BarChart::new(
        "Virtual routers on veth: best effort overloaded, two QoS routers at 24 % each",
        "%",
        &cats,
    )
    .series("seed 002: CPU efficiency", seed)
    .series_with_spread("ours: CPU efficiency", effs.0, effs.1)
    .series_with_spread("QoS routers: delivered / offered", qos.0, qos.1)
    .series_with_spread("best effort: CPU share", be.0, be.1);
    if let Err(e) = std::fs::write(out, chart.to_svg()) {
        eprintln!("vr_veth_plot: {out}: {e}");
        std::process::exit(1);
    }
}
