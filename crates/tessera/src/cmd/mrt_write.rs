//! `tessera mrt write IN OUT [--compress gzip|bzip2|none]`: decodes every
//! record of IN with `mrt::MrtReader` and re-encodes it from the decoded
//! form with `mrt::MrtWriter` (not a raw copy), so a lossless codec gives
//! back the decompressed input byte for byte. Prints a one-line summary.

use super::CmdResult;
use mrt::{Compression, MrtError, MrtReader, MrtWriter};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Compress {
    None,
    Gzip,
    Bzip2,
}

impl From<Compress> for Compression {
    fn from(c: Compress) -> Compression {
        match c {
            Compress::None => Compression::None,
            Compress::Gzip => Compression::Gzip,
            Compress::Bzip2 => Compression::Bzip2,
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// MRT input: plain, gzip or bzip2.
    input: PathBuf,
    /// Output file (created or truncated).
    output: PathBuf,
    /// Compression of the output.
    #[arg(long, value_enum, default_value = "none")]
    compress: Compress,
}

fn name(c: Compression) -> &'static str {
    match c {
        Compression::None => "none",
        Compression::Gzip => "gzip",
        Compression::Bzip2 => "bzip2",
    }
}

pub fn run(a: Args) -> CmdResult {
    let (inp, outp) = (a.input.display(), a.output.display());
    // `open` decompresses on a background thread.
    let mut r = MrtReader::open(&a.input).map_err(|e| format!("{inp}: {e}"))?;
    let mut w =
        MrtWriter::create(&a.output, a.compress.into()).map_err(|e| format!("{outp}: {e}"))?;
    let mut fatal: Option<MrtError> = None;
    let mut first_malformed: Option<MrtError> = None;
    while let Some(rec) = r.next_record() {
        match rec {
            Ok(rec) => w
                .write_record(&rec)
                .map_err(|e| format!("{outp}: record at input offset {}: {e}", rec.offset))?,
            // Everything complete before the damage has been written; the
            // output is finished properly below.
            Err(e) if e.is_fatal() => {
                fatal = Some(e);
                break;
            }
            // A body that does not decode cannot be re-encoded from its
            // decoded form; it is left out and counted.
            Err(e) => {
                first_malformed = first_malformed.or(Some(e));
            }
        }
    }
    let written = w.records();
    w.finish().map_err(|e| format!("{outp}: {e}"))?;
    let c = r.counters();
    println!(
        "{inp} ({}) -> {outp} ({}): {written} records written, {} unknown and {} malformed skipped, {} input bytes read",
        name(r.compression()),
        name(a.compress.into()),
        c.unknown,
        c.malformed,
        r.offset()
    );
    if let Some(e) = first_malformed {
        eprintln!("tessera: {inp}: first malformed record: {e}");
    }
    match fatal {
        Some(e) => {
            eprintln!("tessera: {inp}: {e}; the records before it were written");
            Ok(ExitCode::from(1))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}
