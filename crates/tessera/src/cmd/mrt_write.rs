use super::CmdResult;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_a: Args) -> CmdResult {
    Err("'mrt_write' is not built yet".into())
}
