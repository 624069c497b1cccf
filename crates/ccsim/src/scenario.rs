//! The reproductions: cluster builders for the thesis's set-ups, and the
//! named experiments that `tessera cc sim NAME` runs. Each experiment
//! returns its files (CSV, SVG) and a Markdown table with the thesis's
//! value beside ours.

mod build;
mod experiments;

pub use build::{ch5, ch7, scale, Scheme, CH5_CPU, C_REAL, C_SIM, MBIT_PPS};
pub use experiments::{fig61_grid, run, Outcome, Scenario, SCENARIOS};
