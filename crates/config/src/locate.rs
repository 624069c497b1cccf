//! Byte offsets -> `line:col` and the dotted field path at that place.

/// A place in the configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub col: usize,
}

/// 1-based line and column (in characters) of byte `off`.
pub fn line_col(text: &str, off: usize) -> (usize, usize) {
    let off = off.min(text.len());
    let before = text.get(..off).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map_or(1, |l| l.chars().count() + 1);
    (line, col)
}

/// The table header a line belongs to: (`name`, array index) for
/// `[[name]]` (index counted over the file), (`name`, None) for `[name]`.
fn header_at(text: &str, off: usize) -> Option<(String, Option<usize>)> {
    let before = text.get(..off.min(text.len())).unwrap_or("");
    let mut cur: Option<(String, Option<usize>)> = None;
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    for line in before.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let c = counts.entry(name.clone()).or_insert(0);
            cur = Some((name, Some(*c)));
            *c += 1;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            cur = Some((name.trim().to_string(), None));
        }
    }
    cur
}

/// The key of the `key = value` line at `off`, if the line has one.
fn key_at(text: &str, off: usize) -> Option<String> {
    let off = off.min(text.len());
    let start = text.get(..off)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(start..)?.lines().next()?;
    let (k, _) = line.split_once('=')?;
    let k = k.trim();
    (!k.is_empty() && !k.starts_with('[')).then(|| k.trim_matches('"').to_string())
}

/// The dotted path of the field at `off`: `neighbor[1].remote_as`.
pub fn path_at(text: &str, off: usize) -> String {
    let head = match header_at(text, off) {
        Some((n, Some(i))) => format!("{n}[{i}]"),
        Some((n, None)) => n,
        None => String::new(),
    };
    match (head.is_empty(), key_at(text, off)) {
        (true, Some(k)) => k,
        (false, Some(k)) => format!("{head}.{k}"),
        (_, None) => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_positions() {
        let t =
            "[router]\nid = \"x\"\n\n[[neighbor]]\naddress = \"a\"\n[[neighbor]]\nremote_as = 5\n";
        let off = t.find("remote_as").unwrap();
        assert_eq!(path_at(t, off), "neighbor[1].remote_as");
        assert_eq!(line_col(t, off), (7, 1));
        let off = t.find("id").unwrap() + 5;
        assert_eq!(path_at(t, off), "router.id");
        assert_eq!(line_col(t, off), (2, 6));
    }
}
