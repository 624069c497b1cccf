//! Grouped bar charts: one group per category, one bar per series in each
//! group, an optional (low, high) whisker per bar for the spread of
//! repeated runs.

use crate::axis::nice_ticks;
use crate::svg::{self, escape, Frame, LEFT, TOP};
use std::fmt::Write;

/// One series: a value per category (missing values are `NaN` and leave a
/// gap).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BarSeries {
    /// Legend text.
    pub name: String,
    /// One value per category, in category order.
    pub values: Vec<f64>,
    /// (low, high) per category, e.g. min and max of the repetitions.
    pub spread: Option<Vec<(f64, f64)>>,
}

#[derive(Clone, Debug, PartialEq)]
/// A grouped bar chart. Build with [`BarChart::new`] and [`BarChart::series`].
pub struct BarChart {
    /// Title above the plot.
    pub title: String,
    /// Y-axis label; the y axis always starts at 0.
    pub y_label: String,
    /// Group labels along the x axis.
    pub categories: Vec<String>,
    /// Bar series, drawn left to right within each group.
    pub series: Vec<BarSeries>,
    /// Image width in pixels (at least 200 is used).
    pub width: u32,
    /// Image height in pixels (at least 150 is used).
    pub height: u32,
}

impl BarChart {
    /// An empty 800 x 450 chart with these categories.
    pub fn new(title: &str, y_label: &str, categories: &[&str]) -> BarChart {
        BarChart {
            title: title.into(),
            y_label: y_label.into(),
            categories: categories.iter().map(|c| (*c).to_string()).collect(),
            series: Vec::new(),
            width: 800,
            height: 450,
        }
    }

    /// Adds a series (builder style).
    pub fn series(mut self, name: &str, values: Vec<f64>) -> BarChart {
        self.series.push(BarSeries {
            name: name.into(),
            values,
            spread: None,
        });
        self
    }

    /// Adds a series with a whisker per bar.
    pub fn series_with_spread(
        mut self,
        name: &str,
        values: Vec<f64>,
        spread: Vec<(f64, f64)>,
    ) -> BarChart {
        self.series.push(BarSeries {
            name: name.into(),
            values,
            spread: Some(spread),
        });
        self
    }

    fn y_max(&self) -> f64 {
        let vals = self.series.iter().flat_map(|s| {
            let sp = s.spread.iter().flatten().map(|&(_, hi)| hi);
            s.values.iter().copied().chain(sp)
        });
        vals.filter(|v| v.is_finite()).fold(0.0, f64::max)
    }

    /// Renders the chart as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let (w, h) = (
            f64::from(self.width.max(200)),
            f64::from(self.height.max(150)),
        );
        let yt = nice_ticks(0.0, self.y_max().max(f64::MIN_POSITIVE), 6);
        let f = Frame {
            w,
            h,
            y_lo: 0.0,
            y_hi: *yt.last().unwrap_or(&1.0),
        };
        let mut out = String::with_capacity(4096);
        svg::begin(&mut out, w, h, &self.title);
        svg::y_axis(&mut out, &f, &yt, &self.y_label);
        let ncat = self.categories.len().max(1) as f64;
        let group_w = f.plot_w() / ncat;
        let nser = self.series.len().max(1) as f64;
        // 80% of a group holds its bars; the rest separates groups.
        let bar_w = group_w * 0.8 / nser;
        let base = f.y(0.0);
        for (c, cat) in self.categories.iter().enumerate() {
            let gx = LEFT + group_w * c as f64;
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                gx + group_w / 2.0,
                TOP + f.plot_h() + 18.0,
                escape(cat)
            );
            for (i, s) in self.series.iter().enumerate() {
                let x = gx + group_w * 0.1 + bar_w * i as f64;
                let colour = crate::color(i);
                if let Some(v) = s.values.get(c).copied().filter(|v| v.is_finite()) {
                    let y = f.y(v.max(0.0));
                    let _ = writeln!(
                        out,
                        "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>{}: {}</title></rect>",
                        bar_w.max(1.0),
                        (base - y).max(0.0),
                        escape(&s.name),
                        v
                    );
                }
                let spread = s.spread.as_ref().and_then(|v| v.get(c)).copied();
                if let Some((lo, hi)) = spread.filter(|(l, h)| l.is_finite() && h.is_finite()) {
                    let cx = x + bar_w / 2.0;
                    let (yl, yh) = (f.y(lo.max(0.0)), f.y(hi.max(0.0)));
                    let _ = writeln!(
                        out,
                        "<path class=\"spread\" d=\"M{cx:.1},{yl:.1}V{yh:.1}M{:.1},{yl:.1}H{:.1}M{:.1},{yh:.1}H{:.1}\" stroke=\"#222222\" fill=\"none\"/>",
                        cx - 3.0,
                        cx + 3.0,
                        cx - 3.0,
                        cx + 3.0
                    );
                }
            }
        }
        svg::box_and_x_label(&mut out, &f, "");
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
