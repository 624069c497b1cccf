//! `tessera mrt dump -m FILE...`: bgpdump-compatible lines (see
//! docs/bgpdump-format.md). Wiring only; the formatter is `mrt::bgpdump`.

use super::CmdResult;
use mrt::bgpdump::{Dumper, RawReader};
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// One line per entry, like `bgpdump -m`.
    #[arg(short = 'm')]
    oneline: bool,
    /// One JSON object per line (not available yet).
    #[arg(long)]
    json: bool,
    /// MRT files: plain, gzip or bzip2.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Output is flushed to stdout in chunks of about this size.
const CHUNK: usize = 1 << 20;

pub fn run(a: Args) -> CmdResult {
    if a.json {
        return Err("--json is not supported yet; use -m".into());
    }
    // Without -m we print the -m format too (the only one implemented).
    let _ = a.oneline;
    let stdout = io::stdout();
    let mut w = stdout.lock();
    let mut out = Vec::with_capacity(CHUNK + (1 << 16));
    let mut failed = false;
    for path in &a.files {
        let mut d = Dumper::new();
        let mut r = RawReader::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let res = loop {
            match r.next_record() {
                Ok(Some((info, body))) => {
                    d.record(&info, body, &mut out);
                    if out.len() >= CHUNK {
                        if let Some(code) = write_out(&mut w, &mut out)? {
                            return Ok(code);
                        }
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        if let Some(code) = write_out(&mut w, &mut out)? {
            return Ok(code);
        }
        if let Err(e) = res {
            // bgpdump exits 0 here; we report it (docs/bgpdump-format.md).
            let _ = w.flush();
            eprintln!("tessera: {}: {e}", path.display());
            failed = true;
        }
        if d.skipped_entries() > 0 {
            eprintln!(
                "tessera: {}: {} RIB entries name a peer missing from the PEER_INDEX_TABLE",
                path.display(),
                d.skipped_entries()
            );
        }
    }
    if let Some(code) = flush(&mut w)? {
        return Ok(code);
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes and clears `out`. A closed pipe (`| head`) ends the command
/// quietly with success, like other Unix filters.
fn write_out(w: &mut impl Write, out: &mut Vec<u8>) -> Result<Option<ExitCode>, io::Error> {
    let r = w.write_all(out);
    out.clear();
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(Some(ExitCode::SUCCESS)),
        Err(e) => Err(e),
        Ok(()) => Ok(None),
    }
}

fn flush(w: &mut impl Write) -> Result<Option<ExitCode>, io::Error> {
    match w.flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(Some(ExitCode::SUCCESS)),
        Err(e) => Err(e),
        Ok(()) => Ok(None),
    }
}
