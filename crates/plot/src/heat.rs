//! Heat maps: a grid of cells coloured by value (the stability map of a
//! controller over two gains, for example).

use crate::axis::format_tick;
use crate::svg::{self, escape, Frame, LEFT, TOP};
use std::fmt::Write;

/// A heat map over a regular grid. Cell (i, j) is at column `xs[i]`, row
/// `ys[j]`; `values[j][i]` is its value. Non-finite values are drawn in
/// grey and named by `missing_label` in the legend (for instance
/// "unstable").
#[derive(Clone, Debug, PartialEq)]
pub struct HeatMap {
    /// Title above the plot.
    pub title: String,
    /// X-axis label.
    pub x_label: String,
    /// Y-axis label.
    pub y_label: String,
    /// Column positions (the cell centres), ascending.
    pub xs: Vec<f64>,
    /// Row positions (the cell centres), ascending from the bottom.
    pub ys: Vec<f64>,
    /// One row of values per `ys` entry, each as long as `xs`.
    pub values: Vec<Vec<f64>>,
    /// What the colour means (legend title).
    pub value_label: String,
    /// Legend text for non-finite cells.
    pub missing_label: String,
    /// Image width in pixels (at least 300 is used).
    pub width: u32,
    /// Image height in pixels (at least 200 is used).
    pub height: u32,
}

impl HeatMap {
    /// An 800 x 500 heat map.
    pub fn new(title: &str, x_label: &str, y_label: &str, value_label: &str) -> HeatMap {
        HeatMap {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            xs: Vec::new(),
            ys: Vec::new(),
            values: Vec::new(),
            value_label: value_label.into(),
            missing_label: "n/a".into(),
            width: 800,
            height: 500,
        }
    }

    /// Sets the grid.
    pub fn grid(mut self, xs: Vec<f64>, ys: Vec<f64>, values: Vec<Vec<f64>>) -> HeatMap {
        self.xs = xs;
        self.ys = ys;
        self.values = values;
        self
    }

    /// Sets the legend text of non-finite cells.
    pub fn missing(mut self, label: &str) -> HeatMap {
        self.missing_label = label.into();
        self
    }

    /// Colour of fraction `t` in [0, 1] on a light-yellow to dark-blue ramp.
    fn ramp(t: f64) -> String {
        let t = if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let (a, b) = ((255.0, 247.0, 188.0), (8.0, 48.0, 107.0));
        let c = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
        format!("#{:02x}{:02x}{:02x}", c(a.0, b.0), c(a.1, b.1), c(a.2, b.2))
    }

    /// Renders the map as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let (w, h) = (
            f64::from(self.width.max(300)),
            f64::from(self.height.max(200)),
        );
        // Keep 130 px on the right for the colour legend.
        let f = Frame {
            w: w - 130.0,
            h,
            y_lo: 0.0,
            y_hi: 1.0,
        };
        let finite = self
            .values
            .iter()
            .flatten()
            .copied()
            .filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
        let span = if hi > lo { hi - lo } else { 1.0 };
        let (nx, ny) = (self.xs.len().max(1), self.ys.len().max(1));
        let (cw, ch) = (f.plot_w() / nx as f64, f.plot_h() / ny as f64);
        let mut out = String::with_capacity(8192 + 120 * nx * ny);
        svg::begin(&mut out, w, h, &self.title);
        for (j, row) in self.values.iter().enumerate().take(ny) {
            for (i, &v) in row.iter().enumerate().take(nx) {
                let x = LEFT + cw * i as f64;
                let y = TOP + f.plot_h() - ch * (j + 1) as f64;
                let fill = if v.is_finite() {
                    Self::ramp((v - lo) / span)
                } else {
                    "#bbbbbb".to_string()
                };
                let _ = writeln!(
                    out,
                    "<rect class=\"cell\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"><title>{}, {}: {}</title></rect>",
                    cw + 0.3,
                    ch + 0.3,
                    format_tick(self.xs.get(i).copied().unwrap_or(f64::NAN)),
                    format_tick(self.ys.get(j).copied().unwrap_or(f64::NAN)),
                    if v.is_finite() { format_tick(v) } else { escape(&self.missing_label) }
                );
            }
        }
        // Axis labels: about 8 per axis, at cell centres.
        let every = |n: usize| n.div_ceil(8).max(1);
        for (i, &x) in self.xs.iter().enumerate().step_by(every(nx)) {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                LEFT + cw * (i as f64 + 0.5),
                TOP + f.plot_h() + 18.0,
                escape(&format_tick(x))
            );
        }
        for (j, &y) in self.ys.iter().enumerate().step_by(every(ny)) {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                LEFT - 6.0,
                TOP + f.plot_h() - ch * (j as f64 + 0.5) + 4.0,
                escape(&format_tick(y))
            );
        }
        let cy = TOP + f.plot_h() / 2.0;
        let _ = writeln!(
            out,
            "<text x=\"16\" y=\"{cy:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {cy:.1})\">{}</text>",
            escape(&self.y_label)
        );
        svg::box_and_x_label(&mut out, &f, &self.x_label);
        // Colour legend: a ramp of 10 steps, then the missing swatch.
        let lx = f.w + 10.0;
        let _ = writeln!(
            out,
            "<text x=\"{lx:.1}\" y=\"{:.1}\">{}</text>",
            TOP - 6.0,
            escape(&self.value_label)
        );
        for k in 0..10 {
            let t = 1.0 - k as f64 / 9.0;
            let y = TOP + 4.0 + 18.0 * k as f64;
            let _ = writeln!(
                out,
                "<rect x=\"{lx:.1}\" y=\"{y:.1}\" width=\"16\" height=\"16\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                Self::ramp(t),
                lx + 22.0,
                y + 12.0,
                if lo.is_finite() { escape(&format_tick(lo + span * t)) } else { String::new() }
            );
        }
        let y = TOP + 4.0 + 18.0 * 10.5;
        let _ = writeln!(
            out,
            "<rect x=\"{lx:.1}\" y=\"{y:.1}\" width=\"16\" height=\"16\" fill=\"#bbbbbb\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            lx + 22.0,
            y + 12.0,
            escape(&self.missing_label)
        );
        svg::end(&mut out);
        out
    }
}
