//! `tessera cc sim SCENARIO`: run one of the congestion-control
//! reproductions of the `ccsim` crate, print the thesis-vs-ours table, and
//! write its CSV and SVG files to `--out`. Wiring only.

use super::CmdResult;
use clap::{Args as ClapArgs, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// The `cc` command group.
#[derive(Subcommand)]
pub enum CcCommand {
    /// Simulate a named scenario (`list` or no name: list them; `all`: run
    /// every one).
    Sim(SimArgs),
}

/// `tessera cc sim`.
#[derive(ClapArgs)]
pub struct SimArgs {
    /// Scenario name, `all`, or `list`.
    pub scenario: Option<String>,
    /// Directory for CSV and SVG files (created).
    #[arg(long, default_value = "cc-out")]
    pub out: PathBuf,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A quarter of the simulated time.
    #[arg(long)]
    pub quick: bool,
}

/// Run a `cc` command.
pub fn run(c: CcCommand) -> CmdResult {
    let CcCommand::Sim(a) = c;
    let name = match a.scenario.as_deref() {
        None | Some("list") => {
            for s in ccsim::scenario::SCENARIOS {
                println!("{:10} {}", s.name, s.about);
            }
            println!("{:10} every scenario above", "all");
            return Ok(ExitCode::SUCCESS);
        }
        Some(n) => n.to_string(),
    };
    let opts = ccsim::scenario::Opts {
        seed: a.seed,
        quick: a.quick,
    };
    let started = std::time::Instant::now();
    let mut err = std::io::stderr();
    let mut last = (String::new(), -1i64);
    let out = ccsim::scenario::run(&name, opts, &mut |what, frac| {
        // One line per run, rewritten in place every 10 %.
        let pct = (frac * 100.0) as i64 / 10 * 10;
        if what != last.0 || pct != last.1 {
            let _ = write!(err, "\r{what}: {pct:3}%   ");
            if pct == 100 {
                let _ = writeln!(err);
            }
            let _ = err.flush();
            last = (what.to_string(), pct);
        }
    })?;
    std::fs::create_dir_all(&a.out)?;
    for (file, contents) in &out.files {
        std::fs::write(a.out.join(file), contents)?;
    }
    let table = out.table();
    std::fs::write(a.out.join(format!("{name}.md")), &table)?;
    println!("{table}");
    println!(
        "wrote {} files to {} ({:.2} s wall)",
        out.files.len() + 1,
        a.out.display(),
        started.elapsed().as_secs_f64()
    );
    let failed = out.failures();
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{} check(s) outside tolerance", failed.len());
        Ok(ExitCode::from(1))
    }
}
