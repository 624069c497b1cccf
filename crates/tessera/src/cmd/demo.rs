//! `tessera demo`: the main job on built-in defaults (see `sim::demo`).

use super::CmdResult;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Peers of the synthetic collector (every fourth one is IPv6).
    #[arg(long, default_value_t = 12)]
    peers: usize,
    /// IPv4 prefixes in the table.
    #[arg(long, default_value_t = 180_000)]
    prefixes_v4: usize,
    /// IPv6 prefixes in the table.
    #[arg(long, default_value_t = 20_000)]
    prefixes_v6: usize,
    /// Every peer announces every prefix of its family.
    #[arg(long)]
    all_peers: bool,
    /// RNG seed; the same seed gives the same trace.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(a: Args) -> CmdResult {
    if a.peers == 0 || a.peers > u16::MAX as usize {
        return Err("--peers must be between 1 and 65535".into());
    }
    let cfg = sim::SynthConfig {
        peers: a.peers,
        prefixes_v4: a.prefixes_v4,
        prefixes_v6: a.prefixes_v6,
        all_peers_all_prefixes: a.all_peers,
        seed: a.seed,
    };
    let tty = std::io::stderr().is_terminal();
    let rep = sim::demo::run(&cfg, |stage, done, total| {
        if tty && total > 0 {
            let pct = done as f64 * 100.0 / total as f64;
            let bar = (pct / 5.0) as usize;
            eprint!("\r{stage:>7} [{:<20}] {pct:5.1}%", "#".repeat(bar.min(20)));
            if done >= total {
                eprint!("\r{:60}\r", "");
            }
            let _ = std::io::stderr().flush();
        }
    })?;
    print!("{rep}");
    Ok(ExitCode::SUCCESS)
}
