//! tesserad: the Tessera BGP daemon. Wiring only: arguments, logging, and a
//! call into `bgp_speaker::daemon`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// The Tessera BGP daemon.
#[derive(Parser, Debug)]
#[command(name = "tesserad", version, about)]
struct Args {
    /// Configuration file (TOML, see docs/config.md).
    #[arg(
        short = 'c',
        long = "config",
        default_value = "/etc/tessera/tesserad.toml"
    )]
    config: PathBuf,
    /// Only check the configuration and exit (0 when valid).
    #[arg(short = 'p', long = "check")]
    check: bool,
    /// Log filter (tracing `EnvFilter` syntax); overrides `[log] level`
    /// and $RUST_LOG.
    #[arg(long)]
    log: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.check {
        return match bgp_speaker::daemon::check(&args.config) {
            Ok(summary) => {
                println!("{summary}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tesserad: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match bgp_speaker::daemon::run(&args.config, args.log.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tesserad: {e}");
            ExitCode::FAILURE
        }
    }
}
