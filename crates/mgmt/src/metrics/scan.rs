//! Reading our own `/metrics` text back, without validation: the samples
//! of one metric name and the value of one label. For clients that show
//! the numbers (`tessera top`, the web view); the strict parser that tests
//! use to check the format is [`super::check`] (behind `test-support`).

/// `(labels, value)` of every sample of metric `name` in Prometheus text;
/// `labels` is the text between the braces (empty without them). Lines
/// that do not parse are skipped.
pub fn samples<'a>(text: &'a str, name: &str) -> Vec<(&'a str, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = if let Some(r) = rest.strip_prefix('{') {
                let end = r.find('}')?;
                (r.get(..end)?, r.get(end + 1..)?)
            } else if rest.starts_with(' ') {
                ("", rest)
            } else {
                return None;
            };
            Some((labels, value.split_whitespace().next()?.parse().ok()?))
        })
        .collect()
}

/// The value of label `key` in `a="x",b="y"` (no escapes: our label values
/// have none in the metrics these clients read).
pub fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    let at = labels.find(&format!("{key}=\""))?;
    let rest = labels.get(at + key.len() + 2..)?;
    rest.get(..rest.find('"')?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_labels() {
        let t = "# HELP x y\nfoo{a=\"1\",b=\"two\"} 3.5\nfoo 7\nfoobar 9\n";
        let s = samples(t, "foo");
        assert_eq!(s, [("a=\"1\",b=\"two\"", 3.5), ("", 7.0)]);
        assert_eq!(label(s[0].0, "b"), Some("two"));
        assert_eq!(label(s[0].0, "c"), None);
    }
}
