//! Draws one line chart from the command line, for figures measured by
//! hand (a lent machine's run, a table in `docs/BENCHMARKS.md`):
//!
//! ```text
//! cargo run -p plot --example line -- OUT.svg TITLE X_LABEL Y_LABEL 'NAME=x:y,x:y,...' ...
//! ```
//!
//! Each series argument is a name, `=`, and comma-separated `x:y` points.

use std::process::ExitCode;

fn parse(arg: &str) -> Result<(String, Vec<(f64, f64)>), String> {
    let (name, pts) = arg.split_once('=').ok_or(format!("{arg}: no '='"))?;
    let mut points = Vec::new();
    for p in pts.split(',') {
        let (x, y) = p.split_once(':').ok_or(format!("{p}: not x:y"))?;
        let x: f64 = x.trim().parse().map_err(|e| format!("{x}: {e}"))?;
        let y: f64 = y.trim().parse().map_err(|e| format!("{y}: {e}"))?;
        points.push((x, y));
    }
    Ok((name.to_string(), points))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: line OUT.svg TITLE X_LABEL Y_LABEL 'NAME=x:y,...' ...");
        return ExitCode::from(2);
    }
    let mut chart = plot::LineChart::new(&args[1], &args[2], &args[3]);
    for a in &args[4..] {
        match parse(a) {
            Ok((name, points)) => chart = chart.series_with_markers(&name, points),
            Err(e) => {
                eprintln!("line: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Err(e) = std::fs::write(&args[0], chart.to_svg()) {
        eprintln!("line: {}: {e}", args[0]);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
