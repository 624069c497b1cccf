//! One module per command; each has `Args` (clap) and `run`.

pub mod bench;
pub mod cc;
pub mod cluster;
pub mod ctl;
pub mod demo;
pub mod experiment;
pub mod mrt_dump;
pub mod mrt_stats;
pub mod mrt_write;
pub mod replay;
pub mod sim;
pub mod top;
pub mod trafgen;

/// Errors surface to the user as one line of text.
pub type CmdResult = Result<std::process::ExitCode, Box<dyn std::error::Error>>;
