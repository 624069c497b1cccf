//! Prometheus metrics: a text exposition format (version 0.0.4) writer,
//! latency histograms, and the `/metrics` HTTP endpoint.
//!
//! The format: for each metric family, `# HELP name text` and
//! `# TYPE name counter|gauge|histogram|untyped`, then its samples
//! `name{label="value",...} value`, all samples of a family together.
//! Label values escape `\`, `"` and newline; HELP text escapes `\` and
//! newline. The writer cannot produce invalid names: characters outside
//! `[a-zA-Z0-9_:]` (`[a-zA-Z0-9_]` for labels) become `_`.
//!
//! Usage from the daemon:
//!
//! ```
//! use mgmt::metrics::{MetricType, MetricsWriter};
//! let mut w = MetricsWriter::new();
//! w.header("tessera_bgp_session_up", MetricType::Gauge, "1 if Established");
//! for (peer, up) in [("peer1", 1), ("peer2", 0)] {
//!     w.sample_u64("tessera_bgp_session_up", &[("peer", peer)], up);
//! }
//! assert!(w.as_str().contains("tessera_bgp_session_up{peer=\"peer1\"} 1\n"));
//! ```

pub mod bgp;
#[cfg(any(test, feature = "test-support"))]
pub mod check;
mod histogram;
mod http;
pub mod scan;

pub use histogram::{
    bucket_bound_ns, bucket_index, HistogramSnapshot, LatencyHistogram, Stage, StageLatencies,
    LATENCY_BUCKETS,
};
pub use http::{MetricsSource, CONTENT_TYPE, MAX_HEAD_BYTES, METRICS_LIMITS};

use std::fmt::Write as _;

/// Kind of a metric family (`# TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Untyped,
}

impl MetricType {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
            MetricType::Untyped => "untyped",
        }
    }
}

/// Builds one exposition.
#[derive(Debug, Default, Clone)]
pub struct MetricsWriter {
    out: String,
}

fn push_name(out: &mut String, name: &str, label: bool) {
    if name.is_empty() {
        out.push('_');
    }
    for (i, c) in name.chars().enumerate() {
        let ok = c.is_ascii_alphabetic()
            || c == '_'
            || (c == ':' && !label)
            || (c.is_ascii_digit() && i > 0);
        out.push(if ok { c } else { '_' });
    }
}

fn push_label_value(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn push_labels(out: &mut String, labels: &[(&str, &str)], le: Option<&str>) {
    if labels.is_empty() && le.is_none() {
        return;
    }
    out.push('{');
    let extra = le.map(|v| ("le", v));
    for (i, (k, v)) in labels.iter().copied().chain(extra).enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_name(out, k, true);
        out.push_str("=\"");
        push_label_value(out, v);
        out.push('"');
    }
    out.push('}');
}

/// Prometheus float text: `+Inf`, `-Inf`, `NaN`, or Rust's shortest
/// round-tripping decimal (no exponent).
fn push_f64(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{v}");
    }
}

/// Nanoseconds as exact decimal seconds ("0.000001", "2.5", "0").
fn push_ns_as_secs(out: &mut String, ns: u64) {
    let (s, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    let _ = write!(out, "{s}");
    if frac != 0 {
        let mut f = format!("{frac:09}");
        while f.ends_with('0') {
            f.pop();
        }
        out.push('.');
        out.push_str(&f);
    }
}

impl MetricsWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// A writer whose buffer holds `bytes` before it grows (the size of
    /// the last exposition: one allocation per scrape, not one per
    /// doubling).
    pub fn with_capacity(bytes: usize) -> Self {
        MetricsWriter {
            out: String::with_capacity(bytes),
        }
    }

    /// `# HELP` and `# TYPE` lines opening a family. Write all samples of
    /// the family right after.
    pub fn header(&mut self, name: &str, kind: MetricType, help: &str) {
        self.out.push_str("# HELP ");
        push_name(&mut self.out, name, false);
        self.out.push(' ');
        for c in help.chars() {
            match c {
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                c => self.out.push(c),
            }
        }
        self.out.push_str("\n# TYPE ");
        push_name(&mut self.out, name, false);
        self.out.push(' ');
        self.out.push_str(kind.as_str());
        self.out.push('\n');
    }

    /// One sample with a float value.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        push_name(&mut self.out, name, false);
        push_labels(&mut self.out, labels, None);
        self.out.push(' ');
        push_f64(&mut self.out, value);
        self.out.push('\n');
    }

    /// One sample with an integer value, exact beyond 2^53.
    pub fn sample_u64(&mut self, name: &str, labels: &[(&str, &str)], value: u64) {
        push_name(&mut self.out, name, false);
        push_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {value}");
    }

    /// A family with a single unlabelled gauge sample.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.header(name, MetricType::Gauge, help);
        self.sample(name, &[], value);
    }

    /// A family with a single unlabelled counter sample.
    pub fn counter(&mut self, name: &str, help: &str, value: u64) {
        self.header(name, MetricType::Counter, help);
        self.sample_u64(name, &[], value);
    }

    /// The samples of one histogram series (`_bucket` per bound with `le`
    /// in seconds, `+Inf`, `_sum` in seconds, `_count`). Call
    /// [`Self::header`] with [`MetricType::Histogram`] first.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], snap: &HistogramSnapshot) {
        let mut bucket = String::with_capacity(name.len() + 7);
        push_name(&mut bucket, name, false);
        let base_len = bucket.len();
        bucket.push_str("_bucket");
        let mut cumulative = 0u64;
        let mut le = String::new();
        for (i, &c) in snap.counts.iter().enumerate() {
            cumulative = cumulative.saturating_add(c);
            le.clear();
            if i < LATENCY_BUCKETS {
                push_ns_as_secs(&mut le, bucket_bound_ns(i));
            } else {
                le.push_str("+Inf");
            }
            self.out.push_str(&bucket);
            push_labels(&mut self.out, labels, Some(&le));
            let _ = writeln!(self.out, " {cumulative}");
        }
        bucket.truncate(base_len);
        self.out.push_str(&bucket);
        self.out.push_str("_sum");
        push_labels(&mut self.out, labels, None);
        self.out.push(' ');
        push_ns_as_secs(&mut self.out, snap.sum_ns);
        self.out.push('\n');
        self.out.push_str(&bucket);
        self.out.push_str("_count");
        push_labels(&mut self.out, labels, None);
        let _ = writeln!(self.out, " {cumulative}");
    }

    /// Per-stage latencies as one histogram family with a `stage` label.
    pub fn stage_latencies(&mut self, name: &str, help: &str, s: &StageLatencies) {
        self.header(name, MetricType::Histogram, help);
        for st in Stage::ALL {
            self.histogram(name, &[("stage", st.as_str())], &s.get(st).snapshot());
        }
    }

    pub fn as_str(&self) -> &str {
        &self.out
    }

    pub fn into_string(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_names() {
        let mut w = MetricsWriter::new();
        w.header("a-b", MetricType::Gauge, "line1\nback\\slash \"quoted\"");
        w.sample("a-b", &[("peer", "x\"y\\z\nw"), ("9bad", "v")], 1.5);
        w.sample("a-b", &[], f64::INFINITY);
        w.sample("a-b", &[], f64::NAN);
        w.sample_u64("a-b", &[], u64::MAX);
        assert_eq!(
            w.as_str(),
            "# HELP a_b line1\\nback\\\\slash \"quoted\"\n\
             # TYPE a_b gauge\n\
             a_b{peer=\"x\\\"y\\\\z\\nw\",_bad=\"v\"} 1.5\n\
             a_b +Inf\n\
             a_b NaN\n\
             a_b 18446744073709551615\n"
        );
        let samples = check::parse(w.as_str()).expect("valid exposition");
        assert_eq!(samples[0].labels[0].1, "x\"y\\z\nw");
    }

    #[test]
    fn histogram_text() {
        let h = LatencyHistogram::new();
        h.record_ns(500);
        h.record_ns(1_500_000);
        let mut w = MetricsWriter::new();
        w.header("lat_seconds", MetricType::Histogram, "latency");
        w.histogram("lat_seconds", &[("peer", "p1")], &h.snapshot());
        let t = w.as_str();
        assert!(
            t.contains("lat_seconds_bucket{peer=\"p1\",le=\"0.000001\"} 1\n"),
            "{t}"
        );
        assert!(
            t.contains("lat_seconds_bucket{peer=\"p1\",le=\"0.001024\"} 1\n"),
            "{t}"
        );
        assert!(
            t.contains("lat_seconds_bucket{peer=\"p1\",le=\"0.002048\"} 2\n"),
            "{t}"
        );
        assert!(
            t.contains("lat_seconds_bucket{peer=\"p1\",le=\"33.554432\"} 2\n"),
            "{t}"
        );
        assert!(
            t.contains("lat_seconds_bucket{peer=\"p1\",le=\"+Inf\"} 2\n"),
            "{t}"
        );
        assert!(
            t.contains("lat_seconds_sum{peer=\"p1\"} 0.0015005\n"),
            "{t}"
        );
        assert!(t.contains("lat_seconds_count{peer=\"p1\"} 2\n"), "{t}");
        let samples = check::parse(t).expect("valid exposition");
        assert_eq!(samples.len(), LATENCY_BUCKETS + 1 + 2);
    }

    #[test]
    fn stage_family_is_valid() {
        let s = StageLatencies::new();
        s.record_ns(Stage::Parse, 2_500);
        let mut w = MetricsWriter::new();
        w.stage_latencies("tessera_stage_seconds", "per stage", &s);
        let samples = check::parse(w.as_str()).expect("valid exposition");
        let parse_count = samples
            .iter()
            .find(|s| {
                s.name == "tessera_stage_seconds_count"
                    && s.labels.iter().any(|(k, v)| k == "stage" && v == "parse")
            })
            .expect("parse count");
        assert_eq!(parse_count.value, 1.0);
    }
}
