//! One prefix's paths and the index of its best ([`PrefixEntry`]), apart
//! from `table.rs` so that the counting wrapper of the Loc-RIB
//! (`counted.rs`), which `table.rs` stores its tables in, can hold entries
//! without importing `table.rs` back (no file-level import cycle).

use crate::types::PathEntry;

pub(crate) const NO_BEST: u16 = u16::MAX;
/// Paths per prefix are capped so that the best index fits in a u16.
pub(crate) const MAX_PATHS: usize = NO_BEST as usize;

/// The paths of one prefix and the index of the best (`NO_BEST`: none).
/// A prefix with one path (most of a full table from one peer) keeps it
/// inline, with no heap block (a 12-byte allocation costs a 32-byte
/// malloc chunk); several live in a boxed `Vec` behind a thin pointer, so
/// the entry is 16 bytes and a table slot with an IPv4 key 24 (an inline
/// 8-byte selection key per path made them 24 and 32 for a while; the
/// paths now carry its index in spare bits, `types.rs`).
#[derive(Debug)]
#[allow(clippy::box_collection)] // Many's thin pointer, on purpose
pub(crate) enum PrefixEntry {
    Empty {
        best: u16,
    },
    One {
        path: PathEntry,
        best: u16,
    },
    Many {
        paths: Box<Vec<PathEntry>>,
        best: u16,
    },
}

/// The capacity kept for `n` paths: `n` rounded up to even. A prefix
/// that gains its paths one by one (a full feed per peer) then reallocates
/// on every second path, not on each (the profile of scenario (f) had
/// malloc and free at a fifth of the daemon's time); the slack is at most
/// one record, and often none in the allocator's 16-byte chunks.
fn even(n: usize) -> usize {
    n + (n & 1)
}

impl Default for PrefixEntry {
    fn default() -> Self {
        PrefixEntry::Empty { best: NO_BEST }
    }
}

impl PrefixEntry {
    pub(crate) fn paths(&self) -> &[PathEntry] {
        match self {
            PrefixEntry::Empty { .. } => &[],
            PrefixEntry::One { path, .. } => std::slice::from_ref(path),
            PrefixEntry::Many { paths, .. } => paths,
        }
    }
    pub(crate) fn paths_mut(&mut self) -> &mut [PathEntry] {
        match self {
            PrefixEntry::Empty { .. } => &mut [],
            PrefixEntry::One { path, .. } => std::slice::from_mut(path),
            PrefixEntry::Many { paths, .. } => paths,
        }
    }
    pub(crate) fn best_raw(&self) -> u16 {
        match self {
            PrefixEntry::Empty { best }
            | PrefixEntry::One { best, .. }
            | PrefixEntry::Many { best, .. } => *best,
        }
    }
    pub(crate) fn set_best(&mut self, b: u16) {
        match self {
            PrefixEntry::Empty { best }
            | PrefixEntry::One { best, .. }
            | PrefixEntry::Many { best, .. } => *best = b,
        }
    }
    /// Takes the paths out (leaving none, the best index kept);
    /// [`Self::set_paths`] puts them back.
    pub(crate) fn take_paths(&mut self) -> Vec<PathEntry> {
        let best = self.best_raw();
        match std::mem::replace(self, PrefixEntry::Empty { best }) {
            PrefixEntry::Empty { .. } => Vec::new(),
            PrefixEntry::One { path, .. } => vec![path],
            PrefixEntry::Many { paths, .. } => *paths,
        }
    }
    pub(crate) fn set_paths(&mut self, mut v: Vec<PathEntry>) {
        let best = self.best_raw();
        *self = match v.len() {
            0 => PrefixEntry::Empty { best },
            1 => match v.pop() {
                Some(path) => PrefixEntry::One { path, best },
                None => PrefixEntry::Empty { best },
            },
            _ => {
                v.shrink_to(even(v.len()));
                PrefixEntry::Many {
                    paths: Box::new(v),
                    best,
                }
            }
        };
    }
    /// Appends a path (no heap block when it is the first).
    pub(crate) fn push_path(&mut self, p: PathEntry) {
        match self {
            PrefixEntry::Empty { best } => {
                *self = PrefixEntry::One {
                    path: p,
                    best: *best,
                };
                return;
            }
            PrefixEntry::Many { paths, .. } => {
                if paths.len() == paths.capacity() {
                    paths.reserve_exact(even(paths.len() + 1) - paths.len());
                }
                paths.push(p);
                return;
            }
            PrefixEntry::One { .. } => {}
        }
        let mut v = Vec::with_capacity(2);
        v.extend(self.take_paths());
        v.push(p);
        self.set_paths(v);
    }
    /// Removes the path at `i` (`None`: no such index), keeping the order
    /// of the others and the best index as it was.
    pub(crate) fn remove_path(&mut self, i: usize) -> Option<PathEntry> {
        if i >= self.paths().len() {
            return None;
        }
        if let PrefixEntry::Many { paths, .. } = self {
            if paths.len() > 2 {
                let p = paths.remove(i);
                paths.shrink_to(even(paths.len()));
                return Some(p);
            }
        }
        let mut v = self.take_paths();
        let p = v.remove(i);
        self.set_paths(v);
        Some(p)
    }
    pub(crate) fn best_path(&self) -> Option<&PathEntry> {
        self.paths().get(self.best_raw() as usize)
    }
    pub(crate) fn best_index(&self) -> Option<usize> {
        let b = self.best_raw();
        (b != NO_BEST && (b as usize) < self.paths().len()).then_some(b as usize)
    }
}
