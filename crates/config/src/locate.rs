//! Where things are in the file: an index from every dotted field path
//! (`neighbor[1].remote_as`, `policy.edge_in.term[0].match.prefix[2]`) to
//! its place, built from a span-preserving parse of the same text. Errors
//! found by serde only come with a byte span; the index turns it back into
//! the field path, and later layers (the policy compiler, the daemon) turn
//! a path into `file:line:col` with [`crate::Config::locate`].

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use toml_edit::{ImDocument, InlineTable, Item, Table, Value};

/// A place in the configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file name.
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub col: usize,
}

impl fmt::Display for Location {
    /// `FILE:LINE:COL`, the prefix of every configuration error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// 1-based line and column (in characters) of byte `off`.
pub fn line_col(text: &str, off: usize) -> (usize, usize) {
    LineMap::new(text).line_col(off)
}

/// Line starts of a text, so that many offsets convert in O(log n) each
/// (a 10,000-neighbour file has a few hundred thousand fields).
struct LineMap<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineMap<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineMap { text, starts }
    }

    fn line_col(&self, off: usize) -> (usize, usize) {
        let mut off = off.min(self.text.len());
        // A span inside a multi-byte character would be a bug upstream;
        // step back rather than slice off a char boundary.
        while !self.text.is_char_boundary(off) {
            off -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= off).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        let col = self.text.get(start..off).map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
}

/// One field of the document.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    path: String,
    /// From the key (or table header) to the end of the value: the region
    /// an error span falls into when it is about this field.
    whole: Range<usize>,
    /// Where the field "is": the value, or the `[table]` header.
    at: usize,
    line: usize,
    col: usize,
}

/// Every field path of one document with its byte position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    entries: Vec<Entry>,
    by_path: HashMap<String, usize>,
}

impl Index {
    /// Indexes `text`; a document that does not parse gives an empty
    /// index (serde reports the syntax error itself).
    pub fn build(text: &str) -> Index {
        let mut ix = Index::default();
        if let Ok(doc) = ImDocument::parse(text) {
            ix.table(doc.as_table(), "");
        }
        let lines = LineMap::new(text);
        for (i, e) in ix.entries.iter_mut().enumerate() {
            (e.line, e.col) = lines.line_col(e.at);
            ix.by_path.entry(e.path.clone()).or_insert(i);
        }
        ix
    }

    /// Byte offset of a dotted path.
    #[cfg(test)]
    pub fn offset(&self, path: &str) -> Option<usize> {
        self.entry(path).map(|e| e.at)
    }

    /// Line and column of a dotted path.
    pub fn line_col(&self, path: &str) -> Option<(usize, usize)> {
        self.entry(path).map(|e| (e.line, e.col))
    }

    /// Line and column of `path`, or of its closest ancestor that is in
    /// the file (`neighbor[2].port` when only defaulted: `neighbor[2]`).
    pub fn nearest(&self, path: &str) -> Option<(usize, usize)> {
        let mut p = path;
        loop {
            if let Some(lc) = self.line_col(p) {
                return Some(lc);
            }
            p = parent(p)?;
        }
    }

    fn entry(&self, path: &str) -> Option<&Entry> {
        self.by_path.get(path).and_then(|&i| self.entries.get(i))
    }

    /// The most specific field whose region holds byte `off`.
    pub fn path_at(&self, off: usize) -> Option<&str> {
        self.entries
            .iter()
            .filter(|e| e.whole.contains(&off) || e.whole.start == off)
            // Smallest region wins; on a tie the later (deeper) entry.
            .min_by_key(|e| (e.whole.len(), usize::MAX - e.path.len()))
            .map(|e| e.path.as_str())
    }

    fn push(&mut self, path: String, whole: Range<usize>, at: usize) {
        self.entries.push(Entry {
            path,
            whole,
            at,
            line: 0,
            col: 0,
        });
    }

    fn table(&mut self, t: &Table, prefix: &str) {
        for (k, item) in t.iter() {
            let path = join(prefix, k);
            let key_start = t.key(k).and_then(|k| k.span()).map(|s| s.start);
            self.item(item, path, key_start);
        }
    }

    fn item(&mut self, item: &Item, path: String, key_start: Option<usize>) {
        match item {
            Item::None => {}
            Item::Value(v) => self.value(v, path, key_start),
            Item::Table(t) => {
                // `[a.b]` makes `a` implicit: no header of its own, so it is
                // found through its children only.
                if let Some(s) = t.span() {
                    self.push(path.clone(), s.clone(), s.start);
                } else if let (true, Some(k)) = (t.is_dotted(), key_start) {
                    // A dotted key `a.b = 1` inside a table.
                    self.push(path.clone(), k..k + 1, k);
                }
                self.table(t, &path);
            }
            Item::ArrayOfTables(a) => {
                for (i, t) in a.iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    if let Some(s) = t.span() {
                        self.push(p.clone(), s.clone(), s.start);
                    }
                    self.table(t, &p);
                }
            }
        }
    }

    fn value(&mut self, v: &Value, path: String, key_start: Option<usize>) {
        let Some(span) = v.span() else { return };
        let start = key_start.unwrap_or(span.start).min(span.start);
        self.push(path.clone(), start..span.end, span.start);
        match v {
            Value::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    self.value(e, format!("{path}[{i}]"), None);
                }
            }
            Value::InlineTable(t) => self.inline(t, &path),
            _ => {}
        }
    }

    fn inline(&mut self, t: &InlineTable, prefix: &str) {
        for (k, v) in t.iter() {
            let key_start = t.key(k).and_then(|k| k.span()).map(|s| s.start);
            self.value(v, join(prefix, k), key_start);
        }
    }
}

/// `a.b[2]` -> `a.b` -> `a`; `a` -> None.
fn parent(p: &str) -> Option<&str> {
    if let Some(stripped) = p.strip_suffix(']') {
        let i = stripped.rfind('[')?;
        return p.get(..i);
    }
    p.rfind('.').and_then(|i| p.get(..i))
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "[router]\nid = \"x\"\n\n[[neighbor]]\naddress = \"a\"\n\
                     [[neighbor]]\nremote_as = 5\nfamilies = [\n  \"a\",\n  \"b\",\n]\n\
                     max_prefix = { limit = 5, action = \"warn\" }\n\
                     [policy.p]\nterm = [{ match = { prefix = [\"10.0.0.0/8\"] } }]\n";

    fn at(ix: &Index, path: &str) -> (usize, usize) {
        line_col(T, ix.offset(path).expect(path))
    }

    #[test]
    fn paths_and_positions() {
        let ix = Index::build(T);
        assert_eq!(at(&ix, "router"), (1, 1));
        assert_eq!(at(&ix, "router.id"), (2, 6));
        assert_eq!(at(&ix, "neighbor[1]"), (6, 1));
        assert_eq!(at(&ix, "neighbor[1].remote_as"), (7, 13));
        assert_eq!(at(&ix, "neighbor[1].families[1]"), (10, 3));
        assert_eq!(at(&ix, "neighbor[1].max_prefix.action"), (12, 36));
        assert_eq!(at(&ix, "policy.p"), (13, 1));
        assert_eq!(at(&ix, "policy.p.term[0].match.prefix[0]"), (14, 31));
        assert_eq!(ix.offset("policy"), None);
        assert_eq!(ix.line_col("neighbor[0].address"), Some((5, 11)));
        assert_eq!(ix.nearest("neighbor[0].port"), Some((4, 1)));
        assert_eq!(ix.nearest("policy.p.term[0].then.med"), Some((14, 9)));
        assert_eq!(ix.nearest("nothing.here"), None);

        let off = T.find("remote_as").unwrap();
        assert_eq!(ix.path_at(off), Some("neighbor[1].remote_as"));
        let off = T.find("\"b\"").unwrap();
        assert_eq!(ix.path_at(off), Some("neighbor[1].families[1]"));
        let off = T.find("\"warn\"").unwrap();
        assert_eq!(ix.path_at(off), Some("neighbor[1].max_prefix.action"));
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(line_col("a = \"é\"\nb", 9), (2, 1));
        assert_eq!(line_col("é", 1), (1, 1));
        assert_eq!(line_col("", 10), (1, 1));
        assert_eq!(line_col("a\nb\n", 4), (3, 1));
        assert_eq!(line_col("a\nbc", 3), (2, 2));
    }
}
