//! The shared canvas: SVG header, text escaping, frame, axes and legend.

use crate::axis::format_tick;
use std::fmt::Write;

/// Canvas margins around the plot area, in pixels.
pub(crate) const LEFT: f64 = 80.0;
pub(crate) const RIGHT: f64 = 20.0;
pub(crate) const TOP: f64 = 40.0;
pub(crate) const BOTTOM: f64 = 60.0;

/// Escapes text for SVG content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // XML 1.0 forbids most control characters outright.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}

/// The plot area and the value-to-pixel mapping of the y axis.
pub(crate) struct Frame {
    pub w: f64,
    pub h: f64,
    pub y_lo: f64,
    pub y_hi: f64,
}

impl Frame {
    pub fn plot_w(&self) -> f64 {
        (self.w - LEFT - RIGHT).max(1.0)
    }
    pub fn plot_h(&self) -> f64 {
        (self.h - TOP - BOTTOM).max(1.0)
    }
    pub fn y(&self, v: f64) -> f64 {
        let span = (self.y_hi - self.y_lo).max(f64::MIN_POSITIVE);
        TOP + self.plot_h() * (1.0 - (v - self.y_lo) / span)
    }
}

/// Opens the document with a white background and the title.
pub(crate) fn begin(out: &mut String, w: f64, h: f64, title: &str) {
    let _ = write!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n\
         <text x=\"{:.1}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        w / 2.0,
        escape(title)
    );
}

pub(crate) fn end(out: &mut String) {
    out.push_str("</svg>\n");
}

/// Horizontal grid lines, y tick labels and the y axis title.
pub(crate) fn y_axis(out: &mut String, f: &Frame, ticks: &[f64], label: &str) {
    for &t in ticks {
        let y = f.y(t);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#dddddd\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT + f.plot_w(),
            LEFT - 6.0,
            y + 4.0,
            escape(&format_tick(t))
        );
    }
    let cy = TOP + f.plot_h() / 2.0;
    let _ = writeln!(
        out,
        "<text x=\"16\" y=\"{cy:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {cy:.1})\">{}</text>",
        escape(label)
    );
}

/// The plot area border and the x axis title.
pub(crate) fn box_and_x_label(out: &mut String, f: &Frame, label: &str) {
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#333333\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        f.plot_w(),
        f.plot_h(),
        LEFT + f.plot_w() / 2.0,
        f.h - 12.0,
        escape(label)
    );
}

/// A legend box in the top-left corner of the plot area: one swatch and
/// name per entry.
pub(crate) fn legend(out: &mut String, names: &[(&str, &str)]) {
    if names.is_empty() {
        return;
    }
    // Rough text width: 7 px per character at font size 12.
    let longest = names
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    let bw = 30.0 + 7.0 * longest as f64;
    let bh = 8.0 + 16.0 * names.len() as f64;
    let (x0, y0) = (LEFT + 10.0, TOP + 10.0);
    let _ = writeln!(
        out,
        "<g class=\"legend\"><rect x=\"{x0}\" y=\"{y0}\" width=\"{bw:.1}\" height=\"{bh:.1}\" \
         fill=\"white\" fill-opacity=\"0.85\" stroke=\"#999999\"/>"
    );
    for (i, (name, colour)) in names.iter().enumerate() {
        let y = y0 + 14.0 + 16.0 * i as f64;
        let _ = writeln!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"14\" height=\"8\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x0 + 6.0,
            y - 8.0,
            x0 + 26.0,
            y,
            escape(name)
        );
    }
    out.push_str("</g>\n");
}
