//! `tessera mrt stats [--json] FILE...`: records per type/subtype, peers,
//! distinct prefixes, time span, unknown and malformed records,
//! compression, bytes and the error that ended reading, if any.
//!
//! Wiring only: the counting and both report formats are
//! `mrt::stats::FileStats`.

use super::CmdResult;
use mrt::stats::FileStats;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// One JSON object per file, on one line.
    #[arg(long)]
    json: bool,
    /// MRT files: plain, gzip or bzip2.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub fn run(a: Args) -> CmdResult {
    let mut text = String::new();
    let mut failed = false;
    for path in &a.files {
        let f = FileStats::collect(path).map_err(|e| format!("{}: {e}", path.display()))?;
        failed |= f.error.is_some();
        text.clear();
        if a.json {
            f.write_json(&mut text, path)?;
        } else {
            f.write_text(&mut text, path)?;
        }
        let mut w = io::stdout().lock();
        match w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
            r => r?,
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
