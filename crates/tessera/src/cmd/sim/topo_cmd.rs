//! `tessera sim topo`: generate or import a topology, print a summary, and
//! optionally write it (`--out FILE --format caida|brite|dot`).

use super::{load, FormatArg, TopoArgs};
use crate::cmd::CmdResult;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use topo::build;
use topo::format::Format;
use topo::summary::Summary;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    topo: TopoArgs,
    /// Write the topology here (`-`: standard output; the summary then goes
    /// to standard error).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Format of --out (default: from its extension, else caida); without
    /// --out, the format of --import (as --import-format).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
}

pub fn run(mut a: Args) -> CmdResult {
    if a.out.is_none() && a.topo.import_format.is_none() {
        a.topo.import_format = a.format;
    }
    let b = load(&a.topo)?;
    let summary = Summary::of(&b.graph).to_string();
    let to_stdout = a.out.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if let Some(out) = &a.out {
        let fmt = match a.format {
            Some(f) => Format::from(f),
            None => Format::from_path(out).unwrap_or(Format::Caida),
        };
        let text = build::export(&b, fmt)?;
        if to_stdout {
            let mut w = std::io::stdout().lock();
            w.write_all(text.as_bytes())?;
            w.flush()?;
        } else {
            std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
        }
    }
    if to_stdout {
        eprint!("{summary}");
    } else {
        print!("{summary}");
    }
    Ok(ExitCode::SUCCESS)
}
