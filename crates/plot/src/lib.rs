//! Tiny SVG charts with no dependencies: [`LineChart`] (several series over
//! a numeric x axis: prefixes over time at the monitor, speedup curves,
//! congestion-window traces) and [`BarChart`] (grouped bars with an
//! optional spread whisker per bar: convergence time per daemon and
//! scenario) and [`HeatMap`] (a grid of cells coloured by value: a
//! controller's stability over two gains).
//!
//! Design: a chart is plain data; `to_svg` lays it out on a fixed canvas
//! (plot area, axes with "nice" 1-2-5 ticks, labels, legend) and writes
//! SVG 1.1 text by hand. Colours come from a fixed palette so that the
//! same series index has the same colour in every chart of a report.
//!
//! Limits: linear axes only (no log scale), no interactivity, text width
//! is estimated (no font metrics), non-finite values are skipped. Output is
//! deterministic for the same input, so charts can be diffed.

#![warn(missing_docs)]

mod axis;
mod bar;
mod heat;
mod line;
mod svg;

pub use axis::{format_tick, nice_ticks};
pub use bar::{BarChart, BarSeries};
pub use heat::HeatMap;
pub use line::{LineChart, Series};

/// Colour of series `i` (cycled): a palette readable on white and by
/// most colour-blind readers (Okabe-Ito order).
pub fn color(i: usize) -> &'static str {
    const PALETTE: [&str; 8] = [
        "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
    ];
    PALETTE[i % PALETTE.len()]
}
