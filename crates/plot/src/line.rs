//! Line charts: several named series of (x, y) points on shared axes.

use crate::axis::{format_tick, nice_ticks};
use crate::svg::{self, escape, Frame, LEFT, TOP};
use std::fmt::Write;

/// One named line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points, drawn in order; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
    /// Draw a dot on every point (for short series such as speedup
    /// curves); long time series leave it off.
    pub markers: bool,
}

/// A line chart. Build with [`LineChart::new`] and [`LineChart::series`].
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// X-axis label.
    pub x_label: String,
    /// Y-axis label.
    pub y_label: String,
    /// Lines, in legend order.
    pub series: Vec<Series>,
    /// Image width in pixels (at least 200 is used).
    pub width: u32,
    /// Image height in pixels (at least 150 is used).
    pub height: u32,
    /// Start the y axis at 0 even when every value is far above it.
    pub y_from_zero: bool,
}

impl LineChart {
    /// An empty 800 x 450 chart whose y axis starts at 0.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> LineChart {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            width: 800,
            height: 450,
            y_from_zero: true,
        }
    }

    /// Adds a series (builder style).
    pub fn series(mut self, name: &str, points: Vec<(f64, f64)>) -> LineChart {
        self.series.push(Series {
            name: name.into(),
            points,
            markers: false,
        });
        self
    }

    /// Adds a series with a marker on every point.
    pub fn series_with_markers(mut self, name: &str, points: Vec<(f64, f64)>) -> LineChart {
        self.series.push(Series {
            name: name.into(),
            points,
            markers: true,
        });
        self
    }

    /// The x and y ranges over every finite point (`None` if there is none).
    fn bounds(&self) -> Option<(f64, f64, f64, f64)> {
        let mut it = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite());
        let &(x0, y0) = it.next()?;
        Some(it.fold((x0, x0, y0, y0), |(a, b, c, d), &(x, y)| {
            (a.min(x), b.max(x), c.min(y), d.max(y))
        }))
    }

    /// Renders the chart as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let (w, h) = (
            f64::from(self.width.max(200)),
            f64::from(self.height.max(150)),
        );
        let (x_lo, x_hi, mut y_lo, y_hi) = self.bounds().unwrap_or((0.0, 1.0, 0.0, 1.0));
        if self.y_from_zero {
            y_lo = y_lo.min(0.0);
        }
        let xt = nice_ticks(x_lo, x_hi, 8);
        let yt = nice_ticks(y_lo, y_hi, 6);
        let (xa, xb) = (xt[0], *xt.last().unwrap_or(&xt[0]));
        let f = Frame {
            w,
            h,
            y_lo: yt[0],
            y_hi: *yt.last().unwrap_or(&yt[0]),
        };
        let xspan = (xb - xa).max(f64::MIN_POSITIVE);
        let px = |x: f64| LEFT + f.plot_w() * (x - xa) / xspan;

        let mut out = String::with_capacity(4096);
        svg::begin(&mut out, w, h, &self.title);
        svg::y_axis(&mut out, &f, &yt, &self.y_label);
        for &t in &xt {
            let x = px(t);
            let _ = writeln!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eeeeee\"/>\n\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                TOP + f.plot_h(),
                TOP + f.plot_h() + 18.0,
                escape(&format_tick(t))
            );
        }
        svg::box_and_x_label(&mut out, &f, &self.x_label);
        for (i, s) in self.series.iter().enumerate() {
            let colour = crate::color(i);
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .map(|&(x, y)| (px(x), f.y(y)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let _ = write!(
                out,
                "<polyline class=\"series\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\""
            );
            for (k, (x, y)) in pts.iter().enumerate() {
                let sep = if k == 0 { "" } else { " " };
                let _ = write!(out, "{sep}{x:.1},{y:.1}");
            }
            out.push_str("\"/>\n");
            if s.markers {
                for (x, y) in &pts {
                    let _ = writeln!(
                        out,
                        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{colour}\"/>"
                    );
                }
            }
        }
        let names: Vec<(&str, &str)> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), crate::color(i)))
            .collect();
        svg::legend(&mut out, &names);
        svg::end(&mut out);
        out
    }
}
