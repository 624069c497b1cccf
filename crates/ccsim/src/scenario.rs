//! The reproductions: cluster builders for the thesis's set-ups, and the
//! named experiments that `tessera cc sim NAME` runs. Each experiment
//! returns its files (CSV, SVG) and its checks: the thesis's value beside
//! ours, with the tolerance each is judged by.

mod build;
mod ch5;
mod ch7;
mod common;
mod experiments;
mod fig61;
mod fig62;
mod scale;

pub use build::{ch5, ch7, scale, Scheme, CH5_CPU, C_REAL, C_SIM, MBIT_PPS, TX_RING_REAL};
pub use common::{Check, Opts, Outcome};
pub use experiments::{run, Scenario, SCENARIOS};
pub use fig61::{grid as fig61_grid, GridCell};
