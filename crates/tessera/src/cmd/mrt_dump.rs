//! `tessera mrt dump [-m|--json] FILE...`: bgpdump-compatible lines, or
//! the same entries as JSON objects, one a line (docs/bgpdump-format.md).
//! Wiring only: `mrt::MrtReader` frames the records (decompressing on its
//! background thread) and `mrt::bgpdump` formats them.

use super::CmdResult;
use mrt::bgpdump::{Dumper, RecordInfo};
use mrt::MrtReader;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// One line per entry, like `bgpdump -m` (the default).
    #[arg(short = 'm', conflicts_with = "json")]
    oneline: bool,
    /// One JSON object per `-m` line, with the fields `-m` drops
    /// (docs/bgpdump-format.md, "JSON output").
    #[arg(long)]
    json: bool,
    /// MRT files: plain, gzip or bzip2.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Output is flushed to stdout in chunks of about this size.
const CHUNK: usize = 1 << 20;

pub fn run(a: Args) -> CmdResult {
    // Without -m or --json we print the -m format (the only text format).
    let _ = a.oneline;
    let stdout = io::stdout();
    let mut w = stdout.lock();
    let mut out = Vec::with_capacity(CHUNK + (1 << 16));
    let mut failed = false;
    for path in &a.files {
        let mut d = if a.json {
            Dumper::json()
        } else {
            Dumper::new()
        };
        // `open` decompresses gzip/bzip2 on a background thread.
        let mut r = MrtReader::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        while let Some(rec) = r.next_raw() {
            match rec {
                Ok(rec) => {
                    d.record(&RecordInfo::from_header(&rec.header), rec.body, &mut out);
                    if out.len() >= CHUNK {
                        if let Some(code) = write_out(&mut w, &mut out)? {
                            return Ok(code);
                        }
                    }
                }
                Err(e) => {
                    // Print what came before the error first, so stdout
                    // holds every complete record.
                    if let Some(code) = write_out(&mut w, &mut out)? {
                        return Ok(code);
                    }
                    if let Some(code) = flush(&mut w)? {
                        return Ok(code);
                    }
                    // bgpdump exits 0 on a truncated file; we report it
                    // (docs/bgpdump-format.md). A non-fatal error (an _ET
                    // record too short for its microseconds) skips the
                    // record and reading goes on.
                    eprintln!("tessera: {}: {e}", path.display());
                    failed = true;
                }
            }
        }
        if let Some(code) = write_out(&mut w, &mut out)? {
            return Ok(code);
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
