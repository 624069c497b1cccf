//! A strict reader of the Prometheus text exposition format 0.0.4, used to
//! check what [`super::MetricsWriter`] produces (and, in the daemon's
//! tests, what `/metrics` serves): names, label syntax and escapes, values,
//! `# TYPE` before the samples of its family and at most once, families
//! contiguous, and for histograms `le` buckets in increasing order with
//! non-decreasing counts, a `+Inf` bucket equal to `_count`, and a `_sum`.

use std::collections::{HashMap, HashSet};

/// One parsed sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// Unescaped label values, in order.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// The value of the first sample named `name` that carries every label
/// in `labels` (other labels may be present too).
pub fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v))
        })
        .map(|s| s.value)
}

/// What is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckErrorKind {
    BadMetricName,
    BadLabelName,
    BadLabelSyntax,
    BadEscape,
    BadValue,
    BadTimestamp,
    BadComment,
    UnknownType,
    DuplicateHelp,
    DuplicateType,
    TypeAfterSamples,
    /// Samples of one family are not contiguous.
    FamilySplit,
    MissingFinalNewline,
    HistogramMissingLe,
    HistogramBucketOrder,
    HistogramMissingInf,
    HistogramMissingSum,
    HistogramCountMismatch,
}

/// An error and the 1-based line it was found on (0: the whole text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckError {
    pub line: usize,
    pub kind: CheckErrorKind,
}

fn is_name(s: &str, colon: bool) -> bool {
    let mut chars = s.chars();
    let first_ok = |c: char| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':');
    match chars.next() {
        Some(c) if first_ok(c) => {}
        _ => return false,
    }
    chars.all(|c| first_ok(c) || c.is_ascii_digit())
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ if s
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            s.parse().ok()
        }
        _ => None,
    }
}

/// Splits `name{labels} value [ts]`.
fn parse_sample(line: &str) -> Result<Sample, CheckErrorKind> {
    use CheckErrorKind as K;
    let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let (name, mut rest) = line.split_at(name_end);
    if !is_name(name, true) {
        return Err(K::BadMetricName);
    }
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let eq = rest.find('=').ok_or(K::BadLabelSyntax)?;
            let (lname, r) = rest.split_at(eq);
            let lname = lname.trim();
            if !is_name(lname, false) {
                return Err(K::BadLabelName);
            }
            let mut r = r
                .strip_prefix('=')
                .and_then(|r| r.trim_start().strip_prefix('"'))
                .ok_or(K::BadLabelSyntax)?
                .chars();
            let mut value = String::new();
            loop {
                match r.next() {
                    None => return Err(K::BadLabelSyntax),
                    Some('"') => break,
                    Some('\\') => match r.next() {
                        Some('\\') => value.push('\\'),
                        Some('"') => value.push('"'),
                        Some('n') => value.push('\n'),
                        _ => return Err(K::BadEscape),
                    },
                    Some(c) => value.push(c),
                }
            }
            labels.push((lname.to_string(), value));
            rest = r.as_str().trim_start();
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
            } else if !rest.starts_with('}') {
                return Err(K::BadLabelSyntax);
            }
        }
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().and_then(parse_value).ok_or(K::BadValue)?;
    if let Some(ts) = fields.next() {
        if ts.parse::<i64>().is_err() {
            return Err(K::BadTimestamp);
        }
    }
    if fields.next().is_some() || !rest.starts_with([' ', '\t']) {
        return Err(K::BadValue);
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

#[derive(Default)]
struct Series {
    last_le: Option<f64>,
    last_count: f64,
    inf: Option<f64>,
    sum: bool,
    count: Option<f64>,
    line: usize,
}

/// Parses and checks a whole exposition.
pub fn parse(text: &str) -> Result<Vec<Sample>, CheckError> {
    use CheckErrorKind as K;
    let err = |line, kind| CheckError { line, kind };
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(err(0, K::MissingFinalNewline));
    }
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helps: HashSet<String> = HashSet::new();
    let mut with_samples: HashSet<String> = HashSet::new();
    let mut finished: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    let mut samples = Vec::new();
    // Histogram series keyed by family and non-`le` labels, in order.
    let mut series: Vec<(String, Series)> = Vec::new();
    let mut series_ix: HashMap<String, usize> = HashMap::new();

    let mut enter = |family: &str, current: &mut Option<String>, n: usize| {
        if current.as_deref() == Some(family) {
            return Ok(());
        }
        if finished.contains(family) {
            return Err(err(n, K::FamilySplit));
        }
        if let Some(prev) = current.take() {
            finished.insert(prev);
        }
        *current = Some(family.to_string());
        Ok(())
    };

    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let mut f = c.trim_start().splitn(3, ' ');
            match (f.next(), f.next()) {
                (Some("HELP"), Some(name)) => {
                    if !is_name(name, true) {
                        return Err(err(n, K::BadMetricName));
                    }
                    if !helps.insert(name.to_string()) {
                        return Err(err(n, K::DuplicateHelp));
                    }
                    enter(name, &mut current, n)?;
                }
                (Some("TYPE"), Some(name)) => {
                    if !is_name(name, true) {
                        return Err(err(n, K::BadMetricName));
                    }
                    let t = f.next().unwrap_or("").trim();
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&t) {
                        return Err(err(n, K::UnknownType));
                    }
                    if types.insert(name.to_string(), t.to_string()).is_some() {
                        return Err(err(n, K::DuplicateType));
                    }
                    if with_samples.contains(name) {
                        return Err(err(n, K::TypeAfterSamples));
                    }
                    enter(name, &mut current, n)?;
                }
                (Some("HELP" | "TYPE"), None) => return Err(err(n, K::BadComment)),
                _ => {} // other comments are allowed
            }
            continue;
        }
        let s = parse_sample(line).map_err(|k| err(n, k))?;
        // The family: a histogram's _bucket/_sum/_count belong to it.
        let mut family = s.name.as_str();
        let mut suffix = "";
        for suf in ["_bucket", "_sum", "_count"] {
            if let Some(base) = s.name.strip_suffix(suf) {
                if types.get(base).map(String::as_str) == Some("histogram") {
                    family = base;
                    suffix = suf;
                }
            }
        }
        enter(family, &mut current, n)?;
        with_samples.insert(family.to_string());
        if !suffix.is_empty() {
            let mut key = family.to_string();
            for (k, v) in s.labels.iter().filter(|(k, _)| k != "le") {
                key.push_str(&format!("\u{0}{k}\u{1}{v}"));
            }
            let ix = *series_ix.entry(key.clone()).or_insert_with(|| {
                series.push((key, Series::default()));
                series.len() - 1
            });
            let Some((_, st)) = series.get_mut(ix) else {
                continue;
            };
            st.line = n;
            match suffix {
                "_bucket" => {
                    let le = s
                        .labels
                        .iter()
                        .find(|(k, _)| k == "le")
                        .and_then(|(_, v)| parse_value(v))
                        .ok_or(err(n, K::HistogramMissingLe))?;
                    let le_ok = st.last_le.is_none_or(|p| le > p);
                    if !le_ok || s.value < st.last_count || st.inf.is_some() {
                        return Err(err(n, K::HistogramBucketOrder));
                    }
                    st.last_le = Some(le);
                    st.last_count = s.value;
                    if le == f64::INFINITY {
                        st.inf = Some(s.value);
                    }
                }
                "_sum" => st.sum = true,
                _ => st.count = Some(s.value),
            }
        }
        samples.push(s);
    }
    for (_, st) in &series {
        let inf = st.inf.ok_or(err(st.line, K::HistogramMissingInf))?;
        if !st.sum {
            return Err(err(st.line, K::HistogramMissingSum));
        }
        if st.count != Some(inf) {
            return Err(err(st.line, K::HistogramCountMismatch));
        }
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;
    use CheckErrorKind as K;

    fn kind(t: &str) -> Option<CheckErrorKind> {
        parse(t).err().map(|e| e.kind)
    }

    #[test]
    fn accepts_valid() {
        let t = "# HELP a x\n# TYPE a counter\na 1\na{b=\"c\"} 2 1700000000\n\n# other\nb -Inf\n";
        let s = parse(t).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].labels, vec![("b".into(), "c".into())]);
        assert_eq!(s[2].value, f64::NEG_INFINITY);
    }

    #[test]
    fn rejects_invalid() {
        assert_eq!(kind("a 1"), Some(K::MissingFinalNewline));
        assert_eq!(kind("9a 1\n"), Some(K::BadMetricName));
        assert_eq!(kind("a{9=\"x\"} 1\n"), Some(K::BadLabelName));
        assert_eq!(kind("a{b=\"x} 1\n"), Some(K::BadLabelSyntax));
        assert_eq!(kind("a{b=\"\\t\"} 1\n"), Some(K::BadEscape));
        assert_eq!(kind("a one\n"), Some(K::BadValue));
        assert_eq!(kind("a 1 x\n"), Some(K::BadTimestamp));
        assert_eq!(kind("# TYPE a nonsense\n"), Some(K::UnknownType));
        assert_eq!(kind("a 1\n# TYPE a gauge\n"), Some(K::TypeAfterSamples));
        assert_eq!(
            kind("# TYPE a gauge\n# TYPE a gauge\n"),
            Some(K::DuplicateType)
        );
        assert_eq!(kind("a 1\nb 1\na 2\n"), Some(K::FamilySplit));
        let h = "# TYPE h histogram\n";
        assert_eq!(
            kind(&format!(
                "{h}h_bucket{{le=\"2\"}} 1\nh_bucket{{le=\"1\"}} 1\n"
            )),
            Some(K::HistogramBucketOrder)
        );
        assert_eq!(
            kind(&format!(
                "{h}h_bucket{{le=\"1\"}} 2\nh_bucket{{le=\"+Inf\"}} 1\n"
            )),
            Some(K::HistogramBucketOrder)
        );
        assert_eq!(
            kind(&format!("{h}h_bucket{{le=\"1\"}} 1\nh_sum 1\nh_count 1\n")),
            Some(K::HistogramMissingInf)
        );
        assert_eq!(
            kind(&format!(
                "{h}h_bucket{{le=\"+Inf\"}} 1\nh_sum 1\nh_count 2\n"
            )),
            Some(K::HistogramCountMismatch)
        );
        assert_eq!(
            kind(&format!("{h}h_bucket{{le=\"+Inf\"}} 1\nh_count 1\n")),
            Some(K::HistogramMissingSum)
        );
        assert_eq!(
            kind(&format!("{h}h_bucket 1\n")),
            Some(K::HistogramMissingLe)
        );
    }
}
